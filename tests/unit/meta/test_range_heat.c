/*
 * test_range_heat.c — a range group leader's load figures and the choice
 * of a load split key (meta/range_heat.h): uniform keys split near their
 * median, sequential keys near the middle of the recent ones (the
 * reservoir keeps a fair sample of 100,000 requests in 256 keys), one hot
 * key gives no split key, nor does one hot key with a little noise, two
 * hot keys split between them; the windows (the rate of the last whole
 * second, a stale one read as 0), the keys kept to their bound, pruning,
 * and the table's bound on ranges.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta/range_heat.h"

#define N_KEYS 2000

static char keybuf[N_KEYS][16];
static const char *keys[N_KEYS];

static size_t below(const char *const *k, size_t n, const char *split)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += strcmp(k[i], split) < 0;
	return c;
}

START_TEST(uniform_keys)
{
	srand(7);
	for (size_t i = 0; i < N_KEYS; i++) {
		snprintf(keybuf[i], sizeof(keybuf[i]), "k%05d", rand() % 100000);
		keys[i] = keybuf[i];
	}
	char out[64];
	ck_assert_int_eq(range_heat_split_key(keys, N_KEYS, "", out, sizeof(out)), 0);
	size_t b = below(keys, N_KEYS, out);
	ck_assert_uint_ge(b, N_KEYS / 2 - 2);   /* distinct keys: within a step of half */
	ck_assert_uint_le(b, N_KEYS / 2 + 2);
	ck_assert_str_gt(out, "k40000");
	ck_assert_str_lt(out, "k60000");
}
END_TEST

START_TEST(sequential_keys)
{
	/* a bucket written in key order: the window's keys are consecutive */
	struct range_heat *h = range_heat_new(1);
	ck_assert_ptr_nonnull(h);
	char k[32];
	for (unsigned i = 0; i < 100000; i++) {
		snprintf(k, sizeof(k), "log/%08u", i);
		range_heat_note(h, 5, k, 10000 + i / 200);   /* all inside one window */
	}
	struct range_heat_figures f;
	ck_assert(range_heat_get(h, 5, "log/", 10499, &f));
	ck_assert_uint_eq(f.requests, 100000);
	ck_assert_str_ne(f.split_key, "");
	/* the reservoir is a fair sample: its median is near 50,000 */
	unsigned at = (unsigned)strtoul(f.split_key + 4, NULL, 10);
	ck_assert_uint_gt(at, 40000);
	ck_assert_uint_lt(at, 60000);
	range_heat_free(h);
}
END_TEST

START_TEST(one_hot_key)
{
	for (size_t i = 0; i < N_KEYS; i++)
		keys[i] = "photos/cat.jpg";
	char out[64] = "x";
	ck_assert_int_eq(range_heat_split_key(keys, N_KEYS, "", out, sizeof(out)), -ENOENT);
	ck_assert_str_eq(out, "");
	/* with 5% of other keys, on either side: still no key splits it */
	for (size_t i = 0; i < N_KEYS; i++) {
		snprintf(keybuf[i], sizeof(keybuf[i]), "a%04zu", i);
		keys[i] = i % 40 == 0 ? keybuf[i] : i % 40 == 1 ? "z" : "photos/cat.jpg";
	}
	ck_assert_int_eq(range_heat_split_key(keys, N_KEYS, "", out, sizeof(out)), -ENOENT);
	/* a table fed one key answers no split key either */
	struct range_heat *h = range_heat_new(2);
	for (unsigned i = 0; i < 5000; i++)
		range_heat_note(h, 9, "photos/cat.jpg", 1000 + i / 10);
	struct range_heat_figures f;
	ck_assert(range_heat_get(h, 9, "", 1499, &f));
	ck_assert_str_eq(f.split_key, "");
	range_heat_free(h);
}
END_TEST

