/*
 * client.c — leader-following, retrying client of the Meta service
 * (contracts in client.h).
 *
 * Owns one rpc_channel per known member (members named in a redirect
 * that were not in the list are added, up to META_CLIENT_MAX_MEMBERS) and
 * the outstanding calls. Each call keeps an owned copy of its request, so
 * every attempt sends the same bytes, request ids included.
 *
 * Invariants: the submits list holds the outstanding submits in request id
 * order, so its head is the acked_below every attempt sends. A submit is
 * sent only while its id is less than DEDUPE_SPAN above that head: the
 * state machine remembers META_DEDUPE_WINDOW answers per client, and a
 * slow retry of the oldest op must still find its answer (or be applied),
 * not be refused as STALE because younger ops pushed the window past it.
 * Submits beyond the span wait, unsent, in the list (from s_held on).
 *
 * Coalescing: a submit ready to go (first try or retry) joins the pending
 * list; a uv_idle handle (it keeps the next poll from blocking and runs
 * at the start of the next loop turn) sends everything pending as one
 * SubmitRequest per group per SUBMIT_BATCH_OPS ops. Callers that submit in the same
 * turn so share one RPC, one leader queue slot and usually one Raft entry.
 * An answer is split back per op; a failed batch sends each op through
 * the same retry rules a lone submit follows, so re-sent ops coalesce
 * again.
 *
 * Groups: a call addresses the Raft group its request names (field 100,
 * `group`; 0: the root); submits name theirs with meta_client_submit_group.
 * Each group's leader is remembered apart (the root's in `leader`, the
 * others in a direct-mapped cache of LEADER_CACHE slots: a miss starts at
 * the root's leader). A member that does not host the group answers
 * NOT_FOUND "no group"; the call then tries the other members once each
 * before it fails NOT_FOUND.
 *
 * Thread: the client's loop.
 */
#include "meta/client.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/err.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/pb_block.h"
#include "common/rpc.h"
#include "meta/route.h"

#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 320
#define DEDUPE_SPAN (META_DEDUPE_WINDOW / 2)
#define SUBMIT_BATCH_OPS 256          /* ops per coalesced SubmitRequest */
#define LEADER_CACHE 256              /* groups >= 1 whose leader is remembered */
#define BATCH_TRACE_MAX 118           /* request ids of one batch: 7 of 16 chars (rpc keeps 128) */
#define LONG_POLL_SLACK_MS 10000      /* a WatchMap attempt: its hold + this */
/* Failure detection on the members' channels: PING after this long with
 * calls out and nothing heard, dead when the PING is not answered in
 * PING_TIMEOUT. A leader that drops off the network is so known in about
 * a second (the RPC default, 1 s + 2 s, was most of the 3 s an isolated
 * leader cost the writes), about as long as its followers take to elect
 * another; its calls are then retried elsewhere (request ids dedupe). */
#define MEMBER_PING_BUSY_MS 300
#define MEMBER_PING_TIMEOUT_MS 1000

struct call {
	struct call *prev, *next;      /* every outstanding call */
	struct call *sprev, *snext;    /* submits, by request id */
	struct meta_client *c;
	unsigned method;
	ProtobufCMessage *req;         /* owned copy (unpacked), or ref's */
	struct ref_req *ref;           /* by reference: owns req (see by_ref) */
	Iolake__Meta__SubmitRequest sreq;
	Iolake__Meta__Op *op;          /* submit: in sreq; a pb_block copy unless borrowed */
	bool borrowed;                 /* op is the caller's (submit_group_ref) */
	meta_client_cb cb;
	meta_client_submit_cb scb;
	void *ud;
	uint64_t deadline_ms;
	uint32_t backoff_ms;
	int target;                    /* member the attempt went to */
	uint64_t group;                /* the Raft group the call addresses */
	unsigned no_group;             /* members that answered "no group" */
	bool single;                   /* call_member: one attempt */
	bool timer_init;
	uv_timer_t timer;              /* backoff between attempts */
	struct call *bnext;            /* pending list (coalescing) */
	char trace[LOG_REQ_ID_LEN + 1]; /* request id sent as call metadata; "" none */
};

