/*
 * test_recover.c — the pure parts of the recovery driver (osd/recover.h):
 * the object-id order its k-way merge relies on must be the shard index's
 * own (store_key_encode, compared bytewise, as RocksDB does), the primary
 * is the lowest up slot, signatures compare slots and up flags, and a
 * stripe is rebuilt only with k shards present and an up slot lacking
 * one; deep scrub's check (osd_recover_deep_check) names the one bad
 * shard of a 4+2 stripe, data or parity, with its right bytes, and calls
 * two bad shards (or any with m = 1) inconsistent. The merge and rebuild against real OSDs are in
 * tests/integration/test_recovery.py.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ec.h"
#include "meta/place.h"
#include "osd/recover.h"
#include "osd/store/rec.h"

static int key_order(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	struct store_key ka, kb;
	uint8_t ea[STORE_KEY_LEN], eb[STORE_KEY_LEN];
	store_key_make(&ka, 7, a, al, 0);
	store_key_make(&kb, 7, b, bl, 0);
	store_key_encode(&ka, ea);
	store_key_encode(&kb, eb);
	int c = memcmp(ea, eb, STORE_KEY_LEN);
	return c < 0 ? -1 : c > 0;
}

START_TEST(oid_order_is_the_index_order)
{
	unsigned seed = getenv("IOLAKE_SEED") ? (unsigned)atoi(getenv("IOLAKE_SEED"))
					      : (unsigned)time(NULL);
	printf("test_recover: seed %u\n", seed);
	srand(seed);
	/* Hand-picked ties: zero padding and the length byte. */
	static const struct { const char *a; size_t al; const char *b; size_t bl; } fixed[] = {
		{ "a", 1, "a\0", 2 }, { "a\0", 2, "a", 1 }, { "a\0\1", 3, "a", 1 },
		{ "ab", 2, "a", 1 }, { "a", 1, "a", 1 }, { "\xff", 1, "\0\0", 2 },
	};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		ck_assert_int_eq(osd_recover_oid_cmp((const uint8_t *)fixed[i].a, fixed[i].al,
						     (const uint8_t *)fixed[i].b, fixed[i].bl),
				 key_order((const uint8_t *)fixed[i].a, fixed[i].al,
					   (const uint8_t *)fixed[i].b, fixed[i].bl));
	/* Random ids from a tiny alphabet with zeros, so ties and padding
	 * come up often. */
	for (int n = 0; n < 200000; n++) {
		uint8_t a[64], b[64];
		size_t al = 1 + (size_t)rand() % 6, bl = 1 + (size_t)rand() % 6;
		for (size_t i = 0; i < 64; i++) {
			a[i] = (uint8_t)(rand() % 3);
			b[i] = (uint8_t)(rand() % 3);
		}
		if (rand() % 2)
			memcpy(b, a, al < bl ? al : bl);
		int got = osd_recover_oid_cmp(a, al, b, bl), want = key_order(a, al, b, bl);
		if (got != want)
			ck_abort_msg("seed %u: oid_cmp %d, index order %d (lengths %zu, %zu)", seed,
				     got, want, al, bl);
	}
}
END_TEST

static struct osd_recover_sig sig6(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e,
				   uint32_t f, uint32_t up)
{
	struct osd_recover_sig s = { .width = 6, .osds = { a, b, c, d, e, f }, .up_mask = up };
	return s;
}

START_TEST(primary_and_signature)
{
	const uint32_t N = OSD_RECOVER_NONE;
	struct osd_recover_sig s = sig6(4, 2, 7, 1, 3, 5, 0x3f);
	int p = osd_recover_primary_slot(9, &s);
	ck_assert_int_ge(p, 0);
	ck_assert_int_eq(p, meta_place_primary_slot(9, s.osds, 6, 0x3f));
	/* a slot other than the primary's going down changes nothing */
	s.up_mask = 0x3f & ~(1u << ((p + 1) % 6));
	ck_assert_int_eq(osd_recover_primary_slot(9, &s), p);
	/* the primary's going down hands the PG to another up slot */
	s.up_mask = 0x3f & ~(1u << p);
	int q = osd_recover_primary_slot(9, &s);
	ck_assert_int_ge(q, 0);
	ck_assert_int_ne(q, p);
	s = sig6(N, N, 7, 1, 3, 5, 0x3c);
	ck_assert_int_ge(osd_recover_primary_slot(9, &s), 2);
	s.up_mask = 0;
	ck_assert_int_eq(osd_recover_primary_slot(9, &s), -1);
	/* An up bit on an empty slot does not make a primary. */
	s = sig6(N, 2, 3, 4, 5, 6, 0x01);
	ck_assert_int_eq(osd_recover_primary_slot(9, &s), -1);
	/* Declustered: the same six OSDs in the same slots of 256 PGs (as
	 * placement leaves them when they all registered in one order) still
	 * give each OSD about a sixth of the PGs to lead. */
	unsigned lead[6] = { 0 };
	s = sig6(1, 2, 3, 4, 5, 6, 0x3f);
	for (uint32_t pg = 0; pg < 256; pg++)
		lead[osd_recover_primary_slot(pg, &s)]++;
	for (int i = 0; i < 6; i++) {
		ck_assert_uint_ge(lead[i], 20);   /* 256 / 6 = 42.7 */
		ck_assert_uint_le(lead[i], 70);
	}

	struct osd_recover_sig a = sig6(1, 2, 3, 4, 5, 6, 0x3f), b = a;
	ck_assert(osd_recover_sig_eq(&a, &b));
	b.up_mask = 0x3d;
	ck_assert(!osd_recover_sig_eq(&a, &b));
	b = a;
	b.osds[5] = 8; /* a slot moved */
	ck_assert(!osd_recover_sig_eq(&a, &b));
	b = a;
	b.osds[6] = 99; /* beyond the width: not part of it */
	ck_assert(osd_recover_sig_eq(&a, &b));
}
END_TEST

