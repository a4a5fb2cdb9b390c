/*
 * test_raft_mux.c — meta/raft_mux.h: many Raft groups over one TCP port
 * per member. Real libraft (raft_uv over the mux's transports) over
 * loopback, each member on its own loop_thread, data under /dev/shm.
 * Groups run a counting FSM: each entry is a sequence number; a member's
 * state is (entries applied, an order-sensitive hash, which numbers it
 * saw). The oracle for "committed on all members": every acknowledged
 * number seen by each of them, and their (count, hash) equal.
 *
 *   codec        the preamble codec alone: round trips (group 0 and
 *                UINT64_MAX), every prefix of a preamble needs more and
 *                asks for exactly the header, then the whole; bytes after
 *                it are left alone; each error as soon as its bytes show
 *                it (a raft_uv_tcp handshake is bad magic at its first
 *                byte); encode's limits
 *   multi_group  3 members, one mux each (port 0, read back), 8 groups
 *                (ids include 0 and UINT64_MAX): every group elects and
 *                commits 20 entries on all 3; raft_transfer moves each
 *                group's leadership to member (slot % 3), so every member
 *                leads some groups; a 9th group added at runtime on all 3
 *                elects and commits; member 3's mux closes (it waits for
 *                its groups, which then close) and the other two commit
 *                20 more in every group; member 3 reopens on the same
 *                port and dirs and catches up in every group
 *   multi_group_tls  the same with every mux under mutual TLS (the relay
 *                of meta/raft_tls.c): handshakes on both sides, no
 *                refusal
 *   garbage      on a running 3-member, 2-group cluster, raw clients to
 *                member 1's port: HTTP bytes and a raft_uv_tcp handshake
 *                (bad magic), bad protocol, server id 0, an address length
 *                of 4096, an unknown group, a group registered but not
 *                started, a truncated preamble then silence (timeout 300
 *                ms), a connect-and-close, and 80 silent clients at once
 *                (more than the 64 handshake slots: the rest wait in the
 *                backlog, then time out too). Each is closed by the
 *                member and counted under its reason, exactly; the
 *                groups then commit 20 more entries on all members. A
 *                second mux on the same port fails with -EADDRINUSE; a
 *                second transport for a group id with -EEXIST.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <raft.h>
#include <raft/uv.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "admin/ca.h"
#include "common/rpc_authz.h"
#include "common/rpc_tls.h"
#include "meta/raft_mux.h"
#include "meta_test_util.h"
#include "tests/lib/scratch.h"

#define NMEMB 3
#define GMAX 10
#define SEQ_MAX 128            /* sequence numbers 1..SEQ_MAX-1 per group */
#define ELECTION_MS 500
#define HEARTBEAT_MS 50
#define WAIT_MS 15000          /* deadline of any one condition */

/* ------------------------------------------------------------ codec */

static size_t put_le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return 8;
}

/* A preamble with chosen fields (alen 0: the right padded length). */
static size_t craft(uint8_t *b, const char *magic, uint64_t group, uint64_t proto, uint64_t sid,
		    uint64_t alen, const char *addr)
{
	size_t n = strlen(addr) + 1, pad = (n + 7) & ~(size_t)7;
	memcpy(b, magic, 8);
	put_le(b + 8, group);
	put_le(b + 16, proto);
	put_le(b + 24, sid);
	put_le(b + 32, alen ? alen : pad);
	memset(b + 40, 0, pad);
	memcpy(b + 40, addr, n);
	return 40 + pad;
}

