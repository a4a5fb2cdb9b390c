/*
 * node.c — a meta member: Raft FSM over meta_state, group commit, linear-
 * izable reads, leadership tracking and OSD liveness (contracts in node.h;
 * the RPC handlers are in service.c, behind node_internal.h).
 *
 * Invariants:
 *   - Every entry this member proposes is one framed OpBatch (multiple of
 *     8 bytes, meta_state_entry_encode) holding whole Submit calls: the ops
 *     of one call are never split over two entries.
 *   - At most META_NODE_PIPELINE entries are proposed and not yet applied,
 *     each about META_NODE_ENTRY_BYTES at most (one call may exceed it, up
 *     to META_ENTRY_MAX_BYTES, alone in its entry): the bytes in flight stay
 *     bounded (NOTES-deps: libraft stalls beyond ~400 KB in flight).
 *   - The FSM learns an entry's index as raft_last_applied() + 1 (libraft
 *     applies strictly in order and advances last_applied after apply);
 *     meta_state records it in the same write, so a replay is skipped.
 *   - A storage error in apply is fatal (abort): a member that cannot apply
 *     must not go on voting with a state that diverged from its log; so is
 *     a failed snapshot install once running (libraft has already replaced
 *     the log; the restart resumes the install).
 *   - A Raft snapshot is a descriptor of a RocksDB checkpoint (meta/snap.h),
 *     never the state: taken off the loop (fsm v3 snapshot_async), reused
 *     while the state's "A" stays, installed by a streamed fetch and load
 *     during which the loop waits (libraft 0.15's restore is synchronous).
 *
 * Thread: the node's loop, except fsm_snapshot_async (libuv pool) and the
 * fetch thread of an install (meta/snap.c).
 * Not here: forwarding writes (followers redirect the client with the
 * leader's address instead), the reads themselves (node_read.c: ReadIndex
 * rounds, no log write).
 */
#include "meta/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/log.h"

/* ------------------------------------------------------------ helpers */

uint64_t node_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int split_addr(const char *addr, char *host, size_t hostlen, long *port)
{
	const char *colon = strrchr(addr, ':');
	if (!colon || colon == addr || (size_t)(colon - addr) >= hostlen)
		return -EINVAL;
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || p < 0 || p > 65535)
		return -EINVAL;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	*port = p;
	return 0;
}

static int shift_port(const char *addr, long delta, char out[META_NODE_ADDR_MAX])
{
	char host[META_NODE_ADDR_MAX];
	long port;
	if (split_addr(addr, host, sizeof(host), &port))
		return -EINVAL;
	port += delta;
	if (port < 1 || port > 65535)
		return -EINVAL;
	int k = snprintf(out, META_NODE_ADDR_MAX, "%s:%ld", host, port);
	return k > 0 && k < META_NODE_ADDR_MAX ? 0 : -EINVAL;
}

int meta_node_raft_addr(const char *rpc_addr, char out[META_NODE_ADDR_MAX])
{
	return shift_port(rpc_addr, 1, out);
}

int meta_node_rpc_addr(const char *raft_addr, char out[META_NODE_ADDR_MAX])
{
	return shift_port(raft_addr, -1, out);
}

int meta_node_parse_peer(const char *s, struct meta_peer *p)
{
	const char *at = strchr(s, '@');
	if (!at || at == s)
		return -EINVAL;
	char *end;
	unsigned long long id = strtoull(s, &end, 10);
	if (end != at || id == 0)
		return -EINVAL;
	char host[META_NODE_ADDR_MAX];
	long port;
	if (split_addr(at + 1, host, sizeof(host), &port) || port == 0 || port == 65535)
		return -EINVAL;
	p->id = id;
	p->addr = at + 1;
	return 0;
}

const char *meta_node_role_name(int role)
{
	switch (role) {
	case RAFT_LEADER: return "leader";
	case RAFT_FOLLOWER: return "follower";
	case RAFT_CANDIDATE: return "candidate";
	default: return "unavailable";
	}
}

bool node_is_leader(struct meta_node *n)
{
	return !n->closing && raft_state(&n->raft) == RAFT_LEADER;
}

/* The leader's RPC address as this member knows it ("" when none). */
void node_leader_addr(struct meta_node *n, uint64_t *id, char out[META_NODE_ADDR_MAX])
{
	raft_id lid = 0;
	const char *laddr = NULL;
	out[0] = 0;
	if (!n->closing)
		raft_leader(&n->raft, &lid, &laddr);
	if (id)
		*id = lid;
	if (laddr && meta_node_rpc_addr(laddr, out))
		out[0] = 0;
}

void node_fail_not_leader(struct meta_node *n, struct rpc_req *r)
{
	char addr[META_NODE_ADDR_MAX];
	node_leader_addr(n, NULL, addr);
	rpc_fail(r, RPC_FAILED_PRECONDITION, "not leader; leader=%s", addr);
}

/* Run flush/reads/watches on the next loop turn: callbacks from inside
 * libraft (apply, barrier) must not re-enter it. */
void node_kick(struct meta_node *n)
{
	if (n->closing || n->kick_armed || !n->kick.loop)
		return;   /* before start finished, the first tick does the work */
	n->kick_armed = true;
	uv_timer_start(&n->kick, node_on_kick, 0, 0);
}

/* ------------------------------------------------------------ the FSM */

static struct inflight *inflight_at(struct meta_node *n, uint64_t index)
{
	for (struct inflight *f = n->inflight; f; f = f->next)
		if (f->req.index == index)
			return f;
	return NULL;
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct meta_node *n = fsm->data;
	uint64_t index = raft_last_applied(&n->raft) + 1;
	uint64_t t0 = loop_now_ns();
	int rc = meta_state_apply(n->state, index, buf->base, buf->len, n->res, META_BATCH_MAX_OPS);
	if (rc < 0 && rc != IOL_EPROTOCOL) {
		/* Consensus invariant: the log is committed, the state must
		 * follow it. Crash loudly rather than vote on a stale state. */
		LOG_ERROR("apply failed: stopping", "index=%llu err=%s", (unsigned long long)index,
			  iol_strerror(rc));
		abort();
	}
	*result = NULL;
	metrics_histogram_observe(n->m_apply_us, (loop_now_ns() - t0) / 1000);
	/* Snapshot by bytes too: libraft 0.15 counts entries only, so past
	 * the byte threshold lower its entry threshold to 1 (the next check,
	 * right after this apply, snapshots); fsm_snapshot restores it. */
	n->snap_bytes_since += buf->len;
	if (!n->snap_lowered && n->snap_bytes_since >= n->o.snapshot_bytes) {
		raft_set_snapshot_threshold(&n->raft, 1);
		n->snap_lowered = true;
	}
	if (rc == IOL_EPROTOCOL)
		LOG_WARN("entry does not decode: skipped", "index=%llu", (unsigned long long)index);
	int nops = rc > 0 ? rc : 0;
	metrics_counter_add(n->m_ops, (uint64_t)nops);
	n->ops_committed += (uint64_t)nops;
	for (int i = 0; i < nops; i++)
		if (n->res[i].epoch > n->epoch) {
			n->epoch = n->res[i].epoch;
			n->map_dirty = true;
		}
	struct inflight *f = inflight_at(n, index);
	if (f) {
		/* Ours: keep the answers until raft_apply's callback, which a
		 * libraft version may fire later than this apply. */
		if (rc >= 0 && (size_t)nops == f->n_ops) {
			memcpy(f->res, n->res, (size_t)nops * sizeof(*f->res));
			f->applied = true;
		}
	}
	if (n->map_dirty || n->ready)
		node_kick(n);   /* refresh the map; serve reads this index completes */
	return 0;
}

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

