/*
 * aio_files.h — the files iolake-aio keeps in its data directory (aio/
 * main.c's top comment has the layout): the root credentials, the cluster
 * key, the SSE master key, and aio.json. Split out of aio/main.c.
 *
 * Owns reading and writing those files. Not what uses them.
 *
 * Thread: aio's main thread.
 */
#ifndef AIO_AIO_FILES_H
#define AIO_AIO_FILES_H

#include <stddef.h>

#include "meta/secret.h"

/* DIR/root-credentials (or the environment's IOLAKE_ROOT_*): the root
 * access key and secret into ak, sk; made at random and written (0600)
 * on first start. 0, or -1 with err. */
int aio_credentials(const char *data_dir, char ak[129], char sk[129], char *err, size_t err_len);

/* DIR/secret.key, made on first start, checked against meta_dir's mark.
 * 0, or -1 with err. */
int aio_cluster_key(const char *data_dir, const char *meta_dir, struct meta_secret *out,
		    char *err, size_t err_len);

/* given, or DIR/sse.key made on first start. 0, or -1 with err. */
int aio_sse_key(const char *data_dir, const char *given, struct meta_secret *out, char *err,
		size_t err_len);

struct aio_json {
	const char *data_dir, *region, *s3_host, *madm_host, *api_host;
	int s3_port, madm_port, api_port;
	const char *native_host;   /* NULL: no native listener */
	int native_port;
	unsigned gw_loops;         /* the gateway's loops (a native client's connections) */
};

/* DIR/aio.json, written whole (write + rename); a failure is logged. */
void aio_write_json(const struct aio_json *a);
void aio_remove_json(const char *data_dir);

#endif
