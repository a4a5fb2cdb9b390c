/*
 * test_crc_combine.c — unit tests for common/crc_combine.c.
 *
 * Oracle: a bitwise CRC written here from the definitions (reflected
 * polynomials, init and final xor all ones) over whole buffers, and the
 * published check values of "123456789" for each kind. Random splits of
 * random buffers must combine to the whole buffer's CRC; lengths too long
 * to compute are checked by associativity.
 *
 * Randomized tests print "seed=N" at start; IOLAKE_TEST_SEED=N replays.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/crc_combine.h"

static uint64_t g_seed;

static uint64_t rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static const uint64_t polys[CRC_KIND__COUNT] = { 0xedb88320u, 0x82f63b78u,
						 0x9a6c9329ac4bc9b5ull };
static const uint64_t masks[CRC_KIND__COUNT] = { 0xffffffffu, 0xffffffffu, ~0ull };

/* The definition, a bit at a time: the finished CRC of p. */
static uint64_t crc_ref(enum crc_kind k, const uint8_t *p, size_t len)
{
	uint64_t c = masks[k];
	while (len--) {
		c ^= *p++;
		for (int i = 0; i < 8; i++)
			c = c & 1 ? (c >> 1) ^ polys[k] : c >> 1;
	}
	return c ^ masks[k];
}

START_TEST(test_check_values)
{
	const uint8_t *s = (const uint8_t *)"123456789";
	ck_assert_uint_eq(crc_ref(CRC_KIND_CRC32, s, 9), 0xcbf43926u);
	ck_assert_uint_eq(crc_ref(CRC_KIND_CRC32C, s, 9), 0xe3069283u);
	ck_assert_uint_eq(crc_ref(CRC_KIND_CRC64NVME, s, 9), 0xae8b14860a799888ull);
	for (int k = 0; k < CRC_KIND__COUNT; k++) {
		/* "12345" + "6789", and every other split */
		for (size_t cut = 0; cut <= 9; cut++) {
			uint64_t a = crc_ref(k, s, cut), b = crc_ref(k, s + cut, 9 - cut);
			ck_assert_uint_eq(crc_combine(k, a, b, 9 - cut), crc_ref(k, s, 9));
		}
	}
}
END_TEST

START_TEST(test_random_splits)
{
	uint64_t s = g_seed;
	enum { LEN = 1 << 16 };
	uint8_t *buf = malloc(LEN);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < LEN; i++)
		buf[i] = (uint8_t)rnd_next(&s);
	for (int k = 0; k < CRC_KIND__COUNT; k++) {
		uint64_t whole = crc_ref(k, buf, LEN);
		for (int round = 0; round < 20; round++) {
			/* up to 50 pieces, some empty, combined left to right */
			size_t npieces = 1 + rnd_next(&s) % 50, off = 0;
			uint64_t acc = 0;
			for (size_t i = 0; i < npieces; i++) {
				size_t left = LEN - off;
				size_t n = i + 1 == npieces ? left : (size_t)(rnd_next(&s) % (left / 8 + 1));
				acc = crc_combine(k, acc, crc_ref(k, buf + off, n), n);
				off += n;
			}
			ck_assert_uint_eq(off, LEN);
			if (acc != whole)
				ck_abort_msg("kind %d seed=%" PRIu64 " round %d: %" PRIx64 " != %" PRIx64,
					     k, g_seed, round, acc, whole);
		}
	}
	free(buf);
}
END_TEST

START_TEST(test_zero_runs)
{
	/* A run of zeros long enough to use many table powers. */
	enum { LEN = 3 << 20 };
	uint8_t *z = calloc(1, LEN);
	ck_assert_ptr_nonnull(z);
	for (int k = 0; k < CRC_KIND__COUNT; k++) {
		uint64_t a = crc_ref(k, (const uint8_t *)"x", 1);
		uint8_t *buf = malloc(LEN + 1);
		ck_assert_ptr_nonnull(buf);
		buf[0] = 'x';
		memcpy(buf + 1, z, LEN);
		ck_assert_uint_eq(crc_combine(k, a, crc_ref(k, z, LEN), LEN),
				  crc_ref(k, buf, LEN + 1));
		free(buf);
	}
	free(z);
}
END_TEST

START_TEST(test_large_lengths_associate)
{
	/* 10,000 parts of 5 GiB cannot be hashed here; the combination must
	 * still associate: (a.b).c == a.(b.c) for any lengths. */
	uint64_t s = g_seed ^ 1;
	for (int k = 0; k < CRC_KIND__COUNT; k++) {
		for (int i = 0; i < 200; i++) {
			uint64_t a = rnd_next(&s) & masks[k], b = rnd_next(&s) & masks[k],
				 c = rnd_next(&s) & masks[k];
			uint64_t lb = rnd_next(&s) % (5ull << 30) + 1, lc = rnd_next(&s) % (5ull << 40);
			uint64_t left = crc_combine(k, crc_combine(k, a, b, lb), c, lc);
			uint64_t right = crc_combine(k, a, crc_combine(k, b, c, lc), lb + lc);
			ck_assert_uint_eq(left, right);
		}
	}
}
END_TEST

START_TEST(test_bad_kind)
{
	ck_assert_uint_eq(crc_combine(CRC_KIND__COUNT, 1, 2, 3), 0);
}
END_TEST

int main(void)
{
	const char *env = getenv("IOLAKE_TEST_SEED");
	g_seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
	printf("seed=%" PRIu64 "\n", g_seed);
	Suite *su = suite_create("crc_combine");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_check_values);
	tcase_add_test(tc, test_random_splits);
	tcase_add_test(tc, test_zero_runs);
	tcase_add_test(tc, test_large_lengths_associate);
	tcase_add_test(tc, test_bad_kind);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