/* One coalesced SubmitRequest on the wire. */
struct batch {
	struct meta_client *c;
	Iolake__Meta__SubmitRequest req;
	size_t n;
	struct call *calls[SUBMIT_BATCH_OPS];
	Iolake__Meta__Op *ops[SUBMIT_BATCH_OPS];
	char trace[BATCH_TRACE_MAX + 1];   /* the ops' distinct request ids, ','-joined */
};

struct leader_slot {
	uint64_t group;                /* 0: empty */
	size_t member;
};

struct meta_client {
	uv_loop_t *loop;
	struct rpc_channel *ch[META_CLIENT_MAX_MEMBERS];
	char *addr[META_CLIENT_MAX_MEMBERS];
	size_t n;
	size_t leader;                 /* member tried first (root group) */
	struct leader_slot lc[LEADER_CACHE];   /* leaders of groups >= 1 */
	struct call *calls;
	struct call *s_head, *s_tail;
	struct call *s_held;           /* first submit not yet sent (span) */
	size_t n_calls;
	uint64_t client_id, next_request_id;
	uint32_t attempt_timeout_ms, retry_for_ms, max_calls;
	bool closing;
	struct meta_client_stats stats;
	uint32_t rng;
	struct call *pend_head, *pend_tail; /* submits to send at turn's end */
	uv_idle_t flush;               /* sends the pending list */
	struct meta_route *route;      /* key-range routing (route.c) */
	/* The request id new calls carry (meta_client_set_trace; while a
	 * call's callback runs, that call's id, so the calls route.c makes
	 * on a caller's behalf carry it too). */
	char trace[LOG_REQ_ID_LEN + 1];
	char last_error[160];          /* meta_client_last_error */
};

static int add_member(struct meta_client *c, const char *addr)
{
	if (c->n == META_CLIENT_MAX_MEMBERS)
		return -ENOSPC;
	c->addr[c->n] = strdup(addr);
	if (!c->addr[c->n])
		return -ENOMEM;
	struct rpc_channel_opts co = { .connect_timeout_ms = 1000, .backoff_min_ms = 20,
				       .backoff_max_ms = 500, .ping_busy_ms = MEMBER_PING_BUSY_MS,
				       .ping_timeout_ms = MEMBER_PING_TIMEOUT_MS };
	c->ch[c->n] = rpc_channel_open(c->loop, addr, &co);
	if (!c->ch[c->n]) {
		free(c->addr[c->n]);
		return -EINVAL;
	}
	return (int)c->n++;
}

int meta_client_new(uv_loop_t *loop, const struct meta_client_opts *o, struct meta_client **out)
{
	if (!o->n_members || o->n_members > META_CLIENT_MAX_MEMBERS)
		return -EINVAL;
	struct meta_client *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->attempt_timeout_ms = o->attempt_timeout_ms ? o->attempt_timeout_ms : 3000;
	c->retry_for_ms = o->retry_for_ms ? o->retry_for_ms : 30000;
	c->max_calls = o->max_calls ? o->max_calls : 4096;
	c->client_id = o->client_id;
	while (!c->client_id && getrandom(&c->client_id, sizeof(c->client_id), 0) != sizeof(c->client_id))
		;
	c->rng = (uint32_t)c->client_id | 1;
	c->next_request_id = 1;
	if (meta_route_new(c, &c->route)) {
		free(c);
		return -ENOMEM;
	}
	uv_idle_init(loop, &c->flush);
	c->flush.data = c;
	for (size_t i = 0; i < o->n_members; i++) {
		int rc = add_member(c, o->members[i]);
		if (rc < 0) {
			meta_client_close(c);
			return rc;
		}
	}
	*out = c;
	return 0;
}

static uint32_t rnd(struct meta_client *c)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 17;
	c->rng ^= c->rng << 5;
	return c->rng;
}

/* ------------------------------------------------------------ leaders */

static size_t leader_of(const struct meta_client *c, uint64_t group)
{
	if (group == 0)
		return c->leader;
	const struct leader_slot *e = &c->lc[group % LEADER_CACHE];
	return e->group == group && e->member < c->n ? e->member : c->leader;
}

