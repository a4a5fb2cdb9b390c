/*
 * s3_server.h — the S3 front end: an HTTP server (gateway/http) whose
 * every request is routed (s3_req), authenticated (s3_auth), answered
 * with S3 XML errors (s3_err) when refused, and otherwise dispatched to
 * the operation handler the data path registers for its s3_op. Request
 * bodies reach the handler decoded and verified: aws-chunked framing and
 * chunk signatures (gateway/chunked), the x-amz-content-sha256 digest,
 * Content-MD5, the additional checksum (x-amz-checksum-* header or
 * trailer, gateway/s3_checksum) — the handler learns the verdict at the
 * end of the body and must not commit anything before it.
 *
 * Owns: the http server, the credential cache, and a pool of calls (one
 * per connection plus a spare ring for calls whose credential lookup
 * outlives their connection), each with its routing scratch, XML writer
 * and hash streams, allocated at start and reused: a request allocates
 * nothing here. Pool empty -> 503 SlowDown.
 *
 * Loop: everything runs on the loop given to s3_server_start.
 *
 * Unauthenticated: GET /health/live and /health/ready (200 "ok", or 503
 * while cfg.ready says not ready) and GET /metrics (when cfg.metrics is
 * set) when the request carries no Authorization header; everything else
 * needs SigV4, or cfg.anonymous_ok (then the handlers decide).
 */
#ifndef GATEWAY_S3_SERVER_H
#define GATEWAY_S3_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "gateway/http.h"
#include "gateway/user_limit.h"
#include "gateway/s3_auth.h"
#include "gateway/s3_checksum.h"
#include "gateway/s3_err.h"
#include "gateway/s3_req.h"
#include "gateway/xml.h"

#define S3_MAX_PUT_BYTES (5ull << 30) /* single PUT / part: 5 GiB as S3 */
/* x-amz-meta-* names (after the prefix) plus values, in bytes: 2 KiB as
 * S3 (MetadataTooLarge), checked when the head arrives. */
#define S3_USER_META_MAX 2048

struct s3_server;
struct s3_call;

/* An operation handler: called once the request is routed and
 * authenticated. It must eventually respond (s3_call_error,
 * s3_call_send_xml, or the http_* API on s3_call_stream). */
typedef void (*s3_op_fn)(struct s3_call *call);

struct s3_server_cfg {
	struct http_server_cfg http;       /* addr, port, limits (handler is ours) */
	const char *const *domains;        /* virtual-host domains */
	size_t n_domains;
	const char *region;                /* scope region clients must sign for */
	struct s3_cred_source creds;
	s3_op_fn ops[S3_OP__COUNT];        /* NULL -> NotImplemented */
	void *ops_ctx;
	time_t (*wall_clock)(void);        /* NULL: time(); tests pin the clock */
	/* GET /health/ready (no Authorization): 200 when ready(ops_ctx), else
	 * 503. NULL: always ready. */
	bool (*ready)(void *ctx);
	/* GET /metrics (no Authorization): Prometheus text from
	 * metrics(ops_ctx, &text, &len), malloc'd, freed by the server.
	 * NULL: /metrics is routed as S3. */
	int (*metrics)(void *ctx, char **text, size_t *len);
	/* Revocation: a number that changes whenever credentials were
	 * added or removed (meta's creds_epoch). Checked before each
	 * authentication; a change empties the credential cache, so a
	 * removed key stops working and a new one starts at once, not when
	 * a (negative) entry's TTL runs out. NULL: TTL only. */
	uint64_t (*creds_generation)(void *ctx);
	/* Anonymous requests (no Authorization, no presigned query): false,
	 * refused here with AccessDenied; true, dispatched like any other
	 * with s3_call_auth(c)->anonymous set — only for handlers that
	 * authorize every request themselves (s3_ops's do, through s3_authz). */
	bool anonymous_ok;
	/* Refuse SigV2 (the "AWS AK:sig" header and AWSAccessKeyId presigned
	 * URLs) with InvalidRequest; by default it is verified. */
	bool no_sigv2;
	/* Large bodies' x-amz-content-sha256 and Content-MD5 are computed on
	 * this pool's threads (common/workpool.h); NULL: on the loop. */
	struct workpool *hash_pool;
	uint32_t hash_min_bytes;           /* bodies from this size (0: 128 KiB) */
	/* Limits per authenticated user (user_limit.h); zeros: none. */
	struct user_limit_cfg user_limit;
	/* The servers of several loops (gateway/gw_loops.h) share one table
	 * behind this mutex (user_limit above is then ignored). NULL: the
	 * server's own. Both outlive the server. */
	struct user_limit *user_limit_shared;
	pthread_mutex_t *user_limit_mu;
	/* The slow-request log (gateway/gw_trace.h): every S3 request taking
	 * slow_request_ms or more (0: every one) gets one warn line at its
	 * end (--slow-request-ms). false: no line. */
	bool slow_log;
	uint64_t slow_request_ms;
};

int s3_server_start(uv_loop_t *loop, const struct s3_server_cfg *cfg, struct s3_server **out);
int s3_server_port(const struct s3_server *srv);
/* The HTTP server underneath (gateway/gw_loops.c hands it connections
 * accepted on another loop: http_server_adopt). */
