/*
 * s3_authz.c — the authorization decision (rules and table in
 * s3_authz.h). Pure: no I/O; any thread.
 *
 * Owns the action table and the order of the checks. Does not read
 * records nor compile policies (s3_rq's gate does, with s3_policy_cache,
 * and hands them here); the policy language is s3_policy's.
 */
#include "gateway/s3_authz.h"

#include <string.h>

#include "gateway/s3_policy.h"

static const struct {
	const char *name;
	enum s3_authz_res res;
	enum s3_authz_rule rule;
	unsigned perm;
} actions[S3_ACT__COUNT] = {
	[S3_ACT_NONE] = { "s3:None", S3_RES_NONE, S3_RULE_USER, 0 },
#define S3_ACT_ROW(n, r, ru, p) [S3_ACT_##n] = { "s3:" #n, S3_RES_##r, S3_RULE_##ru, p },
	S3_ACTIONS(S3_ACT_ROW)
#undef S3_ACT_ROW
};

const char *s3_action_name(enum s3_authz_action a)
{
	return (unsigned)a < S3_ACT__COUNT ? actions[a].name : "s3:None";
}

enum s3_authz_res s3_action_res(enum s3_authz_action a)
{
	return (unsigned)a < S3_ACT__COUNT ? actions[a].res : S3_RES_NONE;
}

/* ------------------------------------------------------------ policy hook */

enum authz_policy_verdict { AUTHZ_POLICY_NONE, AUTHZ_POLICY_ALLOW, AUTHZ_POLICY_DENY };

static bool is(const char *user, const char *name)
{
	return user && name && strcmp(user, name) == 0;
}

/*
 * POLICY HOOK. The bucket policy's verdict on the request (s3_policy_eval
 * on the principal, AWS's action name, the key and the request's
 * condition keys): an explicit Deny refuses whatever the ACLs say, an
 * Allow allows, no statement matching leaves it to the ACLs. Admins are
 * decided before this hook: a policy cannot lock them out.
 * RestrictPublicBuckets: a public policy's Allow counts only for the
 * bucket owner (AWS: "only AWS service principals and authorized users
 * within the bucket owner's account"); its Denies still count for all.
 * A stored policy that does not parse denies (fail closed).
 */
static enum authz_policy_verdict authz_policy(const struct s3_authz_req *q)
{
	if (q->policy_broken)
		return AUTHZ_POLICY_DENY;
	if (!q->policy)
		return AUTHZ_POLICY_NONE;
	const struct s3_principal *p = q->who;
	char id[S3_ID_HEX + 1];
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < S3_ID_LEN; i++) {
		id[2 * i] = hex[p->id[i] >> 4];
		id[2 * i + 1] = hex[p->id[i] & 15];
	}
	id[S3_ID_HEX] = '\0';
	bool owner = is(p->user, q->bucket.owner);
	struct s3_policy_req r = {
		.principal = p->user,
		.is_bucket_owner = owner,
		.action = s3_action_name(q->action),
		.key = q->key,   /* NULL for bucket actions (s3_authz_req's contract) */
		.ctx = q->ctx,
		.n_ctx = q->n_ctx,
		.principal_id = p->user ? id : NULL,
	};
	switch (s3_policy_eval(q->policy, &r)) {
	case S3_POLICY_DENY:
		return AUTHZ_POLICY_DENY;
	case S3_POLICY_ALLOW:
		if (q->pab.restrict_public_buckets && q->policy_public && !owner)
			return AUTHZ_POLICY_NONE;
		return AUTHZ_POLICY_ALLOW;
	default:
		return AUTHZ_POLICY_NONE;
	}
}

/* ------------------------------------------------------------ grants */

enum s3_grant_level s3_authz_grant_needed(enum s3_authz_action a)
{
	switch (a) {
	case S3_ACT_ListBucket:
	case S3_ACT_ListBucketMultipartUploads:
	case S3_ACT_GetBucketLocation:
	case S3_ACT_GetObject:
	case S3_ACT_GetObjectAttributes:
	case S3_ACT_GetObjectTagging:
		return S3_GRANT_READ;
	case S3_ACT_PutObject:
	case S3_ACT_DeleteObject:
	case S3_ACT_AbortMultipartUpload:
	case S3_ACT_ListMultipartUploadParts:
	case S3_ACT_PutObjectTagging:
	case S3_ACT_DeleteObjectTagging:
		return S3_GRANT_WRITE;
	default:
		return S3_GRANT_FULL;
	}
}

/* Whether who's grant on this bucket (the same bucket: name and
 * created_ms) allows the action. */
