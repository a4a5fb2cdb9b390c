/*
 * s3_cond_ops.c — the handlers' side of conditional requests (contracts in
 * s3_cond_ops.h): reads the request's conditional headers, evaluates them
 * with s3_cond against the current record, and answers 304 Not Modified
 * (ETag and Last-Modified, no body) or the S3 error; and tells GetObject
 * whether If-Range lets its Range stand. Called by GetObject/HeadObject
 * once the record is read and by PutObject before its commit.
 *
 * Does not read records itself nor evaluate anything (s3_cond does).
 *
 * Thread: the gateway loop.
 */
#include "gateway/s3_cond_ops.h"

#include <stdio.h>

#include "gateway/s3_cond.h"
#include "gateway/s3_util.h"

bool s3_cond_ops_get(struct s3_rq *rq, const Iolake__Meta__ObjectRecord *r)
{
	struct s3_cond_in in;
	s3_cond_in_from(&in, s3_call_http(rq->c));
	if (!s3_cond_any(&in))
		return false;
	switch (s3_cond_get(&in, r->etag, r->mtime_ms)) {
	case S3_COND_NOT_MODIFIED: {
		struct http_stream *s = s3_call_stream(rq->c);
		char v[80];
		snprintf(v, sizeof(v), "\"%s\"", r->etag ? r->etag : "");
		http_add_header(s, "ETag", v);
		s3u_http_date(r->mtime_ms, v);
		http_add_header(s, "Last-Modified", v);
		http_respond(s, 304, NULL, 0, NULL, NULL);
		return true;
	}
	case S3_COND_FAILED:
		s3_rq_fail(rq, S3E_PreconditionFailed, NULL);
		return true;
	default:
		return false;
	}
}

bool s3_cond_ops_range_ok(struct s3_call *c, const Iolake__Meta__ObjectRecord *r)
{
	const struct sigv4_header *h = http_request_header(s3_call_http(c), "if-range");
	return !h || s3_cond_if_range(h->value, h->value_len, r->etag, r->mtime_ms);
}

enum s3_err s3_cond_ops_put(struct s3_call *c, const Iolake__Meta__ObjectRecord *cur)
{
	struct s3_cond_in in;
	s3_cond_in_from(&in, s3_call_http(c));
	switch (s3_cond_put(&in, cur ? (cur->etag ? cur->etag : "") : NULL)) {
	case S3_COND_FAILED: return S3E_PreconditionFailed;
	case S3_COND_NO_OBJECT: return S3E_NoSuchKey;
	case S3_COND_UNSUPPORTED: return S3E_NotImplemented;
	default: return S3E_OK;
	}
}
