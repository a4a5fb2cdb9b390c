/*
 * s3_server_body.c — a request body through the S3 front end: its framing
 * (plain, aws-chunked with chunk signatures, trailers), Content-MD5,
 * x-amz-content-sha256 and the additional checksums computed as it
 * streams, and the verdict at its end (s3_server.h, "body"). The call
 * pool, routing and authentication are s3_server.c's.
 *
 * Hashing off the loop: a body of at least S3S_HASH_MIN bytes (or
 * cfg.hash_min_bytes) with a
 * signed payload digest or a Content-MD5, on a server with a hash pool,
 * has those two digests computed on the pool's threads. Its bytes are
 * copied (the read buffer is reused) into stage buffers of S3S_STAGE
 * bytes, each handed to the call's ordered hash stream when full; with
 * every hash slot busy, full stages wait in a short queue and the body is
 * paused until a job ends. The end of the body waits for the last job,
 * then the verdict runs as before: nothing reaches the handler's on_end
 * (so nothing is committed or acknowledged) before the digests are
 * final. A call whose exchange ends with jobs out goes back to the pool
 * only when they are done (s3s_body_release). The chunk signatures of
 * aws-chunked and the additional checksums stay on the loop.
 */
#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loop.h"
#include "gateway/s3_server_int.h"

#define S3S_HASH_MIN (128u << 10)   /* below: a thread hop costs more */
#define S3S_STAGE (256u << 10)
#define S3S_HA_SLOTS 4

static void body_end(struct s3_call *c);

/* ------------------------------------------------------------ body */

bool s3s_hdr_has(const struct http_request *hr, const char *name, const char *token)
{
	const struct sigv4_header *h = http_request_header(hr, name);
	if (!h)
		return false;
	size_t tl = strlen(token);
	for (size_t i = 0; i + tl <= h->value_len; i++)
		if (strncasecmp(h->value + i, token, tl) == 0)
			return true;
	return false;
}

/* Hand full stages to the hash stream while it has slots; pause the body
 * while some wait. */
static void ha_drain(struct s3_call *c)
{
	while (c->ha_nq && hash_async_update(c->ha, c->ha_queue[0], 0, c->ha_queue[0]->len, 0) == 0) {
		buf_unref(c->ha_queue[0]);   /* the job holds its own reference */
		memmove(c->ha_queue, c->ha_queue + 1, --c->ha_nq * sizeof(c->ha_queue[0]));
	}
	if (c->ha_nq && c->s)
		http_pause(c->s);   /* again after a handler's resume: the queue is bounded */
}

static void ha_push(struct s3_call *c)
{
	struct buf *b = c->ha_stage;
	c->ha_stage = NULL;
	if (c->ha_nq == S3S_HA_QUEUE) {
		/* Only if the body kept coming while paused. Refuse it whole. */
		buf_unref(b);
		if (!c->body_err)
			c->body_err = S3E_InternalError;
		return;
	}
	c->ha_queue[c->ha_nq++] = b;
	ha_drain(c);
}

static void ha_stage(struct s3_call *c, const char *data, size_t len)
{
	while (len && !c->body_err) {
		if (!c->ha_stage && !(c->ha_stage = buf_new(S3S_STAGE))) {
			c->body_err = S3E_InternalError;
			return;
		}
		struct buf *b = c->ha_stage;
		size_t n = b->cap - b->len < len ? b->cap - b->len : len;
		memcpy(b->data + b->len, data, n);
		b->len += n;
		data += n;
		len -= n;
		if (b->len == b->cap)
			ha_push(c);
	}
}

static void ha_drop_stages(struct s3_call *c)
{
	buf_unref(c->ha_stage);
	c->ha_stage = NULL;
	for (unsigned i = 0; i < c->ha_nq; i++)
		buf_unref(c->ha_queue[i]);
	c->ha_nq = 0;
}

/* A hash job of c's body is done (on the loop). */
static void on_ha(struct hash_async *h, void *ud)
{
	struct s3_call *c = ud;
	bool idle = !hash_async_pending(h);
	if (c->ha_release_wait) {
		if (!idle)
			return;
		c->ha_release_wait = false;
		c->srv->hash_waits--;
		s3s_call_put(c);
		return;
	}
	bool was_full = c->ha_nq > 0;
	ha_drain(c);
	if (was_full && !c->ha_nq && c->s && c->reading_body && !c->ha_end_wait)
		http_resume(c->s);
	if (c->ha_end_wait && idle && !c->ha_nq) {
		c->ha_end_wait = false;
		body_end(c);
	}
}

