/*
 * recover.c — the per-PG recovery driver (contracts in recover.h).
 *
 * Owns: a map watch (meta/mapwatch.h, whose OSD channels every call here
 * uses, the call to this OSD itself included), a meta client for ReportPgs
 * and FlagPgs, one state per PG of the map, a fixed pool of max_pgs scan
 * slots, each with stripes_inflight rebuild (or deep-scrub) jobs, a token
 * bucket, and one 250 ms tick (retries, backstop rescans, deep scrubs due,
 * rates, reports, flags).
 *
 * Scans and rebuilds are recover_scan.c's (its top comment has the
 * phases and their invariant); this file holds the PG states, the queue
 * and its priority, the map changes that feed it, the reports to meta and
 * the driver's life.
 *
 * Thread: the OSD's loop. Does not: delete anything (strays of old slot
 * holders, orphans, stale shards of deleted objects stay), read the local
 * store directly, or decide PG state for the cluster (meta does, from the
 * reports).
 */
#include "osd/recover.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/place.h"
#include "osd/recover_int.h"
#include "osd/service.h"

/* ------------------------------------------------------------ pure */

int osd_recover_oid_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = memcmp(a, b, n);
	if (c)
		return c < 0 ? -1 : 1;
	/* Padded with zeros: a longer id is greater only past a nonzero
	 * byte, else by length (rec.h's tie-break byte). */
	const uint8_t *l = alen > blen ? a : b;
	size_t ll = alen > blen ? alen : blen;
	for (size_t i = n; i < ll; i++)
		if (l[i])
			return alen > blen ? 1 : -1;
	return alen == blen ? 0 : (alen > blen ? 1 : -1);
}

bool osd_recover_sig_eq(const struct osd_recover_sig *a, const struct osd_recover_sig *b)
{
	if (a->width != b->width || a->up_mask != b->up_mask)
		return false;
	return memcmp(a->osds, b->osds, a->width * sizeof(a->osds[0])) == 0;
}

int osd_recover_primary_slot(uint32_t pg, const struct osd_recover_sig *s)
{
	return place_primary_slot(pg, s->osds, s->width, s->up_mask);
}

struct osd_recover_stripe_class osd_recover_classify(const struct osd_recover_sig *s,
						     unsigned k, uint32_t present_mask)
{
	struct osd_recover_stripe_class c = { 0 };
	for (uint32_t i = 0; i < s->width; i++) {
		if (present_mask >> i & 1)
			c.present++;
		else if (s->osds[i] != OSD_RECOVER_NONE && (s->up_mask >> i & 1))
			c.missing |= 1u << i;
	}
	c.unfound = c.present < k;
	c.rebuild = c.missing && !c.unfound;
	return c;
}

