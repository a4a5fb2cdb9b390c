/*
 * rpc_local.c — the in-process transport, "local:NAME".
 *
 * A process-wide registry (one writer-preferring rwlock) maps names to
 * servers. A call is one struct lcall shared by the client's loop and the
 * server's loop: the client posts the lcall to the server's loop_queue, the
 * server runs the handler, and the answer is posted back to the channel's
 * loop_queue, where the callback runs. Payloads cross by reference.
 *
 * Direct calls: a method with a direct handler (rpc_server_set_direct; the
 * OSD's GetShard) is first offered a call made by reference on the
 * caller's thread, under the registry's read lock (see try_direct); if it
 * answers, only the answer's post remains, to the caller's own loop (no
 * eventfd: loop.c's same-thread post). Otherwise the call is posted.
 *
 * Messages, without heap allocation on the hot path:
 *  - request by reference (rpc_call_ref): the handler reads the caller's
 *    message itself. lcall carries it and a reference on the caller's
 *    `hold` buf, which passes to the rpc_req and is dropped by
 *    rpc_req_release when the server answers (or by lcall_unref if no
 *    handler ever saw it). The rule: the caller's message lives while hold
 *    has a reference, so it outlives every read by the server even when
 *    the client gave up first (deadline, close) and its callback ran.
 *  - request packed (rpc_call): unpacked with the default allocator, as
 *    over HTTP/2: some handlers edit their request in place with
 *    malloc/free (meta's seal_op), so it must be heap memory.
 *  - answer: packed into lcall's rinline (when it fits LC_INLINE_BYTES),
 *    then unpacked on the client's loop into lcall's arena (malloc only
 *    past LC_ARENA_BYTES); a callback may not keep or free any of it
 *    (rpc.h: valid only during the callback). Most handlers build answers
 *    on their stacks and return, so those cross packed.
 *  - answer given (rpc_respond_give; meta's direct HeadObject): the
 *    handler's heap message crosses by reference in lcall's rmsg, and the
 *    callback gets it as it is, and may take it (rpc_answer_take); what
 *    nobody took is freed with the lcall.
 *  - lcall itself comes from a process-wide free list (one mutex; its last
 *    reference may drop on either loop), at most LC_POOL_MAX idle.
 *
 * Ownership: lcall is refcounted (atomic; the loops may be two threads or
 * one). The client holds one reference until its callback has run (answer,
 * deadline or channel close: whichever comes first), the server one until
 * it has answered; a posted answer carries its own. Fields are split by
 * side: client fields are touched only on the client loop, server fields
 * only on the server loop; `gone` is the one flag both read.
 *
 * The answer queue (struct local_rq) must outlive the channel while a
 * server may still post to it: it is refcounted by the channel and by each
 * lcall. Its poll handle is closed by loop_queue_close(); the channel drops
 * its reference only two close passes later (see chain_close), once libuv
 * is done with that handle.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/loop.h"
#include "common/rpc_internal.h"

struct reaper {
	uv_timer_t t;
	int hops;
	void (*done)(void *arg);
	void *arg;
};

struct local_rq {
	atomic_int refs;
	struct loop_queue q;
};

struct rpc_local_server {
	struct rpc_server *srv;
	struct rpc_local_server *next;  /* registry, under reg_lk */
	struct loop_queue q;            /* calls arrive here */
	struct lcall *live;             /* dispatched, unanswered (server loop) */
	struct reaper reaper;
	char name[];
};

struct local_chan {
	struct rpc_channel base;
	struct local_rq *rq;
	struct lcall *calls;  /* pending, client loop */
	struct reaper reaper;
};

#define LC_INLINE_BYTES 512  /* a packed answer up to this stays in the lcall */
#define LC_ARENA_BYTES 1024  /* unpacked messages up to about this: no malloc */
#define LC_POOL_MAX 1024     /* idle lcalls kept (~2.4 KiB each) */