static void set_leader(struct meta_client *c, uint64_t group, size_t member)
{
	if (group == 0) {
		c->leader = member;
		return;
	}
	c->lc[group % LEADER_CACHE].group = group;
	c->lc[group % LEADER_CACHE].member = member;
}

/* Whether member i's circuit is open (known unreachable: calls to it
 * fail at once). */
static bool member_down(const struct meta_client *c, size_t i)
{
	return rpc_channel_peer_state(c->ch[i]) == RPC_PEER_DOWN;
}

/* The member that answered for group was not its leader and named none
 * (or is unreachable): the next one not known unreachable is tried first
 * (the next one at all when every other is). */
static void leader_next(struct meta_client *c, uint64_t group, int target)
{
	if (leader_of(c, group) != (size_t)target)
		return;
	size_t next = (size_t)(target + 1) % c->n;
	for (size_t k = 1; k < c->n; k++) {
		size_t j = (size_t)(target + k) % c->n;
		if (!member_down(c, j)) {
			next = j;
			break;
		}
	}
	set_leader(c, group, next);
}

/* The group a request names: its uint64 field 100 (meta.proto), else 0. */
static uint64_t msg_group(const ProtobufCMessage *m)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field(m->descriptor, 100);
	if (!f || f->type != PROTOBUF_C_TYPE_UINT64 || f->label == PROTOBUF_C_LABEL_REPEATED)
		return 0;
	return *(const uint64_t *)((const char *)m + f->offset);
}

/* ------------------------------------------------------------ calls */

/* A request handed by reference (rpc_call_ref): start_call's copy, kept
 * alive by hold's references, the call's and the transport's while a
 * member may still read it (past the call's end: a deadline). */
struct ref_req {
	struct buf hold;
	ProtobufCMessage *req;
};

static void ref_req_release(struct buf *b)
{
	struct ref_req *h = b->owner;   /* any thread: the last reader's */
	pb_block_free(h->req);
	free(h);
}

/* The methods sent by reference: in process, the member reads the call's
 * copy itself (no pack, no unpack), and its direct handler may answer on
 * this thread (meta/node_direct.c). Only handlers that never edit their
 * request qualify. */
static bool by_ref(unsigned method)
{
	return method == META_M_HEAD_OBJECT || method == META_M_GET_VERSION;
}

static void free_call_mem(struct call *k)
{
	if (k->op) {
		if (!k->borrowed)
			pb_block_free(&k->op->base);
	} else if (k->ref) {
		buf_unref(&k->ref->hold);   /* the call's reference */
	} else if (k->req) {
		pb_block_free(k->req);   /* start_call's copy */
	}
	free(k);
}

static void on_timer_closed(uv_handle_t *h)
{
	free_call_mem(h->data);
}

static void call_unlink(struct call *k)
{
	struct meta_client *c = k->c;
	if (k->prev)
		k->prev->next = k->next;
	else
		c->calls = k->next;
	if (k->next)
		k->next->prev = k->prev;
	if (k->op) {
		if (c->s_held == k)
			c->s_held = k->snext;
		if (k->sprev)
			k->sprev->snext = k->snext;
		else
			c->s_head = k->snext;
		if (k->snext)
			k->snext->sprev = k->sprev;
		else
			c->s_tail = k->sprev;
	}
	c->n_calls--;
}

static void attempt(struct call *k);

/* Send held submits that the span now admits. */
static void release_held(struct meta_client *c)
{
	while (c->s_held && !c->closing &&
	       c->s_held->op->request_id - c->s_head->op->request_id < DEDUPE_SPAN) {
		struct call *k = c->s_held;
		c->s_held = k->snext;
		attempt(k);
	}
}

/* Finish k. For a submit, res/index are its own op's answer (resp is
 * ignored); for other calls resp is the whole response. */
