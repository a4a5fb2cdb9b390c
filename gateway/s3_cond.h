/*
 * s3_cond.h — S3 conditional requests: If-Match, If-None-Match,
 * If-Modified-Since and If-Unmodified-Since on GetObject/HeadObject, and
 * If-None-Match: * / If-Match on PutObject, evaluated against the current
 * record's ETag and modification time.
 *
 * GET/HEAD precedence (RFC 7232 section 6, which S3 follows): If-Match
 * (false -> 412); only without If-Match, If-Unmodified-Since (modified
 * after the date -> 412); If-None-Match (an ETag matches -> 304); only
 * without If-None-Match, If-Modified-Since (not modified after the date
 * -> 304). So If-Match true + If-Unmodified-Since false is 200, and
 * If-None-Match false + If-Modified-Since true is 304, as S3 documents.
 * Dates compare at whole seconds (Last-Modified's resolution); an
 * unparsable date is ignored (RFC 7232). ETag lists ("a", "b"), weak
 * W/"..." tags and * are understood.
 *
 * If-Range (RFC 7233 section 3.2) comes after all of those (RFC 7232
 * section 6 step 5; S3 documents no other order): it only decides
 * whether a Range is served (206) or ignored for the whole object (200).
 *
 * Pure: no I/O, no allocation, any thread; the handler glue that answers
 * 304/412 is s3_cond_ops.h.
 */
#ifndef GATEWAY_S3_COND_H
#define GATEWAY_S3_COND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/http_parse.h"

/* The conditional headers of a request (NULL when absent; not
 * NUL-terminated: point into the request head). */
struct s3_cond_in {
	const char *if_match, *if_none_match, *if_modified_since, *if_unmodified_since;
	size_t if_match_len, if_none_match_len, if_modified_since_len, if_unmodified_since_len;
};

enum s3_cond_res {
	S3_COND_PASS = 0,       /* go on with the request */
	S3_COND_NOT_MODIFIED,   /* GET/HEAD: answer 304 */
	S3_COND_FAILED,         /* answer 412 PreconditionFailed */
	S3_COND_NO_OBJECT,      /* PUT If-Match on a missing key: 404 NoSuchKey */
	S3_COND_UNSUPPORTED,    /* PUT If-None-Match other than "*": 501 */
};

/* The four headers of hr into *in. */
void s3_cond_in_from(struct s3_cond_in *in, const struct http_request *hr);

/* Whether any conditional header is present. */
bool s3_cond_any(const struct s3_cond_in *in);

/* GET/HEAD against the record's ETag (hex, unquoted, "…-N" for multipart)
 * and mtime: PASS, NOT_MODIFIED or FAILED. */
enum s3_cond_res s3_cond_get(const struct s3_cond_in *in, const char *etag, uint64_t mtime_ms);

/* PUT: If-None-Match: * (FAILED when a record exists), If-Match (FAILED on
 * another ETag, NO_OBJECT without a record; * matches any record). etag is
 * the current record's, or NULL when there is none. Date headers are
 * ignored. PASS, FAILED, NO_OBJECT or UNSUPPORTED. */
enum s3_cond_res s3_cond_put(const struct s3_cond_in *in, const char *etag);

/* An HTTP date (RFC 1123 "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850 or
 * asctime) of len bytes to Unix seconds: 0, or -EINVAL. */
int s3_cond_parse_date(const char *s, size_t len, int64_t *out);

/* Whether the entity-tag list (or "*") in s matches etag. */
bool s3_cond_etag_match(const char *s, size_t len, const char *etag);

/* If-Range value v[0..len) against the record's ETag and mtime: true when
 * the Range may be served. One validator: a strong entity tag ("<etag>";
 * unquoted <etag> accepted, as for If-Match) equal to etag, or an HTTP
 * date equal to Last-Modified at whole seconds. A weak W/"..." tag, a
 * different tag or date, a list, or anything unparsable: false (serve the
 * whole object). */
bool s3_cond_if_range(const char *v, size_t len, const char *etag, uint64_t mtime_ms);

#endif
