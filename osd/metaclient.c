/*
 * metaclient.c — probe the meta addresses; register and heartbeat while
 * they are reachable (contract in metaclient.h).
 *
 * Owns: one timer (the next attempt, or the running attempt's timeout), at
 * most one getaddrinfo request and one TCP handle at a time, and a
 * meta_client with at most one RegisterOsd or Heartbeat outstanding. One attempt
 * runs at a time: phase IDLE -> RESOLVE -> CONNECT -> IDLE (a "local:"
 * target is reached at once, without a phase); the outcome is
 * decided in the request callbacks only, so a timeout cancels (uv_cancel,
 * uv_close) and the callback that follows reports it.
 * Thread: the owner's loop. Logs (warn on each failure, info on recovery).
 */
#include "osd/metaclient.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "common/tcp_self.h"
#include "meta/client.h"

enum phase { PH_IDLE, PH_RESOLVE, PH_CONNECT };

struct target {
	bool local;           /* "local:NAME": in process, nothing to probe */
	char host[256];
	char port[8];
	char text[280];
};

struct osd_metaclient {
	uv_loop_t *loop;
	struct target *t;
	size_t nt, cur;
	uint32_t osd_id;
	char listen[128];
	char host[256];
	uint64_t capacity;
	struct meta_client *meta;
	bool registered;
	bool call_out;             /* a RegisterOsd or Heartbeat is outstanding */
	uint64_t beats;
	uint32_t timeout_ms, bmin_ms, bmax_ms, hb_ms;
	uint32_t backoff_ms;
	uint32_t failures;
	bool reachable;
	void (*on_registered_cb)(void *arg, uint32_t osd_id);
	void *cb_arg;

	enum phase phase;
	bool timed_out;
	uv_timer_t timer;
	bool timer_open;
	uv_getaddrinfo_t gai;
	uv_tcp_t tcp;
	bool tcp_open;
	uv_connect_t creq;

	bool stopping;
	void (*done_cb)(void *arg);
	void *done_arg;
};

static void attempt(struct osd_metaclient *mc);

static void on_retry(uv_timer_t *t)
{
	attempt(t->data);
}

/* "host:port" or "[v6]:port". */
static int parse_target(const char *s, struct target *t)
{
	t->local = false;
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || !colon[1] || strlen(colon + 1) >= sizeof(t->port))
		return -EINVAL;
	const char *h = s;
	size_t hl = (size_t)(colon - s);
	if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(t->host))
		return -EINVAL;
	for (const char *p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	memcpy(t->host, h, hl);
	t->host[hl] = '\0';
	snprintf(t->port, sizeof(t->port), "%s", colon + 1);
	snprintf(t->text, sizeof(t->text), "%s", s);
	return 0;
}

static void maybe_done(struct osd_metaclient *mc)
{
	if (!mc->stopping || mc->timer_open || mc->tcp_open || mc->phase != PH_IDLE)
		return;
	void (*cb)(void *) = mc->done_cb;
	void *arg = mc->done_arg;
	free(mc->t);
	free(mc);
	if (cb)
		cb(arg);
}

static void on_registered(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct osd_metaclient *mc = ud;
	mc->call_out = false;
	if (mc->stopping)
		return;
	if (!err && res->status == IOLAKE__META__STATUS__STATUS_OK) {
		mc->registered = true;
		LOG_INFO("registered with meta", "osd=%u addr=%s host=%s", mc->osd_id,
			 LOG_Q(mc->listen), LOG_Q(mc->host));
		if (mc->on_registered_cb)
			mc->on_registered_cb(mc->cb_arg, mc->osd_id);
		return;
	}
	LOG_WARN("registration failed; retrying", "osd=%u err=%s status=%d", mc->osd_id,
		 LOG_Q(iol_strerror(err)), err ? -1 : (int)res->status);
}

static void on_beat(void *ud, int err, const ProtobufCMessage *resp)
{
	struct osd_metaclient *mc = ud;
	mc->call_out = false;
	if (mc->stopping)
		return;
	const Iolake__Meta__HeartbeatResponse *r = (const void *)resp;
	if (err == IOL_ENOT_FOUND || (!err && r->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND)) {
		LOG_WARN("meta does not know this osd; registering again", "osd=%u", mc->osd_id);
		mc->registered = false;
	} else if (!err && r->status == IOLAKE__META__STATUS__STATUS_OK) {
		mc->beats++;
	} else {
		LOG_WARN("heartbeat failed", "osd=%u err=%s", mc->osd_id, LOG_Q(iol_strerror(err)));
	}
}

/* Register, or beat once registered; one call at a time (a slow meta
 * skips beats rather than queueing them). */
