/*
 * s3_gate.c — the half of the S3 core (contracts in s3_rq.h) that decides:
 * the gate every request passes (authorization, once, on the records its
 * action needs: the bucket, from the per-loop bucket cache where a PUT
 * may use it, and the object when the action is decided on it), the
 * decision helpers handlers call for a second key, and the stamps an op
 * carries to meta (the bucket's versioning state, object lock's time and
 * governance bypass).
 *
 * Owns nothing past a request: the gate's own s3_rq is freed when the
 * handler takes over. Meta calls go through s3_rq.c.
 *
 * Thread: the gateway loop; no blocking call.
 */
#include "gateway/s3_rq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/log.h"
#include "gateway/gw_bcache.h"
#include "gateway/gw_data.h"
#include "gateway/gw_map.h"
#include "gateway/s3_cors_hdr.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_pab.h"
#include "gateway/s3_policy_cache.h"
#include "gateway/s3_policy_ctx.h"
#include "gateway/s3_util.h"

/* ------------------------------------------------------------ authorization */

/* A record's ACL for the decision; an unreadable one is private. */
static const struct s3_acl *acl_of(const Iolake__Meta__Acl *m, struct s3_acl *a)
{
	if (!m)
		return NULL;
	if (!s3_acl_from_msg(m, a))
		LOG_WARN("s3: a stored ACL does not decode; read as private", "grants=%zu", m->n_grants);
	return a;
}

/* The request's condition keys (only built for a bucket with a policy). */
static void build_ctx(const struct s3_rq *rq, enum s3_authz_action action,
		      struct s3_policy_ctx *ctx)
{
	struct s3_policy_ctx_in in = { .user = rq->user, .action = action,
				       .now_ms = s3u_wall_ms() };
	if (rq->c) {
		struct http_stream *st = s3_call_stream(rq->c);
		in.peer_addr = http_stream_peer_addr(st);
		in.tls = http_stream_is_tls(st);
		const struct s3_req *r = s3_call_req(rq->c);
		if (action == S3_ACT_ListBucket &&
		    (r->op == S3_OP_ListObjects || r->op == S3_OP_ListObjectsV2)) {
			in.prefix = s3u_qval(r, "prefix");
			in.delimiter = s3u_qval(r, "delimiter");
			in.max_keys = s3u_qval(r, "max-keys");
		}
		const struct sigv4_header *h = s3u_hdr(rq->c, "x-amz-acl");
		if (h) {
			in.x_amz_acl = h->value;
			in.x_amz_acl_len = h->value_len;
		}
	}
	s3_policy_ctx_build(ctx, &in);
}

/* The decision; a refusal counted in iolake_gw_access_denied_total when
 * count (not for a cached record's, which is decided again fresh). */
static enum s3_verdict decide_key(const struct s3_rq *rq, enum s3_authz_action action,
				  const char *key, const Iolake__Meta__Bucket *b,
				  const Iolake__Meta__ObjectRecord *rec, bool count)
{
	struct s3_acl *acls = rq->o->acl_scratch;
	struct s3_authz_req q = { .who = &rq->who, .action = action, .bucket_name = rq->bucket,
				  .key = key };
	struct s3_authz_rec orec;
	struct s3_policy_ctx ctx;
	enum s3_verdict v = S3_DENY;
	if (b) {
		q.bucket_name = b->name;
		q.bucket.owner = b->owner;
		q.bucket_created_ms = b->created_ms;
		q.bucket.acl = acl_of(b->acl, &acls[0]);
		q.ownership = (enum s3_ownership)b->object_ownership;
		s3_pab_from_msg(b->public_access_block, &q.pab);
		if (b->policy && b->policy[0]) {
			const struct s3_policy_entry *pe = s3_policy_cache_get(
				rq->o->policies, b->name, b->generation, b->policy, strlen(b->policy));
			if (!pe)
				goto out;   /* no memory: refuse */
			q.policy = pe->policy;
			q.policy_public = pe->is_public;
			q.policy_broken = pe->broken;
			build_ctx(rq, action, &ctx);
			q.ctx = ctx.kv;
			q.n_ctx = ctx.n;
		}
	}
	if (rec) {
		q.key = rec->key;
		orec.owner = rec->owner;
		orec.acl = acl_of(rec->acl, &acls[1]);
		q.object = &orec;
	}
	v = s3_authz_decide(&q);
out:
	if (v == S3_DENY && count)
		metrics_counter_inc(rq->o->m_denied);
	return v;
}

