/*
 * s3_rq.h — the S3 layer's core: the context every request runs in
 * (struct s3_ops, one per gateway loop), the base every handler's request
 * state starts with (struct s3_rq), its lifecycle, the gate that
 * authorizes every request before its handler runs, and the meta helpers
 * every handler uses — a read, a submitted op, HeadObject, GetBucket, the
 * NoSuchKey-or-NoSuchBucket decision — whose answers come through
 * s3_status's one table.
 *
 * Owns: nothing beyond a request's base. Does not know any operation: the
 * handlers live one file per resource (s3_handlers.h lists them) and hang
 * their per-operation state off the base by embedding it:
 *
 *     struct get_rq { struct s3_rq rq; ...GetObject's own fields... };
 *     struct get_rq *g = s3_rq_new(c, sizeof(*g));
 *     ... struct get_rq *g = container_of(rq, struct get_rq, rq);
 *
 * Lifecycle: a request lives until its exchange is over (the front end's
 * finish hook: rq->c becomes NULL, rq->stop runs) AND every callback it is
 * owed has come back (rq->pending: meta calls, data-path callbacks,
 * response writes); then rq->fini runs and it is freed. A callback that
 * comes back for a finished exchange only drops its result, except a
 * commit's, which must still free what the commit replaced.
 *
 * Meta calls: at most one per request at a time (the operations are
 * sequences of steps); DeleteObjects' keys use s3_head_start and the meta
 * client directly, each with its own state.
 *
 * Thread: the gateway loop; no blocking call.
 */
#ifndef GATEWAY_S3_RQ_H
#define GATEWAY_S3_RQ_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/loop.h"
#include "common/metrics.h"
#include "gateway/s3_acl.h"
#include "gateway/gw_bread.h"
#include "gateway/gw_trace.h"
#include "gateway/s3_authz.h"
#include "gateway/s3_server.h"
#include "gateway/s3_status.h"
#include "meta/client.h"
#include "proto/meta.pb-c.h"

#define S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define S3_COMMIT_TRIES 8   /* commits of one request (a CONFLICT reads again) */

struct gw_data;
struct gw_gc;
struct s3_body;
struct gw_heal;
struct gw_map;
struct s3_handler;
struct s3_policy_cache;
struct gw_bcache;
struct gw_bread;
struct gw_md5b;

/* One gateway loop's S3 layer (made by s3_ops_new, gateway/s3_ops.c). */
struct s3_ops {
	uv_loop_t *loop;
	struct meta_client *mc;
	struct gw_map *map;
	struct gw_data *data;
	char region[64];
	uint32_t inline_max;
	uint64_t min_part;              /* multipart: every part but the last */
	unsigned quorum;
	struct metrics_registry *reg;
	bool own_reg;
	struct gw_gc *gc;               /* shard GC worker; NULL: disabled */
	struct lc_worker *lc;           /* lifecycle worker; NULL: disabled */
	struct gw_heal *heal;           /* FlagPgs batcher (degraded PGs seen) */
	struct metrics_counter *m_req[S3_OP__COUNT];
	struct metrics_counter *m_unavail;
	struct metrics_counter *m_denied;
	struct s3_policy_cache *policies; /* compiled bucket policies (this loop's) */
	/* The gate's decision's two ACLs (bucket, object; ~3.4 KiB each),
	 * this loop's: a decision is synchronous. Not malloc'd per decision:
	 * a block that large made glibc consolidate its fast bins on every
	 * request (docs/performance.md, branch get64c). */
	struct s3_acl *acl_scratch;
	struct gw_bcache *bcache;       /* bucket records for PUT gates (gw_bcache.h) */
	struct gw_bread *bread;         /* GetBucket reads shared (gw_bread.h); NULL: none */
	struct gw_md5b *md5b;           /* inline PUTs' ETags per turn (gw_md5b.h); NULL: none */
	struct metrics_counter *m_cred_lookups; /* GetAccessKey calls to meta */
	struct metrics_counter *m_map_refreshes; /* GetMaps after a "misplaced" */
	struct gw_stats *stats;         /* per-op requests and latency; NULL: none */
	/* The handler of each operation (s3_ops_bind), which the front end
	 * reaches only through the gate (s3_rq_gate). */
	const struct s3_handler *rows[S3_OP__COUNT];
	/* The records the gate authorized on, between the gate and the
	 * handler's s3_rq_new (synchronous: set, fn(c), cleared). */
	bool handoff;
	Iolake__Meta__Bucket *handoff_bkt;
	Iolake__Meta__ObjectRecord *handoff_obj;
	uint64_t handoff_bkt_digest;
	uint64_t not_ready_logged_ms;   /* s3_ops_ready's last "not ready" line */
};

