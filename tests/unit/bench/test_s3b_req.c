/*
 * test_s3b_req.c — the bench's request heads: AWS's documented signatures,
 * every head cross-checked against common/sigv4 (parse the head we wrote
 * back into headers, sign it there independently, and compare the whole
 * Authorization value), key and date caching, endpoint URLs, and
 * path-style / virtual-host paths.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/s3bench/s3b_req.h"
#include "common/hash.h"
#include "common/sigv4.h"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T_20130524 1369353600 /* 2013-05-24T00:00:00Z, the date of AWS's examples */

static struct s3b_signer signer(void)
{
	struct s3b_signer s;
	ck_assert_int_eq(s3b_signer_init(&s, AK, SK, "us-east-1"), 0);
	s3b_signer_tick(&s, T_20130524);
	return s;
}

static const char *find_header(const char *head, const char *name, size_t *len)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\r\n%s: ", name);
	const char *p = strstr(head, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	*len = (size_t)(strstr(p, "\r\n") - p);
	return p;
}

/* Parse the head we wrote, sign it with common/sigv4 and compare. */
static void cross_check(const char *head, const char *secret)
{
	/* request line */
	const char *sp1 = strchr(head, ' ');
	ck_assert_ptr_nonnull(sp1);
	const char *sp2 = strchr(sp1 + 1, ' ');
	ck_assert_ptr_nonnull(sp2);
	ck_assert(strncmp(sp2, " HTTP/1.1\r\n", 11) == 0);
	char method[16];
	snprintf(method, sizeof(method), "%.*s", (int)(sp1 - head), head);
	const char *target = sp1 + 1;
	size_t tlen = (size_t)(sp2 - target);
	const char *q = memchr(target, '?', tlen);
	size_t path_len = q ? (size_t)(q - target) : tlen;

	/* headers */
	struct sigv4_header hs[16];
	size_t nh = 0;
	const char *line = strstr(head, "\r\n") + 2;
	const char *authz = NULL;
	size_t authz_len = 0;
	const char *ph = NULL;
	size_t ph_len = 0;
	while (strncmp(line, "\r\n", 2) != 0) {
		const char *eol = strstr(line, "\r\n");
		const char *colon = memchr(line, ':', (size_t)(eol - line));
		ck_assert_ptr_nonnull(colon);
		ck_assert_uint_lt(nh, 16);
		struct sigv4_header *h = &hs[nh++];
		h->name = line;
		h->name_len = (size_t)(colon - line);
		h->value = colon + 2;
		h->value_len = (size_t)(eol - colon - 2);
		if (h->name_len == 13 && strncmp(line, "Authorization", 13) == 0) {
			authz = h->value;
			authz_len = h->value_len;
		}
		if (h->name_len == 20 && strncmp(line, "x-amz-content-sha256", 20) == 0) {
			ph = h->value;
			ph_len = h->value_len;
		}
		line = eol + 2;
	}
	ck_assert_ptr_nonnull(authz);
	ck_assert_ptr_nonnull(ph);
	char payload_hash[80];
	snprintf(payload_hash, sizeof(payload_hash), "%.*s", (int)ph_len, ph);

	struct sigv4_auth a;
	ck_assert_int_eq(sigv4_parse_header(authz, authz_len, &a), 0);
	size_t dl;
	const char *d = find_header(head, "x-amz-date", &dl);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(dl, 16);
	memcpy(a.amz_date, d, 16);
	a.amz_date[16] = '\0';

	struct sigv4_request req = { method, target, path_len, q ? q + 1 : NULL,
				     q ? tlen - path_len - 1 : 0, hs, nh, payload_hash };
	uint8_t key[32];
	sigv4_signing_key(secret, a.date, a.region, a.service, key);
	char sig[65];
	ck_assert_int_eq(sigv4_sign(key, &req, &a, sig), 0);
	memcpy(a.signature, sig, sizeof(sig));
	char want[1024];
	int n = sigv4_format_header(&a, want, sizeof(want));
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(authz_len, (size_t)n);
	ck_assert_msg(memcmp(authz, want, authz_len) == 0, "\n got: %.*s\nwant: %s", (int)authz_len,
		      authz, want);
}

static const char *signature_of(const char *head)
{
	const char *p = strstr(head, "Signature=");
	ck_assert_ptr_nonnull(p);
	return p + 10;
}

