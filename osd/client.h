/*
 * client.h — what another program needs to talk about an OSD's shards:
 * the bound on an object id and the name the OSD gives a shard in its
 * logs and reports. The RPC method numbers are beside osd.proto
 * (common/proto/osd_methods.h). Nothing here reaches the store's
 * internals (osd/store/): iolake-admin includes this, not them.
 */
#ifndef OSD_CLIENT_H
#define OSD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#define OSD_OID_MAX 64                          /* bytes of an object id */
#define OSD_SHARD_NAME_MAX (OSD_OID_MAX * 4 + 64) /* osd_shard_name's longest, NUL included */

/* "pg P oid 'X' shard S", as the OSD logs a shard (bytes outside printable
 * ASCII, quotes and backslashes as \xNN). 0, or -EINVAL (oid empty or
 * longer than OSD_OID_MAX, shard over 255: out is then "(bad key)"). */
int osd_shard_name(uint32_t pg, const uint8_t *oid, size_t oid_len, uint32_t shard, char *out,
		   size_t outlen);

#endif