/* A GC round soon (gw_gc_kick) on the loop that runs the GC worker: this
 * one, or loop 0 (gateway/s3_ops.c; declared here, beside struct s3_ops,
 * so that handlers need not include s3_ops.h). */
void s3_ops_kick_gc(struct s3_ops *o);

struct s3_rq;
typedef void (*s3_rq_fn)(struct s3_rq *rq);

/* Meta answers, as S3 sees them (e: S3E_OK or the error to answer with). */
typedef void (*s3_rq_read_cb)(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp);
typedef void (*s3_rq_done_cb)(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res);
typedef void (*s3_rq_head_cb)(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec);

/* s3_rq_head with the bucket record asked for too (with_bucket): the
 * gate's read, shared by s3_rq.c and s3_gate.c. */
int s3_rq_head_start(struct s3_rq *rq, const char *bucket, const char *key, bool with_bucket,
		     s3_rq_head_cb cb);
typedef void (*s3_rq_bucket_cb)(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b);

/* A HeadObject read in flight, owned by the caller until its callback. */
struct s3_head;
typedef void (*s3_head_cb)(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec);
struct s3_head {
	s3_head_cb cb;
	/* with_bucket: the bucket record is read too; the callback then
	 * finds a copy in bkt (the caller's to free) when the bucket exists,
	 * and e is NoSuchBucket when it does not. */
	bool with_bucket;
	/* with_bucket for a read (the gate of GetObject, HeadObject): the
	 * bucket comes without its usage and its owner's quota, which only a
	 * write's quota check reads (s3_quota.h); meta skips two reads. */
	bool no_usage;
	Iolake__Meta__Bucket *bkt;
	/* Versioning: NoSuchKey because the current version is a delete
	 * marker (its id in marker_vid, "" for null). */
	bool marker;
	char marker_vid[24];
};

/* The base of every request's state. */
struct s3_rq {
	struct s3_ops *o;
	struct s3_call *c;          /* NULL once the exchange is over */
	unsigned pending;           /* callbacks owed: meta calls, data path, writes */
	int tries;                  /* commits tried */
	char bucket[S3_BUCKET_MAX + 1];
	char *key;                  /* NULL for a bucket or service operation */
	char user[S3_AUTH_USER_MAX + 1]; /* who signed ("": anonymous) */
	struct s3_principal who;    /* the same, as s3_authz sees it (who.user -> user,
				     * who.grants -> grants) */
	struct s3_user_grant *grants;    /* the signer's grants (malloc'd copy); NULL: none */
	/* The records the gate authorized the request on (copies, freed with
	 * the request): the bucket for bucket and object actions, the object
	 * for object actions. s3_rq_bucket answers its first read of that
	 * bucket from bkt and s3_rq_head its first read of that object from
	 * obj (handing it over), so authorizing costs no extra meta read
	 * where the handler read them anyway. */
	Iolake__Meta__Bucket *bkt;
	Iolake__Meta__ObjectRecord *obj;
	bool bkt_served;
	/* Issue 19: the digest of bkt when a commit may carry it as
	 * PutObject.if_bucket_digest (gw_bcache.h: bkt came from the cache, or
	 * was read fresh and is cacheable); 0: none. bkt_read_digest: the
	 * digest of the last GetBucket answer s3_rq_bucket passed on. */
	uint64_t bkt_digest;
	uint64_t bkt_read_digest;
	s3_rq_head_cb authz_cb;     /* s3_rq_head_authz's caller */
	enum s3_authz_action authz_action;
	char *authz_key;            /* s3_rq_head_authz's key (the policy's resource) */
	s3_rq_fn stop;              /* exchange over: stop the data path; NULL: none */
	s3_rq_fn fini;              /* release the operation's state; NULL: none */
	struct s3_body *body;       /* a small body being read (s3_body.h) */
	/* The meta call in flight. */
	bool in_call;
	struct gw_bread_waiter bread_w; /* s3_rq_bucket's place in a shared read */
	int merr;                   /* the meta client's error of the last one */
	enum s3_subj subj;
	union {
		s3_rq_read_cb read;
		s3_rq_done_cb done;
		s3_rq_head_cb head;
		s3_rq_bucket_cb bucket;
	} cb;
	struct s3_head head;
	/* s3_rq_bucket_change's redo, the action it decides again and the
	 * status it answers. */
	struct {
		s3_rq_fn redo;
		enum s3_authz_action action;
		int status;
	} chg;
	/* The meta call's place in the request's trace (gateway/gw_trace.h). */
	struct gw_trace_ref mtrace;
	uint64_t mt0_ns;
	/* Versioning (issue 17): the version the last applied op wrote,
	 * made or deleted ("": null) and whether it is a delete marker
	 * (s3_version.h adds them to the answer). */
	char ver_id[24];
	bool ver_marker;
	s3_rq_head_cb ver_cb;       /* s3_ver_read's caller */
};

