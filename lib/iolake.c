/*
 * iolake.c — libiolake (contract in lib/include/iolake.h): synchronous
 * native-protocol calls over common/rpc on a private libuv loop.
 *
 * The first call logs the connection in (common/native_login: Hello, then
 * a Login signed with common/native_sig, SigV4 with the signing key
 * derived once per UTC day); later calls go unsigned on it, and log in
 * again when the gateway answers LoginRequired (a new connection). With
 * opts.sign_each_call, or against a gateway without logins, each call is
 * signed instead. A call is sent with its body as the RPC payload, and
 * the loop runs until the answer; the answer's message is
 * kept (a deep copy) with its payload until the next call. Bodies over
 * NATIVE_CHUNK_MAX go as PutBegin / PutAppend... / PutCommit; reads over it
 * as ranged Gets pinned to the first answer's ETag.
 *
 * Owns the loop, the channel and the last answer. One thread at a time.
 */
#include "lib/include/iolake.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "common/buf.h"
#include "common/native_login.h"
#include "common/native_sig.h"
#include "common/proto/native_methods.h"
#include "common/rpc.h"
#include "common/rpc_tls.h"

struct iolake {
	uv_loop_t loop;
	struct rpc_channel *ch;
	struct rpc_tls *tls;            /* NULL: plaintext */
	char ak[129], sk[129], region[64];
	uint32_t timeout_ms;
	bool unsigned_payload;
	bool sign_each_call;            /* opts', or the gateway has no Login */
	bool logged_in;                 /* this connection (as far as we know) */
	int64_t clock_offset_s;
	char key_date[9];
	uint8_t key[32];
	/* the signed call's strings, which its Auth points at */
	char amz_date[17], sha[65], authz[NATIVE_SIG_AUTHZ_MAX];
	char err[512];
	/* the last answer */
	ProtobufCMessage *resp;
	struct buf_slice payload;
};

/* ------------------------------------------------------------ errors */

const char *iolake_strerror(int err)
{
	switch (err) {
	case IOLAKE_OK: return "OK";
	case IOLAKE_EINVAL: return "EINVAL";
	case IOLAKE_ENOENT: return "ENOENT";
	case IOLAKE_EACCES: return "EACCES";
	case IOLAKE_EAUTH: return "EAUTH";
	case IOLAKE_EUNAVAIL: return "EUNAVAIL";
	case IOLAKE_ECHANGED: return "ECHANGED";
	case IOLAKE_ERANGE: return "ERANGE";
	case IOLAKE_ENOMEM: return "ENOMEM";
	case IOLAKE_ETOOBIG: return "ETOOBIG";
	default: return "EIO";
	}
}

const char *iolake_errmsg(const iolake_t *c)
{
	return c->err;
}

__attribute__((format(printf, 3, 4))) static int fail(struct iolake *c, int code,
						      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return code;
}

static bool code_is(const char *msg, const char *code)
{
	size_t n = strlen(code);
	return !strncmp(msg, code, n) && msg[n] == ':';
}

/* The library's code for a failed call (status, "Code: detail"). */
static int map_status(int status, const char *msg)
{
	if (code_is(msg, "NoSuchKey") || code_is(msg, "NoSuchBucket") || code_is(msg, "NoSuchUpload"))
		return IOLAKE_ENOENT;
	if (code_is(msg, "PreconditionFailed"))
		return IOLAKE_ECHANGED;
	if (code_is(msg, "InvalidRange"))
		return IOLAKE_ERANGE;
	if (code_is(msg, "EntityTooLarge"))
		return IOLAKE_ETOOBIG;
	switch (status) {
	case RPC_UNAUTHENTICATED:
		return IOLAKE_EAUTH;
	case RPC_PERMISSION_DENIED:
		return IOLAKE_EACCES;
	case RPC_NOT_FOUND:
		return IOLAKE_ENOENT;
	case RPC_INVALID_ARGUMENT:
		return IOLAKE_EINVAL;
	case RPC_UNAVAILABLE:
	case RPC_DEADLINE_EXCEEDED:
	case RPC_CANCELLED:
		return IOLAKE_EUNAVAIL;
	case RPC_RESOURCE_EXHAUSTED:
		return IOLAKE_ETOOBIG;
	default:
		return IOLAKE_EIO;
	}
}