static void call_finish_res(struct call *k, int err, const ProtobufCMessage *resp,
			    const Iolake__Meta__OpResult *res, uint64_t index)
{
	struct meta_client *c = k->c;
	bool was_head = k->op && c->s_head == k;
	call_unlink(k);
	char saved[sizeof(c->trace)];
	memcpy(saved, c->trace, sizeof(saved));
	memcpy(c->trace, k->trace, sizeof(c->trace));
	if (k->scb) {
		if (!err && !res)
			err = IOL_EPROTOCOL;
		k->scb(k->ud, err, err ? NULL : res, err ? 0 : index);
	} else {
		k->cb(k->ud, err, err ? NULL : resp);
	}
	memcpy(c->trace, saved, sizeof(c->trace));
	if (k->timer_init)
		uv_close((uv_handle_t *)&k->timer, on_timer_closed);
	else
		free_call_mem(k);
	if (was_head)
		release_held(c);
}

static void call_finish(struct call *k, int err, const ProtobufCMessage *resp)
{
	call_finish_res(k, err, resp, NULL, 0);
}

static void on_backoff(uv_timer_t *t)
{
	attempt(t->data);
}

static void retry_later(struct call *k)
{
	struct meta_client *c = k->c;
	if (loop_now_ms() + k->backoff_ms >= k->deadline_ms) {
		call_finish(k, IOL_ETIMEOUT, NULL);
		return;
	}
	if (!k->timer_init) {
		uv_timer_init(c->loop, &k->timer);
		k->timer.data = k;
		k->timer_init = true;
	}
	uint32_t wait = k->backoff_ms / 2 + rnd(c) % (k->backoff_ms / 2 + 1);
	k->backoff_ms = k->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : k->backoff_ms * 2;
	c->stats.retries++;
	uv_timer_start(&k->timer, on_backoff, wait, 0);
}

int meta_client_leader_addr(const char *msg, char *out, size_t cap)
{
	const char *p = strstr(msg, "leader=");
	if (!p || !p[7] || !cap)
		return -1;
	p += 7;
	size_t len = strcspn(p, " ;");
	if (len == 0 || len >= cap)
		return -1;
	memcpy(out, p, len);
	out[len] = 0;
	return (int)len;
}

/* "not leader; leader=HOST:PORT" -> index of that member (added when
 * new), or -1 when no leader is named. */
static int leader_hint(struct meta_client *c, const char *msg)
{
	char addr[META_ADDR_MAX];
	if (meta_client_leader_addr(msg, addr, sizeof(addr)) < 0)
		return -1;
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->addr[i], addr))
			return (int)i;
	int rc = add_member(c, addr);
	return rc < 0 ? -1 : rc;
}

/* A follower relayed the answer of group's leader and named it in the
 * payload ("leader=HOST:PORT", meta/node_fwd.c): the next calls go there
 * straight (one hop less), unless it is known unreachable. */
static void learn_leader(struct meta_client *c, uint64_t group, const struct rpc_result *res)
{
	const struct buf_slice *pl = &res->payload;
	char hint[META_ADDR_MAX + 8];
	if (!pl->buf || pl->len < 8 || pl->len >= sizeof(hint))
		return;
	memcpy(hint, pl->buf->data + pl->off, pl->len);
	hint[pl->len] = 0;
	if (strncmp(hint, "leader=", 7) != 0)
		return;
	int j = leader_hint(c, hint);
	if (j >= 0 && !member_down(c, (size_t)j))
		set_leader(c, group, (size_t)j);
}

static int final_err(int status)
{
	switch (status) {
	case RPC_INVALID_ARGUMENT: return -EINVAL;
	case RPC_NOT_FOUND: return IOL_ENOT_FOUND;
	case RPC_UNAVAILABLE: return IOL_EUNAVAILABLE;
	case RPC_DEADLINE_EXCEEDED: return IOL_ETIMEOUT;
	case RPC_UNIMPLEMENTED: return -EOPNOTSUPP;
	default: return -EIO;
	}
}

/* What to do with k after an attempt that did not succeed (status is
 * not RPC_OK): finish it, redirect it, or retry it after a backoff. */