START_TEST(codec)
{
	uint8_t b[RAFT_MUX_PREAMBLE_MAX + 64];
	struct raft_mux_preamble p;
	const uint64_t groups[] = { 0, 1, UINT64_MAX };
	for (size_t k = 0; k < 3; k++) {
		int n = raft_mux_preamble_encode(b, sizeof(b), groups[k], 7, "127.0.0.1:7001");
		ck_assert_int_eq(n, 40 + 16);
		for (int len = 0; len < n; len++)
			ck_assert_int_eq(raft_mux_preamble_decode(b, (size_t)len, &p), len < 40 ? 40 : n);
		memset(b + n, 0xee, 24);   /* libraft's first message right behind */
		ck_assert_int_eq(raft_mux_preamble_decode(b, (size_t)n + 24, &p), 0);
		ck_assert_uint_eq(p.len, (size_t)n);
		ck_assert_uint_eq(p.group, groups[k]);
		ck_assert_uint_eq(p.server_id, 7);
		ck_assert_str_eq(p.address, "127.0.0.1:7001");
	}
	/* Errors, each as soon as its bytes have arrived. */
	ck_assert_int_eq(raft_mux_preamble_decode((const uint8_t *)"GET /", 5, &p), -EBADMSG);
	size_t n = craft(b, "IOLRMUX1", 5, 1, 2, 0, "127.0.0.1:1");
	b[0] = 1;   /* raft_uv_tcp starts with its protocol, 1, little-endian */
	ck_assert_int_eq(raft_mux_preamble_decode(b, 1, &p), -EBADMSG);
	n = craft(b, "IOLRMUX1", 5, 2, 2, 0, "127.0.0.1:1");
	ck_assert_int_eq(raft_mux_preamble_decode(b, 23, &p), 40);
	ck_assert_int_eq(raft_mux_preamble_decode(b, 24, &p), -EPROTONOSUPPORT);
	n = craft(b, "IOLRMUX1", 5, 1, 0, 0, "127.0.0.1:1");
	ck_assert_int_eq(raft_mux_preamble_decode(b, 32, &p), -EINVAL);
	n = craft(b, "IOLRMUX1", 5, 1, 2, 4096, "127.0.0.1:1");
	ck_assert_int_eq(raft_mux_preamble_decode(b, 40, &p), -EMSGSIZE);
	n = craft(b, "IOLRMUX1", 5, 1, 2, 12, "127.0.0.1:1");
	ck_assert_int_eq(raft_mux_preamble_decode(b, n, &p), -EMSGSIZE);   /* not padded to 8 */
	n = craft(b, "IOLRMUX1", 5, 1, 2, 0, "127.0.0.1:1");
	b[40] = 0;   /* empty */
	ck_assert_int_eq(raft_mux_preamble_decode(b, 41, &p), -EILSEQ);
	n = craft(b, "IOLRMUX1", 5, 1, 2, 0, "127.0.0.1:1");
	b[42] = '\n';
	ck_assert_int_eq(raft_mux_preamble_decode(b, 43, &p), -EILSEQ);
	n = craft(b, "IOLRMUX1", 5, 1, 2, 8, "1234567");
	b[47] = '8';   /* no NUL within its length */
	ck_assert_int_eq(raft_mux_preamble_decode(b, 47, &p), 48);
	ck_assert_int_eq(raft_mux_preamble_decode(b, 48, &p), -EILSEQ);
	(void)n;
	/* Encode's limits: 255 characters fit (256 with the NUL), 256 not. */
	char addr[RAFT_MUX_ADDR_MAX + 1];
	memset(addr, 'a', sizeof(addr));
	addr[RAFT_MUX_ADDR_MAX - 1] = 0;
	ck_assert_int_eq(raft_mux_preamble_encode(b, sizeof(b), 1, 1, addr), RAFT_MUX_PREAMBLE_MAX);
	ck_assert_int_eq(raft_mux_preamble_decode(b, RAFT_MUX_PREAMBLE_MAX, &p), 0);
	ck_assert_str_eq(p.address, addr);
	addr[RAFT_MUX_ADDR_MAX - 1] = 'a';
	addr[RAFT_MUX_ADDR_MAX] = 0;
	ck_assert_int_eq(raft_mux_preamble_encode(b, sizeof(b), 1, 1, addr), -ENAMETOOLONG);
	ck_assert_int_eq(raft_mux_preamble_encode(b, sizeof(b), 1, 0, "h:1"), -EINVAL);
	ck_assert_int_eq(raft_mux_preamble_encode(b, sizeof(b), 1, 1, ""), -EINVAL);
	ck_assert_int_eq(raft_mux_preamble_encode(b, sizeof(b), 1, 1, "a b:1"), -EINVAL);
	ck_assert_int_eq(raft_mux_preamble_encode(b, 47, 1, 1, "h:1"), -ENOSPC);
	ck_assert_str_eq(raft_mux_refusal_name(RAFT_MUX_R_UNKNOWN_GROUP), "unknown_group");
	ck_assert_str_eq(raft_mux_refusal_name(RAFT_MUX_R_COUNT), "?");
}
END_TEST

/* ------------------------------------------------------------ cluster */

struct member;

struct tgroup {
	struct member *mb;
	size_t slot;                  /* index in cluster.gids */
	struct raft raft;
	struct raft_io io;
	struct raft_uv_transport t;
	struct raft_fsm fsm;
	char dir[96];
	bool running;                 /* the test thread's view */
	atomic_bool closed;
	int rc;
	/* FSM, on the member's loop */
	uint64_t count, hash;
	uint8_t seen[SEQ_MAX];
};

