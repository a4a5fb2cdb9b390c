/*
 * meta_methods.h — the method numbers of the meta RPC service
 * (iolake.meta.Meta in meta.proto), defined once for the service, its
 * client and every caller. A method is its index in the service
 * descriptor, the order of the `rpc` lines in meta.proto: append new
 * methods at the end of both. test_proto_methods checks every name here
 * against the generated descriptor. Also the protocol's shared limits.
 */
#ifndef PROTO_META_METHODS_H
#define PROTO_META_METHODS_H

#include "proto/meta.pb-c.h"

#define META_SERVICE (&iolake__meta__meta__descriptor)

/* Limits of the protocol that both sides count on. */
#define META_ADDR_MAX 64            /* a member's "host:port" + NUL */
#define META_DEDUPE_WINDOW 1024     /* op results the state keeps per client */
#define META_LIST_GC_MAX 1000       /* GC entries in one ListGc page */
#define META_WATCH_DEFAULT_MS 30000 /* WatchMap held this long when it names no timeout */
#define META_WATCH_MAX_MS 60000     /* ... and never longer */

enum meta_method {
	META_M_SUBMIT,
	META_M_GET_BUCKET,
	META_M_LIST_BUCKETS,
	META_M_HEAD_OBJECT,
	META_M_LIST_OBJECTS,
	META_M_GET_ACCESS_KEY,
	META_M_LIST_USERS,
	META_M_GET_MAP,
	META_M_WATCH_MAP,
	META_M_HEARTBEAT,
	META_M_STATUS,
	META_M_ADD_MEMBER,
	META_M_REMOVE_MEMBER,
	META_M_METRICS,
	META_M_GET_UPLOAD,
	META_M_LIST_PARTS,
	META_M_LIST_UPLOADS,
	META_M_LIST_GC,
	META_M_REPORT_PGS,
	META_M_FLAG_PGS,
	META_M_PG_STATS,
	META_M_CHECK_SHARDS,
	META_M_CONFIRM_LEADER,
	META_M_FETCH_SNAPSHOT,
	META_M_GET_RANGES,
	META_M_GET_VERSION,
	META_M_LIST_VERSIONS,
	META_M_READ_RANGE,
	META_M_GET_PART_ROWS,
	META_M_COUNT
};

#endif