/* ------------------------------------------------------------ handle */

iolake_t *iolake_open(const char *endpoint, const char *access_key, const char *secret_key,
		      const struct iolake_opts *opts)
{
	if (!endpoint || !*endpoint || !access_key || !*access_key || !secret_key || !*secret_key ||
	    strlen(access_key) >= 129 || strlen(secret_key) >= 129)
		return NULL;
	struct iolake *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (!strncmp(endpoint, "http://", 7))
		endpoint += 7;
	snprintf(c->ak, sizeof(c->ak), "%s", access_key);
	snprintf(c->sk, sizeof(c->sk), "%s", secret_key);
	snprintf(c->region, sizeof(c->region), "%s",
		 opts && opts->region && *opts->region ? opts->region : "us-east-1");
	c->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 60000;
	c->unsigned_payload = opts && opts->unsigned_payload;
	c->sign_each_call = opts && opts->sign_each_call;
	c->clock_offset_s = opts ? opts->debug_clock_offset_s : 0;
	if (uv_loop_init(&c->loop)) {
		free(c);
		return NULL;
	}
	struct rpc_channel_opts co = { .max_message_bytes = NATIVE_CHUNK_MAX + (1u << 20) };
	if (opts && (opts->tls_ca || opts->tls_cert || opts->tls_key)) {
		struct rpc_tls_files f = { opts->tls_ca, opts->tls_cert, opts->tls_key };
		char err[256];
		if (!f.ca || !f.cert || !f.key || rpc_tls_new(&f, &c->tls, err, sizeof(err))) {
			fprintf(stderr, "libiolake: TLS: %s\n",
				f.ca && f.cert && f.key ? err : "the CA, certificate and key go together");
			goto fail_loop;
		}
		co.tls = c->tls;
	}
	if (!(c->ch = rpc_channel_open(&c->loop, endpoint, &co)))
		goto fail_tls;
	return c;
fail_tls:
	rpc_tls_free(c->tls);
fail_loop:
	uv_loop_close(&c->loop);
	free(c);
	return NULL;
}

static void drop_answer(struct iolake *c)
{
	if (c->resp)
		protobuf_c_message_free_unpacked(c->resp, NULL);
	c->resp = NULL;
	buf_unref(c->payload.buf);
	memset(&c->payload, 0, sizeof(c->payload));
}

void iolake_close(iolake_t *c)
{
	if (!c)
		return;
	drop_answer(c);
	rpc_channel_close(c->ch);
	while (uv_run(&c->loop, UV_RUN_DEFAULT))
		;
	uv_loop_close(&c->loop);
	rpc_tls_free(c->tls);
	free(c);
}

/* ------------------------------------------------------------ a call */

struct wait {
	bool done;
	int status;
	char msg[400];
	struct iolake *c;
};

static void on_answer(void *ud, const struct rpc_result *res)
{
	struct wait *w = ud;
	struct iolake *c = w->c;
	w->done = true;
	w->status = res->status;
	snprintf(w->msg, sizeof(w->msg), "%s", res->message);
	if (res->status != RPC_OK)
		return;
	/* Keep a copy of the answer past the callback. */
	size_t n = protobuf_c_message_get_packed_size(res->resp);
	uint8_t *b = malloc(n ? n : 1);
	if (b) {
		protobuf_c_message_pack(res->resp, b);
		c->resp = protobuf_c_message_unpack(res->resp->descriptor, NULL, n, b);
		free(b);
	}
	if (!c->resp) {
		w->status = RPC_RESOURCE_EXHAUSTED;
		snprintf(w->msg, sizeof(w->msg), "InternalError: out of memory");
		return;
	}
	if (res->payload.buf) {
		c->payload = res->payload;
		buf_ref(c->payload.buf);
	}
}

/* The day's signing key for now, and now as amz_date. */
static void day_key(struct iolake *c, char amz_date[17])
{
	time_t now = time(NULL) + (time_t)c->clock_offset_s;
	sigv4_format_amz_date(now, amz_date);
	if (memcmp(c->key_date, amz_date, 8)) {
		memcpy(c->key_date, amz_date, 8);
		c->key_date[8] = 0;
		sigv4_signing_key(c->sk, c->key_date, c->region, "s3", c->key);
	}
}

