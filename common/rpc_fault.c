/*
 * rpc_fault.c — test-only RPC fault injection (contract and spec syntax in
 * rpc_fault.h): a set of process-wide rules, and channel ops that sit in
 * front of a transport's ops (struct rpc_chan_ops) to delay, drop or fail
 * the calls the rules match.
 *
 * Owns: the rules (under one mutex, copied out per call), the counters,
 * and per wrapped channel the calls and answers it holds (a list on the
 * channel, timed by the channel's own deadline heap, so holding needs no
 * libuv handle of its own). A held call counts in ch->npending like a
 * call in flight; every held call ends exactly once: sent on (its
 * transport answers), answered (DEADLINE_EXCEEDED, a held answer), or
 * CANCELLED when the channel closes.
 *
 * Cost when off: none here; rpc_channel_open tests rpc_fault_armed and
 * does not wrap. Thread: rules from any thread; a channel's held calls
 * on its loop only.
 *
 * Does not: act on servers, touch peer circuits (rpc_health.c), or change
 * a byte of what is sent or answered.
 */
#include "common/rpc_fault.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/rpc_internal.h"

#define MAX_DELAY_MS 3600000u  /* an hour: anything longer is a typo */

enum action { A_DELAY, A_DELAY_ANSWER, A_DROP, A_FAIL, A_PARTITION, A_SPIN };

struct rule {
	enum action act;
	uint32_t ms;         /* A_DELAY, A_DELAY_ANSWER; A_SPIN: microseconds */
	int status;          /* A_FAIL */
	char *peer;          /* NULL: any */
	char *method;        /* NULL: any; "Name" or "pkg.Svc/Name" */
	bool counted;        /* count= given */
	uint64_t left;       /* count= still to match */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct rule *rules;
static size_t nrules;

_Atomic bool rpc_fault_armed;

static _Atomic uint64_t n_delayed, n_answers, n_dropped, n_failed, n_partitioned, n_spun;

/* ------------------------------------------------------------ rules */

static void rules_free(struct rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].peer);
		free(r[i].method);
	}
	free(r);
}

