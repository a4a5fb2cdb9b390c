/*
 * s3_policy_ctx.c — a request's condition keys for bucket policies
 * (which keys, and when, in s3_policy_ctx.h). Pure: no I/O; any thread.
 *
 * Owns the building of the key list. Does not gather the facts (s3_rq
 * reads them off the call) nor evaluate anything (s3_policy).
 */
#include "gateway/s3_policy_ctx.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static void put(struct s3_policy_ctx *c, const char *key, const char *val)
{
	if (c->n == S3_POLICY_CTX_MAX || !val)
		return;
	c->val[c->n] = val;
	c->kv[c->n] = (struct s3_policy_kv){ .key = key, .vals = &c->val[c->n], .n = 1 };
	c->n++;
}

void s3_policy_ctx_build(struct s3_policy_ctx *c, const struct s3_policy_ctx_in *in)
{
	c->n = 0;
	bool user = in->user && in->user[0];
	if (in->peer_addr && in->peer_addr[0])
		put(c, S3_POLICY_KEY_SOURCE_IP, in->peer_addr);
	put(c, S3_POLICY_KEY_SECURE_TRANSPORT, in->tls ? "true" : "false");
	time_t t = (time_t)(in->now_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(c->time_iso, sizeof(c->time_iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(c->time_epoch, sizeof(c->time_epoch), "%llu",
		 (unsigned long long)(in->now_ms / 1000));
	put(c, S3_POLICY_KEY_CURRENT_TIME, c->time_iso);
	put(c, S3_POLICY_KEY_EPOCH_TIME, c->time_epoch);
	put(c, S3_POLICY_KEY_PRINCIPAL_TYPE, user ? "User" : "Anonymous");
	if (user) {
		put(c, S3_POLICY_KEY_USERNAME, in->user);
		put(c, S3_POLICY_KEY_USERID, in->user);
	}
	switch (in->action) {
	case S3_ACT_ListBucket:
		put(c, S3_POLICY_KEY_PREFIX, in->prefix);
		put(c, S3_POLICY_KEY_DELIMITER, in->delimiter);
		put(c, S3_POLICY_KEY_MAX_KEYS, in->max_keys);
		break;
	case S3_ACT_PutObject:
	case S3_ACT_PutBucketAcl:
	case S3_ACT_PutObjectAcl:
		if (in->x_amz_acl) {
			size_t n = in->x_amz_acl_len < S3_POLICY_CTX_VAL_MAX ? in->x_amz_acl_len
									      : S3_POLICY_CTX_VAL_MAX;
			memcpy(c->acl, in->x_amz_acl, n);
			c->acl[n] = '\0';
			put(c, S3_POLICY_KEY_X_AMZ_ACL, c->acl);
		}
		break;
	default:
		break;
	}
}
