/*
 * s3_policy_cache.h — compiled bucket policies, cached per gateway loop so
 * that no request parses JSON: an entry is a bucket's policy document
 * parsed by s3_policy, keyed by (bucket name, bucket generation). Every
 * change of a policy goes through SetBucketAccess, which gives the bucket
 * a new generation (never reused), so an entry found under the generation
 * of the record a request just read IS that record's policy: no
 * invalidation is needed, and stale entries simply age out.
 *
 * Bounded: at most cap entries (least recently used evicted first), each
 * holding one parsed policy (a document is at most 20 KiB). A document
 * that no longer parses (stored by an older gateway whose engine accepted
 * it) is cached as broken; the caller fails closed on it.
 *
 * Thread: one loop's (struct s3_ops owns one); no locking.
 */
#ifndef GATEWAY_S3_POLICY_CACHE_H
#define GATEWAY_S3_POLICY_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct s3_policy;
struct s3_policy_cache;

#define S3_POLICY_CACHE_DEFAULT 256

/* What a bucket's policy is, for the decision. */
struct s3_policy_entry {
	const struct s3_policy *policy;   /* NULL when broken */
	bool is_public;                   /* s3_policy_is_public */
	bool broken;                      /* stored, but does not parse */
};

struct s3_policy_cache_stats {
	uint64_t hits, misses, evictions, broken;
	size_t entries;
};

/* A cache of at most cap entries (cap >= 1). NULL: no memory. */
struct s3_policy_cache *s3_policy_cache_new(size_t cap);
void s3_policy_cache_free(struct s3_policy_cache *c);

/* The compiled policy of bucket at generation, whose stored document is
 * doc[0..len) (len > 0): from the cache, or parsed now and kept. The
 * entry stays valid until the next call on c. NULL only without memory
 * (the caller fails closed). */
const struct s3_policy_entry *s3_policy_cache_get(struct s3_policy_cache *c, const char *bucket,
						   uint64_t generation, const char *doc, size_t len);

void s3_policy_cache_stats(const struct s3_policy_cache *c, struct s3_policy_cache_stats *out);

#endif