static int parse_u32(const char *v, uint32_t max, uint32_t *out)
{
	char *end;
	if (!v || *v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (*end || errno || x > max)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

static int parse_status(const char *v, int *out)
{
	uint32_t n;
	if (!v)
		return -EINVAL;
	if (parse_u32(v, RPC_UNAUTHENTICATED, &n) == 0) {
		*out = (int)n;
		return n == RPC_OK ? -EINVAL : 0;
	}
	for (int s = RPC_CANCELLED; s <= RPC_UNAUTHENTICATED; s++)
		if (strcasecmp(v, rpc_status_name(s)) == 0) {
			*out = s;
			return 0;
		}
	return -EINVAL;
}

/* One rule from "tok,tok,...", tokens cut in place. */
static int parse_rule(char *text, struct rule *r, char *err, size_t errlen)
{
	bool have_act = false;
	char *save = NULL;
	memset(r, 0, sizeof(*r));
	for (char *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *val = eq ? eq + 1 : NULL;
		if (eq)
			*eq = 0;
		bool is_act = true;
		int rc = 0;
		if (strcmp(tok, "delay") == 0) {
			r->act = A_DELAY;
			rc = parse_u32(val, MAX_DELAY_MS, &r->ms);
		} else if (strcmp(tok, "delay-answer") == 0) {
			r->act = A_DELAY_ANSWER;
			rc = parse_u32(val, MAX_DELAY_MS, &r->ms);
		} else if (strcmp(tok, "drop") == 0) {
			r->act = A_DROP;
			rc = val ? -EINVAL : 0;
		} else if (strcmp(tok, "fail") == 0) {
			r->act = A_FAIL;
			rc = parse_status(val, &r->status);
		} else if (strcmp(tok, "spin") == 0) {
			r->act = A_SPIN;
			rc = parse_u32(val, 1000000, &r->ms);
		} else if (strcmp(tok, "partition") == 0) {
			r->act = A_PARTITION;
			rc = val ? -EINVAL : 0;
		} else {
			is_act = false;
			if (!val || !*val) {
				rc = -EINVAL;
			} else if (strcmp(tok, "peer") == 0 && !r->peer) {
				rc = (r->peer = strdup(val)) ? 0 : -ENOMEM;
			} else if (strcmp(tok, "method") == 0 && !r->method) {
				rc = (r->method = strdup(val)) ? 0 : -ENOMEM;
			} else if (strcmp(tok, "count") == 0 && !r->counted) {
				uint32_t n;
				rc = parse_u32(val, UINT32_MAX, &n);
				r->counted = true;
				r->left = n;
			} else {
				rc = -EINVAL;
			}
		}
		if (is_act && have_act)
			rc = -EINVAL;
		have_act |= is_act;
		if (rc == -ENOMEM)
			return rc;
		if (rc) {
			snprintf(err, errlen, "'%s%s%s' is not a fault action or filter (or repeats one)",
				 tok, val ? "=" : "", val ? val : "");
			return rc;
		}
	}
	if (!have_act) {
		snprintf(err, errlen, "a rule needs one action (delay=MS, delay-answer=MS, drop, "
				      "fail=STATUS, partition, spin=US)");
		return -EINVAL;
	}
	return 0;
}

int rpc_fault_set(const char *spec, char *err, size_t errlen)
{
	struct rule *nr = NULL;
	size_t n = 0;
	if (spec && *spec) {
		char *copy = strdup(spec);
		if (!copy)
			return -ENOMEM;
		size_t cap = 1;
		for (const char *p = spec; *p; p++)
			cap += *p == ';';
		nr = calloc(cap, sizeof(*nr));
		if (!nr) {
			free(copy);
			return -ENOMEM;
		}
		char *save = NULL;
		for (char *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
			int rc = parse_rule(t, &nr[n], err, errlen);
			if (rc) {
				rules_free(nr, n + 1);
				free(copy);
				return rc;
			}
			n++;
		}
		free(copy);
		if (!n) {
			snprintf(err, errlen, "no rule in '%s'", spec);
			free(nr);
			return -EINVAL;
		}
	}
	pthread_mutex_lock(&mu);
	struct rule *old = rules;
	size_t nold = nrules;
	rules = nr;
	nrules = n;
	atomic_store(&rpc_fault_armed, n > 0);
	pthread_mutex_unlock(&mu);
	rules_free(old, nold);
	return 0;
}

bool rpc_fault_enabled(void)
{
	return atomic_load(&rpc_fault_armed);
}

void rpc_fault_stats(struct rpc_fault_stats *out)
{
	out->delayed = atomic_load(&n_delayed);
	out->answers_delayed = atomic_load(&n_answers);
	out->dropped = atomic_load(&n_dropped);
	out->failed = atomic_load(&n_failed);
	out->partitioned = atomic_load(&n_partitioned);
	out->spun = atomic_load(&n_spun);
}

int rpc_fault_flag_apply(const char *prog, const char *spec)
{
	if (!spec)
		return 0;
	char err[256] = "";
	int rc = rpc_fault_set(spec, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: flag --debug-fault: %s\n", prog,
			rc == -ENOMEM ? "out of memory" : err);
		return 2;
	}
	LOG_WARN("RPC fault injection on (tests only)", "spec=%s", LOG_Q(spec));
	return 0;
}

static bool method_match(const char *want, const ProtobufCServiceDescriptor *svc, unsigned m)
{
	const char *name = svc->methods[m].name;
	const char *slash = strrchr(want, '/');
	if (!slash)
		return strcmp(want, name) == 0;
	size_t sl = (size_t)(slash - want);
	return strlen(svc->name) == sl && memcmp(want, svc->name, sl) == 0 &&
	       strcmp(slash + 1, name) == 0;
}

/* The first rule matching the call, copied out (count= used up here). */
static bool decide(const struct rpc_channel *ch, const struct rpc_call_args *a, struct rule *out)
{
	bool hit = false;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < nrules && !hit; i++) {
		struct rule *r = &rules[i];
		if (r->peer && strcmp(r->peer, ch->target_str) != 0)
			continue;
		if (r->method && !method_match(r->method, a->svc, a->method))
			continue;
		if (r->counted) {
			if (!r->left)
				continue;
			r->left--;
		}
		*out = *r;
		hit = true;
	}
	pthread_mutex_unlock(&mu);
	return hit;
}

/* ------------------------------------------------------------ held calls */

enum held { H_SEND, H_DROP, H_ANSWER, H_INFLIGHT };