enum s3_verdict s3_rq_decide_key(const struct s3_rq *rq, enum s3_authz_action action,
				 const char *key, const Iolake__Meta__Bucket *b,
				 const Iolake__Meta__ObjectRecord *rec)
{
	return decide_key(rq, action, key, b, rec, true);
}

enum s3_verdict s3_rq_decide(const struct s3_rq *rq, enum s3_authz_action action,
			     const Iolake__Meta__Bucket *b, const Iolake__Meta__ObjectRecord *rec)
{
	return s3_rq_decide_key(rq, action, rq->key, b, rec);
}

/* What a HeadObject with its bucket says, decided for action: S3E_OK, or
 * the error to answer (rec then freed and *recp NULL). */
static enum s3_err head_verdict(struct s3_rq *rq, enum s3_authz_action action, const char *key,
				enum s3_err e, Iolake__Meta__ObjectRecord **recp)
{
	if (e != S3E_OK && e != S3E_NoSuchKey)
		return e;
	if (!rq->head.bkt)
		return S3E_NoSuchBucket;
	if (s3_rq_decide_key(rq, action, key, rq->head.bkt, *recp) == S3_DENY)
		e = S3E_AccessDenied;
	if (e) {
		s3u_free_msg(*recp);
		*recp = NULL;
	}
	return e;
}

static void on_head_authz(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	e = head_verdict(rq, rq->authz_action, rq->authz_key, e, &rec);
	free(rq->authz_key);
	rq->authz_key = NULL;
	s3u_free_msg(rq->head.bkt);
	rq->head.bkt = NULL;
	rq->authz_cb(rq, e, rec);
}

int s3_rq_head_authz(struct s3_rq *rq, const char *bucket, const char *key,
		     enum s3_authz_action action, s3_rq_head_cb cb)
{
	rq->authz_cb = cb;
	rq->authz_action = action;
	free(rq->authz_key);
	if (!(rq->authz_key = strdup(key))) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return -ENOMEM;
	}
	return s3_rq_head_start(rq, bucket, key, true, on_head_authz);
}

/* The gate's own request: the base, and the row it opens the way to. */
struct gate {
	struct s3_rq rq;
	const struct s3_handler *h;
	bool anonymous;
	uint64_t gen;   /* gw_bcache_gen() before the bucket was read */
};

/* An anonymous request meta answered NoSuchBucket: the next ones at
 * this name are answered from the cache for its TTL (gw_bcache.h), so a
 * flood at a made-up bucket reads meta once per TTL, not once per
 * request the address limit lets through. */
static void note_absent(struct gate *g, enum s3_err e)
{
	if (e == S3E_NoSuchBucket && g->anonymous)
		gw_bcache_put_absent(g->rq.o->bcache, g->rq.bucket, loop_now_ms(), g->gen);
}

/* Allowed: run the handler with the records the decision was made on.
 * The gate's request steps aside first (the handler's s3_rq_new becomes
 * the call's user and takes the records), then is freed. */
static void gate_pass(struct gate *g)
{
	struct s3_rq *rq = &g->rq;
	struct s3_ops *o = rq->o;
	struct s3_call *c = rq->c;
	s3_call_set_user(c, NULL);
	s3_call_on_finish(c, NULL);
	rq->c = NULL;
	o->handoff = true;
	o->handoff_bkt = rq->bkt;
	o->handoff_obj = rq->obj;
	o->handoff_bkt_digest = rq->bkt_digest;
	rq->bkt = NULL;
	rq->obj = NULL;
	/* The body was held while we read; the handler takes it from here
	 * (resuming is deferred to the loop: it may pause again first). */
	if (s3_call_http(c)->has_body)
		http_resume(s3_call_stream(c));
	g->h->fn(c);
	if (o->handoff) {   /* the handler made no request (it answered) */
		s3u_free_msg(o->handoff_bkt);
		s3u_free_msg(o->handoff_obj);
		o->handoff_bkt = NULL;
		o->handoff_obj = NULL;
		o->handoff = false;
	}
	s3_rq_maybe_free(rq);
}

/* DeleteObjects on a bucket with a policy is decided key by key (a
 * policy may allow s3:DeleteObject on some prefixes only, or deny it on
 * some): the handler asks s3_rq_decide_key for each, and answers
 * AccessDenied in the key's <Error>, as S3. Without a policy the
 * bucket's ACL decides for every key at once, here. */
