/*
 * test_pgstate.c — the leader's PG health table without Raft: every
 * derived state (clean, degraded, recovering/backfilling with and without
 * +degraded, remapped, unfound, incomplete, unknown, scanning carrying the
 * previous state), report validity (slots, up set, age, epoch order), rescan flags
 * handed only to the PG's primary, totals and reset.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/pgstate.h"

#define NONE PLACE_NONE

/* ------------------------------------------------------- derivation */

static struct meta_pg_report rep_of(const uint32_t *osds, uint32_t width, uint32_t up_mask,
				    enum meta_pg_report_kind kind)
{
	struct meta_pg_report r;
	memset(&r, 0, sizeof(r));
	r.present = true;
	r.kind = kind;
	r.carried = META_PG_UNKNOWN;
	r.n_osds = width;
	memcpy(r.osds, osds, width * sizeof(*osds));
	r.up_mask = up_mask;
	r.recv_ms = 1000;
	return r;
}

static enum meta_pg_state derive(const uint32_t *osds, uint32_t up_mask,
				 const struct meta_pg_report *r, uint64_t now)
{
	struct meta_pg_view v = { .k = 4, .width = 6, .osds = osds, .up_mask = up_mask };
	struct meta_pg_derived d;
	meta_pgstate_derive(&v, r, now, &d);
	return d.state;
}

