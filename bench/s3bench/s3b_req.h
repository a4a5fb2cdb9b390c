/*
 * s3b_req.h — S3 request heads for the benchmark: endpoint URLs, object
 * paths (path-style or virtual-host), and SigV4-signed HTTP/1.1 request
 * heads written into a caller's bounded buffer.
 *
 * Pure code: no I/O, no clock (the caller passes the time to
 * s3b_signer_tick), no allocation. One signer per loop thread.
 *
 * The hot path signs with the header scheme and exactly three signed
 * headers (host;x-amz-content-sha256;x-amz-date). It builds the canonical
 * request itself in a stack buffer instead of calling sigv4_sign (which
 * allocates per call); the paths and queries it signs are already in
 * canonical form because s3b_uri_encode made them so. The unit test checks
 * every header it writes against common/sigv4 computed independently.
 */
#ifndef BENCH_S3B_REQ_H
#define BENCH_S3B_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define S3B_HOST_MAX 256      /* host name in a URL, NUL included */
#define S3B_PATH_MAX 1024     /* an encoded request path, NUL included */
#define S3B_QUERY_MAX 1024    /* an encoded query, NUL included */
#define S3B_HEAD_MAX 4096     /* a request head we write */

/* Where requests go: "http://host[:port][/base]". */
struct s3b_endpoint {
	char host[S3B_HOST_MAX];      /* name or address, without [] for IPv6 */
	uint16_t port;                /* 80 when the URL names none */
	char host_header[S3B_HOST_MAX + 8]; /* Host value: host, or host:port when not 80 */
	char base_path[S3B_PATH_MAX]; /* URL path without its trailing '/', often "" */
};

/* Parse url into ep. Returns 0; -ENOTSUP for https:// (no TLS in the
 * bench: put a TLS terminator's plain port in front, or use http), or
 * -EINVAL; err gets one line saying what is wrong. */
int s3b_endpoint_parse(const char *url, struct s3b_endpoint *ep, char *err, size_t errlen);

/* Percent-encode s[0..n) for a SigV4 canonical URI or query value:
 * unreserved bytes (A-Z a-z 0-9 - _ . ~) pass, '/' passes when keep_slash,
 * everything else becomes %XX (upper-case hex). Writes a NUL-terminated
 * result; returns its length, or -ENOSPC when cap is too small. */
int s3b_uri_encode(const char *s, size_t n, bool keep_slash, char *out, size_t cap);

/* Paths for one bucket and key prefix, computed once. */
struct s3b_target {
	char host[S3B_HOST_MAX + 72];     /* Host header: bucket.host for virtual-host */
	char bucket_path[S3B_PATH_MAX];   /* "/bucket" (path-style) or "/" (virtual-host), with base */
	char key_prefix[S3B_PATH_MAX];    /* bucket_path + '/' + encoded key prefix */
	size_t key_prefix_len;
	char list_prefix[S3B_QUERY_MAX];  /* the key prefix encoded for a query value */
};

/* bucket must be a valid S3 bucket name (3..63 of a-z 0-9 . -, starting
 * and ending with a letter or digit); key_prefix may be any bytes (it is
 * encoded). Returns 0 or -EINVAL (err says why). */
int s3b_target_init(struct s3b_target *t, const struct s3b_endpoint *ep, const char *bucket,
		    const char *key_prefix, bool virtual_host, char *err, size_t errlen);

/* Write the path of object number idx ("<key_prefix>%08llu") into out.
 * Returns its length or -ENOSPC. */
int s3b_target_object_path(const struct s3b_target *t, uint64_t idx, char *out, size_t cap);

/* Credentials and the date state of signing. The signing key is derived
 * once per UTC day and the x-amz-date string once per second, both in
 * s3b_signer_tick, never per request. */
struct s3b_signer {
	char access_key[129];
	char secret_key[129];
	char region[64];
	time_t now_s;          /* the second amz_date shows; -1 before the first tick */
	char amz_date[17];     /* YYYYMMDDTHHMMSSZ */
	char date[9];          /* YYYYMMDD the key is for */
	uint8_t key[32];       /* kSigning for date/region/s3 */
	uint64_t key_derivations; /* how often the key was derived (tests, stats) */
};

/* Returns 0, or -EINVAL when a string is empty or too long. Call
 * s3b_signer_tick before the first request. */
int s3b_signer_init(struct s3b_signer *s, const char *access_key, const char *secret_key,
		    const char *region);

/* Set the signing time to now (seconds since the epoch, UTC). Reformats
 * amz_date only when the second changed and derives the key only when the
 * day changed. */
void s3b_signer_tick(struct s3b_signer *s, time_t now);

/* One request to sign. path and query must be canonical already (encoded
 * with s3b_uri_encode; query parameters sorted by name). */
struct s3b_req {
	const char *method;         /* "PUT", "GET", "DELETE", "HEAD" */
	const char *host;           /* Host header value */
	const char *path;           /* encoded, starts with '/' */
	size_t path_len;
	const char *query;          /* encoded and sorted, without '?'; NULL or "" for none */
	size_t query_len;
	const char *payload_hash;   /* 64 lower-case hex, or "UNSIGNED-PAYLOAD" */
	int64_t content_length;     /* >= 0: send Content-Length; -1: none */
};

/* Write the request head (request line, Host, x-amz-content-sha256,
 * x-amz-date, Authorization, Content-Length, ending in the blank line)
 * into out. Returns its length, -ENOSPC when cap is too small, or -EINVAL
 * for an oversized path or query. */
int s3b_req_format(const struct s3b_signer *s, const struct s3b_req *r, char *out, size_t cap);

#endif