START_TEST(test_aws_examples)
{
	/* AWS's "GET Bucket" examples: signed headers host;x-amz-content-sha256;
	 * x-amz-date, exactly the set the bench signs. */
	struct s3b_signer s = signer();
	ck_assert_str_eq(s.amz_date, "20130524T000000Z");
	char head[S3B_HEAD_MAX];
	struct s3b_req r = { "GET", "examplebucket.s3.amazonaws.com", "/", 1, "max-keys=2&prefix=J",
			     19, SIGV4_EMPTY_SHA256, -1 };
	ck_assert_int_gt(s3b_req_format(&s, &r, head, sizeof(head)), 0);
	ck_assert(strncmp(signature_of(head),
			  "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7", 64) == 0);
	ck_assert(strncmp(head, "GET /?max-keys=2&prefix=J HTTP/1.1\r\n", 36) == 0);
	ck_assert_ptr_null(strstr(head, "Content-Length"));
	cross_check(head, SK);

	r.query = "lifecycle=";
	r.query_len = 10;
	ck_assert_int_gt(s3b_req_format(&s, &r, head, sizeof(head)), 0);
	ck_assert(strncmp(signature_of(head),
			  "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543", 64) == 0);
	cross_check(head, SK);
}
END_TEST

START_TEST(test_cross_check)
{
	struct s3b_endpoint ep;
	ck_assert_int_eq(s3b_endpoint_parse("http://127.0.0.1:9000", &ep, NULL, 0), 0);
	static const char *prefixes[] = { "obj/", "", "a b+c/é/", "x%y?z&=#", "deep/er/path-" };
	uint8_t body_sha[32];
	char body_hex[65];
	hash_sha256("hello", 5, body_sha);
	hash_hex(body_sha, 32, body_hex);
	for (int vh = 0; vh < 2; vh++) {
		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
			struct s3b_target t;
			ck_assert_int_eq(s3b_target_init(&t, &ep, "bench-1", prefixes[i], vh, NULL, 0), 0);
			struct s3b_signer s = signer();
			s3b_signer_tick(&s, T_20130524 + 86400 * 400 + 3661 * (time_t)i);
			char path[S3B_PATH_MAX], head[S3B_HEAD_MAX];
			int pl = s3b_target_object_path(&t, i * 7919, path, sizeof(path));
			ck_assert_int_gt(pl, 0);
			static const char *methods[] = { "PUT", "GET", "DELETE" };
			for (int m = 0; m < 3; m++) {
				struct s3b_req r = { methods[m], t.host, path, (size_t)pl, NULL, 0,
						     m == 0 && i % 2 ? body_hex : SIGV4_UNSIGNED_PAYLOAD,
						     m == 0 ? 65536 : -1 };
				ck_assert_int_gt(s3b_req_format(&s, &r, head, sizeof(head)), 0);
				cross_check(head, SK);
				size_t cl;
				const char *c = find_header(head, "Content-Length", &cl);
				ck_assert(m == 0 ? c && strncmp(c, "65536", cl) == 0 : c == NULL);
			}
			/* bucket create, and a LIST with a continuation token */
			struct s3b_req b = { "PUT", t.host, t.bucket_path, strlen(t.bucket_path), NULL,
					     0, SIGV4_UNSIGNED_PAYLOAD, 0 };
			ck_assert_int_gt(s3b_req_format(&s, &b, head, sizeof(head)), 0);
			cross_check(head, SK);
			char tok[256], query[S3B_QUERY_MAX];
			ck_assert_int_gt(s3b_uri_encode("1/abc+==", 8, false, tok, sizeof(tok)), 0);
			int ql = snprintf(query, sizeof(query),
					  "continuation-token=%s&list-type=2&max-keys=1000&prefix=%s", tok,
					  t.list_prefix);
			struct s3b_req l = { "GET", t.host, t.bucket_path, strlen(t.bucket_path), query,
					     (size_t)ql, SIGV4_EMPTY_SHA256, -1 };
			ck_assert_int_gt(s3b_req_format(&s, &l, head, sizeof(head)), 0);
			cross_check(head, SK);
		}
	}
	/* too small an output buffer */
	struct s3b_signer s = signer();
	char small[100];
	struct s3b_req r = { "GET", "h", "/b/k", 4, NULL, 0, SIGV4_UNSIGNED_PAYLOAD, -1 };
	ck_assert_int_eq(s3b_req_format(&s, &r, small, sizeof(small)), -ENOSPC);
}
END_TEST

START_TEST(test_key_cache)
{
	struct s3b_signer s;
	ck_assert_int_eq(s3b_signer_init(&s, AK, SK, "us-east-1"), 0);
	ck_assert_int_eq(s3b_signer_init(&s, "", SK, "us-east-1"), -EINVAL);
	ck_assert_int_eq(s3b_signer_init(&s, AK, SK, "us-east-1"), 0);
	for (time_t t = T_20130524; t < T_20130524 + 86400; t += 97)
		s3b_signer_tick(&s, t);
	ck_assert_uint_eq(s.key_derivations, 1);
	ck_assert_str_eq(s.amz_date, "20130524T235850Z");
	s3b_signer_tick(&s, T_20130524 + 86400);
	ck_assert_uint_eq(s.key_derivations, 2);
	ck_assert_str_eq(s.date, "20130525");
	ck_assert_str_eq(s.amz_date, "20130525T000000Z");
	uint8_t key[32];
	sigv4_signing_key(SK, "20130525", "us-east-1", "s3", key);
	ck_assert_int_eq(memcmp(key, s.key, 32), 0);
}
END_TEST

