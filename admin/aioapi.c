/*
 * aioapi.c — reads from a local aio's admin API (see aioapi.h).
 */
#include "admin/aioapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/api.h"

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
