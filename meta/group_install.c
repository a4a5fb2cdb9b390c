/*
 * group_install.c — installing a file snapshot into a group's state
 * (libraft's fsm restore) without holding the member's loop.
 *
 * Owns: the install job (fetch the checkpoint libraft's descriptor names,
 * or a newer one when no member holds it any more; load it into the
 * state) on a thread of its own; the entries libraft applies meanwhile,
 * kept in order and applied once the state is there; finishing, replacing
 * (a second InstallSnapshot) and cancelling (the group closing) a job.
 * Not here: the fetch protocol and checkpoints (meta/snap.c), the FSM
 * callbacks and the digest (group.c), what the root does with a new state
 * (node.c, node_root_restored).
 *
 * Why: libraft 0.15's restore is synchronous. Run inside it, a fetch of
 * hundreds of MB and a RocksDB pass held the loop every group of the
 * member shares for seconds: PINGs and heartbeats went unanswered, peers
 * and gateways declared the member dead, and by the time it was done the
 * leader's log had moved past its trailing entries, so another snapshot
 * followed (issue 15). Now fsm_restore starts a job and returns: libraft
 * goes on taking entries after the snapshot's index, which this file keeps
 * until the state holds the snapshot.
 *
 * Invariants:
 *   - While g->inst is set the loop neither applies to nor reads the
 *     state's applied index "A" (the job's thread writes it): entries are
 *     deferred (copied, in index order), snapshots answer RAFT_BUSY, reads
 *     wait (group_applied stays at the index before the install), Status
 *     answers no digest, and the group proposes nothing.
 *   - Index consistency: libraft records the snapshot at its own index S
 *     (<= the descriptor's "A"); the state gets a checkpoint at "A" >= S
 *     (the named one or a newer one, see snap_newest). Deferred entries
 *     (indexes > S) are applied in order afterwards; apply skips those at
 *     or below the state's "A", as for any checkpoint taken while applies
 *     went on. None is lost, none applied twice.
 *   - Crash safety is libraft's and meta_state_install's: libraft stored
 *     the snapshot and truncated its log before calling restore, deferred
 *     entries are in its log, and a restart with the install unfinished
 *     restores the same descriptor (synchronously, before the loop runs).
 *   - Memory: deferred entries are bounded by INSTALL_DEFER_BYTES; past it
 *     the loop waits for the job (the old behaviour, now the exception).
 *
 * Threads: the job's body (install_run) on its own pthread, reading only
 * its struct; everything else on the member's loop. The loop learns the
 * job ended on its 20 ms tick (group_install_poll).
 */
#include "meta/node_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"

#define INSTALL_DEFER_BYTES (64u << 20)
#define INSTALL_DRAIN_SLICE 256        /* kept entries applied per loop turn */

struct deferred {
	struct deferred *next;
	uint64_t index;
	size_t len;
	uint8_t data[];
};

struct group_install {
	struct meta_group *g;
	pthread_t th;
	bool thread;                  /* th was started and not joined */
	atomic_bool cancel;           /* the loop: stop (closing, or superseded) */
	atomic_bool done;             /* the thread: rc and got are set */
	/* in: copied on the loop */
	struct snap_desc sent;        /* the descriptor libraft restored */
	uint64_t group;
	char snap_dir[GROUP_DIR_MAX + 8];
	struct meta_state *state;
	char addrs[META_NODE_MAX_PEERS + 1][META_NODE_ADDR_MAX];
	size_t n_addrs;
	uint64_t timeout_ms;
	uint32_t chunk_bytes;
	struct metrics_counter *m_fetch;
	atomic_bool *snap_taking;     /* the group's checkpoint in progress */
	uint64_t t0_ms;
	/* out: the thread's, read after done */
	int rc;
	struct snap_desc got;         /* what was installed: sent or a newer one */
	uint64_t fetched, fetch_ms, load_ms;
	/* loop only */
	struct deferred *head, *tail;
	size_t defer_bytes, n_defer;
	uint64_t applied_before;      /* libraft's applied index before the first restore */
	struct snap_desc next;        /* a later restore while this one ran */
	bool has_next;
	bool draining;                /* installed: applying the kept entries, a
	                               * slice per loop turn (group_install_drain) */
};

