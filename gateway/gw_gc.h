/*
 * gw_gc.h — the gateway's shard GC worker: drains meta's GC queue (the
 * records that committed overwrites, deletes and multipart changes
 * replaced) by deleting their shards on the OSDs and acking the entries
 * it freed. Details and the safety argument at the top of gw_gc.c.
 *
 * Thread: the gateway loop of the s3_ops it belongs to; every function on
 * that loop's thread.
 */
#ifndef GATEWAY_GW_GC_H
#define GATEWAY_GW_GC_H

#include <stdint.h>

struct s3_ops;

struct gw_gc_opts {
	uint32_t interval_ms;        /* between rounds; 0: no worker (gw_gc_start refuses) */
	uint32_t round_entries;      /* entries looked at per round; 0: 256 */
	uint32_t page_entries;       /* entries per ListGc call; 0: 128 */
	unsigned window;             /* layouts being deleted at once; 0: 4 */
};

struct gw_gc;

/* Start a worker over o's meta client, map and data path; the first round
 * runs one interval from now. 0 and *out, -EINVAL (interval 0), -ENOMEM. */
int gw_gc_start(struct s3_ops *o, const struct gw_gc_opts *opts, struct gw_gc **out);

/* Stop: no new round or call starts, and g frees itself once the calls in
 * flight have come back (meta_client_close and gw_map_close make them come
 * back). Call before closing o's meta client. NULL is ignored. */
void gw_gc_close(struct gw_gc *g);

#endif
