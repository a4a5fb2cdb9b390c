/*
 * state_quota.h — quota reads of the state machine (meta/state_quota.c):
 * the usage the root keeps per bucket, filled into bucket records for the
 * gateway's quota check. Apply's side (SetQuota, the usage rows) is
 * declared in meta/state_internal.h.
 */
#ifndef META_STATE_QUOTA_H
#define META_STATE_QUOTA_H

#include <stdint.h>

#include "meta/state.h"

/* Fill b's read-only quota fields (meta.proto Bucket 66-68): its usage
 * (zeros for a bucket without a usage row), and when its owner has a
 * quota, that quota and the owner's usage summed over the owner's
 * buckets. 0, or a negative error (storage). */
int meta_state_quota_fill(struct meta_state *s, Iolake__Meta__Bucket *b);

/* Only b's own usage (Bucket 66; a listing's). 0 or a negative error. */
int meta_state_usage_fill(struct meta_state *s, Iolake__Meta__Bucket *b);

/* The root's usage of one bucket (zeros without a row); -EINVAL for a bad
 * name. */
int meta_state_bucket_usage(struct meta_state *s, const char *bucket, uint64_t *objects,
			    uint64_t *bytes);
/* Summed over the buckets owner owns (meta_state_list_buckets' bound). */
int meta_state_owner_usage(struct meta_state *s, const char *owner, uint64_t *objects,
			   uint64_t *bytes);

#endif