/* ---------------------------------------------------------- the job */

/* Where to fetch d from: its member first, then every other member of the
 * group's configuration (one that installed d holds it under the same
 * name). Loop. */
static size_t fetch_sources(struct meta_group *g, const struct snap_desc *d,
			    char addrs[][META_NODE_ADDR_MAX], size_t cap)
{
	uint64_t self = g->n->o.id;
	size_t k = 0;
	if (d->member_addr[0] && d->member_id != self)
		snprintf(addrs[k++], META_NODE_ADDR_MAX, "%s", d->member_addr);
	for (unsigned i = 0; i < g->raft.configuration.n && k < cap; i++) {
		const struct raft_server *sv = &g->raft.configuration.servers[i];
		char a[META_NODE_ADDR_MAX];
		if (sv->id == self || sv->id == d->member_id || meta_node_rpc_addr(sv->address, a))
			continue;
		snprintf(addrs[k++], META_NODE_ADDR_MAX, "%s", a);
	}
	return k;
}

static bool cancelled(struct group_install *in)
{
	return atomic_load(&in->cancel);
}

/*
 * The job: from this member's own checkpoint when it holds it whole, else
 * fetched from the sources into <snap>/in-<name>. When no source holds
 * the checkpoint any more (libraft 0.15 delivers an InstallSnapshot it
 * queued while this member was away, naming a checkpoint pruned since),
 * the newest checkpoint a source holds at or above the sent one's "A" is
 * fetched instead, as often as that happens until the deadline: sources
 * keep a checkpoint that is being fetched (a pin renewed by every chunk
 * call, SNAP_PIN_MS), so a fallback rarely needs a second one. Then the
 * load. Any thread; reads only in.
 */
