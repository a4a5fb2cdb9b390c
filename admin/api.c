/*
 * api.c — iolake-admin api METHOD PATH [BODY] (contract in api.h): the
 * root key from the environment or the aio's root-credentials file, and
 * one call through admin/http.c. Needs no meta client.
 */
#include "admin/api.h"

#include <stdlib.h>

#include "admin/http.h"
#include "meta/rootkey.h"

int admin_api_call(const char *dir, const struct admin_aio_info *aio, const char *method,
		   const char *path, const char *body, int *status, char **out, size_t *len,
		   char *err, size_t err_len)
{
	if (!aio->admin_api[0]) {
		snprintf(err, err_len, "%s/aio.json names no admin API", dir);
		return 1;
	}
	struct rootkey_creds c;
	char file[4200];
	int rc = rootkey_from_env(&c, err, err_len);
	if (rc == 0) {
		snprintf(file, sizeof(file), "%s/root-credentials", dir);
		rc = rootkey_from_file(file, &c, err, err_len);
		if (rc == 0)
			snprintf(err, err_len, "no root credentials: %s does not exist and "
				 "IOLAKE_ROOT_ACCESS_KEY is not set", file);
	}
	if (rc <= 0)
		return 2;
	struct admin_http_req r = { .url = aio->admin_api, .method = method, .path = path,
				    .body = body, .access_key = c.access_key,
				    .secret_key = c.secret_key,
				    .region = aio->region[0] ? aio->region : NULL };
	return admin_http_call(&r, status, out, len, err, err_len) ? 1 : 0;
}

int admin_api(const char *dir, const struct admin_aio_info *aio, int n, char **a, FILE *out,
	      FILE *errf)
{
	if (n < 3 || n > 4) {
		fprintf(errf, "iolake-admin: api METHOD PATH [BODY]\n");
		return 2;
	}
	char err[4800];
	int status;
	char *body;
	size_t len;
	int rc = admin_api_call(dir, aio, a[1], a[2], n == 4 ? a[3] : NULL, &status, &body, &len,
				err, sizeof(err));
	if (rc) {
		fprintf(errf, "iolake-admin: error: %s\n", err);
		return rc;
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