static void handle_failure(struct call *k, const struct rpc_result *res)
{
	struct meta_client *c = k->c;
	snprintf(c->last_error, sizeof(c->last_error), "%s from %s: %s",
		 rpc_status_name(res->status), c->addr[k->target],
		 res->message ? res->message : "");
	if (k->single) {
		call_finish(k, final_err(res->status), NULL);
		return;
	}
	switch (res->status) {
	case RPC_FAILED_PRECONDITION:
		if (!strstr(res->message, "not leader")) {
			LOG_WARN("meta call failed", "method=%u msg=%s", k->method, LOG_Q(res->message));
			call_finish(k, -EIO, NULL);
			return;
		}
		{
			int j = leader_hint(c, res->message);
			/* A hint naming a member known unreachable is stale (the
			 * follower has not noticed its leader is gone yet). */
			if (j >= 0 && member_down(c, (size_t)j))
				j = -1;
			if (j >= 0 && j != k->target) {
				set_leader(c, k->group, (size_t)j);
				c->stats.redirects++;
				attempt(k);
				return;
			}
			if (j < 0)
				leader_next(c, k->group, k->target);
		}
		retry_later(k);
		return;
	case RPC_NOT_FOUND:
		if (res->message && strstr(res->message, "no group") && ++k->no_group < c->n) {
			/* This member does not host it (yet): another may. */
			leader_next(c, k->group, k->target);
			retry_later(k);
			return;
		}
		LOG_WARN("meta call failed", "method=%u status=%s msg=%s", k->method,
			 rpc_status_name(res->status), LOG_Q(res->message));
		call_finish(k, IOL_ENOT_FOUND, NULL);
		return;
	case RPC_UNAVAILABLE:
	case RPC_DEADLINE_EXCEEDED:
	case RPC_CANCELLED:
		/* The member is gone or lost leadership: ask the next one. */
		leader_next(c, k->group, k->target);
		retry_later(k);
		return;
	case RPC_RESOURCE_EXHAUSTED:
		retry_later(k);
		return;
	case RPC_UNIMPLEMENTED:
		/* A member older than this client: the caller decides how
		 * loud to be (it gets -EOPNOTSUPP). */
		call_finish(k, -EOPNOTSUPP, NULL);
		return;
	default:
		LOG_WARN("meta call failed", "method=%u status=%s msg=%s", k->method,
			 rpc_status_name(res->status), LOG_Q(res->message));
		call_finish(k, final_err(res->status), NULL);
		return;
	}
}

static void on_result(void *ud, const struct rpc_result *res)
{
	struct call *k = ud;
	struct meta_client *c = k->c;
	if (c->closing) {
		call_finish(k, IOL_ESHUTDOWN, NULL);
		return;
	}
	if (res->status == RPC_OK) {
		if (!k->single)
			learn_leader(c, k->group, res);
		call_finish(k, 0, res->resp);
		return;
	}
	handle_failure(k, res);
}

static void on_batch_result(void *ud, const struct rpc_result *res)
{
	struct batch *b = ud;
	struct meta_client *c = b->c;
	const Iolake__Meta__SubmitResponse *sr = (const void *)res->resp;
	struct rpc_result bad = *res;
	if (res->status == RPC_OK && (!sr || sr->n_results != b->n)) {
		/* An answer that does not match the ops sent: count it as lost,
		 * the retry is safe (request ids dedupe). */
		bad.status = RPC_UNAVAILABLE;
		bad.message = "malformed submit response";
	}
	if (bad.status == RPC_OK && b->n && !c->closing)
		learn_leader(c, b->calls[0]->group, res);
	for (size_t i = 0; i < b->n; i++) {
		struct call *k = b->calls[i];
		if (c->closing)
			call_finish(k, IOL_ESHUTDOWN, NULL);
		else if (bad.status == RPC_OK)
			call_finish_res(k, 0, NULL, sr->results[i], sr->index);
		else if (k->single)
			call_finish(k, final_err(bad.status), NULL);
		else
			handle_failure(k, &bad);
	}
	free(b);
}

/* The request ids of b's ops, distinct, ','-joined, as many as fit
 * (meta's log lines about the batch name them all; an id left out is
 * only missing from those lines). */
static void batch_trace(struct batch *b)
{
	size_t len = 0;
	b->trace[0] = 0;
	for (size_t i = 0; i < b->n; i++) {
		const char *id = b->calls[i]->trace;
		size_t n = strlen(id);
		if (!n || len + n + (len ? 1 : 0) > BATCH_TRACE_MAX)
			continue;
		if (len && strstr(b->trace, id))
			continue;
		if (len)
			b->trace[len++] = ',';
		memcpy(b->trace + len, id, n + 1);
		len += n;
	}
}

