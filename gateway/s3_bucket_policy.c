/*
 * s3_bucket_policy.c — a bucket's policy and PublicAccessBlock as
 * resources: Put/Get/DeleteBucketPolicy, GetBucketPolicyStatus,
 * Put/Get/DeletePublicAccessBlock. Who may was decided at the gate (the
 * bucket owner, an admin, or whom the policy allows; the owner may always
 * manage the policy); what they do is kept in the bucket record
 * (Bucket.policy, Bucket.public_access_block) through SetBucketAccess.
 *
 * PutBucketPolicy parses the document with the policy engine
 * (s3_policy: MalformedPolicy with its message, nothing stored), refuses
 * a policy naming a user that does not exist (one ListUsers, only when
 * it names users: MalformedPolicy "Invalid principal in policy", as AWS),
 * a public one under BlockPublicPolicy (AccessDenied), and stores the
 * document as sent — or, when the text is over 20 KiB only because of its
 * whitespace (the engine counts without it, as AWS), without the
 * whitespace between tokens, so the stored form stays within meta's
 * 20 KiB. A change is committed conditioned on the bucket's generation it
 * was decided on: on CONFLICT the bucket is read again, the request
 * decided again (and BlockPublicPolicy checked again), and the change
 * retried.
 *
 * Owns each request's state. Does not evaluate policies (s3_authz with
 * s3_policy_cache does, per request) nor block public ACLs (s3_access).
 * Thread: the gateway loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_body.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_pab.h"
#include "gateway/s3_policy.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"

struct pol_rq {
	struct s3_rq rq;
	struct s3_body body;
	enum s3_authz_action action;  /* decided again after a re-read */
	/* The change, kept across retries. */
	bool set_policy;
	char *policy;                 /* NUL-terminated; "" deletes */
	bool policy_public;
	struct s3_policy *parsed;     /* until its users are checked */
	bool set_pab;
	bool has_pab;                 /* false: delete the configuration */
	struct s3_pab pab;
	int status;                   /* the success answer: 200 or 204 */
};

static struct pol_rq *pol_of(struct s3_rq *rq)
{
	return container_of(rq, struct pol_rq, rq);
}

static void pol_fini(struct s3_rq *rq)
{
	struct pol_rq *p = pol_of(rq);
	s3_body_free(&p->body);
	free(p->policy);
	s3_policy_free(p->parsed);
}

static struct pol_rq *pol_new(struct s3_call *c, enum s3_authz_action action, int status)
{
	struct pol_rq *p = s3_rq_new(c, sizeof(*p));
	if (!p)
		return NULL;
	p->rq.fini = pol_fini;
	p->action = action;
	p->status = status;
	return p;
}

static bool has_policy(const Iolake__Meta__Bucket *b)
{
	return b->policy && b->policy[0];
}

/* ------------------------------------------------------------ commit */

static void pol_commit(struct pol_rq *p);

static void pol_redo(struct s3_rq *rq)
{
	pol_commit(pol_of(rq));
}

/* The change, checked against the bucket as last read (rq->bkt). */
static void pol_commit(struct pol_rq *p)
{
	struct s3_rq *rq = &p->rq;
	const Iolake__Meta__Bucket *b = rq->bkt;
	if (p->set_policy && p->policy[0] && p->policy_public) {
		struct s3_pab cur;
		s3_pab_from_msg(b->public_access_block, &cur);
		if (cur.block_public_policy) {
			s3_rq_fail(rq, S3E_AccessDenied,
				   "Access Denied: BlockPublicPolicy refuses a public bucket policy");
			return;
		}
	}
	Iolake__Meta__SetBucketAccess sba = IOLAKE__META__SET_BUCKET_ACCESS__INIT;
	Iolake__Meta__PublicAccessBlock pm;
	sba.name = rq->bucket;
	sba.conditional = true;
	sba.if_generation = b->generation;
	if (p->set_policy) {
		sba.set_policy = true;
		sba.policy = p->policy;
	}
	if (p->set_pab) {
		sba.set_public_access_block = true;
		if (p->has_pab) {
			s3_pab_to_msg(&p->pab, &pm);
			sba.public_access_block = &pm;
		}
	}
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_BUCKET_ACCESS;
	op.set_bucket_access = &sba;
	s3_rq_bucket_change(rq, &op, p->action, p->status, pol_redo);
}

/* ------------------------------------------------------------ policy */

/* doc without the whitespace between JSON tokens (strings kept as they
 * are), NUL-terminated; NULL without memory. doc is valid JSON. */
