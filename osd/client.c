/*
 * client.c — osd/client.h over the store's key codec, so the name a tool
 * prints is the one the OSD logs.
 */
#include "osd/client.h"

#include <errno.h>
#include <stdio.h>

#include "osd/store/rec.h"

_Static_assert(OSD_OID_MAX == STORE_OID_MAX, "osd/client.h's object id bound is the store's");

int osd_shard_name(uint32_t pg, const uint8_t *oid, size_t oid_len, uint32_t shard, char *out,
		   size_t outlen)
{
	struct store_key k;
	if (shard > 255 || store_key_make(&k, pg, oid, oid_len, (uint8_t)shard)) {
		snprintf(out, outlen, "(bad key)");
		return -EINVAL;
	}
	store_key_format(&k, out, outlen);
	return 0;
}
