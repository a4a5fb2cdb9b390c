/*
 * gw_bread.h — GetBucket reads shared per gateway loop (issue 13: a PUT
 * into a bucket held by range groups cannot use the bucket cache,
 * gw_bcache.h, and read its bucket from the root on every PUT: one meta
 * call, one root read, per PUT).
 *
 * A read asked for while another of the same bucket is out waits for it
 * to come back and then goes out with every other read asked for
 * meanwhile, as one GetBucket whose answer each of them gets (group
 * commit for reads, as ReadIndex batches them in meta).
 *
 * Why it is as fresh as a read of its own: the GetBucket that answers an
 * asker is sent after the asker asked, never one already out, and meta
 * answers GetBucket linearizably (the root's leader, after a ReadIndex
 * round). So an answer reflects every bucket change acknowledged before
 * the asker asked, exactly as a call of its own would.
 *
 * Bounded: `slots` buckets at once, direct-mapped by name; a bucket whose
 * slot another bucket's read holds gets a call of its own (not shared).
 * Waiters are the askers' own structs (no allocation); one small context
 * per GetBucket out. A shared GetBucket carries the request id of the
 * asker that sent it when it went out at once, none when it went out for
 * the askers that waited.
 *
 * Thread: one loop's (struct s3_ops owns one); no locking.
 */
#ifndef GATEWAY_GW_BREAD_H
#define GATEWAY_GW_BREAD_H

#include <stddef.h>

#include "common/metrics.h"
#include "meta/client.h"

#define GW_BREAD_SLOTS 64

struct gw_bread;

/* One asker's place in a queue: owned by the asker, untouched by it until
 * its callback ran. */
struct gw_bread_waiter {
	struct gw_bread_waiter *next;
	meta_client_cb cb;
	void *ud;
};

/* Reads through mc (which must outlive every call out, or answer them on
 * its close), counting into reg (NULL: no metrics). NULL: no memory. */
struct gw_bread *gw_bread_new(struct meta_client *mc, size_t slots, struct metrics_registry *reg);

/* Freed once no GetBucket is out (at once when none is): call after
 * meta_client_close, which answers the calls out. */
void gw_bread_free(struct gw_bread *b);

/* Read bucket name (its GetBucketResponse) linearizably: w->cb(w->ud, err,
 * resp) runs once, later, with the meta client's err and answer (resp
 * valid during the callback only). 0, or a negative error when no call
 * could start (the callback will not run). */
int gw_bread_get(struct gw_bread *b, const char *name, struct gw_bread_waiter *w,
		 meta_client_cb cb, void *ud);

/* gw_bread_get through b, or, without one (b NULL: made without memory),
 * a GetBucket of its own through mc; the same contract. */
int gw_bread_read(struct gw_bread *b, struct meta_client *mc, const char *name,
		  struct gw_bread_waiter *w, meta_client_cb cb, void *ud);

#endif