struct member {
	struct loop_thread lt;
	struct cluster *c;
	raft_id id;
	struct raft_mux *mux;
	char addr[32];                /* the mux's (and every group's) Raft address */
	char dir[64];
	bool up;                      /* loop thread and mux open */
	atomic_bool mux_closed;
	int rc;
	struct tgroup g[GMAX];
};

enum { ACK_NONE, ACK_PROPOSED, ACK_DONE, ACK_FAILED };

struct cluster {
	struct member m[NMEMB];
	uint64_t gids[GMAX];
	size_t n_groups;
	atomic_uchar ack[GMAX][SEQ_MAX];
};

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct tgroup *g = fsm->data;
	uint64_t seq;
	*result = NULL;
	if (buf->len != 8)
		abort();   /* only this test writes entries */
	memcpy(&seq, buf->base, 8);
	g->count++;
	g->hash = (g->hash ^ seq) * 1099511628211ULL;
	if (seq < SEQ_MAX)
		g->seen[seq] = 1;
	return 0;
}

/* Never taken (the threshold is far above what is written); valid anyway. */
static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct tgroup *g = fsm->data;
	*bufs = raft_malloc(sizeof(**bufs));
	(*bufs)[0].len = 16 + SEQ_MAX;
	(*bufs)[0].base = raft_malloc((*bufs)[0].len);
	memcpy((*bufs)[0].base, &g->count, 8);
	memcpy((uint8_t *)(*bufs)[0].base + 8, &g->hash, 8);
	memcpy((uint8_t *)(*bufs)[0].base + 16, g->seen, SEQ_MAX);
	*n = 1;
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct tgroup *g = fsm->data;
	memcpy(&g->count, buf->base, 8);
	memcpy(&g->hash, (uint8_t *)buf->base + 8, 8);
	memcpy(g->seen, (uint8_t *)buf->base + 16, SEQ_MAX);
	raft_free(buf->base);
	return 0;
}

static void mux_open_fn(void *arg)
{
	struct member *mb = arg;
	const char *want = mb->addr[0] ? mb->addr : "127.0.0.1:0";
	mb->rc = raft_mux_init(&mb->mux, &mb->lt.loop, want);
	if (!mb->rc)
		snprintf(mb->addr, sizeof(mb->addr), "%s", raft_mux_address(mb->mux));
}

/* Start the member's loop and mux: on a free port the first time, on the
 * same one after. */
static void member_open(struct member *mb)
{
	ck_assert_int_eq(loop_thread_start(&mb->lt, "mux-member"), 0);
	atomic_store(&mb->mux_closed, false);
	ck_assert_int_eq(loop_thread_call(&mb->lt, mux_open_fn, mb), 0);
	ck_assert_int_eq(mb->rc, 0);
	mb->up = true;
}

static void group_start_fn(void *arg)
{
	struct tgroup *g = arg;
	struct member *mb = g->mb;
	struct cluster *c = mb->c;
	g->rc = mkdir(g->dir, 0700) && errno != EEXIST ? -errno : 0;
	if (g->rc)
		return;
	g->count = g->hash = 0;   /* raft replays the whole log on a restart */
	memset(g->seen, 0, sizeof(g->seen));
	int rc = raft_mux_transport_init(mb->mux, &g->t, c->gids[g->slot]);
	if (rc) {
		g->rc = rc;
		return;
	}
	rc = raft_uv_init(&g->io, &mb->lt.loop, g->dir, &g->t);
	if (rc) {
		raft_mux_transport_close(&g->t);
		g->rc = -1000 - rc;
		return;
	}
	raft_uv_set_segment_size(&g->io, 256 << 10);   /* 27 groups' preallocated segments in RAM */
	raft_uv_set_connect_retry_delay(&g->io, 100);
	g->fsm = (struct raft_fsm){ .version = 1, .data = g, .apply = fsm_apply,
				    .snapshot = fsm_snapshot, .restore = fsm_restore };
	rc = raft_init(&g->raft, &g->io, &g->fsm, mb->id, mb->addr);
	if (rc) {
		raft_uv_close(&g->io);
		raft_mux_transport_close(&g->t);
		g->rc = -2000 - rc;
		return;
	}
	g->raft.data = g;
	raft_set_election_timeout(&g->raft, ELECTION_MS);
	raft_set_heartbeat_timeout(&g->raft, HEARTBEAT_MS);
	raft_set_snapshot_threshold(&g->raft, 1u << 20);
	raft_set_pre_vote(&g->raft, true);
	struct raft_configuration conf;
	raft_configuration_init(&conf);
	for (size_t k = 0; k < NMEMB && !rc; k++)
		rc = raft_configuration_add(&conf, c->m[k].id, c->m[k].addr, RAFT_VOTER);
	if (!rc) {
		rc = raft_bootstrap(&g->raft, &conf);
		if (rc == RAFT_CANTBOOTSTRAP)
			rc = 0;   /* a restart */
	}
	raft_configuration_close(&conf);
	if (!rc)
		rc = raft_start(&g->raft);
	g->rc = rc ? -3000 - rc : 0;   /* failing here fails the test: no cleanup */
}