START_TEST(test_endpoint)
{
	struct s3b_endpoint ep;
	char err[256];
	ck_assert_int_eq(s3b_endpoint_parse("http://127.0.0.1:9000", &ep, err, sizeof(err)), 0);
	ck_assert_str_eq(ep.host, "127.0.0.1");
	ck_assert_uint_eq(ep.port, 9000);
	ck_assert_str_eq(ep.host_header, "127.0.0.1:9000");
	ck_assert_str_eq(ep.base_path, "");
	ck_assert_int_eq(s3b_endpoint_parse("HTTP://s3.example.com/", &ep, err, sizeof(err)), 0);
	ck_assert_uint_eq(ep.port, 80);
	ck_assert_str_eq(ep.host_header, "s3.example.com");
	ck_assert_int_eq(s3b_endpoint_parse("http://[::1]:8080/base/", &ep, err, sizeof(err)), 0);
	ck_assert_str_eq(ep.host, "::1");
	ck_assert_str_eq(ep.host_header, "[::1]:8080");
	ck_assert_str_eq(ep.base_path, "/base");
	ck_assert_int_eq(s3b_endpoint_parse("https://s3.example.com", &ep, err, sizeof(err)), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(err, "https"));
	static const char *bad[] = { "ftp://x", "http://", "http://h:0", "http://h:99999",
				     "http://h:12x", "http://[::1", "127.0.0.1:9000", "http://h/a?b" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(s3b_endpoint_parse(bad[i], &ep, err, sizeof(err)) == -EINVAL, "%s", bad[i]);
}
END_TEST

START_TEST(test_target)
{
	struct s3b_endpoint ep;
	struct s3b_target t;
	char path[S3B_PATH_MAX], err[256];
	ck_assert_int_eq(s3b_endpoint_parse("http://127.0.0.1:9000", &ep, NULL, 0), 0);

	ck_assert_int_eq(s3b_target_init(&t, &ep, "bench", "obj/", false, err, sizeof(err)), 0);
	ck_assert_str_eq(t.host, "127.0.0.1:9000");
	ck_assert_str_eq(t.bucket_path, "/bench");
	ck_assert_int_eq(s3b_target_object_path(&t, 42, path, sizeof(path)), 19);
	ck_assert_str_eq(path, "/bench/obj/00000042");
	s3b_target_object_path(&t, 123456789012ull, path, sizeof(path));
	ck_assert_str_eq(path, "/bench/obj/123456789012");
	s3b_target_object_path(&t, 0, path, sizeof(path));
	ck_assert_str_eq(path, "/bench/obj/00000000");
	ck_assert_int_eq(s3b_target_object_path(&t, 1, path, 10), -ENOSPC);

	ck_assert_int_eq(s3b_target_init(&t, &ep, "bench", "obj/", true, err, sizeof(err)), 0);
	ck_assert_str_eq(t.host, "bench.127.0.0.1:9000");
	ck_assert_str_eq(t.bucket_path, "/");
	s3b_target_object_path(&t, 42, path, sizeof(path));
	ck_assert_str_eq(path, "/obj/00000042");

	ck_assert_int_eq(s3b_endpoint_parse("http://h/base/", &ep, NULL, 0), 0);
	ck_assert_int_eq(s3b_target_init(&t, &ep, "b.x-1", "a b+c/", false, err, sizeof(err)), 0);
	ck_assert_str_eq(t.bucket_path, "/base/b.x-1");
	ck_assert_str_eq(t.list_prefix, "a%20b%2Bc%2F");
	s3b_target_object_path(&t, 7, path, sizeof(path));
	ck_assert_str_eq(path, "/base/b.x-1/a%20b%2Bc/00000007");

	static const char *bad[] = { "ab", "Bench", "-abc", "abc-", "a_bc", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(s3b_target_init(&t, &ep, bad[i], "", false, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bucket name"));
}
END_TEST

START_TEST(test_encode)
{
	char out[64];
	ck_assert_int_eq(s3b_uri_encode("a/b c~", 6, true, out, sizeof(out)), 8);
	ck_assert_str_eq(out, "a/b%20c~");
	ck_assert_int_eq(s3b_uri_encode("a/b", 3, false, out, sizeof(out)), 5);
	ck_assert_str_eq(out, "a%2Fb");
	ck_assert_int_eq(s3b_uri_encode("\xff", 1, false, out, sizeof(out)), 3);
	ck_assert_str_eq(out, "%FF");
	ck_assert_int_eq(s3b_uri_encode("abc", 3, false, out, 3), -ENOSPC);
	ck_assert_int_eq(s3b_uri_encode("%", 1, false, out, 3), -ENOSPC);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3b_req");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_aws_examples);
	tcase_add_test(tc, test_cross_check);
	tcase_add_test(tc, test_key_cache);
	tcase_add_test(tc, test_endpoint);
	tcase_add_test(tc, test_target);
	tcase_add_test(tc, test_encode);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
