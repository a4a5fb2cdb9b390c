/*
 * fuzz_sigv2.c — libFuzzer target for common/sigv2: the Authorization
 * header and presigned-query parsers, and the StringToSign built from a
 * hostile request (query, path and headers from the input).
 *
 * Input: a selector byte, then text cut at the first NUL bytes into a
 * header value / query / path / up to 8 "name:value" headers.
 * Checks, for every input:
 *   - a parser answers 0, -ENOENT or -EINVAL, and a 0 gives a NUL-ended
 *     key of 1..128 bytes and a signature that is 28 base64 bytes ending
 *     in '=' or empty (a malformed one, which matches nothing);
 *   - the StringToSign is NULL (too big) or NUL-terminated at its length,
 *     begins with the method and a newline, and signing it twice gives the
 *     same 28-byte base64 signature.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/sigv2.h"
#include "tests/fuzz/fuzz_pieces.h"

static void check_parsed(int rc, const struct sigv2_auth *a)
{
	if (rc != 0 && rc != -ENOENT && rc != -EINVAL)
		__builtin_trap();
	if (rc == 0) {
		size_t kl = strnlen(a->access_key, sizeof(a->access_key));
		size_t sl = strnlen(a->signature, sizeof(a->signature));
		if (kl == 0 || kl > 128 || (sl != 0 && sl != SIGV2_SIG_LEN))
			__builtin_trap();
		if (sl == SIGV2_SIG_LEN && a->signature[sl - 1] != '=')
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	struct sigv2_auth a;
	size_t hn, qn, pn;
	const char *hv = fuzz_piece(&p, end, &hn);
	check_parsed(sigv2_parse_header(hv, hn, &a), &a);
	const char *q = fuzz_piece(&p, end, &qn);
	check_parsed(sigv2_parse_query(q, qn, &a), &a);

	const char *path = fuzz_piece(&p, end, &pn);
	struct sigv4_header hs[8];
	size_t nh = fuzz_headers(&p, end, hs, 8);
	struct sigv2_auth claim = { .presigned = data[0] & 1, .blank_date = data[0] & 2,
				    .expires = (int64_t)data[0] * 1000003 };
	struct sigv2_request rq = { .method = (data[0] & 4) ? "PUT" : "GET", .path = path,
				    .path_len = pn, .query = q, .query_len = qn, .headers = hs,
				    .n_headers = nh, .vhost_bucket = (data[0] & 8) ? "bkt" : NULL,
				    .vhost_bucket_len = (data[0] & 8) ? 3 : 0 };
	size_t len = 0;
	char *sts = sigv2_string_to_sign(&rq, &claim, &len);
	if (sts) {
		if (strlen(sts) != len || len > SIGV2_STS_MAX || strncmp(sts, rq.method, 3) != 0 ||
		    sts[3] != '\n')
			__builtin_trap();
		free(sts);
		char s1[SIGV2_SIG_LEN + 1], s2[SIGV2_SIG_LEN + 1];
		if (sigv2_sign("secret", &rq, &claim, s1) || sigv2_sign("secret", &rq, &claim, s2) ||
		    strlen(s1) != SIGV2_SIG_LEN || strcmp(s1, s2) || !sigv2_equal(s1, s2))
			__builtin_trap();
	}
	return 0;
}
