/*
 * map.h — for iolake-admin's commands that read the cluster map and ask
 * the OSDs themselves (osd df, osd scrub-status, pg check): the map from
 * meta, an OSD's RPC channel, one OSD call at a time, and paging through
 * shard listings. Owns nothing past a call.
 */
#ifndef ADMIN_MAP_H
#define ADMIN_MAP_H

#include <stdint.h>

#include "admin/cmd.h"
#include "common/rpc.h"
#include "proto/osd.pb-c.h"

/* The leader's cluster map; *holder owns it (free *holder with
 * protobuf_c_message_free_unpacked). Exits 1 when there is no map yet
 * or no leader answers. */
Iolake__Meta__ClusterMap *admin_get_map(const struct admin_ctx *x,
					Iolake__Meta__GetMapResponse **holder);

/* An OSD's channel (close with rpc_channel_close), or NULL: an aio's OSDs
 * ("local:osd-N") live inside its process, where no other process can
 * reach them (their calls would wait for a listener that never comes);
 * the admin HTTP API, served in that process, can. Said once. */
struct rpc_channel *admin_osd_open(const struct admin_ctx *x, const char *addr);

/* method(req) of the OSD's own service (osd.proto), 3 s deadline: the RPC
 * status, and in *resp an owned copy of the answer (NULL unless RPC_OK). */
int admin_osd_call(const struct admin_ctx *x, struct rpc_channel *ch, int method,
		   const ProtobufCMessage *req, ProtobufCMessage **resp);

/* Page on after lk: copy it into after, its object id into after_oid
 * (OSD_OID_MAX bytes, the caller's, outliving the next request). */
void admin_shard_key_after(Iolake__Osd__ShardKey *after, uint8_t *after_oid,
			   const Iolake__Osd__ShardKey *lk);

#endif
