/*
 * test_s3_server.c — the S3 front end over real sockets: requests signed
 * here with common/sigv4 (header auth, signed and mismatched payload
 * digests, aws-chunked with chunk signatures, Content-MD5), refusals as
 * S3 XML with the RequestId equal to x-amz-request-id, routing errors
 * before auth, unimplemented ops, health; then real clients: boto3 and
 * aws-cli (when installed) list, create, head, put (checked byte for byte
 * by MD5 on the server side), get, a SigV4 presigned GET with urllib (and
 * a tampered one), the library's default presigned URL (SigV2 with
 * Debian's boto3) and a tampered one, and a wrong secret.
 * Additional checksums (x-amz-checksum-* headers, trailers of an unsigned
 * aws-chunked body): the verdict and what s3_call_checksum hands the
 * handler; a body abandoned mid-way does not poison the next request on
 * the same pooled call.
 *
 * make-test: alone (tests/run-tests.py): the boto3 case runs a Python client against per-request timeouts.
 */
#include <signal.h>
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/workpool.h"
#include "common/loop.h"
#include "gateway/chunked.h"
#include "gateway/s3_server.h"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define REGION "us-east-1"

static struct {
	struct loop_thread lt;
	struct s3_server *srv;
	int port;
	bool closed;
	/* last PutObject, loop thread */
	char put_md5[33];
	uint64_t put_len;
	enum s3_err put_verdict;
	char put_ck[S3_CK_B64_MAX];   /* s3_call_checksum, base64 */
	int puts;
} S;

/* ------------------------------------------------------------ server side */

static void creds(void *ctx, struct s3_cred_lookup *l)
{
	(void)ctx;
	if (strcmp(l->access_key, AK) == 0)
		l->done(l, 0, &(struct s3_cred){ .secret = SK, .user = "tester" });
	else
		l->done(l, -ENOENT, NULL);
}

static void op_list_buckets(struct s3_call *c)
{
	struct xml_w *w = s3_call_xml(c);
	xml_decl(w);
	xml_open_ns(w, "ListAllMyBucketsResult", "http://s3.amazonaws.com/doc/2006-03-01/");
	xml_open(w, "Owner");
	xml_elem(w, "ID", "iolake");
	xml_elem(w, "DisplayName", "iolake");
	xml_close(w);
	xml_open(w, "Buckets");
	xml_open(w, "Bucket");
	xml_elem(w, "Name", "demo");
	xml_elem(w, "CreationDate", "2026-01-01T00:00:00.000Z");
	xml_close(w);
	xml_close(w);
	xml_close(w);
	s3_call_send_xml(c, 200);
}

static void op_ok_empty(struct s3_call *c)
{
	http_respond(s3_call_stream(c), 200, NULL, 0, NULL, NULL);
}

static void op_get_object(struct s3_call *c)
{
	http_add_header(s3_call_stream(c), "Content-Type", "text/plain");
	http_respond(s3_call_stream(c), 200, "hello from iolake", 17, NULL, NULL);
}

struct put_state {
	struct hash_stream *md5;
	uint64_t len;
};

static void put_data(struct s3_call *c, const char *d, size_t n)
{
	struct put_state *ps = s3_call_user(c);
	hash_stream_update(ps->md5, d, n);
	ps->len += n;
}

static void put_end(struct s3_call *c, enum s3_err v)
{
	struct put_state *ps = s3_call_user(c);
	uint8_t d[16];
	hash_stream_final(ps->md5, d);
	hash_hex(d, 16, S.put_md5);
	S.put_len = ps->len;
	S.put_verdict = v;
	s3_ck_to_base64(s3_call_checksum(c), S.put_ck);
	S.puts++;
	if (v) {
		s3_call_error(c, v, NULL);
		return;
	}
	char etag[40];
	snprintf(etag, sizeof(etag), "\"%s\"", S.put_md5);
	http_add_header(s3_call_stream(c), "ETag", etag);
	http_respond(s3_call_stream(c), 200, NULL, 0, NULL, NULL);
}

static void put_finish(struct s3_call *c, int err)
{
	(void)err;
	struct put_state *ps = s3_call_user(c);
	hash_stream_free(ps->md5);
	free(ps);
}