int osd_recover_deep_check(const struct ec_code *ec, size_t len, const uint8_t *const *shards,
			   uint8_t *scratch, unsigned *bad)
{
	unsigned k = ec_k(ec), m = ec_m(ec), w = k + m;
	if (!m || !len)
		return OSD_RECOVER_DEEP_OK;
	/* The common case first: encode the data, compare the parity. */
	const uint8_t *data[EC_MAX_SHARDS];
	uint8_t *par[EC_MAX_SHARDS];
	for (unsigned i = 0; i < k; i++)
		data[i] = shards[i];
	for (unsigned i = 0; i < m; i++)
		par[i] = scratch + (size_t)(i + 1) * len;
	ec_encode(ec, len, data, par);
	bool same = true;
	for (unsigned i = 0; i < m && same; i++)
		same = memcmp(par[i], shards[k + i], len) == 0;
	if (same)
		return OSD_RECOVER_DEEP_OK;
	/* Which shard? Leave each out in turn: decode every slot but the
	 * first k others from those k, and compare the m-1 others with what
	 * is stored. The code's distance is m+1, so with m >= 2 and one bad
	 * shard exactly one exclusion (the bad one's) is consistent. */
	int found = -1;
	for (unsigned e = 0; e < w; e++) {
		uint8_t *sh[EC_MAX_SHARDS];
		uint32_t present = 0, want = 0;
		unsigned n = 0, t = 1;
		for (unsigned i = 0; i < w; i++) {
			if (i != e && n < k) {
				sh[i] = (uint8_t *)shards[i]; /* present: only read */
				present |= 1u << i;
				n++;
			}
		}
		for (unsigned i = 0; i < w; i++) {
			if (present >> i & 1)
				continue;
			/* e's decode lands in scratch slot 1, the rest after. */
			sh[i] = scratch + (size_t)(i == e ? 1 : ++t) * len;
			want |= 1u << i;
		}
		if (ec_decode(ec, len, sh, present, want))
			return -EINVAL;
		bool ok = true;
		for (unsigned i = 0; i < w && ok; i++)
			if ((want >> i & 1) && i != e)
				ok = memcmp(sh[i], shards[i], len) == 0;
		if (!ok)
			continue;
		if (found >= 0)
			return OSD_RECOVER_DEEP_INCONSISTENT; /* two explanations: none */
		found = (int)e;
		memcpy(scratch, sh[e], len);
	}
	if (found < 0)
		return OSD_RECOVER_DEEP_INCONSISTENT;
	*bad = (unsigned)found;
	return OSD_RECOVER_DEEP_ONE;
}

static void pump(struct osd_recover *r);

/* ------------------------------------------------------------ map */

