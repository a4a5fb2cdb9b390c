/*
 * api.c — iolake-admin api METHOD PATH [BODY] (contract in api.h): the
 * root key from the environment or the aio's root-credentials file, and
 * one call through admin/http.c. Needs no meta client.
 */
#include "admin/api.h"

#include <stdlib.h>

#include "admin/http.h"
#include "meta/rootkey.h"

int admin_api(const char *dir, const struct admin_aio_info *aio, int n, char **a, FILE *out,
	      FILE *errf)
{
	if (n < 3 || n > 4) {
		fprintf(errf, "iolake-admin: api METHOD PATH [BODY]\n");
		return 2;
	}
	if (!aio->admin_api[0]) {
		fprintf(errf, "iolake-admin: error: %s/aio.json names no admin API\n", dir);
		return 1;
	}
	struct rootkey_creds c;
	char err[4800], path[4200];
	int rc = rootkey_from_env(&c, err, sizeof(err));
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/root-credentials", dir);
		rc = rootkey_from_file(path, &c, err, sizeof(err));
		if (rc == 0)
			snprintf(err, sizeof(err), "no root credentials: %s does not exist and "
				 "IOLAKE_ROOT_ACCESS_KEY is not set", path);
	}
	if (rc <= 0) {
		fprintf(errf, "iolake-admin: error: %s\n", err);
		return 2;
	}
	struct admin_http_req r = { .url = aio->admin_api, .method = a[1], .path = a[2],
				    .body = n == 4 ? a[3] : NULL, .access_key = c.access_key,
				    .secret_key = c.secret_key,
				    .region = aio->region[0] ? aio->region : NULL };
	int status;
	char *body;
	size_t len;
	if (admin_http_call(&r, &status, &body, &len, err, sizeof(err))) {
		fprintf(errf, "iolake-admin: error: %s\n", err);
		return 1;
	}
	fwrite(body, 1, len, out);
	if (len && body[len - 1] != '\n')
		fputc('\n', out);
	free(body);
	if (status < 200 || status > 299) {
		fprintf(errf, "iolake-admin: error: HTTP %d\n", status);
		return 1;
	}
	return 0;
}