/* A bump allocator for protobuf-c over a fixed array; past it, malloc.
 * Frees are no-ops inside the array; reset by setting used to 0 once
 * nothing unpacked into it is alive. */
struct lc_arena {
	ProtobufCAllocator a;
	size_t used;
	_Alignas(16) uint8_t mem[LC_ARENA_BYTES];
};

struct lcall {
	atomic_int refs;
	atomic_bool gone;          /* client stopped waiting */
	struct loop_work to_srv, to_cli;
	struct local_rq *rq;       /* answer queue; a reference */
	struct rpc_local_server *ls;
	/* client side */
	struct local_chan *ch;
	struct lcall *prev, *next;
	rpc_call_cb cb;
	void *ud;
	const ProtobufCServiceDescriptor *svc;
	unsigned method;
	struct rpc_dl dl;
	bool done;
	/* request, handed to the server */
	struct buf *reqbuf;                /* packed (rpc_call), or NULL */
	const ProtobufCMessage *msg;       /* by reference (rpc_call_ref), or NULL */
	struct buf *hold;                  /* with msg: a reference until dispatch */
	struct buf_slice payload;
	/* server side */
	struct rpc_req req;
	struct lcall *sprev, *snext;
	bool early;                /* UNAVAILABLE already posted by close */
	bool direct_answered;      /* a direct handler answered (try_direct) */
	/* answer */
	int status;
	struct buf *resp;          /* a packed answer too big for rinline */
	size_t rlen;               /* packed answer bytes in rinline (resp NULL) */
	ProtobufCMessage *rmsg;    /* a given answer (rpc_respond_give), or NULL */
	struct buf_slice rpayload;
	struct lcall *next_free;   /* the pool */
	/* Not cleared on reuse (lc_new sets what it must): */
	char id[RPC_MAX_REQUEST_ID + 1];
	char message[RPC_MAX_MESSAGE_TEXT];
	_Alignas(16) uint8_t rinline[LC_INLINE_BYTES];
	struct lc_arena arena;     /* the answer, unpacked on the client's loop */
};

/* The registry: read-locked by every call (the lookup, and a direct
 * handler for as long as it runs), write-locked by listen and close.
 * Writer-preferring: a steady stream of calls from the gateway's loops
 * must not hold a server's close off (glibc's default prefers readers).
 * Nothing may take it for reading twice on one thread (a direct handler
 * makes no calls): with a writer waiting, the second would deadlock. */
static pthread_rwlock_t reg_lk = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static struct rpc_local_server *reg_head;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct lcall *pool_head;   /* under pool_mu */
static unsigned pool_idle;        /* under pool_mu */

static void *arena_alloc(void *ad, size_t n)
{
	struct lc_arena *ar = ad;
	size_t need = (n + 15) & ~(size_t)15;
	if (need >= n && need <= sizeof(ar->mem) - ar->used) {
		void *p = ar->mem + ar->used;
		ar->used += need;
		return p;
	}
	return malloc(n);
}

static void arena_free(void *ad, void *p)
{
	struct lc_arena *ar = ad;
	uintptr_t u = (uintptr_t)p, lo = (uintptr_t)ar->mem;
	if (u >= lo && u < lo + sizeof(ar->mem))
		return;
	free(p);
}

/* A cleared lcall from the pool (or the heap), with one reference... of
 * the count the caller sets. NULL: out of memory. */
static struct lcall *lc_new(void)
{
	pthread_mutex_lock(&pool_mu);
	struct lcall *lc = pool_head;
	if (lc) {
		pool_head = lc->next_free;
		pool_idle--;
	}
	pthread_mutex_unlock(&pool_mu);
	if (!lc && !(lc = malloc(sizeof(*lc))))
		return NULL;
	memset(lc, 0, offsetof(struct lcall, id));
	lc->message[0] = 0;
	lc->arena.a = (ProtobufCAllocator){ arena_alloc, arena_free, &lc->arena };
	lc->arena.used = 0;
	return lc;
}

