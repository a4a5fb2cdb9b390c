/*
 * rpc.c — the transport-independent half of the RPC layer: status names,
 * targets, the common parts of channels (deferred completions, deadline
 * heap, unpacking of answers) and servers (the method table, dispatch into
 * handlers, rpc_respond / rpc_fail), and the split into transports.
 *
 * Threads: a channel's state is touched only on its loop, a server's only
 * on its loop; nothing here locks. The transports do the crossing.
 *
 * Invariants: a call's callback runs exactly once and never inside
 * rpc_call(); a failure detected while accepting a call goes through the
 * deferred list, drained by a zero timer on the next loop turn. Method
 * lookup on the server is one hash of the :path bytes and one compare: the
 * table is built once by rpc_server_add_service and never rebuilt per call.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/rpc_internal.h"

const char *rpc_status_name(int status)
{
	switch (status) {
#define RPC_STATUS_CASE(name, code) \
	case code: return #name;
		RPC_STATUSES(RPC_STATUS_CASE)
#undef RPC_STATUS_CASE
	}
	return "UNKNOWN";
}

/* ------------------------------------------------------------ targets */

int rpc_target_parse(const char *s, struct rpc_target *t)
{
	memset(t, 0, sizeof(*t));
	if (!s)
		return -EINVAL;
	if (strncmp(s, "local:", 6) == 0) {
		if (s[6] == 0)
			return -EINVAL;
		t->kind = RPC_TARGET_LOCAL;
		t->name = s + 6;
		return 0;
	}
	const char *colon, *host = s;
	size_t hlen;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		host = s + 1;
		hlen = (size_t)(end - host);
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= sizeof(t->host))
		return -EINVAL;
	char *endp;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &endp, 10);
	if (colon[1] == 0 || *endp != 0 || errno || port > 65535)
		return -EINVAL;
	memcpy(t->host, host, hlen);
	t->host[hlen] = 0;
	t->port = (uint16_t)port;
	t->kind = RPC_TARGET_TCP;
	return 0;
}

int rpc_target_sockaddr(const struct rpc_target *t, struct sockaddr_storage *ss)
{
	const char *host = strcmp(t->host, "localhost") == 0 ? "127.0.0.1" : t->host;
	memset(ss, 0, sizeof(*ss));
	if (uv_ip4_addr(host, t->port, (struct sockaddr_in *)ss) == 0)
		return 0;
	if (uv_ip6_addr(host, t->port, (struct sockaddr_in6 *)ss) == 0)
		return 0;
	return -EINVAL;
}

struct buf *rpc_pack(const ProtobufCMessage *m)
{
	size_t n = m ? protobuf_c_message_get_packed_size(m) : 0;
	if (n > UINT32_MAX - GRPC_PREFIX_BYTES)
		return NULL;
	struct buf *b = buf_new(GRPC_PREFIX_BYTES + n);
	if (!b)
		return NULL;
	grpc_prefix_put(b->data, (uint32_t)n);
	if (m)
		protobuf_c_message_pack(m, b->data + GRPC_PREFIX_BYTES);
	b->len = GRPC_PREFIX_BYTES + n;
	return b;
}

/* ------------------------------------------------------------ channels */

struct rpc_deferred {
	struct rpc_deferred *next;
	rpc_call_cb cb;
	void *ud;
	int status;
	char message[];
};

static void on_handle_closed(uv_handle_t *h)
{
	rpc_chan_unref(h->data);
}

static void run_deferred(struct rpc_channel *ch)
{
	while (ch->dhead) {
		struct rpc_deferred *d = ch->dhead;
		ch->dhead = d->next;
		if (!ch->dhead)
			ch->dtail = NULL;
		struct rpc_result res = { .status = d->status, .message = d->message };
		d->cb(d->ud, &res);
		free(d);
	}
}

static void on_defer_timer(uv_timer_t *t)
{
	run_deferred(t->data);
}