struct http_server *s3_server_http(struct s3_server *srv);
/* cb(arg) once everything is closed and freed. */
void s3_server_close(struct s3_server *srv, void (*cb)(void *arg), void *arg);
/* For revocation: s3_auth_invalidate(s3_server_auth(srv), key). */
struct s3_auth *s3_server_auth(struct s3_server *srv);
void s3_server_http_stats(const struct s3_server *srv, struct http_stats *out);

/* ------------------------------------------------------------ a call */

const struct s3_req *s3_call_req(const struct s3_call *c);
/* The exchange's trace: its request id (x-amz-request-id) and timings;
 * the meta helpers and the data path add to it (gateway/gw_trace.h). */
struct gw_trace *s3_call_trace(struct s3_call *c);
const struct http_request *s3_call_http(const struct s3_call *c);
const struct s3_auth_result *s3_call_auth(const struct s3_call *c);
struct http_stream *s3_call_stream(struct s3_call *c);
void *s3_call_ctx(const struct s3_call *c);         /* cfg.ops_ctx */
void s3_call_set_user(struct s3_call *c, void *user);
void *s3_call_user(const struct s3_call *c);

/* Payload bytes, decoded (aws-chunked removed); valid during the call. */
typedef void (*s3_body_fn)(struct s3_call *c, const char *data, size_t len);
/* End of body: S3E_OK when every check passed, else the error to answer
 * with (XAmzContentSHA256Mismatch, BadDigest, SignatureDoesNotMatch,
 * IncompleteBody, InvalidRequest). */
typedef void (*s3_body_end_fn)(struct s3_call *c, enum s3_err verdict);
/* The exchange is over (err 0: response delivered); release everything. */
typedef void (*s3_finish_fn)(struct s3_call *c, int err);

/* Receive the request body. Call from the op handler, at most once;
 * without it, a body is read and discarded. Returns 0, or an S3 error
 * when the request's body framing or checksum headers are wrong (answer
 * with it: s3_call_error with a NULL message gives the detail).
 *
 * Additional checksums: one algorithm per request, from an
 * x-amz-checksum-<algo> header (its value is matched), an x-amz-trailer
 * naming one with a STREAMING-*-TRAILER payload (the trailer's value is
 * matched), or x-amz-sdk-checksum-algorithm alone (computed, nothing to
 * match). Two algorithms, a malformed value or an unknown name:
 * InvalidRequest; a mismatch: the verdict BadDigest. */
enum s3_err s3_call_read_body(struct s3_call *c, s3_body_fn on_data, s3_body_end_fn on_end);

/* Memory of the handler's for the next body bytes (at most want): how
 * many bytes of *buf the read may fill, 0 for none. The bytes come to
 * on_data at once with data pointing there. */
typedef size_t (*s3_body_buf_fn)(struct s3_call *c, size_t want, char **buf);

/* After s3_call_read_body: the handler offers fn's memory to the reads of
 * the body, which the front end asks only while the payload is the body
 * itself (not aws-chunked: its framing would land there too) and no
 * failure is pending. The digests and checksums are computed from there
 * as from the read buffer. */
void s3_call_body_buf(struct s3_call *c, s3_body_buf_fn fn);

/* A request whose body is empty (http_request.has_body false: its end
 * came with its head, so s3_call_read_body would wait for nothing): the
 * verdict s3_body_end_fn would get — the signed digest, Content-MD5 and
 * any x-amz-checksum-* of zero bytes — computed now. Call at most once,
 * instead of s3_call_read_body. */
enum s3_err s3_call_check_empty_body(struct s3_call *c);

/* Before s3_call_read_body / s3_call_check_empty_body: the body's
 * additional checksum must be of algorithm a (a part of an upload created
 * with x-amz-checksum-algorithm): another one named by the request is
 * InvalidRequest, none named computes a (stored, nothing to match). */
void s3_call_checksum_want(struct s3_call *c, enum s3_ck_algo a);

/* Before s3_call_read_body: the request's x-amz-checksum-* headers are not
 * the body's (CompleteMultipartUpload: the whole object's); the handler
 * reads them itself. */
void s3_call_checksum_not_body(struct s3_call *c);

/* After an S3E_OK verdict: the body's additional checksum, to store with
 * the object and return; algo S3_CK_NONE when none was asked for (or the
 * verdict was not OK). Valid until the exchange is over. */
const struct s3_ck_value *s3_call_checksum(const struct s3_call *c);
void s3_call_on_finish(struct s3_call *c, s3_finish_fn fn);

/* Look up an access key through the server's credential source (not its
 * cache): l->done(l, rc, cred) as s3_auth.h says, l the caller's until
 * then. For a signature that is not in the request's head (a browser
 * POST's, in its form). */
void s3_call_cred_lookup(struct s3_call *c, struct s3_cred_lookup *l);

/* Respond with the S3 XML error for e (message NULL: the default), the
 * request path as Resource and the request id. */
void s3_call_error(struct s3_call *c, enum s3_err e, const char *message);

/* The call's XML writer, reset, for a response document. */
struct xml_w *s3_call_xml(struct s3_call *c);
/* Send the writer's document with status (Content-Type application/xml).
 * 0, or the xml/http error (the call then answers InternalError). */
int s3_call_send_xml(struct s3_call *c, int status);

#endif
