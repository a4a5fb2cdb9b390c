/*
 * group_snap.c — a Raft group's snapshots as its FSM takes and restores
 * them (fsm version 3 callbacks; contracts in node_internal.h): a
 * snapshot is a descriptor of a RocksDB checkpoint of the state
 * (meta/snap.h), taken off the loop and reused while the state's applied
 * index "A" stays; a restore of a descriptor the state already holds is a
 * no-op, any other starts an install (group_install.c).
 *
 * Thread: the member's loop, except fsm_snapshot_async (libuv pool).
 * Not here: applying entries and group commit (group.c), the install's
 * fetch and load (group_install.c), what a checkpoint holds (snap.c).
 */
#include "meta/node_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"

/* ----------------------------------------------------- snapshots
 * A snapshot is a RocksDB checkpoint of the state, described by a small
 * SnapshotDescriptor (meta/snap.h); libraft stores and ships only the
 * descriptor. fsm version 3: `snapshot` runs on the loop and costs
 * nothing that grows with the state (it reuses the last checkpoint when
 * the state's applied index "A" has not moved: the state did not change);
 * `snapshot_async` takes the checkpoint on libraft's async work (libuv
 * pool); `snapshot_finalize` frees the buffer back on the loop.
 *
 * Applies go on while the checkpoint is taken, so its "A" may be above the
 * index libraft records the snapshot at. That is sound: libraft replays
 * the entries after its index onto the installed state, and apply skips
 * every entry at or below the state's "A" (meta_state_apply), so none is
 * applied twice and none is lost. */

void group_snap_pin(struct meta_group *g, const char *name)
{
	uint64_t now = loop_now_ms();
	size_t slot = 0;
	for (size_t i = 0; i < SNAP_PINS; i++) {
		if (!strcmp(g->snap_pins[i].name, name)) {
			slot = i;
			break;
		}
		if (g->snap_pins[i].at_ms < g->snap_pins[slot].at_ms)
			slot = i;
	}
	snprintf(g->snap_pins[slot].name, sizeof(g->snap_pins[slot].name), "%s", name);
	g->snap_pins[slot].at_ms = now;
}

static void snap_restore_threshold(struct meta_group *g)
{
	g->snap_bytes_since = 0;
	if (g->snap_lowered) {
		raft_set_snapshot_threshold(&g->raft, g->snapshot_threshold);
		g->snap_lowered = false;
	}
}

static int fsm_snapshot_async(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs);

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
	struct meta_group *g = fsm->data;
	struct meta_node *n = g->n;
	*bufs = NULL;
	*n_bufs = 0;
	/* One at a time; nothing to snapshot yet; an install running (its
	 * thread owns the state). BUSY: libraft tries again later. */
	if (g->snap_job || g->inst || meta_state_applied_index(g->state) == 0)
		return RAFT_BUSY;
	struct snap_take_job *j = calloc(1, sizeof(*j));
	if (!j)
		return RAFT_NOMEM;
	snap_restore_threshold(g);
	g->snap_reuse = g->snap_last.applied_index &&
			g->snap_last.applied_index == meta_state_applied_index(g->state);
	if (g->snap_reuse) {
		struct raft_buffer *b = raft_malloc(sizeof(*b));
		if (!b || snap_desc_encode(&g->snap_last, &b->base, &b->len)) {
			raft_free(b);
			free(j);
			return RAFT_NOMEM;
		}
		*bufs = b;
		*n_bufs = 1;
	} else {
		j->state = g->state;
		snprintf(j->dir, sizeof(j->dir), "%s", g->snap_dir);
		j->member_id = n->o.id;
		snprintf(j->member_addr, sizeof(j->member_addr), "%s", n->rpc_addr);
		/* Only our own: an installed descriptor names the source's SST
		 * numbers, which may name other files here. */
		j->prev = g->snap_last.applied_index && g->snap_last.member_id == n->o.id
				  ? &g->snap_last : NULL;
		uint64_t now = loop_now_ms();
		for (size_t i = 0; i < SNAP_PINS; i++)
			if (g->snap_pins[i].name[0] && now - g->snap_pins[i].at_ms < SNAP_PIN_MS)
				memcpy(j->pinned[j->n_pinned++], g->snap_pins[i].name, SNAP_NAME_MAX);
	}
	g->snap_job = j;
	if (!g->snap_reuse)
		atomic_store(&g->snap_taking, true);
	if (!g->fsm.snapshot_async && !g->snap_reuse &&
	    fsm_snapshot_async(fsm, bufs, n_bufs) != 0) {
		g->snap_job = NULL;   /* no finalize follows a failed snapshot */
		atomic_store(&g->snap_taking, false);
		free(j);
		return RAFT_IOERR;
	}
	return 0;
}

/* Off the loop (libuv pool): the checkpoint. Reads only the job (and
 * g->snap_last through j->prev, which the loop leaves alone until
 * finalize). */
