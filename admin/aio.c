/*
 * admin_aio.c — see admin_aio.h. The document goes through common/json
 * (bounded, strict); liveness is kill(pid, 0) plus /proc/PID/cmdline
 * naming iolake-aio, so a pid reused by another process after a kill -9
 * reads as stale, not as a live aio.
 */
#include "admin/aio.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"

static int take(const struct json_value *v, char *out, size_t cap)
{
	if (!v || v->type != JSON_STRING || !v->u.str.len || v->u.str.len >= cap ||
	    memchr(v->u.str.s, 0, v->u.str.len))
		return -EINVAL;
	memcpy(out, v->u.str.s, v->u.str.len + 1);
	return 0;
}

int admin_aio_parse(const char *doc, size_t len, struct admin_aio_info *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	struct json_limits lim = { .max_bytes = ADMIN_AIO_JSON_MAX, .max_depth = 4,
				   .max_members = 64 };
	struct json_doc *d;
	struct json_error je = { 0 };
	if (json_parse(doc, len, &lim, &d, &je)) {
		*why = je.msg ? je.msg : "not JSON";
		return -EINVAL;
	}
	const struct json_value *r = json_root(d), *pid = json_get(r, "pid");
	int rc = 0;
	if (!pid || pid->type != JSON_NUMBER || !pid->u.num.is_int || pid->u.num.i <= 0 ||
	    pid->u.num.i > 0x7fffffff)
		*why = "no pid", rc = -EINVAL;
	else if (take(json_get(r, "meta_admin"), out->meta_admin, sizeof(out->meta_admin)))
		*why = "no meta_admin address", rc = -EINVAL;
	if (!rc) {
		out->pid = (long)pid->u.num.i;
		/* optional: older files may lack them */
		take(json_get(r, "admin_api"), out->admin_api, sizeof(out->admin_api));
		take(json_get(r, "s3_endpoint"), out->s3_endpoint, sizeof(out->s3_endpoint));
		take(json_get(r, "region"), out->region, sizeof(out->region));
	}
	json_free(d);
	return rc;
}

/* The process is alive and is an iolake-aio. */
static bool aio_alive(long pid)
{
	if (kill((pid_t)pid, 0) && errno != EPERM)
		return false;
	char path[64], cmd[512];
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;   /* no /proc here: trust kill() */
	ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	if (n <= 0)
		return false;             /* a zombie has an empty cmdline */
	cmd[n] = 0;                       /* argv[0] ends at the first NUL */
	const char *base = strrchr(cmd, '/');
	return strstr(base ? base + 1 : cmd, "iolake-aio") != NULL;
}

int admin_aio_find(const char *dir, struct admin_aio_info *out, char *err, size_t err_len)
{
	char path[4200], buf[ADMIN_AIO_JSON_MAX];
	snprintf(path, sizeof(path), "%s/aio.json", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT) {
			snprintf(err, err_len, "no iolake-aio is running on %s: %s does not exist "
				 "(aio writes it once it is up and removes it when it stops)", dir,
				 path);
			return -ENOENT;
		}
		snprintf(err, err_len, "%s: %s", path, strerror(e));
		return -EINVAL;
	}
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || n == (ssize_t)sizeof(buf)) {
		snprintf(err, err_len, "%s: %s", path, n < 0 ? strerror(errno) : "too large");
		return -EINVAL;
	}
	const char *why;
	if (admin_aio_parse(buf, (size_t)n, out, &why)) {
		snprintf(err, err_len, "%s is not what iolake-aio writes: %s", path, why);
		return -EINVAL;
	}
	if (!aio_alive(out->pid)) {
		snprintf(err, err_len, "%s is stale: the iolake-aio that wrote it (pid %ld) is not "
			 "running; it was killed or the machine restarted. Start it again: "
			 "iolake-aio --data-dir %s", path, out->pid, dir);
		return -ESRCH;
	}
	return 0;
}
