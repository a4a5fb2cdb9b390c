/*
 * s3_cors.h — CORS as the gateway serves it: Put/Get/DeleteBucketCors
 * (the handler table s3_cors_handlers, s3_handlers.h), the preflight
 * `OPTIONS /bucket[/key]` (s3_cors_preflight, installed outside the gate:
 * it is unauthenticated, as browsers send it, and reads only the bucket's
 * CORS configuration), and the CORS headers of ordinary responses
 * (s3_cors_headers, called by the gate with the bucket record it read for
 * the decision, so they cost no extra meta read and go on error answers
 * as well).
 *
 * Owns nothing beyond one request's state. The rules and matching are
 * s3_cors_rules' (pure).
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_CORS_H
#define GATEWAY_S3_CORS_H

#include "gateway/s3_server.h"
#include "proto/meta.pb-c.h"

/* The preflight handler (S3_OP_OptionsObject). */
void s3_cors_preflight(struct s3_call *c);

#endif