static void group_start(struct member *mb, size_t slot)
{
	struct tgroup *g = &mb->g[slot];
	g->mb = mb;
	g->slot = slot;
	snprintf(g->dir, sizeof(g->dir), "%s/g%zu", mb->dir, slot);
	atomic_store(&g->closed, false);
	ck_assert_int_eq(loop_thread_call(&mb->lt, group_start_fn, g), 0);
	ck_assert_msg(g->rc == 0, "member %llu group slot %zu: start rc %d", mb->id, slot, g->rc);
	g->running = true;
}

static void on_group_closed(struct raft *r)
{
	struct tgroup *g = r->data;
	raft_uv_close(&g->io);
	raft_mux_transport_close(&g->t);
	atomic_store(&g->closed, true);
}

static void group_close_fn(void *arg)
{
	struct tgroup *g = arg;
	raft_close(&g->raft, on_group_closed);
}

static void on_mux_closed(void *ud)
{
	struct member *mb = ud;
	atomic_store(&mb->mux_closed, true);
}

static void mux_close_fn(void *arg)
{
	struct member *mb = arg;
	raft_mux_close(mb->mux, on_mux_closed, mb);
}

static void nop_fn(void *arg)
{
	(void)arg;
}

static bool wait_flag(atomic_bool *f)
{
	for (int t = 0; t < WAIT_MS && !atomic_load(f); t += 5)
		usleep(5000);
	return atomic_load(f);
}

/* Close the member's mux first (its port goes away; it waits for the
 * groups), then every group; then stop its loop. */
static void member_close(struct member *mb)
{
	if (!mb->up)
		return;
	ck_assert_int_eq(loop_thread_call(&mb->lt, mux_close_fn, mb), 0);
	ck_assert_int_eq(loop_thread_call(&mb->lt, nop_fn, NULL), 0);   /* a loop turn later */
	bool any = false;
	for (size_t s = 0; s < GMAX; s++)
		any |= mb->g[s].running;
	if (any)
		ck_assert_msg(!atomic_load(&mb->mux_closed), "mux freed while groups still use it");
	for (size_t s = 0; s < GMAX; s++) {
		struct tgroup *g = &mb->g[s];
		if (!g->running)
			continue;
		ck_assert_int_eq(loop_thread_call(&mb->lt, group_close_fn, g), 0);
		ck_assert(wait_flag(&g->closed));
		g->running = false;
	}
	ck_assert(wait_flag(&mb->mux_closed));
	loop_thread_stop(&mb->lt);
	mb->mux = NULL;
	mb->up = false;
}

static void cluster_init(struct cluster *c, size_t n_groups, const uint64_t *gids)
{
	memset(c, 0, sizeof(*c));
	c->n_groups = n_groups;
	memcpy(c->gids, gids, n_groups * sizeof(*gids));
	for (size_t i = 0; i < NMEMB; i++) {
		struct member *mb = &c->m[i];
		mb->c = c;
		mb->id = i + 1;
		tmpdir(mb->dir);
		member_open(mb);
	}
	for (size_t i = 0; i < NMEMB; i++)
		for (size_t s = 0; s < n_groups; s++)
			group_start(&c->m[i], s);
}

static void cluster_free(struct cluster *c)
{
	for (size_t i = 0; i < NMEMB; i++) {
		member_close(&c->m[i]);
		rm_rf(c->m[i].dir);
	}
}

/* ------------------------------------------------------------ views */

struct gview {
	int state;
	raft_id leader;
	uint64_t count, hash;
	uint8_t seen[SEQ_MAX];
};

struct view_call {
	struct member *mb;
	struct gview v[GMAX];
	struct raft_mux_stats stats;
};

static void view_fn(void *arg)
{
	struct view_call *q = arg;
	struct member *mb = q->mb;
	for (size_t s = 0; s < mb->c->n_groups; s++) {
		struct tgroup *g = &mb->g[s];
		struct gview *v = &q->v[s];
		if (!g->running) {
			v->state = -1;
			continue;
		}
		const char *addr;
		v->state = raft_state(&g->raft);
		raft_leader(&g->raft, &v->leader, &addr);
		v->count = g->count;
		v->hash = g->hash;
		memcpy(v->seen, g->seen, SEQ_MAX);
	}
	raft_mux_get_stats(mb->mux, &q->stats);
}

