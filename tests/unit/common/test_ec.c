/*
 * test_ec.c — unit tests for common/ec.c.
 *
 * Oracles: decoded shards must equal the original bytes, and encoded
 * parity must equal a byte-at-a-time evaluation of the Cauchy formula
 * written here from the definition (so a change to the on-disk parity
 * format fails a test rather than passing silently).
 *
 * Randomized tests draw from one seed, printed as "seed=N" at start;
 * IOLAKE_TEST_SEED=N replays it. Every shard buffer is its own exact-size
 * allocation so that ASan catches any access past len.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l.h>

#include "common/ec.h"

static uint64_t g_seed;

/* splitmix64: small, and identical on every libc, so seeds replay. */
static uint64_t rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static unsigned rnd_below(uint64_t *s, unsigned n)
{
	return (unsigned)(rnd_next(s) % n);
}

static void rnd_fill(uint64_t *s, uint8_t *p, size_t len)
{
	while (len) {
		uint64_t v = rnd_next(s);
		size_t n = len < 8 ? len : 8;
		memcpy(p, &v, n);
		p += n;
		len -= n;
	}
}

/* One stripe: orig[] keeps the truth, work[] is what ec_* sees. */
struct stripe {
	unsigned k, m;
	size_t len;
	uint8_t *orig[EC_MAX_SHARDS];
	uint8_t *work[EC_MAX_SHARDS];
};

static void stripe_init(struct stripe *st, const struct ec_code *c, size_t len, uint64_t *rs)
{
	st->k = ec_k(c);
	st->m = ec_m(c);
	st->len = len;
	for (unsigned i = 0; i < st->k + st->m; i++) {
		st->orig[i] = malloc(len);
		st->work[i] = malloc(len);
		ck_assert_ptr_nonnull(st->orig[i]);
		ck_assert_ptr_nonnull(st->work[i]);
	}
	for (unsigned i = 0; i < st->k; i++)
		rnd_fill(rs, st->orig[i], len);
	ec_encode(c, len, (const uint8_t *const *)st->orig, st->orig + st->k);
}

static void stripe_free(struct stripe *st)
{
	for (unsigned i = 0; i < st->k + st->m; i++) {
		free(st->orig[i]);
		free(st->work[i]);
	}
}

/* Reset work[] to the truth, then overwrite every shard not in present
 * with junk so that a decode that writes nothing cannot pass. */
static void stripe_lose(struct stripe *st, uint32_t present, uint64_t *rs)
{
	for (unsigned i = 0; i < st->k + st->m; i++) {
		if (present & (1u << i)) {
			memcpy(st->work[i], st->orig[i], st->len);
		} else {
			rnd_fill(rs, st->work[i], st->len);
			/* Junk could equal the truth at len 1; make sure not. */
			st->work[i][0] = (uint8_t)~st->orig[i][0];
		}
	}
}

/* Compare shard i of work with the truth; report the first bad byte. */
static void check_shard(const struct stripe *st, unsigned i, const char *what)
{
	for (size_t b = 0; b < st->len; b++) {
		if (st->work[i][b] != st->orig[i][b])
			ck_abort_msg("%u+%u len=%zu %s: shard %u byte %zu is %02x, want %02x (seed=%" PRIu64 ")",
				     st->k, st->m, st->len, what, i, b, st->work[i][b], st->orig[i][b],
				     g_seed);
	}
}

static const size_t lens_4_2[] = {1, 13, 4096, 1u << 20};

/* 4+2: every single loss and every pair of losses, rebuilding all lost
 * shards (data and parity) in one call. */
