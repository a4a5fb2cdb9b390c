/*
 * fuzz_s3_req.c — libFuzzer target for gateway/s3_req routing.
 *
 * Input: byte 0 picks the method and flags; then the request target up to
 * the first NUL, then the Host value. The scratch is malloc'd at exactly
 * S3_REQ_SCRATCH(target_len) so any overrun is an ASan report. Checked:
 * an accepted request names a valid bucket, a key of at most 1024 bytes
 * with no NUL, strings inside the scratch, and a real operation.
 *
 * Build (not in the Makefile):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_s3_req.c gateway/s3_req.c gateway/s3_err.c gateway/xml.c \
 *     -o build/fuzz_s3_req
 *   build/fuzz_s3_req tests/fuzz/corpus/s3_req
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_req.h"

static const char *const methods[] = { "GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "GET" };
static const char *const domains[] = { "s3.example.com", "localhost" };

static void inside(const char *base, size_t cap, const char *p, size_t n)
{
	if (p < base || p + n + 1 > base + cap || p[n] != '\0')
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct s3_req_cfg cfg = { domains, 2 };
	struct s3_req_in in = { .method = methods[data[0] & 7], .has_copy_source = data[0] & 8 };
	const char *t = (const char *)data + 1;
	size_t rest = size - 1;
	const char *nul = memchr(t, '\0', rest);
	in.target = t;
	in.target_len = nul ? (size_t)(nul - t) : rest;
	if (nul) {
		in.host = nul + 1;
		in.host_len = rest - in.target_len - 1;
	}
	size_t cap = S3_REQ_SCRATCH(in.target_len);
	char *scratch = malloc(cap);
	struct s3_req r;
	enum s3_err e = s3_req_parse(&r, &cfg, &in, scratch, cap);
	if (e != r.err || (unsigned)e >= S3E__COUNT)
		abort();
	if (e == S3E_OK) {
		if (r.op == S3_OP_NONE || r.op >= S3_OP__COUNT)
			abort();
		if (r.bucket) {
			inside(scratch, cap, r.bucket, r.bucket_len);
			if (!s3_bucket_name_valid(r.bucket, r.bucket_len))
				abort();
		} else if (r.key || r.op != S3_OP_ListBuckets) {
			abort();
		}
		if (r.key) {
			inside(scratch, cap, r.key, r.key_len);
			if (r.key_len > S3_KEY_MAX || memchr(r.key, '\0', r.key_len))
				abort();
		}
		for (uint32_t i = 0; i < r.n_q; i++) {
			inside(scratch, cap, r.q[i].name, r.q[i].name_len);
			inside(scratch, cap, r.q[i].value, r.q[i].value_len);
		}
		if (r.part_number > S3_PART_MAX)
			abort();
	} else if (r.op != S3_OP_NONE) {
		abort();
	}
	free(scratch);
	return 0;
}