struct rpc_fault_call {
	struct rpc_channel *ch;
	struct rpc_fault_call *prev, *next;  /* ch->fault_held, while held */
	enum held kind;
	struct rpc_dl timer;      /* the next thing to do: send, answer, or expire */
	bool expire;              /* the timer is the caller's deadline */
	uint64_t deadline_ms;     /* loop_now_ms() clock; 0: none */
	uint32_t answer_ms;       /* H_INFLIGHT: how long to hold the answer */
	rpc_call_cb cb;           /* the caller's */
	void *ud;
	struct rpc_call_args a;   /* H_SEND, H_DROP: the call, owned */
	char id[RPC_MAX_REQUEST_ID + 1];
	/* H_ANSWER: a copy of the answer */
	int status;
	const ProtobufCMessageDescriptor *out;
	struct buf *msg;          /* the packed response (status OK) */
	struct buf_slice payload; /* a reference, or .buf NULL */
	char message[RPC_MAX_MESSAGE_TEXT];
};

static void held_link(struct rpc_fault_call *fc)
{
	struct rpc_channel *ch = fc->ch;
	fc->prev = NULL;
	fc->next = ch->fault_held;
	if (ch->fault_held)
		ch->fault_held->prev = fc;
	ch->fault_held = fc;
}

static void held_unlink(struct rpc_fault_call *fc)
{
	struct rpc_channel *ch = fc->ch;
	if (fc->prev)
		fc->prev->next = fc->next;
	else
		ch->fault_held = fc->next;
	if (fc->next)
		fc->next->prev = fc->prev;
	fc->prev = fc->next = NULL;
	rpc_dl_del(ch, &fc->timer);
}

static void fc_free(struct rpc_fault_call *fc)
{
	buf_unref(fc->a.req);
	buf_unref(fc->a.payload.buf);
	buf_unref(fc->msg);
	buf_unref(fc->payload.buf);
	free(fc);
}

/* End a held call with status (not OK), as its transport would. */
static void held_end(struct rpc_fault_call *fc, int status, const char *message)
{
	struct rpc_result res = { .status = status, .message = message };
	held_unlink(fc);
	rpc_chan_complete(fc->ch, fc->cb, fc->ud, &res);
	fc_free(fc);
}

static void on_timer(struct rpc_dl *d);

/* Arm fc's timer for `ms` from now, or for its deadline if that comes
 * first; 0 ms of delay still waits for a loop turn. */
static int held_arm(struct rpc_fault_call *fc, uint32_t ms)
{
	uint64_t now = loop_now_ms();
	fc->expire = fc->deadline_ms && fc->deadline_ms <= now + ms;
	if (fc->expire)
		ms = fc->deadline_ms > now ? (uint32_t)(fc->deadline_ms - now) : 0;
	return rpc_dl_add(fc->ch, &fc->timer, ms, on_timer);
}

static void on_timer(struct rpc_dl *d)
{
	struct rpc_fault_call *fc = container_of(d, struct rpc_fault_call, timer);
	struct rpc_channel *ch = fc->ch;
	if (fc->expire) {
		held_end(fc, RPC_DEADLINE_EXCEEDED, "deadline exceeded (fault injected)");
		return;
	}
	held_unlink(fc);
	if (fc->kind == H_SEND) {
		/* On to the transport with what is left of its deadline. */
		if (fc->deadline_ms) {
			uint64_t now = loop_now_ms();
			fc->a.timeout_ms = fc->deadline_ms > now + 1 ? (uint32_t)(fc->deadline_ms - now) : 1;
		}
		ch->fault_inner->call(ch, &fc->a);
		fc->a.req = NULL;
		fc->a.payload.buf = NULL;
		fc_free(fc);
		return;
	}
	/* H_ANSWER, due */
	rpc_chan_deliver(ch, fc->out, fc->cb, fc->ud, fc->status, fc->message,
			 fc->msg ? fc->msg->data : NULL, fc->msg ? fc->msg->len : 0,
			 fc->payload.buf ? &fc->payload : NULL);
	fc_free(fc);
}

