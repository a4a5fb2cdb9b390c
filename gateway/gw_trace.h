/*
 * gw_trace.h — one S3 request's trace: its request id and where its time
 * went, for the slow-request log.
 *
 * The id is the x-amz-request-id the gateway answers with (and puts in an
 * error body's <RequestId>): 16 hex chars from log_new_request_id, unique
 * across gateways and restarts (a random 64-bit start, mixed). Every RPC
 * the request causes carries it as call metadata (rpc_call_opts.request_id:
 * the meta client through meta_client_set_trace, gw_data through its
 * target), so meta's and the OSDs' log lines about those calls say
 * req=<id> too.
 *
 * Time: a hop (meta calls, OSD shard calls) counts its calls, its slowest
 * call (and, for OSDs, that call's OSD), and the wall time during which at
 * least one of its calls was in flight (parallel shard reads count once).
 *
 * Lifetime: a trace lives in the front end's per-exchange state, which is
 * pooled; `gen` changes whenever the trace is reset or released, so the
 * data path, whose calls may answer after the exchange ended (a hedged
 * read's slow shard), keeps a gw_trace_ref and touches the trace only
 * while the generation still matches.
 *
 * Thread: the gateway loop. Cost: a few adds per call; nothing when a call
 * carries no trace (gc, heal, admin).
 */
#ifndef GATEWAY_GW_TRACE_H
#define GATEWAY_GW_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"

/* How many distinct OSDs a trace names as hedged around (a GET of many
 * segments can hedge around several when more than one is slow). */
#define GW_TRACE_HEDGE_OSDS 4

struct gw_trace_hop {
	uint32_t calls;      /* calls started */
	uint32_t failed;     /* calls that ended in an error */
	uint32_t open;       /* calls in flight now */
	uint64_t since_ns;   /* open went 0 -> 1 */
	uint64_t busy_ns;    /* wall time with a call in flight (closed spans) */
	uint64_t max_ns;     /* the slowest call that ended */
	uint32_t max_osd;    /* ... its OSD (OSD hop; 0: none) */
};

struct gw_trace {
	char id[LOG_REQ_ID_LEN + 1]; /* "" until reset */
	uint32_t gen;
	uint64_t t0_ns;              /* the request head was parsed */
	uint64_t auth_ns;            /* SigV4 check, credential lookup included */
	struct gw_trace_hop meta, osd;
	uint32_t hedges;             /* segments that read parity around a slow shard */
	uint32_t hedge_osds[GW_TRACE_HEDGE_OSDS]; /* the distinct OSDs hedged around, first ones */
};

/* A trace as the data path holds it: valid while gen matches. */
struct gw_trace_ref {
	struct gw_trace *t;
	uint32_t gen;
};

/* Start a request's trace: id copied (at most LOG_REQ_ID_LEN chars), the
 * clock started, everything else zero, and the generation moved on. */
void gw_trace_reset(struct gw_trace *t, const char *id, uint64_t now_ns);

/* A segment hedged around the OSDs in osd_ids[] whose bits are set in
 * slow: hedges counted once, each OSD named once (the first
 * GW_TRACE_HEDGE_OSDS of them). */
void gw_trace_hedge(struct gw_trace *t, const uint32_t *osd_ids, uint32_t slow);

/* The exchange is over: older refs stop matching. */
void gw_trace_release(struct gw_trace *t);

static inline struct gw_trace_ref gw_trace_ref(struct gw_trace *t)
{
	return (struct gw_trace_ref){ t, t ? t->gen : 0 };
}

/* The trace r refers to while it is still that request's; else NULL. */
static inline struct gw_trace *gw_trace_get(const struct gw_trace_ref *r)
{
	return r->t && r->t->gen == r->gen ? r->t : NULL;
}

/* The id r's request carries ("" for none); safe after the trace moved
 * on only when copied at start: callers copy it (gw_data does). */
static inline const char *gw_trace_id(const struct gw_trace *t)
{
	return t ? t->id : "";
}

/* A call of hop h started at now_ns / ended (started at t0_ns). osd: the
 * OSD it went to (0 for meta). */
void gw_trace_call_begin(struct gw_trace_hop *h, uint64_t now_ns);
void gw_trace_call_end(struct gw_trace_hop *h, uint64_t t0_ns, uint64_t now_ns, uint32_t osd,
		       bool ok);

/* What the slow-request log line says about the request. */
struct gw_trace_end {
	const char *op;              /* S3 operation name */
	const char *method;
	const char *bucket, *key;    /* NULL: none */
	int status;                  /* HTTP status (0: none sent) */
	uint64_t bytes_in, bytes_out;/* body bytes received and sent */
	int err;                     /* the exchange's end: 0, or -errno */
};

/* The slow-request log: when the request took slow_ms or more (0: every
 * request), one warn line "slow request" with the id, op, method, bucket,
 * key, status, bytes, total ms and the breakdown (auth, meta, osd: calls,
 * busy ms, the slowest call and its OSD, calls still out, hedges). */
void gw_trace_log(const struct gw_trace *t, const struct gw_trace_end *e, uint64_t now_ns,
		  uint64_t slow_ms);

#endif
