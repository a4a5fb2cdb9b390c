/*
 * scratch.h — where a unit test puts its files: under the scratch
 * directory tests/run-tests.py made for this test binary
 * ($IOLAKE_TEST_SCRATCH, removed when the binary ends, passed or failed),
 * or under /dev/shm when the binary runs by itself. A test that fails in
 * Check's fork mode never reaches its own cleanup, so without the runner's
 * directory its files stayed in /dev/shm.
 *
 * Header-only: one static function, no state.
 */
#ifndef TESTS_LIB_SCRATCH_H
#define TESTS_LIB_SCRATCH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* "<scratch dir>/<name>" into out (n bytes), name printf-formatted.
 * Returns what snprintf returns: >= n means it did not fit. */
__attribute__((format(printf, 3, 4)))
static inline int test_scratch_path(char *out, size_t n, const char *fmt, ...)
{
	const char *dir = getenv("IOLAKE_TEST_SCRATCH");
	if (!dir || !dir[0])
		dir = "/dev/shm";
	int k = snprintf(out, n, "%s/", dir);
	if (k < 0 || (size_t)k >= n)
		return k;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(out + k, n - (size_t)k, fmt, ap);
	va_end(ap);
	return m < 0 ? m : k + m;
}

#endif