/* A delay-answer call's answer from its transport (counted done there). */
static void on_inner_answer(void *ud, const struct rpc_result *res)
{
	struct rpc_fault_call *fc = ud;
	struct rpc_channel *ch = fc->ch;
	/* The transport's own ends (deadline, close) are not held: they are
	 * the caller's timing, not the peer's. */
	bool pass = ch->closing || res->status == RPC_DEADLINE_EXCEEDED ||
		    res->status == RPC_CANCELLED;
	if (!pass && res->resp) {
		size_t n = protobuf_c_message_get_packed_size(res->resp);
		fc->msg = buf_new(n ? n : 1);
		if (fc->msg) {
			fc->msg->len = protobuf_c_message_pack(res->resp, fc->msg->data);
			fc->out = res->resp->descriptor;
		}
		pass = !fc->msg;
	}
	if (pass) {
		fc->cb(fc->ud, res);
		fc_free(fc);
		return;
	}
	fc->kind = H_ANSWER;
	fc->status = res->status;
	snprintf(fc->message, sizeof(fc->message), "%s", res->message);
	if (res->payload.buf) {
		fc->payload = res->payload;
		buf_ref(res->payload.buf);
	}
	ch->npending++;  /* pending again until delivered */
	held_link(fc);
	atomic_fetch_add(&n_answers, 1);
	if (held_arm(fc, fc->answer_ms))
		on_timer(&fc->timer);  /* no memory for the heap: deliver now */
}

/* ------------------------------------------------------------ channel ops */

static void f_call(struct rpc_channel *ch, struct rpc_call_args *a)
{
	struct rule r;
	if (!decide(ch, a, &r)) {
		ch->fault_inner->call(ch, a);
		return;
	}
	char why[160];
	int status;
	switch (r.act) {
	case A_SPIN:
		/* CPU spent on this loop, as a slower code path would. */
		atomic_fetch_add(&n_spun, 1);
		for (uint64_t end = uv_hrtime() + (uint64_t)r.ms * 1000; uv_hrtime() < end;)
			;
		ch->fault_inner->call(ch, a);
		return;
	case A_FAIL:
	case A_PARTITION:
		if (r.act == A_FAIL) {
			status = r.status;
			snprintf(why, sizeof(why), "%s (fault injected)", rpc_status_name(status));
			atomic_fetch_add(&n_failed, 1);
		} else {
			status = RPC_UNAVAILABLE;
			snprintf(why, sizeof(why), "%s is down (fault injected: partition)",
				 ch->target_str);
			atomic_fetch_add(&n_partitioned, 1);
		}
		buf_unref(a->req);
		buf_unref(a->payload.buf);
		ch->npending--;
		rpc_chan_defer_fail(ch, a->cb, a->ud, status, why);
		return;
	default:
		break;
	}
	struct rpc_fault_call *fc = calloc(1, sizeof(*fc));
	if (!fc) {
		ch->fault_inner->call(ch, a);  /* tests only: better sent than lost */
		return;
	}
	fc->ch = ch;
	fc->cb = a->cb;
	fc->ud = a->ud;
	fc->deadline_ms = a->timeout_ms ? loop_now_ms() + a->timeout_ms : 0;
	if (r.act == A_DELAY_ANSWER) {
		fc->kind = H_INFLIGHT;
		fc->answer_ms = r.ms;
		a->cb = on_inner_answer;
		a->ud = fc;
		ch->fault_inner->call(ch, a);
		return;
	}
	/* A_DELAY, A_DROP: keep the call (its request id is the caller's). */
	fc->a = *a;
	snprintf(fc->id, sizeof(fc->id), "%s", a->request_id);
	fc->a.request_id = fc->id;
	fc->kind = r.act == A_DELAY ? H_SEND : H_DROP;
	held_link(fc);
	atomic_fetch_add(r.act == A_DELAY ? &n_delayed : &n_dropped, 1);
	int rc = 0;
	if (r.act == A_DELAY)
		rc = held_arm(fc, r.ms);
	else if (fc->deadline_ms)
		rc = held_arm(fc, UINT32_MAX);
	if (rc) {
		/* Not from inside rpc_call: through the deferred list. */
		held_unlink(fc);
		ch->npending--;
		rpc_chan_defer_fail(ch, fc->cb, fc->ud, RPC_RESOURCE_EXHAUSTED, "out of memory");
		fc_free(fc);
	}
}

static void f_close(struct rpc_channel *ch)
{
	while (ch->fault_held)
		held_end(ch->fault_held, RPC_CANCELLED, "channel closed");
	ch->fault_inner->close(ch);
}

static void f_free(struct rpc_channel *ch)
{
	ch->fault_inner->free(ch);
}

static const struct rpc_chan_ops fault_ops = {
	.call = f_call,
	.close = f_close,
	.free = f_free,
};

void rpc_fault_wrap(struct rpc_channel *ch)
{
	if (ch->fault_inner)
		return;
	ch->fault_inner = ch->ops;
	ch->ops = &fault_ops;
}