static void install_run(struct group_install *in)
{
	uint64_t t0 = loop_now_ms();
	uint64_t deadline = t0 + (in->timeout_ms ? in->timeout_ms : 300000);
	char local[700];
	const char *src = local;
	struct snap_desc *want = &in->got;
	struct snap_fetch_job *fj = NULL;
	struct snap_newest_job *nj = NULL;
	int rc = snap_desc_copy(want, &in->sent);
	if (rc)
		goto out;
	if (!snap_local_complete(in->snap_dir, want, local, sizeof(local))) {
		fj = calloc(1, sizeof(*fj));
		nj = calloc(1, sizeof(*nj));
		if (!fj || !nj) {
			rc = -ENOMEM;
			goto out;
		}
		for (;;) {
			uint64_t now = loop_now_ms();
			if (now >= deadline) {
				rc = -ETIMEDOUT;
				break;
			}
			memset(fj, 0, sizeof(*fj));
			fj->desc = want;
			fj->group = in->group;
			snprintf(fj->dir, sizeof(fj->dir), "%s", in->snap_dir);
			memcpy(fj->addrs, in->addrs, sizeof(fj->addrs));
			fj->n_addrs = in->n_addrs;
			fj->timeout_ms = deadline - now;
			fj->chunk_bytes = in->chunk_bytes;
			fj->give_up_when_gone = true;
			fj->cancel = &in->cancel;
			fj->m_fetch_bytes = in->m_fetch;
			LOG_INFO("snapshot install: fetching", "group=%llu checkpoint=%s from=%s "
				 "applied=%llu files=%zu bytes=%llu", (unsigned long long)in->group,
				 want->checkpoint, want->member_addr,
				 (unsigned long long)want->applied_index, want->n_files,
				 (unsigned long long)want->bytes);
			rc = snap_fetch(fj);
			in->fetched += fj->fetched_bytes;
			if (rc != -ENOENT)
				break;
			/* Nobody holds it: the newest checkpoint anyone holds. */
			memset(nj, 0, sizeof(*nj));
			nj->group = in->group;
			nj->min_applied = in->sent.applied_index;
			memcpy(nj->addrs, in->addrs, sizeof(nj->addrs));
			nj->n_addrs = in->n_addrs;
			nj->cancel = &in->cancel;
			rc = snap_newest(nj);
			if (rc == -ENOENT && !cancelled(in)) {
				/* None yet at that index (sources mid-checkpoint, or
				 * unreachable): ask again after a pause. */
				usleep(200000);
				continue;
			}
			if (rc)
				break;
			LOG_WARN("snapshot install: no member holds the checkpoint: installing "
				 "a newer one", "group=%llu sent=%s sent_applied=%llu gone=%s "
				 "newer=%s applied=%llu", (unsigned long long)in->group,
				 in->sent.checkpoint, (unsigned long long)in->sent.applied_index,
				 want->checkpoint, nj->out.checkpoint,
				 (unsigned long long)nj->out.applied_index);
			snap_desc_free(want);
			*want = nj->out;   /* moved */
			nj->found = false;
			if (snap_local_complete(in->snap_dir, want, local, sizeof(local))) {
				fj->path[0] = 0;
				break;
			}
		}
		if (rc == 0 && fj->path[0])
			src = fj->path;
	}
	in->fetch_ms = loop_now_ms() - t0;
	/* A checkpoint of this state being taken (started before the
	 * restore) must not capture half an install. */
	while (rc == 0 && atomic_load(in->snap_taking) && !cancelled(in))
		usleep(5000);
	if (rc == 0 && cancelled(in))
		rc = -ECANCELED;
	uint64_t t1 = loop_now_ms();
	if (rc == 0)
		rc = meta_state_install(in->state, src, want->checkpoint, 0);
	if (rc == 0 && src != local)
		snap_adopt(in->snap_dir, want);
	in->load_ms = loop_now_ms() - t1;
out:
	if (nj && nj->found)
		snap_desc_free(&nj->out);
	free(nj);
	free(fj);
	in->rc = rc;
	atomic_store(&in->done, true);
}

static void *install_thread(void *arg)
{
	install_run(arg);
	return NULL;
}

/* ---------------------------------------------------------- the loop */

static void defer_free(struct group_install *in)
{
	struct deferred *d = in->head;
	while (d) {
		struct deferred *next = d->next;
		free(d);
		d = next;
	}
	in->head = in->tail = NULL;
	in->defer_bytes = in->n_defer = 0;
}

static void job_free(struct group_install *in)
{
	defer_free(in);
	snap_desc_free(&in->sent);
	snap_desc_free(&in->got);
	if (in->has_next)
		snap_desc_free(&in->next);
	free(in);
}

static void job_join(struct group_install *in)
{
	if (in->thread)
		pthread_join(in->th, NULL);
	in->thread = false;
}

/* A job for d (moved into it on success), its inputs copied from g. */
static struct group_install *job_new(struct meta_group *g, struct snap_desc *d)
{
	struct group_install *in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	in->g = g;
	in->sent = *d;   /* moved */
	memset(d, 0, sizeof(*d));
	in->group = g->id;
	snprintf(in->snap_dir, sizeof(in->snap_dir), "%s", g->snap_dir);
	in->state = g->state;
	in->n_addrs = fetch_sources(g, &in->sent, in->addrs, META_NODE_MAX_PEERS + 1);
	in->timeout_ms = g->n->o.snapshot_fetch_timeout_ms;
	in->chunk_bytes = g->n->o.snapshot_fetch_chunk_bytes;
	in->m_fetch = g->m.fetch_bytes;
	in->snap_taking = &g->snap_taking;
	in->t0_ms = loop_now_ms();
	atomic_init(&in->cancel, false);
	atomic_init(&in->done, false);
	return in;
}

static int job_start(struct group_install *in)
{
	int rc = pthread_create(&in->th, NULL, install_thread, in);
	if (rc)
		return -rc;
	in->thread = true;
	return 0;
}