static int fsm_snapshot_async(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
	struct meta_group *g = fsm->data;
	struct snap_take_job *j = g->snap_job;
	if (!j || g->snap_reuse)
		return 0;
	int rc = snap_take(j);
	/* The state is no longer read: an install waiting for it may go on
	 * (it must not wait for finalize, which needs the loop). */
	atomic_store(&g->snap_taking, false);
	if (rc) {
		LOG_ERROR("snapshot: checkpoint failed", "group=%llu err=%s",
			  (unsigned long long)g->id, iol_strerror(rc));
		return RAFT_IOERR;
	}
	struct raft_buffer *b = raft_malloc(sizeof(*b));
	if (!b || snap_desc_encode(&j->desc, &b->base, &b->len)) {
		raft_free(b);
		return RAFT_NOMEM;
	}
	*bufs = b;
	*n_bufs = 1;
	m_observe(g->m.snap_seconds, j->elapsed_ns / 1000);
	m_set(g->m.snap_bytes, (int64_t)j->desc.bytes);
	return 0;
}

static int fsm_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[],
				 unsigned *n_bufs)
{
	struct meta_group *g = fsm->data;
	for (unsigned i = 0; *bufs && i < *n_bufs; i++)
		raft_free((*bufs)[i].base);
	raft_free(*bufs);
	*bufs = NULL;
	*n_bufs = 0;
	struct snap_take_job *j = g->snap_job;
	g->snap_job = NULL;
	atomic_store(&g->snap_taking, false);
	if (!j)
		return 0;
	if (g->snap_reuse || j->desc.applied_index) {   /* else the checkpoint failed */
		m_inc(g->m.snapshots);
		g->snaps_taken++;
	}
	if (!g->snap_reuse && j->desc.applied_index) {
		snap_desc_free(&g->snap_last);
		g->snap_last = j->desc;   /* moved */
		LOG_INFO("snapshot taken", "group=%llu applied=%llu checkpoint=%s files=%zu "
			 "bytes=%llu crc_bytes=%llu ms=%llu", (unsigned long long)g->id,
			 (unsigned long long)j->desc.applied_index, j->desc.checkpoint,
			 j->desc.n_files, (unsigned long long)j->desc.bytes,
			 (unsigned long long)j->crc_bytes,
			 (unsigned long long)(j->elapsed_ns / 1000000));
	} else if (g->snap_reuse) {
		LOG_DEBUG("snapshot reuses the last checkpoint", "group=%llu applied=%llu",
			  (unsigned long long)g->id, (unsigned long long)g->snap_last.applied_index);
	} else {
		snap_desc_free(&j->desc);
	}
	free(j);
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct meta_group *g = fsm->data;
	struct snap_desc d;
	int rc = snap_desc_decode(buf->base, buf->len, &d);
	if (rc) {
		/* libraft frees buf when restore fails. */
		LOG_ERROR("snapshot restore: not a snapshot descriptor", "group=%llu len=%zu",
			  (unsigned long long)g->id, buf->len);
		return RAFT_CORRUPT;
	}
	if (g->inst) {   /* a newer one while installing: it replaces it */
		rc = group_install(g, &d);
		snap_desc_free(&d);
		if (rc == 0)
			raft_free(buf->base);
		return rc ? RAFT_NOMEM : 0;
	}
	char tag[SNAP_NAME_MAX];
	int pending = meta_state_install_pending(g->state, tag, sizeof(tag));
	uint64_t local = meta_state_applied_index(g->state);
	if (pending == 0 && local >= d.applied_index) {
		/* Every restart lands here (libraft restores its own latest
		 * snapshot): the state already holds it, nothing to load. */
		char path[700];
		if (d.member_id == g->n->o.id && !g->snap_last.applied_index &&
		    snap_local_complete(g->snap_dir, &d, path, sizeof(path)))
			g->snap_last = d;   /* moved: reused while "A" stays */
		else
			snap_desc_free(&d);
		raft_free(buf->base);
		LOG_INFO("snapshot restore: state already there", "group=%llu applied=%llu "
			 "snapshot=%llu", (unsigned long long)g->id, (unsigned long long)local,
			 (unsigned long long)meta_state_applied_index(g->state));
		return 0;
	}
	if (pending > 0)
		LOG_WARN("snapshot restore: an install was interrupted: redoing it",
			 "group=%llu was=%s now=%s", (unsigned long long)g->id, tag, d.checkpoint);
	char name[SNAP_NAME_MAX], from[META_NODE_ADDR_MAX];
	snprintf(name, sizeof(name), "%s", d.checkpoint);
	snprintf(from, sizeof(from), "%s", d.member_addr);
	/* Running: the install goes on off the loop (group_install.c) and
	 * this returns at once; at start, it is done here. */
	rc = pending < 0 ? -EIO : group_install(g, &d);
	if (rc) {
		/* libraft 0.15 has already replaced its log with this snapshot
		 * (and keeps it on disk): a failed restore would leave this
		 * member with a log it can never apply. Stop loudly instead; at
		 * the next start libraft restores the same descriptor and the
		 * install resumes (fetched files are kept, the marker redoes a
		 * half load). At start (not running yet), fail the start. */
		LOG_ERROR("snapshot install failed", "group=%llu checkpoint=%s from=%s err=%s",
			  (unsigned long long)g->id, name, from, iol_strerror(rc));
		snap_desc_free(&d);
		if (g->started)
			abort();
		return RAFT_IOERR;
	}
	snap_desc_free(&d);   /* moved into the install */
	raft_free(buf->base);
	return 0;
}

void group_snap_fsm(struct meta_group *g)
{
	g->fsm.snapshot = fsm_snapshot;
	g->fsm.restore = fsm_restore;
	g->fsm.snapshot_finalize = fsm_snapshot_finalize;
	g->fsm.snapshot_async = g->io.async_work ? fsm_snapshot_async : NULL;
}
