/*
 * shard_oid.h — the layout of an OSD object id, the part of a shard's key
 * between its PG and its shard index: the 16-byte data id the gateway
 * draws for each object version's data (gw_data), then the segment
 * number as a big-endian 32-bit word. Meta's object records name the data
 * id; CheckShards asks about data ids; the OSDs' scans, orphan sweep and
 * stray push cut it out of the object ids they list.
 *
 * Part of the on-disk and wire format: every shard stored so far has it.
 * Owns the two lengths only; building ids is gw_data's, parsing each
 * caller's.
 */
#ifndef COMMON_SHARD_OID_H
#define COMMON_SHARD_OID_H

#define SHARD_DATA_ID_LEN 16                      /* gw_data's id of one version's data */
#define SHARD_OID_LEN (SHARD_DATA_ID_LEN + 4)     /* data id || be32(segment) */

#endif
