/*
 * s3_tagging.h — S3 tag sets: the x-amz-tagging header (URL query form,
 * "k1=v1&k2=v2") and the checks S3 applies to a tag set (count, key and
 * value lengths in characters, unique keys, no "aws:" prefix, UTF-8), and
 * the tags a PUT carries in x-amz-tagging or a GET reports in
 * x-amz-tagging-count. The tagging operations themselves
 * (Put/Get/DeleteObjectTagging and ...BucketTagging) are handlers in
 * s3_tagging.c's table (s3_handlers.h).
 *
 * Owns nothing: strings live in caller storage. Does not read or write
 * records (the handlers in s3_tagging.c and s3_put.c do).
 *
 * The tag-set functions are pure: no I/O, no allocation; any thread. The
 * header ones run on the gateway loop.
 */
#ifndef GATEWAY_S3_TAGGING_H
#define GATEWAY_S3_TAGGING_H

#include <stddef.h>

#include "gateway/http.h"
#include "gateway/s3_err.h"
#include "gateway/s3_server.h"
#include "proto/meta.pb-c.h"

#define S3_TAGS_OBJECT_MAX 10
#define S3_TAGS_BUCKET_MAX 50
#define S3_TAG_KEY_MAX 128          /* characters */
#define S3_TAG_VALUE_MAX 256        /* characters */
#define S3_TAGGING_BODY_MAX 65536   /* Put*Tagging request body bytes */

/* A parsed tag set; strings are NUL-terminated, in caller storage. */
struct s3_tagset {
	size_t n;
	const char *keys[S3_TAGS_BUCKET_MAX];
	const char *values[S3_TAGS_BUCKET_MAX];
};

/* Arena bytes s3_tags_parse_header needs for a header of len bytes. */
#define S3_TAGS_HEADER_ARENA(len) ((len) + 2 * S3_TAGS_BUCKET_MAX + 2)

/* "k1=v1&k2=v2" (percent-decoded, '+' is a space; "k" alone has the
 * value "") into *ts, strings written into arena (at least
 * S3_TAGS_HEADER_ARENA(len) bytes). An empty header is zero tags.
 * Returns 0, -EINVAL (a malformed escape, an empty pair), -E2BIG (more
 * than S3_TAGS_BUCKET_MAX pairs). */
int s3_tags_parse_header(const char *s, size_t len, struct s3_tagset *ts, char *arena,
			 size_t arena_cap);

/* S3's checks on a tag set of at most max tags: S3E_OK, or S3E_InvalidTag
 * (too many tags, an empty or too long key, a too long value, a repeated
 * key, an "aws:" key, bad UTF-8) with *msg set to S3's message. */
enum s3_err s3_tags_check(const struct s3_tagset *ts, size_t max, const char **msg);

/* The request's x-amz-tagging header checked and, when r is not NULL, set
 * as r's tags (*mem holds them: s3_tagging_mem_free after use). S3E_OK
 * (also without the header), InvalidTag / InvalidArgument with *msg, or
 * InternalError (no memory). */
enum s3_err s3_tagging_from_header(struct s3_call *c, Iolake__Meta__ObjectRecord *r, void **mem,
				   const char **msg);
void s3_tagging_mem_free(void *mem);

/* x-amz-tagging-count when the record has tags. */
void s3_tagging_count_header(struct http_stream *s, const Iolake__Meta__ObjectRecord *r);

#endif
