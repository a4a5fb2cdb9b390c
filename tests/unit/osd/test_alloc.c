/*
 * test_alloc.c — the extent allocator against a byte-per-block model:
 * accounting, fragmentation, ENOSPC, lowest-first placement (and next-fit
 * past its window), the written footprint under churn, and rebuild ==
 * committed state.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "osd/store/alloc.h"

static void expect_stats(struct store_alloc *a, uint64_t committed, uint64_t reserved)
{
	struct store_alloc_stats st;
	store_alloc_stats(a, &st);
	ck_assert_uint_eq(st.committed_blocks, committed);
	ck_assert_uint_eq(st.reserved_blocks, reserved);
	ck_assert_uint_eq(st.free_blocks, st.total_blocks - committed - reserved);
}

START_TEST(accounting)
{
	struct store_alloc *a;
	ck_assert_int_eq(store_alloc_new(100, &a), 0);
	uint64_t s1, s2;
	ck_assert_int_eq(store_alloc_reserve(a, 10, &s1), 0);
	ck_assert_int_eq(store_alloc_reserve(a, 20, &s2), 0);
	ck_assert(s2 >= s1 + 10 || s2 + 20 <= s1);
	expect_stats(a, 0, 30);
	store_alloc_commit(a, s1, 10);
	expect_stats(a, 10, 20);
	store_alloc_unreserve(a, s2, 20);
	expect_stats(a, 10, 0);
	ck_assert(store_alloc_is_free(a, s2));
	ck_assert(!store_alloc_is_free(a, s1));
	store_alloc_release(a, s1, 10);
	expect_stats(a, 0, 0);
	ck_assert_int_eq(store_alloc_reserve(a, 0, &s1), -EINVAL);
	/* Exactly full, then ENOSPC, odd total (tail bits past the end). */
	ck_assert_int_eq(store_alloc_reserve(a, 100, &s1), 0);
	ck_assert_uint_eq(s1, 0);
	ck_assert_int_eq(store_alloc_reserve(a, 1, &s2), IOL_ENO_SPACE);
	store_alloc_destroy(a);
}
END_TEST

START_TEST(fragmentation)
{
	struct store_alloc *a;
	ck_assert_int_eq(store_alloc_new(130, &a), 0);
	uint64_t s[130];
	for (int i = 0; i < 130; i++) {
		ck_assert_int_eq(store_alloc_reserve(a, 1, &s[i]), 0);
		store_alloc_commit(a, s[i], 1);
	}
	ck_assert_int_eq(store_alloc_reserve(a, 1, &s[0]), IOL_ENO_SPACE);
	/* Free every other block: 65 free, but no run of 2. */
	for (uint64_t b = 0; b < 130; b += 2)
		store_alloc_release(a, b, 1);
	expect_stats(a, 65, 0);
	uint64_t x;
	ck_assert_int_eq(store_alloc_reserve(a, 2, &x), IOL_ENO_SPACE);
	expect_stats(a, 65, 0); /* a failed reserve changes nothing */
	/* Free 65 (neighbour of 64 and 66): a run of 3 at 64..66 appears. */
	store_alloc_release(a, 65, 1);
	ck_assert_int_eq(store_alloc_reserve(a, 3, &x), 0);
	ck_assert_uint_eq(x, 64);
	ck_assert_int_eq(store_alloc_reserve(a, 2, &x), IOL_ENO_SPACE);
	store_alloc_destroy(a);
}
END_TEST

START_TEST(mark_rejects_overlap)
{
	struct store_alloc *a;
	ck_assert_int_eq(store_alloc_new(1000, &a), 0);
	ck_assert_int_eq(store_alloc_mark(a, 10, 100), 0);
	ck_assert_int_eq(store_alloc_mark(a, 109, 5), IOL_ECORRUPT);
	ck_assert_int_eq(store_alloc_mark(a, 990, 11), IOL_ECORRUPT);
	ck_assert_int_eq(store_alloc_mark(a, 5000, 1), IOL_ECORRUPT);
	ck_assert_int_eq(store_alloc_mark(a, 0, 0), IOL_ECORRUPT);
	ck_assert_int_eq(store_alloc_mark(a, 110, 5), 0);
	expect_stats(a, 105, 0);
	store_alloc_destroy(a);
}
END_TEST

/* Blocks freed by a delete are the next ones written: a device's written
 * footprint follows its live data (a sparse file stays small). */