/* Whether this body's digests go to the pool; sets it up. */
static bool ha_setup(struct s3_call *c, const struct http_request *hr)
{
	struct s3_server *srv = c->srv;
	uint64_t len = c->has_decoded_len ? c->decoded_expected
		       : hr->has_content_length ? hr->content_length : 0;
	uint32_t min = srv->cfg.hash_min_bytes ? srv->cfg.hash_min_bytes : S3S_HASH_MIN;
	/* Not a POST form: it pauses mid-body until the policy is checked,
	 * and a resume of ours (on_ha) would feed it early. The handlers
	 * that take large bodies otherwise (s3_put: PutObject, UploadPart;
	 * s3_body) pause only for back-pressure, and take data again. */
	if (!srv->cfg.hash_pool || (!c->want_sha && !c->want_md5) || len < min ||
	    c->req.op == S3_OP_PostObject)
		return false;
	if (!srv->hash_port && !(srv->hash_port = workpool_port_new(srv->cfg.hash_pool, srv->loop)))
		return false;
	if (!c->ha && !(c->ha = hash_async_new(srv->hash_port, 0, S3S_HA_SLOTS, on_ha, c)))
		return false;
	return hash_async_set_algs(c->ha, (c->want_sha ? HASH_ASYNC_SHA256 : 0) |
				   (c->want_md5 ? HASH_ASYNC_MD5 : 0)) == 0;
}

static void deliver(void *ud, const char *data, size_t len)
{
	struct s3_call *c = ud;
	if (c->ha_on) {
		ha_stage(c, data, len);
	} else {
		if (c->want_sha)
			hash_stream_update(c->sha, data, len);
		if (c->want_md5)
			hash_stream_update(c->md5, data, len);
	}
	if (c->ck_algo)
		s3_ck_update(&c->ck, data, len);
	c->decoded += len;
	c->on_data(c, data, len);
}

/* An error with its detail for the error body. */
__attribute__((format(printf, 3, 4)))
static enum s3_err failf(struct s3_call *c, enum s3_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->msg_buf, sizeof(c->msg_buf), fmt, ap);
	va_end(ap);
	c->msg_err = e;
	c->msg = c->msg_buf;
	return e;
}

/* Which additional checksum the request asks for: an x-amz-checksum-<algo>
 * header (the value to match), x-amz-trailer naming one (the value comes
 * in the trailer), or x-amz-sdk-checksum-algorithm alone (computed and
 * stored, nothing to match). At most one algorithm. */