static bool per_key(const struct s3_rq *rq, const Iolake__Meta__Bucket *b)
{
	return rq->c && s3_call_req(rq->c)->op == S3_OP_DeleteObjects && b->policy && b->policy[0];
}

/* Whether the gate of this request may use the bucket cache: a
 * PutObject, the one commit that checks the digest (gw_bcache.h). */
static bool gate_caches(const struct s3_rq *rq)
{
	return rq->o->bcache && s3_call_req(rq->c)->op == S3_OP_PutObject;
}

/* Decide on b (the gate's own copy, or NULL with e) and pass or answer. */
static void gate_bucket_decide(struct gate *g, enum s3_err e, Iolake__Meta__Bucket *b)
{
	struct s3_rq *rq = &g->rq;
	s3_cors_headers(rq->c, b); /* on the answer, whatever it is */
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (!e && s3_rq_decide(rq, g->h->action, b, NULL) == S3_DENY && !per_key(rq, b))
		e = S3E_AccessDenied;
	if (e) {
		s3u_free_msg(b);
		s3_rq_fail(rq, e, NULL);
		return;
	}
	rq->bkt = b;
	gate_pass(g);
}

static void on_gate_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	struct gate *g = container_of(rq, struct gate, rq);
	note_absent(g, e);
	Iolake__Meta__Bucket *copy = NULL;
	if (!e && b && !(copy = (Iolake__Meta__Bucket *)s3u_copy_msg(&b->base)))
		e = S3E_InternalError;
	if (copy && gate_caches(rq) && gw_bcache_cacheable(copy, rq->bkt_read_digest)) {
		gw_bcache_put(rq->o->bcache, copy, rq->bkt_read_digest, loop_now_ms());
		rq->bkt_digest = rq->bkt_read_digest;
	}
	gate_bucket_decide(g, e, copy);
}

/* The PUT gate from the cache: true when it ran (passed or answered). */
static bool gate_from_cache(struct gate *g)
{
	struct s3_rq *rq = &g->rq;
	uint64_t digest = 0;
	Iolake__Meta__Bucket *b = gw_bcache_get(rq->o->bcache, rq->bucket, loop_now_ms(), &digest);
	if (!b)
		return false;
	/* Only an allow is taken from the cache (the commit checks it); a
	 * refusal is decided again on the record meta holds now. */
	if (decide_key(rq, g->h->action, rq->key, b, NULL, false) == S3_DENY) {
		s3u_free_msg(b);
		return false;
	}
	rq->bkt_digest = digest;
	s3_cors_headers(rq->c, b);
	rq->bkt = b;
	gate_pass(g);
	return true;
}

static void on_gate_object(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct gate *g = container_of(rq, struct gate, rq);
	note_absent(g, e);
	s3_cors_headers(rq->c, rq->head.bkt); /* on the answer, whatever it is */
	e = head_verdict(rq, g->h->action, rq->key, e, &rec);
	rq->bkt = rq->head.bkt;
	rq->head.bkt = NULL;
	if (e == S3E_NoSuchKey && rq->bkt && s3u_qval(s3_call_req(rq->c), "versionId")) {
		/* Versioning: no current version (a delete marker), the
		 * handler reads the one named. Decided as on a private object
		 * of the bucket owner: never the s3:ListBucket a missing key
		 * is decided by, which would open old versions to readers of
		 * the listing. */
		Iolake__Meta__ObjectRecord priv = IOLAKE__META__OBJECT_RECORD__INIT;
		priv.key = rq->key;
		priv.owner = rq->bkt->owner;
		e = s3_rq_decide(rq, g->h->action, rq->bkt, &priv) == S3_DENY ? S3E_AccessDenied
										 : S3E_OK;
	}
	if (e == S3E_NoSuchKey)
		s3_rq_marker_headers(rq);   /* deleted: its current version is a marker */
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	rq->obj = rec;
	gate_pass(g);
}