static void lc_free(struct lcall *lc)
{
	pthread_mutex_lock(&pool_mu);
	if (pool_idle < LC_POOL_MAX) {
		lc->next_free = pool_head;
		pool_head = lc;
		pool_idle++;
		lc = NULL;
	}
	pthread_mutex_unlock(&pool_mu);
	free(lc);
}

static void rq_unref(struct local_rq *rq)
{
	if (atomic_fetch_sub_explicit(&rq->refs, 1, memory_order_acq_rel) == 1)
		free(rq);
}

static void lcall_unref(struct lcall *lc)
{
	if (atomic_fetch_sub_explicit(&lc->refs, 1, memory_order_acq_rel) != 1)
		return;
	buf_unref(lc->reqbuf);
	buf_unref(lc->hold);
	buf_unref(lc->payload.buf);
	buf_unref(lc->resp);
	buf_unref(lc->rpayload.buf);
	if (lc->rmsg)
		protobuf_c_message_free_unpacked(lc->rmsg, NULL);
	rq_unref(lc->rq);
	lc_free(lc);
}

/* Close a scratch timer twice in a row, then run done: the second close
 * completes in a later close pass than anything closed before the first
 * (the loop_queue's async), so memory holding that handle may go. */
static void reap_step(uv_handle_t *h)
{
	struct reaper *r = container_of((uv_timer_t *)h, struct reaper, t);
	if (--r->hops > 0) {
		uv_timer_init(h->loop, &r->t);
		uv_close((uv_handle_t *)&r->t, reap_step);
		return;
	}
	r->done(r->arg);
}

static void reap_start(uv_loop_t *loop, struct reaper *r, void (*done)(void *), void *arg)
{
	r->hops = 2;
	r->done = done;
	r->arg = arg;
	uv_timer_init(loop, &r->t);
	uv_close((uv_handle_t *)&r->t, reap_step);
}

static void srv_arrive(struct loop_work *w);
static bool try_direct(struct lcall *lc);

/* ------------------------------------------------------------ client */

static void call_unlink(struct lcall *lc)
{
	struct local_chan *ch = lc->ch;
	if (lc->prev)
		lc->prev->next = lc->next;
	else
		ch->calls = lc->next;
	if (lc->next)
		lc->next->prev = lc->prev;
	lc->prev = lc->next = NULL;
	rpc_dl_del(&ch->base, &lc->dl);
	lc->done = true;
	atomic_store_explicit(&lc->gone, true, memory_order_release);
}

/* The client gives up on lc with status (deadline, close). */
static void call_abort(struct lcall *lc, int status, const char *message)
{
	struct local_chan *ch = lc->ch;
	call_unlink(lc);
	struct rpc_result res = { .status = status, .message = message };
	rpc_chan_complete(&ch->base, lc->cb, lc->ud, &res);
	lcall_unref(lc);
}

static void on_deadline(struct rpc_dl *d)
{
	call_abort(container_of(d, struct lcall, dl), RPC_DEADLINE_EXCEEDED, "deadline exceeded");
}

/* Client loop: an answer came back. Carries the server's reference. */
static void cli_answer(struct loop_work *w)
{
	struct lcall *lc = container_of(w, struct lcall, to_cli);
	if (!lc->done) {
		struct local_chan *ch = lc->ch;
		call_unlink(lc);
		const ProtobufCMessageDescriptor *out = lc->svc->methods[lc->method].output;
		ProtobufCMessage *given = lc->rmsg;
		lc->rmsg = NULL;
		if (given && lc->status == RPC_OK) {
			rpc_chan_deliver_given(&ch->base, out, lc->cb, lc->ud, given,
					       &lc->rpayload);
			lcall_unref(lc); /* the client's */
			lcall_unref(lc);
			return;
		}
		if (given)
			protobuf_c_message_free_unpacked(given, NULL);
		const uint8_t *m = lc->resp ? lc->resp->data + GRPC_PREFIX_BYTES : lc->rinline;
		size_t mlen = lc->resp ? lc->resp->len - GRPC_PREFIX_BYTES : lc->rlen;
		lc->arena.used = 0;
		rpc_chan_deliver_ex(&ch->base, out, lc->cb, lc->ud, lc->status, lc->message, m,
				    mlen, &lc->rpayload, &lc->arena.a, true);
		lcall_unref(lc); /* the client's */
	}
	lcall_unref(lc);
}

