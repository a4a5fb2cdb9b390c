/*
 * gw_creds.h — s3_auth's credential source over meta: an access key's
 * secret (opened with the cluster key when sealed), user, admin flag
 * and grants from meta's GetAccessKey. One for the S3 front end and the
 * admin API alike. Owns nothing but one allocation per lookup in flight;
 * the caching is s3_auth's.
 */
#ifndef GATEWAY_GW_CREDS_H
#define GATEWAY_GW_CREDS_H

#include "common/metrics.h"
#include "gateway/s3_auth.h"
#include "meta/client.h"

/* Look l->access_key up through mc; l->done runs exactly once, as
 * s3_auth.h says (-ENOENT for an unknown, disabled or ownerless key, -EIO
 * or another error for a failed call). calls: counted per call sent to
 * meta, or NULL. mc's loop thread. */
void gw_creds_lookup(struct meta_client *mc, struct metrics_counter *calls,
		     struct s3_cred_lookup *l);

struct meta_secret;

/* The process's cluster key (--secret-key-file), which opens sealed
 * secrets; NULL (the default): only clear records work, a sealed one
 * fails its lookup with -EIO and a logged error. One key per process, set
 * before the first lookup; s must outlive every lookup. */
void gw_creds_set_secret(const struct meta_secret *s);

#endif