void s3_rq_gate(struct s3_call *c)
{
	struct s3_ops *o = s3_call_ctx(c);
	const struct s3_req *r = s3_call_req(c);
	const struct s3_handler *h = o->rows[r->op];
	if (!h) {
		s3_call_error(c, S3E_NotImplemented, NULL);
		return;
	}
	enum s3_authz_res res = s3_action_res(h->action);
	if (res == S3_RES_NONE) {
		/* Decided on the caller alone (ListBuckets, CreateBucket). */
		const struct s3_auth_result *a = s3_call_auth(c);
		struct s3_principal p;
		s3_principal_init(&p, a->anonymous ? NULL : a->user, a->admin);
		struct s3_authz_req q = { .who = &p, .action = h->action };
		if (s3_authz_decide(&q) == S3_DENY) {
			metrics_counter_inc(o->m_denied);
			metrics_counter_inc(o->m_req[r->op]);
			s3_call_error(c, S3E_AccessDenied, NULL);
			return;
		}
		h->fn(c);
		return;
	}
	struct gate *g = s3_rq_new(c, sizeof(*g));
	if (!g)
		return;
	g->h = h;
	g->anonymous = s3_call_auth(c)->anonymous;
	g->gen = gw_bcache_gen();
	/* Nothing of a body is read before the decision. */
	if (s3_call_http(c)->has_body)
		http_pause(s3_call_stream(c));
	if (g->anonymous && gw_bcache_absent(o->bcache, g->rq.bucket, loop_now_ms())) {
		s3_rq_fail(&g->rq, S3E_NoSuchBucket, NULL);
		return;
	}
	if (res == S3_RES_BUCKET && gate_caches(&g->rq) && gate_from_cache(g))
		return;
	if (res == S3_RES_BUCKET)
		s3_rq_bucket(&g->rq, g->rq.bucket, on_gate_bucket);
	else {
		/* A read decides on ACL and policy, never on quota. */
		g->rq.head.no_usage = h->action == S3_ACT_GetObject;
		s3_rq_head_start(&g->rq, g->rq.bucket, g->rq.key, true, on_gate_object);
	}
}

/* ------------------------------------------------------------ versioning stamps */

const Iolake__Meta__Bucket *s3_rq_gate_bucket(const struct s3_rq *rq)
{
	return rq->bkt && !strcmp(rq->bkt->name, rq->bucket) ? rq->bkt : NULL;
}

/* Object lock (issue 17): the ops that could remove or shorten the hold
 * of a version carry the time meta checks the hold at, and whether
 * GOVERNANCE retention is lifted for them: the caller sent
 * x-amz-bypass-governance-retention: true AND may
 * s3:BypassGovernanceRetention on the key. meta/state_lock.c decides. */
static void stamp_lock(struct s3_rq *rq, Iolake__Meta__Op *op)
{
	const char *key = NULL;
	switch (op->body_case) {
	case IOLAKE__META__OP__BODY_PUT_OBJECT:
		key = op->put_object->record ? op->put_object->record->key : NULL;
		break;
	case IOLAKE__META__OP__BODY_COMPLETE_MULTIPART:
		key = op->complete_multipart->key;
		break;
	case IOLAKE__META__OP__BODY_DELETE_OBJECT:
		key = op->delete_object->key;
		break;
	case IOLAKE__META__OP__BODY_SET_OBJECT_RETENTION:
		key = op->set_object_retention->key;
		break;
	default:
		return;
	}
	if (!op->time_ms)
		op->time_ms = s3u_wall_ms();
	const Iolake__Meta__Bucket *b = s3_rq_gate_bucket(rq);
	char v[8];
	op->bypass_governance =
		rq->c && b && key &&
		s3u_hdr_str(rq->c, "x-amz-bypass-governance-retention", v, sizeof(v)) &&
		!strcasecmp(v, "true") &&
		s3_rq_decide_key(rq, S3_ACT_BypassGovernanceRetention, key, b, NULL) == S3_ALLOW;
}

void s3_rq_stamp_op(struct s3_rq *rq, Iolake__Meta__Op *op)
{
	const Iolake__Meta__Bucket *b = s3_rq_gate_bucket(rq);
	switch (op->body_case) {
	case IOLAKE__META__OP__BODY_PUT_OBJECT:
	case IOLAKE__META__OP__BODY_COMPLETE_MULTIPART:
		if (b && !op->versioning)
			op->versioning = b->versioning;
		break;
	case IOLAKE__META__OP__BODY_DELETE_OBJECT:
		if (b && !op->versioning)
			op->versioning = b->versioning;
		op->time_ms = s3u_wall_ms();
		break;
	default:
		break;
	}
	stamp_lock(rq, op);
}

void s3_rq_marker_headers(struct s3_rq *rq)
{
	if (!rq->c || !rq->head.marker)
		return;
	struct http_stream *s = s3_call_stream(rq->c);
	http_add_header(s, "x-amz-delete-marker", "true");
	http_add_header(s, "x-amz-version-id", rq->head.marker_vid[0] ? rq->head.marker_vid : "null");
}