void rpc_chan_defer_fail(struct rpc_channel *ch, rpc_call_cb cb, void *ud, int status,
			 const char *message)
{
	size_t n = strlen(message);
	struct rpc_deferred *d = malloc(sizeof(*d) + n + 1);
	if (!d) {
		/* Out of memory: breaking "never inside rpc_call" is better
		 * than never answering. */
		struct rpc_result res = { .status = RPC_RESOURCE_EXHAUSTED, .message = "out of memory" };
		cb(ud, &res);
		return;
	}
	d->next = NULL;
	d->cb = cb;
	d->ud = ud;
	d->status = status;
	memcpy(d->message, message, n + 1);
	if (ch->dtail)
		ch->dtail->next = d;
	else
		ch->dhead = d;
	ch->dtail = d;
	if (!ch->closing)
		uv_timer_start(&ch->defer_timer, on_defer_timer, 0, 0);
}

void rpc_chan_complete(struct rpc_channel *ch, rpc_call_cb cb, void *ud,
		       const struct rpc_result *res)
{
	ch->npending--;
	cb(ud, res);
}

void rpc_chan_deliver(struct rpc_channel *ch, const ProtobufCMessageDescriptor *out,
		      rpc_call_cb cb, void *ud, int status, const char *message,
		      const uint8_t *msg, size_t msg_len, const struct buf_slice *payload)
{
	rpc_chan_deliver_ex(ch, out, cb, ud, status, message, msg, msg_len, payload, NULL, false);
}

void rpc_chan_deliver_ex(struct rpc_channel *ch, const ProtobufCMessageDescriptor *out,
			 rpc_call_cb cb, void *ud, int status, const char *message,
			 const uint8_t *msg, size_t msg_len, const struct buf_slice *payload,
			 ProtobufCAllocator *alloc, bool in_memory)
{
	struct rpc_result res = { .status = status, .message = message ? message : "",
				  .in_memory = in_memory };
	ProtobufCMessage *resp = NULL;
	if (status == RPC_OK) {
		if (msg_len > ch->opts.max_message_bytes ||
		    (payload && payload->len > ch->opts.max_message_bytes)) {
			res.status = RPC_RESOURCE_EXHAUSTED;
			res.message = "response larger than max_message_bytes";
		} else if (!(resp = protobuf_c_message_unpack(out, alloc, msg_len, msg))) {
			res.status = RPC_INTERNAL;
			res.message = "cannot parse response message";
		} else {
			res.resp = resp;
			if (payload && payload->buf)
				res.payload = *payload;
		}
	}
	rpc_chan_complete(ch, cb, ud, &res);
	if (resp)
		protobuf_c_message_free_unpacked(resp, alloc);
}

/* The answer rpc_answer_take may hand over: set by rpc_chan_deliver_given
 * for the length of its callback, on that callback's thread. */
static _Thread_local ProtobufCMessage *given_answer;

void rpc_chan_deliver_given(struct rpc_channel *ch, const ProtobufCMessageDescriptor *out,
			    rpc_call_cb cb, void *ud, ProtobufCMessage *msg,
			    const struct buf_slice *payload)
{
	if (msg->descriptor != out) {
		protobuf_c_message_free_unpacked(msg, NULL);
		struct rpc_result bad = { .status = RPC_INTERNAL,
					  .message = "answer of another message type" };
		rpc_chan_complete(ch, cb, ud, &bad);
		return;
	}
	struct rpc_result res = { .status = RPC_OK, .message = "", .resp = msg,
				  .in_memory = true };
	if (payload && payload->buf)
		res.payload = *payload;
	ProtobufCMessage *outer = given_answer;  /* a callback's nested delivery */
	given_answer = msg;
	rpc_chan_complete(ch, cb, ud, &res);
	if (given_answer == msg)
		protobuf_c_message_free_unpacked(msg, NULL);
	given_answer = outer;
}

ProtobufCMessage *rpc_answer_take(const ProtobufCMessage *resp)
{
	if (!resp || resp != given_answer)
		return NULL;
	given_answer = NULL;
	return (ProtobufCMessage *)resp;
}