START_TEST(two_hot_keys)
{
	for (size_t i = 0; i < N_KEYS; i++)
		keys[i] = i % 2 ? "b/hot2" : "a/hot1";
	char out[64];
	ck_assert_int_eq(range_heat_split_key(keys, N_KEYS, "", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "b/hot2");   /* [start, b/hot2) and [b/hot2, end) */
	/* uneven (70/30) still splits between them */
	for (size_t i = 0; i < N_KEYS; i++)
		keys[i] = i % 10 < 7 ? "a/hot1" : "b/hot2";
	ck_assert_int_eq(range_heat_split_key(keys, N_KEYS, "", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "b/hot2");
}
END_TEST

START_TEST(start_and_bounds)
{
	/* the range starts at its hottest key: a split there would leave no
	 * left half, so the key above it is taken */
	for (size_t i = 0; i < N_KEYS; i++)
		keys[i] = i % 2 ? "m" : i % 4 ? "n" : "o";
	char out[64];
	ck_assert_int_eq(range_heat_split_key(keys, N_KEYS, "m", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "n");
	/* every key at or below start: nothing to split */
	for (size_t i = 0; i < N_KEYS; i++)
		keys[i] = i % 2 ? "m" : "a";
	ck_assert_int_eq(range_heat_split_key(keys, N_KEYS, "m", out, sizeof(out)), -ENOENT);
	/* too few samples */
	for (size_t i = 0; i < RANGE_HEAT_MIN_SAMPLE - 1; i++)
		keys[i] = i % 2 ? "x" : "y";
	ck_assert_int_eq(range_heat_split_key(keys, RANGE_HEAT_MIN_SAMPLE - 1, "", out,
					      sizeof(out)), -ENOENT);
	/* a key longer than the answer's room is never chosen, nor cut */
	static char longk[100];
	memset(longk, 'q', sizeof(longk) - 1);
	for (size_t i = 0; i < N_KEYS; i++)
		keys[i] = i % 2 ? "a" : longk;
	ck_assert_int_eq(range_heat_split_key(keys, N_KEYS, "", out, 16), -ENOENT);
}
END_TEST

START_TEST(windows)
{
	struct range_heat *h = range_heat_new(3);
	struct range_heat_figures f;
	ck_assert(!range_heat_get(h, 1, "", 100, &f));
	char k[32];
	/* 500 requests in [1000, 2000), 300 in [2000, 3000) */
	for (unsigned i = 0; i < 500; i++) {
		snprintf(k, sizeof(k), "k%04u", i);
		range_heat_note(h, 1, k, 1000 + i * 2);
	}
	for (unsigned i = 0; i < 300; i++) {
		snprintf(k, sizeof(k), "k%04u", 500 + i);
		range_heat_note(h, 1, k, 2000 + i * 3);
	}
	ck_assert(range_heat_get(h, 1, "", 2950, &f));
	ck_assert_uint_eq(f.requests, 800);
	ck_assert_uint_eq(f.rps, 500);   /* the last whole second */
	ck_assert_str_ne(f.split_key, "");
	ck_assert(range_heat_get(h, 1, "", 3100, &f));
	ck_assert_uint_eq(f.rps, 300);
	/* no request for two windows: rate 0, no sample, the count stays */
	ck_assert(range_heat_get(h, 1, "", 9000, &f));
	ck_assert_uint_eq(f.requests, 800);
	ck_assert_uint_eq(f.rps, 0);
	ck_assert_str_eq(f.split_key, "");
	/* a key over RANGE_HEAT_KEY_MAX is kept as its prefix */
	static char longk[RANGE_HEAT_KEY_MAX + 50];
	memset(longk, 'z', sizeof(longk) - 1);
	for (unsigned i = 0; i < 100; i++)
		range_heat_note(h, 1, i % 2 ? "a" : longk, 9100);
	ck_assert(range_heat_get(h, 1, "", 9200, &f));
	ck_assert_uint_eq(strlen(f.split_key), RANGE_HEAT_KEY_MAX);
	/* pruning: range 1 is no longer open here */
	uint64_t keep[] = { 2 };
	range_heat_keep(h, keep, 1);
	ck_assert(!range_heat_get(h, 1, "", 9300, &f));
	range_heat_free(h);
}
END_TEST

START_TEST(bounded_ranges)
{
	struct range_heat *h = range_heat_new(4);
	for (uint64_t id = 1; id <= RANGE_HEAT_RANGES; id++)
		range_heat_note(h, id, "k", 1000);
	ck_assert_uint_eq(range_heat_untracked(h), 0);
	range_heat_note(h, RANGE_HEAT_RANGES + 1, "k", 1500);   /* full, none idle */
	ck_assert_uint_eq(range_heat_untracked(h), 1);
	struct range_heat_figures f;
	ck_assert(!range_heat_get(h, RANGE_HEAT_RANGES + 1, "", 1500, &f));
	/* every entry idle two windows: the new range takes the idlest's slot */
	for (uint64_t id = 2; id <= RANGE_HEAT_RANGES; id++)
		range_heat_note(h, id, "k", 3500);
	range_heat_note(h, RANGE_HEAT_RANGES + 1, "k", 3600);
	ck_assert_uint_eq(range_heat_untracked(h), 1);
	ck_assert(range_heat_get(h, RANGE_HEAT_RANGES + 1, "", 3600, &f));
	ck_assert_uint_eq(f.requests, 1);
	ck_assert(!range_heat_get(h, 1, "", 3600, &f));
	range_heat_free(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("range_heat");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, uniform_keys);
	tcase_add_test(tc, sequential_keys);
	tcase_add_test(tc, one_hot_key);
	tcase_add_test(tc, two_hot_keys);
	tcase_add_test(tc, start_and_bounds);
	tcase_add_test(tc, windows);
	tcase_add_test(tc, bounded_ranges);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