static const Iolake__Meta__OsdInfo *find_osd(const Iolake__Meta__ClusterMap *m, uint32_t id)
{
	size_t lo = 0, hi = m->n_osds;
	while (lo < hi) { /* sorted by id */
		size_t mid = (lo + hi) / 2;
		if (m->osds[mid]->id == id)
			return m->osds[mid];
		if (m->osds[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = 0; i < m->n_osds; i++) /* not sorted after all */
		if (m->osds[i]->id == id)
			return m->osds[i];
	return NULL;
}

static void sig_of(const Iolake__Meta__ClusterMap *m, const Iolake__Meta__PgEntry *e,
		   struct osd_recover_sig *s)
{
	memset(s, 0, sizeof(*s));
	s->width = e->n_osds < 16 ? (uint32_t)e->n_osds : 16;
	for (uint32_t i = 0; i < s->width; i++) {
		s->osds[i] = e->osds[i];
		const Iolake__Meta__OsdInfo *o =
			e->osds[i] == OSD_RECOVER_NONE ? NULL : find_osd(m, e->osds[i]);
		if (o && o->up)
			s->up_mask |= 1u << i;
	}
}

/* Slots whose OSD is down, absent, or new since the last finished scan:
 * the PG's urgency. */
static unsigned urgency(const struct pgst *p)
{
	unsigned n = 0;
	for (uint32_t i = 0; i < p->cur.width; i++) {
		if (p->cur.osds[i] == OSD_RECOVER_NONE || !(p->cur.up_mask >> i & 1))
			n++;
		else if (p->have_clean && p->clean.osds[i] != p->cur.osds[i])
			n++;
	}
	return n;
}

/* The first deep scrub of a PG this OSD comes to lead: somewhere in the
 * interval, by a hash of (pg, osd), so that PGs do not all start at once
 * after a start (or a map that hands this OSD many PGs). */
static uint64_t deep_stagger_ms(const struct osd_recover *r, uint32_t pg)
{
	uint64_t h = ((uint64_t)pg << 32 | r->osd_id) * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	return h % r->o.deep_scrub_ms;
}

static void on_map(void *arg, const Iolake__Meta__ClusterMap *m)
{
	struct osd_recover *r = arg;
	if (r->stopping)
		return;
	r->epoch = m->epoch;
	r->st.map_epoch = m->epoch;
	if (m->k && (m->k != r->k || m->m != r->m)) {
		struct ec_code *ec;
		if (ec_new(m->k, m->m, &ec) == 0) {
			ec_free(r->ec);
			r->ec = ec;
			r->k = m->k;
			r->m = m->m;
		}
	}
	if (m->n_pgs != r->n_pgs) {
		/* PG count changes only with a new cluster: start over (active
		 * scans hold their own copies and wind down below). */
		for (uint32_t i = 0; i < r->o.max_pgs; i++)
			if (r->scans[i].used)
				r->scans[i].superseded = true;
		struct pgst *np = calloc(m->n_pgs ? m->n_pgs : 1, sizeof(*np));
		if (!np)
			return;
		for (uint32_t i = 0; i < r->o.max_pgs; i++)
			if (r->scans[i].used && r->scans[i].pg < m->n_pgs)
				np[r->scans[i].pg].active = true;
		free(r->pgs);
		r->pgs = np;
		r->n_pgs = (uint32_t)m->n_pgs;
	}
	uint32_t primaries = 0;
	for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
		struct pgst *p = &r->pgs[pg];
		const Iolake__Meta__PgEntry *e = m->pgs[pg];
		struct osd_recover_sig was = p->cur;
		sig_of(m, e, &p->cur);
		if (!osd_recover_sig_eq(&was, &p->cur)) {
			/* A scan that failed against the old slots (a peer
			 * dying, say) is no reason to wait with the new. */
			p->retry_at_ms = 0;
			p->backoff_ms = 0;
		}
		int ps = osd_recover_primary_slot(pg, &p->cur);
		p->primary = ps >= 0 && p->cur.osds[ps] == r->osd_id;
		primaries += p->primary;
		if (p->primary && !p->deep_due_ms && r->o.deep_scrub_ms)
			p->deep_due_ms = loop_now_ms() + deep_stagger_ms(r, pg);
		if (!p->primary) {
			p->deep_due_ms = 0;
			p->deep_wanted = false;
			/* Forget the last clean scan: while another OSD leads,
			 * this one cannot tell what happened to the PG (it may
			 * be the one that was away, and come back to the very
			 * same signature), so leading again means a scan. */
			p->queued = false;
			p->have_clean = false;
			p->state = NULL;
			continue;
		}
		if (!p->have_clean || !osd_recover_sig_eq(&p->clean, &p->cur))
			p->queued = true;
	}
	for (uint32_t i = 0; i < r->o.max_pgs; i++) {
		struct scan *s = &r->scans[i];
		if (s->used && s->pg < r->n_pgs && !osd_recover_sig_eq(&s->sig, &r->pgs[s->pg].cur))
			s->superseded = true;
	}
	r->st.pgs_primary = primaries;
	metrics_gauge_set(r->m_primary, primaries);
	pump(r);
}

static void pump(struct osd_recover *r)
{
	if (r->stopping || !r->pgs)
		return;
	uint64_t now = loop_now_ms();
	for (uint32_t si = 0; si < r->o.max_pgs; si++) {
		struct scan *s = &r->scans[si];
		if (s->used)
			continue;
		/* Size the work before doing it: a queued PG whose signature
		 * has no count yet gets a count-only scan (listings only)
		 * before any counted one is rebuilt, so the reports carry all
		 * the bytes left from the start and the ETA holds. */
		int best = -1;
		unsigned best_u = 0;
		bool best_count = false;
		for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
			struct pgst *p = &r->pgs[pg];
			if (!p->primary || !p->queued || p->active || p->retry_at_ms > now)
				continue;
			bool need_count = !p->counted || !osd_recover_sig_eq(&p->counted_sig, &p->cur);
			unsigned u = urgency(p) + (p->flagged ? 1 : 0);
			if (best < 0 || (need_count && !best_count) ||
			    (need_count == best_count && u > best_u)) {
				best = (int)pg;
				best_u = u;
				best_count = need_count;
			}
		}
		if (best < 0)
			return;
		osd_recover_scan_start(r, s, (uint32_t)best, best_count);
	}
}

static void on_kick(uv_timer_t *t)
{
	pump(t->data);
}