static void op_put_object(struct s3_call *c)
{
	struct put_state *ps = calloc(1, sizeof(*ps));
	ps->md5 = hash_stream_new(HASH_MD5);
	s3_call_set_user(c, ps);
	s3_call_on_finish(c, put_finish);
	enum s3_err e = s3_call_read_body(c, put_data, put_end);
	if (e)
		s3_call_error(c, e, NULL);
}

static struct workpool *T_pool;   /* NULL: digests on the loop */

static void do_start(void *arg)
{
	(void)arg;
	static const char *const domains[] = { "localhost" };
	struct s3_server_cfg cfg = {
		.http = { .port = 0, .max_conns = 16 },
		.domains = domains, .n_domains = 1, .region = REGION,
		.creds = { creds, NULL },
	};
	cfg.ops[S3_OP_ListBuckets] = op_list_buckets;
	cfg.ops[S3_OP_CreateBucket] = op_ok_empty;
	cfg.ops[S3_OP_HeadBucket] = op_ok_empty;
	cfg.ops[S3_OP_GetObject] = op_get_object;
	cfg.ops[S3_OP_PutObject] = op_put_object;
	cfg.hash_pool = T_pool;   /* the "hash-pool" case: every body's digests */
	cfg.hash_min_bytes = 1;
	ck_assert_int_eq(s3_server_start(&S.lt.loop, &cfg, &S.srv), 0);
	S.port = s3_server_port(S.srv);
}

static void on_closed(void *arg)
{
	(void)arg;
	S.closed = true;
}

static void do_close(void *arg)
{
	(void)arg;
	s3_server_close(S.srv, on_closed, NULL);
}

static void setup(void)
{
	memset(&S, 0, sizeof(S));
	ck_assert_int_eq(loop_thread_start(&S.lt, "s3-test"), 0);
	ck_assert_int_eq(loop_thread_call(&S.lt, do_start, NULL), 0);
}

static void read_closed(void *arg)
{
	*(bool *)arg = S.closed;
}

static void teardown(void)
{
	ck_assert_int_eq(loop_thread_call(&S.lt, do_close, NULL), 0);
	bool closed = false;
	for (int i = 0; i < 300 && !closed; i++) {
		loop_thread_call(&S.lt, read_closed, &closed);
		if (!closed)
			usleep(10000);
	}
	ck_assert(closed);
	loop_thread_stop(&S.lt);
}

/* The same tests with a one-thread hash pool: digests of every body on
 * it (stage buffers, the verdict after the last job, an abandoned body's
 * call back in the pool only after its jobs). */
static void setup_pool(void)
{
	ck_assert_int_eq(workpool_new(1, 0, &T_pool), 0);
	setup();
}

static void teardown_pool(void)
{
	teardown();
	workpool_free(T_pool);
	T_pool = NULL;
}

/* ------------------------------------------------------------ client side */

struct resp {
	int status;
	char head[8192];
	char body[65536];
	size_t body_len;
};

/* Send req (whole), read one response (Content-Length framed). */
static void roundtrip(const char *req, size_t len, struct resp *r)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)S.port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (size_t off = 0; off < len;) {
		ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);
		ck_assert_int_gt(w, 0);
		off += (size_t)w;
	}
	char buf[80000];
	size_t got = 0;
	char *eoh = NULL;
	long cl = -1;
	for (;;) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
		buf[got] = '\0';
		if (!eoh && (eoh = strstr(buf, "\r\n\r\n"))) {
			char *c = strcasestr(buf, "\r\nContent-Length: ");
			ck_assert_ptr_nonnull(c);
			cl = atol(c + 18);
		}
		if (eoh && got >= (size_t)(eoh + 4 - buf) + (size_t)cl)
			break;
	}
	close(fd);
	size_t hl = (size_t)(eoh - buf);
	memcpy(r->head, buf, hl);
	r->head[hl] = '\0';
	ck_assert_int_eq(sscanf(buf, "HTTP/1.1 %d", &r->status), 1);
	r->body_len = (size_t)cl;
	memcpy(r->body, eoh + 4, r->body_len);
	r->body[r->body_len] = '\0';
}

/* Build a signed request. payload_hash is what x-amz-content-sha256
 * says; extra is more header lines ("Name: v\r\n"), signed if listed in
 * extra_signed ("content-md5;" style prefix of the signed list). */
