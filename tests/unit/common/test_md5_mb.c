/*
 * test_md5_mb.c — multi-buffer MD5 (common/md5_mb) against OpenSSL's MD5
 * on every kernel this CPU has (16 lanes, 8, scalar): RFC 1321 vectors,
 * random lengths, alignments and split points, 1 to 40 streams a call
 * (more than the lanes: turns), streams that finish at different calls,
 * and a stream that moves between md5_mb_update and the lane path.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/md5_mb.h"

static const unsigned kernels[] = { 16, 8, 1 };

static uint8_t *random_bytes(size_t n, unsigned seed)
{
	uint8_t *b = malloc(n);
	ck_assert_ptr_nonnull(b);
	srand(seed);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rand();
	return b;
}

static void hex(const uint8_t d[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

START_TEST(test_vectors_every_kernel)
{
	static const struct {
		const char *in, *md5;
	} v[] = {
		{ "", "d41d8cd98f00b204e9800998ecf8427e" },
		{ "a", "0cc175b9c0f1b6a831c399e269772661" },
		{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
		{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
		{ "abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b" },
		{ "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		  "d174ab98d277d9f5a5611c2c9f419d9f" },
		{ "1234567890123456789012345678901234567890123456789012345678901234567890"
		  "1234567890",
		  "57edf4a22be3c955ac49da2e2107b67a" },
	};
	enum { NV = sizeof(v) / sizeof(v[0]) };
	int ran = 0;
	for (unsigned k = 0; k < 3; k++) {
		if (md5_mb_force(kernels[k]))
			continue;
		ran++;
		/* The 7 vectors in lanes together, twice each (14 streams),
		 * every one fed whole in one call. */
		struct md5_mb_ctx c[2 * NV], *cp[2 * NV];
		const uint8_t *d[2 * NV];
		size_t l[2 * NV];
		for (unsigned i = 0; i < 2 * NV; i++) {
			md5_mb_init(&c[i]);
			cp[i] = &c[i];
			d[i] = (const uint8_t *)v[i % NV].in;
			l[i] = strlen(v[i % NV].in);
		}
		md5_mb_update_n(cp, d, l, 2 * NV);
		for (unsigned i = 0; i < 2 * NV; i++) {
			uint8_t out[16];
			char h[33];
			md5_mb_final(&c[i], out);
			hex(out, h);
			ck_assert_str_eq(h, v[i % NV].md5);
		}
	}
	ck_assert_int_ge(ran, 1);   /* scalar is always there */
	ck_assert_int_eq(md5_mb_force(1), 0);
	ck_assert_int_eq(md5_mb_force(3), -ENOTSUP);
}
END_TEST

/* n streams over one random buffer at random offsets (alignments), each
 * fed in `rounds` calls of random lengths (0 included, some below a
 * block, some long), some streams dropping out early (lanes finishing at
 * different times); each compared with OpenSSL fed the same bytes. */
static int random_round(const uint8_t *buf, size_t buf_len, unsigned n, unsigned rounds)
{
	struct md5_mb_ctx c[40], *cp[40];
	MD5_CTX ref[40];
	unsigned last_round[40];
	int bad = 0;
	for (unsigned i = 0; i < n; i++) {
		md5_mb_init(&c[i]);
		MD5_Init(&ref[i]);
		last_round[i] = (unsigned)rand() % rounds;
	}
	for (unsigned r = 0; r < rounds; r++) {
		const uint8_t *d[40];
		size_t l[40];
		unsigned m = 0;
		/* Now and then a stream takes a scalar update in between. */
		if (rand() % 3 == 0) {
			unsigned i = (unsigned)rand() % n;
			size_t len = (size_t)rand() % 100;
			MD5_Update(&ref[i], buf, len);
			md5_mb_update(&c[i], buf, len);
		}
		for (unsigned i = 0; i < n; i++) {
			if (r > last_round[i])
				continue;   /* this stream is done */
			size_t len;
			switch (rand() % 4) {
			case 0: len = (size_t)rand() % 64; break;
			case 1: len = 64 * (size_t)(rand() % 8); break;
			case 2: len = (size_t)rand() % 5000; break;
			default: len = (size_t)rand() % 200000; break;
			}
			size_t off = (size_t)rand() % (buf_len - len);
			cp[m] = &c[i];
			d[m] = buf + off;
			l[m] = len;
			MD5_Update(&ref[i], buf + off, len);
			m++;
		}
		md5_mb_update_n(cp, d, l, m);
	}
	for (unsigned i = 0; i < n; i++) {
		uint8_t a[16], b[16];
		md5_mb_final(&c[i], a);
		MD5_Final(b, &ref[i]);
		bad += memcmp(a, b, 16) != 0;
	}
	return bad;
}

START_TEST(test_random_splits_every_kernel)
{
	size_t len = 1 << 20;
	uint8_t *buf = random_bytes(len, 19);
	for (unsigned k = 0; k < 3; k++) {
		if (md5_mb_force(kernels[k]))
			continue;
		srand(kernels[k]);
		int bad = 0;
		for (unsigned it = 0; it < 60; it++) {
			unsigned n = 1 + (unsigned)rand() % 40;
			bad += random_round(buf, len, n, 1 + (unsigned)rand() % 6);
		}
		if (bad)
			fprintf(stderr, "kernel %u lanes: %d bad digests\n", kernels[k], bad);
		ck_assert_int_eq(bad, 0);
	}
	free(buf);
}
END_TEST

/* Every lane count 1..16 with equal whole-block lengths: the kernel runs
 * every lane for the whole call (the unused lanes' scratch states must
 * not leak into the busy ones). */
START_TEST(test_every_lane_count)
{
	size_t len = 16 * 8192;
	uint8_t *buf = random_bytes(len, 7);
	for (unsigned k = 0; k < 3; k++) {
		if (md5_mb_force(kernels[k]))
			continue;
		for (unsigned n = 1; n <= 16; n++) {
			struct md5_mb_ctx c[16], *cp[16];
			const uint8_t *d[16];
			size_t l[16];
			for (unsigned i = 0; i < n; i++) {
				md5_mb_init(&c[i]);
				cp[i] = &c[i];
				d[i] = buf + i * 8192 + i;   /* odd alignments */
				l[i] = 8192 - 64;
			}
			md5_mb_update_n(cp, d, l, n);
			for (unsigned i = 0; i < n; i++) {
				uint8_t a[16], b[16];
				md5_mb_final(&c[i], a);
				MD5(d[i], l[i], b);
				ck_assert_msg(memcmp(a, b, 16) == 0, "kernel %u, %u streams, stream %u",
					      kernels[k], n, i);
			}
		}
	}
	free(buf);
}
END_TEST

/* md5_mb_force moves between the kernels this CPU has and names them. */
START_TEST(test_kernel_choice)
{
	ck_assert_int_eq(md5_mb_force(1), 0);
	ck_assert_uint_eq(md5_mb_lanes(), 1);
	ck_assert_str_eq(md5_mb_kernel(), "scalar");
	if (md5_mb_force(16) == 0)
		ck_assert_str_eq(md5_mb_kernel(), "avx512");
	else if (md5_mb_force(8) == 0)
		ck_assert_str_eq(md5_mb_kernel(), "avx2");
	else
		ck_assert_uint_eq(md5_mb_lanes(), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("md5_mb");
	TCase *tc = tcase_create("md5_mb");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_vectors_every_kernel);
	tcase_add_test(tc, test_random_splits_every_kernel);
	tcase_add_test(tc, test_every_lane_count);
	tcase_add_test(tc, test_kernel_choice);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
