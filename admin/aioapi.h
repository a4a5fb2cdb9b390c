/*
 * aioapi.h — iolake-admin's reads from a local aio's admin API, for the
 * commands whose answers come from an aio's in-process OSDs (they answer
 * only inside its process: `osd df`, `osd scrub-status`, `pg check`).
 *
 * Owns: a GET through admin_api_call parsed as JSON, the test "are this
 * map's OSDs an aio's", and typed reads of an answer's fields. Does not
 * print anything but the failure line, or decide what a command shows.
 */
#ifndef ADMIN_AIOAPI_H
#define ADMIN_AIOAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admin/cmd.h"
#include "common/json.h"
#include "proto/meta.pb-c.h"   /* the cluster map */
#include "proto/osd.pb-c.h"    /* ShardKey */

/* GET path (below /api/v1/) of the aio's admin API as a JSON document
 * (json_free it), or NULL after saying why on x->err. */
struct json_doc *admin_aio_get(const struct admin_ctx *x, const char *path);

/* True when x names a running aio and m's OSDs are in-process ones
 * ("local:" addresses): ask them through the admin API, not directly. */
bool admin_aio_osds(const struct admin_ctx *x, const Iolake__Meta__ClusterMap *m);

/* admin_aio_get(x, path) when admin_aio_osds (NULL with *failed set when
 * that call failed); NULL with *failed false when the OSDs are to be asked
 * directly. */
struct json_doc *admin_aio_status(const struct admin_ctx *x, const Iolake__Meta__ClusterMap *m,
				  const char *path, bool *failed);

/* A listed shard's key (GET osds/{id}/bad-shards and /shards): pg and
 * shard into *key, its hex object_id decoded into oid (OSD_OID_MAX
 * bytes), which key's object_id then names. False (key untouched) when
 * the object id is not 1..OSD_OID_MAX bytes of hex. */
bool admin_api_key(const struct json_value *j, Iolake__Osd__ShardKey *key, uint8_t *oid);

/* A listing page's "next" copied into after (cap bytes) for the next
 * page's ?after=; false on the last page (or a token that does not fit). */
bool admin_api_next(const struct json_value *page, char *after, size_t cap);

/* A field of object o (NULL: none): a whole number >= 0 (else 0), a
 * string (else dflt), true (else false). */
uint64_t admin_api_u64(const struct json_value *o, const char *key);
const char *admin_api_str(const struct json_value *o, const char *key, const char *dflt);
bool admin_api_true(const struct json_value *o, const char *key);

#endif