static size_t build(char *out, size_t cap, const char *method, const char *target,
		    const char *payload_hash, const char *secret, const char *extra_name,
		    const char *extra_value, const char *body, size_t body_len, char seed_out[65])
{
	char amz_date[17];
	sigv4_format_amz_date(time(NULL), amz_date);
	char host[32];
	snprintf(host, sizeof(host), "127.0.0.1:%d", S.port);
	char cl[24];
	snprintf(cl, sizeof(cl), "%zu", body_len);
	struct sigv4_header hs[5] = {
		{ "host", 4, host, strlen(host) },
		{ "x-amz-content-sha256", 20, payload_hash, strlen(payload_hash) },
		{ "x-amz-date", 10, amz_date, 16 },
	};
	size_t nh = 3;
	if (extra_name)
		hs[nh++] = (struct sigv4_header){ extra_name, strlen(extra_name), extra_value,
						  strlen(extra_value) };
	struct sigv4_auth a;
	memset(&a, 0, sizeof(a));
	strcpy(a.access_key, AK);
	memcpy(a.date, amz_date, 8);
	strcpy(a.region, REGION);
	strcpy(a.service, "s3");
	strcpy(a.amz_date, amz_date);
	snprintf(a.signed_headers, sizeof(a.signed_headers), "%s%shost;x-amz-content-sha256;x-amz-date",
		 extra_name ? extra_name : "", extra_name ? ";" : "");
	const char *q = strchr(target, '?');
	struct sigv4_request sr = { method, target, q ? (size_t)(q - target) : strlen(target),
				    q ? q + 1 : NULL, q ? strlen(q + 1) : 0, hs, nh, payload_hash };
	uint8_t key[32];
	sigv4_signing_key(secret, a.date, a.region, a.service, key);
	ck_assert_int_eq(sigv4_sign(key, &sr, &a, a.signature), 0);
	if (seed_out)
		strcpy(seed_out, a.signature);
	char authz[1024];
	sigv4_format_header(&a, authz, sizeof(authz));
	int n = snprintf(out, cap,
			 "%s %s HTTP/1.1\r\nHost: %s\r\nx-amz-content-sha256: %s\r\nx-amz-date: %s\r\n"
			 "Authorization: %s\r\nContent-Length: %s\r\n%s%s%s\r\n",
			 method, target, host, payload_hash, amz_date, authz, cl,
			 extra_name ? extra_name : "", extra_name ? ": " : "",
			 extra_name ? extra_value : "");
	if (extra_name)
		n += snprintf(out + n, cap - (size_t)n, "\r\n");
	ck_assert_uint_lt((size_t)n + body_len, cap);
	memcpy(out + n, body, body_len);
	return (size_t)n + body_len;
}

static const char *xml_code(const struct resp *r, char *out)
{
	const char *a = strstr(r->body, "<Code>"), *b = strstr(r->body, "</Code>");
	if (!a || !b)
		return "";
	memcpy(out, a + 6, (size_t)(b - a - 6));
	out[b - a - 6] = '\0';
	return out;
}

START_TEST(test_signed_requests)
{
	static char req[200000];
	struct resp r;
	char code[64];
	size_t n = build(req, sizeof(req), "GET", "/", SIGV4_EMPTY_SHA256, SK, NULL, NULL, "", 0, NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "<Name>demo</Name>"));
	ck_assert_ptr_nonnull(strcasestr(r.head, "Content-Type: application/xml"));

	/* Wrong secret: 403 SignatureDoesNotMatch; RequestId = the header. */
	n = build(req, sizeof(req), "GET", "/", SIGV4_EMPTY_SHA256, "wrong", NULL, NULL, "", 0, NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 403);
	ck_assert_str_eq(xml_code(&r, code), "SignatureDoesNotMatch");
	char *rid = strcasestr(r.head, "x-amz-request-id: ");
	ck_assert_ptr_nonnull(rid);
	char want[80];
	snprintf(want, sizeof(want), "<RequestId>%.16s</RequestId>", rid + 18);
	ck_assert_ptr_nonnull(strstr(r.body, want));
	ck_assert_ptr_nonnull(strstr(r.body, "<Resource>/</Resource>"));

	/* Anonymous; routing errors before auth; unimplemented ops; health. */
	const char *anon = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	roundtrip(anon, strlen(anon), &r);
	ck_assert_int_eq(r.status, 403);
	ck_assert_str_eq(xml_code(&r, code), "AccessDenied");
	const char *badb = "GET /Bad_Bucket HTTP/1.1\r\nHost: x\r\n\r\n";
	roundtrip(badb, strlen(badb), &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(xml_code(&r, code), "InvalidBucketName");
	n = build(req, sizeof(req), "GET", "/b1b?cors", SIGV4_EMPTY_SHA256, SK, NULL, NULL, "", 0, NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 501);
	n = build(req, sizeof(req), "DELETE", "/b1b/k", SIGV4_EMPTY_SHA256, SK, NULL, NULL, "", 0, NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 501);
	ck_assert_str_eq(xml_code(&r, code), "NotImplemented");
	const char *health = "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n";
	roundtrip(health, strlen(health), &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "ok\n");
	/* An upload without Content-Length. */
	const char *nocl = "PUT /b1b/k HTTP/1.1\r\nHost: x\r\n\r\n";
	roundtrip(nocl, strlen(nocl), &r);
	ck_assert_int_eq(r.status, 411);
}
END_TEST