static void on_login(void *ud, int status, const char *message, const char *user)
{
	(void)user;
	struct wait *w = ud;
	w->done = true;
	w->status = status;
	snprintf(w->msg, sizeof(w->msg), "%s", message);
}

/* Log the connection in (c->logged_in), or learn that the gateway has no
 * Login (c->sign_each_call). IOLAKE_OK, or the failed login's code. */
static int login(struct iolake *c)
{
	char amz_date[17];
	day_key(c, amz_date);
	struct wait w = { .c = c };
	if (native_login_start(c->ch, c->key, c->ak, c->region, amz_date, c->timeout_ms, on_login,
			       &w))
		return fail(c, IOLAKE_ENOMEM, "out of memory");
	while (!w.done)
		uv_run(&c->loop, UV_RUN_ONCE);
	if (w.status == RPC_UNIMPLEMENTED) {
		c->sign_each_call = true;
		return IOLAKE_OK;
	}
	if (w.status != RPC_OK)
		return fail(c, map_status(w.status, w.msg), "%s", w.msg);
	c->logged_in = true;
	return IOLAKE_OK;
}

/* Sign req into *auth (its strings in c->amz_date, c->sha, c->authz). */
static int sign(struct iolake *c, unsigned method, ProtobufCMessage *req,
		Iolake__Native__Auth *auth, const void *payload, size_t plen)
{
	day_key(c, c->amz_date);
	if (c->unsigned_payload)
		snprintf(c->sha, sizeof(c->sha), "%s", SIGV4_UNSIGNED_PAYLOAD);
	else
		native_sig_payload_sha256(payload, plen, c->sha);
	int rc = native_sig_sign(c->key, c->ak, c->region, c->amz_date, NATIVE_SVC, method, req,
				 c->sha, c->authz);
	if (rc)
		return fail(c, IOLAKE_EINVAL, "cannot sign the request (%s)", strerror(-rc));
	auth->authorization = c->authz;
	auth->amz_date = c->amz_date;
	auth->content_sha256 = c->sha;
	return IOLAKE_OK;
}

/* One try of call(): 0 with the call's status and message, or a library
 * code when it could not be sent. */
static int call_once(struct iolake *c, unsigned method, ProtobufCMessage *req,
		     Iolake__Native__Auth *auth, const void *payload, size_t plen, int *status,
		     char msg[400])
{
	auth->authorization = auth->amz_date = auth->content_sha256 = NULL;
	if (c->sign_each_call) {
		int rc = sign(c, method, req, auth, payload, plen);
		if (rc)
			return rc;
	}
	struct buf_slice ps = { 0 };
	if (plen) {
		/* A copy: the transport may hold it past a timed-out call. */
		if (!(ps.buf = buf_copy(payload, plen)))
			return fail(c, IOLAKE_ENOMEM, "out of memory");
		ps.len = plen;
	}
	struct wait w = { .c = c };
	struct rpc_call_opts co = { .timeout_ms = c->timeout_ms };
	rpc_call(c->ch, NATIVE_SVC, method, req, plen ? &ps : NULL, &co, on_answer, &w);
	buf_unref(ps.buf);
	while (!w.done)
		uv_run(&c->loop, UV_RUN_ONCE);
	*status = w.status;
	memcpy(msg, w.msg, sizeof(w.msg));
	return 0;
}

/* Call method with req (whose Auth is *auth: signed, or left empty on a
 * logged-in connection) and payload; on success the answer is in c->resp
 * / c->payload. */
static int call(struct iolake *c, unsigned method, ProtobufCMessage *req,
		Iolake__Native__Auth *auth, const void *payload, size_t plen)
{
	drop_answer(c);
	c->err[0] = 0;
	for (int attempt = 0;; attempt++) {
		if (!c->sign_each_call && !c->logged_in) {
			int rc = login(c);
			if (rc)
				return rc;
		}
		int status = RPC_INTERNAL;
		char msg[400] = "";
		int rc = call_once(c, method, req, auth, payload, plen, &status, msg);
		if (rc)
			return rc;
		if (status == RPC_OK)
			return IOLAKE_OK;
		if (native_login_required(status, msg) && c->logged_in && attempt == 0) {
			c->logged_in = false;   /* a new connection: log it in, send again */
			continue;
		}
		return fail(c, map_status(status, msg), "%s", msg);
	}
}


