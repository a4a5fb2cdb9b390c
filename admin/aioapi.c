/*
 * aioapi.c — reads from a local aio's admin API (see aioapi.h).
 */
#include "admin/aioapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/api.h"
#include "common/hash.h"
#include "osd/client.h"   /* OSD_OID_MAX */

uint64_t admin_api_u64(const struct json_value *o, const char *key)
{
	const struct json_value *v = o ? json_get(o, key) : NULL;
	return v && v->type == JSON_NUMBER && v->u.num.is_int && v->u.num.i >= 0
		       ? (uint64_t)v->u.num.i : 0;
}

const char *admin_api_str(const struct json_value *o, const char *key, const char *dflt)
{
	const struct json_value *v = o ? json_get(o, key) : NULL;
	return v && v->type == JSON_STRING ? v->u.str.s : dflt;
}

bool admin_api_true(const struct json_value *o, const char *key)
{
	const struct json_value *v = o ? json_get(o, key) : NULL;
	return v && v->type == JSON_TRUE;
}

bool admin_api_key(const struct json_value *j, Iolake__Osd__ShardKey *key, uint8_t *oid)
{
	const char *hx = admin_api_str(j, "object_id", "");
	size_t hl = strlen(hx);
	if (!hl || hl % 2 || hl / 2 > OSD_OID_MAX || hash_unhex(hx, hl / 2, oid))
		return false;
	key->pg = (uint32_t)admin_api_u64(j, "pg");
	key->shard = (uint32_t)admin_api_u64(j, "shard");
	key->object_id.data = oid;
	key->object_id.len = hl / 2;
	return true;
}

bool admin_api_next(const struct json_value *page, char *after, size_t cap)
{
	const char *next = admin_api_str(page, "next", NULL);
	size_t n = next ? strlen(next) : cap;
	if (n >= cap)
		return false;
	memcpy(after, next, n + 1);
	return true;
}

struct json_doc *admin_aio_get(const struct admin_ctx *x, const char *path)
{
	char err[4800];
	int status;
	char *body = NULL;
	size_t len = 0;
	if (admin_api_call(x->aio_dir, x->aio, "GET", path, NULL, &status, &body, &len, err,
			   sizeof(err))) {
		fprintf(x->err, "iolake-admin: error: %s\n", err);
		return NULL;
	}
	struct json_doc *d = NULL;
	if (status != 200 || json_parse(body, len, NULL, &d, NULL)) {
		fprintf(x->err, "iolake-admin: error: the admin API's GET %s answered HTTP %d: %.*s\n",
			path, status, (int)(len < 300 ? len : 300), body);
		d = NULL;
	}
	free(body);
	return d;
}

bool admin_aio_osds(const struct admin_ctx *x, const Iolake__Meta__ClusterMap *m)
{
	if (!x->aio)
		return false;
	for (size_t i = 0; i < m->n_osds; i++)
		if (!strncmp(m->osds[i]->addr, "local:", 6))
			return true;
	return false;
}

struct json_doc *admin_aio_status(const struct admin_ctx *x, const Iolake__Meta__ClusterMap *m,
				  const char *path, bool *failed)
{
	*failed = false;
	if (!admin_aio_osds(x, m))
		return NULL;
	struct json_doc *d = admin_aio_get(x, path);
	*failed = !d;
	return d;
}