static void snap_put(void *arg)
{
	memcpy(arg, &S, sizeof(S));
}

START_TEST(test_put_payload_checks)
{
	static char req[300000], body[100000];
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)(i * 31);
	uint8_t d[32];
	char sha[65], md5[33], code[64];
	hash_sha256(body, sizeof(body), d);
	hash_hex(d, 32, sha);
	hash_md5(body, sizeof(body), d);
	hash_hex(d, 16, md5);
	struct resp r;

	size_t n = build(req, sizeof(req), "PUT", "/b1b/obj", sha, SK, NULL, NULL, body, sizeof(body), NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 200);
	char etag[64];
	snprintf(etag, sizeof(etag), "ETag: \"%s\"", md5);
	ck_assert_ptr_nonnull(strcasestr(r.head, etag));

	/* The signed digest is of other bytes: the body is refused. */
	body[5] ^= 1;
	n = build(req, sizeof(req), "PUT", "/b1b/obj", sha, SK, NULL, NULL, body, sizeof(body), NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(xml_code(&r, code), "XAmzContentSHA256Mismatch");
	body[5] ^= 1;

	/* UNSIGNED-PAYLOAD with a wrong Content-MD5: BadDigest. */
	n = build(req, sizeof(req), "PUT", "/b1b/obj", "UNSIGNED-PAYLOAD", SK, "content-md5",
		  "1B2M2Y8AsgTpgAmY7PhCfg==", body, sizeof(body), NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(xml_code(&r, code), "BadDigest");
	/* ... and with a malformed one: InvalidDigest. */
	n = build(req, sizeof(req), "PUT", "/b1b/obj", "UNSIGNED-PAYLOAD", SK, "content-md5", "nope",
		  body, sizeof(body), NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(xml_code(&r, code), "InvalidDigest");

	struct { char pad[sizeof(S)]; } snapbuf;
	loop_thread_call(&S.lt, snap_put, &snapbuf);
	ck_assert_int_ge(((typeof(S) *)&snapbuf)->puts, 3);
}
END_TEST

/* aws-chunked with chunk signatures, as SDKs send STREAMING uploads. */
static size_t build_streaming(char *out, size_t cap, const char *data, size_t len, size_t chunk,
			      int tamper_chunk)
{
	/* Sign the head first: the seed is its signature. */
	char amz_date[17];
	sigv4_format_amz_date(time(NULL), amz_date);
	char host[32], dl[24];
	snprintf(host, sizeof(host), "127.0.0.1:%d", S.port);
	snprintf(dl, sizeof(dl), "%zu", len);
	const char *mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
	/* Framed body into a scratch area first (its size is the Content-Length). */
	static char framed[400000];
	size_t fl = 0;
	struct sigv4_auth a;
	memset(&a, 0, sizeof(a));
	strcpy(a.access_key, AK);
	memcpy(a.date, amz_date, 8);
	strcpy(a.region, REGION);
	strcpy(a.service, "s3");
	strcpy(a.amz_date, amz_date);
	strcpy(a.signed_headers, "content-encoding;host;x-amz-content-sha256;x-amz-date;"
				 "x-amz-decoded-content-length");
	/* Content-Length is not signed here, so the seed can be computed
	 * before the framing. */
	struct sigv4_header hs[] = {
		{ "content-encoding", 16, "aws-chunked", 11 },
		{ "host", 4, host, strlen(host) },
		{ "x-amz-content-sha256", 20, mode, strlen(mode) },
		{ "x-amz-date", 10, amz_date, 16 },
		{ "x-amz-decoded-content-length", 28, dl, strlen(dl) },
	};
	struct sigv4_request sr = { "PUT", "/b1b/stream", 11, NULL, 0, hs, 5, mode };
	uint8_t key[32];
	sigv4_signing_key(SK, a.date, a.region, a.service, key);
	ck_assert_int_eq(sigv4_sign(key, &sr, &a, a.signature), 0);
	char prev[65];
	strcpy(prev, a.signature);
	int idx = 0;
	for (size_t off = 0;; off += chunk, idx++) {
		size_t n = off >= len ? 0 : (len - off < chunk ? len - off : chunk);
		uint8_t h[32];
		char sig[65];
		hash_sha256(data + off, n, h);
		sigv4_chunk_signature(key, &a, prev, h, sig);
		strcpy(prev, sig);
		if (idx == tamper_chunk)
			sig[0] = sig[0] == '0' ? '1' : '0';
		fl += (size_t)sprintf(framed + fl, "%zx;chunk-signature=%s\r\n", n, sig);
		memcpy(framed + fl, data + off, n);
		fl += n;
		fl += (size_t)sprintf(framed + fl, "\r\n");
		if (n == 0)
			break;
	}
	char authz[1024];
	sigv4_format_header(&a, authz, sizeof(authz));
	int hn = snprintf(out, cap,
			  "PUT /b1b/stream HTTP/1.1\r\nHost: %s\r\nContent-Encoding: aws-chunked\r\n"
			  "x-amz-content-sha256: %s\r\nx-amz-date: %s\r\nx-amz-decoded-content-length: %s\r\n"
			  "Authorization: %s\r\nContent-Length: %zu\r\n\r\n",
			  host, mode, amz_date, dl, authz, fl);
	ck_assert_uint_lt((size_t)hn + fl, cap);
	memcpy(out + hn, framed, fl);
	return (size_t)hn + fl;
}

START_TEST(test_streaming_upload)
{
	static char req[500000], data[200000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 13 + 1);
	uint8_t d[16];
	char md5[33], code[64];
	hash_md5(data, sizeof(data), d);
	hash_hex(d, 16, md5);
	struct resp r;
	size_t n = build_streaming(req, sizeof(req), data, sizeof(data), 65536, -1);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 200);
	char etag[64];
	snprintf(etag, sizeof(etag), "ETag: \"%s\"", md5);
	ck_assert_ptr_nonnull(strcasestr(r.head, etag));
	/* A bad signature on the third chunk: the upload is refused. */
	n = build_streaming(req, sizeof(req), data, sizeof(data), 65536, 2);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 403);
	ck_assert_str_eq(xml_code(&r, code), "SignatureDoesNotMatch");
}
END_TEST

