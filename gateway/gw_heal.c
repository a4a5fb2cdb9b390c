/*
 * gw_heal.c — FlagPgs batching (contract in gw_heal.h).
 *
 * Per reason: a bitmap of PG ids pending (so a PG is queued once however
 * many requests saw it) and an array of those ids in arrival order (so a
 * send does not scan the bitmap). A repeating timer sends one reason's
 * pending ids per tick, alternating reasons, when no call is in flight;
 * the bits are cleared when the call goes out, so a PG seen again while
 * it is in flight is queued for the next one.
 *
 * Invariant: for each reason, n_pending == popcount(bits) and pending[]
 * holds exactly the set bits.
 *
 * Owns the pending bitmaps and the one FlagPgs call in flight; does not
 * look at PGs beyond their ids (gw_heal.h says what it does not do).
 */
#include "gateway/gw_heal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/metrics.h"
#include "meta/client.h"
#include "common/place.h"

#define DEFAULT_INTERVAL_MS 500
#define DEFAULT_MAX_PENDING 4096

static const char *const reason_names[GW_HEAL__REASONS] = {
	[GW_HEAL_PUT_PARTIAL] = "put_partial",
	[GW_HEAL_READ_BAD_SHARD] = "read_bad_shard",
};

struct pending {
	uint64_t bits[PLACE_MAX_PGS / 64];
	uint32_t *ids;                 /* [max_pending] */
	uint32_t n;
};

struct gw_heal {
	uv_loop_t *loop;
	struct meta_client *mc;
	struct gw_heal_opts o;
	struct pending p[GW_HEAL__REASONS];
	unsigned next_reason;          /* round robin */
	uint32_t *sending;             /* [max_pending]: the ids of the call in flight */
	uint32_t n_sending;
	int sending_reason;
	bool inflight, closing, timer_closed;
	uv_timer_t timer;
	struct gw_heal_stats st;
	struct metrics_counter *m_flagged[GW_HEAL__REASONS];
	struct metrics_counter *m_dropped;
};

static void maybe_free(struct gw_heal *h)
{
	if (!h->closing || !h->timer_closed || h->inflight)
		return;
	for (int r = 0; r < GW_HEAL__REASONS; r++)
		free(h->p[r].ids);
	free(h->sending);
	free(h);
}

void gw_heal_flag(struct gw_heal *h, uint32_t pg, enum gw_heal_reason r)
{
	if (!h || h->closing || (unsigned)r >= GW_HEAL__REASONS || pg >= PLACE_MAX_PGS)
		return;
	struct pending *p = &h->p[r];
	uint64_t bit = 1ull << (pg % 64);
	if (p->bits[pg / 64] & bit)
		return;
	if (p->n >= h->o.max_pending) {
		h->st.dropped++;
		if (h->m_dropped)
			metrics_counter_inc(h->m_dropped);
		return;
	}
	p->bits[pg / 64] |= bit;
	p->ids[p->n++] = pg;
}

static void on_flagged(void *ud, int err, const ProtobufCMessage *resp)
{
	struct gw_heal *h = ud;
	const Iolake__Meta__FlagPgsResponse *r = (const Iolake__Meta__FlagPgsResponse *)resp;
	h->inflight = false;
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK) {
		h->st.calls_failed++;
		h->st.dropped += h->n_sending;
		if (h->m_dropped)
			metrics_counter_add(h->m_dropped, h->n_sending);
		if (!h->closing)
			LOG_WARN("FlagPgs failed", "pgs=%u reason=%s err=%s", h->n_sending,
				 reason_names[h->sending_reason],
				 err ? iol_strerror(err) : "status not OK");
	} else {
		h->st.flagged[h->sending_reason] += h->n_sending;
		if (h->m_flagged[h->sending_reason])
			metrics_counter_add(h->m_flagged[h->sending_reason], h->n_sending);
	}
	h->n_sending = 0;
	maybe_free(h);
}

static void on_tick(uv_timer_t *t)
{
	struct gw_heal *h = t->data;
	if (h->closing || h->inflight)
		return;
	for (unsigned k = 0; k < GW_HEAL__REASONS; k++) {
		unsigned r = (h->next_reason + k) % GW_HEAL__REASONS;
		struct pending *p = &h->p[r];
		if (!p->n)
			continue;
		h->next_reason = (r + 1) % GW_HEAL__REASONS;
		memcpy(h->sending, p->ids, p->n * sizeof(*p->ids));
		h->n_sending = p->n;
		h->sending_reason = (int)r;
		for (uint32_t i = 0; i < p->n; i++)
			p->bits[p->ids[i] / 64] &= ~(1ull << (p->ids[i] % 64));
		p->n = 0;
		Iolake__Meta__FlagPgsRequest q = IOLAKE__META__FLAG_PGS_REQUEST__INIT;
		q.pgs = h->sending;
		q.n_pgs = h->n_sending;
		q.reason = (char *)reason_names[r];
		h->st.calls++;
		if (meta_client_call(h->mc, META_M_FLAG_PGS, &q.base, on_flagged, h)) {
			h->st.calls_failed++;
			h->st.dropped += h->n_sending;
			h->n_sending = 0;
			return;
		}
		h->inflight = true;
		return;
	}
}

int gw_heal_new(uv_loop_t *loop, struct meta_client *mc, struct metrics_registry *reg,
		const struct gw_heal_opts *opts, struct gw_heal **out)
{
	struct gw_heal *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	if (opts)
		h->o = *opts;
	if (!h->o.interval_ms)
		h->o.interval_ms = DEFAULT_INTERVAL_MS;
	if (!h->o.max_pending || h->o.max_pending > PLACE_MAX_PGS)
		h->o.max_pending = DEFAULT_MAX_PENDING;
	h->loop = loop;
	h->mc = mc;
	h->sending = calloc(h->o.max_pending, sizeof(*h->sending));
	for (int r = 0; r < GW_HEAL__REASONS; r++)
		h->p[r].ids = calloc(h->o.max_pending, sizeof(*h->p[r].ids));
	if (!h->sending || !h->p[0].ids || !h->p[1].ids) {
		for (int r = 0; r < GW_HEAL__REASONS; r++)
			free(h->p[r].ids);
		free(h->sending);
		free(h);
		return -ENOMEM;
	}
	for (int r = 0; reg && r < GW_HEAL__REASONS; r++)
		h->m_flagged[r] = metrics_counter_new(reg, "iolake_gw_pg_flags_total",
						      "PGs sent to meta for a rescan (FlagPgs), by reason",
						      METRICS_LABELS("reason", reason_names[r]));
	if (reg)
		h->m_dropped = metrics_counter_new(reg, "iolake_gw_pg_flags_dropped_total",
						   "PG flags dropped (queue full, or FlagPgs failed)",
						   NULL);
	uv_timer_init(loop, &h->timer);
	h->timer.data = h;
	uv_timer_start(&h->timer, on_tick, h->o.interval_ms, h->o.interval_ms);
	uv_unref((uv_handle_t *)&h->timer);   /* never what keeps a loop running */
	*out = h;
	return 0;
}

void gw_heal_stats(const struct gw_heal *h, struct gw_heal_stats *out)
{
	*out = h->st;
}

static void on_timer_closed(uv_handle_t *t)
{
	struct gw_heal *h = t->data;
	h->timer_closed = true;
	maybe_free(h);
}

void gw_heal_close(struct gw_heal *h)
{
	if (!h || h->closing)
		return;
	h->closing = true;
	uv_timer_stop(&h->timer);
	uv_close((uv_handle_t *)&h->timer, on_timer_closed);
}