void node_snap_pin(struct meta_node *n, const char *name)
{
	uint64_t now = loop_now_ms();
	size_t slot = 0;
	for (size_t i = 0; i < SNAP_PINS; i++) {
		if (!strcmp(n->snap_pins[i].name, name)) {
			slot = i;
			break;
		}
		if (n->snap_pins[i].at_ms < n->snap_pins[slot].at_ms)
			slot = i;
	}
	snprintf(n->snap_pins[slot].name, sizeof(n->snap_pins[slot].name), "%s", name);
	n->snap_pins[slot].at_ms = now;
}

static void snap_restore_threshold(struct meta_node *n)
{
	n->snap_bytes_since = 0;
	if (n->snap_lowered) {
		raft_set_snapshot_threshold(&n->raft, n->o.snapshot_threshold);
		n->snap_lowered = false;
	}
}

static int fsm_snapshot_async(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs);

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
	struct meta_node *n = fsm->data;
	*bufs = NULL;
	*n_bufs = 0;
	if (n->snap_job || meta_state_applied_index(n->state) == 0)
		return RAFT_BUSY;   /* one at a time; nothing to snapshot yet (BUSY: retried later) */
	struct snap_take_job *j = calloc(1, sizeof(*j));
	if (!j)
		return RAFT_NOMEM;
	snap_restore_threshold(n);
	n->snap_reuse = n->snap_last.applied_index &&
			n->snap_last.applied_index == meta_state_applied_index(n->state);
	if (n->snap_reuse) {
		struct raft_buffer *b = raft_malloc(sizeof(*b));
		if (!b || snap_desc_encode(&n->snap_last, &b->base, &b->len)) {
			raft_free(b);
			free(j);
			return RAFT_NOMEM;
		}
		*bufs = b;
		*n_bufs = 1;
	} else {
		j->state = n->state;
		snprintf(j->dir, sizeof(j->dir), "%s", n->snap_dir);
		j->member_id = n->o.id;
		snprintf(j->member_addr, sizeof(j->member_addr), "%s", n->rpc_addr);
		/* Only our own: an installed descriptor names the source's SST
		 * numbers, which may name other files here. */
		j->prev = n->snap_last.applied_index && n->snap_last.member_id == n->o.id
				  ? &n->snap_last : NULL;
		uint64_t now = loop_now_ms();
		for (size_t i = 0; i < SNAP_PINS; i++)
			if (n->snap_pins[i].name[0] && now - n->snap_pins[i].at_ms < SNAP_PIN_MS)
				memcpy(j->pinned[j->n_pinned++], n->snap_pins[i].name, SNAP_NAME_MAX);
	}
	n->snap_job = j;
	if (!n->fsm.snapshot_async && !n->snap_reuse &&
	    fsm_snapshot_async(fsm, bufs, n_bufs) != 0) {
		n->snap_job = NULL;   /* no finalize follows a failed snapshot */
		free(j);
		return RAFT_IOERR;
	}
	return 0;
}

/* Off the loop (libuv pool): the checkpoint. Reads only the job (and
 * n->snap_last through j->prev, which the loop leaves alone until
 * finalize). */
static int fsm_snapshot_async(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
	struct meta_node *n = fsm->data;
	struct snap_take_job *j = n->snap_job;
	if (!j || n->snap_reuse)
		return 0;
	int rc = snap_take(j);
	if (rc) {
		LOG_ERROR("snapshot: checkpoint failed", "err=%s", iol_strerror(rc));
		return RAFT_IOERR;
	}
	struct raft_buffer *b = raft_malloc(sizeof(*b));
	if (!b || snap_desc_encode(&j->desc, &b->base, &b->len)) {
		raft_free(b);
		return RAFT_NOMEM;
	}
	*bufs = b;
	*n_bufs = 1;
	metrics_histogram_observe(n->m_snap_seconds, j->elapsed_ns / 1000);
	metrics_gauge_set(n->m_snap_bytes, (int64_t)j->desc.bytes);
	return 0;
}

static int fsm_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[],
				 unsigned *n_bufs)
{
	struct meta_node *n = fsm->data;
	for (unsigned i = 0; *bufs && i < *n_bufs; i++)
		raft_free((*bufs)[i].base);
	raft_free(*bufs);
	*bufs = NULL;
	*n_bufs = 0;
	struct snap_take_job *j = n->snap_job;
	n->snap_job = NULL;
	if (!j)
		return 0;
	if (n->snap_reuse || j->desc.applied_index) {   /* else the checkpoint failed */
		metrics_counter_inc(n->m_snapshots);
		n->snaps_taken++;
	}
	if (!n->snap_reuse && j->desc.applied_index) {
		snap_desc_free(&n->snap_last);
		n->snap_last = j->desc;   /* moved */
		LOG_INFO("snapshot taken", "applied=%llu checkpoint=%s files=%zu bytes=%llu "
			 "crc_bytes=%llu ms=%llu",
			 (unsigned long long)j->desc.applied_index, j->desc.checkpoint,
			 j->desc.n_files, (unsigned long long)j->desc.bytes,
			 (unsigned long long)j->crc_bytes,
			 (unsigned long long)(j->elapsed_ns / 1000000));
	} else if (n->snap_reuse) {
		LOG_DEBUG("snapshot reuses the last checkpoint", "applied=%llu",
			  (unsigned long long)n->snap_last.applied_index);
	} else {
		snap_desc_free(&j->desc);
	}
	free(j);
	return 0;
}

/* Where to fetch d from: its member first, then every other member of the
 * configuration (one that installed d holds it under the same name). */
static size_t fetch_sources(struct meta_node *n, const struct snap_desc *d,
			    char addrs[][META_NODE_ADDR_MAX], size_t cap)
{
	size_t k = 0;
	if (d->member_addr[0] && d->member_id != n->o.id)
		snprintf(addrs[k++], META_NODE_ADDR_MAX, "%s", d->member_addr);
	for (unsigned i = 0; i < n->raft.configuration.n && k < cap; i++) {
		const struct raft_server *sv = &n->raft.configuration.servers[i];
		char a[META_NODE_ADDR_MAX];
		if (sv->id == n->o.id || sv->id == d->member_id || meta_node_rpc_addr(sv->address, a))
			continue;
		snprintf(addrs[k++], META_NODE_ADDR_MAX, "%s", a);
	}
	return k;
}

/*
 * Install d into the state: from this member's own checkpoint when it
 * holds it, else fetched from the members into DIR/snap/in-<name>. Blocks
 * the loop until done: libraft 0.15's restore is synchronous, and a
 * follower being installed has nothing better to do (it cannot apply or
 * vote usefully on a state it does not have). 0 or a negative error.
 */