static void snap_put(void *arg);

/* Additional checksums: a header's value matched, a trailer's value
 * matched, the algorithm alone computed; mismatches refused. */
START_TEST(test_checksums)
{
	static char req[300000];
	struct resp r;
	char code[64];
	struct { char pad[sizeof(S)]; } snapbuf;
	typeof(S) *snap = (typeof(S) *)&snapbuf;
	const char *hw = "hello world";
	size_t n = build(req, sizeof(req), "PUT", "/b1b/ck", "UNSIGNED-PAYLOAD", SK,
			 "x-amz-checksum-crc32c", "yZRlqg==", hw, 11, NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 200);
	loop_thread_call(&S.lt, snap_put, &snapbuf);
	ck_assert_str_eq(snap->put_ck, "yZRlqg==");
	n = build(req, sizeof(req), "PUT", "/b1b/ck", "UNSIGNED-PAYLOAD", SK,
		  "x-amz-checksum-crc32c", "DUoRhQ==", hw, 11, NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(xml_code(&r, code), "BadDigest");
	ck_assert_ptr_nonnull(strstr(r.body, "The CRC32C you specified did not match"));
	loop_thread_call(&S.lt, snap_put, &snapbuf);
	ck_assert_str_eq(snap->put_ck, ""); /* nothing to store after a refusal */
	/* By algorithm only: computed. */
	n = build(req, sizeof(req), "PUT", "/b1b/ck", "UNSIGNED-PAYLOAD", SK,
		  "x-amz-sdk-checksum-algorithm", "SHA1", hw, 11, NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 200);
	loop_thread_call(&S.lt, snap_put, &snapbuf);
	ck_assert_str_eq(snap->put_ck, "Kq5sNclPz7QV2+lfQIuc6R7oRu0=");
	/* A malformed value is refused before the body. */
	n = build(req, sizeof(req), "PUT", "/b1b/ck", "UNSIGNED-PAYLOAD", SK,
		  "x-amz-checksum-sha256", "DUoRhQ==", hw, 11, NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(xml_code(&r, code), "InvalidRequest");

	/* STREAMING-UNSIGNED-PAYLOAD-TRAILER with a trailing crc32. */
	for (int bad = 0; bad < 2; bad++) {
		const char *mode = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
		char framed[256];
		int fl = snprintf(framed, sizeof(framed), "6\r\nhello \r\n5\r\nworld\r\n0\r\n"
			"x-amz-checksum-crc32:%s\r\n\r\n", bad ? "AAAAAA==" : "DUoRhQ==");
		char amz_date[17], host[32];
		sigv4_format_amz_date(time(NULL), amz_date);
		snprintf(host, sizeof(host), "127.0.0.1:%d", S.port);
		struct sigv4_header hs[] = {
			{ "content-encoding", 16, "aws-chunked", 11 },
			{ "host", 4, host, strlen(host) },
			{ "x-amz-content-sha256", 20, mode, strlen(mode) },
			{ "x-amz-date", 10, amz_date, 16 },
			{ "x-amz-decoded-content-length", 28, "11", 2 },
			{ "x-amz-trailer", 13, "x-amz-checksum-crc32", 20 },
		};
		struct sigv4_auth a;
		memset(&a, 0, sizeof(a));
		strcpy(a.access_key, AK);
		memcpy(a.date, amz_date, 8);
		strcpy(a.region, REGION);
		strcpy(a.service, "s3");
		strcpy(a.amz_date, amz_date);
		strcpy(a.signed_headers, "content-encoding;host;x-amz-content-sha256;x-amz-date;"
					 "x-amz-decoded-content-length;x-amz-trailer");
		struct sigv4_request sr = { "PUT", "/b1b/tr", 7, NULL, 0, hs, 6, mode };
		uint8_t key[32];
		sigv4_signing_key(SK, a.date, a.region, a.service, key);
		ck_assert_int_eq(sigv4_sign(key, &sr, &a, a.signature), 0);
		char authz[1024];
		sigv4_format_header(&a, authz, sizeof(authz));
		n = (size_t)snprintf(req, sizeof(req),
			"PUT /b1b/tr HTTP/1.1\r\nHost: %s\r\nContent-Encoding: aws-chunked\r\n"
			"x-amz-content-sha256: %s\r\nx-amz-date: %s\r\n"
			"x-amz-decoded-content-length: 11\r\nx-amz-trailer: x-amz-checksum-crc32\r\n"
			"Authorization: %s\r\nContent-Length: %d\r\n\r\n%s",
			host, mode, amz_date, authz, fl, framed);
		roundtrip(req, n, &r);
		loop_thread_call(&S.lt, snap_put, &snapbuf);
		if (bad) {
			ck_assert_int_eq(r.status, 400);
			ck_assert_str_eq(xml_code(&r, code), "BadDigest");
		} else {
			ck_assert_int_eq(r.status, 200);
			ck_assert_str_eq(snap->put_ck, "DUoRhQ==");
			ck_assert_uint_eq(snap->put_len, 11);
		}
	}
}
END_TEST

/* A client that leaves in the middle of a signed body: the pooled call
 * it had goes back with its SHA-256 stream half fed; the next request
 * that gets it must hash from a clean state. */
START_TEST(test_abandoned_body)
{
	static char req[300000], body[100000];
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)(i * 7);
	uint8_t d[32];
	char sha[65];
	hash_sha256(body, sizeof(body), d);
	hash_hex(d, 32, sha);
	struct resp r;
	size_t n = build(req, sizeof(req), "PUT", "/b1b/half", sha, SK, NULL, NULL, body,
			 sizeof(body), NULL);
	for (int i = 0; i < 3; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)S.port) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		ck_assert_int_eq(send(fd, req, n - 50000, MSG_NOSIGNAL), (ssize_t)(n - 50000));
		usleep(50000); /* the server reads and hashes what came */
		close(fd);
		usleep(50000); /* ... and sees the close */
	}
	n = build(req, sizeof(req), "PUT", "/b1b/half", sha, SK, NULL, NULL, body, sizeof(body), NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 200);
}
END_TEST

