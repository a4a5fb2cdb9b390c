/*
 * flush_rate.c — see flush_rate.h. Writes in place within 1 MiB that was
 * written and fsync'ed before the clock starts, so every fdatasync
 * flushes data, not a growing file's metadata.
 */
#include "tests/lib/flush_rate.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/loop.h"

double flush_rate(const char *dir, double secs)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/iolake-flush-rate.%d", dir, (int)getpid());
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	char b[4096];
	memset(b, 7, sizeof(b));
	for (int i = 0; i < 256; i++)
		if (pwrite(fd, b, sizeof(b), (off_t)i * 4096) != (ssize_t)sizeof(b))
			break;
	fsync(fd);
	uint64_t n = 0;
	double t0 = (double)loop_now_ns() / 1e9, t = t0;
	do {
		if (pwrite(fd, b, sizeof(b), (off_t)((n % 256) * 4096)) != (ssize_t)sizeof(b))
			break;
		fdatasync(fd);
		n++;
	} while ((t = (double)loop_now_ns() / 1e9) - t0 < secs);
	close(fd);
	unlink(p);
	return t > t0 ? (double)n / (t - t0) : 0;
}
