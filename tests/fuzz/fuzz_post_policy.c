/*
 * fuzz_post_policy.c — libFuzzer target for browser POST policies
 * (gateway/post_policy): the base64 text decoded, the JSON parsed
 * (common/json), the expiration and conditions read, then evaluated
 * against fields taken from the input.
 *
 * Input: the policy's base64 text up to the first '\n'; the rest,
 * "name=value" lines, are the form's fields. Copied into exactly sized
 * buffers (a read past them is an ASan report). Checked: a parsed policy
 * has at most POST_POLICY_CONDS_MAX conditions, each with a field (or a
 * range with min <= max); evaluation answers OK or AccessDenied only; the
 * size check agrees with the range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/post_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t pl = nl ? (size_t)(nl - data) : size;
	char *b64 = malloc(pl ? pl : 1);
	memcpy(b64, data, pl);
	struct post_policy p;
	const char *msg;
	enum s3_err e = post_policy_parse(b64, pl, &p, &msg);
	if (e == S3E_OK) {
		if (p.n_conds > POST_POLICY_CONDS_MAX)
			abort();
		for (size_t i = 0; i < p.n_conds; i++) {
			const struct post_cond *c = &p.conds[i];
			if (c->op == POST_RANGE ? c->min > c->max : !c->field || !c->value)
				abort();
		}
		enum { MAXF = 16 };
		struct post_field f[MAXF];
		char *copies[MAXF];
		size_t n = 0;
		const uint8_t *q = nl ? nl + 1 : data + size, *end = data + size;
		while (q < end && n < MAXF) {
			const uint8_t *e2 = memchr(q, '\n', (size_t)(end - q));
			size_t ll = (size_t)((e2 ? e2 : end) - q);
			const uint8_t *eq = memchr(q, '=', ll);
			if (eq) {
				size_t nlen = (size_t)(eq - q), vl = ll - nlen - 1;
				char *c = malloc(nlen + 1 + vl + 1);
				memcpy(c, q, nlen);
				c[nlen] = '\0';
				memcpy(c + nlen + 1, eq + 1, vl);
				c[nlen + 1 + vl] = '\0';
				copies[n] = c;
				f[n] = (struct post_field){ .name = c, .value = c + nlen + 1, .value_len = vl };
				n++;
			}
			q = e2 ? e2 + 1 : end;
		}
		char m[256];
		enum s3_err r = post_policy_check(&p, 1700000000000LL, "bucket", f, n, m, sizeof(m));
		if (r != S3E_OK && r != S3E_AccessDenied)
			abort();
		enum s3_err s = post_policy_check_size(&p, 1000);
		if (s != S3E_OK && !p.has_range)
			abort();
		for (size_t i = 0; i < n; i++)
			free(copies[i]);
	} else if (e != S3E_InvalidPolicyDocument && e != S3E_InternalError) {
		abort();
	}
	post_policy_free(&p);
	free(b64);
	return 0;
}