static bool grant_allows(const struct s3_authz_req *q)
{
	const struct s3_principal *p = q->who;
	if (!p->user || !q->bucket_name)
		return false;
	for (size_t i = 0; i < p->n_grants; i++) {
		const struct s3_user_grant *g = &p->grants[i];
		if (strcmp(g->bucket, q->bucket_name) == 0 &&
		    g->bucket_created_ms == q->bucket_created_ms)
			return g->level >= s3_authz_grant_needed(q->action);
	}
	return false;
}

/* ------------------------------------------------------------ decision */

/* The permissions an ACL gives who on a resource owned by owner (whose
 * bucket belongs to bucket_owner), the owner's implicit READ_ACP and
 * WRITE_ACP included; IgnorePublicAcls drops the public grants. */
static unsigned acl_perms(const struct s3_authz_req *q, const struct s3_authz_rec *r)
{
	const struct s3_principal *p = q->who;
	unsigned bits = is(p->user, r->owner) ? S3_PERM_READ_ACP | S3_PERM_WRITE_ACP : 0;
	struct s3_acl stored, exp;
	const struct s3_acl *a = r->acl;
	if (!a) {
		s3_acl_canned(&stored, S3_CANNED_PRIVATE);
		a = &stored;
	}
	uint8_t oid[S3_ID_LEN], bid[S3_ID_LEN];
	s3_acl_user_id(r->owner, oid);
	s3_acl_user_id(q->bucket.owner, bid);
	s3_acl_expand(a, oid, bid, &exp);
	if (q->pab.ignore_public_acls)
		s3_pab_drop_public(&exp);
	return bits | s3_acl_perms(&exp, p);
}

static bool policy_admin_action(enum s3_authz_action a)
{
	return a == S3_ACT_GetBucketPolicy || a == S3_ACT_PutBucketPolicy ||
	       a == S3_ACT_DeleteBucketPolicy;
}

enum s3_verdict s3_authz_decide(const struct s3_authz_req *q)
{
	const struct s3_principal *p = q->who;
	if ((unsigned)q->action >= S3_ACT__COUNT || q->action == S3_ACT_NONE)
		return S3_DENY;
	if (p->admin && p->user)
		return S3_ALLOW;
	enum s3_authz_rule rule = actions[q->action].rule;
	unsigned need = actions[q->action].perm;
	bool enforced = q->ownership == S3_OWN_ENFORCED;
	bool bucket_owner = is(p->user, q->bucket.owner);
	if (rule == S3_RULE_USER)
		return p->user ? S3_ALLOW : S3_DENY;
	if (bucket_owner && policy_admin_action(q->action))
		return S3_ALLOW;
	enum authz_policy_verdict pv = authz_policy(q);
	if (pv == AUTHZ_POLICY_DENY)
		return S3_DENY;
	if (actions[q->action].res == S3_RES_OBJECT && !q->object) {
		/* Missing object: may the caller learn so? (s3:ListBucket) */
		struct s3_authz_req lq = *q;
		lq.action = S3_ACT_ListBucket;
		lq.key = NULL;   /* the request's condition keys stay (no s3:prefix in them) */
		return s3_authz_decide(&lq);
	}
	if (pv == AUTHZ_POLICY_ALLOW || grant_allows(q))
		return S3_ALLOW;
	switch (rule) {
	case S3_RULE_BUCKET_OWNER:
		return bucket_owner ? S3_ALLOW : S3_DENY;
	case S3_RULE_OBJECT_OWNER:
		if (enforced)
			return bucket_owner ? S3_ALLOW : S3_DENY;
		return is(p->user, q->object->owner) ? S3_ALLOW : S3_DENY;
	case S3_RULE_BUCKET_ACL:
		if (enforced)
			return bucket_owner ? S3_ALLOW : S3_DENY;
		return (acl_perms(q, &q->bucket) & need) == need ? S3_ALLOW : S3_DENY;
	case S3_RULE_OBJECT_ACL:
		if (enforced)
			return bucket_owner ? S3_ALLOW : S3_DENY;
		return (acl_perms(q, q->object) & need) == need ? S3_ALLOW : S3_DENY;
	default:
		return S3_DENY;
	}
}

const char *s3_authz_object_owner(enum s3_ownership own, const char *bucket_owner,
				  const char *writer, enum s3_canned canned)
{
	if (own == S3_OWN_ENFORCED ||
	    (own == S3_OWN_PREFERRED && canned == S3_CANNED_BUCKET_OWNER_FULL_CONTROL))
		return bucket_owner;
	return writer;
}
