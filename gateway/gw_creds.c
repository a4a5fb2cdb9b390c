/*
 * gw_creds.c — GetAccessKey as s3_auth's credential source (gw_creds.h):
 * the secret (opened with the cluster key when sealed, meta/secret.h), the
 * key's user, its admin flag and its grants.
 *
 * Never logs a secret: a key that cannot be opened is logged by id and
 * cause only.
 */
#include "gateway/gw_creds.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/log.h"
#include "meta/secret.h"

static const struct meta_secret *cluster_key;

#define LOG_EVERY_S 10   /* at most one "cannot open" line per this many seconds */

void gw_creds_set_secret(const struct meta_secret *s)
{
	cluster_key = s;
}

struct lookup {
	struct s3_cred_lookup *l;
};

/* The grants meta sent, as s3_authz reads them; at most S3_GRANTS_MAX. */
static size_t take_grants(const Iolake__Meta__GetAccessKeyResponse *r, struct s3_user_grant *out)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_grants && n < S3_GRANTS_MAX; i++) {
		const Iolake__Meta__BucketGrant *g = r->grants[i];
		if (!g->bucket || strlen(g->bucket) > S3_GRANT_BUCKET_MAX ||
		    (unsigned)g->level > S3_GRANT_FULL)
			continue;
		snprintf(out[n].bucket, sizeof(out[n].bucket), "%s", g->bucket);
		out[n].level = (uint8_t)g->level;
		out[n].bucket_created_ms = g->bucket_created_ms;
		n++;
	}
	return n;
}

static void on_access_key(void *ud, int err, const ProtobufCMessage *resp)
{
	struct lookup *lk = ud;
	struct s3_cred_lookup *l = lk->l;
	free(lk);
	if (err) {
		l->done(l, err == IOL_ENOT_FOUND ? -ENOENT : -EIO, NULL);
		return;
	}
	const Iolake__Meta__GetAccessKeyResponse *r = (const void *)resp;
	if (r->status != IOLAKE__META__STATUS__STATUS_OK || !r->key || r->key->disabled ||
	    !r->key->user || !*r->key->user) {
		l->done(l, -ENOENT, NULL);
		return;
	}
	char secret[META_SECRET_MAX + 1];
	uint32_t id = 0;
	int rc = meta_secret_of_key(cluster_key, r->key, secret, sizeof(secret), &id);
	if (rc == -ENOENT) {
		l->done(l, -ENOENT, NULL);
		return;
	}
	if (rc < 0) {
		/* A sealed secret this gateway cannot open: a configuration
		 * error (no or another --secret-key-file) or a damaged record,
		 * never the client's: ServiceUnavailable, not cached. */
		char have[9], want[9];
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		static _Atomic int64_t last_s = -LOG_EVERY_S;   /* every request fails: */
		int64_t was = last_s;                           /* say so now and then */
		if (now.tv_sec - was < LOG_EVERY_S ||
		    !atomic_compare_exchange_strong(&last_s, &was, (int64_t)now.tv_sec)) {
			l->done(l, -EIO, NULL);
			return;
		}
		LOG_ERROR("cannot open the secret of an access key", "key=%s err=%s sealed_by=%s "
			  "our_key=%s", LOG_Q(r->key->access_key_id), LOG_Q(iol_strerror(rc)),
			  meta_secret_id_str(id, have),
			  cluster_key ? meta_secret_id_str(cluster_key->key_id, want)
				      : "none(no --secret-key-file)");
		l->done(l, -EIO, NULL);
		return;
	}
	struct s3_user_grant grants[S3_GRANTS_MAX];
	/* The key's user travels with the secret into the credential cache
	 * and from there onto every request the key signs: the owner of
	 * what a request creates is always the key's user. */
	struct s3_cred cred = { .secret = secret, .user = r->key->user, .admin = r->admin,
				.grants = grants, .n_grants = take_grants(r, grants) };
	l->done(l, 0, &cred);
	explicit_bzero(secret, sizeof(secret));
}

void gw_creds_lookup(struct meta_client *mc, struct metrics_counter *calls,
		     struct s3_cred_lookup *l)
{
	struct lookup *lk = malloc(sizeof(*lk));
	if (!lk) {
		l->done(l, -ENOMEM, NULL);
		return;
	}
	lk->l = l;
	if (calls)
		metrics_counter_inc(calls);
	Iolake__Meta__GetAccessKeyRequest req = IOLAKE__META__GET_ACCESS_KEY_REQUEST__INIT;
	req.access_key_id = (char *)l->access_key;
	int rc = meta_client_call(mc, META_M_GET_ACCESS_KEY, &req.base, on_access_key, lk);
	if (rc) {
		free(lk);
		l->done(l, rc, NULL);
	}
}
