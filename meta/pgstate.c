/*
 * pgstate.c — the leader's PG health table: one report slot and one
 * rescan flag per PG, and the derivation of PG states (rules in
 * pgstate.h).
 *
 * Invariant: the table has exactly the map's pg_count slots; a map with
 * another pg_count (only possible across an InitMap on an empty state)
 * resizes it and drops what it held. Memory: pg_count * (one report
 * slot + one flag byte), nothing else, whatever the traffic.
 *
 * Thread: the meta node's loop. Does not: read the clock (callers pass
 * now_ms), talk to anyone, persist anything.
 */
#include "meta/pgstate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct meta_pgstate {
	uint32_t n;                    /* slots: the map's pg_count (0 before a map) */
	struct meta_pg_report *reps;   /* [n] */
	uint8_t *flags;                /* [n]: 1 when flagged for a rescan */
	size_t n_flagged;
	/* The OSDs' own rebuild rates: one entry per OSD that ever sent one
	 * (bounded by the map's OSDs, PLACE_MAX_OSDS). */
	struct osd_rate {
		uint32_t id;
		uint64_t rate, at_ms;
	} *rates;                      /* sorted by id */
	size_t n_rates, cap_rates;
};

/* Index of osd_id in p->rates, or where it would go (sorted by id). */
static size_t rate_at(const struct meta_pgstate *p, uint32_t osd_id)
{
	size_t lo = 0, hi = p->n_rates;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->rates[mid].id < osd_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int meta_pgstate_osd_rate(struct meta_pgstate *p, uint32_t osd_id, uint64_t rate,
			  uint64_t now_ms)
{
	size_t i = rate_at(p, osd_id);
	if (i == p->n_rates || p->rates[i].id != osd_id) {
		if (p->n_rates == PLACE_MAX_OSDS)
			return -ENOMEM;
		if (p->n_rates == p->cap_rates) {
			size_t cap = p->cap_rates ? p->cap_rates * 2 : 16;
			struct osd_rate *n = realloc(p->rates, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			p->rates = n;
			p->cap_rates = cap;
		}
		memmove(&p->rates[i + 1], &p->rates[i], (p->n_rates - i) * sizeof(*p->rates));
		p->n_rates++;
	}
	p->rates[i] = (struct osd_rate){ .id = osd_id, .rate = rate, .at_ms = now_ms };
	return 0;
}

static const char *const names[META_PG__COUNT] = {
	[META_PG_BACKFILLING] = "active+backfilling",
	[META_PG_BACKFILLING_DEGRADED] = "active+backfilling+degraded",
	[META_PG_CLEAN] = "active+clean",
	[META_PG_DEGRADED] = "active+degraded",
	[META_PG_RECOVERING] = "active+recovering",
	[META_PG_RECOVERING_DEGRADED] = "active+recovering+degraded",
	[META_PG_REMAPPED] = "active+remapped",
	[META_PG_UNFOUND] = "active+unfound",
	[META_PG_INCOMPLETE] = "incomplete",
	[META_PG_UNKNOWN] = "unknown",
};

const char *meta_pgstate_name(enum meta_pg_state s)
{
	return (unsigned)s < META_PG__COUNT ? names[s] : "unknown";
}

static enum meta_pg_report_kind kind_of(const char *s)
{
	if (!s)
		return META_PGR_SCANNING;
	if (!strcmp(s, "clean"))
		return META_PGR_CLEAN;
	if (!strcmp(s, "recovering"))
		return META_PGR_RECOVERING;
	if (!strcmp(s, "backfilling"))
		return META_PGR_BACKFILLING;
	if (!strcmp(s, "degraded"))
		return META_PGR_DEGRADED;
	return META_PGR_SCANNING;
}

/* Some slot empty or its OSD down. */
static bool slots_degraded(uint32_t width, const uint32_t *osds, uint32_t up_mask)
{
	for (uint32_t i = 0; i < width; i++)
		if (osds[i] == PLACE_NONE || !(up_mask & (1u << i)))
			return true;
	return false;
}

/* The state a report's own word gives (not for SCANNING). */
static enum meta_pg_state state_of_kind(enum meta_pg_report_kind k, bool degraded)
{
	switch (k) {
	case META_PGR_CLEAN: return META_PG_CLEAN;
	case META_PGR_RECOVERING: return degraded ? META_PG_RECOVERING_DEGRADED : META_PG_RECOVERING;
	case META_PGR_BACKFILLING:
		return degraded ? META_PG_BACKFILLING_DEGRADED : META_PG_BACKFILLING;
	case META_PGR_DEGRADED: return META_PG_DEGRADED;
	case META_PGR_SCANNING: break;
	}
	return META_PG_UNKNOWN;
}

/* A carried state under today's up set: the previous report may have
 * seen every slot up (or one down that is back). Never shows clean while
 * a slot is down. */
static enum meta_pg_state with_degraded(enum meta_pg_state s, bool degraded)
{
	switch (s) {
	case META_PG_CLEAN: return degraded ? META_PG_DEGRADED : s;
	case META_PG_RECOVERING:
	case META_PG_RECOVERING_DEGRADED:
		return degraded ? META_PG_RECOVERING_DEGRADED : META_PG_RECOVERING;
	case META_PG_BACKFILLING:
	case META_PG_BACKFILLING_DEGRADED:
		return degraded ? META_PG_BACKFILLING_DEGRADED : META_PG_BACKFILLING;
	default: return s;
	}
}

static bool same_slots(const struct meta_pg_report *r, uint32_t width, const uint32_t *osds)
{
	return r->n_osds == width && !memcmp(r->osds, osds, width * sizeof(*osds));
}

void meta_pgstate_derive(const struct meta_pg_view *v, const struct meta_pg_report *rep,
			 uint64_t now_ms, struct meta_pg_derived *out)
{
	memset(out, 0, sizeof(*out));
	int ps = place_primary_slot(v->pg, v->osds, v->width, v->up_mask);
	out->primary = ps >= 0 ? v->osds[ps] : PLACE_NONE;
	uint32_t up = 0;
	for (uint32_t i = 0; i < v->width; i++)
		if (v->osds[i] != PLACE_NONE && (v->up_mask & (1u << i)))
			up++;
	bool degraded = slots_degraded(v->width, v->osds, v->up_mask);
	if (rep && !rep->present)
		rep = NULL;
	if (rep) {
		out->age_ms = now_ms > rep->recv_ms ? now_ms - rep->recv_ms : 0;
		if (rep->rate_bytes_per_s)
			out->eta_s = rep->bytes_missing / rep->rate_bytes_per_s;
		out->report_valid = same_slots(rep, v->width, v->osds) &&
				    rep->up_mask == v->up_mask &&
				    out->age_ms <= META_PGSTATE_MAX_AGE_MS;
	}
	if (up < v->k) {
		out->state = META_PG_INCOMPLETE;
		return;
	}
	if (out->report_valid) {
		if (rep->unfound_live)
			out->state = META_PG_UNFOUND;   /* whatever else: objects unreadable */
		else if (rep->kind != META_PGR_SCANNING)
			out->state = state_of_kind(rep->kind, degraded);
		else if (rep->carried != META_PG_UNKNOWN)
			out->state = with_degraded(rep->carried, degraded);
		else
			out->state = degraded ? META_PG_DEGRADED : META_PG_UNKNOWN;
		return;
	}
	if (rep && !same_slots(rep, v->width, v->osds))
		out->state = META_PG_REMAPPED;
	else if (degraded)
		out->state = META_PG_DEGRADED;
	else
		out->state = META_PG_UNKNOWN;
}

static const Iolake__Meta__OsdInfo *find_osd(const Iolake__Meta__ClusterMap *m, uint32_t id)
{
	size_t lo = 0, hi = m->n_osds;   /* osds are sorted by id */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->osds[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n_osds && m->osds[lo]->id == id ? m->osds[lo] : NULL;
}

int meta_pgstate_view(const Iolake__Meta__ClusterMap *m, uint32_t pg, struct meta_pg_view *v)
{
	if (!m || pg >= m->n_pgs || !m->pgs[pg])
		return -EINVAL;
	const Iolake__Meta__PgEntry *e = m->pgs[pg];
	if (e->n_osds == 0 || e->n_osds > PLACE_MAX_WIDTH)
		return -EINVAL;
	v->pg = pg;
	v->k = m->k;
	v->width = (uint32_t)e->n_osds;
	v->osds = e->osds;
	v->up_mask = 0;
	for (uint32_t i = 0; i < v->width; i++) {
		if (e->osds[i] == PLACE_NONE)
			continue;
		const Iolake__Meta__OsdInfo *o = find_osd(m, e->osds[i]);
		if (o && o->up)
			v->up_mask |= 1u << i;
	}
	return 0;
}

/* ------------------------------------------------------------ table */

int meta_pgstate_new(struct meta_pgstate **out)
{
	struct meta_pgstate *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*out = p;
	return 0;
}

void meta_pgstate_free(struct meta_pgstate *p)
{
	if (!p)
		return;
	free(p->reps);
	free(p->flags);
	free(p->rates);
	free(p);
}

void meta_pgstate_reset(struct meta_pgstate *p)
{
	if (p->n) {
		memset(p->reps, 0, p->n * sizeof(*p->reps));
		memset(p->flags, 0, p->n);
	}
	p->n_flagged = 0;
	p->n_rates = 0;
}

/* Size the table to m's PGs (dropping everything when that changes). */
static int fit(struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m)
{
	uint32_t n = (uint32_t)m->n_pgs;
	if (n > PLACE_MAX_PGS)
		return -EINVAL;
	if (n == p->n)
		return 0;
	struct meta_pg_report *reps = calloc(n ? n : 1, sizeof(*reps));
	uint8_t *flags = calloc(n ? n : 1, 1);
	if (!reps || !flags) {
		free(reps);
		free(flags);
		return -ENOMEM;
	}
	free(p->reps);
	free(p->flags);
	p->reps = reps;
	p->flags = flags;
	p->n = n;
	p->n_flagged = 0;
	return 0;
}

int meta_pgstate_report(struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m,
			uint32_t osd_id, const Iolake__Meta__PgReport *r, uint64_t now_ms)
{
	int rc = fit(p, m);
	if (rc)
		return rc;
	if (r->pg >= p->n || r->n_osds == 0 || r->n_osds > PLACE_MAX_WIDTH)
		return -EINVAL;
	struct meta_pg_report *old = &p->reps[r->pg];
	if (old->present && old->epoch > r->epoch)
		return 0;   /* a primary of an older map, late */
	struct meta_pg_report n;
	memset(&n, 0, sizeof(n));
	n.present = true;
	n.from_osd = osd_id;
	n.recv_ms = now_ms;
	n.kind = kind_of(r->state);
	n.epoch = r->epoch;
	n.n_osds = (uint32_t)r->n_osds;
	memcpy(n.osds, r->osds, r->n_osds * sizeof(*r->osds));
	n.up_mask = r->up_mask;
	snprintf(n.state, sizeof(n.state), "%s", r->state ? r->state : "");
	n.stripes = r->stripes;
	n.stripes_missing = r->stripes_missing;
	n.bytes_missing = r->bytes_missing;
	n.stripes_done = r->stripes_done;
	n.bytes_done = r->bytes_done;
	n.rate_bytes_per_s = r->rate_bytes_per_s;
	n.unfound = r->unfound;
	n.unfound_live = r->unfound_live;
	n.bad_shards = r->bad_shards;
	n.min_shards = r->min_shards;
	n.scan_started_ms = r->scan_started_ms;
	n.last_clean_ms = r->last_clean_ms;
	/* What a "scanning" report shows: the previous report's state while
	 * the slots stay, remapped when they moved. */
	n.carried = META_PG_UNKNOWN;
	if (old->present) {
		if (!same_slots(old, n.n_osds, n.osds))
			n.carried = META_PG_REMAPPED;
		else if (old->kind == META_PGR_SCANNING)
			n.carried = old->carried;
		else
			n.carried = state_of_kind(old->kind,
						  slots_degraded(old->n_osds, old->osds, old->up_mask));
	}
	*old = n;
	return 0;
}

int meta_pgstate_flag(struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m, uint32_t pg)
{
	int rc = fit(p, m);
	if (rc)
		return rc;
	if (pg >= p->n)
		return -EINVAL;
	if (!p->flags[pg]) {
		p->flags[pg] = 1;
		p->n_flagged++;
	}
	return 0;
}

size_t meta_pgstate_take_rescans(struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m,
				 uint32_t osd_id, uint32_t *out, size_t cap)
{
	size_t got = 0;
	if (!p->n_flagged || p->n != m->n_pgs)
		return 0;
	for (uint32_t pg = 0; pg < p->n && got < cap; pg++) {
		if (!p->flags[pg])
			continue;
		struct meta_pg_view v;
		struct meta_pg_derived d;
		if (meta_pgstate_view(m, pg, &v))
			continue;
		meta_pgstate_derive(&v, NULL, 0, &d);
		if (d.primary != osd_id)
			continue;
		p->flags[pg] = 0;
		p->n_flagged--;
		out[got++] = pg;
	}
	return got;
}

size_t meta_pgstate_flagged(const struct meta_pgstate *p)
{
	return p->n_flagged;
}

const struct meta_pg_report *meta_pgstate_get(const struct meta_pgstate *p, uint32_t pg)
{
	return pg < p->n && p->reps[pg].present ? &p->reps[pg] : NULL;
}

void meta_pgstate_derive_all(const struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m,
			     uint64_t now_ms, struct meta_pg_derived *out,
			     struct meta_pg_totals *tot)
{
	memset(tot, 0, sizeof(*tot));
	/* bytes left per reporting OSD (p->rates' order); NULL: no per-OSD ETA */
	uint64_t *miss = calloc(p->n_rates ? p->n_rates : 1, sizeof(*miss));
	for (uint32_t pg = 0; m && pg < m->n_pgs; pg++) {
		struct meta_pg_view v;
		struct meta_pg_derived d;
		if (meta_pgstate_view(m, pg, &v)) {
			memset(&d, 0, sizeof(d));
			d.state = META_PG_UNKNOWN;
			d.primary = PLACE_NONE;
		} else {
			const struct meta_pg_report *r = p->n == m->n_pgs ? meta_pgstate_get(p, pg) : NULL;
			meta_pgstate_derive(&v, r, now_ms, &d);
			if (d.report_valid) {
				tot->stripes_missing += r->stripes_missing;
				tot->bytes_missing += r->bytes_missing;
				tot->rate_bytes_per_s += r->rate_bytes_per_s;
				tot->unfound += r->unfound;
				tot->unfound_live += r->unfound_live;
				size_t ri = rate_at(p, r->from_osd);
				if (miss && ri < p->n_rates && p->rates[ri].id == r->from_osd)
					miss[ri] += r->bytes_missing;
			}
		}
		tot->counts[d.state]++;
		if (out)
			out[pg] = d;
	}
	/* Recovery is declustered: it ends when the OSD with the most left
	 * for its rate ends, so the ETA is that OSD's, not the total over
	 * the total rate (an OSD with twice the share takes twice as long).
	 * An OSD with work but no rate yet is counted at the mean rate. */
	uint64_t osd_sum = 0, eta = 0;
	unsigned n_rated = 0;
	for (size_t i = 0; i < p->n_rates; i++) {
		const struct osd_rate *o = &p->rates[i];
		if (now_ms >= o->at_ms && now_ms - o->at_ms <= META_PGSTATE_MAX_AGE_MS && o->rate) {
			osd_sum += o->rate;
			n_rated++;
		}
	}
	if (osd_sum && miss) {
		uint64_t mean = osd_sum / n_rated;
		for (size_t i = 0; i < p->n_rates; i++) {
			const struct osd_rate *o = &p->rates[i];
			bool fresh = now_ms >= o->at_ms && now_ms - o->at_ms <= META_PGSTATE_MAX_AGE_MS;
			uint64_t rate = fresh && o->rate ? o->rate : mean;
			if (miss[i] / rate > eta)
				eta = miss[i] / rate;
		}
	}
	if (osd_sum)
		tot->rate_bytes_per_s = osd_sum;
	free(miss);
	if (osd_sum && eta)
		tot->eta_s = eta;
	else if (tot->rate_bytes_per_s)
		tot->eta_s = tot->bytes_missing / tot->rate_bytes_per_s;
}