/* The job ended (joined): take its result. 0, or its error. */
static int job_result(struct meta_group *g, struct group_install *in)
{
	g->fetch_bytes += in->fetched;
	g->last_install_ms = loop_now_ms() - in->t0_ms;
	LOG_INFO("snapshot install", "group=%llu checkpoint=%s applied=%llu fetched=%llu "
		 "fetch_ms=%llu load_ms=%llu deferred=%zu err=%s", (unsigned long long)g->id,
		 in->got.checkpoint[0] ? in->got.checkpoint : in->sent.checkpoint,
		 (unsigned long long)in->got.applied_index, (unsigned long long)in->fetched,
		 (unsigned long long)in->fetch_ms, (unsigned long long)in->load_ms, in->n_defer,
		 in->rc ? iol_strerror(in->rc) : "none");
	if (in->rc)
		return in->rc;
	snap_desc_free(&g->snap_last);
	if (snap_desc_copy(&g->snap_last, &in->got))
		g->snap_last.applied_index = 0;   /* not reusable; a new one is taken */
	g->restores++;
	m_inc(g->m.restores);
	g->snap_bytes_since = 0;
	return 0;
}

/* Loop: up to `slice` kept entries, in order; the job ends with the last
 * (reads and proposals resume). New entries keep queueing behind them
 * until then, so the order holds. */
static void drain(struct meta_group *g, size_t slice)
{
	struct group_install *in = g->inst;
	for (size_t k = 0; in->head && k < slice; k++) {
		struct deferred *d = in->head;
		in->head = d->next;
		if (!in->head)
			in->tail = NULL;
		in->defer_bytes -= d->len;
		in->n_defer--;
		group_apply_entry(g, d->index, d->data, d->len);
		free(d);
	}
	if (!in->head) {
		g->inst = NULL;
		job_free(in);
	}
	group_kick(g);   /* the next slice, or the reads and proposals that waited */
}

void group_install_drain(struct meta_group *g)
{
	if (g->inst && g->inst->draining)
		drain(g, INSTALL_DRAIN_SLICE);
}

/* Loop: the state holds the snapshot; apply what libraft handed over
 * meanwhile, in order, a slice per loop turn (thousands of entries at
 * once would hold the loop again). */
static void job_applied(struct meta_group *g, struct group_install *in)
{
	in->draining = true;
	/* At start the root is not the member's yet: meta_node_start reads
	 * the epoch and the table after it opened. */
	if (g->id == 0 && g->n->root == g)
		node_root_restored(g->n);
	drain(g, INSTALL_DRAIN_SLICE);
}

/* Loop: the joined job g->inst ended; start the one that replaced it, or
 * finish. A failed install of a running member stops it, as a failed
 * synchronous restore did (libraft has already replaced its log: the
 * next start restores the same descriptor and resumes). */
static void job_finish(struct meta_group *g)
{
	struct group_install *in = g->inst;
	if (in->has_next) {
		struct group_install *nx = job_new(g, &in->next);
		in->has_next = false;
		if (nx) {
			nx->applied_before = in->applied_before;
			nx->head = in->head;   /* entries after the newer snapshot */
			nx->tail = in->tail;
			nx->defer_bytes = in->defer_bytes;
			nx->n_defer = in->n_defer;
			in->head = in->tail = NULL;
			in->defer_bytes = in->n_defer = 0;
			job_free(in);
			g->inst = nx;
			if (job_start(nx) == 0)
				return;
			install_run(nx);   /* no thread: here, holding the loop */
			job_finish(g);
			return;
		}
		in->rc = -ENOMEM;
	}
	int rc = job_result(g, in);
	if (rc) {
		LOG_ERROR("snapshot install failed", "group=%llu checkpoint=%s from=%s err=%s",
			  (unsigned long long)g->id, in->sent.checkpoint, in->sent.member_addr,
			  iol_strerror(rc));
		abort();
	}
	job_applied(g, in);
}

