/*
 * health.h — `iolake-admin cluster wait-healthy`: what a rolling restart
 * waits for between two nodes (infra/deploy/deploy.sh --rolling,
 * infra/netns-cluster.sh rolling-restart).
 */
#ifndef ADMIN_HEALTH_H
#define ADMIN_HEALTH_H

#include <stdint.h>
#include <stdio.h>

#include "meta/client.h"

/* Poll every second until the cluster is healthy: every meta member
 * answers and one is leader, every OSD in the map is up and in, every PG
 * active+clean with nothing left to rebuild. Prints one line when it is
 * (and how long it took) and, every 10 s while it is not, what is not.
 * Exit status 0, or 1 after timeout_ms with what is still not healthy. */
int admin_wait_healthy(struct meta_client *c, uint64_t timeout_ms, FILE *out, FILE *err);

#endif