/* End of a loop turn: send the pending submits, one SubmitRequest per
 * group and SUBMIT_BATCH_OPS ops, each to the member believed to lead that
 * group. */
static void on_flush(uv_idle_t *h)
{
	struct meta_client *c = h->data;
	uv_idle_stop(h);
	while (c->pend_head && !c->closing) {
		struct batch *b = malloc(sizeof(*b));
		if (!b)
			return; /* retried on the next turn */
		b->c = c;
		b->n = 0;
		uint64_t now = loop_now_ms(), left = UINT64_MAX;
		uint64_t group = c->pend_head->group;
		int target = (int)leader_of(c, group);
		/* Take the head's group's calls, in order; the others stay. */
		struct call **pp = &c->pend_head, *last = NULL;
		while (*pp && b->n < SUBMIT_BATCH_OPS) {
			struct call *k = *pp;
			if (k->group != group) {
				last = k;
				pp = &k->bnext;
				continue;
			}
			*pp = k->bnext;
			k->bnext = NULL;
			if (now >= k->deadline_ms) {
				call_finish(k, IOL_ETIMEOUT, NULL);
				continue;
			}
			k->target = target;
			k->op->acked_below = c->s_head->op->request_id;
			if (k->deadline_ms - now < left)
				left = k->deadline_ms - now;
			b->calls[b->n] = k;
			b->ops[b->n] = k->op;
			b->n++;
		}
		if (!*pp)
			c->pend_tail = last;
		if (!c->pend_head)
			c->pend_tail = NULL;
		if (b->n == 0) {
			free(b);
			continue;
		}
		iolake__meta__submit_request__init(&b->req);
		b->req.ops = b->ops;
		b->req.n_ops = b->n;
		b->req.group = group;
		batch_trace(b);
		struct rpc_call_opts co = { .timeout_ms = left < c->attempt_timeout_ms
							  ? (uint32_t)left
							  : c->attempt_timeout_ms,
					    .request_id = b->trace };
		c->stats.batches++;
		rpc_call(c->ch[target], META_SERVICE, META_M_SUBMIT, &b->req.base, NULL, &co,
			 on_batch_result, b);
	}
	if (c->pend_head)
		uv_idle_start(h, on_flush);
}

/* How long one attempt of k may take. A WatchMap is held by the member up
 * to its own timeout (capped by META_WATCH_MAX_MS): its attempt lasts that
 * plus LONG_POLL_SLACK_MS. Every other call gets the client's attempt
 * timeout, so a member that sits on a GetMap is left in seconds. */
static uint32_t attempt_ms(const struct meta_client *c, const struct call *k)
{
	if (k->method != META_M_WATCH_MAP)
		return c->attempt_timeout_ms;
	const Iolake__Meta__WatchMapRequest *q = (const void *)k->req;
	uint32_t held = q->timeout_ms ? q->timeout_ms : META_WATCH_DEFAULT_MS;
	if (held > META_WATCH_MAX_MS)
		held = META_WATCH_MAX_MS;
	uint32_t t = held + LONG_POLL_SLACK_MS;
	return t > c->attempt_timeout_ms ? t : c->attempt_timeout_ms;
}

static void attempt(struct call *k)
{
	struct meta_client *c = k->c;
	if (loop_now_ms() >= k->deadline_ms) {
		call_finish(k, IOL_ETIMEOUT, NULL);
		return;
	}
	if (k->op && !k->single) {
		k->bnext = NULL;
		if (c->pend_tail)
			c->pend_tail->bnext = k;
		else
			c->pend_head = k;
		c->pend_tail = k;
		if (!uv_is_active((uv_handle_t *)&c->flush))
			uv_idle_start(&c->flush, on_flush);
		return;
	}
	if (!k->single)
		k->target = (int)leader_of(c, k->group);
	uint64_t left = k->deadline_ms - loop_now_ms();
	uint32_t one = attempt_ms(c, k);
	struct rpc_call_opts co = { .timeout_ms = left < one ? (uint32_t)left : one,
				    .request_id = k->trace };
	if (k->ref)
		rpc_call_ref(c->ch[k->target], META_SERVICE, k->method, k->req, &k->ref->hold, NULL,
			     &co, on_result, k);
	else
		rpc_call(c->ch[k->target], META_SERVICE, k->method, k->req, NULL, &co, on_result, k);
}