int rpc_chan_init(struct rpc_channel *ch, const struct rpc_chan_ops *ops, uv_loop_t *loop,
		  const char *target, const struct rpc_target *t,
		  const struct rpc_channel_opts *opts)
{
	ch->ops = ops;
	ch->loop = loop;
	ch->target = *t;
	if (opts)
		ch->opts = *opts;
	if (!ch->opts.connect_timeout_ms)
		ch->opts.connect_timeout_ms = 3000;
	if (!ch->opts.backoff_min_ms)
		ch->opts.backoff_min_ms = 50;
	if (!ch->opts.backoff_max_ms)
		ch->opts.backoff_max_ms = 2000;
	if (ch->opts.backoff_max_ms < ch->opts.backoff_min_ms)
		ch->opts.backoff_max_ms = ch->opts.backoff_min_ms;
	if (!ch->opts.max_message_bytes)
		ch->opts.max_message_bytes = RPC_DEFAULT_MAX_MESSAGE;
	if (!ch->opts.max_pending_calls)
		ch->opts.max_pending_calls = 65536;
	struct rpc_health_opts h;
	rpc_health_defaults(&h);
	if (!ch->opts.ping_busy_ms)
		ch->opts.ping_busy_ms = h.ping_busy_ms;
	if (!ch->opts.ping_idle_ms)
		ch->opts.ping_idle_ms = h.ping_idle_ms;
	if (!ch->opts.ping_timeout_ms)
		ch->opts.ping_timeout_ms = h.ping_timeout_ms;
	ch->target_str = strdup(target);
	if (!ch->target_str)
		return -ENOMEM;
	if (t->kind == RPC_TARGET_LOCAL)
		ch->target.name = ch->target_str + (t->name - target);
	else
		ch->peer = rpc_peer_get(target);
	uv_timer_init(loop, &ch->defer_timer);
	uv_timer_init(loop, &ch->dl_timer);
	ch->defer_timer.data = ch->dl_timer.data = ch;
	ch->refs = 1;
	return 0;
}

void rpc_chan_unref(struct rpc_channel *ch)
{
	if (--ch->refs > 0)
		return;
	free(ch->dl_heap);
	free(ch->target_str);
	ch->ops->free(ch);
}

struct rpc_channel *rpc_channel_open(uv_loop_t *loop, const char *target,
				     const struct rpc_channel_opts *opts)
{
	struct rpc_target t;
	if (rpc_target_parse(target, &t))
		return NULL;
	struct rpc_channel *ch = t.kind == RPC_TARGET_LOCAL
					 ? rpc_local_channel_open(loop, target, &t, opts)
					 : rpc_h2_channel_open(loop, target, &t, opts);
	/* Tests only (--debug-fault): the one check the fault layer costs. */
	if (ch && atomic_load_explicit(&rpc_fault_armed, memory_order_relaxed))
		rpc_fault_wrap(ch);
	return ch;
}

const char *rpc_channel_target(const struct rpc_channel *ch)
{
	return ch->target_str;
}

void rpc_channel_close(struct rpc_channel *ch)
{
	if (ch->closing)
		return;
	ch->closing = true;
	ch->ops->close(ch);  /* pending calls: CANCELLED, now */
	run_deferred(ch);
	ch->dl_len = 0;
	/* Each handle holds a reference until its close callback. */
	ch->refs += 2;
	uv_close((uv_handle_t *)&ch->defer_timer, on_handle_closed);
	uv_close((uv_handle_t *)&ch->dl_timer, on_handle_closed);
	rpc_chan_unref(ch);
}