START_TEST(test_states)
{
	const uint32_t set[6] = { 1, 2, 3, 4, 5, 6 };
	const uint32_t moved[6] = { 1, 2, 3, 4, 5, 9 };
	const uint32_t hole[6] = { 1, 2, 3, 4, 5, NONE };
	struct meta_pg_report r;

	/* never reported */
	ck_assert_int_eq(derive(set, 0x3f, NULL, 1000), META_PG_UNKNOWN);
	ck_assert_int_eq(derive(set, 0x1f, NULL, 1000), META_PG_DEGRADED);
	ck_assert_int_eq(derive(hole, 0x1f, NULL, 1000), META_PG_DEGRADED);
	/* fewer than k up: incomplete, whatever the report says */
	ck_assert_int_eq(derive(set, 0x07, NULL, 1000), META_PG_INCOMPLETE);
	r = rep_of(set, 6, 0x07, META_PGR_CLEAN);
	ck_assert_int_eq(derive(set, 0x07, &r, 1000), META_PG_INCOMPLETE);

	/* valid reports */
	r = rep_of(set, 6, 0x3f, META_PGR_CLEAN);
	ck_assert_int_eq(derive(set, 0x3f, &r, 1500), META_PG_CLEAN);
	r = rep_of(set, 6, 0x3f, META_PGR_RECOVERING);
	ck_assert_int_eq(derive(set, 0x3f, &r, 1500), META_PG_RECOVERING);
	r = rep_of(set, 6, 0x3f, META_PGR_BACKFILLING);
	ck_assert_int_eq(derive(set, 0x3f, &r, 1500), META_PG_BACKFILLING);
	r = rep_of(set, 6, 0x2f, META_PGR_RECOVERING);
	ck_assert_int_eq(derive(set, 0x2f, &r, 1500), META_PG_RECOVERING_DEGRADED);
	r = rep_of(hole, 6, 0x1f, META_PGR_BACKFILLING);
	ck_assert_int_eq(derive(hole, 0x1f, &r, 1500), META_PG_BACKFILLING_DEGRADED);
	r = rep_of(set, 6, 0x1f, META_PGR_DEGRADED);
	ck_assert_int_eq(derive(set, 0x1f, &r, 1500), META_PG_DEGRADED);

	/* invalid: other slots -> remapped; same slots, other up set -> degraded */
	r = rep_of(set, 6, 0x3f, META_PGR_CLEAN);
	ck_assert_int_eq(derive(moved, 0x3f, &r, 1500), META_PG_REMAPPED);
	ck_assert_int_eq(derive(set, 0x1f, &r, 1500), META_PG_DEGRADED);
	/* stale: past the age limit the report counts for nothing */
	ck_assert_int_eq(derive(set, 0x3f, &r, 1000 + META_PGSTATE_MAX_AGE_MS + 1),
			 META_PG_UNKNOWN);
	ck_assert_int_eq(derive(set, 0x3f, &r, 1000 + META_PGSTATE_MAX_AGE_MS), META_PG_CLEAN);

	/* scanning: the carried state; none carried -> degraded or unknown */
	r = rep_of(set, 6, 0x3f, META_PGR_SCANNING);
	ck_assert_int_eq(derive(set, 0x3f, &r, 1500), META_PG_UNKNOWN);
	r = rep_of(set, 6, 0x1f, META_PGR_SCANNING);
	ck_assert_int_eq(derive(set, 0x1f, &r, 1500), META_PG_DEGRADED);
	r.carried = META_PG_RECOVERING_DEGRADED;
	ck_assert_int_eq(derive(set, 0x1f, &r, 1500), META_PG_RECOVERING_DEGRADED);
	/* a carried state follows today's up set: never clean with a slot down */
	r.carried = META_PG_CLEAN;
	ck_assert_int_eq(derive(set, 0x1f, &r, 1500), META_PG_DEGRADED);
	r.carried = META_PG_BACKFILLING;
	ck_assert_int_eq(derive(set, 0x1f, &r, 1500), META_PG_BACKFILLING_DEGRADED);
	r = rep_of(set, 6, 0x3f, META_PGR_SCANNING);
	r.carried = META_PG_RECOVERING_DEGRADED;
	ck_assert_int_eq(derive(set, 0x3f, &r, 1500), META_PG_RECOVERING);

	/* stripes of live objects below k shards: active+unfound over any
	 * word, scanning included; orphans alone (unfound) change nothing;
	 * incomplete and invalid reports stay what they were */
	r = rep_of(set, 6, 0x3f, META_PGR_CLEAN);
	r.unfound = 5;
	ck_assert_int_eq(derive(set, 0x3f, &r, 1500), META_PG_CLEAN);
	r.unfound_live = 2;
	ck_assert_int_eq(derive(set, 0x3f, &r, 1500), META_PG_UNFOUND);
	ck_assert_str_eq(meta_pgstate_name(META_PG_UNFOUND), "active+unfound");
	r.kind = META_PGR_SCANNING;
	ck_assert_int_eq(derive(set, 0x3f, &r, 1500), META_PG_UNFOUND);
	r.kind = META_PGR_DEGRADED;
	r.up_mask = 0x1f;
	ck_assert_int_eq(derive(set, 0x1f, &r, 1500), META_PG_UNFOUND);
	ck_assert_int_eq(derive(moved, 0x1f, &r, 1500), META_PG_REMAPPED);
	r.up_mask = 0x07;
	ck_assert_int_eq(derive(set, 0x07, &r, 1500), META_PG_INCOMPLETE);
	/* the names stay sorted: PgStatsResponse.counts is listed in enum order */
	for (int i = 1; i < META_PG__COUNT; i++)
		ck_assert_int_lt(strcmp(meta_pgstate_name((enum meta_pg_state)(i - 1)),
					meta_pgstate_name((enum meta_pg_state)i)), 0);
}
END_TEST

START_TEST(test_primary_and_eta)
{
	const uint32_t set[6] = { NONE, 2, 3, 4, 5, 6 };
	struct meta_pg_view v = { .k = 4, .width = 6, .osds = set, .up_mask = 0x3c };
	struct meta_pg_report r = rep_of(set, 6, 0x3c, META_PGR_RECOVERING);
	r.bytes_missing = 1000;
	r.rate_bytes_per_s = 100;
	struct meta_pg_derived d;
	meta_pgstate_derive(&v, &r, 1200, &d);
	/* the draw's pick among the up slots: never the empty slot 0 or the
	 * down slot 1 (place_primary_slot is tested in test_place) */
	int ps = place_primary_slot(0, set, 6, 0x3c);
	ck_assert_int_ge(ps, 2);
	ck_assert_uint_eq(d.primary, set[ps]);
	ck_assert_uint_eq(d.eta_s, 10);
	ck_assert_uint_eq(d.age_ms, 200);
	ck_assert(d.report_valid);
	ck_assert_int_eq(d.state, META_PG_RECOVERING_DEGRADED);
	r.rate_bytes_per_s = 0;
	meta_pgstate_derive(&v, &r, 1200, &d);
	ck_assert_uint_eq(d.eta_s, 0);
	v.up_mask = 0;
	meta_pgstate_derive(&v, NULL, 0, &d);
	ck_assert_uint_eq(d.primary, NONE);
	ck_assert_str_eq(meta_pgstate_name(META_PG_CLEAN), "active+clean");
	ck_assert_str_eq(meta_pgstate_name(META_PG_BACKFILLING_DEGRADED),
			 "active+backfilling+degraded");
	ck_assert_str_eq(meta_pgstate_name(META_PG__COUNT), "unknown");
	/* the enum is in name order (PgStatsResponse.counts is sorted by state) */
	for (int s = 1; s < META_PG__COUNT; s++)
		ck_assert_int_lt(strcmp(meta_pgstate_name(s - 1), meta_pgstate_name(s)), 0);
}
END_TEST