static struct call *call_new(struct meta_client *c, unsigned method, meta_client_cb cb, void *ud)
{
	if (c->closing || method >= META_M_COUNT)
		return NULL;
	struct call *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->c = c;
	k->method = method;
	k->cb = cb;
	k->ud = ud;
	k->backoff_ms = BACKOFF_MIN_MS;
	k->deadline_ms = loop_now_ms() + c->retry_for_ms;
	memcpy(k->trace, c->trace, sizeof(k->trace));
	return k;
}

static void call_link(struct call *k)
{
	struct meta_client *c = k->c;
	k->next = c->calls;
	if (c->calls)
		c->calls->prev = k;
	c->calls = k;
	c->n_calls++;
	c->stats.calls++;
}

ProtobufCMessage *meta_client_copy_msg(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t stackbuf[512];
	uint8_t *buf = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
	if (!buf)
		return NULL;
	protobuf_c_message_pack(m, buf);
	ProtobufCMessage *copy = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	if (buf != stackbuf)
		free(buf);
	return copy;
}

static int start_call(struct meta_client *c, struct call *k, const ProtobufCMessage *req)
{
	if (!k)
		return c->closing ? IOL_ESHUTDOWN : -ENOMEM;
	if (c->n_calls >= c->max_calls) {
		free(k);
		return -EAGAIN;
	}
	/* One block (pb_block.h): a call's request is read and its scalars
	 * stamped, never edited piecewise; a malloc and free per string was
	 * most of the copy's cost on a GET's HeadObject (branch get64c). */
	k->req = pb_block_copy(req);
	if (k->req && by_ref(k->method)) {
		k->ref = malloc(sizeof(*k->ref));
		if (k->ref) {
			buf_init_embedded(&k->ref->hold, NULL, 0, ref_req_release, k->ref);
			k->ref->req = k->req;
		} else {
			pb_block_free(k->req);
			k->req = NULL;
		}
	}
	if (!k->req) {
		free(k);
		return -ENOMEM;
	}
	k->group = msg_group(k->req);
	call_link(k);
	attempt(k);
	return 0;
}

int meta_client_call(struct meta_client *c, unsigned method, const ProtobufCMessage *req,
		     meta_client_cb cb, void *ud)
{
	if (method >= META_M_COUNT)
		return -EINVAL;
	if (c->closing)
		return IOL_ESHUTDOWN;
	if (meta_route_wants_call(method, req))
		return meta_route_call(c->route, method, req, cb, ud);
	return start_call(c, call_new(c, method, cb, ud), req);
}

int meta_client_call_direct(struct meta_client *c, unsigned method, const ProtobufCMessage *req,
			    meta_client_cb cb, void *ud)
{
	if (method >= META_M_COUNT)
		return -EINVAL;
	return start_call(c, call_new(c, method, cb, ud), req);
}

int meta_client_call_member(struct meta_client *c, size_t member, unsigned method,
			    const ProtobufCMessage *req, meta_client_cb cb, void *ud)
{
	if (method >= META_M_COUNT || member >= c->n)
		return -EINVAL;
	struct call *k = call_new(c, method, cb, ud);
	if (k) {
		k->single = true;
		k->target = (int)member;
	}
	return start_call(c, k, req);
}

int meta_client_submit(struct meta_client *c, const Iolake__Meta__Op *op,
		       meta_client_submit_cb cb, void *ud)
{
	if (c->closing)
		return IOL_ESHUTDOWN;
	if (meta_route_wants_op(op))
		return meta_route_submit(c->route, op, cb, ud);
	meta_route_root_changed(c->route);
	return meta_client_submit_group(c, 0, op, cb, ud);
}

