/*
 * osd_cluster.h — test/bench helper: N real OSDs in one process, each a
 * store on a sparse file in /dev/shm plus the iolake.osd.Osd service, on
 * its own loop_thread, listening on 127.0.0.1:0 and on local:NAME, so a
 * client on another loop reaches it over either transport.
 *
 * Not for production. Does not use Check: functions return 0 or a
 * negative error so benches can use it too. Files are removed by
 * osd_cluster_destroy.
 */
#ifndef TESTS_LIB_OSD_CLUSTER_H
#define TESTS_LIB_OSD_CLUSTER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"
#include "osd/store/store.h"

#define OSD_CLUSTER_MAX 16

struct osd_node {
	struct loop_thread lt;
	struct metrics_registry *reg;
	struct store *st;
	struct osd_service *svc;
	struct rpc_server *rpc;
	char dev[128], meta[128], local[64];
	uint64_t dev_size;
	uint32_t id;
	int port;
	int rc;
	char err[512];
	atomic_int closed;
	bool draining, started;
};

struct osd_cluster {
	unsigned n;
	struct osd_node node[OSD_CLUSTER_MAX];
};

/* Start n OSDs (ids 0..n-1) with devices of dev_size bytes named after
 * tag and the pid. 0, or the first failure (a message on stderr). */
int osd_cluster_start(struct osd_cluster *c, unsigned n, const char *tag, uint64_t dev_size);

/* Check's forked tests end a failed assertion with _exit, past every
 * teardown and atexit hook. A test binary calls runner_begin before
 * srunner_run_all (files are then named by the runner's pid) and
 * runner_end after it (removes every /dev/shm file its tests left). */
void osd_cluster_runner_begin(void);
void osd_cluster_runner_end(void);

/* "127.0.0.1:PORT" (local == false) or "local:NAME" of node i. */
void osd_cluster_target(const struct osd_cluster *c, unsigned i, bool local, char *out,
			size_t cap);

/* Stop node i's service for good (drain, close server and store); its
 * clients then get UNAVAILABLE. Waits until it is closed. */
void osd_cluster_stop_node(struct osd_cluster *c, unsigned i);

/* store_stat on node i's own thread. */
int osd_cluster_stat(struct osd_cluster *c, unsigned i, const struct store_key *k,
		     struct store_stat *out);

/* Stop every node and remove every file. */
void osd_cluster_destroy(struct osd_cluster *c);

#endif
