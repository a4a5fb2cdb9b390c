/*
 * native_int.h — what the native protocol's modules share (gateway/
 * native_srv.c: the server, authentication, errors; native_put.c: Put and
 * the PutBegin/Append/Commit uploads; native_get.c: Get and Head;
 * native_list.c: List and Delete). Not for other modules: they see
 * native.h.
 *
 * A call (struct native_call) is made per RPC: authenticated first
 * (SigV4 over common/native_sig's canonical request, through s3_auth with
 * the S3 front end's credential source; or, unsigned, as its connection's
 * login: struct native_conn, native_srv.c), then its
 * method's step runs with the signer in call->rq (a request base that
 * never has an S3 exchange: rq.c stays NULL; it only carries the principal
 * and the records to s3_rq_decide and s3_access). A call is freed when
 * answered (native_ok / native_fail) — its step must owe no callback by
 * then, or hand the answer to a longer-lived state (an upload).
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_NATIVE_INT_H
#define GATEWAY_NATIVE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/native_sig.h"
#include "common/proto/native_methods.h"
#include "common/rpc.h"
#include "gateway/native.h"
#include "gateway/native_limit.h"
#include "gateway/s3_auth.h"
#include "gateway/s3_err.h"
#include "gateway/s3_rq.h"

struct native_upload;

/* Answered calls kept per server for the next ones: a call is ~6 KiB (the
 * verifier's request), and glibc consolidates its fast bins on every
 * allocation of that size (malloc_consolidate in the profile). */
#define NATIVE_SPARE_MAX 64

struct native_srv {
	uv_loop_t *loop;
	struct s3_ops *o;
	struct rpc_server *rpc;
	struct s3_auth *auth;
	struct native_limit limit;      /* per address, before authentication */
	uint64_t creds_gen;
	struct native_upload *uploads;  /* PutBegin's, newest first */
	unsigned n_uploads;             /* listed; at most uploads_max */
	unsigned uploads_max;
	uv_timer_t reaper;              /* aborts idle uploads */
	uint32_t idle_ms;
	unsigned live;                  /* calls and uploads not yet freed */
	struct native_call *spare;      /* freed calls kept for reuse (NATIVE_SPARE_MAX) */
	unsigned n_spare;
	bool closing;
};

struct native_call;
typedef void (*native_step_fn)(struct native_call *nc);

struct native_call {
	struct native_srv *s;
	struct rpc_req *r;
	unsigned method;                /* enum native_method */
	const ProtobufCMessage *msg;
	struct buf_slice payload;       /* the request's (borrowed from r) */
	struct s3_rq rq;                /* the signer (rq.user, rq.who), bucket, key, records */
	struct s3_auth_req areq;
	struct native_sig_req sig;
	struct s3_head head;
	s3_head_cb head_cb;             /* native_head's caller */
	native_step_fn step;            /* after authentication */
	void *op;                       /* the step's own state (freed by the step) */
	bool signed_call;               /* its own Auth (not its connection's login) */
	uint8_t session_secret[32];     /* unsigned: the login's, while verified */
	struct native_call *next_spare; /* in s->spare once answered */
};

static inline struct native_call *native_call_of_head(struct s3_head *h)
{
	return container_of(h, struct native_call, head);
}

/* Answer OK with resp and payload (NULL: none); frees nc. */
void native_ok(struct native_call *nc, const ProtobufCMessage *resp,
	       const struct buf_slice *payload);

/* Answer the S3 error e as "Code: message" with its gRPC status (msg NULL:
 * the default text); frees nc. */
void native_fail(struct native_call *nc, enum s3_err e, const char *msg);

/* The gRPC status an S3 error travels with. */
int native_err_status(enum s3_err e);

/* The access key that signed nc (after authentication). */
const char *native_call_key(const struct native_call *nc);

/* Read (bucket, key) with its bucket (s3_head_start, with_bucket): cb
 * runs with the HeadObject answer (h->bkt the bucket's copy, now the
 * call's: freed with it as rq.bkt). 0, or after answering. */
int native_head(struct native_call *nc, const char *bucket, const char *key, s3_head_cb cb);

/* The method steps (one per method, each in its module). */
void native_put_step(struct native_call *nc);
void native_put_begin_step(struct native_call *nc);
void native_put_append_step(struct native_call *nc);
void native_put_commit_step(struct native_call *nc);
void native_put_abort_step(struct native_call *nc);
void native_get_step(struct native_call *nc);
void native_list_step(struct native_call *nc);
void native_delete_step(struct native_call *nc);

/* Uploads: abort those idle since before now_ms - idle (all with idle 0:
 * the server closes). native_put.c. */
void native_uploads_reap(struct native_srv *s, uint64_t now_ms, uint64_t idle_ms);

/* A call or an upload ended: the server frees itself once closing and
 * nothing is live. */
void native_srv_unref(struct native_srv *s);

#endif