/* The hash-pool case: a 3 MiB body while the pool's only worker is held
 * by another job for 300 ms. Its stages fill every slot and the queue,
 * the body is paused, and resumes when the jobs run; the digests (signed
 * SHA-256, Content-MD5) are still right, and a wrong Content-MD5 still
 * fails. */
struct hold {
	struct wp_job job;
	atomic_bool go;
};

static void hold_run(struct wp_job *j)
{
	struct hold *h = (struct hold *)j;
	while (!atomic_load(&h->go))
		usleep(1000);
}

static void hold_done(struct wp_job *j, int status)
{
	(void)j, (void)status;
}

static void *release_later(void *arg)
{
	usleep(300000);
	atomic_store(&((struct hold *)arg)->go, true);
	return NULL;
}

START_TEST(test_hash_backpressure)
{
	static char req[(3 << 20) + 8192], body[3 << 20];
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)(i * 13 + (i >> 12));
	uint8_t d[32];
	char sha[65], md5[33], b64[32], etag[64], code[64];
	hash_sha256(body, sizeof(body), d);
	hash_hex(d, 32, sha);
	hash_md5(body, sizeof(body), d);
	hash_hex(d, 16, md5);
	EVP_EncodeBlock((unsigned char *)b64, d, 16);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool_port *pt = workpool_port_new(T_pool, &loop);
	struct hold h = { .job = { .run = hold_run, .done = hold_done } };
	workpool_submit(pt, NULL, &h.job);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, release_later, &h), 0);
	struct resp r;
	size_t n = build(req, sizeof(req), "PUT", "/b1b/big", sha, SK, "content-md5", b64, body,
			 sizeof(body), NULL);
	roundtrip(req, n, &r);
	pthread_join(t, NULL);
	ck_assert_int_eq(r.status, 200);
	snprintf(etag, sizeof(etag), "ETag: \"%s\"", md5);
	ck_assert_ptr_nonnull(strcasestr(r.head, etag));
	while (workpool_port_jobs(pt))
		uv_run(&loop, UV_RUN_ONCE);
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);

	body[sizeof(body) - 1] ^= 1;
	n = build(req, sizeof(req), "PUT", "/b1b/big", "UNSIGNED-PAYLOAD", SK, "content-md5", b64,
		  body, sizeof(body), NULL);
	roundtrip(req, n, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(xml_code(&r, code), "BadDigest");
}
END_TEST