static void close_handles(struct osd_recover *r);

void osd_recover_scan_ended(struct osd_recover *r)
{
	if (r->stopping) {
		if (!r->st.pgs_active && !r->stray_calls)
			close_handles(r);
		return;
	}
	/* Start the next PG from a clean stack, not from inside this
	 * scan's last callback. */
	uv_timer_start(&r->kick, on_kick, 0, 0);
}

/* ------------------------------------------------------------ reports */

static void on_report(void *ud, int err, const ProtobufCMessage *resp)
{
	struct osd_recover *r = ud;
	r->report_inflight = false;
	if (r->stopping)
		return;
	if (err == -EOPNOTSUPP) {
		if (!r->unimpl_logged)
			LOG_DEBUG("meta does not serve ReportPgs yet; reports dropped", "osd=%u",
				  r->osd_id);
		r->unimpl_logged = true;
		return;
	}
	if (err || !resp)
		return;
	const Iolake__Meta__ReportPgsResponse *rr = (const void *)resp;
	for (size_t i = 0; i < rr->n_rescan_pgs; i++) {
		uint32_t pg = rr->rescan_pgs[i];
		if (pg < r->n_pgs && r->pgs[pg].primary) {
			r->pgs[pg].queued = true;
			r->pgs[pg].flagged = true;
			r->pgs[pg].retry_at_ms = 0;
		}
	}
	pump(r);
}

static void send_report(struct osd_recover *r)
{
	if (r->report_inflight || !r->pgs || !r->epoch)
		return;
	uint32_t n = 0;
	for (uint32_t pg = 0; pg < r->n_pgs; pg++)
		n += r->pgs[pg].primary;
	Iolake__Meta__PgReport *reps = calloc(n ? n : 1, sizeof(*reps));
	Iolake__Meta__PgReport **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!reps || !ptrs) {
		free(reps);
		free(ptrs);
		return;
	}
	size_t j = 0;
	for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
		struct pgst *p = &r->pgs[pg];
		if (!p->primary)
			continue;
		Iolake__Meta__PgReport *e = &reps[j];
		iolake__meta__pg_report__init(e);
		e->pg = pg;
		/* A PG waiting for its scan under a new signature describes
		 * the current map: the old counts do not apply to it. */
		bool fresh = p->state && (p->active || osd_recover_sig_eq(&p->rep, &p->cur));
		const struct osd_recover_sig *sg = fresh ? &p->rep : &p->cur;
		/* A report that still describes the current slots is as good
		 * as new for this epoch (meta keeps the newest epoch's). */
		e->epoch = fresh && !osd_recover_sig_eq(sg, &p->cur) ? p->epoch : r->epoch;
		e->osds = (uint32_t *)sg->osds;
		e->n_osds = sg->width;
		e->up_mask = sg->up_mask;
		if (fresh) {
			e->state = (char *)p->state;
			e->stripes = p->stripes;
			e->stripes_missing = p->stripes_missing;
			e->bytes_missing = p->bytes_missing;
			e->stripes_done = p->stripes_done;
			e->bytes_done = p->bytes_done;
			e->unfound = p->unfound;
			e->unfound_live = p->unfound_live;
			e->min_shards = p->min_shards;
			e->bad_shards = p->bad_shards;
		} else {
			e->state = (char *)"scanning";
		}
		e->unfound_live = p->unfound_live;   /* the last check's, also while scanning */
		e->rate_bytes_per_s = (uint64_t)p->rate;
		e->scan_started_ms = p->scan_started_ms;
		e->last_clean_ms = p->last_clean_ms;
		ptrs[j] = e;
		j++;
	}
	Iolake__Meta__ReportPgsRequest q = IOLAKE__META__REPORT_PGS_REQUEST__INIT;
	q.osd_id = r->osd_id;
	q.epoch = r->epoch;
	q.pgs = ptrs;
	q.n_pgs = j;
	q.recovery_rate_limit = r->o.rate_bytes;
	q.rate_bytes_per_s = r->osd_rate;
	if (log_enabled(LOG_LEVEL_DEBUG)) {
		/* What meta is told, readable in the OSD's log until meta's
		 * PgStats shows it. */
		static const char *const states[] = { "clean", "degraded", "scanning",
						      "recovering", "backfilling" };
		unsigned n_state[5] = { 0 };
		uint64_t missing = 0;
		for (size_t i = 0; i < j; i++) {
			for (unsigned t = 0; t < 5; t++)
				if (!strcmp(reps[i].state, states[t]))
					n_state[t]++;
			missing += reps[i].bytes_missing;
		}
		LOG_DEBUG("pg report", "osd=%u epoch=%" PRIu64 " pgs=%zu clean=%u degraded=%u "
			  "scanning=%u recovering=%u backfilling=%u bytes_missing=%" PRIu64,
			  r->osd_id, r->epoch, j, n_state[0], n_state[1], n_state[2], n_state[3],
			  n_state[4], missing);
	}
	r->report_inflight = true;
	if (meta_client_call(r->mc, META_M_REPORT_PGS, &q.base, on_report, r))
		r->report_inflight = false;
	free(reps);
	free(ptrs);
}