static void talk(struct osd_metaclient *mc)
{
	if (mc->call_out || !mc->meta)
		return;
	int rc;
	if (!mc->registered) {
		Iolake__Meta__OsdInfo info = IOLAKE__META__OSD_INFO__INIT;
		info.id = mc->osd_id;
		info.addr = mc->listen;
		info.host = mc->host;
		info.weight = 1;
		info.up = true;
		info.in = true;
		info.capacity_bytes = mc->capacity;
		info.registered_ms = (uint64_t)time(NULL) * 1000;
		Iolake__Meta__RegisterOsd ro = IOLAKE__META__REGISTER_OSD__INIT;
		ro.osd = &info;
		ro.time_ms = info.registered_ms;
		Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
		op.body_case = IOLAKE__META__OP__BODY_REGISTER_OSD;
		op.register_osd = &ro;
		rc = meta_client_submit(mc->meta, &op, on_registered, mc);
	} else {
		Iolake__Meta__HeartbeatRequest req = IOLAKE__META__HEARTBEAT_REQUEST__INIT;
		req.osd_id = mc->osd_id;
		rc = meta_client_call(mc->meta, META_M_HEARTBEAT, &req.base, on_beat, mc);
	}
	if (rc == 0)
		mc->call_out = true;
}

/* Reached a meta address: register or beat. */
static void on_reachable(struct osd_metaclient *mc, const struct target *t)
{
	if (!mc->reachable)
		LOG_INFO("meta reachable", "addr=%s osd=%u listen=%s", t->text, mc->osd_id,
			 mc->listen);
	mc->reachable = true;
	mc->failures = 0;
	mc->backoff_ms = mc->bmin_ms;
	talk(mc);
}

static void finish(struct osd_metaclient *mc, const char *why)
{
	const struct target *t = &mc->t[mc->cur];
	mc->phase = PH_IDLE;
	if (mc->stopping) {
		maybe_done(mc);
		return;
	}
	uv_timer_stop(&mc->timer);
	if (!why) {
		on_reachable(mc, t);
		uv_timer_start(&mc->timer, on_retry, mc->hb_ms, 0);
		return;
	}
	uint32_t delay = mc->backoff_ms;
	mc->failures++;
	mc->reachable = false;
	char msg[64];
	snprintf(msg, sizeof(msg), "meta unreachable, retrying in %gs", delay / 1000.0);
	LOG_WARN(msg, "addr=%s err=%s failures=%u serving=true", t->text, LOG_Q(why),
		 mc->failures);
	mc->backoff_ms = mc->backoff_ms * 2 > mc->bmax_ms ? mc->bmax_ms : mc->backoff_ms * 2;
	mc->cur = (mc->cur + 1) % mc->nt;
	uv_timer_start(&mc->timer, on_retry, delay, 0);
}

static void on_tcp_closed(uv_handle_t *h)
{
	struct osd_metaclient *mc = h->data;
	mc->tcp_open = false;
	maybe_done(mc);
}

static void close_tcp(struct osd_metaclient *mc)
{
	if (mc->tcp_open && !uv_is_closing((uv_handle_t *)&mc->tcp))
		uv_close((uv_handle_t *)&mc->tcp, on_tcp_closed);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct osd_metaclient *mc = req->data;
	char why[160];
	/* A dead meta on this host whose port the kernel picked as our
	 * source port: connected to ourselves, not to meta (tcp_self.h). */
	bool self = status == 0 && tcp_self_connected(&mc->tcp);
	close_tcp(mc);
	if (self) {
		finish(mc, "connected to itself (nothing listens there)");
		return;
	}
	if (status == 0) {
		finish(mc, NULL);
		return;
	}
	snprintf(why, sizeof(why), "%s",
		 status == UV_ECANCELED && mc->timed_out ? "connect timed out" : uv_strerror(status));
	finish(mc, why);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct osd_metaclient *mc = req->data;
	char why[160];
	if (mc->stopping || status < 0) {
		if (res)
			uv_freeaddrinfo(res);
		snprintf(why, sizeof(why), "resolve: %s",
			 mc->timed_out ? "timed out" : uv_strerror(status));
		finish(mc, why);
		return;
	}
	int rc = uv_tcp_init(mc->loop, &mc->tcp);
	if (rc == 0) {
		mc->tcp.data = mc;
		mc->tcp_open = true;
		mc->creq.data = mc;
		rc = uv_tcp_connect(&mc->creq, &mc->tcp, res->ai_addr, on_connect);
	}
	uv_freeaddrinfo(res);
	if (rc) {
		close_tcp(mc);
		snprintf(why, sizeof(why), "connect: %s", uv_strerror(rc));
		finish(mc, why);
		return;
	}
	mc->phase = PH_CONNECT;
}

static void on_timeout(uv_timer_t *timer)
{
	struct osd_metaclient *mc = timer->data;
	mc->timed_out = true;
	if (mc->phase == PH_RESOLVE)
		uv_cancel((uv_req_t *)&mc->gai);
	else if (mc->phase == PH_CONNECT)
		close_tcp(mc); /* on_connect follows with UV_ECANCELED */
}

