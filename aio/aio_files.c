/*
 * aio_files.c — iolake-aio's files in its data directory (aio_files.h):
 * root credentials, the cluster and SSE keys, aio.json.
 *
 * Owns those files' formats and their atomic writes. Not the services
 * that use the keys.
 *
 * Thread: aio's main thread.
 */
#include "aio/aio_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "meta/rootkey.h"

/* DIR/secret.key (made on first start, mode 0600): seals the access key
 * secrets meta stores (meta/secret.h), opened by the gateway. It lives
 * beside, never inside, DIR/meta, whose mark (secret-key-id) must name
 * it. */
int aio_cluster_key(const char *data_dir, const char *meta_dir, struct meta_secret *out,
		    char *err, size_t err_len)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/secret.key", data_dir);
	int rc = meta_secret_create(path, err, err_len);
	if (rc && rc != -EEXIST)
		return -1;
	if (meta_secret_load(path, out, err, err_len) ||
	    meta_secret_check_dir(meta_dir, out, err, err_len))
		return -1;
	return 0;
}

/* DIR/sse.key (made on first start, mode 0600, as secret.key), or the
 * file --sse-master-key-file names: wraps SSE-S3 data keys
 * (gateway/s3_sse.h). A key of its own, so that the one can be rotated or
 * kept apart without the other. */
int aio_sse_key(const char *data_dir, const char *given, struct meta_secret *out, char *err,
		size_t err_len)
{
	char path[4200];
	if (given) {
		snprintf(path, sizeof(path), "%s", given);
	} else {
		snprintf(path, sizeof(path), "%s/sse.key", data_dir);
		int rc = meta_secret_create(path, err, err_len);
		if (rc && rc != -EEXIST)
			return -1;
	}
	return meta_secret_load(path, out, err, err_len) ? -1 : 0;
}

/* DIR/aio.json: what this aio serves, for `iolake-admin --data-dir` and
 * scripts. Written whole to a temporary name and renamed over, so a reader
 * sees the old file or the new one, never half of one. */
void aio_write_json(const struct aio_json *a)
{
	char url[160], path[4200], tmp[4300];
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_ki64(&w, "pid", (int64_t)getpid());
	jsonw_kstr(&w, "data_dir", a->data_dir);
	snprintf(url, sizeof(url), "http://%s:%d", a->s3_host, a->s3_port);
	jsonw_kstr(&w, "s3_endpoint", url);
	jsonw_kstr(&w, "region", a->region);
	snprintf(url, sizeof(url), "%s:%d", a->madm_host, a->madm_port);
	jsonw_kstr(&w, "meta_admin", url);
	snprintf(url, sizeof(url), "http://%s:%d/api/v1/", a->api_host, a->api_port);
	jsonw_kstr(&w, "admin_api", url);
	snprintf(url, sizeof(url), "http://%s:%d/console/", a->api_host, a->api_port);
	jsonw_kstr(&w, "console", url);
	if (a->native_host) {
		snprintf(url, sizeof(url), "%s:%d", a->native_host, a->native_port);
		jsonw_kstr(&w, "native_endpoint", url);
	}
	jsonw_ki64(&w, "gw_loops", (int64_t)a->gw_loops);
	jsonw_kstr(&w, "root_credentials", getenv("IOLAKE_ROOT_ACCESS_KEY") ? "environment"
		   : "root-credentials");
	jsonw_obj_end(&w);
	char *doc;
	size_t len;
	if (jsonw_finish(&w, &doc, &len)) {
		LOG_ERROR("cannot write aio.json", "err=%s", LOG_Q("out of memory"));
		return;
	}
	snprintf(path, sizeof(path), "%s/aio.json", a->data_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bool ok = fd >= 0 && write(fd, doc, len) == (ssize_t)len && write(fd, "\n", 1) == 1;
	if (fd >= 0 && close(fd))
		ok = false;
	if (!ok || rename(tmp, path)) {
		LOG_ERROR("cannot write aio.json", "path=%s err=%s", path, LOG_Q(strerror(errno)));
		unlink(tmp);
	}
	free(doc);
}

void aio_remove_json(const char *data_dir)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/aio.json", data_dir);
	if (unlink(path) && errno != ENOENT)
		LOG_WARN("cannot remove aio.json", "path=%s err=%s", path, LOG_Q(strerror(errno)));
}

static int random_key(char *out, size_t n, const char *alphabet)
{
	size_t al = strlen(alphabet);
	uint8_t b[128];
	if (getrandom(b, n, 0) != (ssize_t)n)
		return -errno;
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[b[i] % al];
	out[n] = 0;
	return 0;
}

int aio_credentials(const char *data_dir, char ak[129], char sk[129], char *err, size_t err_len)
{
	struct rootkey_creds c;
	char path[4200];
	int rc = rootkey_from_env(&c, err, err_len);
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/root-credentials", data_dir);
		rc = rootkey_from_file(path, &c, err, err_len);
	}
	if (rc < 0)
		return -1;
	if (rc > 0) {
		snprintf(ak, 129, "%s", c.access_key);
		snprintf(sk, 129, "%s", c.secret_key);
		return 0;
	}
	if (random_key(ak, 20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") ||
	    random_key(sk, 40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")) {
		snprintf(err, err_len, "getrandom failed: %s", strerror(errno));
		return -1;
	}
	char tmp[4300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		snprintf(err, err_len, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	dprintf(fd, "access_key=%s\nsecret_key=%s\n", ak, sk);
	if (fsync(fd) || close(fd) || rename(tmp, path)) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}