static void on_flag(void *ud, int err, const ProtobufCMessage *resp)
{
	struct osd_recover *r = ud;
	(void)resp;
	r->flag_inflight = false;
	if (err == -EOPNOTSUPP && !r->unimpl_logged && !r->stopping) {
		LOG_DEBUG("meta does not serve FlagPgs yet", "osd=%u", r->osd_id);
		r->unimpl_logged = true;
	}
}

static void send_flags(struct osd_recover *r)
{
	if (r->flag_inflight || !r->n_flags)
		return;
	Iolake__Meta__FlagPgsRequest q = IOLAKE__META__FLAG_PGS_REQUEST__INIT;
	q.pgs = r->flags;
	q.n_pgs = r->n_flags;
	q.reason = (char *)"scrub";
	r->flag_inflight = true;
	if (meta_client_call(r->mc, META_M_FLAG_PGS, &q.base, on_flag, r))
		r->flag_inflight = false;
	else
		r->n_flags = 0;
}

void osd_recover_flag_pg(struct osd_recover *r, uint32_t pg)
{
	if (r->stopping)
		return;
	if (pg < r->n_pgs && r->pgs[pg].primary) {
		r->pgs[pg].queued = true;
		r->pgs[pg].flagged = true;
		r->pgs[pg].retry_at_ms = 0;
		pump(r);
		return;
	}
	for (size_t i = 0; i < r->n_flags; i++)
		if (r->flags[i] == pg)
			return;
	if (r->n_flags < FLAG_MAX)
		r->flags[r->n_flags++] = pg; /* beyond: the hourly rescan finds it */
}

/* ------------------------------------------------------------ tick */

