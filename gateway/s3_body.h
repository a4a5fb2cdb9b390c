/*
 * s3_body.h — a small request body read whole into memory: the XML
 * documents of DeleteObjects and Put*Tagging. The length is checked
 * against a maximum before a byte is read (MaxMessageLengthExceeded), and
 * the body is held in one buffer of the announced length.
 *
 * CompleteMultipartUpload reads its own (larger, and refused as
 * MalformedXML rather than by length): s3_multipart.c.
 *
 * Owns the body buffer (in the caller's struct s3_body) until
 * s3_body_free; does not parse it.
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_BODY_H
#define GATEWAY_S3_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/s3_rq.h"

struct s3_body;
/* The body is in (verdict S3E_OK: b->len == b->size), or the error to
 * answer with: the front end's verdict, or IncompleteBody. */
typedef void (*s3_body_done_fn)(struct s3_rq *rq, enum s3_err verdict);

struct s3_body {
	uint8_t *buf;               /* size + 1 bytes */
	size_t len;                 /* bytes in */
	uint64_t size;              /* announced */
	s3_body_done_fn done;
};

/* Read rq's request body (at most max bytes) into b (part of rq's state,
 * zeroed), then done(rq, verdict); a request without a body calls done
 * at once. S3E_OK, or the error to answer with (nothing started):
 * InvalidArgument, MissingContentLength, MaxMessageLengthExceeded,
 * InternalError, or the front end's refusal. */
enum s3_err s3_body_read(struct s3_rq *rq, struct s3_body *b, size_t max, s3_body_done_fn done);

/* Release b's buffer. */
void s3_body_free(struct s3_body *b);

#endif
