/*
 * api.h — iolake-admin's `api` command: one call to a local aio's admin
 * HTTP API.
 */
#ifndef ADMIN_API_H
#define ADMIN_API_H

#include <stdio.h>

#include "admin/aio.h"

/* `api METHOD PATH [BODY]` (a: the words from "api" on, n of them)
 * against the admin API named by dir's aio.json (aio), signed with the
 * root key (IOLAKE_ROOT_ACCESS_KEY / _SECRET_KEY, else dir/root-credentials,
 * as aio takes them). Prints the answer's body on out; exit 0 on 2xx, 1
 * otherwise (the status on errf), 2 on usage or no root credentials. */
int admin_api(const char *dir, const struct admin_aio_info *aio, int n, char **a, FILE *out,
	      FILE *errf);

/* One call to that admin API (path below /api/v1/, body NULL for none),
 * signed as admin_api signs it: 0 with *status and the answer's body in
 * *out (malloc'd, *len bytes; free it), or 2 (no root credentials) or 1
 * (the call failed) with err filled. */
int admin_api_call(const char *dir, const struct admin_aio_info *aio, const char *method,
		   const char *path, const char *body, int *status, char **out, size_t *len,
		   char *err, size_t err_len);

#endif
