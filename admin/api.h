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

#endif