/* ------------------------------------------------------------ lifecycle */

/* Give rq's principal (rq->user, already set) these grants: a copy is
 * kept with rq. false when out of memory (rq then has none: it can only
 * be refused more, never allowed more). */
bool s3_rq_set_grants(struct s3_rq *rq, const struct s3_user_grant *g, size_t n);

/* A request's state of size bytes (the base first, the rest the
 * operation's), zeroed, with bucket and key copied, set as the call's user
 * and counted in iolake_gw_requests_total. NULL after answering
 * InternalError (no memory). */
void *s3_rq_new(struct s3_call *c, size_t size);

/* Take back one owed callback: true while the exchange is live; false when
 * it is over (rq may have been freed: touch nothing). */
bool s3_rq_back(struct s3_rq *rq);

/* Free rq (fini first) when the exchange is over and nothing is owed. */
void s3_rq_maybe_free(struct s3_rq *rq);

/* Answer the S3 error (msg NULL: the default, or the front end's detail);
 * nothing when the exchange is over. */
void s3_rq_fail(struct s3_rq *rq, enum s3_err e, const char *msg);

/* The user the request's access key belongs to (s3_auth carries it from
 * the credential lookup); "" for an anonymous request. */
const char *s3_rq_owner(struct s3_rq *rq);

/* ------------------------------------------------------------ authorization */

/* The one authorization point: the front end's handler for every served
 * operation (s3_ops_bind installs it). It reads what the operation's
 * action (its handler row, s3_handlers.h) is decided on — nothing, the
 * bucket (GetBucket), or the object with its bucket (one HeadObject with
 * with_bucket) —, asks s3_authz_decide, and answers AccessDenied (or
 * NoSuchBucket, or NoSuchKey when the caller may list the bucket) or runs
 * the handler, whose request starts with those records (rq->bkt, rq->obj).
 * Anonymous requests come through here too, with a null principal. */
void s3_rq_gate(struct s3_call *c);

/* The decision for rq's principal on action over the bucket b and the
 * object rec (NULL: missing, or a bucket action). */
enum s3_verdict s3_rq_decide(const struct s3_rq *rq, enum s3_authz_action action,
			     const Iolake__Meta__Bucket *b, const Iolake__Meta__ObjectRecord *rec);

/* The same for an object key other than the request's own (NULL for a
 * bucket action): DeleteObjects' keys, CopyObject's source. */
enum s3_verdict s3_rq_decide_key(const struct s3_rq *rq, enum s3_authz_action action,
				 const char *key, const Iolake__Meta__Bucket *b,
				 const Iolake__Meta__ObjectRecord *rec);

/* HeadObject of (bucket, key) with its bucket, authorized for action (a
 * second question a request asks: CopyObject's source). cb as
 * s3_rq_head's, e AccessDenied when refused, NoSuchBucket, or NoSuchKey
 * (only when the caller may list the bucket). 0, or after answering. */
int s3_rq_head_authz(struct s3_rq *rq, const char *bucket, const char *key,
		     enum s3_authz_action action, s3_rq_head_cb cb);

/* ------------------------------------------------------------ meta */

/* The trace of rq's request while its exchange is live, else NULL. */
struct gw_trace *s3_rq_trace(struct s3_rq *rq);

/* gw_map_target for a data-path call on behalf of rq: the PG's OSDs, and
 * rq's trace (its request id goes with every shard call). 0, -EAGAIN (no
 * map yet), -ERANGE. */
struct gw_data_target;
int s3_rq_target(struct s3_rq *rq, uint32_t pg, struct gw_data_target *t);

/* A meta read (method of enum meta_method) on behalf of rq. cb runs only
 * while the exchange is live, with e from s3_status_err(subj, ...) (the
 * answer's `status` field, when it has one) and resp (valid during cb;
 * NULL when the call itself failed). Returns 0, or the client's error
 * after answering ServiceUnavailable (no cb then). */
