/*
 * s3_cors_hdr.h — the CORS headers of an answer: those of an ordinary
 * request with an Origin (added by the gate, with the bucket record it
 * read for the decision, so they cost no extra meta read and go on
 * refusals too; and by PostObject, which reads its bucket itself), and
 * those of a preflight's 200.
 *
 * Owns nothing. Below the handlers and the core (s3_rq): it knows only
 * the call (s3_server) and the rules (s3_cors_rules).
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_CORS_HDR_H
#define GATEWAY_S3_CORS_HDR_H

#include "gateway/s3_server.h"
#include "proto/meta.pb-c.h"

/* When the request carries Origin and b has a CORS configuration: Vary,
 * and when a rule admits the Origin and the request's method,
 * Access-Control-Allow-Origin, -Allow-Methods, -Expose-Headers, -Max-Age
 * and -Allow-Credentials, added to the response not yet started. c or b
 * NULL, no Origin, or the response started: nothing. */
void s3_cors_headers(struct s3_call *c, const Iolake__Meta__Bucket *b);

/* A preflight admitted by rule r: the same headers, -Allow-Headers (the
 * requested ones, req_headers; NULL: none) and Vary. */
void s3_cors_preflight_headers(struct s3_call *c, const Iolake__Meta__CorsRule *r,
			       const struct sigv4_header *req_headers);

#endif
