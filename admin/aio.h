/*
 * admin_aio.h — iolake-admin's way to a local iolake-aio: DIR/aio.json,
 * which aio writes once it is up (write + rename) and removes when it
 * stops cleanly, names what it serves. A file whose pid is not a running
 * iolake-aio is stale (aio was killed, or the machine restarted).
 *
 * Reads one small file and /proc; no network. Used by admin/main.c.
 */
#ifndef META_ADMIN_AIO_H
#define META_ADMIN_AIO_H

#include <stddef.h>

#define ADMIN_AIO_JSON_MAX 8192

struct admin_aio_info {
	long pid;
	char meta_admin[64];       /* meta's RPC for iolake-admin, "host:port" */
	char admin_api[256];       /* "http://host:port/api/v1/" */
	char s3_endpoint[256];
	char region[64];
};

/* Parse an aio.json document. 0, or -EINVAL with why (static text). */
int admin_aio_parse(const char *doc, size_t len, struct admin_aio_info *out, const char **why);

/* Find the aio of data dir dir: 0 and *out; -ENOENT no DIR/aio.json;
 * -ESRCH its pid is not a running iolake-aio (stale); -EINVAL unreadable
 * or malformed. err gets one line for the operator in every case. */
int admin_aio_find(const char *dir, struct admin_aio_info *out, char *err, size_t err_len);

#endif