static int submit_op(struct meta_client *c, uint64_t group, const Iolake__Meta__Op *op,
		     Iolake__Meta__Op *borrowed, meta_client_submit_cb cb, void *ud)
{
	struct call *k = call_new(c, META_M_SUBMIT, NULL, ud);
	if (!k)
		return c->closing ? IOL_ESHUTDOWN : -ENOMEM;
	if (c->n_calls >= c->max_calls) {
		free(k);
		return -EAGAIN;
	}
	k->scb = cb;
	k->borrowed = borrowed != NULL;
	k->op = borrowed ? borrowed : (Iolake__Meta__Op *)pb_block_copy(&op->base);
	if (!k->op) {
		free(k);
		return -ENOMEM;
	}
	k->op->client_id = c->client_id;
	k->op->request_id = c->next_request_id++;
	k->group = group;
	iolake__meta__submit_request__init(&k->sreq);
	k->sreq.ops = &k->op;
	k->sreq.n_ops = 1;
	k->sreq.group = group;
	k->req = &k->sreq.base;
	k->sprev = c->s_tail;
	if (c->s_tail)
		c->s_tail->snext = k;
	else
		c->s_head = k;
	c->s_tail = k;
	call_link(k);
	if (c->s_held || k->op->request_id - c->s_head->op->request_id >= DEDUPE_SPAN) {
		if (!c->s_held)
			c->s_held = k;
		return 0;
	}
	attempt(k);
	return 0;
}

int meta_client_submit_group(struct meta_client *c, uint64_t group, const Iolake__Meta__Op *op,
			     meta_client_submit_cb cb, void *ud)
{
	return submit_op(c, group, op, NULL, cb, ud);
}

int meta_client_submit_group_ref(struct meta_client *c, uint64_t group, Iolake__Meta__Op *op,
				 meta_client_submit_cb cb, void *ud)
{
	return submit_op(c, group, op, op, cb, ud);
}

static void on_flush_closed(uv_handle_t *h)
{
	free(h->data);
}

void meta_client_close(struct meta_client *c)
{
	c->closing = true;
	while (c->pend_head) {
		struct call *k = c->pend_head;
		c->pend_head = k->bnext;
		call_finish(k, IOL_ESHUTDOWN, NULL);
	}
	c->pend_tail = NULL;
	/* Calls waiting for a backoff timer finish here; calls on the wire
	 * finish from their channel's close (RPC_CANCELLED, synchronously). */
	while (c->s_held)
		call_finish(c->s_held, IOL_ESHUTDOWN, NULL);
	for (struct call *k = c->calls; k;) {
		struct call *next = k->next;
		if (k->timer_init && uv_is_active((uv_handle_t *)&k->timer)) {
			uv_timer_stop(&k->timer);
			call_finish(k, IOL_ESHUTDOWN, NULL);
		}
		k = next;
	}
	for (size_t i = 0; i < c->n; i++) {
		rpc_channel_close(c->ch[i]);
		free(c->addr[i]);
	}
	/* Anything left (none expected) is failed now. */
	while (c->calls)
		call_finish(c->calls, IOL_ESHUTDOWN, NULL);
	meta_route_free(c->route);
	c->route = NULL;
	/* c goes once libuv has released the idle handle. */
	uv_close((uv_handle_t *)&c->flush, on_flush_closed);
}

void meta_client_set_trace(struct meta_client *c, const char *id)
{
	size_t n = id ? strnlen(id, LOG_REQ_ID_LEN) : 0;
	if (n)
		memcpy(c->trace, id, n);
	c->trace[n] = 0;
}

const char *meta_client_trace(const struct meta_client *c)
{
	return c->trace;
}

uv_loop_t *meta_client_loop(const struct meta_client *c)
{
	return c->loop;
}

size_t meta_client_member_count(const struct meta_client *c)
{
	return c->n;
}

const char *meta_client_member(const struct meta_client *c, size_t i)
{
	return i < c->n ? c->addr[i] : NULL;
}

const char *meta_client_last_error(const struct meta_client *c)
{
	return c->last_error;
}

uint64_t meta_client_id(const struct meta_client *c)
{
	return c->client_id;
}

void meta_client_stats(const struct meta_client *c, struct meta_client_stats *out)
{
	*out = c->stats;
}