static void lc_call(struct rpc_channel *base, struct rpc_call_args *a)
{
	struct local_chan *ch = (struct local_chan *)base;
	const char *why = "out of memory";
	int status = RPC_RESOURCE_EXHAUSTED;
	struct lcall *lc = lc_new();
	if (!lc)
		goto fail;
	atomic_init(&lc->refs, 2);
	atomic_init(&lc->gone, false);
	lc->ch = ch;
	lc->cb = a->cb;
	lc->ud = a->ud;
	lc->svc = a->svc;
	lc->method = a->method;
	lc->reqbuf = a->req;
	lc->msg = a->msg;
	lc->hold = a->hold;
	lc->payload = a->payload;
	a->req = NULL;
	a->hold = NULL;
	a->payload.buf = NULL;
	lc->rq = ch->rq;
	atomic_fetch_add_explicit(&ch->rq->refs, 1, memory_order_relaxed);
	/* No id (the common case) costs one byte, not a padded copy. */
	size_t ilen = strnlen(a->request_id, RPC_MAX_REQUEST_ID);
	memcpy(lc->id, a->request_id, ilen);
	lc->id[ilen] = 0;
	if (a->timeout_ms) {
		lc->req.deadline_ms = loop_now_ms() + a->timeout_ms;
		if (rpc_dl_add(base, &lc->dl, a->timeout_ms, on_deadline))
			goto fail_lc;
	}
	int rc = -ENOENT;
	pthread_rwlock_rdlock(&reg_lk);
	for (struct rpc_local_server *ls = reg_head; ls; ls = ls->next) {
		if (strcmp(ls->name, base->target.name) == 0) {
			lc->ls = ls;
			/* Under reg_lk: the server unregisters before it
			 * closes its queue, so ls is alive here. */
			if (lc->msg && try_direct(lc))
				rc = 0;
			else
				rc = loop_queue_post(&ls->q, &lc->to_srv, srv_arrive);
			break;
		}
	}
	pthread_rwlock_unlock(&reg_lk);
	if (rc) {
		rpc_dl_del(base, &lc->dl);
		why = rc == -ENOENT ? "no such local server" : "local server closing";
		status = RPC_UNAVAILABLE;
		goto fail_lc;
	}
	lc->next = ch->calls;
	if (ch->calls)
		ch->calls->prev = lc;
	ch->calls = lc;
	return;

fail_lc:
	atomic_store(&lc->refs, 1);
	lcall_unref(lc);
fail:
	buf_unref(a->req);
	buf_unref(a->hold);
	buf_unref(a->payload.buf);
	base->npending--;
	rpc_chan_defer_fail(base, a->cb, a->ud, status, why);
}

static void chan_reaped(void *arg)
{
	struct local_chan *ch = arg;
	rq_unref(ch->rq);
	rpc_chan_unref(&ch->base);
}

static void lc_close(struct rpc_channel *base)
{
	struct local_chan *ch = (struct local_chan *)base;
	while (ch->calls)
		call_abort(ch->calls, RPC_CANCELLED, "channel closed");
	if (!ch->rq)
		return; /* failed open */
	loop_queue_close(&ch->rq->q, NULL); /* runs answers already posted */
	base->refs++;
	reap_start(base->loop, &ch->reaper, chan_reaped, ch);
}

static void chan_free(struct rpc_channel *base)
{
	free(base);
}

static const struct rpc_chan_ops local_chan_ops = {
	.call = lc_call,
	.close = lc_close,
	.free = chan_free,
};