static char *compact(const char *doc, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	if (!out)
		return NULL;
	bool in_str = false, esc = false;
	for (size_t i = 0; i < len; i++) {
		char ch = doc[i];
		if (in_str) {
			*o++ = ch;
			if (esc)
				esc = false;
			else if (ch == '\\')
				esc = true;
			else if (ch == '"')
				in_str = false;
		} else if (ch == '"') {
			in_str = true;
			*o++ = ch;
		} else if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
			*o++ = ch;
		}
	}
	*o = '\0';
	return out;
}

static int count_user(const char *user, void *arg)
{
	(void)user, (void)arg;
	return 1;
}

/* 1 (stop) when user is not among the listed users. */
static int user_missing(const char *user, void *arg)
{
	const Iolake__Meta__ListUsersResponse *r = arg;
	for (size_t i = 0; i < r->n_users; i++)
		if (r->users[i]->name && strcmp(r->users[i]->name, user) == 0)
			return 0;
	return 1;
}

static void on_users(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct pol_rq *p = pol_of(rq);
	if (e || !resp) {
		s3_rq_fail(rq, e ? e : S3E_ServiceUnavailable, NULL);
		return;
	}
	if (s3_policy_users(p->parsed, user_missing, (void *)resp)) {
		s3_rq_fail(rq, S3E_MalformedPolicy, "Invalid principal in policy");
		return;
	}
	pol_commit(p);
}

static void on_policy_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct pol_rq *p = pol_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	const char *doc = (const char *)p->body.buf;
	size_t len = p->body.len;
	struct s3_policy *pol = NULL;
	char err[256];
	int rc = s3_policy_parse(doc, len, rq->bucket, &pol, err, sizeof(err));
	if (rc == -ENOMEM) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	if (rc) {
		s3_rq_fail(rq, rc == -E2BIG ? S3E_PolicyTooLarge : S3E_MalformedPolicy, err);
		return;
	}
	p->policy_public = s3_policy_is_public(pol);
	p->parsed = pol;
	if (memchr(doc, '\0', len)) {   /* the engine refuses NULs; be sure */
		s3_rq_fail(rq, S3E_MalformedPolicy, "This policy contains invalid Json");
		return;
	}
	if (len <= S3_POLICY_MAX_BYTES) {
		p->policy = malloc(len + 1);
		if (p->policy) {
			memcpy(p->policy, doc, len);
			p->policy[len] = '\0';
		}
	} else {
		p->policy = compact(doc, len);
	}
	if (!p->policy) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	if (strlen(p->policy) > S3_POLICY_MAX_BYTES) {
		s3_rq_fail(rq, S3E_PolicyTooLarge, NULL);
		return;
	}
	p->set_policy = true;
	if (s3_policy_users(p->parsed, count_user, NULL) == 0) {
		pol_commit(p);   /* names no user */
		return;
	}
	/* The users it names must exist, as AWS's "Invalid principal in
	 * policy": one ListUsers, only for such policies. (Meta lists at most
	 * META_LIST_USERS_MAX = 10,000 users: past that a real user may be
	 * refused; a lookup by name would need a new meta read.) */
	Iolake__Meta__ListUsersRequest req = IOLAKE__META__LIST_USERS_REQUEST__INIT;
	s3_rq_call(rq, META_M_LIST_USERS, &req.base, S3_SUBJ_NONE, on_users);
}

static void on_policy_sent(struct http_stream *s, int status, void *arg)
{
	(void)s, (void)status, (void)arg; /* the record lives until finish */
}

static void op_policy(struct s3_call *c)
{
	enum s3_op op = s3_call_req(c)->op;
	struct pol_rq *p = pol_new(c, op == S3_OP_GetBucketPolicy   ? S3_ACT_GetBucketPolicy
				      : op == S3_OP_PutBucketPolicy ? S3_ACT_PutBucketPolicy
								    : S3_ACT_DeleteBucketPolicy,
				   204);
	if (!p)
		return;
	const Iolake__Meta__Bucket *b = p->rq.bkt;
	if (op == S3_OP_GetBucketPolicy) {
		if (!has_policy(b)) {
			s3_rq_fail(&p->rq, S3E_NoSuchBucketPolicy, NULL);
			return;
		}
		struct http_stream *s = s3_call_stream(c);
		http_add_header(s, "Content-Type", "application/json");
		http_respond(s, 200, b->policy, strlen(b->policy), on_policy_sent, NULL);
		return;
	}
	if (op == S3_OP_DeleteBucketPolicy) {
		if (!has_policy(b)) {   /* nothing to delete: S3 answers 204 too */
			http_respond(s3_call_stream(c), 204, NULL, 0, NULL, NULL);
			return;
		}
		if (!(p->policy = strdup(""))) {
			s3_rq_fail(&p->rq, S3E_InternalError, NULL);
			return;
		}
		p->set_policy = true;
		pol_commit(p);
		return;
	}
	enum s3_err e = s3_body_read(&p->rq, &p->body, S3_POLICY_MAX_INPUT_BYTES, on_policy_body);
	if (e)
		s3_rq_fail(&p->rq, e == S3E_MaxMessageLengthExceeded ? S3E_PolicyTooLarge : e, NULL);
}