static int snap_install(struct meta_node *n, const struct snap_desc *d)
{
	uint64_t t0 = loop_now_ms();
	char local[700];
	struct snap_fetch_job *fj = NULL;
	const char *src = local;
	int rc = 0;
	if (!snap_local_complete(n->snap_dir, d, local, sizeof(local))) {
		fj = calloc(1, sizeof(*fj));
		if (!fj)
			return -ENOMEM;
		fj->desc = d;
		snprintf(fj->dir, sizeof(fj->dir), "%s", n->snap_dir);
		fj->n_addrs = fetch_sources(n, d, fj->addrs, META_NODE_MAX_PEERS + 1);
		fj->timeout_ms = n->o.snapshot_fetch_timeout_ms;
		fj->chunk_bytes = n->o.snapshot_fetch_chunk_bytes;
		fj->m_fetch_bytes = n->m_fetch_bytes;
		LOG_INFO("snapshot install: fetching", "checkpoint=%s from=%s applied=%llu files=%zu "
			 "bytes=%llu", d->checkpoint, d->member_addr,
			 (unsigned long long)d->applied_index, d->n_files,
			 (unsigned long long)d->bytes);
		rc = snap_fetch(fj);
		n->fetch_bytes += fj->fetched_bytes;
		src = fj->path;
	}
	uint64_t t1 = loop_now_ms();
	if (rc == 0)
		rc = meta_state_install(n->state, src, d->checkpoint, 0);
	if (rc == 0 && fj)
		snap_adopt(n->snap_dir, d);
	if (rc == 0) {
		snap_desc_free(&n->snap_last);
		rc = snap_desc_copy(&n->snap_last, d);
		if (rc)
			n->snap_last.applied_index = 0;
		rc = 0;
	}
	n->last_install_ms = loop_now_ms() - t0;
	LOG_INFO("snapshot install", "checkpoint=%s applied=%llu fetched=%llu fetch_ms=%llu "
		 "load_ms=%llu err=%s", d->checkpoint, (unsigned long long)d->applied_index,
		 (unsigned long long)(fj ? fj->fetched_bytes : 0), (unsigned long long)(t1 - t0),
		 (unsigned long long)(loop_now_ms() - t1), rc ? iol_strerror(rc) : "none");
	free(fj);
	return rc;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct meta_node *n = fsm->data;
	struct snap_desc d;
	int rc = snap_desc_decode(buf->base, buf->len, &d);
	if (rc) {
		/* libraft frees buf when restore fails. */
		LOG_ERROR("snapshot restore: not a snapshot descriptor", "len=%zu", buf->len);
		return RAFT_CORRUPT;
	}
	char tag[SNAP_NAME_MAX];
	int pending = meta_state_install_pending(n->state, tag, sizeof(tag));
	uint64_t local = meta_state_applied_index(n->state);
	if (pending == 0 && local >= d.applied_index) {
		/* Every restart lands here (libraft restores its own latest
		 * snapshot): the state already holds it, nothing to load. */
		char path[700];
		if (d.member_id == n->o.id && !n->snap_last.applied_index &&
		    snap_local_complete(n->snap_dir, &d, path, sizeof(path)))
			n->snap_last = d;   /* moved: reused while "A" stays */
		else
			snap_desc_free(&d);
		raft_free(buf->base);
		LOG_INFO("snapshot restore: state already there", "applied=%llu snapshot=%llu",
			 (unsigned long long)local, (unsigned long long)meta_state_applied_index(n->state));
		return 0;
	}
	if (pending > 0)
		LOG_WARN("snapshot restore: an install was interrupted: redoing it", "was=%s now=%s",
			 tag, d.checkpoint);
	rc = pending < 0 ? -EIO : snap_install(n, &d);
	if (rc) {
		/* libraft 0.15 has already replaced its log with this snapshot
		 * (and keeps it on disk): a failed restore would leave this
		 * member with a log it can never apply. Stop loudly instead; at
		 * the next start libraft restores the same descriptor and the
		 * install resumes (fetched files are kept, the marker redoes a
		 * half load). At start (not running yet), fail the start. */
		LOG_ERROR("snapshot install failed", "checkpoint=%s from=%s err=%s", d.checkpoint,
			  d.member_addr, iol_strerror(rc));
		snap_desc_free(&d);
		if (n->started)
			abort();
		return RAFT_IOERR;
	}
	snap_desc_free(&d);
	raft_free(buf->base);
	n->restores++;
	metrics_counter_inc(n->m_restores);
	n->snap_bytes_since = 0;
	n->epoch = node_read_epoch(n);
	n->map_dirty = true;
	node_kick(n);
	return 0;
}

uint64_t node_read_epoch(struct meta_node *n)
{
	Iolake__Meta__ClusterMap *m = NULL;
	if (meta_state_get_map(n->state, &m))
		return 0;
	uint64_t e = m->epoch;
	meta_state_free_msg(m);
	return e;
}

/* ------------------------------------------------------ state digest
 * meta_state_digest scans the whole state: on the libuv pool, not the
 * loop (state.h lets reads run beside apply). Applies happen only on this
 * loop and move "A", so a scan that ends with "A" and the restore count
 * where they were when it started hashed exactly that state; otherwise it
 * is tried again (twice) and then answered empty. */

#define DIGEST_TRIES 3

static void digest_work(uv_work_t *w)
{
	struct meta_node *n = w->data;
	n->dg_rc = meta_state_digest(n->state, n->dg_raw);
}

static void digest_after(uv_work_t *w, int status);

static void digest_start(struct meta_node *n)
{
	n->dg_index = meta_state_applied_index(n->state);
	n->dg_restores = n->restores;
	n->dg_work.data = n;
	n->dg_busy = uv_queue_work(n->loop, &n->dg_work, digest_work, digest_after) == 0;
}

static bool digest_current(const struct meta_node *n)
{
	return meta_state_applied_index(n->state) == n->dg_index && n->restores == n->dg_restores;
}

static void digest_answer(struct meta_node *n, const char *hex)
{
	struct digest_wait *w = n->dg_waiters;
	n->dg_waiters = NULL;
	n->dg_n_waiters = 0;
	while (w) {
		struct digest_wait *next = w->next;
		node_status_respond(n, w->req, hex, n->dg_index);
		free(w);
		w = next;
	}
}

static void digest_fail_waiters(struct meta_node *n)
{
	struct digest_wait *w = n->dg_waiters;
	n->dg_waiters = NULL;
	n->dg_n_waiters = 0;
	while (w) {
		struct digest_wait *next = w->next;
		rpc_fail(w->req, RPC_UNAVAILABLE, "member stopping");
		free(w);
		w = next;
	}
}

static void maybe_done(struct meta_node *n);

static void digest_after(uv_work_t *w, int status)
{
	struct meta_node *n = w->data;
	n->dg_busy = false;
	if (n->closing) {   /* waiters were failed by meta_node_close */
		if (n->raft_closed) {
			meta_state_close(n->state);
			n->state = NULL;
		}
		maybe_done(n);
		return;
	}
	if (status == 0 && n->dg_rc == 0 && digest_current(n)) {
		hash_hex(n->dg_raw, sizeof(n->dg_raw), n->dg_hex);
		n->dg_valid = true;
		digest_answer(n, n->dg_hex);
		return;
	}
	if (status == 0 && n->dg_rc == 0 && ++n->dg_tries < DIGEST_TRIES) {
		digest_start(n);   /* the state moved under the scan */
		if (n->dg_busy)
			return;
	}
	if (n->dg_rc)
		LOG_WARN("state digest failed", "err=%s", iol_strerror(n->dg_rc));
	n->dg_index = meta_state_applied_index(n->state);
	digest_answer(n, "");
}

