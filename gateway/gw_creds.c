/*
 * gw_creds.c — GetAccessKey as s3_auth's credential source (gw_creds.h).
 */
#include "gateway/gw_creds.h"

#include <errno.h>
#include <stdlib.h>

#include "common/err.h"

struct lookup {
	struct s3_cred_lookup *l;
};

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
	    !r->key->secret_key || !r->key->user || !*r->key->user) {
		l->done(l, -ENOENT, NULL);
		return;
	}
	/* The key's user travels with the secret into the credential cache
	 * and from there onto every request the key signs: the owner of
	 * what a request creates is always the key's user. */
	struct s3_cred cred = { .secret = r->key->secret_key, .user = r->key->user,
				.admin = r->admin };
	l->done(l, 0, &cred);
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