static void set_info(struct iolake_info *info, const Iolake__Native__GetResponse *r)
{
	if (!info)
		return;
	info->size = r->size;
	snprintf(info->etag, sizeof(info->etag), "%s", r->etag ? r->etag : "");
	info->mtime_ms = r->mtime_ms;
	snprintf(info->content_type, sizeof(info->content_type), "%s",
		 r->content_type ? r->content_type : "");
}

static void set_put_info(struct iolake *c, struct iolake_info *info)
{
	const Iolake__Native__PutResponse *r = (const void *)c->resp;
	if (!info)
		return;
	memset(info, 0, sizeof(*info));
	info->size = r->size;
	snprintf(info->etag, sizeof(info->etag), "%s", r->etag ? r->etag : "");
}

static bool bad_name(const char *bucket, const char *key)
{
	return !bucket || !*bucket || (key && !*key);
}

/* ------------------------------------------------------------ PUT */

/* iolake_put's reader over a buffer. */
struct mem_src {
	const uint8_t *p;
	size_t left;
};

static long mem_read(void *arg, void *buf, size_t cap)
{
	struct mem_src *s = arg;
	size_t n = s->left < cap ? s->left : cap;
	memcpy(buf, s->p, n);
	s->p += n;
	s->left -= n;
	return (long)n;
}

int iolake_put(iolake_t *c, const char *bucket, const char *key, const void *data, size_t len,
	       const struct iolake_put_opts *po, struct iolake_info *info)
{
	if (bad_name(bucket, key) || !key || (len && !data))
		return fail(c, IOLAKE_EINVAL, "a bucket, a key and the data are needed");
	if (len > NATIVE_CHUNK_MAX) {
		struct mem_src src = { data, len };
		return iolake_put_stream(c, bucket, key, len, mem_read, &src, po, info);
	}
	Iolake__Native__PutRequest req = IOLAKE__NATIVE__PUT_REQUEST__INIT;
	Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
	req.auth = &auth;
	req.bucket = (char *)bucket;
	req.key = (char *)key;
	req.content_type = po && po->content_type ? (char *)po->content_type : (char *)"";
	req.skip_md5 = po && po->skip_md5;
	int rc = call(c, NATIVE_M_PUT, &req.base, &auth, data, len);
	if (rc)
		return rc;
	set_put_info(c, info);
	return IOLAKE_OK;
}

static void abort_upload(struct iolake *c, const char *upload)
{
	char keep[sizeof(c->err)];
	memcpy(keep, c->err, sizeof(keep));
	Iolake__Native__PutAbortRequest req = IOLAKE__NATIVE__PUT_ABORT_REQUEST__INIT;
	Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
	req.auth = &auth;
	req.upload = (char *)upload;
	call(c, NATIVE_M_PUT_ABORT, &req.base, &auth, NULL, 0);
	memcpy(c->err, keep, sizeof(keep));
}

