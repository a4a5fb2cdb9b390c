/*
 * s3_cond_ops.h — conditional requests on the handlers' side: the
 * request's If-* headers evaluated (gateway/s3_cond, pure) against the
 * record a handler read, and the answer when they do not hold.
 *
 * Thread: the gateway loop.
 *
 * Owns nothing; does not read records (the caller passes the one it
 * read) nor evaluate conditions itself (s3_cond).
 */
#ifndef GATEWAY_S3_COND_OPS_H
#define GATEWAY_S3_COND_OPS_H

#include <stdbool.h>

#include "gateway/s3_rq.h"

/* GET/HEAD: evaluate the conditional headers against r; true when the
 * request was answered (304 Not Modified or 412), false to go on. */
bool s3_cond_ops_get(struct s3_rq *rq, const Iolake__Meta__ObjectRecord *r);

/* GET/HEAD with a Range: whether to serve it — true without If-Range or
 * when If-Range matches r (ETag or Last-Modified), false to ignore the
 * Range and answer the whole object (RFC 7233 section 3.2). */
bool s3_cond_ops_range_ok(struct s3_call *c, const Iolake__Meta__ObjectRecord *r);

/* PUT: If-None-Match: * / If-Match against the current record (NULL:
 * none). S3E_OK, PreconditionFailed, NoSuchKey (If-Match, no object) or
 * NotImplemented (If-None-Match other than *). */
enum s3_err s3_cond_ops_put(struct s3_call *c, const Iolake__Meta__ObjectRecord *cur);

#endif
