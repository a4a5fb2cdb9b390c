/*
 * cluster.h — iolake-admin's cluster commands that ask meta.
 */
#ifndef ADMIN_CLUSTER_H
#define ADMIN_CLUSTER_H

#include "admin/cmd.h"

/* `cluster status` (every member's own view, the map epoch, the Raft
 * configuration, the shard GC queue, PGs per state and recovery left) and
 * `cluster wait-healthy [S]` (admin/health.h): args are the words after
 * "cluster". Exit status 0, 1 (no member answered; not healthy in time),
 * 2 (usage), or ADMIN_UNKNOWN. */
int admin_cluster(const struct admin_ctx *x, int nargs, char **args);

#endif