int iolake_put_stream(iolake_t *c, const char *bucket, const char *key, uint64_t size,
		      iolake_read_fn read, void *arg, const struct iolake_put_opts *po,
		      struct iolake_info *info)
{
	if (bad_name(bucket, key) || !key || !read)
		return fail(c, IOLAKE_EINVAL, "a bucket, a key and a reader are needed");
	if (size > NATIVE_OBJECT_MAX)
		return fail(c, IOLAKE_ETOOBIG, "EntityTooLarge: at most 5 GiB");
	size_t cap = size < NATIVE_CHUNK_MAX ? (size_t)size : NATIVE_CHUNK_MAX;
	uint8_t *buf = malloc(cap ? cap : 1);
	if (!buf)
		return fail(c, IOLAKE_ENOMEM, "out of memory");
	int rc;
	if (size <= NATIVE_CHUNK_MAX) {
		size_t got = 0;
		while (got < size) {
			long n = read(arg, buf + got, size - got);
			if (n <= 0) {
				free(buf);
				return fail(c, IOLAKE_EIO, "the reader gave %ld at byte %zu of %llu", n,
					    got, (unsigned long long)size);
			}
			got += (size_t)n;
		}
		rc = iolake_put(c, bucket, key, buf, got, po, info);
		free(buf);
		return rc;
	}
	Iolake__Native__PutBeginRequest breq = IOLAKE__NATIVE__PUT_BEGIN_REQUEST__INIT;
	Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
	breq.auth = &auth;
	breq.bucket = (char *)bucket;
	breq.key = (char *)key;
	breq.size = size;
	breq.content_type = po && po->content_type ? (char *)po->content_type : (char *)"";
	breq.skip_md5 = po && po->skip_md5;
	if ((rc = call(c, NATIVE_M_PUT_BEGIN, &breq.base, &auth, NULL, 0))) {
		free(buf);
		return rc;
	}
	char upload[40];
	snprintf(upload, sizeof(upload), "%s",
		 ((const Iolake__Native__PutBeginResponse *)c->resp)->upload);
	uint64_t off = 0;
	while (off < size) {
		size_t want = size - off < cap ? (size_t)(size - off) : cap, got = 0;
		while (got < want) {
			long n = read(arg, buf + got, want - got);
			if (n <= 0) {
				rc = fail(c, IOLAKE_EIO, "the reader gave %ld at byte %llu of %llu", n,
					  (unsigned long long)(off + got), (unsigned long long)size);
				goto abort;
			}
			got += (size_t)n;
		}
		Iolake__Native__PutAppendRequest areq = IOLAKE__NATIVE__PUT_APPEND_REQUEST__INIT;
		areq.auth = &auth;
		areq.upload = upload;
		areq.offset = off;
		if ((rc = call(c, NATIVE_M_PUT_APPEND, &areq.base, &auth, buf, got)))
			goto abort;
		off += got;
	}
	free(buf);
	Iolake__Native__PutCommitRequest creq = IOLAKE__NATIVE__PUT_COMMIT_REQUEST__INIT;
	creq.auth = &auth;
	creq.upload = upload;
	if ((rc = call(c, NATIVE_M_PUT_COMMIT, &creq.base, &auth, NULL, 0)))
		return rc;
	set_put_info(c, info);
	return IOLAKE_OK;
abort:
	free(buf);
	abort_upload(c, upload);
	return rc;
}

/* ------------------------------------------------------------ GET */

int iolake_get_cb(iolake_t *c, const char *bucket, const char *key, uint64_t off, uint64_t len,
		  iolake_write_fn write, void *arg, struct iolake_info *info)
{
	if (bad_name(bucket, key) || !key || !write)
		return fail(c, IOLAKE_EINVAL, "a bucket, a key and a writer are needed");
	char etag[80] = "";
	bool first = true;
	uint64_t end = len ? off + len : UINT64_MAX;
	for (;;) {
		Iolake__Native__GetRequest req = IOLAKE__NATIVE__GET_REQUEST__INIT;
		Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
		req.auth = &auth;
		req.bucket = (char *)bucket;
		req.key = (char *)key;
		req.offset = off;
		req.length = end == UINT64_MAX ? 0 : end - off;
		req.if_etag = etag;
		int rc = call(c, NATIVE_M_GET, &req.base, &auth, NULL, 0);
		if (rc)
			return rc;
		const Iolake__Native__GetResponse *r = (const void *)c->resp;
		if (first) {
			set_info(info, r);
			snprintf(etag, sizeof(etag), "%s", r->etag ? r->etag : "");
			if (end > r->size)
				end = r->size;
			first = false;
		}
		if (r->length != c->payload.len || r->offset != off)
			return fail(c, IOLAKE_EIO, "the gateway answered %zu bytes at %llu for %llu at %llu",
				    c->payload.len, (unsigned long long)r->offset,
				    (unsigned long long)r->length, (unsigned long long)off);
		if (c->payload.len && write(arg, buf_slice_data(&c->payload), c->payload.len))
			return fail(c, IOLAKE_EIO, "the writer stopped");
		off += c->payload.len;
		if (off >= end || !c->payload.len)
			return IOLAKE_OK;
	}
}

struct into_buf {
	uint8_t *buf;
	size_t cap, got;
};

static int write_buf(void *arg, const void *data, size_t n)
{
	struct into_buf *b = arg;
	if (n > b->cap - b->got)
		return 1;
	memcpy(b->buf + b->got, data, n);
	b->got += n;
	return 0;
}