static void on_tick(uv_timer_t *t)
{
	struct osd_recover *r = t->data;
	uint64_t now = loop_now_ms();
	uint64_t missing = 0, unfound = 0;
	uint32_t queued = 0, deep_due = 0;
	for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
		struct pgst *p = &r->pgs[pg];
		/* The rate of this rebuild from its start (at least a second
		 * of it): no warm-up, so the sum meta makes over the PGs being
		 * rebuilt, and the ETA from it, is right from the first
		 * report; 0 for a PG not being rebuilt. */
		if (p->active && p->rebuild_started_ms) {
			uint64_t ms = now - p->rebuild_started_ms;
			p->rate = (double)p->bytes_done * 1000.0 / (double)(ms > 1000 ? ms : 1000);
		} else {
			p->rate = 0;
		}
		if (!p->primary)
			continue;
		missing += p->bytes_missing;
		unfound += p->unfound;
		if (p->have_clean && !p->queued && !p->active &&
		    now >= p->last_scan_end_ms + r->o.rescan_ms)
			p->queued = true;
		queued += p->queued;
		if (p->deep_due_ms && now >= p->deep_due_ms && p->have_clean && !p->queued &&
		    !p->active)
			deep_due++;
	}
	/* Deep scrubs only while nothing is left to rebuild here: they share
	 * the bucket and the scan slots with recovery, and come second. A PG
	 * whose deep scan gave way to a rebuild (deep_wanted still set) is
	 * queued again here once clean. */
	if (deep_due && !missing) {
		for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
			struct pgst *p = &r->pgs[pg];
			if (!p->primary || !p->have_clean || p->queued || p->active ||
			    !p->deep_due_ms || now < p->deep_due_ms)
				continue;
			p->deep_wanted = true;
			p->queued = true;
			queued++;
		}
	}
	r->st.bytes_missing = missing;
	r->st.unfound = unfound;
	if (missing || r->st.pgs_active) {
		/* The rate counts from the first byte rebuilt: the count-only
		 * scans of every queued PG come first, and counting their time
		 * made the first ETAs 2-3x too long. Until a byte is rebuilt
		 * the rate is unknown (0) and meta falls back to the others'. */
		if (!r->busy_since_ms || r->st.bytes == r->busy_bytes0) {
			r->busy_since_ms = now;
			r->busy_bytes0 = r->st.bytes;
		}
		uint64_t ms = now - r->busy_since_ms;
		r->osd_rate = (r->st.bytes - r->busy_bytes0) * 1000 / (ms > 1000 ? ms : 1000);
	} else {
		r->busy_since_ms = 0;
		r->osd_rate = 0;
	}
	r->st.pgs_queued = queued;
	metrics_gauge_set(r->m_missing, (int64_t)missing);
	if (now >= r->next_report_ms) {
		r->next_report_ms = now + r->o.report_ms;
		send_report(r);
	}
	osd_recover_stray_tick(r, now);
	if (now >= r->next_flag_ms && r->n_flags) {
		r->next_flag_ms = now + 1000;
		send_flags(r);
	}
	pump(r);
}

/* ------------------------------------------------------------ life */

