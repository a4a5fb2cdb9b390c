/*
 * s3_cors_rules.h — a bucket's CORS configuration as values: the
 * CORSConfiguration document checked and turned into the record form
 * (meta's CorsConfig), the record rendered back as XML, and the matching
 * S3 does for a request (the first rule whose AllowedOrigin, AllowedMethod
 * and AllowedHeaders admit it).
 *
 * S3's rules (AmazonS3 ManageCorsUsing, PutBucketCors): 1..100 rules; each
 * at least one AllowedOrigin and one AllowedMethod; a method one of GET,
 * PUT, POST, DELETE, HEAD (else InvalidRequest "Found unsupported HTTP
 * method in CORS config."); at most one '*' in an AllowedOrigin or an
 * AllowedHeader (InvalidRequest); MaxAgeSeconds an integer; an ID at most
 * 255 characters. Origins match case-sensitively, '*' any run of
 * characters; header names case-insensitively.
 *
 * Owns the built record's arrays (s3_cors_doc_free). Pure: no I/O; any
 * thread.
 */
#ifndef GATEWAY_S3_CORS_RULES_H
#define GATEWAY_S3_CORS_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway/s3_err.h"
#include "gateway/xml.h"
#include "gateway/xml_parse.h"
#include "proto/meta.pb-c.h"

#define S3_CORS_BODY_MAX (64 * 1024)   /* a CORSConfiguration document */
#define S3_CORS_ID_MAX 255

/* A CORSConfiguration built from a parsed document; the strings point
 * into the parse's arena (keep it alive while cfg is used). */
struct s3_cors_doc {
	Iolake__Meta__CorsConfig cfg;
	Iolake__Meta__CorsRule *rules;     /* n_rules, one malloc */
	Iolake__Meta__CorsRule **prules;
	char **strs;                       /* every rule's string arrays, one malloc */
};

/* Check the items of a parsed document (xmlp_cors) and build the record
 * form into d. S3E_OK; MalformedXML (a rule without AllowedOrigin or
 * AllowedMethod, a MaxAgeSeconds not an integer); InvalidRequest with
 * *msg (an unsupported method, two wildcards, an ID too long);
 * InternalError (no memory). d is the caller's to free either way. */
enum s3_err s3_cors_build(const struct xmlp_cors *x, struct s3_cors_doc *d, const char **msg,
			  char *msg_buf, size_t msg_cap);
void s3_cors_doc_free(struct s3_cors_doc *d);

/* The GetBucketCors document of c into w (declaration included). */
void s3_cors_render(struct xml_w *w, const Iolake__Meta__CorsConfig *c);

/* s matches the pattern p, where '*' stands for any run of characters;
 * icase: ASCII case-insensitive. */
bool s3_cors_glob(const char *p, size_t pl, const char *s, size_t sl, bool icase);

/* The index of the first rule of c admitting origin, method and every
 * comma-separated name of req_headers (NULL or empty: none), or -1. */
int s3_cors_match(const Iolake__Meta__CorsConfig *c, const char *origin, size_t origin_len,
		  const char *method, size_t method_len, const char *req_headers,
		  size_t req_headers_len);

/* The rule's AllowedOrigin that admitted origin was exactly "*" (then
 * Access-Control-Allow-Origin says "*"). */
bool s3_cors_any_origin(const Iolake__Meta__CorsRule *r, const char *origin, size_t origin_len);

#endif