START_TEST(test_4_2_all_loss_patterns)
{
	uint64_t rs = g_seed;
	struct ec_code *c = NULL;
	ck_assert_int_eq(ec_new(4, 2, &c), 0);

	for (size_t li = 0; li < sizeof(lens_4_2) / sizeof(lens_4_2[0]); li++) {
		struct stripe st;
		stripe_init(&st, c, lens_4_2[li], &rs);
		int patterns = 0;
		for (unsigned a = 0; a < 6; a++) {
			for (unsigned b = a; b < 6; b++) {
				uint32_t lost = (1u << a) | (1u << b);
				uint32_t present = 0x3Fu & ~lost;
				stripe_lose(&st, present, &rs);
				ck_assert_int_eq(ec_decode(c, st.len, st.work, present, lost), 0);
				char what[32];
				snprintf(what, sizeof(what), "lost {%u,%u}", a, b);
				for (unsigned i = 0; i < 6; i++)
					check_shard(&st, i, what);
				patterns++;
			}
		}
		ck_assert_int_eq(patterns, 6 + 15);
		stripe_free(&st);
	}
	ec_free(c);
}
END_TEST

/* Parity from ec_encode equals sum_j data[j] / ((k+i) ^ j) over GF(2^8),
 * computed a byte at a time. Pins the on-disk format. */
START_TEST(test_encode_matches_cauchy_formula)
{
	uint64_t rs = g_seed ^ 0x1111;
	for (unsigned k = 1; k <= 12; k++) {
		for (unsigned m = 1; m <= 4; m++) {
			struct ec_code *c = NULL;
			ck_assert_int_eq(ec_new(k, m, &c), 0);
			struct stripe st;
			stripe_init(&st, c, 1 + rnd_below(&rs, 300), &rs);
			for (unsigned i = 0; i < m; i++) {
				for (size_t b = 0; b < st.len; b++) {
					uint8_t want = 0;
					for (unsigned j = 0; j < k; j++)
						want ^= gf_mul(gf_inv((uint8_t)((k + i) ^ j)), st.orig[j][b]);
					if (st.orig[k + i][b] != want)
						ck_abort_msg("%u+%u parity %u byte %zu: %02x, want %02x (seed=%" PRIu64 ")",
							     k, m, i, b, st.orig[k + i][b], want, g_seed);
				}
			}
			stripe_free(&st);
			ec_free(c);
		}
	}
}
END_TEST

/* A fixed stripe whose parity was worked out by hand from the formula
 * above: 2+1 has one parity row [1/(2^0), 1/(2^1)] = [inv(2), inv(3)]
 * = [0x8e, 0xf4]. data = {01 00, 00 01} gives parity {8e f4}. */
START_TEST(test_encode_golden_2_1)
{
	struct ec_code *c = NULL;
	ck_assert_int_eq(ec_new(2, 1, &c), 0);
	uint8_t d0[2] = {0x01, 0x00}, d1[2] = {0x00, 0x01}, p[2] = {0, 0};
	const uint8_t *data[2] = {d0, d1};
	uint8_t *parity[1] = {p};
	ec_encode(c, 2, data, parity);
	ck_assert_uint_eq(p[0], 0x8e);
	ck_assert_uint_eq(p[1], 0xf4);
	ec_free(c);
}
END_TEST

/* Random codes up to 12+4, random lengths, random loss patterns of up to
 * m shards, random subsets of the lost shards wanted (data and parity);
 * lost shards not wanted are passed as NULL, as the contract allows. */