/* ------------------------------------------------------------ table */

/* A map of 4 PGs at 2+1 over OSDs 1..4; PG i has slots {i+1, ...}. */
struct tmap {
	Iolake__Meta__ClusterMap m;
	Iolake__Meta__OsdInfo o[4], *op[4];
	Iolake__Meta__PgEntry p[4], *pp[4];
	uint32_t slots[4][3];
};

static void tmap_init(struct tmap *t)
{
	memset(t, 0, sizeof(*t));
	iolake__meta__cluster_map__init(&t->m);
	t->m.epoch = 5;
	t->m.pg_count = 4;
	t->m.k = 2;
	t->m.m = 1;
	for (int i = 0; i < 4; i++) {
		iolake__meta__osd_info__init(&t->o[i]);
		t->o[i].id = (uint32_t)i + 1;
		t->o[i].up = t->o[i].in = true;
		t->op[i] = &t->o[i];
		for (int s = 0; s < 3; s++)
			t->slots[i][s] = (uint32_t)((i + s) % 4) + 1;
		iolake__meta__pg_entry__init(&t->p[i]);
		t->p[i].pg_id = (uint32_t)i;
		t->p[i].osds = t->slots[i];
		t->p[i].n_osds = 3;
		t->pp[i] = &t->p[i];
	}
	t->m.osds = t->op;
	t->m.n_osds = 4;
	t->m.pgs = t->pp;
	t->m.n_pgs = 4;
}

/* The OSD place_primary_slot makes PG pg's primary in t's map. */
static uint32_t prim(struct tmap *t, uint32_t pg)
{
	struct meta_pg_view v;
	ck_assert_int_eq(meta_pgstate_view(&t->m, pg, &v), 0);
	int ps = place_primary_slot(pg, v.osds, v.width, v.up_mask);
	return ps < 0 ? NONE : v.osds[ps];
}

static void report(struct meta_pgstate *p, struct tmap *t, uint32_t pg, const char *state,
		   uint64_t epoch, uint64_t now, uint64_t missing, uint64_t rate)
{
	struct meta_pg_view v;
	ck_assert_int_eq(meta_pgstate_view(&t->m, pg, &v), 0);
	Iolake__Meta__PgReport r = IOLAKE__META__PG_REPORT__INIT;
	r.pg = pg;
	r.epoch = epoch;
	r.osds = (uint32_t *)v.osds;
	r.n_osds = v.width;
	r.up_mask = v.up_mask;
	r.state = (char *)state;
	r.bytes_missing = missing;
	r.stripes_missing = missing / 10;
	r.rate_bytes_per_s = rate;
	ck_assert_int_eq(meta_pgstate_report(p, &t->m, v.osds[0], &r, now), 0);
}

static enum meta_pg_state state_at(struct meta_pgstate *p, struct tmap *t, uint32_t pg,
				   uint64_t now)
{
	struct meta_pg_derived d[4];
	struct meta_pg_totals tot;
	meta_pgstate_derive_all(p, &t->m, now, d, &tot);
	return d[pg].state;
}

