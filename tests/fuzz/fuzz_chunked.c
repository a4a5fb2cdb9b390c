/*
 * fuzz_chunked.c — libFuzzer target for gateway/chunked (aws-chunked).
 *
 * Input: byte 0 picks the mode (signed or not, trailers or not) and the
 * piece sizes; the rest is the body. Checked: consumption never exceeds
 * what was fed, decoded bytes never exceed the sum of chunk sizes seen,
 * errors are sticky, and a finished decoder consumes nothing more.
 *
 * Build (not in the Makefile):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_chunked.c gateway/chunked.c common/sigv4.c common/hash.c \
 *     -lcrypto -o build/fuzz_chunked
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/chunked.h"

static uint64_t delivered;

static void on_data(void *ud, const char *p, size_t n)
{
	(void)ud;
	volatile char c = n ? p[0] ^ p[n - 1] : 0;
	(void)c;
	delivered += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static struct sigv4_auth auth = { .access_key = "AK", .date = "20130524", .region = "us-east-1",
					  .service = "s3", .amz_date = "20130524T000000Z" };
	static const uint8_t key[32] = { 1, 2, 3 };
	uint8_t mode = data[0];
	static struct chunked_dec d;
	memset(&d, 0xAA, sizeof(d)); /* init must not rely on zeroed memory */
	if (chunked_init(&d, (mode & 1) ? key : NULL, &auth,
			 "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", mode & 2))
		return 0;
	delivered = 0;
	const char *p = (const char *)data + 1;
	size_t left = size - 1;
	uint32_t rng = mode;
	while (left) {
		rng = rng * 1103515245u + 12345u;
		size_t n = 1 + (rng >> 16) % 97;
		if (n > left)
			n = left;
		ssize_t rc = chunked_feed(&d, p, n, on_data, NULL);
		if (rc < 0) {
			if (chunked_feed(&d, "0\r\n\r\n", 5, on_data, NULL) != rc)
				abort(); /* sticky */
			break;
		}
		if ((size_t)rc > n)
			abort();
		p += rc;
		left -= (size_t)rc;
		if ((size_t)rc < n) {
			if (!chunked_done(&d) || chunked_feed(&d, "x", 1, on_data, NULL) != 0)
				abort();
			break;
		}
	}
	if (delivered != d.decoded)
		abort();
	chunked_free(&d);
	return 0;
}