START_TEST(test_random_codes)
{
	uint64_t rs = g_seed ^ 0x2222;
	for (int iter = 0; iter < 300; iter++) {
		unsigned k = 1 + rnd_below(&rs, 12), m = rnd_below(&rs, 5), n = k + m;
		size_t len = rnd_below(&rs, 4) == 0 ? 1 + rnd_below(&rs, 64) : 1 + rnd_below(&rs, 20000);
		struct ec_code *c = NULL;
		ck_assert_int_eq(ec_new(k, m, &c), 0);
		ck_assert_uint_eq(ec_k(c), k);
		ck_assert_uint_eq(ec_m(c), m);
		struct stripe st;
		stripe_init(&st, c, len, &rs);

		for (int round = 0; round < 8; round++) {
			/* Lose a random set of up to m shards. */
			unsigned nlost = m ? rnd_below(&rs, m + 1) : 0;
			uint32_t lost = 0;
			while ((unsigned)__builtin_popcount(lost) < nlost)
				lost |= 1u << rnd_below(&rs, n);
			uint32_t present = ((1u << n) - 1) & ~lost;
			/* Want each lost shard with probability 3/4, and
			 * sometimes a present one too (it must be untouched). */
			uint32_t want = 0;
			for (unsigned i = 0; i < n; i++) {
				if ((lost & (1u << i)) && rnd_below(&rs, 4))
					want |= 1u << i;
				else if (!(lost & (1u << i)) && rnd_below(&rs, 8) == 0)
					want |= 1u << i;
			}
			stripe_lose(&st, present, &rs);
			uint8_t *shards[EC_MAX_SHARDS];
			for (unsigned i = 0; i < n; i++)
				shards[i] = (present | want) & (1u << i) ? st.work[i] : NULL;

			int rc = ec_decode(c, len, shards, present, want);
			if (rc != 0)
				ck_abort_msg("%u+%u present=%#x want=%#x: rc=%d (seed=%" PRIu64 ")", k, m,
					     present, want, rc, g_seed);
			char what[64];
			snprintf(what, sizeof(what), "present=%#x want=%#x", present, want);
			for (unsigned i = 0; i < n; i++)
				if ((present | want) & (1u << i))
					check_shard(&st, i, what);
		}
		stripe_free(&st);
		ec_free(c);
	}
}
END_TEST

/* m == 0: encode writes nothing and decode with everything present is a
 * no-op; with a shard missing there is no way back. */
START_TEST(test_m_zero)
{
	uint64_t rs = g_seed ^ 0x3333;
	struct ec_code *c = NULL;
	ck_assert_int_eq(ec_new(3, 0, &c), 0);
	struct stripe st;
	stripe_init(&st, c, 100, &rs);
	ec_encode(c, st.len, (const uint8_t *const *)st.orig, NULL);
	stripe_lose(&st, 0x7, &rs);
	ck_assert_int_eq(ec_decode(c, st.len, st.work, 0x7, 0x7), 0);
	for (unsigned i = 0; i < 3; i++)
		check_shard(&st, i, "m=0");
	ck_assert_int_eq(ec_decode(c, st.len, st.work, 0x3, 0x4), -EINVAL);
	stripe_free(&st);
	ec_free(c);
}
END_TEST

/* Too many losses and out-of-range want bits are refused without touching
 * any shard. Present bits beyond k+m name no shard and must not count. */
START_TEST(test_decode_einval)
{
	uint64_t rs = g_seed ^ 0x4444;
	struct ec_code *c = NULL;
	ck_assert_int_eq(ec_new(4, 2, &c), 0);
	struct stripe st;
	stripe_init(&st, c, 64, &rs);

	/* Three of six lost: only three present. */
	stripe_lose(&st, 0x38, &rs);
	uint8_t junk0[64];
	memcpy(junk0, st.work[0], 64);
	ck_assert_int_eq(ec_decode(c, 64, st.work, 0x38, 0x07), -EINVAL);
	ck_assert_mem_eq(st.work[0], junk0, 64);
	ck_assert_int_eq(ec_decode(c, 64, st.work, 0, 0x01), -EINVAL);
	/* Three valid bits plus bits 6 and 7, which are not shards. */
	ck_assert_int_eq(ec_decode(c, 64, st.work, 0x38 | 0xC0, 0x07), -EINVAL);
	ck_assert_int_eq(ec_decode(c, 64, st.work, 0xFFFFFFC0u | 0x38, 0x07), -EINVAL);

	/* Enough present, but want names shard 6 or 31 of a 6-shard code. */
	stripe_lose(&st, 0x3E, &rs);
	ck_assert_int_eq(ec_decode(c, 64, st.work, 0x3E, 0x41), -EINVAL);
	ck_assert_int_eq(ec_decode(c, 64, st.work, 0x3E, 0x80000001u), -EINVAL);
	ck_assert_int_ne(st.work[0][0], st.orig[0][0]);
	/* Extra present bits are ignored, not an error. */
	ck_assert_int_eq(ec_decode(c, 64, st.work, 0x3E | 0xFF00, 0x01), 0);
	check_shard(&st, 0, "extra present bits");

	stripe_free(&st);
	ec_free(c);
}
END_TEST