START_TEST(reuses_lowest_first)
{
	struct store_alloc *a;
	ck_assert_int_eq(store_alloc_new(10000, &a), 0);
	uint64_t s[10];
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(store_alloc_reserve(a, 100, &s[i]), 0);
		ck_assert_uint_eq(s[i], (uint64_t)i * 100);
		store_alloc_commit(a, s[i], 100);
	}
	/* Overwrite-like churn: free one, write one, many times over. */
	for (int round = 0; round < 50; round++) {
		int i = round % 10;
		store_alloc_release(a, s[i], 100);
		ck_assert_int_eq(store_alloc_reserve(a, 100, &s[i]), 0);
		ck_assert_uint_eq(s[i], (uint64_t)i * 100);
		store_alloc_commit(a, s[i], 100);
	}
	/* A failed write gives its blocks back for the next one. */
	uint64_t x, y;
	ck_assert_int_eq(store_alloc_reserve(a, 7, &x), 0);
	ck_assert_uint_eq(x, 1000);
	store_alloc_unreserve(a, x, 7);
	ck_assert_int_eq(store_alloc_reserve(a, 3, &y), 0);
	ck_assert_uint_eq(y, 1000);
	store_alloc_destroy(a);
}
END_TEST

/* Past STORE_ALLOC_WINDOW blocks from the lowest free one, the search is
 * next-fit: a front full of holes too short is not walked each time, and
 * a front that filled up moves the window along. */
START_TEST(window_then_next_fit)
{
	const uint64_t W = STORE_ALLOC_WINDOW;
	struct store_alloc *a;
	ck_assert_int_eq(store_alloc_new(4 * W + 100, &a), 0);
	uint64_t s;
	for (uint64_t b = 0; b < W; b++) {
		ck_assert_int_eq(store_alloc_reserve(a, 1, &s), 0);
		ck_assert_uint_eq(s, b);
		store_alloc_commit(a, s, 1);
	}
	for (uint64_t b = 0; b < W; b += 2)
		store_alloc_release(a, b, 1);
	/* Holes of 1 fill the window: a run of 2 comes from next-fit,
	 * whose cursor has not moved yet. */
	ck_assert_int_eq(store_alloc_reserve(a, 2, &s), 0);
	ck_assert_uint_eq(s, W);
	store_alloc_commit(a, s, 2);
	/* A single block still goes to the lowest hole. */
	ck_assert_int_eq(store_alloc_reserve(a, 1, &s), 0);
	ck_assert_uint_eq(s, 0);
	store_alloc_commit(a, s, 1);
	/* Next-fit goes on from its cursor, not from the device's start. */
	ck_assert_int_eq(store_alloc_reserve(a, 2, &s), 0);
	ck_assert_uint_eq(s, W + 2);
	store_alloc_commit(a, s, 2);
	/* Fill every hole and then two windows more: the lowest free block
	 * is then beyond the first window, and is found again. */
	for (uint64_t b = 2; b < W; b += 2) {
		ck_assert_int_eq(store_alloc_reserve(a, 1, &s), 0);
		ck_assert_uint_eq(s, b);
		store_alloc_commit(a, s, 1);
	}
	for (uint64_t b = W + 4; b < 3 * W; b += 4) {
		ck_assert_int_eq(store_alloc_reserve(a, 4, &s), 0);
		ck_assert_uint_eq(s, b);
		store_alloc_commit(a, s, 4);
	}
	ck_assert_int_eq(store_alloc_reserve(a, 8, &s), 0);
	ck_assert_uint_eq(s, 3 * W);
	store_alloc_commit(a, s, 8);
	store_alloc_release(a, 5, 1);
	ck_assert_int_eq(store_alloc_reserve(a, 1, &s), 0);
	ck_assert_uint_eq(s, 5);
	expect_stats(a, 3 * W + 7, 1); /* block 5 freed, then reserved again */
	store_alloc_destroy(a);
}
END_TEST

/* Churn of small and large extents with at most 2 windows live on a
 * 32-window device (an OSD file under deletes and overwrites): the written
 * footprint (the end of the highest extent ever placed) stays near the
 * live data instead of walking the device. Before the next-fit cursor was
 * kept below the footprint, every fallback placed at the frontier: this
 * churn reached the device's end (32 W). */
START_TEST(footprint_follows_live)
{
	const uint64_t W = STORE_ALLOC_WINDOW, LIVE = 2 * W;
	struct store_alloc *a;
	ck_assert_int_eq(store_alloc_new(32 * W, &a), 0);
	enum { MAXE = 1 << 16 };
	struct { uint64_t s, n; } *ex = calloc(MAXE, sizeof(*ex));
	ck_assert_ptr_nonnull(ex);
	size_t n_ex = 0;
	uint64_t live = 0, peak_live = 0, footprint = 0;
	unsigned seed = 7;
	for (int op = 0; op < 400000; op++) {
		uint64_t n = rand_r(&seed) % 10 < 7 ? 1 + (uint64_t)rand_r(&seed) % 4 : 256;
		while (live + n > LIVE || n_ex == MAXE) {
			size_t i = (size_t)rand_r(&seed) % n_ex;
			store_alloc_release(a, ex[i].s, ex[i].n);
			live -= ex[i].n;
			ex[i] = ex[--n_ex];
		}
		uint64_t s;
		ck_assert_int_eq(store_alloc_reserve(a, n, &s), 0);
		store_alloc_commit(a, s, n);
		ex[n_ex].s = s;
		ex[n_ex++].n = n;
		live += n;
		if (live > peak_live)
			peak_live = live;
		if (s + n > footprint)
			footprint = s + n;
	}
	printf("footprint_follows_live: peak live %llu blocks, footprint %llu blocks (%.2f x)\n",
	       (unsigned long long)peak_live, (unsigned long long)footprint,
	       (double)footprint / (double)peak_live);
	ck_assert_uint_le(footprint, 2 * peak_live);
	expect_stats(a, live, 0);
	free(ex);
	store_alloc_destroy(a);
}
END_TEST