int iolake_get(iolake_t *c, const char *bucket, const char *key, uint64_t off, uint64_t len,
	       void *buf, size_t cap, size_t *got, struct iolake_info *info)
{
	struct into_buf b = { buf, cap, 0 };
	int rc = iolake_get_cb(c, bucket, key, off, len, write_buf, &b, info);
	if (rc == IOLAKE_EIO && b.got <= cap && !strcmp(c->err, "the writer stopped"))
		rc = fail(c, IOLAKE_ETOOBIG, "the buffer (%zu bytes) is too small", cap);
	if (got)
		*got = b.got;
	return rc;
}

int iolake_head(iolake_t *c, const char *bucket, const char *key, struct iolake_info *info)
{
	if (bad_name(bucket, key) || !key)
		return fail(c, IOLAKE_EINVAL, "a bucket and a key are needed");
	Iolake__Native__HeadRequest req = IOLAKE__NATIVE__HEAD_REQUEST__INIT;
	Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
	req.auth = &auth;
	req.bucket = (char *)bucket;
	req.key = (char *)key;
	int rc = call(c, NATIVE_M_HEAD, &req.base, &auth, NULL, 0);
	if (!rc)
		set_info(info, (const void *)c->resp);
	return rc;
}

int iolake_delete(iolake_t *c, const char *bucket, const char *key)
{
	if (bad_name(bucket, key) || !key)
		return fail(c, IOLAKE_EINVAL, "a bucket and a key are needed");
	Iolake__Native__DeleteRequest req = IOLAKE__NATIVE__DELETE_REQUEST__INIT;
	Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
	req.auth = &auth;
	req.bucket = (char *)bucket;
	req.key = (char *)key;
	return call(c, NATIVE_M_DELETE, &req.base, &auth, NULL, 0);
}

/* ------------------------------------------------------------ LIST */

int iolake_list(iolake_t *c, const char *bucket, const char *prefix, const char *delimiter,
		const char *start_after, uint64_t max_keys, iolake_list_fn fn, void *arg)
{
	if (bad_name(bucket, NULL) || !fn)
		return fail(c, IOLAKE_EINVAL, "a bucket and a callback are needed");
	char token[1200] = "";
	uint64_t seen = 0;
	for (;;) {
		Iolake__Native__ListRequest req = IOLAKE__NATIVE__LIST_REQUEST__INIT;
		Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
		req.auth = &auth;
		req.bucket = (char *)bucket;
		req.prefix = (char *)(prefix ? prefix : "");
		req.delimiter = (char *)(delimiter ? delimiter : "");
		req.start_after = (char *)(start_after && !token[0] ? start_after : "");
		req.token = token;
		uint64_t left = max_keys ? max_keys - seen : NATIVE_LIST_MAX;
		req.max_keys = (uint32_t)(left < NATIVE_LIST_MAX ? left : NATIVE_LIST_MAX);
		int rc = call(c, NATIVE_M_LIST, &req.base, &auth, NULL, 0);
		if (rc)
			return rc;
		const Iolake__Native__ListResponse *r = (const void *)c->resp;
		/* Keys and prefixes in name order, as S3 lists them. */
		size_t i = 0, j = 0;
		while (i < r->n_entries || j < r->n_common_prefixes) {
			struct iolake_entry e = { 0 };
			bool key = j >= r->n_common_prefixes ||
				   (i < r->n_entries && strcmp(r->entries[i]->key, r->common_prefixes[j]) < 0);
			if (key) {
				const Iolake__Native__ListEntry *x = r->entries[i++];
				e.name = x->key;
				e.size = x->size;
				e.etag = x->etag;
				e.mtime_ms = x->mtime_ms;
			} else {
				e.name = r->common_prefixes[j++];
				e.is_prefix = 1;
			}
			if (fn(arg, &e))
				return IOLAKE_OK;
			if (max_keys && ++seen >= max_keys)
				return IOLAKE_OK;
		}
		if (!r->truncated || !r->next_token || !r->next_token[0])
			return IOLAKE_OK;
		if (strlen(r->next_token) >= sizeof(token))
			return fail(c, IOLAKE_EIO, "continuation token too long");
		snprintf(token, sizeof(token), "%s", r->next_token);
	}
}
