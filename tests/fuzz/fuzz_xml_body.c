/*
 * fuzz_xml_body.c — libFuzzer target for the parsers of S3 request bodies
 * and headers that take hostile input: gateway/xml_parse (Delete,
 * Tagging, CompleteMultipartUpload, PublicAccessBlockConfiguration,
 * VersioningConfiguration), the x-amz-tagging header
 * (s3_tags_parse_header, s3_tags_check) and conditional-header dates,
 * ETag lists and If-Range values (s3_cond).
 *
 * Input: byte 0 picks the parser; the rest is the body or header value,
 * copied into an exactly-sized malloc'd buffer (no NUL terminator), so a
 * read past the end is an ASan report. Checked: every string a parser
 * returns lies inside its arena and is NUL-terminated, counts stay within
 * their limits, and a date that parses is a valid time.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_cond.h"
#include "gateway/s3_tagging.h"
#include "gateway/xml_parse.h"

static void inside(const char *base, size_t cap, const char *p)
{
	if (p < base || p >= base + cap || !memchr(p, '\0', (size_t)(base + cap - p)))
		abort();
}

static void delete_body(const char *b, size_t n)
{
	enum { MAXK = 16 };
	const char *keys[MAXK], *vids[MAXK];
	size_t lens[MAXK];
	size_t cap = n + 1;
	char *arena = malloc(cap);
	struct xmlp_delete d = { .keys = keys, .key_lens = lens, .max_keys = MAXK, .arena = arena,
				 .arena_cap = cap, .version_ids = n % 2 ? vids : NULL };
	if (xmlp_delete(b, n, 4096, &d) == 0) {
		if (d.n_keys == 0 || d.n_keys > MAXK)
			abort();
		for (size_t i = 0; i < d.n_keys; i++) {
			inside(arena, cap, keys[i]);
			if (strlen(keys[i]) != lens[i] || lens[i] == 0)
				abort();
			if (d.version_ids) {
				inside(arena, cap, vids[i]);
				if (strlen(vids[i]) > XMLP_VERSION_ID_MAX)
					abort();
			}
		}
	}
	free(arena);
}

static void tagging_body(const char *b, size_t n)
{
	const char *keys[S3_TAGS_BUCKET_MAX], *vals[S3_TAGS_BUCKET_MAX];
	size_t cap = n + 1;
	char *arena = malloc(cap);
	struct xmlp_tagging t = { .keys = keys, .values = vals, .max_tags = S3_TAGS_BUCKET_MAX,
				  .arena = arena, .arena_cap = cap };
	if (xmlp_tagging(b, n, 4096, &t) == 0) {
		if (t.n_tags > S3_TAGS_BUCKET_MAX)
			abort();
		struct s3_tagset ts = { .n = t.n_tags };
		for (size_t i = 0; i < t.n_tags; i++) {
			inside(arena, cap, keys[i]);
			inside(arena, cap, vals[i]);
			ts.keys[i] = keys[i];
			ts.values[i] = vals[i];
		}
		const char *msg;
		if (s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg) != S3E_OK && !msg)
			abort();
	}
	free(arena);
}

static void mpu_body(const char *b, size_t n)
{
	struct xmlp_part parts[8];
	size_t np = 0;
	if (xmlp_complete_mpu(b, n, 4096, parts, 8, &np) == 0) {
		if (np == 0 || np > 8)
			abort();
		for (size_t i = 0; i < np; i++)
			if (parts[i].part_number < 1 || parts[i].part_number > 10000 ||
			    strlen(parts[i].etag) > XMLP_ETAG_MAX || parts[i].ck_algo > 5 ||
			    strlen(parts[i].ck) > XMLP_CK_MAX || (!parts[i].ck_algo && parts[i].ck[0]))
				abort();
	}
}

static void pab_body(const char *b, size_t n)
{
	int v[XMLP_PAB_N];
	if (xmlp_public_access_block(b, n, 1024, v) == 0)
		for (int i = 0; i < XMLP_PAB_N; i++)
			if (v[i] < -1 || v[i] > 1)
				abort();
}

static void versioning_body(const char *b, size_t n)
{
	char st[16], mfa[16];
	if (xmlp_versioning(b, n, 1024, st, mfa, sizeof(st)) == 0 &&
	    (strlen(st) >= sizeof(st) || strlen(mfa) >= sizeof(mfa)))
		abort();
}

static void tagging_header(const char *b, size_t n)
{
	size_t cap = S3_TAGS_HEADER_ARENA(n);
	char *arena = malloc(cap);
	struct s3_tagset ts;
	if (s3_tags_parse_header(b, n, &ts, arena, cap) == 0) {
		if (ts.n > S3_TAGS_BUCKET_MAX)
			abort();
		for (size_t i = 0; i < ts.n; i++) {
			inside(arena, cap, ts.keys[i]);
			inside(arena, cap, ts.values[i]);
		}
		const char *msg;
		(void)s3_tags_check(&ts, S3_TAGS_BUCKET_MAX, &msg);
	}
	free(arena);
}

static void cond_header(const char *b, size_t n)
{
	int64_t t;
	if (s3_cond_parse_date(b, n, &t) == 0 && (t < 0 || t > 253402300800LL))
		abort(); /* 1970 .. 9999-12-31 23:59:60 */
	(void)s3_cond_etag_match(b, n, "0123456789abcdef0123456789abcdef");
	(void)s3_cond_etag_match(b, n, NULL);
	struct s3_cond_in in = { .if_match = b, .if_match_len = n, .if_none_match = b,
				 .if_none_match_len = n, .if_modified_since = b,
				 .if_modified_since_len = n };
	(void)s3_cond_get(&in, "abc-2", 1700000000000ULL);
	(void)s3_cond_put(&in, "abc");
	(void)s3_cond_if_range(b, n, "abc-2", 1700000000000ULL);
	(void)s3_cond_if_range(b, n, NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t n = size - 1;
	char *b = malloc(n ? n : 1);
	memcpy(b, data + 1, n);
	switch (data[0] % 7) {
	case 0: delete_body(b, n); break;
	case 1: tagging_body(b, n); break;
	case 2: mpu_body(b, n); break;
	case 3: tagging_header(b, n); break;
	case 5: pab_body(b, n); break;
	case 6: versioning_body(b, n); break;
	default: cond_header(b, n); break;
	}
	free(b);
	return 0;
}