static void view(struct member *mb, struct view_call *q)
{
	q->mb = mb;
	ck_assert_int_eq(loop_thread_call(&mb->lt, view_fn, q), 0);
}

/* The member that is leader of slot in its own eyes (of those up), or -1. */
static int leader_of(struct cluster *c, size_t slot)
{
	int leader = -1;
	for (size_t i = 0; i < NMEMB; i++) {
		if (!c->m[i].up || !c->m[i].g[slot].running)
			continue;
		struct view_call q;
		view(&c->m[i], &q);
		if (q.v[slot].state == RAFT_LEADER)
			leader = (int)i;
	}
	return leader;
}

/* ------------------------------------------------------------ writes */

struct prop {
	struct raft_apply req;
	struct cluster *c;
	size_t slot;
	uint64_t seq;
};

static void on_applied(struct raft_apply *req, int status, void *result)
{
	struct prop *p = (struct prop *)req;
	(void)result;
	atomic_store(&p->c->ack[p->slot][p->seq], status ? ACK_FAILED : ACK_DONE);
	free(p);
}

struct propose_call {
	struct tgroup *g;
	uint64_t from, to;
};

static void propose_fn(void *arg)
{
	struct propose_call *q = arg;
	struct tgroup *g = q->g;
	struct cluster *c = g->mb->c;
	if (raft_state(&g->raft) != RAFT_LEADER)
		return;
	for (uint64_t seq = q->from; seq <= q->to; seq++) {
		atomic_uchar *a = &c->ack[g->slot][seq];
		if (atomic_load(a) != ACK_NONE)
			continue;
		struct prop *p = calloc(1, sizeof(*p));
		p->c = c;
		p->slot = g->slot;
		p->seq = seq;
		/* raft_apply takes the buffer's memory, not the array. */
		struct raft_buffer buf = { .base = raft_malloc(8), .len = 8 };
		memcpy(buf.base, &seq, 8);
		atomic_store(a, ACK_PROPOSED);
		if (raft_apply(&g->raft, &p->req, &buf, 1, on_applied)) {
			raft_free(buf.base);
			atomic_store(a, ACK_NONE);
			free(p);
			return;
		}
	}
}

/* Propose from..to in slot through whoever leads it until every one is
 * acknowledged (a failed proposal is proposed again: it may then apply
 * twice, which the oracle allows). */
static void commit(struct cluster *c, size_t slot, uint64_t from, uint64_t to)
{
	ck_assert_uint_lt(to, SEQ_MAX);
	for (int t = 0; t < WAIT_MS; t += 20) {
		bool all = true;
		for (uint64_t s = from; s <= to; s++) {
			unsigned char a = atomic_load(&c->ack[slot][s]);
			if (a == ACK_FAILED)
				atomic_store(&c->ack[slot][s], ACK_NONE);
			all &= a == ACK_DONE;
		}
		if (all)
			return;
		int l = leader_of(c, slot);
		if (l >= 0) {
			struct propose_call q = { .g = &c->m[l].g[slot], .from = from, .to = to };
			ck_assert_int_eq(loop_thread_call(&c->m[l].lt, propose_fn, &q), 0);
		}
		usleep(20000);
	}
	ck_abort_msg("group %llu: entries %llu..%llu not all committed",
		     (unsigned long long)c->gids[slot], (unsigned long long)from, (unsigned long long)to);
}

/* Wait until every member up has seen 1..to in slot and all agree on
 * (count, hash). */
static void wait_converged(struct cluster *c, size_t slot, uint64_t to)
{
	struct gview last[NMEMB];
	for (int t = 0; t < WAIT_MS; t += 20) {
		bool ok = true;
		int first = -1;
		for (size_t i = 0; i < NMEMB; i++) {
			if (!c->m[i].up)
				continue;
			struct view_call q;
			view(&c->m[i], &q);
			last[i] = q.v[slot];
			for (uint64_t s = 1; s <= to; s++)
				ok &= last[i].seen[s] == 1;
			if (first < 0)
				first = (int)i;
			else
				ok &= last[i].count == last[first].count && last[i].hash == last[first].hash;
		}
		if (ok)
			return;
		usleep(20000);
	}
	for (size_t i = 0; i < NMEMB; i++)
		if (c->m[i].up)
			printf("  member %zu group %llu: count %llu hash %016llx\n", i + 1,
			       (unsigned long long)c->gids[slot], (unsigned long long)last[i].count,
			       (unsigned long long)last[i].hash);
	ck_abort_msg("group %llu: members did not converge on 1..%llu",
		     (unsigned long long)c->gids[slot], (unsigned long long)to);
}