int s3_rq_call(struct s3_rq *rq, unsigned method, const ProtobufCMessage *req,
	       enum s3_subj subj, s3_rq_read_cb cb);

/* One op through Raft on behalf of rq (op is copied). cb runs even when
 * the exchange is over (rq->c NULL): a commit must still free what it
 * replaced; rq is freed after cb when nothing else is owed. e as above
 * (CONFLICT is the subject's error: test s3_rq_conflict first). Returns 0,
 * or the client's error after answering ServiceUnavailable. */
int s3_rq_submit(struct s3_rq *rq, const Iolake__Meta__Op *op, enum s3_subj subj,
		 s3_rq_done_cb cb);

/* The op's condition (if_generation, if_none_match, ...) did not hold. */
bool s3_rq_conflict(const Iolake__Meta__OpResult *res);

/* The op was applied (status OK; a subject may read other statuses as
 * success too, as DeleteObject reads NOT_FOUND, without anything having
 * changed). */
bool s3_rq_applied(const Iolake__Meta__OpResult *res);

/* The last submit failed in the meta client in a way after which meta may
 * still have applied the op (a retryable error: the answer was lost, not
 * the op); its outcome is unknown. */
bool s3_rq_in_doubt(const struct s3_rq *rq);

/* HeadObject of (bucket, key) on behalf of rq (a linearizable leader
 * read). cb, only while the exchange is live: S3E_OK and rec, a copy cb
 * owns (s3u_free_msg); S3E_NoSuchKey and NULL when there is no such
 * record (the bucket may be missing too: s3_rq_no_such_key tells); or the
 * error of a failed call (or InternalError: no memory for the copy).
 * Returns 0, or after answering ServiceUnavailable. */
int s3_rq_head(struct s3_rq *rq, const char *bucket, const char *key, s3_rq_head_cb cb);

/* Submit op, a change of the bucket record conditioned on the generation
 * it was decided on (rq->bkt's; an optimistic update). On CONFLICT the
 * bucket is read again into rq->bkt, action decided again on it (denied:
 * AccessDenied) and redo(rq) called to decide the change again and call
 * this again, at most S3_COMMIT_TRIES commits in all; another error is
 * answered; success answers status with no body. Returns as
 * s3_rq_submit. */
int s3_rq_bucket_change(struct s3_rq *rq, const Iolake__Meta__Op *op,
			enum s3_authz_action action, int status, s3_rq_fn redo);

/* ------------------------------------------------------------ versioning */

/* The bucket record the gate read, when it is rq's bucket; else NULL. */
const Iolake__Meta__Bucket *s3_rq_gate_bucket(const struct s3_rq *rq);

/* Stamp op (PutObject, CompleteMultipart, DeleteObject) with the state
 * of the bucket the gate read (rq->bkt), and a DeleteObject with the
 * time (a delete marker's mtime). Other ops are left alone. s3_rq_submit
 * does it for every op; handlers that build ops otherwise call it. */
void s3_rq_stamp_op(struct s3_rq *rq, Iolake__Meta__Op *op);

/* After a HeadObject (rq->head) answered NoSuchKey because the current
 * version is a delete marker: x-amz-delete-marker and its version id. */
void s3_rq_marker_headers(struct s3_rq *rq);

/* GetBucket of name on behalf of rq. cb, only while live: S3E_OK and b
 * (valid during cb; NULL if meta sent none), NoSuchBucket, or the error of
 * a failed call. Returns 0, or after answering ServiceUnavailable. */
int s3_rq_bucket(struct s3_rq *rq, const char *name, s3_rq_bucket_cb cb);
/* A fresh bucket record b (the caller's copy, now rq's) becomes rq->bkt;
 * when it may be cached (gw_bcache_cacheable with digest, the digest of
 * the GetBucket answer it was copied from) it is, and rq->bkt_digest is
 * digest, the digest a commit may carry; else 0. */
void s3_rq_keep_bucket(struct s3_rq *rq, Iolake__Meta__Bucket *b, uint64_t digest);

/* A record was not found: answer NoSuchKey when bucket exists, else
 * NoSuchBucket (one GetBucket). */
void s3_rq_no_such_key(struct s3_rq *rq, const char *bucket);

/* HeadObject without a request (h stays the caller's until cb; cb always
 * runs, with the arguments of s3_rq_head_cb). 0, or the meta client's
 * error (no cb then). */
int s3_head_start(struct meta_client *mc, struct s3_head *h, const char *bucket, const char *key,
		  s3_head_cb cb);

#endif
