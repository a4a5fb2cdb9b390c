/*
 * admin_http.h — `iolake-admin api METHOD PATH [BODY]`: one request to the
 * admin HTTP API (gateway/admin_api.h), signed with SigV4 (common/sigv4,
 * service "iolake-admin"), over a blocking socket: for scripts and for
 * what the meta RPC commands do not cover. HTTP/1.1 with Connection:
 * close; the answer is read whole (up to ADMIN_HTTP_RESP_MAX bytes).
 *
 * Plain http:// only (the API listens on a management address; TLS is the
 * S3 port's). Does not follow redirects.
 */
#ifndef META_ADMIN_HTTP_H
#define META_ADMIN_HTTP_H

#include <stddef.h>

#define ADMIN_HTTP_RESP_MAX (16u << 20)

struct admin_http_req {
	const char *url;          /* "http://host:port/..." (the API's base; its path ignored) */
	const char *method;       /* GET, POST, DELETE */
	const char *path;         /* "/api/v1/..." ("cluster" means "/api/v1/cluster") */
	const char *body;         /* NULL: none */
	const char *access_key, *secret_key;
	const char *region;       /* NULL: us-east-1 */
	unsigned timeout_ms;      /* connect, send and each read; 0: 10000 */
};

/* 0 and the HTTP status, the body (malloc'd, NUL-terminated, the caller's
 * to free) and its length; or -errno / -EINVAL with err saying why. */
int admin_http_call(const struct admin_http_req *r, int *status, char **body, size_t *len,
		    char *err, size_t err_len);

#endif