static void op_policy_status(struct s3_call *c)
{
	struct pol_rq *p = pol_new(c, S3_ACT_GetBucketPolicyStatus, 200);
	if (!p)
		return;
	const Iolake__Meta__Bucket *b = p->rq.bkt;
	if (!has_policy(b)) {
		s3_rq_fail(&p->rq, S3E_NoSuchBucketPolicy, NULL);
		return;
	}
	struct s3_policy *pol = NULL;
	char err[256];
	int rc = s3_policy_parse(b->policy, strlen(b->policy), b->name, &pol, err, sizeof(err));
	if (rc) {
		s3_rq_fail(&p->rq, S3E_InternalError, "The stored bucket policy does not parse");
		return;
	}
	bool pub = s3_policy_is_public(pol);
	s3_policy_free(pol);
	struct xml_w *w = s3_call_xml(c);
	xml_decl(w);
	xml_open_ns(w, "PolicyStatus", S3_XMLNS);
	xml_elem(w, "IsPublic", pub ? "true" : "false");
	xml_close(w);
	s3_call_send_xml(c, 200);
}

/* ------------------------------------------------------------ PublicAccessBlock */

static void on_pab_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct pol_rq *p = pol_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	enum s3_err e = s3_pab_from_xml((const char *)p->body.buf, p->body.len, &p->pab);
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	p->set_pab = true;
	p->has_pab = true;
	pol_commit(p);
}

static void op_pab(struct s3_call *c)
{
	enum s3_op op = s3_call_req(c)->op;
	struct pol_rq *p = pol_new(c, op == S3_OP_GetPublicAccessBlock ? S3_ACT_GetBucketPublicAccessBlock
								     : S3_ACT_PutBucketPublicAccessBlock,
				   op == S3_OP_DeletePublicAccessBlock ? 204 : 200);
	if (!p)
		return;
	const Iolake__Meta__Bucket *b = p->rq.bkt;
	if (op == S3_OP_GetPublicAccessBlock) {
		if (!b->public_access_block) {
			s3_rq_fail(&p->rq, S3E_NoSuchPublicAccessBlockConfiguration, NULL);
			return;
		}
		struct s3_pab cur;
		s3_pab_from_msg(b->public_access_block, &cur);
		s3_pab_render(s3_call_xml(c), &cur);
		s3_call_send_xml(c, 200);
		return;
	}
	if (op == S3_OP_DeletePublicAccessBlock) {
		if (!b->public_access_block) {
			http_respond(s3_call_stream(c), 204, NULL, 0, NULL, NULL);
			return;
		}
		p->set_pab = true;
		pol_commit(p);
		return;
	}
	enum s3_err e = s3_body_read(&p->rq, &p->body, S3_PAB_XML_MAX, on_pab_body);
	if (e)
		s3_rq_fail(&p->rq, e, NULL);
}

/* DeletePublicAccessBlock is s3:PutBucketPublicAccessBlock (AWS). */
const struct s3_handler s3_bucket_policy_handlers[] = {
	{ S3_OP_GetBucketPolicy, op_policy, S3_ACT_GetBucketPolicy },
	{ S3_OP_PutBucketPolicy, op_policy, S3_ACT_PutBucketPolicy },
	{ S3_OP_DeleteBucketPolicy, op_policy, S3_ACT_DeleteBucketPolicy },
	{ S3_OP_GetBucketPolicyStatus, op_policy_status, S3_ACT_GetBucketPolicyStatus },
	{ S3_OP_GetPublicAccessBlock, op_pab, S3_ACT_GetBucketPublicAccessBlock },
	{ S3_OP_PutPublicAccessBlock, op_pab, S3_ACT_PutBucketPublicAccessBlock },
	{ S3_OP_DeletePublicAccessBlock, op_pab, S3_ACT_PutBucketPublicAccessBlock },
	S3_HANDLERS_END,
};
