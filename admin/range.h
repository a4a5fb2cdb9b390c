/*
 * range_admin.h — the operator's range commands of iolake-admin (kept in
 * the meta library so that iolake-admin's main stays a dispatcher): they
 * run their calls on loop, one after another, and print to out / err.
 */
#ifndef META_RANGE_ADMIN_H
#define META_RANGE_ADMIN_H

#include <stdbool.h>
#include <stdio.h>
#include <uv.h>

#include "meta/client.h"

/* `range ls [--bucket B]`: every range of the root's table (of bucket B
 * only when not NULL) with its group, the group's leader (member 0's
 * view), its state in the group (open, sealed, unopened) and its object
 * count, bytes and uploads (the group's counters); then each live group:
 * its members and whether they are reconciled (from a range it holds, the
 * root's table), and member 0's view of its voters, leader and state
 * digest (JSON: "group_info"). Exit status: 0, or 1 (meta unreachable, no
 * such bucket). */
int meta_range_admin_ls(struct meta_client *c, uv_loop_t *loop, const char *bucket, bool json,
			FILE *out, FILE *err);

/* `range split BUCKET KEY`: split the range holding KEY at KEY, moving
 * the records of [KEY, end) to the group that holds the fewest ranges.
 * `range merge BUCKET KEY`: the range holding KEY and its right neighbour
 * become one, in the left one's group. Both print what moved and the
 * sealed time. Exit status 0, or 1 with the reason on err. */
int meta_range_admin_split(struct meta_client *c, uv_loop_t *loop, const char *bucket,
			   const char *key, FILE *out, FILE *err);
int meta_range_admin_merge(struct meta_client *c, uv_loop_t *loop, const char *bucket,
			   const char *key, FILE *out, FILE *err);

#endif
