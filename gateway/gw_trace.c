/*
 * gw_trace.c — a request's trace and the slow-request log line (contracts
 * in gw_trace.h).
 *
 * Owns nothing beyond the struct it is handed. Thread: the gateway loop.
 * Does not decide what is slow for a hop: it only adds up time; the line
 * is written once, at the end of the exchange.
 */
#include "gateway/gw_trace.h"

#include <stdio.h>
#include <string.h>

void gw_trace_reset(struct gw_trace *t, const char *id, uint64_t now_ns)
{
	uint32_t gen = t->gen + 1;
	memset(t, 0, sizeof(*t));
	t->gen = gen;
	size_t n = id ? strnlen(id, LOG_REQ_ID_LEN) : 0;
	if (n)
		memcpy(t->id, id, n);
	t->id[n] = 0;
	t->t0_ns = now_ns;
}

void gw_trace_hedge(struct gw_trace *t, const uint32_t *osd_ids, uint32_t slow)
{
	t->hedges++;
	for (; slow; slow &= slow - 1) {
		uint32_t osd = osd_ids[__builtin_ctz(slow)];
		for (size_t i = 0; i < GW_TRACE_HEDGE_OSDS; i++) {
			if (t->hedge_osds[i] == osd)
				break;
			if (!t->hedge_osds[i]) {
				t->hedge_osds[i] = osd;
				break;
			}
		}
	}
}

/* "1,3" for the OSDs hedged around, "0" for none. */
static const char *hedge_list(const struct gw_trace *t, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < GW_TRACE_HEDGE_OSDS && t->hedge_osds[i] && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%u", i ? "," : "", t->hedge_osds[i]);
	return buf[0] ? buf : "0";
}

void gw_trace_release(struct gw_trace *t)
{
	t->gen++;
}

void gw_trace_call_begin(struct gw_trace_hop *h, uint64_t now_ns)
{
	h->calls++;
	if (h->open++ == 0)
		h->since_ns = now_ns;
}

void gw_trace_call_end(struct gw_trace_hop *h, uint64_t t0_ns, uint64_t now_ns, uint32_t osd,
		       bool ok)
{
	if (!h->open)
		return; /* began under another generation: not ours */
	if (--h->open == 0)
		h->busy_ns += now_ns - h->since_ns;
	if (!ok)
		h->failed++;
	if (now_ns - t0_ns > h->max_ns) {
		h->max_ns = now_ns - t0_ns;
		h->max_osd = osd;
	}
}

/* Busy time so far: closed spans plus the open one. */
static double busy_ms(const struct gw_trace_hop *h, uint64_t now_ns)
{
	uint64_t ns = h->busy_ns + (h->open ? now_ns - h->since_ns : 0);
	return (double)ns / 1e6;
}

void gw_trace_log(const struct gw_trace *t, const struct gw_trace_end *e, uint64_t now_ns,
		  uint64_t slow_ms)
{
	uint64_t total_ns = now_ns - t->t0_ns;
	if (total_ns < slow_ms * 1000000 || !log_enabled(LOG_LEVEL_WARN))
		return;
	char hedged[GW_TRACE_HEDGE_OSDS * 11];
	LOG_WARN_REQ(t->id, "slow request",
		     "op=%s method=%s bucket=%s key=%s status=%d bytes_in=%llu bytes_out=%llu "
		     "ms=%.1f auth_ms=%.1f meta_calls=%u meta_ms=%.1f meta_max_ms=%.1f "
		     "osd_calls=%u osd_ms=%.1f osd_max_ms=%.1f osd_max=%u osd_open=%u osd_failed=%u "
		     "hedges=%u hedge_osd=%s end=%s",
		     e->op ? e->op : "-", e->method ? e->method : "-",
		     LOG_Q(e->bucket && e->bucket[0] ? e->bucket : "-"),
		     LOG_Q(e->key && e->key[0] ? e->key : "-"), e->status,
		     (unsigned long long)e->bytes_in, (unsigned long long)e->bytes_out,
		     (double)total_ns / 1e6, (double)t->auth_ns / 1e6, t->meta.calls,
		     busy_ms(&t->meta, now_ns), (double)t->meta.max_ns / 1e6, t->osd.calls,
		     busy_ms(&t->osd, now_ns), (double)t->osd.max_ns / 1e6, t->osd.max_osd,
		     t->osd.open, t->osd.failed, t->hedges, hedge_list(t, hedged, sizeof(hedged)),
		     e->err ? "aborted" : "complete");
}