void node_status_digest(struct meta_node *n, struct rpc_req *r)
{
	if (n->dg_valid && !n->dg_busy && digest_current(n)) {
		node_status_respond(n, r, n->dg_hex, n->dg_index);
		return;
	}
	struct digest_wait *w = NULL;
	if (n->dg_n_waiters < META_NODE_DIGEST_WAITERS)
		w = malloc(sizeof(*w));
	if (!w) {
		node_status_respond(n, r, "", meta_state_applied_index(n->state));
		return;
	}
	w->req = r;
	w->next = n->dg_waiters;
	n->dg_waiters = w;
	n->dg_n_waiters++;
	if (n->dg_busy)
		return;
	n->dg_valid = false;
	n->dg_tries = 0;
	digest_start(n);
	if (!n->dg_busy)
		digest_answer(n, "");
}

/* ------------------------------------------------------- group commit */

static void sub_finish(struct meta_node *n, struct sub *s, int status, const char *why,
		       const struct meta_op_result *res, uint64_t index)
{
	if (!s->req) {   /* leader-internal op */
		s->done(n, s, status == RPC_OK ? (res ? res[0].err : 0) : IOL_EUNAVAILABLE);
		return;
	}
	if (status != RPC_OK) {
		rpc_fail(s->req, status, "%s", why);
		free(s);
		return;
	}
	Iolake__Meta__SubmitResponse resp = IOLAKE__META__SUBMIT_RESPONSE__INIT;
	Iolake__Meta__OpResult *msgs = calloc(s->n_ops, sizeof(*msgs));
	Iolake__Meta__OpResult **ptrs = calloc(s->n_ops, sizeof(*ptrs));
	if (!msgs || !ptrs) {
		free(msgs);
		free(ptrs);
		rpc_fail(s->req, RPC_INTERNAL, "out of memory answering a committed call");
		free(s);
		return;
	}
	for (size_t i = 0; i < s->n_ops; i++) {
		iolake__meta__op_result__init(&msgs[i]);
		msgs[i].status = meta_state_err_to_status(res[i].err);
		msgs[i].generation = res[i].generation;
		msgs[i].epoch = res[i].epoch;
		msgs[i].upload_id = (char *)res[i].upload_id;
		msgs[i].etag = (char *)res[i].etag;
		ptrs[i] = &msgs[i];
	}
	resp.results = ptrs;
	resp.n_results = s->n_ops;
	resp.index = index;
	rpc_respond(s->req, &resp.base, NULL);
	free(msgs);
	free(ptrs);
	free(s);
}

static void fail_subs(struct meta_node *n, struct sub *s, int status, const char *why)
{
	while (s) {
		struct sub *next = s->next;
		sub_finish(n, s, status, why, NULL, 0);
		s = next;
	}
}

