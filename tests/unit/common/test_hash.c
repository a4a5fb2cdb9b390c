/*
 * test_hash.c — SHA-256, MD5 and HMAC-SHA256 against published vectors
 * (FIPS 180-2, RFC 1321, RFC 4231), streams equal to one-shot hashes, and
 * hex round trips.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

static void hex_of(const uint8_t *d, size_t n, char *out)
{
	hash_hex(d, n, out);
}

START_TEST(test_vectors)
{
	uint8_t d[32];
	char hex[65];
	hash_sha256("abc", 3, d);
	hex_of(d, 32, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hash_sha256("", 0, d);
	hex_of(d, 32, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hash_md5("", 0, d);
	hex_of(d, 16, hex);
	ck_assert_str_eq(hex, "d41d8cd98f00b204e9800998ecf8427e");
	hash_md5("message digest", 14, d);
	hex_of(d, 16, hex);
	ck_assert_str_eq(hex, "f96b697d7cb7938d525a2f31aaf161d0");

	/* RFC 4231 test case 2 (short key) and 6 (key longer than a block). */
	hash_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	hex_of(d, 32, hex);
	ck_assert_str_eq(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	uint8_t key[131];
	memset(key, 0xaa, sizeof(key));
	const char *m = "Test Using Larger Than Block-Size Key - Hash Key First";
	hash_hmac_sha256(key, sizeof(key), m, strlen(m), d);
	hex_of(d, 32, hex);
	ck_assert_str_eq(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}
END_TEST

START_TEST(test_stream_equals_oneshot)
{
	unsigned seed = (unsigned)time(NULL);
	const char *env = getenv("IOLAKE_TEST_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 10);
	printf("test_stream_equals_oneshot seed=%u\n", seed);
	srand(seed);
	size_t n = 1 << 20;
	uint8_t *buf = malloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)rand();
	enum hash_alg algs[] = { HASH_MD5, HASH_SHA256 };
	for (int a = 0; a < 2; a++) {
		struct hash_stream *h = hash_stream_new(algs[a]);
		uint8_t one[32], inc[32];
		for (int round = 0; round < 2; round++) { /* final resets the stream */
			size_t off = 0;
			while (off < n) {
				size_t k = (size_t)rand() % 70000;
				if (k > n - off)
					k = n - off;
				hash_stream_update(h, buf + off, k);
				off += k;
			}
			hash_stream_final(h, inc);
			if (algs[a] == HASH_MD5)
				hash_md5(buf, n, one);
			else
				hash_sha256(buf, n, one);
			ck_assert_mem_eq(one, inc, algs[a] == HASH_MD5 ? 16 : 32);
		}
		hash_stream_free(h);
	}
	free(buf);
}
END_TEST

START_TEST(test_hex)
{
	uint8_t in[4] = { 0x00, 0x9f, 0xA0, 0xff }, out[4];
	char hex[9];
	hash_hex(in, 4, hex);
	ck_assert_str_eq(hex, "009fa0ff");
	ck_assert_int_eq(hash_unhex("009FA0fF", 4, out), 0);
	ck_assert_mem_eq(in, out, 4);
	ck_assert_int_eq(hash_unhex("0g", 1, out), -EINVAL);
}
END_TEST

static void *hash_in_thread(void *arg)
{
	uint8_t d[32];
	char hex[65];
	for (int i = 0; i < 1000; i++)
		hash_sha256("abc", 3, d);
	hash_hex(d, 32, hex);
	*(int *)arg = strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	return NULL;
}

START_TEST(test_threads)
{
	/* Per-thread contexts: concurrent hashing gives right answers, and the
	 * contexts of exited threads are freed (LeakSanitizer checks). */
	pthread_t t[4];
	int bad[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, hash_in_thread, &bad[i]);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(bad[i], 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hash");
	TCase *tc = tcase_create("hash");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_stream_equals_oneshot);
	tcase_add_test(tc, test_hex);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