struct rpc_channel *rpc_local_channel_open(uv_loop_t *loop, const char *target,
					   const struct rpc_target *t,
					   const struct rpc_channel_opts *opts)
{
	struct local_chan *ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	if (rpc_chan_init(&ch->base, &local_chan_ops, loop, target, t, opts)) {
		free(ch); /* only the strdup failed: no handle yet */
		return NULL;
	}
	struct local_rq *rq = calloc(1, sizeof(*rq));
	if (!rq)
		goto err_close;
	atomic_init(&rq->refs, 1);
	if (loop_queue_init(&rq->q, loop))
		goto err_rq;
	ch->rq = rq;
	return &ch->base;
err_rq:
	free(rq);
err_close:
	rpc_channel_close(&ch->base); /* frees once its timers are closed */
	return NULL;
}

/* ------------------------------------------------------------ server */

/* Server loop: post lc's answer (already stored) back to the client,
 * handing it the reference `ref` stands for. */
static void post_answer(struct lcall *lc)
{
	if (loop_queue_post(&lc->rq->q, &lc->to_cli, cli_answer) != 0)
		lcall_unref(lc); /* channel closed: nobody to tell */
}

static void live_unlink(struct lcall *lc)
{
	struct rpc_local_server *ls = lc->ls;
	if (lc->sprev)
		lc->sprev->snext = lc->snext;
	else
		ls->live = lc->snext;
	if (lc->snext)
		lc->snext->sprev = lc->sprev;
	lc->sprev = lc->snext = NULL;
}

/* Answer OK with resp packed into lc->rinline (or a buf when too big),
 * before the request (which resp may point into) is released. */
static void lreq_answer_msg(struct rpc_req *r, const ProtobufCMessage *resp,
			    const struct buf_slice *payload)
{
	struct lcall *lc = container_of(r, struct lcall, req);
	if (lc->early) {
		/* The caller was told already (server closed) and may be
		 * reading lc: write nothing of the answer, just release. */
		r->ops->answer(r, RPC_OK, "", NULL, NULL);
		return;
	}
	size_t n = resp ? protobuf_c_message_get_packed_size(resp) : 0;
	if (n <= sizeof(lc->rinline)) {
		lc->rlen = n ? protobuf_c_message_pack(resp, lc->rinline) : 0;
		r->ops->answer(r, RPC_OK, "", NULL, payload);
		return;
	}
	struct buf *b = rpc_pack(resp);
	if (!b)
		r->ops->answer(r, RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, NULL);
	else
		r->ops->answer(r, RPC_OK, "", b, payload);
}

/* Answer OK with resp itself (given: lcall frees it unless the caller
 * takes it). */
static void lreq_answer_give(struct rpc_req *r, ProtobufCMessage *resp,
			     const struct buf_slice *payload)
{
	struct lcall *lc = container_of(r, struct lcall, req);
	if (lc->early) {
		protobuf_c_message_free_unpacked(resp, NULL);
		r->ops->answer(r, RPC_OK, "", NULL, NULL);
		return;
	}
	lc->rmsg = resp;
	r->ops->answer(r, RPC_OK, "", NULL, payload);
}

static void lreq_answer(struct rpc_req *r, int status, const char *message, struct buf *resp,
			const struct buf_slice *payload)
{
	struct lcall *lc = container_of(r, struct lcall, req);
	struct rpc_server *srv = r->srv;
	/* payload may be r's own (an echo): take it before releasing r. */
	struct buf_slice pl = { 0 };
	if (payload) {
		pl = *payload;
		buf_ref(pl.buf);
	}
	rpc_req_release(r);
	if (lc->early || atomic_load_explicit(&lc->gone, memory_order_acquire)) {
		buf_unref(resp);
		buf_unref(pl.buf);
		if (!lc->early)
			live_unlink(lc);
		lcall_unref(lc);
		rpc_server_unref(srv);
		return;
	}
	live_unlink(lc);
	lc->status = status;
	strncpy(lc->message, message, sizeof(lc->message) - 1);
	lc->resp = resp;
	lc->rpayload = pl;
	post_answer(lc);
	rpc_server_unref(srv);
}

