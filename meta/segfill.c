/*
 * segfill.c — libraft's segments preallocated as written blocks (see
 * segfill.h).
 *
 * Owns: the process's posix_fallocate(3) symbol (libc's, then a zero
 * fill for files in registered directories), the registered directories
 * (canonical absolute paths, under a mutex) and the fill's counters.
 * Does not: write below a file's old end, fill files anywhere else, or
 * report a failed fill as posix_fallocate's failure.
 */
#include "meta/segfill.h"

#include "common/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define FILL_ALIGN 4096                 /* O_DIRECT's alignment, any device here */
#define FILL_CHUNK (1u << 20)           /* one write: small log writes interleave */

typedef int (*fallocate_fn)(int, off_t, off_t);

static _Atomic(fallocate_fn) libc_fallocate;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char **dirs;                     /* under mu */
static size_t n_dirs, cap_dirs;
static atomic_size_t n_dirs_hint;       /* 0: no lookup at all */
static struct segfill_stats stats;      /* under mu */

/* Zeros for O_DIRECT writes, in .bss and never written to: its pages
 * stay the kernel's shared zero page (no resident memory, no 1 MiB in
 * the executable as a const array would be). */
static char zeros[FILL_CHUNK] __attribute__((aligned(FILL_ALIGN)));

static fallocate_fn real_fallocate(void)
{
	fallocate_fn f = atomic_load_explicit(&libc_fallocate, memory_order_acquire);
	if (!f) {
		/* The next definition after this executable's: libc's. */
		f = (fallocate_fn)dlsym(RTLD_NEXT, "posix_fallocate");
		atomic_store_explicit(&libc_fallocate, f, memory_order_release);
	}
	return f;
}

int segfill_register_dir(const char *dir)
{
	char abs[PATH_MAX];
	if (!realpath(dir, abs))
		return -errno;
	int rc = 0;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_dirs; i++)
		if (strcmp(dirs[i], abs) == 0)
			goto out;
	if (n_dirs == cap_dirs) {
		size_t cap = cap_dirs ? cap_dirs * 2 : 8;
		char **d = realloc(dirs, cap * sizeof(*d));
		if (!d) {
			rc = -ENOMEM;
			goto out;
		}
		dirs = d;
		cap_dirs = cap;
	}
	if (!(dirs[n_dirs] = strdup(abs))) {
		rc = -ENOMEM;
		goto out;
	}
	n_dirs++;
	atomic_store(&n_dirs_hint, n_dirs);
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

void segfill_unregister_dir(const char *dir)
{
	char abs[PATH_MAX];
	if (!realpath(dir, abs))
		return;   /* removed already: nothing can be created in it */
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_dirs; i++) {
		if (strcmp(dirs[i], abs) == 0) {
			free(dirs[i]);
			dirs[i] = dirs[--n_dirs];
			break;
		}
	}
	atomic_store(&n_dirs_hint, n_dirs);
	pthread_mutex_unlock(&mu);
}

void segfill_get_stats(struct segfill_stats *st)
{
	pthread_mutex_lock(&mu);
	*st = stats;
	pthread_mutex_unlock(&mu);
}

/* fd's file lies directly in a registered directory. */
static bool registered(int fd)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t k = readlink(link, path, sizeof(path) - 1);
	if (k <= 0)
		return false;
	path[k] = '\0';
	char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return false;
	*slash = '\0';
	bool hit = false;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_dirs && !hit; i++)
		hit = strcmp(dirs[i], path) == 0;
	pthread_mutex_unlock(&mu);
	return hit;
}

static void count(uint64_t *field, uint64_t by)
{
	pthread_mutex_lock(&mu);
	*field += by;
	pthread_mutex_unlock(&mu);
}

/* Write zeros over [from, to) of fd's file (both FILL_ALIGN-aligned)
 * through a descriptor of its own: O_DIRECT, so no page stays cached
 * over the range (a cached page makes a later RWF_NOWAIT write refuse),
 * and without the caller's O_DSYNC, so one fdatasync at the end commits
 * every extent conversion at once. */
static void fill(int fd, off_t from, off_t to)
{
	struct statfs sfs;
	if (fstatfs(fd, &sfs) == 0 &&
	    (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
		count(&stats.skipped, 1);
		return;
	}
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	int wfd = open(link, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (wfd < 0) {
		count(&stats.skipped, 1);
		return;
	}
	off_t at = from;
	while (at < to) {
		size_t n = (size_t)(to - at) < FILL_CHUNK ? (size_t)(to - at) : FILL_CHUNK;
		ssize_t w = pwrite(wfd, zeros, n, at);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			int err = w < 0 ? errno : EIO;
			if (at == from && err == EINVAL) {
				/* O_DIRECT accepted at open, refused at write
				 * (alignment): leave it to libc's allocation. */
				count(&stats.skipped, 1);
			} else {
				count(&stats.failed, 1);
				LOG_WARN("raft segment left fallocated: zero fill failed",
					 "fd=%d at=%lld err=%s", fd, (long long)at, strerror(err));
			}
			close(wfd);
			return;
		}
		at += w;
	}
	int err = fdatasync(wfd) ? errno : 0;
	close(wfd);
	if (err) {
		count(&stats.failed, 1);
		LOG_WARN("raft segment left fallocated: fdatasync of the zero fill failed",
			 "fd=%d err=%s", fd, strerror(err));
		return;
	}
	pthread_mutex_lock(&mu);
	stats.files++;
	stats.bytes += (uint64_t)(to - from);
	pthread_mutex_unlock(&mu);
}

int posix_fallocate(int fd, off_t offset, off_t len)
{
	fallocate_fn f = real_fallocate();
	if (!f)
		return ENOSYS;
	struct stat st;
	bool watch = atomic_load(&n_dirs_hint) > 0 && offset >= 0 && len > 0 &&
		     fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && registered(fd);
	int rc = f(fd, offset, len);
	if (rc != 0 || !watch)
		return rc;
	/* Only what the call added past the old end, in whole blocks: a
	 * partial block at either edge stays as libc allocated it. */
	off_t from = offset > st.st_size ? offset : st.st_size;
	off_t to = offset + len;
	from = (from + FILL_ALIGN - 1) / FILL_ALIGN * FILL_ALIGN;
	to = to / FILL_ALIGN * FILL_ALIGN;
	if (from < to)
		fill(fd, from, to);
	return 0;
}