/* Real clients, when installed: boto3 (and aws-cli). */
START_TEST(test_boto3)
{
	if (system("python3 -c 'import boto3' >/dev/null 2>&1") != 0) {
		fprintf(stderr, "test_boto3: python3-boto3 not installed, skipped\n");
		return;
	}
	char script[4096];
	snprintf(script, sizeof(script),
		 "import boto3, botocore, hashlib, urllib.request, urllib.error, sys\n"
		 "from botocore.config import Config\n"
		 "ep='http://127.0.0.1:%d'\n"
		 "def cli(sk='%s'):\n"
		 "  return boto3.client('s3', endpoint_url=ep, aws_access_key_id='%s',\n"
		 "    aws_secret_access_key=sk, region_name='%s',\n"
		 "    config=Config(s3={'addressing_style':'path'}, retries={'max_attempts':1}))\n"
		 "s3=cli()\n"
		 "assert [b['Name'] for b in s3.list_buckets()['Buckets']] == ['demo']\n"
		 "s3.create_bucket(Bucket='newbucket')\n"
		 "s3.head_bucket(Bucket='newbucket')\n"
		 "body=bytes(range(256))*4000\n"
		 "r=s3.put_object(Bucket='newbucket', Key='dir/a b+c.bin', Body=body)\n"
		 "assert r['ETag'].strip('\"')==hashlib.md5(body).hexdigest(), r['ETag']\n"
		 "assert s3.get_object(Bucket='newbucket', Key='k')['Body'].read()==b'hello from iolake'\n"
		 "v4=boto3.client('s3', endpoint_url=ep, aws_access_key_id='%s', aws_secret_access_key='%s',\n"
		 "  region_name='%s', config=Config(signature_version='s3v4', s3={'addressing_style':'path'}))\n"
		 "u=v4.generate_presigned_url('get_object', Params={'Bucket':'newbucket','Key':'x/y'}, ExpiresIn=60)\n"
		 "assert 'X-Amz-Signature=' in u, u\n"
		 "assert urllib.request.urlopen(u).read()==b'hello from iolake'\n"
		 "u2=s3.generate_presigned_url('get_object', Params={'Bucket':'newbucket','Key':'x/y'}, ExpiresIn=60)\n"
		 "assert urllib.request.urlopen(u2).read()==b'hello from iolake'\n"
		 "u2b=u2.replace('x/y','x/z')\n"
		 "try:\n"
		 "  urllib.request.urlopen(u2b); sys.exit('tampered SigV2 presigned accepted')\n"
		 "except urllib.error.HTTPError as e:\n"
		 "  assert e.code==403 and b'SignatureDoesNotMatch' in e.read(), e\n"
		 "u3=u.replace('x/y','x/z')\n"
		 "try:\n"
		 "  urllib.request.urlopen(u3); sys.exit('tampered presigned accepted')\n"
		 "except urllib.error.HTTPError as e:\n"
		 "  assert e.code==403 and b'SignatureDoesNotMatch' in e.read(), e\n"
		 "try:\n"
		 "  cli('bad').list_buckets(); sys.exit('wrong secret accepted')\n"
		 "except botocore.exceptions.ClientError as e:\n"
		 "  assert e.response['Error']['Code']=='SignatureDoesNotMatch', e.response\n"
		 "  assert e.response['ResponseMetadata']['HTTPStatusCode']==403\n"
		 "print('boto3 ok')\n",
		 S.port, SK, AK, REGION, AK, SK, REGION);
	char py[64], obj[64], sum[64];
	snprintf(py, sizeof(py), "/tmp/iolake_boto3_%d.py", (int)getpid());
	snprintf(obj, sizeof(obj), "/tmp/iolake_cli_obj_%d", (int)getpid());
	snprintf(sum, sizeof(sum), "/tmp/iolake_cli_md5_%d", (int)getpid());
	FILE *f = fopen(py, "w");
	ck_assert_ptr_nonnull(f);
	fputs(script, f);
	fclose(f);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null "
		 "AWS_EC2_METADATA_DISABLED=true python3 %s", py);
	int rc = system(cmd);
	unlink(py);
	ck_assert_int_eq(rc, 0);
	struct { char pad[sizeof(S)]; } snapbuf;
	loop_thread_call(&S.lt, snap_put, &snapbuf);
	ck_assert_uint_eq(((typeof(S) *)&snapbuf)->put_len, 256 * 4000);

	if (system("aws --version >/dev/null 2>&1") != 0)
		return;
	snprintf(cmd, sizeof(cmd),
		 "head -c 300000 /dev/urandom > %s && "
		 "AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null "
		 "AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY='%s' AWS_DEFAULT_REGION=%s "
		 "aws --endpoint-url http://127.0.0.1:%d s3 cp %s s3://newbucket/cli.bin "
		 ">/dev/null && md5sum %s > %s",
		 obj, AK, SK, REGION, S.port, obj, obj, sum);
	rc = system(cmd);
	char line[128] = "";
	f = fopen(sum, "r");
	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
	}
	unlink(obj);
	unlink(sum);
	ck_assert_int_eq(rc, 0);
	loop_thread_call(&S.lt, snap_put, &snapbuf);
	ck_assert_uint_eq(((typeof(S) *)&snapbuf)->put_len, 300000);
	ck_assert_int_eq(strncmp(((typeof(S) *)&snapbuf)->put_md5, line, 32), 0);
}
END_TEST

int main(void)
{
	/* As the binaries do: a peer that closed must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("s3_server");
	TCase *tc = tcase_create("server");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_signed_requests);
	tcase_add_test(tc, test_put_payload_checks);
	tcase_add_test(tc, test_streaming_upload);
	tcase_add_test(tc, test_checksums);
	tcase_add_test(tc, test_abandoned_body);
	tcase_add_test(tc, test_boto3);
	suite_add_tcase(s, tc);
	TCase *tp = tcase_create("hash-pool");
	tcase_add_checked_fixture(tp, setup_pool, teardown_pool);
	tcase_set_timeout(tp, 30);
	tcase_add_test(tp, test_signed_requests);
	tcase_add_test(tp, test_put_payload_checks);
	tcase_add_test(tp, test_streaming_upload);
	tcase_add_test(tp, test_checksums);
	tcase_add_test(tp, test_abandoned_body);
	tcase_add_test(tp, test_hash_backpressure);
	suite_add_tcase(s, tp);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