START_TEST(test_table_reports)
{
	struct tmap t;
	tmap_init(&t);
	struct meta_pgstate *p;
	ck_assert_int_eq(meta_pgstate_new(&p), 0);
	ck_assert_int_eq(state_at(p, &t, 0, 0), META_PG_UNKNOWN);

	report(p, &t, 0, "clean", 5, 100, 0, 0);
	report(p, &t, 1, "recovering", 5, 100, 1000, 100);
	report(p, &t, 2, "backfilling", 5, 100, 500, 400);
	ck_assert_int_eq(state_at(p, &t, 0, 200), META_PG_CLEAN);
	ck_assert_int_eq(state_at(p, &t, 1, 200), META_PG_RECOVERING);
	ck_assert_int_eq(state_at(p, &t, 2, 200), META_PG_BACKFILLING);
	ck_assert_int_eq(state_at(p, &t, 3, 200), META_PG_UNKNOWN);

	struct meta_pg_totals tot;
	meta_pgstate_derive_all(p, &t.m, 200, NULL, &tot);
	ck_assert_uint_eq(tot.counts[META_PG_CLEAN], 1);
	ck_assert_uint_eq(tot.counts[META_PG_UNKNOWN], 1);
	ck_assert_uint_eq(tot.bytes_missing, 1500);
	ck_assert_uint_eq(tot.stripes_missing, 150);
	ck_assert_uint_eq(tot.rate_bytes_per_s, 500);
	ck_assert_uint_eq(tot.eta_s, 3);
	/* The OSDs' own rates, when any is non-zero, make the total rate
	 * (PGs finished between two reports count there); stale ones not. */
	ck_assert_int_eq(meta_pgstate_osd_rate(p, 1, 0, 150), 0);
	meta_pgstate_derive_all(p, &t.m, 200, NULL, &tot);
	ck_assert_uint_eq(tot.rate_bytes_per_s, 500);
	ck_assert_int_eq(meta_pgstate_osd_rate(p, 1, 700, 150), 0);
	ck_assert_int_eq(meta_pgstate_osd_rate(p, 2, 800, 190), 0);
	meta_pgstate_derive_all(p, &t.m, 200, NULL, &tot);
	ck_assert_uint_eq(tot.rate_bytes_per_s, 1500);
	ck_assert_uint_eq(tot.eta_s, 1);
	/* The ETA is the slowest OSD's: PG 1's 1000 bytes left (reported
	 * by OSD 2) at OSD 2's 100 B/s take 10 s, whatever the others do;
	 * PG 2's 500 (OSD 3, no rate sent) go at the mean rate. */
	ck_assert_int_eq(meta_pgstate_osd_rate(p, 2, 100, 190), 0);
	meta_pgstate_derive_all(p, &t.m, 200, NULL, &tot);
	ck_assert_uint_eq(tot.rate_bytes_per_s, 800);
	ck_assert_uint_eq(tot.eta_s, 10);
	ck_assert_int_eq(meta_pgstate_osd_rate(p, 2, 800, 190), 0);
	meta_pgstate_derive_all(p, &t.m, 150 + META_PGSTATE_MAX_AGE_MS + 1, NULL, &tot);
	ck_assert_uint_eq(tot.rate_bytes_per_s, 800);   /* osd1's is stale */
	meta_pgstate_reset(p);
	meta_pgstate_derive_all(p, &t.m, 200, NULL, &tot);
	ck_assert_uint_eq(tot.rate_bytes_per_s, 0);
	report(p, &t, 0, "clean", 5, 100, 0, 0);
	report(p, &t, 1, "recovering", 5, 100, 1000, 100);
	report(p, &t, 2, "backfilling", 5, 100, 500, 400);

	/* scanning with the same slots keeps the previous state */
	report(p, &t, 1, "scanning", 5, 300, 0, 0);
	ck_assert_int_eq(state_at(p, &t, 1, 400), META_PG_RECOVERING);
	report(p, &t, 1, "scanning", 5, 300, 0, 0);   /* and keeps carrying it */
	ck_assert_int_eq(state_at(p, &t, 1, 400), META_PG_RECOVERING);
	/* a report of an older epoch is ignored */
	report(p, &t, 0, "backfilling", 4, 300, 0, 0);
	ck_assert_int_eq(state_at(p, &t, 0, 400), META_PG_CLEAN);

	/* OSD 1 goes down: PG 0 (slots 1,2,3) reported up_mask 0x7 -> degraded */
	t.o[0].up = false;
	ck_assert_int_eq(state_at(p, &t, 0, 400), META_PG_DEGRADED);
	/* the slot moves to OSD 4: the old report is for other slots */
	t.slots[0][0] = 4;
	t.o[0].up = true;
	ck_assert_int_eq(state_at(p, &t, 0, 400), META_PG_REMAPPED);
	/* the primary's first scan of the new set: remapped until it knows */
	report(p, &t, 0, "scanning", 6, 500, 0, 0);
	ck_assert_int_eq(state_at(p, &t, 0, 600), META_PG_REMAPPED);
	report(p, &t, 0, "recovering", 6, 700, 10, 1);
	ck_assert_int_eq(state_at(p, &t, 0, 800), META_PG_RECOVERING);
	/* two OSDs of a 2+1 PG down: incomplete */
	t.o[3].up = false;
	t.o[1].up = false;
	ck_assert_int_eq(state_at(p, &t, 0, 800), META_PG_INCOMPLETE);

	/* bad reports: no such PG, no slots */
	Iolake__Meta__PgReport bad = IOLAKE__META__PG_REPORT__INIT;
	bad.pg = 4;
	ck_assert_int_eq(meta_pgstate_report(p, &t.m, 1, &bad, 1), -EINVAL);
	bad.pg = 0;
	ck_assert_int_eq(meta_pgstate_report(p, &t.m, 1, &bad, 1), -EINVAL);

	/* a new leader knows nothing */
	meta_pgstate_reset(p);
	t.o[3].up = t.o[1].up = true;
	ck_assert_int_eq(state_at(p, &t, 1, 800), META_PG_UNKNOWN);
	meta_pgstate_free(p);
}
END_TEST