static void call_start(struct rpc_channel *ch, const ProtobufCServiceDescriptor *svc,
		       unsigned method, const ProtobufCMessage *req, struct buf *hold,
		       const struct buf_slice *payload, const struct rpc_call_opts *opts,
		       rpc_call_cb cb, void *ud)
{
	if (ch->closing) {
		/* Contract violation, but answer rather than hang. */
		struct rpc_result res = { .status = RPC_CANCELLED, .message = "channel closed" };
		cb(ud, &res);
		return;
	}
	if (!svc || method >= svc->n_methods || !req ||
	    req->descriptor != svc->methods[method].input) {
		rpc_chan_defer_fail(ch, cb, ud, RPC_INVALID_ARGUMENT, "bad method or request type");
		return;
	}
	if (ch->npending >= ch->opts.max_pending_calls) {
		rpc_chan_defer_fail(ch, cb, ud, RPC_RESOURCE_EXHAUSTED, "too many pending calls");
		return;
	}
	struct rpc_call_args a = {
		.svc = svc,
		.method = method,
		.timeout_ms = opts ? opts->timeout_ms : 0,
		.request_id = opts && opts->request_id ? opts->request_id : "",
		.cb = cb,
		.ud = ud,
	};
	/* By reference only where both ends share this memory and nothing in
	 * between (the fault layer) needs the packed bytes. */
	if (hold && ch->target.kind == RPC_TARGET_LOCAL && !ch->fault_inner) {
		a.msg = req;
		a.hold = buf_ref(hold);
	} else if (!(a.req = rpc_pack(req))) {
		rpc_chan_defer_fail(ch, cb, ud, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	if (payload && payload->buf) {
		a.payload = *payload;
		buf_ref(payload->buf);
	}
	ch->npending++;
	ch->ops->call(ch, &a);
}

void rpc_call(struct rpc_channel *ch, const ProtobufCServiceDescriptor *svc, unsigned method,
	      const ProtobufCMessage *req, const struct buf_slice *payload,
	      const struct rpc_call_opts *opts, rpc_call_cb cb, void *ud)
{
	call_start(ch, svc, method, req, NULL, payload, opts, cb, ud);
}

void rpc_call_ref(struct rpc_channel *ch, const ProtobufCServiceDescriptor *svc,
		  unsigned method, const ProtobufCMessage *req, struct buf *hold,
		  const struct buf_slice *payload, const struct rpc_call_opts *opts,
		  rpc_call_cb cb, void *ud)
{
	call_start(ch, svc, method, req, hold, payload, opts, cb, ud);
}

/* ------------------------------------------------------------ deadlines */

static void dl_swap(struct rpc_channel *ch, uint32_t i, uint32_t j)
{
	struct rpc_dl *a = ch->dl_heap[i], *b = ch->dl_heap[j];
	ch->dl_heap[i] = b;
	ch->dl_heap[j] = a;
	b->idx = i;
	a->idx = j;
}

static void dl_up(struct rpc_channel *ch, uint32_t i)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (ch->dl_heap[p]->at_ms <= ch->dl_heap[i]->at_ms)
			break;
		dl_swap(ch, i, p);
		i = p;
	}
}

static void dl_down(struct rpc_channel *ch, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < ch->dl_len && ch->dl_heap[l]->at_ms < ch->dl_heap[m]->at_ms)
			m = l;
		if (r < ch->dl_len && ch->dl_heap[r]->at_ms < ch->dl_heap[m]->at_ms)
			m = r;
		if (m == i)
			return;
		dl_swap(ch, i, m);
		i = m;
	}
}

static void on_dl_timer(uv_timer_t *t);

/* Keep dl_timer armed for the earliest deadline. uv timers run on the
 * loop's cached clock, which lags loop_now_ms(): arming from uv_now() can
 * only fire late, never early; refreshing it first keeps "late" small. */
static void dl_arm(struct rpc_channel *ch)
{
	if (ch->closing)
		return;
	if (ch->dl_len == 0) {
		uv_timer_stop(&ch->dl_timer);
		ch->dl_armed_ms = 0;
		return;
	}
	uint64_t at = ch->dl_heap[0]->at_ms;
	if (ch->dl_armed_ms == at)
		return;
	uv_update_time(ch->loop); /* one clock_gettime: do not fire late */
	uint64_t now = uv_now(ch->loop);
	uv_timer_start(&ch->dl_timer, on_dl_timer, at > now ? at - now : 0, 0);
	ch->dl_armed_ms = at;
}