static void commit_all(struct cluster *c, uint64_t from, uint64_t to)
{
	for (size_t s = 0; s < c->n_groups; s++)
		commit(c, s, from, to);
	for (size_t s = 0; s < c->n_groups; s++)
		wait_converged(c, s, to);
}

/* ------------------------------------------------------------ leadership */

struct xfer {
	struct raft_transfer req;
};

static void on_transferred(struct raft_transfer *req)
{
	free(req);
}

struct transfer_call {
	struct tgroup *g;
	raft_id to;
};

static void transfer_fn(void *arg)
{
	struct transfer_call *q = arg;
	struct raft_transfer *req = calloc(1, sizeof(*req));
	if (raft_transfer(&q->g->raft, req, q->to, on_transferred))
		free(req);   /* not leader any more, or a transfer under way: try again */
}

/* Make member want lead slot (raft_transfer from the current leader). */
static void move_leader(struct cluster *c, size_t slot, int want)
{
	for (int t = 0; t < WAIT_MS; t += 50) {
		int l = leader_of(c, slot);
		if (l == want)
			return;
		if (l >= 0 && t % 500 == 0) {
			struct transfer_call q = { .g = &c->m[l].g[slot], .to = c->m[want].id };
			ck_assert_int_eq(loop_thread_call(&c->m[l].lt, transfer_fn, &q), 0);
		}
		usleep(50000);
	}
	ck_abort_msg("group %llu: leadership did not move to member %d",
		     (unsigned long long)c->gids[slot], want + 1);
}

/* ------------------------------------------------------------ multi_group */

static void multi_group_body(void)
{
	static struct cluster c;   /* ~ a few hundred KiB: not on the stack */
	const uint64_t gids[] = { 0, 1, 42, 1000003, 0xdeadbeefULL, 1ULL << 40, UINT64_MAX - 1,
				  UINT64_MAX };
	const size_t G = sizeof(gids) / sizeof(gids[0]);
	uint64_t t0 = loop_now_ms();
	cluster_init(&c, G, gids);
	for (size_t i = 1; i < NMEMB; i++)
		ck_assert_int_ne(strcmp(c.m[0].addr, c.m[i].addr), 0);

	/* 1. Every group elects and commits on all three. */
	commit_all(&c, 1, 20);
	printf("multi_group: %zu groups x 3 members committed 20 entries each (%llu ms)\n", G,
	       (unsigned long long)(loop_now_ms() - t0));
	for (size_t i = 0; i < NMEMB; i++) {
		struct view_call q;
		view(&c.m[i], &q);
		ck_assert_uint_eq(q.stats.groups, G);
		/* Every group's streams from its peers came in through this one
		 * port (at least the leader's, or both followers'). */
		ck_assert_uint_ge(q.stats.accepted, G);
		ck_assert_uint_ge(q.stats.connects, G);
		ck_assert_uint_eq(q.stats.handshakes, 0);
	}
	/* Independent leaders: move each group's to member slot % 3. */
	for (size_t s = 0; s < G; s++)
		move_leader(&c, s, (int)(s % NMEMB));
	int leads[NMEMB] = { 0 };
	for (size_t s = 0; s < G; s++) {
		int l = leader_of(&c, s);
		ck_assert_int_ge(l, 0);
		leads[l]++;
	}
	printf("multi_group: leaders per member %d %d %d (%llu ms)\n", leads[0], leads[1], leads[2],
	       (unsigned long long)(loop_now_ms() - t0));
	for (size_t i = 0; i < NMEMB; i++)
		ck_assert_int_ge(leads[i], 2);

	/* 2. A group added while the others run. */
	c.gids[G] = 77;
	c.n_groups = G + 1;
	for (size_t i = 0; i < NMEMB; i++)
		group_start(&c.m[i], G);
	commit(&c, G, 1, 20);
	wait_converged(&c, G, 20);
	printf("multi_group: group 77 added at runtime committed (%llu ms)\n",
	       (unsigned long long)(loop_now_ms() - t0));

	/* 3. Member 3 goes away (port first, then its groups); the other
	 * two commit in every group, leaders it held included. */
	member_close(&c.m[2]);
	commit_all(&c, 21, 40);
	printf("multi_group: 2 of 3 members committed 20 more in %zu groups (%llu ms)\n", G + 1,
	       (unsigned long long)(loop_now_ms() - t0));
	member_open(&c.m[2]);   /* same port: addr kept */
	for (size_t s = 0; s < c.n_groups; s++)
		group_start(&c.m[2], s);
	for (size_t s = 0; s < c.n_groups; s++)
		wait_converged(&c, s, 40);
	commit_all(&c, 41, 45);
	printf("multi_group: member 3 reopened on %s and caught up (%llu ms)\n", c.m[2].addr,
	       (unsigned long long)(loop_now_ms() - t0));
	cluster_free(&c);
}

