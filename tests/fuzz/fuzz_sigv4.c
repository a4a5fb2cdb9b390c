/*
 * fuzz_sigv4.c — libFuzzer target for common/sigv4: the Authorization
 * header and presigned-query parsers, and the canonical request and
 * signature of a hostile request (query, path and headers from the
 * input), whose text starts in stack arrays and moves to the heap when it
 * outgrows them.
 *
 * Input: a flag byte, then text cut at NUL bytes into a header value /
 * query / path / signed-header list / up to 16 "name:value" headers.
 * Checks, for every input:
 *   - a parser answers 0, -ENOENT, -ENOTSUP (another algorithm) or
 *     -EINVAL, and a 0 gives a NUL-ended
 *     access key of 1..128 bytes, an 8-digit date and 64 lower-case hex
 *     digits of signature;
 *   - sigv4_canonical_request (heap from its first byte) and sigv4_sign
 *     (stack first) agree: both refuse, or the signature is the HMAC of
 *     the string to sign built here from the canonical request's SHA-256.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/sigv4.h"
#include "tests/fuzz/fuzz_pieces.h"

static void check_parsed(int rc, const struct sigv4_auth *a)
{
	if (rc != 0 && rc != -ENOENT && rc != -ENOTSUP && rc != -EINVAL)
		__builtin_trap();
	if (rc != 0)
		return;
	size_t kl = strnlen(a->access_key, sizeof(a->access_key));
	if (kl == 0 || kl > 128 || strnlen(a->date, sizeof(a->date)) != 8 ||
	    strnlen(a->signature, sizeof(a->signature)) != 64)
		__builtin_trap();
	for (int i = 0; i < 64; i++) {
		char c = a->signature[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	struct sigv4_auth a;
	size_t hn, qn, pn, sn;
	const char *hv = fuzz_piece(&p, end, &hn);
	check_parsed(sigv4_parse_header(hv, hn, &a), &a);
	const char *q = fuzz_piece(&p, end, &qn);
	check_parsed(sigv4_parse_query(q, qn, &a), &a);

	const char *path = fuzz_piece(&p, end, &pn);
	const char *sh = fuzz_piece(&p, end, &sn);
	struct sigv4_header hs[16];
	size_t nh = fuzz_headers(&p, end, hs, 16);
	struct sigv4_auth claim = { .presigned = data[0] & 1 };
	strcpy(claim.access_key, "AK");
	strcpy(claim.date, "20130524");
	strcpy(claim.region, "us-east-1");
	strcpy(claim.service, "s3");
	strcpy(claim.amz_date, "20130524T000000Z");
	if (sn >= sizeof(claim.signed_headers))
		sn = sizeof(claim.signed_headers) - 1;
	memcpy(claim.signed_headers, sh, sn);
	claim.signed_headers[sn] = 0;
	struct sigv4_request rq = { .method = (data[0] & 2) ? "PUT" : "GET", .path = path,
				    .path_len = pn, .query = q, .query_len = qn, .headers = hs,
				    .n_headers = nh,
				    .payload_hash = (data[0] & 4) ? SIGV4_UNSIGNED_PAYLOAD
								  : SIGV4_EMPTY_SHA256 };
	uint8_t key[32];
	sigv4_signing_key("secret", claim.date, claim.region, claim.service, key);
	char sig[65];
	int rc = sigv4_sign(key, &rq, &claim, sig);
	size_t len = 0;
	char *creq = sigv4_canonical_request(&rq, &claim, &len);
	if (!creq != (rc != 0))
		__builtin_trap();
	if (rc != 0 && rc != -EINVAL && rc != -ENOENT)
		__builtin_trap();
	if (!creq)
		return 0;
	if (strlen(creq) != len || strncmp(creq, rq.method, 3) != 0 || creq[3] != '\n')
		__builtin_trap();
	uint8_t h[32];
	char hex[65], sts[512], want[65];
	hash_sha256(creq, len, h);
	free(creq);
	hash_hex(h, 32, hex);
	int n = snprintf(sts, sizeof(sts), SIGV4_ALGORITHM "\n%s\n%s/%s/%s/aws4_request\n%s",
			 claim.amz_date, claim.date, claim.region, claim.service, hex);
	uint8_t mac[32];
	hash_hmac_sha256(key, 32, sts, (size_t)n, mac);
	hash_hex(mac, 32, want);
	if (strcmp(sig, want) != 0)
		__builtin_trap();
	return 0;
}