static void on_dl_timer(uv_timer_t *t)
{
	struct rpc_channel *ch = t->data;
	uint64_t now = loop_now_ms();
	ch->dl_armed_ms = 0;
	while (!ch->closing && ch->dl_len > 0 && ch->dl_heap[0]->at_ms <= now) {
		struct rpc_dl *d = ch->dl_heap[0];
		rpc_dl_del(ch, d);
		d->fire(d); /* may add or delete other deadlines */
	}
	dl_arm(ch);
}

int rpc_dl_add(struct rpc_channel *ch, struct rpc_dl *d, uint32_t timeout_ms,
	       void (*fire)(struct rpc_dl *d))
{
	if (ch->dl_len == ch->dl_cap) {
		uint32_t cap = ch->dl_cap ? 2 * ch->dl_cap : 64;
		struct rpc_dl **h = realloc(ch->dl_heap, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		ch->dl_heap = h;
		ch->dl_cap = cap;
	}
	d->at_ms = loop_now_ms() + timeout_ms;
	d->fire = fire;
	d->idx = ch->dl_len;
	ch->dl_heap[ch->dl_len++] = d;
	dl_up(ch, d->idx);
	dl_arm(ch);
	return 0;
}

void rpc_dl_del(struct rpc_channel *ch, struct rpc_dl *d)
{
	if (!d->at_ms || ch->closing)
		return;
	uint32_t i = d->idx, last = --ch->dl_len;
	if (i != last) {
		struct rpc_dl *x = ch->dl_heap[last];
		ch->dl_heap[i] = x;
		x->idx = i;
		dl_up(ch, i);
		dl_down(ch, x->idx);
	}
	d->at_ms = 0;
	/* An earlier deadline going away leaves the timer early: harmless,
	 * it re-arms when it fires. An empty heap stops it. */
	if (ch->dl_len == 0 && ch->dl_armed_ms) {
		uv_timer_stop(&ch->dl_timer);
		ch->dl_armed_ms = 0;
	}
}

/* ------------------------------------------------------------ servers */

struct rpc_server *rpc_server_new(uv_loop_t *loop, const struct rpc_server_opts *opts)
{
	struct rpc_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return NULL;
	srv->loop = loop;
	if (opts)
		srv->opts = *opts;
	if (!srv->opts.max_message_bytes)
		srv->opts.max_message_bytes = RPC_DEFAULT_MAX_MESSAGE;
	if (!srv->opts.max_streams)
		srv->opts.max_streams = 1024;
	srv->refs = 1;
	return srv;
}

const struct rpc_method *rpc_server_find_path(const struct rpc_server *srv, const uint8_t *path,
					      size_t len)
{
	if (!srv->slots)
		return NULL;
	uint32_t h = hash_fnv1a(path, len);
	for (uint32_t i = h & srv->slot_mask;; i = (i + 1) & srv->slot_mask) {
		uint32_t s = srv->slots[i];
		if (!s)
			return NULL;
		const struct rpc_method *m = &srv->methods[s - 1];
		if (m->hash == h && m->path_len == len && memcmp(m->path, path, len) == 0)
			return m;
	}
}

const struct rpc_method *rpc_server_find(const struct rpc_server *srv,
					 const ProtobufCServiceDescriptor *svc, unsigned index)
{
	/* Services are few: a scan by descriptor, then the index. */
	for (uint32_t i = 0; i < srv->nmethods; i++) {
		const struct rpc_method *m = &srv->methods[i];
		if (m->svc == svc || strcmp(m->svc->name, svc->name) == 0) {
			if (index >= m->svc->n_methods)
				return NULL;
			return m + index; /* a service's methods are consecutive */
		}
	}
	return NULL;
}

static int rebuild_slots(struct rpc_server *srv)
{
	uint32_t n = 16;
	while (n < 2 * srv->nmethods)
		n *= 2;
	uint32_t *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < srv->nmethods; i++) {
		uint32_t j = srv->methods[i].hash & (n - 1);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = i + 1;
	}
	free(srv->slots);
	srv->slots = slots;
	srv->slot_mask = n - 1;
	return 0;
}

