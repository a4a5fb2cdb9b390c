/*
 * state_ver.h — object versions (meta/state_ver.c; layout and rules in
 * docs/architecture.md, "Versioning"). The reads are for the service
 * (meta/service_read.c); the meta_ver_* apply hooks are for meta/state.c
 * only (they take its struct tx).
 */
#ifndef META_STATE_VER_H
#define META_STATE_VER_H

#include <stdbool.h>
#include <stdint.h>

#include "meta/state.h"

#define META_VERSIONS_MAX_KEYS 1000   /* entries in one ListVersions page */

/* The order of a version among its key's (the generation in records
 * older than versioning). */
uint64_t meta_ver_order(const Iolake__Meta__ObjectRecord *r);
/* A non-null version id (16 lowercase hex digits) to its order. */
bool meta_ver_id_parse(const char *id, uint64_t *order);

/* Whether an encoded ObjectRecord is a delete marker (field 31), read
 * without unpacking it (listings skip markers at no allocation). */
bool meta_ver_is_marker(const uint8_t *p, size_t n);

/* One version of bucket/key by id ("null": the null version), a delete
 * marker included. 0 and *out (free with meta_state_free_msg),
 * IOL_ENOT_FOUND, -EINVAL (a malformed name or id), IOL_ECORRUPT, -EIO.
 * Any thread. */
int meta_state_get_version(struct meta_state *s, const char *bucket, const char *key,
			   const char *version_id, Iolake__Meta__ObjectRecord **out);

/* A ListObjectVersions page of the keys in [lo, hi) (NULL or "":
 * unbounded): q's prefix, delimiter, key and version-id markers and
 * max_keys (clamped to META_VERSIONS_MAX_KEYS). Fills out's entries
 * (free with meta_state_list_versions_free) and truncated (more entries
 * in [lo, hi)). 0, -EINVAL (bucket name, version-id marker), -ENOMEM,
 * IOL_ECORRUPT, -EIO. Any thread. */
int meta_state_list_versions(struct meta_state *s, const Iolake__Meta__ListVersionsRequest *q,
			     const char *lo, const char *hi,
			     Iolake__Meta__ListVersionsResponse *out);
void meta_state_list_versions_free(Iolake__Meta__ListVersionsResponse *out);

/* ---- apply hooks (meta/state.c; apply thread) */
struct tx;
struct key;

/* rec becomes the key's current version ('O' row ok) over cur (the
 * current record, NULL: none), as the op's versioning state says:
 * ENABLED keeps cur as a noncurrent version and gives rec a version id;
 * otherwise rec is the null version, a null cur is freed and a versioned
 * cur kept (and an older null version freed). Sets rec's generation and
 * version fields and r's generation, version_id and retained. */
int meta_ver_put_current(struct tx *t, const struct key *ok, Iolake__Meta__ObjectRecord *rec,
			 Iolake__Meta__ObjectRecord *cur, struct meta_op_result *r);
/* Whether a DeleteObject goes by the version rules (a version id, a
 * versioned bucket, or a versioned current record). */
bool meta_ver_delete_is_versioned(const struct tx *t, const Iolake__Meta__ObjectRecord *cur);
/* DeleteObject by the version rules: with the op's version id, that
 * version for good (the next newest promoted); else a delete marker. */
int meta_ver_delete(struct tx *t, const Iolake__Meta__DeleteObject *op,
		    Iolake__Meta__ObjectRecord *cur, const struct key *ok, struct meta_op_result *r);
int meta_ver_set_bucket(struct tx *t, const Iolake__Meta__SetBucketVersioning *op);
/* The record a SetObjectTags / SetObjectAcl changes: the version the op
 * names (Op.version_id), else the current one; *row its key (an 'O' or
 * 'V' row). 0 and *out (free it), IOL_ENOT_FOUND (none, or a delete
 * marker), IOL_ECONFLICT (if_generation != 0 and not its generation),
 * -EINVAL (a malformed id), or a storage error. */
int meta_ver_target(struct tx *t, const char *bucket, const char *key, uint64_t if_generation,
		    Iolake__Meta__ObjectRecord **out, struct key *row);

#endif
