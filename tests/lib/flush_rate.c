/*
 * flush_rate.c — see flush_rate.h. Writes in place within a region that
 * was written and fsync'ed before the clock starts, so every fdatasync
 * flushes data, not a growing file's metadata.
 */
#include "tests/lib/flush_rate.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/loop.h"

#define SLOTS 256

double sync_write_rate(const char *dir, double secs, size_t bytes)
{
	bytes = (bytes + 4095) & ~(size_t)4095;
	char p[512];
	snprintf(p, sizeof(p), "%s/iolake-flush-rate.%d", dir, (int)getpid());
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	char *b = malloc(bytes);
	if (fd < 0 || !b) {
		if (fd >= 0) {
			close(fd);
			unlink(p);
		}
		free(b);
		return 0;
	}
	/* Not zeros, not one repeated byte: nothing below may compress it. */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < bytes; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (char)x;
	}
	for (int i = 0; i < SLOTS; i++)
		if (pwrite(fd, b, bytes, (off_t)i * (off_t)bytes) != (ssize_t)bytes)
			break;
	fsync(fd);
	uint64_t n = 0;
	double t0 = (double)loop_now_ns() / 1e9, t = t0;
	do {
		if (pwrite(fd, b, bytes, (off_t)((n % SLOTS) * bytes)) != (ssize_t)bytes)
			break;
		fdatasync(fd);
		n++;
	} while ((t = (double)loop_now_ns() / 1e9) - t0 < secs);
	close(fd);
	unlink(p);
	free(b);
	return t > t0 ? (double)n / (t - t0) : 0;
}

double flush_rate(const char *dir, double secs)
{
	return sync_write_rate(dir, secs, 4096);
}