START_TEST(test_new_bounds)
{
	static const unsigned good[][2] = {{1, 0}, {1, 15}, {4, 2}, {12, 4}, {16, 0}, {8, 8}};
	static const unsigned bad[][2] = {{0, 0},  {0, 2},  {17, 0},        {10, 7},
					  {16, 1}, {1, 16}, {UINT32_MAX, 2}, {2, UINT32_MAX}};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct ec_code *c = NULL;
		ck_assert_int_eq(ec_new(good[i][0], good[i][1], &c), 0);
		ck_assert_uint_eq(ec_k(c), good[i][0]);
		ck_assert_uint_eq(ec_m(c), good[i][1]);
		ec_free(c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ec_code *c = (struct ec_code *)&c; /* must stay as is */
		ck_assert_msg(ec_new(bad[i][0], bad[i][1], &c) == -EINVAL, "ec_new(%u, %u)", bad[i][0],
			      bad[i][1]);
		ck_assert_ptr_eq(c, (struct ec_code *)&c);
	}
	ec_free(NULL);
}
END_TEST

START_TEST(test_parse)
{
	static const struct {
		const char *s;
		unsigned k, m;
	} good[] = {{"4+2", 4, 2}, {"12+4", 12, 4}, {"1+0", 1, 0}, {"16+0", 16, 0}, {"1+15", 1, 15},
		    {"08+8", 8, 8}};
	static const char *const bad[] = {
		"0+2", "4+",   "4+2x", "17+0", "10+7", "",     "+",   "+2",   "4",    "4-2",
		" 4+2", "4 +2", "4+ 2", "4+2 ", "-1+2", "4+-2", "+4+2", "4++2", "0x4+2", "4+2+1",
		"99999999999999999999999+1", "1+18446744073709551617", "4+2\n",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		unsigned k = 99, m = 99;
		ck_assert_msg(ec_parse(good[i].s, &k, &m) == 0, "\"%s\" refused", good[i].s);
		ck_assert_uint_eq(k, good[i].k);
		ck_assert_uint_eq(m, good[i].m);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned k = 99, m = 99;
		ck_assert_msg(ec_parse(bad[i], &k, &m) == -EINVAL, "\"%s\" accepted", bad[i]);
		ck_assert_uint_eq(k, 99);
		ck_assert_uint_eq(m, 99);
	}
}
END_TEST

static uint64_t pick_seed(void)
{
	const char *e = getenv("IOLAKE_TEST_SEED");
	if (e && *e)
		return strtoull(e, NULL, 0);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
}

int main(void)
{
	g_seed = pick_seed();
	printf("test_ec: seed=%" PRIu64 " (replay: IOLAKE_TEST_SEED=%" PRIu64 ")\n", g_seed, g_seed);
	fflush(stdout);

	Suite *s = suite_create("ec");
	TCase *tc = tcase_create("ec");
	/* The 1 MiB patterns and 300 random codes take well under a second
	 * optimised; leave room for ASan/UBSan and a loaded CI box. */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_4_2_all_loss_patterns);
	tcase_add_test(tc, test_encode_matches_cauchy_formula);
	tcase_add_test(tc, test_encode_golden_2_1);
	tcase_add_test(tc, test_random_codes);
	tcase_add_test(tc, test_m_zero);
	tcase_add_test(tc, test_decode_einval);
	tcase_add_test(tc, test_new_bounds);
	tcase_add_test(tc, test_parse);
	suite_add_tcase(s, tc);

	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