/* Randomized against a model: state per block (0 free, 1 reserved,
 * 2 committed) and the list of live extents. */
struct ext { uint64_t s, n; int state; };

START_TEST(random_vs_model)
{
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	const char *env = getenv("IOLAKE_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 0);
	printf("alloc random_vs_model seed=%u (IOLAKE_SEED=%u to replay)\n", seed, seed);
	fflush(stdout);
	srand(seed);
	const uint64_t total = 5000 + (uint64_t)(rand() % 3000);
	ck_assert(total < STORE_ALLOC_WINDOW);
	struct store_alloc *a;
	ck_assert_int_eq(store_alloc_new(total, &a), 0);
	uint8_t *model = calloc(total, 1);
	struct ext *ex = calloc(20000, sizeof(*ex));
	size_t nex = 0;
	uint64_t committed = 0, reserved = 0, nospc = 0;
	for (int step = 0; step < 20000; step++) {
		int op = rand() % 10;
		if (op < 5 || nex == 0) {
			uint64_t n = 1 + (uint64_t)(rand() % (rand() % 4 ? 16 : 400));
			uint64_t s;
			int rc = store_alloc_reserve(a, n, &s);
			/* Oracle: does the model have a free run of n, and
			 * where does the lowest one start? The device is
			 * smaller than the window: placement is lowest-first. */
			uint64_t run = 0, best = 0, lowest = total;
			for (uint64_t b = 0; b < total; b++) {
				run = model[b] ? 0 : run + 1;
				if (run > best)
					best = run;
				if (run == n && lowest == total)
					lowest = b + 1 - n;
			}
			if (best >= n) {
				ck_assert_msg(rc == 0, "seed %u step %d: reserve %llu failed, model has run %llu",
					      seed, step, (unsigned long long)n, (unsigned long long)best);
				ck_assert_msg(s == lowest, "seed %u step %d: reserve %llu at %llu, lowest run at %llu",
					      seed, step, (unsigned long long)n, (unsigned long long)s,
					      (unsigned long long)lowest);
				for (uint64_t b = s; b < s + n; b++) {
					ck_assert_msg(b < total && model[b] == 0, "seed %u: overlap", seed);
					model[b] = 1;
				}
				ex[nex++] = (struct ext){ s, n, 1 };
				reserved += n;
			} else {
				ck_assert_int_eq(rc, IOL_ENO_SPACE);
				nospc++;
			}
		} else {
			size_t i = (size_t)rand() % nex;
			struct ext e = ex[i];
			int v = 0;
			if (e.state == 1 && op < 8) {
				store_alloc_commit(a, e.s, e.n);
				ex[i].state = 2;
				reserved -= e.n;
				committed += e.n;
				v = 2;
				for (uint64_t b = e.s; b < e.s + e.n; b++)
					model[b] = 2;
				continue;
			}
			if (e.state == 1) {
				store_alloc_unreserve(a, e.s, e.n);
				reserved -= e.n;
			} else {
				store_alloc_release(a, e.s, e.n);
				committed -= e.n;
			}
			for (uint64_t b = e.s; b < e.s + e.n; b++)
				model[b] = (uint8_t)v;
			ex[i] = ex[--nex];
		}
		expect_stats(a, committed, reserved);
	}
	for (uint64_t b = 0; b < total; b++)
		ck_assert_int_eq(store_alloc_is_free(a, b), model[b] == 0);

	/* Rebuild from the committed extents only (a crash drops
	 * reservations): equals the model with reservations freed. */
	struct store_alloc *r;
	ck_assert_int_eq(store_alloc_new(total, &r), 0);
	for (size_t i = 0; i < nex; i++)
		if (ex[i].state == 2)
			ck_assert_int_eq(store_alloc_mark(r, ex[i].s, ex[i].n), 0);
	expect_stats(r, committed, 0);
	for (uint64_t b = 0; b < total; b++)
		ck_assert_int_eq(store_alloc_is_free(r, b), model[b] != 2);
	printf("alloc random_vs_model: %zu live extents, %llu ENOSPC answers checked\n", nex,
	       (unsigned long long)nospc);
	store_alloc_destroy(r);
	store_alloc_destroy(a);
	free(model);
	free(ex);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/alloc");
	TCase *tc = tcase_create("alloc");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, accounting);
	tcase_add_test(tc, fragmentation);
	tcase_add_test(tc, mark_rejects_overlap);
	tcase_add_test(tc, reuses_lowest_first);
	tcase_add_test(tc, window_then_next_fit);
	tcase_add_test(tc, footprint_follows_live);
	tcase_add_test(tc, random_vs_model);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