static void on_applied(struct raft_apply *req, int status, void *result)
{
	(void)result;
	struct inflight *f = req->data;
	struct meta_node *n = f->n;
	for (struct inflight **pp = &n->inflight; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	n->n_inflight--;
	if (status == 0 && f->term > n->read_term)
		n->read_term = f->term;   /* an entry of that term committed (node_read.c) */
	if (status == 0 && f->applied) {
		size_t off = 0;
		struct sub *s = f->subs;
		while (s) {
			struct sub *next = s->next;
			size_t k = s->n_ops;
			sub_finish(n, s, RPC_OK, NULL, f->res + off, f->req.index);
			off += k;
			s = next;
		}
	} else if (status == 0) {
		fail_subs(n, f->subs, RPC_INTERNAL, "entry applied without results");
	} else {
		/* Lost leadership or closing: the entry may still commit under
		 * the next leader; the client's retry is deduplicated. */
		char why[96];
		snprintf(why, sizeof(why), "not committed here (%s); retry", raft_strerror(status));
		fail_subs(n, f->subs, RPC_UNAVAILABLE, why);
	}
	free(f->res);
	free(f);
	node_kick(n);
}

/* Propose queued calls while the pipeline has room. */
void node_flush(struct meta_node *n)
{
	while (n->q_head && n->n_inflight < META_NODE_PIPELINE) {
		if (!node_is_leader(n)) {
			struct sub *all = n->q_head;
			n->q_head = n->q_tail = NULL;
			n->q_ops = 0;
			char addr[META_NODE_ADDR_MAX], why[128];
			node_leader_addr(n, NULL, addr);
			snprintf(why, sizeof(why), "not leader; leader=%s", addr);
			fail_subs(n, all, RPC_FAILED_PRECONDITION, why);
			return;
		}
		/* Take whole calls while they fit. */
		struct sub *first = n->q_head, *last = first;
		size_t ops = first->n_ops, bytes = first->bytes;
		while (last->next && ops + last->next->n_ops <= META_BATCH_MAX_OPS &&
		       bytes + last->next->bytes <= META_NODE_ENTRY_BYTES) {
			last = last->next;
			ops += last->n_ops;
			bytes += last->bytes;
		}
		n->q_head = last->next;
		if (!n->q_head)
			n->q_tail = NULL;
		last->next = NULL;
		n->q_ops -= ops;

		size_t k = 0;
		for (struct sub *s = first; s; s = s->next)
			for (size_t i = 0; i < s->n_ops; i++)
				n->batch_ops[k++] = s->ops[i];
		Iolake__Meta__OpBatch batch = IOLAKE__META__OP_BATCH__INIT;
		batch.ops = n->batch_ops;
		batch.n_ops = k;

		struct inflight *f = calloc(1, sizeof(*f));
		struct meta_op_result *res = calloc(k, sizeof(*res));
		size_t size = meta_state_entry_size(&batch);
		uint8_t *data = raft_malloc(size);
		long len = -ENOMEM;
		if (f && res && data)
			len = meta_state_entry_encode(&batch, data, size);
		if (len < 0) {
			free(f);
			free(res);
			raft_free(data);
			fail_subs(n, first, len == IOL_ETOO_LARGE ? RPC_INVALID_ARGUMENT : RPC_INTERNAL,
				  len == IOL_ETOO_LARGE ? "batch too large" : "cannot encode entry");
			continue;
		}
		f->n = n;
		f->subs = first;
		f->n_ops = k;
		f->res = res;
		f->req.data = f;
		f->term = n->raft.current_term;
		struct raft_buffer rb = { .base = data, .len = (size_t)len };
		int rc = raft_apply(&n->raft, &f->req, &rb, 1, on_applied);
		if (rc) {
			raft_free(data);
			free(res);
			free(f);
			fail_subs(n, first, rc == RAFT_NOTLEADER ? RPC_FAILED_PRECONDITION : RPC_UNAVAILABLE,
				  rc == RAFT_NOTLEADER ? "not leader; leader=" : "raft_apply failed; retry");
			continue;
		}
		f->next = n->inflight;
		n->inflight = f;
		n->n_inflight++;
		n->entries_proposed++;
		metrics_counter_inc(n->m_entries);
		metrics_histogram_observe(n->m_batch_ops, k);
	}
}

int node_enqueue(struct meta_node *n, struct sub *s)
{
	if (n->q_ops + s->n_ops > META_NODE_QUEUE_OPS)
		return -EAGAIN;
	s->next = NULL;
	if (n->q_tail)
		n->q_tail->next = s;
	else
		n->q_head = s;
	n->q_tail = s;
	n->q_ops += s->n_ops;
	node_flush(n);
	return 0;
}

/* ---------------------------------------------------- leader-internal ops */

struct own_op {
	struct sub sub;
	Iolake__Meta__Op op;
	Iolake__Meta__Op *opp;
	Iolake__Meta__InitMap init;
	Iolake__Meta__SetOsdState set;
	uint32_t osd_id;
};

static void own_done(struct meta_node *n, struct sub *s, int err)
{
	struct own_op *o = container_of(s, struct own_op, sub);
	if (o->op.body_case == IOLAKE__META__OP__BODY_INIT_MAP) {
		n->init_map_pending = false;
		if (err && err != IOL_EEXISTS)
			LOG_WARN("InitMap failed", "err=%s", iol_strerror(err));
	} else {
		LOG_INFO("osd state proposed", "osd=%u up=%d in=%d err=%s", o->osd_id, o->set.up,
			 o->set.in, err ? iol_strerror(err) : "ok");
	}
	free(o);
}

static void propose_own(struct meta_node *n, struct own_op *o)
{
	o->opp = &o->op;
	o->sub.ops = &o->opp;
	o->sub.n_ops = 1;
	o->sub.bytes = protobuf_c_message_get_packed_size(&o->op.base) + 8;
	o->sub.done = own_done;
	if (node_enqueue(n, &o->sub))
		own_done(n, &o->sub, -EAGAIN);
}

static void propose_init_map(struct meta_node *n)
{
	if (n->init_map_pending || n->epoch)
		return;
	Iolake__Meta__ClusterMap *m = NULL;
	if (meta_state_get_map(n->state, &m) == 0) {
		meta_state_free_msg(m);
		return;
	}
	struct own_op *o = calloc(1, sizeof(*o));
	if (!o)
		return;
	iolake__meta__op__init(&o->op);
	iolake__meta__init_map__init(&o->init);
	o->init.pg_count = n->o.pg_count;
	o->init.k = n->o.ec_k;
	o->init.m = n->o.ec_m;
	o->init.down_keeps_slot = true;
	o->init.time_ms = node_wall_ms();
	o->op.body_case = IOLAKE__META__OP__BODY_INIT_MAP;
	o->op.init_map = &o->init;
	n->init_map_pending = true;
	propose_own(n, o);
}

static void propose_osd_state(struct meta_node *n, uint32_t id, bool set_up, bool up, bool set_in,
			      bool in)
{
	struct own_op *o = calloc(1, sizeof(*o));
	if (!o)
		return;
	iolake__meta__op__init(&o->op);
	iolake__meta__set_osd_state__init(&o->set);
	o->osd_id = id;
	o->set.id = id;
	o->set.set_up = set_up;
	o->set.up = up;
	o->set.set_in = set_in;
	o->set.in = in;
	o->set.time_ms = node_wall_ms();
	o->op.body_case = IOLAKE__META__OP__BODY_SET_OSD_STATE;
	o->op.set_osd_state = &o->set;
	propose_own(n, o);
}

/* ------------------------------------------------------ OSD liveness */

struct beat *node_beat(struct meta_node *n, uint32_t id, bool create)
{
	for (size_t i = 0; i < n->n_beats; i++)
		if (n->beats[i].id == id)
			return &n->beats[i];
	if (!create)
		return NULL;
	if (n->n_beats == n->cap_beats) {
		size_t cap = n->cap_beats ? 2 * n->cap_beats : 64;
		struct beat *nb = realloc(n->beats, cap * sizeof(*nb));
		if (!nb)
			return NULL;
		n->beats = nb;
		n->cap_beats = cap;
	}
	struct beat *b = &n->beats[n->n_beats++];
	memset(b, 0, sizeof(*b));
	b->id = id;
	return b;
}

/* A beat from osd: bring it back up (and in) when the map says otherwise.
 * An OSD an operator took out (admin_out) comes up but stays out; apply
 * enforces that too, for a proposal that raced the operator's op. */
void node_osd_beat(struct meta_node *n, const Iolake__Meta__OsdInfo *osd)
{
	uint64_t now = loop_now_ms();
	struct beat *b = node_beat(n, osd->id, true);
	if (!b)
		return;
	b->last_ms = now;
	bool want_in = !osd->admin_out;
	if ((!osd->up || (want_in && !osd->in)) && now - b->up_proposed_ms >= 1000) {
		b->up_proposed_ms = now;
		propose_osd_state(n, osd->id, true, true, want_in, want_in);
	}
}

/* Leader: mark OSDs down, then out, whose beats stopped. A new leader
 * counts from its election (it has no older beat times), and an OSD the
 * leader sees for the first time (just registered) from that moment: it
 * gets the whole grace period for its first beat. */
static void sweep_osds(struct meta_node *n)
{
	if (!n->map)
		return;
	uint64_t now = loop_now_ms();
	for (size_t i = 0; i < n->map->n_osds; i++) {
		const Iolake__Meta__OsdInfo *o = n->map->osds[i];
		struct beat *b = node_beat(n, o->id, true);
		if (!b)
			return;
		if (!b->last_ms)
			b->last_ms = now;
		uint64_t last = b->last_ms > n->leader_since_ms ? b->last_ms : n->leader_since_ms;
		uint64_t quiet = now - last;
		bool down = o->up && quiet >= n->o.osd_down_after_ms;
		bool out = o->in && quiet >= n->o.osd_out_after_ms;
		if ((down || out) && now - b->down_proposed_ms >= 1000) {
			b->down_proposed_ms = now;
			propose_osd_state(n, o->id, down, false, out, false);
		}
	}
}

/* --------------------------------------------------------- PG health */

const char *const node_flag_reasons[NODE_FLAG_REASONS] = {
	"put_partial", "read_bad_shard", "scrub", "other",
};

void node_pg_metrics(struct meta_node *n, uint64_t now_ms)
{
	struct meta_pg_totals t;
	memset(&t, 0, sizeof(t));
	if (n->map && node_is_leader(n))
		meta_pgstate_derive_all(n->pgs, n->map, now_ms, NULL, &t);
	for (int s = 0; s < META_PG__COUNT; s++)
		metrics_gauge_set(n->m_pg_state[s], t.counts[s]);
	metrics_gauge_set(n->m_rec_bytes, (int64_t)t.bytes_missing);
	metrics_gauge_set(n->m_rec_stripes, (int64_t)t.stripes_missing);
	metrics_gauge_set(n->m_rec_rate, (int64_t)t.rate_bytes_per_s);
	metrics_gauge_set(n->m_rec_eta, (int64_t)t.eta_s);
	metrics_gauge_set(n->m_unfound, (int64_t)t.unfound);
}

/* ------------------------------------------------------------ timers */

static void refresh_map(struct meta_node *n)
{
	n->map_dirty = false;
	Iolake__Meta__ClusterMap *m = NULL;
	if (meta_state_get_map(n->state, &m))
		return;
	meta_state_free_msg(n->map);
	n->map = m;
	n->epoch = m->epoch;
	metrics_gauge_set(n->m_epoch, (int64_t)m->epoch);
	node_wake_watches(n, false);
}

void node_on_kick(uv_timer_t *t)
{
	struct meta_node *n = t->data;
	n->kick_armed = false;
	if (n->closing)
		return;
	if (n->map_dirty)
		refresh_map(n);
	node_flush(n);
	node_start_reads(n);
}

static void on_tick(uv_timer_t *t)
{
	struct meta_node *n = t->data;
	if (n->closing)
		return;
	int role = raft_state(&n->raft);
	raft_id lid = 0;
	const char *laddr = NULL;
	raft_leader(&n->raft, &lid, &laddr);
	if (lid != n->leader_id) {
		if (lid)
			metrics_counter_inc(n->m_leader_changes);
		LOG_INFO("leader changed", "leader=%llu term=%llu role=%s", (unsigned long long)lid,
			 (unsigned long long)n->raft.current_term, meta_node_role_name(role));
		n->leader_id = lid;
	}
	uint64_t now = loop_now_ms();
	if (role == RAFT_LEADER && n->role != RAFT_LEADER) {
		n->leader_since_ms = now;
		n->n_beats = 0;
		meta_pgstate_reset(n->pgs);   /* reports of an older term may be stale */
	}
	if (role != RAFT_LEADER && n->role == RAFT_LEADER) {
		node_flush(n);   /* fails what is queued: not leader */
		meta_pgstate_reset(n->pgs);
		node_pg_metrics(n, now);  /* zero: a follower's view means nothing */
	}
	n->role = role;
	metrics_gauge_set(n->m_term, (int64_t)n->raft.current_term);
	metrics_gauge_set(n->m_commit, (int64_t)n->raft.commit_index);
	metrics_gauge_set(n->m_last_index, (int64_t)raft_last_index(&n->raft));
	metrics_gauge_set(n->m_applied, (int64_t)raft_last_applied(&n->raft));
	metrics_gauge_set(n->m_is_leader, role == RAFT_LEADER);
	if (role == RAFT_LEADER && raft_last_applied(&n->raft) >= n->raft.commit_index) {
		propose_init_map(n);
		if (now - n->last_sweep_ms >= 200) {
			n->last_sweep_ms = now;
			sweep_osds(n);
		}
		if (now - n->last_pg_metrics_ms >= 1000) {
			n->last_pg_metrics_ms = now;
			node_pg_metrics(n, now);
		}
	}
	if (n->map_dirty)
		refresh_map(n);
	node_expire_watches(n, now);
}

/* ------------------------------------------------------------- start */

static int mkdir_p1(const char *path)
{
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

/* Why the Raft transport could not listen on addr, if binding it shows
 * why (the port in use, an address not on this host); "" otherwise. */
static const char *raft_port_problem(uv_loop_t *loop, const char *addr)
{
	char host[META_NODE_ADDR_MAX];
	const char *colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return "";
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	struct sockaddr_in sa;
	if (uv_ip4_addr(host, atoi(colon + 1), &sa))
		return "";
	uv_tcp_t *t = malloc(sizeof(*t));
	const char *why = "";
	if (!t || uv_tcp_init(loop, t)) {
		free(t);
		return "";
	}
	int rc = uv_tcp_bind(t, (const struct sockaddr *)&sa, 0);
	if (!rc)
		rc = uv_listen((uv_stream_t *)t, 1, NULL);
	if (rc)
		why = uv_strerror(rc);
	uv_close((uv_handle_t *)t, free_handle);
	return why;
}

static void node_free(struct meta_node *n)
{
	meta_state_free_msg(n->map);
	meta_pgstate_free(n->pgs);
	snap_desc_free(&n->snap_last);
	if (n->own_metrics)
		metrics_registry_free(n->metrics);
	free(n->beats);
	free(n->res);
	free(n->batch_ops);
	free(n->peers_copy);
	free(n);
}

static void maybe_done(struct meta_node *n)
{
	if (--n->close_pending > 0)
		return;
	void (*cb)(void *) = n->close_cb;
	void *ud = n->close_ud;
	node_free(n);
	if (cb)
		cb(ud);
}

static void on_handle_closed(uv_handle_t *h)
{
	maybe_done(h->data);
}

static void on_raft_closed(struct raft *r)
{
	struct meta_node *n = r->data;
	raft_uv_close(&n->io);
	raft_uv_tcp_close(&n->transport);
	n->raft_closed = true;
	if (!n->dg_busy) {   /* else digest_after closes it */
		meta_state_close(n->state);
		n->state = NULL;
	}
	maybe_done(n);
}

static int register_metrics(struct meta_node *n)
{
	char id[24];
	snprintf(id, sizeof(id), "%llu", (unsigned long long)n->o.id);
	const char *const *l = METRICS_LABELS("member", id);
	struct metrics_registry *g = n->metrics;
	size_t nb;
	const uint64_t *lat = metrics_latency_buckets_us(&nb);
	static const uint64_t ops_b[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096 };
	n->m_term = metrics_gauge_new(g, "iolake_meta_raft_term", "Raft term.", l);
	n->m_commit = metrics_gauge_new(g, "iolake_meta_raft_commit_index", "Raft commit index.", l);
	n->m_applied = metrics_gauge_new(g, "iolake_meta_raft_applied_index", "Raft index applied.", l);
	n->m_is_leader = metrics_gauge_new(g, "iolake_meta_is_leader", "1 on the leader.", l);
	n->m_epoch = metrics_gauge_new(g, "iolake_meta_map_epoch", "Cluster map epoch.", l);
	n->m_leader_changes = metrics_counter_new(g, "iolake_meta_leader_changes_total",
						  "Leader changes seen.", l);
	n->m_entries = metrics_counter_new(g, "iolake_meta_entries_proposed_total",
					   "Raft entries proposed by this member.", l);
	n->m_ops = metrics_counter_new(g, "iolake_meta_ops_applied_total", "Ops applied.", l);
	n->m_snapshots = metrics_counter_new(g, "iolake_meta_snapshots_total", "Snapshots taken.", l);
	n->m_restores = metrics_counter_new(g, "iolake_meta_snapshot_installs_total",
					    "Snapshots installed from the leader.", l);
	n->m_apply_us = metrics_histogram_new(g, "iolake_meta_apply_seconds",
					      "Time to apply one entry.", l, lat, nb, 1e-6);
	n->m_batch_ops = metrics_histogram_new(g, "iolake_meta_batch_ops", "Ops per entry proposed.",
					       l, ops_b, sizeof(ops_b) / sizeof(ops_b[0]), 1);
	static const uint64_t snap_b[] = { 1000, 5000, 20000, 100000, 500000, 2000000, 10000000,
					   60000000 };
	n->m_snap_bytes = metrics_gauge_new(g, "iolake_meta_snapshot_bytes",
					    "Bytes of the files of the last checkpoint taken.", l);
	n->m_fetch_bytes = metrics_counter_new(g, "iolake_meta_snapshot_fetch_bytes_total",
					       "Snapshot file bytes fetched from other members.", l);
	n->m_snap_seconds = metrics_histogram_new(g, "iolake_meta_snapshot_seconds",
						  "Time to take one checkpoint (off the loop).", l,
						  snap_b, sizeof(snap_b) / sizeof(snap_b[0]), 1e-6);
	if (!n->m_snap_bytes || !n->m_fetch_bytes || !n->m_snap_seconds)
		return -errno;
	if (!n->m_term || !n->m_commit || !n->m_applied || !n->m_is_leader || !n->m_epoch ||
	    !n->m_leader_changes || !n->m_entries || !n->m_ops || !n->m_snapshots || !n->m_restores ||
	    !n->m_apply_us || !n->m_batch_ops)
		return -errno;

	/* PG health: meaningful on the leader only (a follower shows 0). Every
	 * state is registered up front, so each one renders, 0 included. */
	for (int s = 0; s < META_PG__COUNT; s++) {
		n->m_pg_state[s] = metrics_gauge_new(
			g, "iolake_pg_state", "PGs in each state (leader's view; 0 on followers).",
			METRICS_LABELS("member", id, "state", meta_pgstate_name((enum meta_pg_state)s)));
		if (!n->m_pg_state[s])
			return -errno;
	}
	for (int r = 0; r < NODE_FLAG_REASONS; r++) {
		n->m_pg_flags[r] = metrics_counter_new(
			g, "iolake_pg_flags_total", "PGs flagged for a rescan by FlagPgs, by reason.",
			METRICS_LABELS("member", id, "reason", node_flag_reasons[r]));
		if (!n->m_pg_flags[r])
			return -errno;
	}
	n->m_rec_bytes = metrics_gauge_new(g, "iolake_recovery_bytes_missing",
					   "Shard bytes still to rebuild (valid PG reports).", l);
	n->m_rec_stripes = metrics_gauge_new(g, "iolake_recovery_stripes_missing",
					     "Stripes still lacking a rebuildable shard.", l);
	n->m_rec_rate = metrics_gauge_new(g, "iolake_recovery_rate_bytes_per_second",
					  "Sum of the PGs' recent rebuild rates.", l);
	n->m_rec_eta = metrics_gauge_new(g, "iolake_recovery_eta_seconds",
					 "bytes missing / rate; 0 when done or no rate.", l);
	n->m_unfound = metrics_gauge_new(g, "iolake_pg_unfound_stripes",
					 "Stripes with fewer than k shards (not rebuildable).", l);
	n->m_pg_reports = metrics_counter_new(g, "iolake_pg_reports_total",
					      "PgReports received by this member as leader.", l);
	n->m_pg_reports_bad = metrics_counter_new(g, "iolake_pg_reports_rejected_total",
						  "PgReports or flags naming no PG of the map.", l);
	if (!n->m_rec_bytes || !n->m_rec_stripes || !n->m_rec_rate || !n->m_rec_eta ||
	    !n->m_unfound || !n->m_pg_reports || !n->m_pg_reports_bad)
		return -errno;

	/* Reads: a GET-only load shows rounds, no barriers, no new entries. */
	n->m_read_barriers = metrics_counter_new(
		g, "iolake_meta_read_barriers_total",
		"Raft barriers appended for reads (the first reads of a leader's term).", l);
	n->m_read_rounds = metrics_counter_new(g, "iolake_meta_read_rounds_total",
					       "ReadIndex rounds (no log write) for reads.", l);
	n->m_read_rounds_failed = metrics_counter_new(
		g, "iolake_meta_read_rounds_failed_total",
		"ReadIndex rounds a majority did not confirm (reads retried).", l);
	n->m_last_index = metrics_gauge_new(g, "iolake_meta_raft_last_index",
					    "Index of the last entry in the Raft log.", l);
	if (!n->m_read_barriers || !n->m_read_rounds || !n->m_read_rounds_failed ||
	    !n->m_last_index)
		return -errno;
	return 0;
}

int meta_node_start(uv_loop_t *loop, const struct meta_node_opts *opts, struct meta_node **out)
{
	int rc;
	const struct meta_peer *self = NULL;
	for (size_t i = 0; i < opts->n_peers; i++)
		if (opts->peers[i].id == opts->id)
			self = &opts->peers[i];
	if (!opts->id || !opts->data_dir || !opts->listen || !self || opts->n_peers > META_NODE_MAX_PEERS)
		return -EINVAL;
	if (strcmp(self->addr, opts->listen) != 0) {
		LOG_ERROR("this member's address in the peers differs from listen", "peer=%s listen=%s",
			  self->addr, opts->listen);
		return -EINVAL;
	}
	struct meta_node *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->loop = loop;
	n->o = *opts;
	if (!n->o.snapshot_threshold)
		n->o.snapshot_threshold = 1024;
	if (!n->o.snapshot_trailing)
		n->o.snapshot_trailing = 128;
	if (!n->o.snapshot_bytes)
		n->o.snapshot_bytes = 64ull << 20;
	if (!n->o.election_timeout_ms)
		n->o.election_timeout_ms = 1000;
	if (!n->o.heartbeat_timeout_ms)
		n->o.heartbeat_timeout_ms = 100;
	if (!n->o.osd_down_after_ms)
		n->o.osd_down_after_ms = 10000;
	if (!n->o.osd_out_after_ms)
		n->o.osd_out_after_ms = 60000;
	if (!n->o.pg_count)
		n->o.pg_count = 256;
	if (!n->o.ec_k) {
		n->o.ec_k = 4;
		n->o.ec_m = 2;
	}
	n->role = RAFT_UNAVAILABLE;
	snprintf(n->rpc_addr, sizeof(n->rpc_addr), "%s", opts->listen);
	if (meta_node_raft_addr(opts->listen, n->raft_addr) ||
	    strlen(opts->data_dir) + 16 > sizeof(n->dir)) {
		free(n);
		return -EINVAL;
	}
	snprintf(n->dir, sizeof(n->dir), "%s", opts->data_dir);
	snprintf(n->snap_dir, sizeof(n->snap_dir), "%s/snap", opts->data_dir);
	n->res = calloc(META_BATCH_MAX_OPS, sizeof(*n->res));
	n->batch_ops = calloc(META_BATCH_MAX_OPS, sizeof(*n->batch_ops));
	if (!n->res || !n->batch_ops) {
		rc = -ENOMEM;
		goto err_free;
	}
	n->metrics = opts->metrics;
	if (!n->metrics) {
		n->metrics = metrics_registry_new();
		n->own_metrics = true;
		if (!n->metrics) {
			rc = -ENOMEM;
			goto err_free;
		}
	}
	rc = meta_pgstate_new(&n->pgs);
	if (rc)
		goto err_free;
	rc = register_metrics(n);
	if (rc)
		goto err_free;

	char path[sizeof(n->dir) + 16];
	snprintf(path, sizeof(path), "%s/state", n->dir);
	struct meta_state_opts so = { .cache_bytes = opts->cache_bytes,
				      .write_buffer_bytes = opts->write_buffer_bytes };
	rc = meta_state_open(path, &so, &n->state);
	if (rc)
		goto err_free;
	n->epoch = node_read_epoch(n);
	n->map_dirty = true;

	/* The RPC server first: a taken port fails here, synchronously. */
	n->srv = rpc_server_new(loop, NULL);
	if (!n->srv) {
		rc = -ENOMEM;
		goto err_state;
	}
	rc = node_service_register(n);
	if (!rc)
		rc = rpc_server_listen(n->srv, opts->listen);
	if (!rc && opts->local_name) {
		char a[96];
		snprintf(a, sizeof(a), "local:%s", opts->local_name);
		rc = rpc_server_listen(n->srv, a);
	}
	if (rc) {
		LOG_ERROR("cannot listen", "addr=%s err=%s", opts->listen, iol_strerror(rc));
		goto err_srv;
	}

	/* canonical/raft 0.15 order: transport, io, raft_init, bootstrap,
	 * start (NOTES-deps). */
	snprintf(path, sizeof(path), "%s/raft", n->dir);
	rc = mkdir_p1(path);
	if (rc)
		goto err_srv;
	rc = raft_uv_tcp_init(&n->transport, loop);
	if (rc) {
		rc = -EIO;
		goto err_srv;
	}
	rc = raft_uv_init(&n->io, loop, path, &n->transport);
	if (rc) {
		LOG_ERROR("raft_uv_init failed", "err=%s", raft_strerror(rc));
		raft_uv_tcp_close(&n->transport);
		rc = -EIO;
		goto err_srv;
	}
	raft_uv_set_snapshot_compression(&n->io, false);
	/* Reach a restarted peer soon (default 1 s, above small election
	 * timeouts: the peer would start pre-votes first). */
	raft_uv_set_connect_retry_delay(&n->io, 200);
	/* Snapshots off the loop need raft_io version 2's async_work. Debian's
	 * 0.15 raft_uv fills async_work but leaves io.version at 1, and
	 * raft_init refuses an async fsm on it: the field is there, so say
	 * so. Without it, the checkpoint would run inside fsm_snapshot. */
	if (n->io.async_work && n->io.version < 2)
		n->io.version = 2;
	n->fsm.version = 3;
	n->fsm.data = n;
	n->fsm.apply = fsm_apply;
	n->fsm.snapshot = fsm_snapshot;
	n->fsm.restore = fsm_restore;
	n->fsm.snapshot_finalize = fsm_snapshot_finalize;
	n->fsm.snapshot_async = n->io.async_work ? fsm_snapshot_async : NULL;
	rc = raft_init(&n->raft, &n->io, &n->fsm, opts->id, n->raft_addr);
	if (rc) {
		LOG_ERROR("raft_init failed", "err=%s msg=%s", raft_strerror(rc), LOG_Q(raft_errmsg(&n->raft)));
		raft_uv_close(&n->io);
		raft_uv_tcp_close(&n->transport);
		rc = -EIO;
		goto err_srv;
	}
	n->raft.data = n;
	raft_set_election_timeout(&n->raft, n->o.election_timeout_ms);
	raft_set_heartbeat_timeout(&n->raft, n->o.heartbeat_timeout_ms);
	raft_set_snapshot_threshold(&n->raft, n->o.snapshot_threshold);
	raft_set_snapshot_trailing(&n->raft, n->o.snapshot_trailing);
	raft_set_pre_vote(&n->raft, true);

	/* Before raft_start: replaying the log on restart applies entries,
	 * and apply kicks the kick timer. */
	uv_timer_init(loop, &n->tick);
	uv_timer_init(loop, &n->kick);
	/* Before anything can fail: meta_node_close closes these and its
	 * close callback finds the member through them. */
	n->tick.data = n->kick.data = n;
	struct raft_configuration conf;
	raft_configuration_init(&conf);
	rc = 0;
	for (size_t i = 0; i < opts->n_peers && !rc; i++) {
		char ra[META_NODE_ADDR_MAX];
		rc = meta_node_raft_addr(opts->peers[i].addr, ra);
		if (!rc)
			rc = raft_configuration_add(&conf, opts->peers[i].id, ra, RAFT_VOTER);
	}
	if (!rc && !opts->join) {
		rc = raft_bootstrap(&n->raft, &conf);
		if (rc == RAFT_CANTBOOTSTRAP)
			rc = 0;   /* restart: the log already holds a configuration */
	}
	raft_configuration_close(&conf);
	if (!rc)
		rc = raft_start(&n->raft);
	if (rc) {
		/* raft_uv says only "I/O error" when its port is taken. */
		LOG_ERROR("raft start failed", "err=%s msg=%s raft_addr=%s why=%s",
			  raft_strerror(rc), LOG_Q(raft_errmsg(&n->raft)), n->raft_addr,
			  LOG_Q(raft_port_problem(loop, n->raft_addr)));
		n->started = true;
		meta_node_close(n, NULL, NULL);
		return -EIO;
	}
	n->started = true;
	uv_timer_start(&n->tick, on_tick, 20, 20);
	LOG_INFO("meta member started", "id=%llu listen=%s raft=%s applied=%llu",
		 (unsigned long long)opts->id, opts->listen, n->raft_addr,
		 (unsigned long long)meta_state_applied_index(n->state));
	*out = n;
	return 0;

err_srv:
	rpc_server_close(n->srv);
err_state:
	meta_state_close(n->state);
err_free:
	node_free(n);
	return rc;
}

void meta_node_close(struct meta_node *n, void (*cb)(void *ud), void *ud)
{
	if (n->closing)
		return;
	n->closing = true;
	n->close_cb = cb;
	n->close_ud = ud;
	n->close_pending = 1;   /* raft */
	if (n->tick.loop) {   /* timers exist once start got that far */
		n->close_pending += 2;
		uv_close((uv_handle_t *)&n->tick, on_handle_closed);
		uv_close((uv_handle_t *)&n->kick, on_handle_closed);
	}
	rpc_server_close(n->srv);
	struct sub *q = n->q_head;
	n->q_head = n->q_tail = NULL;
	fail_subs(n, q, RPC_UNAVAILABLE, "member stopping");
	node_reads_close(n);
	node_wake_watches(n, true);
	node_cancel_changes(n);
	digest_fail_waiters(n);
	if (n->dg_busy)
		n->close_pending++;   /* digest_after */
	raft_close(&n->raft, on_raft_closed);
}

void meta_node_info(struct meta_node *n, struct meta_node_info *out)
{
	memset(out, 0, sizeof(*out));
	out->id = n->o.id;
	out->role = n->closing ? RAFT_UNAVAILABLE : raft_state(&n->raft);
	out->term = n->raft.current_term;
	out->commit_index = n->raft.commit_index;
	out->applied_index = raft_last_applied(&n->raft);
	out->last_index = raft_last_index(&n->raft);
	node_leader_addr(n, &out->leader_id, out->leader_addr);
	out->epoch = n->epoch;
	out->restores = n->restores;
	out->snapshots = n->snaps_taken;
	out->snapshot_fetch_bytes = n->fetch_bytes;
	out->last_install_ms = n->last_install_ms;
	out->entries_proposed = n->entries_proposed;
	out->read_barriers = n->read_barriers;
	out->read_rounds = n->read_rounds;
	out->ops_committed = n->ops_committed;
}

struct meta_state *meta_node_state(struct meta_node *n)
{
	return n->state;
}