START_TEST(test_flags)
{
	struct tmap t;
	tmap_init(&t);
	struct meta_pgstate *p;
	ck_assert_int_eq(meta_pgstate_new(&p), 0);
	uint32_t p1 = prim(&t, 1), p3 = prim(&t, 3);
	ck_assert_int_eq(meta_pgstate_flag(p, &t.m, 1), 0);
	ck_assert_int_eq(meta_pgstate_flag(p, &t.m, 1), 0);   /* a set: once */
	ck_assert_int_eq(meta_pgstate_flag(p, &t.m, 3), 0);
	ck_assert_int_eq(meta_pgstate_flag(p, &t.m, 4), -EINVAL);
	ck_assert_uint_eq(meta_pgstate_flagged(p), 2);

	uint32_t out[4];
	/* an OSD that leads neither PG gets nothing (4 OSDs, 2 primaries) */
	uint32_t other = 1;
	while (other == p1 || other == p3)
		other++;
	ck_assert_uint_eq(meta_pgstate_take_rescans(p, &t.m, other, out, 4), 0);
	ck_assert_uint_eq(meta_pgstate_take_rescans(p, &t.m, p1, out, 4), p1 == p3 ? 2 : 1);
	ck_assert_uint_eq(out[0], 1);
	ck_assert_uint_eq(meta_pgstate_take_rescans(p, &t.m, p1, out, 4), 0);   /* cleared */
	if (p3 != p1) {
		/* PG 3's primary goes down: the flag waits for the new one */
		t.o[p3 - 1].up = false;
		uint32_t q = prim(&t, 3);
		ck_assert_uint_ne(q, p3);
		ck_assert_uint_ne(q, NONE);
		ck_assert_uint_eq(meta_pgstate_take_rescans(p, &t.m, p3, out, 4), 0);
		ck_assert_uint_eq(meta_pgstate_take_rescans(p, &t.m, q, out, 4), 1);
		ck_assert_uint_eq(out[0], 3);
	}
	ck_assert_uint_eq(meta_pgstate_flagged(p), 0);

	meta_pgstate_flag(p, &t.m, 0);
	meta_pgstate_reset(p);
	ck_assert_uint_eq(meta_pgstate_flagged(p), 0);
	meta_pgstate_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pgstate");
	TCase *tc = tcase_create("pgstate");
	tcase_add_test(tc, test_states);
	tcase_add_test(tc, test_primary_and_eta);
	tcase_add_test(tc, test_table_reports);
	tcase_add_test(tc, test_flags);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