int group_install(struct meta_group *g, struct snap_desc *d)
{
	if (g == g->n->root)
		node_direct_withdraw(g->n);   /* before the state moves back */
	uint64_t before = raft_last_applied(&g->raft);
	if (g->inst && g->inst->draining) {
		/* Installed, still applying kept entries: the new snapshot
		 * covers them (libraft replaced its log again). Reads keep
		 * waiting from where this job started: the entries dropped
		 * here count in libraft's index, not in the state. */
		struct group_install *old = g->inst;
		before = old->applied_before;
		g->inst = NULL;
		job_free(old);
	}
	if (g->inst) {
		/* Another InstallSnapshot while one runs: libraft replaced its
		 * log again, and the entries kept so far are older than it. The
		 * running job is told to stop; the newer one starts when it has. */
		struct group_install *in = g->inst;
		LOG_WARN("snapshot restore: a newer snapshot while installing one",
			 "group=%llu running=%s newer=%s", (unsigned long long)g->id,
			 in->sent.checkpoint, d->checkpoint);
		if (in->has_next)
			snap_desc_free(&in->next);
		in->next = *d;   /* moved */
		memset(d, 0, sizeof(*d));
		in->has_next = true;
		defer_free(in);
		atomic_store(&in->cancel, true);
		return 0;
	}
	struct group_install *in = job_new(g, d);
	if (!in)
		return -ENOMEM;
	in->applied_before = before;
	g->inst = in;
	if (g->started && job_start(in) == 0)
		return 0;
	/* At start (the loop is not running yet), or without a thread. */
	install_run(in);
	in->thread = false;
	int rc = job_result(g, in);
	if (rc) {
		g->inst = NULL;
		job_free(in);
		return rc;
	}
	job_applied(g, in);
	return 0;
}

bool group_install_defer(struct meta_group *g, uint64_t index, const void *base, size_t len)
{
	struct group_install *in = g->inst;
	struct deferred *d = NULL;
	if (in->defer_bytes + len <= INSTALL_DEFER_BYTES)
		d = malloc(sizeof(*d) + len);
	if (!d) {
		/* Past the bound (or no memory): wait for the job here, then
		 * the caller applies this entry. */
		LOG_WARN("snapshot install: entries kept past the bound: waiting for it",
			 "group=%llu deferred=%zu bytes=%zu", (unsigned long long)g->id, in->n_defer,
			 in->defer_bytes);
		while (g->inst) {
			if (g->inst->draining) {
				drain(g, SIZE_MAX);
				continue;
			}
			job_join(g->inst);
			job_finish(g);
		}
		return false;
	}
	d->next = NULL;
	d->index = index;
	d->len = len;
	memcpy(d->data, base, len);
	if (in->tail)
		in->tail->next = d;
	else
		in->head = d;
	in->tail = d;
	in->defer_bytes += len;
	in->n_defer++;
	return true;
}

void group_install_poll(struct meta_group *g)
{
	if (!g->inst || g->closing || g->inst->draining || !atomic_load(&g->inst->done))
		return;
	job_join(g->inst);
	job_finish(g);
}

void group_install_stop(struct meta_group *g)
{
	struct group_install *in = g->inst;
	if (!in)
		return;
	/* The fetch ends within SNAP_CANCEL_POLL_MS; a load already running
	 * ends its pass (the marker it left redoes it at the next start). */
	atomic_store(&in->cancel, true);
	uint64_t t0 = loop_now_ms();
	job_join(in);
	LOG_INFO("snapshot install stopped: closing", "group=%llu checkpoint=%s waited_ms=%llu",
		 (unsigned long long)g->id, in->sent.checkpoint,
		 (unsigned long long)(loop_now_ms() - t0));
	g->inst = NULL;
	job_free(in);
}

uint64_t group_applied(struct meta_group *g)
{
	return g->inst ? g->inst->applied_before : raft_last_applied(&g->raft);
}

uint64_t group_state_applied(struct meta_group *g)
{
	return g->inst ? g->inst->applied_before : meta_state_applied_index(g->state);
}
