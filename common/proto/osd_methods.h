/*
 * osd_methods.h — the method numbers of the OSD RPC service
 * (iolake.osd.Osd in osd.proto), defined once for every caller and for
 * the service itself. An RPC method is its index in the service
 * descriptor, which is the order of the `rpc` lines in osd.proto: append
 * new methods at the end of both. test_proto_methods checks every name
 * here against the generated descriptor.
 */
#ifndef PROTO_OSD_METHODS_H
#define PROTO_OSD_METHODS_H

#include "proto/osd.pb-c.h"

#define OSD_SVC (&iolake__osd__osd__descriptor)

enum osd_method {
	OSD_M_PUT,       /* PutShard */
	OSD_M_GET,       /* GetShard */
	OSD_M_DEL,       /* DeleteShard */
	OSD_M_STAT,      /* StatShard */
	OSD_M_STATS,     /* StatShards */
	OSD_M_LIST,      /* ListShards */
	OSD_M_STATUS,    /* Status */
	OSD_M_LIST_BAD,  /* ListBadShards */
	OSD_M_COUNT
};

#endif