static int make_metrics(struct osd_recover *r)
{
	struct metrics_registry *reg = r->o.metrics;
	const char *id = r->id_label;
#define NEW_OR_FAIL(x) \
	do {           \
		if (!(x))  \
			return errno ? -errno : -ENOMEM; \
	} while (0)
	NEW_OR_FAIL(r->m_bytes = metrics_counter_new(reg, "iolake_osd_recovery_bytes_total",
		"Shard bytes written by this OSD's recovery driver.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_stripes = metrics_counter_new(reg, "iolake_osd_recovery_stripes_total",
		"Stripes repaired by this OSD's recovery driver.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_errors = metrics_counter_new(reg, "iolake_osd_recovery_errors_total",
		"Recovery errors: inconsistent stripes, bad sources, failed puts.",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_primary = metrics_gauge_new(reg, "iolake_osd_recovery_pgs_primary",
		"PGs this OSD is the primary of.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_active = metrics_gauge_new(reg, "iolake_osd_recovery_pgs_active",
		"PGs being scanned or rebuilt by this OSD now.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_missing = metrics_gauge_new(reg, "iolake_osd_recovery_bytes_missing",
		"Shard bytes still to rebuild in this OSD's primary PGs, as last counted.",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_deep_stripes = metrics_counter_new(reg,
		"iolake_osd_deep_scrub_stripes_total",
		"Stripes deep-scrubbed (all k+m shards read and compared) by this OSD's driver.",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_deep_bytes = metrics_counter_new(reg, "iolake_osd_deep_scrub_bytes_total",
		"Shard bytes read by this OSD's deep scrubs.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_deep_repaired = metrics_counter_new(reg,
		"iolake_osd_deep_scrub_repaired_total",
		"Shards rewritten by deep scrub: the one shard that disagreed with its stripe.",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_deep_inconsistent = metrics_counter_new(reg,
		"iolake_osd_deep_scrub_inconsistent_total",
		"Stripes deep scrub found inconsistent with no single shard to blame (left alone).",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_deep_pgs = metrics_counter_new(reg, "iolake_osd_deep_scrub_pgs_total",
		"PG deep scrubs completed by this OSD's driver.", METRICS_LABELS("osd", id)));
#undef NEW_OR_FAIL
	return 0;
}

int osd_recover_start(uv_loop_t *loop, const struct osd_recover_opts *opts,
		      struct osd_recover **out)
{
	if (!opts || !opts->n_meta || !opts->metrics)
		return -EINVAL;
	struct osd_recover *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->loop = loop;
	r->o = *opts;
	r->o.meta = NULL;
	r->osd_id = opts->osd_id;
	if (!r->o.max_pgs)
		r->o.max_pgs = 2;
	if (!r->o.stripes_inflight)
		r->o.stripes_inflight = 4;
	if (r->o.stripes_inflight > MAX_JOBS)
		r->o.stripes_inflight = MAX_JOBS;
	if (!r->o.report_ms)
		r->o.report_ms = 2000;
	if (!r->o.rescan_ms)
		r->o.rescan_ms = 3600ull * 1000;
	if (!r->o.rpc_timeout_ms)
		r->o.rpc_timeout_ms = 10000;
	r->st.rate_bytes = r->o.rate_bytes;
	snprintf(r->id_label, sizeof(r->id_label), "%u", r->osd_id);
	int rc = make_metrics(r);
	if (rc)
		goto fail_free;
	rc = -ENOMEM;
	r->scans = calloc(r->o.max_pgs, sizeof(*r->scans));
	if (!r->scans)
		goto fail_free;
	struct meta_client_opts mo = { .members = opts->meta, .n_members = opts->n_meta,
				       .attempt_timeout_ms = 3000, .retry_for_ms = 5000,
				       .max_calls = 16 };
	rc = meta_client_new(loop, &mo, &r->mc);
	if (rc)
		goto fail_scans;
	char name[24];
	snprintf(name, sizeof(name), "osd.%u", r->osd_id);
	struct meta_mapwatch_opts wo = { .members = opts->meta, .n_members = opts->n_meta,
					 .on_change = on_map, .arg = r, .log_name = name };
	rc = meta_mapwatch_start(loop, &wo, &r->mw);
	if (rc)
		goto fail_mc;
	uv_timer_init(loop, &r->tick);
	uv_timer_init(loop, &r->wake);
	uv_timer_init(loop, &r->kick);
	r->tick.data = r->wake.data = r->kick.data = r;
	r->tokens_ms = loop_now_ms();
	uv_timer_start(&r->tick, on_tick, TICK_MS, TICK_MS);
	LOG_INFO("recovery driver started", "osd=%u rate=%" PRIu64 " max_pgs=%u report_ms=%u "
		 "rescan_ms=%" PRIu64 " deep_scrub_ms=%" PRIu64, r->osd_id, r->o.rate_bytes,
		 r->o.max_pgs, r->o.report_ms, r->o.rescan_ms, r->o.deep_scrub_ms);
	*out = r;
	return 0;

fail_mc:
	meta_client_close(r->mc);
fail_scans:
	free(r->scans);
fail_free:
	free(r);
	return rc;
}

void osd_recover_stats(const struct osd_recover *r, struct osd_recover_stats *out)
{
	*out = r->st;
}

static void hook_bad(void *arg, uint32_t pg)
{
	osd_recover_flag_pg(arg, pg);
}

/* PutShardRequest.map_epoch's check, on the OSD's loop: the mapwatch's
 * map (the newest this OSD has; the driver's own epoch may trail it by a
 * loop turn). Judged only when that map is newer than the caller's; then
 * a slot another OSD holds, or none, is refused. An older map, none yet,
 * or a slot past the PG's width is the caller's word. */
static bool hook_misplaced(void *arg, uint32_t pg, uint32_t shard, uint64_t epoch, char *why,
			   size_t cap)
{
	struct osd_recover *r = arg;
	const Iolake__Meta__ClusterMap *m = meta_mapwatch_map(r->mw);
	if (!m || epoch >= m->epoch || pg >= m->n_pgs || shard >= m->pgs[pg]->n_osds)
		return false;
	uint32_t holder = m->pgs[pg]->osds[shard];
	if (holder == r->osd_id)
		return false;
	if (holder == PLACE_NONE)
		snprintf(why, cap, "placed with map epoch %" PRIu64 "; in this OSD's epoch %" PRIu64
			 " slot %u of PG %u is empty", epoch, m->epoch, shard, pg);
	else
		snprintf(why, cap, "placed with map epoch %" PRIu64 "; in this OSD's epoch %" PRIu64
			 " slot %u of PG %u is OSD %u's", epoch, m->epoch, shard, pg, holder);
	return true;
}

static void hook_status(void *arg, struct osd_service_recovery *o)
{
	const struct osd_recover *r = arg;
	o->rate = r->st.rate_bytes;
	o->bytes = r->st.bytes;
	o->stripes = r->st.stripes;
	o->errors = r->st.errors;
	o->bytes_missing = r->st.bytes_missing;
	o->unfound = r->st.unfound;
	o->scans = r->st.scans;
	o->pgs_primary = r->st.pgs_primary;
	o->pgs_active = r->st.pgs_active;
	o->pgs_queued = r->st.pgs_queued;
	o->deep_interval_ms = r->o.deep_scrub_ms;
	o->deep_pgs = r->st.deep_pgs;
	o->deep_stripes = r->st.deep_stripes;
	o->deep_bytes = r->st.deep_bytes;
	o->deep_repaired = r->st.deep_repaired;
	o->deep_inconsistent = r->st.deep_inconsistent;
	o->deep_last_unix_ms = r->st.deep_last_unix_ms;
}

void osd_recover_hooks(struct osd_recover *r, struct osd_service_hooks *out)
{
	out->bad_pg = hook_bad;
	out->status = hook_status;
	out->misplaced = hook_misplaced;
	out->arg = r;
}

static void on_closed(uv_handle_t *h)
{
	struct osd_recover *r = h->data;
	if (--r->handles)
		return;
	void (*cb)(void *) = r->done_cb;
	void *arg = r->done_arg;
	ec_free(r->ec);
	free(r->pgs);
	free(r->scans);
	free(r->stray_mode);    /* a round cut short by the stop */
	free(r->stray_push_seen);
	free(r);
	if (cb)
		cb(arg);
}

static void close_handles(struct osd_recover *r)
{
	if (r->closing_handles)
		return;
	r->closing_handles = true;
	r->handles = 3;
	uv_close((uv_handle_t *)&r->tick, on_closed);
	uv_close((uv_handle_t *)&r->wake, on_closed);
	uv_close((uv_handle_t *)&r->kick, on_closed);
}

void osd_recover_stop(struct osd_recover *r, void (*done_cb)(void *arg), void *arg)
{
	r->stopping = true;
	r->done_cb = done_cb;
	r->done_arg = arg;
	uv_timer_stop(&r->tick);
	uv_timer_stop(&r->wake);
	uv_timer_stop(&r->kick);
	/* Jobs waiting for tokens end now. The map watch closes our OSD
	 * channels a loop turn later, which fails every call still in
	 * flight (CANCELLED) and so ends every scan; the last one to end
	 * closes the handles, whose callbacks free r. */
	osd_recover_scan_drop_waiters(r);
	meta_mapwatch_close(r->mw);
	r->mw = NULL;
	meta_client_close(r->mc);
	r->mc = NULL;
	if (!r->st.pgs_active && !r->stray_calls)
		close_handles(r);
}

void osd_recover_stray_stopped(struct osd_recover *r)
{
	if (!r->st.pgs_active && !r->stray_calls)
		close_handles(r);
}