START_TEST(classify)
{
	const uint32_t N = OSD_RECOVER_NONE;
	struct osd_recover_sig s = sig6(1, 2, 3, 4, 5, 6, 0x3f);
	struct osd_recover_stripe_class c = osd_recover_classify(&s, 4, 0x3f);
	ck_assert(!c.rebuild && !c.unfound && c.missing == 0 && c.present == 6);
	c = osd_recover_classify(&s, 4, 0x3b); /* slot 2 lacks its shard */
	ck_assert(c.rebuild && c.missing == 0x04 && c.present == 5);
	c = osd_recover_classify(&s, 4, 0x07); /* 3 of k=4: unfound, touched not */
	ck_assert(!c.rebuild && c.unfound && c.present == 3);
	/* A down slot or an empty one is not missing: nothing can be
	 * written there; the stripe is degraded, not rebuildable. */
	s = sig6(1, 2, N, 4, 5, 6, 0x3b & ~0x10);
	c = osd_recover_classify(&s, 4, 0x2b);
	ck_assert(!c.rebuild && c.missing == 0 && c.present == 4);
	c = osd_recover_classify(&s, 4, 0x0b); /* slot 5 up and lacking */
	ck_assert(c.unfound && !c.rebuild && c.missing == 0x20);
	c = osd_recover_classify(&s, 2, 0x0b);
	ck_assert(c.rebuild && c.missing == 0x20);
}
END_TEST

/* A random 4+2 stripe of len bytes per shard in st (6 * len). */
static void make_stripe(const struct ec_code *ec, uint8_t *st, size_t len)
{
	for (size_t i = 0; i < 4 * len; i++)
		st[i] = (uint8_t)rand();
	const uint8_t *d[4] = { st, st + len, st + 2 * len, st + 3 * len };
	uint8_t *p[2] = { st + 4 * len, st + 5 * len };
	ec_encode(ec, len, d, p);
}

START_TEST(deep_check_finds_the_one_bad_shard)
{
	unsigned seed = getenv("IOLAKE_SEED") ? (unsigned)atoi(getenv("IOLAKE_SEED"))
					      : (unsigned)time(NULL);
	srand(seed);
	struct ec_code *ec;
	ck_assert_int_eq(ec_new(4, 2, &ec), 0);
	const size_t len = 1021; /* not a multiple of anything ISA-L likes */
	uint8_t *st = malloc(6 * len), *orig = malloc(6 * len), *scratch = malloc(3 * len);
	const uint8_t *sh[6];
	for (int i = 0; i < 6; i++)
		sh[i] = st + (size_t)i * len;
	make_stripe(ec, st, len);
	memcpy(orig, st, 6 * len);
	unsigned bad = 99;
	ck_assert_int_eq(osd_recover_deep_check(ec, len, sh, scratch, &bad), OSD_RECOVER_DEEP_OK);
	/* One shard wrong, data or parity, by one byte or all of them: found,
	 * and the bytes to write back are the original ones. */
	for (unsigned slot = 0; slot < 6; slot++) {
		for (int whole = 0; whole < 2; whole++) {
			memcpy(st, orig, 6 * len);
			if (whole)
				for (size_t b = 0; b < len; b++)
					st[slot * len + b] = (uint8_t)rand();
			else
				st[slot * len + (size_t)rand() % len] ^= (uint8_t)(1 + rand() % 255);
			bad = 99;
			ck_assert_msg(osd_recover_deep_check(ec, len, sh, scratch, &bad) ==
					      OSD_RECOVER_DEEP_ONE,
				      "seed %u slot %u whole %d", seed, slot, whole);
			ck_assert_uint_eq(bad, slot);
			ck_assert(memcmp(scratch, orig + slot * len, len) == 0);
		}
	}
	/* Two wrong shards in one stripe: no single shard explains it. */
	for (unsigned a = 0; a < 6; a++)
		for (unsigned b = a + 1; b < 6; b++) {
			memcpy(st, orig, 6 * len);
			st[a * len + (size_t)rand() % len] ^= 0x5a;
			st[b * len + (size_t)rand() % len] ^= 0xa5;
			ck_assert_msg(osd_recover_deep_check(ec, len, sh, scratch, &bad) ==
					      OSD_RECOVER_DEEP_INCONSISTENT,
				      "seed %u slots %u %u", seed, a, b);
		}
	ec_free(ec);
	/* With one parity shard a mismatch is seen but cannot be placed. */
	ck_assert_int_eq(ec_new(5, 1, &ec), 0);
	const uint8_t *d[5] = { st, st + len, st + 2 * len, st + 3 * len, st + 4 * len };
	uint8_t *p1[1] = { st + 5 * len };
	ec_encode(ec, len, d, p1);
	ck_assert_int_eq(osd_recover_deep_check(ec, len, sh, scratch, &bad), OSD_RECOVER_DEEP_OK);
	st[2 * len] ^= 1;
	ck_assert_int_eq(osd_recover_deep_check(ec, len, sh, scratch, &bad),
			 OSD_RECOVER_DEEP_INCONSISTENT);
	ec_free(ec);
	free(st);
	free(orig);
	free(scratch);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/recover");
	TCase *tc = tcase_create("recover");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, oid_order_is_the_index_order);
	tcase_add_test(tc, primary_and_signature);
	tcase_add_test(tc, classify);
	tcase_add_test(tc, deep_check_finds_the_one_bad_shard);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