START_TEST(multi_group)
{
	multi_group_body();
}
END_TEST

/* The same over mutual TLS (meta/raft_tls.c): every mux takes the
 * process's identity, a meta certificate from a CA made here. */
START_TEST(multi_group_tls)
{
	char dir[96], cdir[128], pfx[128], caf[160], cert[160], key[160], why[512];
	test_scratch_path(dir, sizeof(dir), "test_raft_mux_tls.%d", (int)getpid());
	snprintf(cdir, sizeof(cdir), "%s/ca", dir);
	snprintf(pfx, sizeof(pfx), "%s/m", dir);
	ck_assert_msg(ca_init(cdir, 1, why, sizeof(why)) == 0, "%s", why);
	static const char *const ips[] = { "127.0.0.1" };
	struct ca_issue_req r = { .name = "m", .ips = ips, .n_ips = 1, .days = 1,
				  .roles = RPC_ROLE_META };
	ck_assert_msg(ca_issue(cdir, &r, pfx, why, sizeof(why)) == 0, "%s", why);
	snprintf(caf, sizeof(caf), "%s/ca.pem", cdir);
	snprintf(cert, sizeof(cert), "%s.pem", pfx);
	snprintf(key, sizeof(key), "%s.key", pfx);
	struct rpc_tls_files f = { .ca = caf, .cert = cert, .key = key };
	ck_assert_msg(rpc_tls_setup(&f, why, sizeof(why)) == 0, "%s", why);
	struct rpc_tls_raft_stats a, b;
	rpc_tls_raft_stats(&a);
	multi_group_body();
	rpc_tls_raft_stats(&b);
	/* 9 groups x 3 members x 2 peers, and member 3 reconnecting. */
	ck_assert_uint_ge(b.server_handshakes - a.server_handshakes, 9 * 3 * 2);
	ck_assert_uint_ge(b.client_handshakes - a.client_handshakes, 9 * 3 * 2);
	for (int k = 0; k < RPC_TLS_RAFT_COUNT; k++)
		ck_assert_msg(b.refused[k] == a.refused[k], "refused %d", k);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ------------------------------------------------------------ garbage */

static int raw_connect(const char *addr)
{
	int port = atoi(strrchr(addr, ':') + 1);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Whether the member closed fd (EOF or reset before the receive timeout). */
static bool closed_by_peer(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, 0);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void send_all(int fd, const void *p, size_t n)
{
	ck_assert_int_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Send bytes, expect the connection closed. */
static void refused(const char *addr, const void *p, size_t n)
{
	int fd = raw_connect(addr);
	send_all(fd, p, n);
	ck_assert(closed_by_peer(fd));
	close(fd);
}

struct spare_call {
	struct member *mb;
	struct raft_uv_transport *t;
	uint64_t gid;
	int rc;
	struct raft_mux *other;
};

static void spare_init_fn(void *arg)
{
	struct spare_call *q = arg;
	q->rc = raft_mux_transport_init(q->mb->mux, q->t, q->gid);
}

static void spare_close_fn(void *arg)
{
	struct spare_call *q = arg;
	raft_mux_transport_close(q->t);
}

static void second_mux_fn(void *arg)
{
	struct spare_call *q = arg;
	q->rc = raft_mux_init(&q->other, &q->mb->lt.loop, q->mb->addr);
}

static void short_timeout_fn(void *arg)
{
	raft_mux_set_handshake_timeout(arg, 300);
}

static void wait_refused(struct member *mb, const struct raft_mux_stats *want)
{
	struct view_call q;
	for (int t = 0; t < WAIT_MS; t += 10) {
		view(mb, &q);
		if (!memcmp(q.stats.refused, want->refused, sizeof(want->refused)))
			return;
		usleep(10000);
	}
	for (int r = 0; r < RAFT_MUX_R_COUNT; r++)
		printf("  %-14s got %llu want %llu\n", raft_mux_refusal_name(r),
		       (unsigned long long)q.stats.refused[r], (unsigned long long)want->refused[r]);
	ck_abort_msg("refusal counters differ");
}

START_TEST(garbage)
{
	static struct cluster c;
	const uint64_t gids[] = { 5, 6 };
	cluster_init(&c, 2, gids);
	commit_all(&c, 1, 10);
	struct member *mb = &c.m[0];
	const char *addr = mb->addr;
	ck_assert_int_eq(loop_thread_call(&mb->lt, short_timeout_fn, mb->mux), 0);

	/* The port is taken; group 5 has a transport here already. */
	struct raft_uv_transport spare = { 0 };
	struct spare_call sq = { .mb = mb, .t = &spare, .gid = 5 };
	ck_assert_int_eq(loop_thread_call(&mb->lt, second_mux_fn, &sq), 0);
	ck_assert_int_eq(sq.rc, -EADDRINUSE);
	ck_assert_int_eq(loop_thread_call(&mb->lt, spare_init_fn, &sq), 0);
	ck_assert_int_eq(sq.rc, -EEXIST);
	/* Group 777: registered, never started. */
	sq.gid = 777;
	ck_assert_int_eq(loop_thread_call(&mb->lt, spare_init_fn, &sq), 0);
	ck_assert_int_eq(sq.rc, 0);

	struct view_call q0;
	view(mb, &q0);
	struct raft_mux_stats want = q0.stats;
	uint8_t b[RAFT_MUX_PREAMBLE_MAX];

	const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	refused(addr, http, sizeof(http) - 1);
	want.refused[RAFT_MUX_R_BAD_MAGIC]++;
	wait_refused(mb, &want);

	size_t n = craft(b, "IOLRMUX1", 5, 1, 2, 0, "127.0.0.1:1");
	put_le(b, 1);   /* what raft_uv_tcp sends first */
	refused(addr, b, 24);
	want.refused[RAFT_MUX_R_BAD_MAGIC]++;
	wait_refused(mb, &want);

	n = craft(b, "IOLRMUX1", 5, 2, 2, 0, "127.0.0.1:1");
	refused(addr, b, n);
	want.refused[RAFT_MUX_R_BAD_PROTOCOL]++;
	wait_refused(mb, &want);

	n = craft(b, "IOLRMUX1", 5, 1, 0, 0, "127.0.0.1:1");
	refused(addr, b, n);
	want.refused[RAFT_MUX_R_BAD_SERVER_ID]++;
	wait_refused(mb, &want);

	n = craft(b, "IOLRMUX1", 5, 1, 2, 4096, "127.0.0.1:1");
	refused(addr, b, n);
	want.refused[RAFT_MUX_R_BAD_ADDRESS]++;
	wait_refused(mb, &want);

	n = (size_t)raft_mux_preamble_encode(b, sizeof(b), 999999, 2, c.m[1].addr);
	refused(addr, b, n);
	want.refused[RAFT_MUX_R_UNKNOWN_GROUP]++;
	wait_refused(mb, &want);

	n = (size_t)raft_mux_preamble_encode(b, sizeof(b), 777, 2, c.m[1].addr);
	refused(addr, b, n);
	want.refused[RAFT_MUX_R_NOT_LISTENING]++;
	wait_refused(mb, &want);

	/* A valid start, then silence: the timeout frees the slot. */
	n = (size_t)raft_mux_preamble_encode(b, sizeof(b), 5, 2, c.m[1].addr);
	refused(addr, b, n - 9);
	want.refused[RAFT_MUX_R_TIMEOUT]++;
	wait_refused(mb, &want);

	int fd = raw_connect(addr);
	close(fd);
	want.refused[RAFT_MUX_R_EOF]++;
	wait_refused(mb, &want);

	/* More silent clients than slots: none is refused for lack of a slot,
	 * the last ones are accepted as the first time out. */
	enum { SILENT = RAFT_MUX_HANDSHAKES_MAX + 16 };
	int fds[SILENT];
	for (int i = 0; i < SILENT; i++)
		fds[i] = raw_connect(addr);
	for (int i = 0; i < SILENT; i++) {
		ck_assert_msg(closed_by_peer(fds[i]), "silent client %d not closed", i);
		close(fds[i]);
	}
	want.refused[RAFT_MUX_R_TIMEOUT] += SILENT;
	wait_refused(mb, &want);

	/* The groups did not notice. */
	commit_all(&c, 11, 30);
	struct view_call q1;
	view(mb, &q1);
	ck_assert_uint_eq(q1.stats.handshakes, 0);
	ck_assert_uint_eq(q1.stats.groups, 3);
	ck_assert_int_eq(loop_thread_call(&mb->lt, spare_close_fn, &sq), 0);
	view(mb, &q1);
	ck_assert_uint_eq(q1.stats.groups, 2);
	cluster_free(&c);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_LEVEL_WARN);
	Suite *s = suite_create("raft_mux");
	TCase *tc = tcase_create("raft_mux");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, codec);
	tcase_add_test(tc, multi_group);
	tcase_add_test(tc, multi_group_tls);
	tcase_add_test(tc, garbage);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
