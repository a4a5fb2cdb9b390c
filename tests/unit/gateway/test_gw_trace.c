/*
 * test_gw_trace.c — a request's trace (gateway/gw_trace.h): the id kept
 * and bounded, a hop's busy time counts overlapping calls once, the
 * slowest call and its OSD, calls still out at the end, the OSDs hedges
 * went around (each once, however many segments hedged), and the
 * generation check that keeps a late answer off a reused trace.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gw_trace.h"

#define MS 1000000ull

START_TEST(reset_keeps_id)
{
	struct gw_trace t = { 0 };
	gw_trace_reset(&t, "0123456789abcdef-and-more", 5);
	ck_assert_str_eq(t.id, "0123456789abcdef");
	ck_assert_uint_eq(t.t0_ns, 5);
	gw_trace_reset(&t, NULL, 7);
	ck_assert_str_eq(t.id, "");
	ck_assert_str_eq(gw_trace_id(NULL), "");
}
END_TEST

START_TEST(busy_counts_overlap_once)
{
	struct gw_trace t = { 0 };
	gw_trace_reset(&t, "id", 0);
	/* Two shard reads 0..10 ms and 2..30 ms (OSD 5), then one 40..41 ms. */
	gw_trace_call_begin(&t.osd, 0);
	gw_trace_call_begin(&t.osd, 2 * MS);
	gw_trace_call_end(&t.osd, 0, 10 * MS, 4, true);
	gw_trace_call_end(&t.osd, 2 * MS, 30 * MS, 5, true);
	gw_trace_call_begin(&t.osd, 40 * MS);
	gw_trace_call_end(&t.osd, 40 * MS, 41 * MS, 6, false);
	ck_assert_uint_eq(t.osd.calls, 3);
	ck_assert_uint_eq(t.osd.failed, 1);
	ck_assert_uint_eq(t.osd.open, 0);
	ck_assert_uint_eq(t.osd.busy_ns, 31 * MS);   /* 0..30 and 40..41 */
	ck_assert_uint_eq(t.osd.max_ns, 28 * MS);
	ck_assert_uint_eq(t.osd.max_osd, 5);
	/* A call still out (a hedged read's slow shard) stays open. */
	gw_trace_call_begin(&t.osd, 50 * MS);
	ck_assert_uint_eq(t.osd.open, 1);
}
END_TEST

START_TEST(generation)
{
	struct gw_trace t = { 0 };
	gw_trace_reset(&t, "first", 0);
	struct gw_trace_ref r = gw_trace_ref(&t);
	ck_assert_ptr_eq(gw_trace_get(&r), &t);
	gw_trace_call_begin(&gw_trace_get(&r)->osd, 0);
	gw_trace_release(&t);               /* the exchange ended */
	ck_assert_ptr_null(gw_trace_get(&r));
	gw_trace_reset(&t, "second", 1);    /* the pooled struct, reused */
	ck_assert_ptr_null(gw_trace_get(&r));
	struct gw_trace_ref none = gw_trace_ref(NULL);
	ck_assert_ptr_null(gw_trace_get(&none));
	/* An end without its begin (another generation's) changes nothing. */
	gw_trace_call_end(&t.osd, 0, 99 * MS, 3, true);
	ck_assert_uint_eq(t.osd.max_ns, 0);
	ck_assert_uint_eq(t.osd.busy_ns, 0);
}
END_TEST

START_TEST(hedges_name_each_osd_once)
{
	struct gw_trace t = { 0 };
	gw_trace_reset(&t, "id", 0);
	const uint32_t osds[6] = { 11, 12, 13, 14, 15, 16 };
	gw_trace_hedge(&t, osds, 1u << 2);               /* segment 1: OSD 13 */
	gw_trace_hedge(&t, osds, (1u << 0) | (1u << 2)); /* segment 2: OSDs 11 and 13 */
	gw_trace_hedge(&t, osds, 1u << 2);               /* segment 3: 13 again */
	ck_assert_uint_eq(t.hedges, 3);
	ck_assert_uint_eq(t.hedge_osds[0], 13);
	ck_assert_uint_eq(t.hedge_osds[1], 11);
	ck_assert_uint_eq(t.hedge_osds[2], 0);
	/* More distinct OSDs than the trace keeps: the first ones stay. */
	gw_trace_hedge(&t, osds, 0x3f);
	ck_assert_uint_eq(t.hedges, 4);
	ck_assert_uint_eq(t.hedge_osds[0], 13);
	ck_assert_uint_eq(t.hedge_osds[1], 11);
	ck_assert_uint_eq(t.hedge_osds[2], 12);
	ck_assert_uint_eq(t.hedge_osds[3], 14);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gw_trace");
	TCase *tc = tcase_create("trace");
	tcase_add_test(tc, reset_keeps_id);
	tcase_add_test(tc, busy_counts_overlap_once);
	tcase_add_test(tc, generation);
	tcase_add_test(tc, hedges_name_each_osd_once);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