static enum s3_err checksum_setup(struct s3_call *c, const struct http_request *hr, bool trailers)
{
	enum s3_ck_algo algo = S3_CK_NONE;
	for (size_t i = 0; i < hr->n_headers; i++) {
		const struct sigv4_header *h = &hr->headers[i];
		/* x-amz-checksum-mode, -type, -algorithm are no values. */
		enum s3_ck_algo a = s3_ck_from_header(h->name, h->name_len);
		if (!a)
			continue;
		if (algo)
			return failf(c, S3E_InvalidRequest, "Expecting a single x-amz-checksum- header. "
				     "Multiple checksum Types are not allowed.");
		if (s3_ck_from_base64(a, h->value, h->value_len, &c->ck_expect))
			return failf(c, S3E_InvalidRequest, "Value for %s header is invalid.",
				     s3_ck_header(a));
		algo = a;
		c->ck_claimed = true;
	}
	const struct sigv4_header *tr = http_request_header(hr, "x-amz-trailer");
	if (tr) {
		enum s3_ck_algo a = s3_ck_from_header(tr->value, tr->value_len);
		if (!a || !trailers)
			return failf(c, S3E_InvalidRequest, "The value specified in the x-amz-trailer "
				     "header is not supported");
		if (algo)
			return failf(c, S3E_InvalidRequest, "Expecting a single x-amz-checksum- header. "
				     "Multiple checksum Types are not allowed.");
		algo = a;
		c->ck_trailer = true;
	}
	const struct sigv4_header *sdk = http_request_header(hr, "x-amz-sdk-checksum-algorithm");
	if (sdk) {
		enum s3_ck_algo a = s3_ck_from_name(sdk->value, sdk->value_len);
		if (!a || (algo && a != algo))
			return failf(c, S3E_InvalidRequest,
				     "Value for x-amz-sdk-checksum-algorithm header is invalid.");
		algo = a;
	}
	if (c->ck_want && algo && algo != c->ck_want) {
		char want[16], got[16];
		snprintf(want, sizeof(want), "%s", s3_ck_name(c->ck_want));
		snprintf(got, sizeof(got), "%s", s3_ck_name(algo));
		for (char *p = want; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		for (char *p = got; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		return failf(c, S3E_InvalidRequest, "Checksum Type mismatch occurred, expected "
			     "checksum Type: %s, actual checksum Type: %s", want, got);
	}
	if (!algo)
		algo = c->ck_want;
	c->ck_algo = algo;
	s3_ck_begin(&c->ck, algo);
	return S3E_OK;
}

/* The framing and digests a body is checked against; shared by
 * s3_call_read_body and s3_call_check_empty_body. */
static enum s3_err body_setup(struct s3_call *c)
{
	const struct http_request *hr = http_stream_request(c->s);
	const struct s3_auth_result *res = &c->auth.res;
	bool streaming = res->payload == S3_PAYLOAD_STREAMING_SIGNED ||
			 res->payload == S3_PAYLOAD_STREAMING_SIGNED_TRAILER ||
			 res->payload == S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
	bool trailers = streaming && res->payload != S3_PAYLOAD_STREAMING_SIGNED;
	if (s3s_hdr_has(hr, "content-encoding", "aws-chunked") && !streaming)
		return S3E_InvalidArgument;
	const struct sigv4_header *dl = http_request_header(hr, "x-amz-decoded-content-length");
	if (dl) {
		char num[24];
		char *end;
		snprintf(num, sizeof(num), "%.*s", (int)(dl->value_len < 23 ? dl->value_len : 23), dl->value);
		c->decoded_expected = strtoull(num, &end, 10);
		if (!num[0] || *end)
			return S3E_InvalidArgument;
		c->has_decoded_len = true;
	} else if (streaming) {
		return S3E_MissingContentLength;
	}
	const struct sigv4_header *cm = http_request_header(hr, "content-md5");
	if (cm) {
		uint8_t out[20];
		if (cm->value_len != 24 ||
		    EVP_DecodeBlock(out, (const unsigned char *)cm->value, 24) != 18)
			return S3E_InvalidDigest;
		memcpy(c->content_md5, out, 16);
		c->want_md5 = true;
	}
	enum s3_err e = c->ck_not_body ? S3E_OK : checksum_setup(c, hr, trailers);
	if (e)
		return e;
	if (streaming) {
		bool signed_chunks = res->payload != S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
		if (chunked_init(&c->dec, signed_chunks ? res->signing_key : NULL, &res->claim,
				 res->claim.signature, trailers))
			return S3E_InternalError;
		c->dec_live = true;
		c->chunked_mode = true;
	}
	c->want_sha = res->payload == S3_PAYLOAD_SHA256;
	c->ha_on = ha_setup(c, hr);
	return S3E_OK;
}

enum s3_err s3_call_read_body(struct s3_call *c, s3_body_fn on_data, s3_body_end_fn on_end)
{
	enum s3_err e = body_setup(c);
	if (e)
		return e;
	c->on_data = on_data;
	c->on_end = on_end;
	c->on_buf = NULL;
	c->reading_body = true;
	return S3E_OK;
}

void s3_call_body_buf(struct s3_call *c, s3_body_buf_fn fn)
{
	c->on_buf = fn;
}

size_t s3s_body_buf(struct http_stream *s, size_t want, char **buf)
{
	struct s3_call *c = http_stream_user(s);
	/* aws-chunked: the framing would land in the handler's memory; a
	 * failed body is read to be discarded. */
	if (!c || !c->reading_body || !c->on_buf || c->chunked_mode || c->body_err)
		return 0;
	return c->on_buf(c, want, buf);
}

void s3s_on_body(struct http_stream *s, const char *data, size_t len)
{
	struct s3_call *c = http_stream_user(s);
	if (c)
		c->bytes_in += len;
	if (!c || !c->reading_body || c->body_err)
		return; /* discarded */
	if (!c->chunked_mode) {
		deliver(c, data, len);
		return;
	}
	ssize_t rc = chunked_feed(&c->dec, data, len, deliver, c);
	if (rc == CHUNKED_ESIGNATURE)
		c->body_err = S3E_SignatureDoesNotMatch;
	else if (rc < 0)
		c->body_err = S3E_IncompleteBody;
	else if ((size_t)rc < len)
		c->body_err = S3E_IncompleteBody; /* bytes after the final chunk */
}

/* The additional checksum against the header's or the trailer's value. */
static enum s3_err checksum_verdict(struct s3_call *c)
{
	const char *hname = s3_ck_header(c->ck_algo);
	if (c->ck_trailer) {
		const struct chunked_trailer *t = chunked_trailer(&c->dec, hname);
		if (!t)
			return failf(c, S3E_InvalidRequest, "The trailer declared in x-amz-trailer "
				     "(%s) was not sent", hname);
		if (s3_ck_from_base64(c->ck_algo, t->value, t->value_len, &c->ck_expect))
			return failf(c, S3E_InvalidRequest, "Value for %s trailing header is invalid.",
				     hname);
	} else if (!c->ck_claimed) {
		return S3E_OK; /* asked for by name only: nothing to match */
	}
	if (!s3_ck_equal(&c->ck_result, &c->ck_expect))
		return failf(c, S3E_BadDigest, "The %s you specified did not match the calculated "
			     "checksum.", s3_ck_name(c->ck_algo));
	return S3E_OK;
}

/* Every check on a complete body, in order; finalises the digests. */
static enum s3_err body_verdict(struct s3_call *c)
{
	enum s3_err v = c->body_err;
	if (!v && c->chunked_mode && !chunked_done(&c->dec))
		v = S3E_IncompleteBody;
	if (!v && c->has_decoded_len && c->decoded != c->decoded_expected)
		v = S3E_IncompleteBody;
	uint8_t sha[32], md5[16];
	if (c->ha_on) {
		/* Every job is done (s3s_on_body_end waited); a stage still
		 * here means the body failed before its end was hashed. */
		ha_drop_stages(c);
		hash_async_final(c->ha, md5, sha);
		c->ha_on = false;
	} else {
		if (c->want_sha)
			hash_stream_final(c->sha, sha);
		if (c->want_md5)
			hash_stream_final(c->md5, md5);
	}
	if (c->want_sha && !v && memcmp(sha, c->auth.res.payload_sha256, 32) != 0)
		v = S3E_XAmzContentSHA256Mismatch;
	if (c->want_md5 && !v && memcmp(md5, c->content_md5, 16) != 0)
		v = S3E_BadDigest;
	if (c->ck_algo) {
		s3_ck_final(&c->ck, &c->ck_result);
		if (!v)
			v = checksum_verdict(c);
		if (v)
			c->ck_result.algo = S3_CK_NONE;
	}
	return v;
}

static void body_end(struct s3_call *c)
{
	enum s3_err v = body_verdict(c);
	c->reading_body = false;
	c->on_end(c, v);
}

void s3s_on_body_end(struct http_stream *s)
{
	struct s3_call *c = http_stream_user(s);
	if (!c || !c->reading_body || c->ha_end_wait)
		return;
	if (c->ha_on) {
		if (c->ha_stage && c->ha_stage->len && !c->body_err)
			ha_push(c);
		if (hash_async_pending(c->ha) || c->ha_nq) {
			c->ha_end_wait = true;   /* on_ha runs the verdict */
			return;
		}
	}
	body_end(c);
}

bool s3s_body_release(struct s3_call *c)
{
	c->ha_end_wait = false;
	if (!c->ha)
		return false;
	ha_drop_stages(c);
	if (hash_async_pending(c->ha)) {
		c->ha_release_wait = true;
		c->srv->hash_waits++;
		return true;
	}
	if (c->ha_on) {
		hash_async_final(c->ha, NULL, NULL);   /* reset for the next body */
		c->ha_on = false;
	}
	return false;
}

void s3s_body_free(struct s3_call *c)
{
	ha_drop_stages(c);
	hash_async_free(c->ha);
	c->ha = NULL;
}

enum s3_err s3_call_check_empty_body(struct s3_call *c)
{
	enum s3_err e = body_setup(c);
	if (e)
		return e;
	if (c->chunked_mode)
		return S3E_IncompleteBody; /* aws-chunked has at least its final chunk */
	return body_verdict(c);
}

void s3_call_checksum_want(struct s3_call *c, enum s3_ck_algo a)
{
	c->ck_want = a;
}

void s3_call_checksum_not_body(struct s3_call *c)
{
	c->ck_not_body = true;
}

const struct s3_ck_value *s3_call_checksum(const struct s3_call *c)
{
	return &c->ck_result;
}