static bool lreq_gone(const struct rpc_req *r)
{
	const struct lcall *lc = container_of(r, struct lcall, req);
	return lc->early || atomic_load_explicit(&lc->gone, memory_order_acquire);
}

static const struct rpc_req_ops local_req_ops = {
	.answer = lreq_answer,
	.gone = lreq_gone,
	.answer_msg = lreq_answer_msg,
	.answer_give = lreq_answer_give,
};

/* Server loop: a call arrives. Carries the server's reference on lc. */
static void srv_arrive(struct loop_work *w)
{
	struct lcall *lc = container_of(w, struct lcall, to_srv);
	struct rpc_local_server *ls = lc->ls;
	struct rpc_server *srv = ls->srv;
	if (srv->closing) {
		lc->status = RPC_UNAVAILABLE;
		strcpy(lc->message, "server closing");
		post_answer(lc);
		return;
	}
	struct buf *rb = lc->reqbuf;
	lc->reqbuf = NULL;
	struct rpc_req *r = &lc->req;
	r->ops = &local_req_ops;
	r->srv = srv;
	r->m = rpc_server_find(srv, lc->svc, lc->method);
	r->id = lc->id;
	r->payload = lc->payload;
	r->in_memory = true;
	r->admit_slot = UINT32_MAX;   /* in process: no admission */
	lc->payload.buf = NULL;
	rpc_server_ref(srv);
	lc->snext = ls->live;
	if (ls->live)
		ls->live->sprev = lc;
	ls->live = lc;
	size_t len = rb ? rb->len - GRPC_PREFIX_BYTES : 0;
	if (lc->msg) {
		/* By reference: the hold goes with r, released when r is. */
		r->msg = (ProtobufCMessage *)lc->msg;
		r->msg_hold = lc->hold;
		lc->hold = NULL;
	}
	if (len > srv->opts.max_message_bytes ||
	    (r->payload.buf && r->payload.len > srv->opts.max_message_bytes))
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "request larger than max_message_bytes");
	else if (r->msg_hold)
		rpc_req_dispatch_msg(r);
	else
		rpc_req_dispatch(r, rb->data + GRPC_PREFIX_BYTES, len);
	buf_unref(rb);
}

/* ------------------------------------------------------------ direct
 *
 * A method with a direct handler (rpc_server_set_direct) is first offered
 * the call on the caller's thread, under reg_lk read-locked. If it answers,
 * the answer takes the way a posted one does (into lc, then post_answer to
 * the channel's queue: the caller's own loop, so no eventfd), and only the
 * server's loop was never involved: no live list, no server reference
 * (reg_lk keeps the server registered meanwhile, and nothing of it is
 * touched after). The call's deadline and callback are the client side's,
 * unchanged. */

static void dreq_answer(struct rpc_req *r, int status, const char *message, struct buf *resp,
			const struct buf_slice *payload)
{
	struct lcall *lc = container_of(r, struct lcall, req);
	struct buf_slice pl = { 0 };
	if (payload) {
		pl = *payload;
		buf_ref(pl.buf);
	}
	rpc_req_release(r);
	lc->status = status;
	strncpy(lc->message, message, sizeof(lc->message) - 1);
	lc->resp = resp;
	lc->rpayload = pl;
	lc->direct_answered = true;
}

static bool dreq_gone(const struct rpc_req *r)
{
	(void)r;
	return false; /* the caller is inside rpc_call_ref */
}

static const struct rpc_req_ops direct_req_ops = {
	.answer = dreq_answer,
	.gone = dreq_gone,
	.answer_msg = lreq_answer_msg,
	.answer_give = lreq_answer_give,
};