static void attempt(struct osd_metaclient *mc)
{
	if (mc->stopping || mc->phase != PH_IDLE)
		return;
	if (mc->tcp_open) {
		/* The last attempt's handle is still closing: a moment later. */
		uv_timer_start(&mc->timer, on_retry, 10, 0);
		return;
	}
	const struct target *t = &mc->t[mc->cur];
	if (t->local) {
		finish(mc, NULL);
		return;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	mc->timed_out = false;
	mc->gai.data = mc;
	int rc = uv_getaddrinfo(mc->loop, &mc->gai, on_resolved, t->host, t->port, &hints);
	if (rc) {
		char why[160];
		snprintf(why, sizeof(why), "resolve: %s", uv_strerror(rc));
		finish(mc, why);
		return;
	}
	mc->phase = PH_RESOLVE;
	uv_timer_start(&mc->timer, on_timeout, mc->timeout_ms, 0);
}

int osd_metaclient_start(uv_loop_t *loop, const struct osd_metaclient_opts *o,
			 struct osd_metaclient **out)
{
	if (!o->naddrs)
		return -EINVAL;
	struct osd_metaclient *mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	mc->t = calloc(o->naddrs, sizeof(*mc->t));
	if (!mc->t) {
		free(mc);
		return -ENOMEM;
	}
	for (size_t i = 0; i < o->naddrs; i++) {
		if (strncmp(o->addrs[i], "local:", 6) == 0 && o->addrs[i][6] &&
		    strlen(o->addrs[i]) < sizeof(mc->t[i].text)) {
			mc->t[i].local = true;
			snprintf(mc->t[i].text, sizeof(mc->t[i].text), "%s", o->addrs[i]);
			continue;
		}
		if (parse_target(o->addrs[i], &mc->t[i])) {
			free(mc->t);
			free(mc);
			return -EINVAL;
		}
	}
	mc->nt = o->naddrs;
	mc->loop = loop;
	mc->osd_id = o->osd_id;
	snprintf(mc->listen, sizeof(mc->listen), "%s", o->listen_addr ? o->listen_addr : "");
	mc->timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 2000;
	mc->bmin_ms = o->backoff_min_ms ? o->backoff_min_ms : 500;
	mc->hb_ms = o->heartbeat_ms ? o->heartbeat_ms : 2000;
	/* Not above the heartbeat period by default: an OSD whose meta was
	 * away must beat again soon after it is back, or meta marks it down
	 * while it serves (a 30 s cap left it silent that long). */
	mc->bmax_ms = o->backoff_max_ms ? o->backoff_max_ms : mc->hb_ms;
	mc->backoff_ms = mc->bmin_ms;
	mc->capacity = o->capacity_bytes;
	mc->on_registered_cb = o->on_registered;
	mc->cb_arg = o->arg;
	if (o->host && *o->host)
		snprintf(mc->host, sizeof(mc->host), "%s", o->host);
	else if (gethostname(mc->host, sizeof(mc->host) - 1) || !mc->host[0])
		snprintf(mc->host, sizeof(mc->host), "osd-%u", mc->osd_id);
	struct meta_client_opts mo = { .members = o->addrs, .n_members = o->naddrs,
				       .retry_for_ms = mc->hb_ms * 2 };
	int rc = meta_client_new(loop, &mo, &mc->meta);
	if (rc) {
		free(mc->t);
		free(mc);
		return rc;
	}
	uv_timer_init(loop, &mc->timer);
	mc->timer.data = mc;
	mc->timer_open = true;
	*out = mc;
	attempt(mc);
	return 0;
}

bool osd_metaclient_addr_valid(const char *addr)
{
	struct target t;
	return parse_target(addr, &t) == 0;
}

bool osd_metaclient_reachable(const struct osd_metaclient *mc)
{
	return mc->reachable;
}

bool osd_metaclient_registered(const struct osd_metaclient *mc)
{
	return mc->registered;
}

uint64_t osd_metaclient_beats(const struct osd_metaclient *mc)
{
	return mc->beats;
}

uint32_t osd_metaclient_failures(const struct osd_metaclient *mc)
{
	return mc->failures;
}

static void on_timer_closed(uv_handle_t *h)
{
	struct osd_metaclient *mc = h->data;
	mc->timer_open = false;
	maybe_done(mc);
}

void osd_metaclient_stop(struct osd_metaclient *mc, void (*done_cb)(void *arg), void *arg)
{
	mc->stopping = true;
	mc->done_cb = done_cb;
	mc->done_arg = arg;
	/* Outstanding calls are answered IOL_ESHUTDOWN in here (ignored:
	 * stopping); the client's handles close on later turns. */
	meta_client_close(mc->meta);
	mc->meta = NULL;
	if (mc->phase == PH_RESOLVE)
		uv_cancel((uv_req_t *)&mc->gai);
	else if (mc->phase == PH_CONNECT)
		close_tcp(mc);
	/* The timer's close callback runs later: done_cb never runs in here. */
	uv_close((uv_handle_t *)&mc->timer, on_timer_closed);
}
