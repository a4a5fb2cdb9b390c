/*
 * bench_fault.c — what the first touch of fresh anonymous memory costs on
 * this machine: the page faults a new process pays while its heap, its
 * memtables and its Raft log grow (docs/performance.md, "the disk cell,
 * steady"). Each sample maps --mib MiB (2 MiB aligned), writes one byte
 * per 4 KiB page and unmaps it; with 4 KiB pages, then with
 * MADV_HUGEPAGE (transparent huge pages where the kernel allows them:
 * /sys/kernel/mm/transparent_hugepage/enabled). Per sample, µs per 4 KiB
 * of memory touched; p50, p99 and max over the samples.
 *
 * Prints figures only; it asserts nothing about speed.
 *
 *   build/bench-fault [--mib 64] [--samples 20]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "common/flags.h"

#define HUGE_BYTES (2u << 20)

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* µs per 4 KiB page for one first touch of bytes of fresh memory, or a
 * negative value when mmap or madvise fails. */
static double touch_once(size_t bytes, int advice)
{
	size_t len = bytes + HUGE_BYTES;
	char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return -1;
	char *p = (char *)(((uintptr_t)raw + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
	double us = -1;
	if (!advice || madvise(p, bytes, advice) == 0) {
		double t0 = now_us();
		for (size_t i = 0; i < bytes; i += 4096)
			((volatile char *)p)[i] = 1;
		us = (now_us() - t0) / (double)(bytes / 4096);
	}
	munmap(raw, len);
	return us;
}

int main(int argc, char **argv)
{
	uint64_t mib = 64, samples = 20;
	struct flag_spec specs[] = {
		{ .name = "mib", .type = FLAG_UINT64, .dst = &mib,
		  .help = "fresh memory touched per sample, MiB (default 64)" },
		{ .name = "samples", .type = FLAG_UINT64, .dst = &samples,
		  .help = "samples per page kind (default 20)" },
		{ 0 },
	};
	char err[256];
	int first;
	int rc = flags_parse(specs, argc, argv, &first, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, "bench-fault", "[flags]", specs);
		return 0;
	}
	if (rc || first < argc || mib == 0 || mib > 65536 || samples == 0 || samples > 100000) {
		fprintf(stderr, "bench-fault: %s\n", rc ? err : "bad argument");
		return 2;
	}
	flags_free(specs);
	static const struct {
		const char *name;
		int advice;
	} kinds[] = { { "4 KiB pages", 0 }, { "MADV_HUGEPAGE", MADV_HUGEPAGE } };
	double *us = calloc(samples, sizeof(*us));
	if (!us)
		return 1;
	printf("first touch of %llu MiB of fresh anonymous memory, %llu samples each\n\n",
	       (unsigned long long)mib, (unsigned long long)samples);
	printf("| pages | µs per 4 KiB p50 | p99 | max |\n|---|---:|---:|---:|\n");
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t n = 0;
		for (uint64_t s = 0; s < samples; s++) {
			double v = touch_once((size_t)mib << 20, kinds[k].advice);
			if (v >= 0)
				us[n++] = v;
		}
		if (!n) {
			printf("| %s | failed | | |\n", kinds[k].name);
			continue;
		}
		qsort(us, n, sizeof(*us), cmp_double);
		printf("| %s | %.2f | %.2f | %.2f |\n", kinds[k].name, us[n / 2],
		       us[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], us[n - 1]);
	}
	free(us);
	return 0;
}