/* Caller's thread, reg_lk read-locked, lc->ls found: true when the method's
 * direct handler answered (the answer is posted to the caller's loop);
 * false with lc as it was, to be posted to the server. */
static bool try_direct(struct lcall *lc)
{
	struct rpc_server *srv = lc->ls->srv;
	const struct rpc_method *m = rpc_server_find(srv, lc->svc, lc->method);
	if (!m || !m->direct || !m->fn)
		return false;
	if (lc->payload.buf && lc->payload.len > srv->opts.max_message_bytes)
		return false;
	struct rpc_req *r = &lc->req;
	r->ops = &direct_req_ops;
	r->srv = srv;
	r->m = m;
	r->id = lc->id;
	r->msg = (ProtobufCMessage *)lc->msg;
	r->msg_hold = lc->hold;
	r->payload = lc->payload;
	r->in_memory = true;
	r->admit_slot = UINT32_MAX;
	r->t0_ns = srv->opts.log_calls ? loop_now_ns() : 0;
	lc->direct_answered = false;
	if (!m->direct(r, m->ud)) {
		/* Untouched: srv_arrive sets r up again from lc. */
		r->msg = NULL;
		r->msg_hold = NULL;
		return false;
	}
	/* The handler answered, which released the hold and the payload. */
	IOL_ASSERT(lc->direct_answered); /* the contract of rpc_direct_fn */
	lc->hold = NULL;
	lc->payload.buf = NULL;
	post_answer(lc); /* the server's reference goes with it */
	return true;
}

int rpc_local_listen(struct rpc_server *srv, const char *name)
{
	if (srv->local)
		return -EALREADY;
	size_t n = strlen(name);
	struct rpc_local_server *ls = calloc(1, sizeof(*ls) + n + 1);
	if (!ls)
		return -ENOMEM;
	memcpy(ls->name, name, n + 1);
	ls->srv = srv;
	int rc = loop_queue_init(&ls->q, srv->loop);
	if (rc) {
		free(ls);
		return rc;
	}
	pthread_rwlock_wrlock(&reg_lk);
	for (struct rpc_local_server *o = reg_head; o; o = o->next)
		if (strcmp(o->name, name) == 0)
			rc = -EEXIST;
	if (!rc) {
		ls->next = reg_head;
		reg_head = ls;
	}
	pthread_rwlock_unlock(&reg_lk);
	if (rc) {
		/* Nobody can have posted: close and free after the passes. */
		srv->local = ls;
		rpc_local_server_close(srv);
		return rc;
	}
	srv->local = ls;
	return 0;
}

static void server_reaped(void *arg)
{
	struct rpc_local_server *ls = arg;
	struct rpc_server *srv = ls->srv;
	free(ls);
	rpc_server_unref(srv);
}

void rpc_local_server_close(struct rpc_server *srv)
{
	struct rpc_local_server *ls = srv->local;
	if (!ls)
		return;
	srv->local = NULL;
	/* Waits for direct handlers still running on callers' threads: none
	 * reaches this server once this returns. */
	pthread_rwlock_wrlock(&reg_lk);
	for (struct rpc_local_server **pp = &reg_head; *pp; pp = &(*pp)->next) {
		if (*pp == ls) {
			*pp = ls->next;
			break;
		}
	}
	pthread_rwlock_unlock(&reg_lk);
	/* Calls already queued run now and see srv->closing. */
	loop_queue_close(&ls->q, NULL);
	/* Callers of calls still in handlers learn now; the handler's answer
	 * later only frees. */
	while (ls->live) {
		struct lcall *lc = ls->live;
		live_unlink(lc);
		lc->early = true;
		lc->status = RPC_UNAVAILABLE;
		strcpy(lc->message, "server closed");
		atomic_fetch_add_explicit(&lc->refs, 1, memory_order_relaxed);
		post_answer(lc);
	}
	rpc_server_ref(srv);
	reap_start(srv->loop, &ls->reaper, server_reaped, ls);
}
