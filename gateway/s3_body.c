/*
 * s3_body.c — small request bodies read whole (contract in s3_body.h).
 * Owns the body buffer until s3_body_free; does not parse anything.
 *
 * Thread: the gateway loop.
 */
#include "gateway/s3_body.h"

#include <stdlib.h>
#include <string.h>

#include "gateway/s3_util.h"

static void on_data(struct s3_call *c, const char *data, size_t len)
{
	struct s3_rq *rq = s3_call_user(c);
	struct s3_body *b = rq->body;
	/* More than announced cannot reach here unnoticed: the front end's
	 * verdict is IncompleteBody then. Keep what fits. */
	size_t room = b->size - b->len;
	size_t n = len < room ? len : room;
	memcpy(b->buf + b->len, data, n);
	b->len += n;
}

static void on_end(struct s3_call *c, enum s3_err verdict)
{
	struct s3_rq *rq = s3_call_user(c);
	struct s3_body *b = rq->body;
	if (!verdict && b->len != b->size)
		verdict = S3E_IncompleteBody;
	b->done(rq, verdict);
}

enum s3_err s3_body_read(struct s3_rq *rq, struct s3_body *b, size_t max, s3_body_done_fn done)
{
	struct s3_call *c = rq->c;
	const struct http_request *hr = s3_call_http(c);
	uint64_t size;
	enum s3_err e = s3u_body_size(c, false, &size);
	if (e)
		return e;
	if (size > max)
		return S3E_MaxMessageLengthExceeded;
	b->size = size;
	if (!(b->buf = malloc(size + 1)))
		return S3E_InternalError;
	b->len = 0;
	b->done = done;
	rq->body = b;
	if (!hr->has_body) {
		on_end(c, S3E_OK); /* nothing to read: the front end saw the end */
		return S3E_OK;
	}
	e = s3_call_read_body(c, on_data, on_end);
	if (e == S3E_OK)
		http_resume(s3_call_stream(c));
	return e;
}

void s3_body_free(struct s3_body *b)
{
	free(b->buf);
	b->buf = NULL;
}