int rpc_server_add_service(struct rpc_server *srv, const ProtobufCServiceDescriptor *svc,
			   const rpc_handler_fn *handlers, void *ud)
{
	for (uint32_t i = 0; i < srv->nmethods; i++)
		if (strcmp(srv->methods[i].svc->name, svc->name) == 0)
			return -EEXIST;
	uint32_t n = srv->nmethods + svc->n_methods;
	struct rpc_method *ms = realloc(srv->methods, n * sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	srv->methods = ms;
	for (unsigned i = 0; i < svc->n_methods; i++) {
		struct rpc_method *m = &ms[srv->nmethods + i];
		int len = asprintf(&m->path, "/%s/%s", svc->name, svc->methods[i].name);
		if (len < 0) {
			while (i-- > 0)
				free(ms[srv->nmethods + i].path);
			return -ENOMEM;
		}
		m->path_len = (uint32_t)len;
		m->hash = hash_fnv1a(m->path, (size_t)len);
		m->svc = svc;
		m->index = i;
		m->fn = handlers ? handlers[i] : NULL;
		m->direct = NULL;
		m->ud = ud;
	}
	uint32_t old = srv->nmethods;
	srv->nmethods = n;
	int rc = rebuild_slots(srv);
	if (rc) {
		for (uint32_t i = old; i < n; i++)
			free(ms[i].path);
		srv->nmethods = old;
	}
	return rc;
}

int rpc_server_set_direct(struct rpc_server *srv, const ProtobufCServiceDescriptor *svc,
			  unsigned method, rpc_direct_fn fn)
{
	struct rpc_method *m = (struct rpc_method *)rpc_server_find(srv, svc, method);
	if (!m)
		return -ENOENT;
	m->direct = fn;
	return 0;
}

int rpc_server_listen(struct rpc_server *srv, const char *addr)
{
	struct rpc_target t;
	if (srv->closing || rpc_target_parse(addr, &t))
		return -EINVAL;
	if (t.kind == RPC_TARGET_LOCAL)
		return rpc_local_listen(srv, t.name);
	return rpc_h2_listen(srv, &t);
}

int rpc_server_port(const struct rpc_server *srv)
{
	return rpc_h2_port(srv);
}

int rpc_server_adopt(struct rpc_server *srv, int fd)
{
	if (srv->closing) {
		close(fd);
		return -ESHUTDOWN;
	}
	return rpc_h2_adopt(srv, fd);
}

uint32_t rpc_server_conns(const struct rpc_server *srv)
{
	return atomic_load_explicit(&srv->tcp_conns, memory_order_relaxed);
}

void rpc_server_ref(struct rpc_server *srv)
{
	srv->refs++;
}

void rpc_server_unref(struct rpc_server *srv)
{
	if (--srv->refs > 0)
		return;
	for (uint32_t i = 0; i < srv->nmethods; i++)
		free(srv->methods[i].path);
	free(srv->methods);
	free(srv->slots);
	free(srv);
}

void rpc_server_close(struct rpc_server *srv)
{
	if (srv->closing)
		return;
	srv->closing = true;
	rpc_local_server_close(srv);
	rpc_h2_server_close(srv);
	rpc_server_unref(srv);
}

/* ------------------------------------------------------------ requests */

const ProtobufCMessage *rpc_req_msg(const struct rpc_req *r)
{
	return r->msg;
}

const struct buf_slice *rpc_req_payload(const struct rpc_req *r)
{
	return &r->payload;
}

bool rpc_req_payload_in_memory(const struct rpc_req *r)
{
	return r->in_memory;
}

const char *rpc_req_id(const struct rpc_req *r)
{
	return r->id;
}

void rpc_req_long_poll(struct rpc_req *r)
{
	r->t0_ns = 0;
}

uint32_t rpc_req_admit_slot(const struct rpc_req *r)
{
	return r->admit_slot;
}

void **rpc_req_conn_data(struct rpc_req *r)
{
	return r->ops->conn_data ? r->ops->conn_data(r) : NULL;
}

uint64_t rpc_req_deadline_ms(const struct rpc_req *r)
{
	return r->deadline_ms;
}

int rpc_req_cancelled(const struct rpc_req *r)
{
	if (r->ops->gone(r))
		return 1;
	return r->deadline_ms && loop_now_ms() >= r->deadline_ms;
}

void rpc_req_release(struct rpc_req *r)
{
	if (r->msg_hold)
		buf_unref(r->msg_hold); /* the caller's message: let go of it */
	else if (r->msg)
		protobuf_c_message_free_unpacked(r->msg, NULL);
	r->msg = NULL;
	r->msg_hold = NULL;
	buf_unref(r->payload.buf);
	r->payload.buf = NULL;
}

void rpc_req_dispatch(struct rpc_req *r, const uint8_t *msg, size_t len)
{
	const struct rpc_method *m = r->m;
	if (!m || !m->fn) {
		rpc_fail(r, RPC_UNIMPLEMENTED, "method not implemented");
		return;
	}
	if (r->srv->opts.log_calls)
		r->t0_ns = loop_now_ns();
	r->msg = protobuf_c_message_unpack(m->svc->methods[m->index].input, NULL, len, msg);
	if (!r->msg) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "cannot parse request message");
		return;
	}
	m->fn(r, m->ud);
}

