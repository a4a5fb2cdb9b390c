/*
 * gw_bcache.h — bucket records cached per gateway loop, so that a PUT's
 * gate does not read the bucket from meta (issue 19: fewer meta round
 * trips per PUT); and buckets meta said do not exist, so that a flood of
 * anonymous requests at a made-up bucket does not read meta once per
 * request it lets through (issue 16).
 *
 * Why it is safe: a request authorized on a cached record carries that
 * record's digest (GetBucketResponse.bucket_digest) in its commit
 * (PutObject.if_bucket_digest), and meta's apply refuses the commit, in
 * Raft order, unless the stored record still has that digest and no quota
 * applies (meta/state_obj.c); the gateway then reads the bucket afresh and
 * decides again (gateway/s3_put.c). So a PUT never commits on a policy,
 * ACL, versioning, lock or encryption setting other than the one in force
 * when it commits. Only records that need nothing else are kept: a bucket
 * the root holds (its usage present: a range group's apply cannot check
 * the digest), with no quota of its own or of its owner (the quota check
 * needs fresh usage).
 *
 * The TTL bounds what the commit does not check (the CORS headers of an
 * answer, and how long a gateway keeps trying a record another gateway's
 * change made stale); this gateway's own bucket changes drop the entry at
 * once (s3_rq_submit).
 *
 * Bounded: at most `slots` entries, direct-mapped by name (a collision
 * evicts); each holds the packed record (a policy is at most 20 KiB).
 *
 * Thread: one loop's (struct s3_ops owns one); no locking.
 */
#ifndef GATEWAY_GW_BCACHE_H
#define GATEWAY_GW_BCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/metrics.h"
#include "proto/meta.pb-c.h"

#define GW_BCACHE_SLOTS 256
#define GW_BCACHE_TTL_MS 1000

struct gw_bcache;

/* A cache of `slots` entries (a power of two) living ttl_ms each,
 * counting into reg (NULL: no metrics). NULL: no memory. */
struct gw_bcache *gw_bcache_new(size_t slots, uint64_t ttl_ms, struct metrics_registry *reg);
void gw_bcache_free(struct gw_bcache *c);

/* Whether b (as GetBucket answered it, with digest) may be cached: see
 * the top of this file. */
bool gw_bcache_cacheable(const Iolake__Meta__Bucket *b, uint64_t digest);

/* get, put and drop take c NULL (no cache: nothing kept or found). */

/* A copy of bucket name's cached record (the caller's to free with
 * protobuf_c_message_free_unpacked) and its digest; NULL on a miss or an
 * expired entry. */
Iolake__Meta__Bucket *gw_bcache_get(struct gw_bcache *c, const char *name, uint64_t now_ms,
				    uint64_t *digest);

/* Keep b with its digest when cacheable (else drop any entry of its
 * name). Out of memory: nothing is kept. */
void gw_bcache_put(struct gw_bcache *c, const Iolake__Meta__Bucket *b, uint64_t digest,
		   uint64_t now_ms);

/* Forget bucket name. stale: because a commit found it changed
 * (counted). */
void gw_bcache_drop(struct gw_bcache *c, const char *name, bool stale);

/* Absent buckets. Only anonymous requests are answered from these (the
 * gate decides that): a signed request always asks meta, so a user who
 * creates a bucket through one gateway and writes through another never
 * sees NoSuchBucket. An anonymous reader may, for at most the TTL after
 * a create through another gateway process; one through any loop of this
 * process ends every absent entry at once (gw_bcache_bucket_created
 * moves a process-wide generation each entry was made under). S3 also
 * documents bucket creation as eventually consistent. */

/* The generation now: taken before the read whose answer may go to
 * gw_bcache_put_absent. */
uint64_t gw_bcache_gen(void);
/* Meta answered NoSuchBucket for name to a read that started at
 * generation gen (a create submitted or answered since makes the entry
 * void from the start). */
void gw_bcache_put_absent(struct gw_bcache *c, const char *name, uint64_t now_ms, uint64_t gen);
/* Whether name is known absent (counted as a hit when it is). */
bool gw_bcache_absent(struct gw_bcache *c, const char *name, uint64_t now_ms);
/* A CreateBucket of this process is submitted, or answered: forget
 * every absent entry of every loop. Any thread. */
void gw_bcache_bucket_created(void);

#endif