void rpc_req_dispatch_msg(struct rpc_req *r)
{
	const struct rpc_method *m = r->m;
	if (!m || !m->fn) {
		rpc_fail(r, RPC_UNIMPLEMENTED, "method not implemented");
		return;
	}
	if (r->srv->opts.log_calls)
		r->t0_ns = loop_now_ns();
	m->fn(r, m->ud);
}

/* The call log (rpc_server_opts.log_calls): a slow call, or a failure. */
static void log_call(const struct rpc_req *r, int status, const char *text)
{
	const struct rpc_method *m = r->m;
	const char *method = m ? m->svc->methods[m->index].name : "?";
	uint64_t ms = r->t0_ns ? (loop_now_ns() - r->t0_ns) / 1000000 : 0;
	bool own = status == RPC_INTERNAL || status == RPC_DATA_LOSS || status == RPC_UNKNOWN;
	if (r->t0_ns && ms >= r->srv->opts.slow_call_ms)
		LOG_WARN_REQ(r->id, "slow call", "method=%s ms=%llu status=%s msg=%s", method,
			     (unsigned long long)ms, rpc_status_name(status), LOG_Q(text));
	else if (status != RPC_OK)
		LOG_AT(own ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG, r->id, "call failed",
		       "method=%s ms=%llu status=%s msg=%s", method, (unsigned long long)ms,
		       rpc_status_name(status), LOG_Q(text));
}

void rpc_respond(struct rpc_req *r, const ProtobufCMessage *resp, const struct buf_slice *payload)
{
	if (r->srv->opts.log_calls)
		log_call(r, RPC_OK, "");
	if (r->ops->gone(r)) {
		r->ops->answer(r, RPC_CANCELLED, "", NULL, NULL);
		return;
	}
	if (r->ops->answer_msg) {
		r->ops->answer_msg(r, resp, payload && payload->buf ? payload : NULL);
		return;
	}
	struct buf *b = rpc_pack(resp);
	if (!b) {
		r->ops->answer(r, RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, NULL);
		return;
	}
	r->ops->answer(r, RPC_OK, "", b, payload && payload->buf ? payload : NULL);
}

void rpc_respond_give(struct rpc_req *r, ProtobufCMessage *resp, const struct buf_slice *payload)
{
	if (!r->ops->answer_give || r->ops->gone(r)) {
		rpc_respond(r, resp, payload);
		protobuf_c_message_free_unpacked(resp, NULL);
		return;
	}
	if (r->srv->opts.log_calls)
		log_call(r, RPC_OK, "");
	r->ops->answer_give(r, resp, payload && payload->buf ? payload : NULL);
}

void rpc_fail(struct rpc_req *r, int status, const char *fmt, ...)
{
	char text[RPC_MAX_MESSAGE_TEXT];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (status == RPC_OK)
		status = RPC_UNKNOWN; /* a failure must not read as success */
	if (r->srv->opts.log_calls)
		log_call(r, status, text);
	r->ops->answer(r, status, text, NULL, NULL);
}
