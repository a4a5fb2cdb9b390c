/*
 * bench_raftcrc.c — ns per call of libraft's entry checksum: meta/
 * raftcrc.c's byteCrc32 (ISA-L crc32_ieee) against the byte-at-a-time
 * table loop it replaces (libraft's src/byte.c, copied here: the stock
 * one is overridden in this binary), at the sizes raft_uv hands it (a
 * batch header of one entry is 24 bytes, a PUT 4 KiB's batch data ~4.3
 * KiB) and below 16 bytes, where ISA-L's dispatch would cost the most.
 * One core, data in cache. Each sample times a block of calls; p50, p99
 * and max over the samples.
 *
 * Prints figures only; it asserts nothing about speed.
 *
 *   build/bench-raftcrc [--samples 2000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/flags.h"
#include "common/loop.h"
#include "meta/raftcrc.h"

static uint32_t table[256];

static uint32_t table_crc(const void *buf, size_t n, uint32_t crc)
{
	const unsigned char *p = buf;
	while (n--)
		crc = (crc << 8) ^ table[((crc >> 24) ^ *p++) & 255];
	return crc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static volatile uint32_t sink;

/* ns per call over samples blocks of calls, sorted into out. */
static void run(uint32_t (*fn)(const void *, size_t, uint32_t), const unsigned char *buf,
		size_t len, unsigned samples, double *out)
{
	unsigned calls = len < 256 ? 1000 : len < 8192 ? 50 : 4;
	uint32_t c = 0;
	for (unsigned s = 0; s < samples; s++) {
		uint64_t t0 = loop_now_ns();
		for (unsigned k = 0; k < calls; k++)
			c = fn(buf + (k & 7), len, c);
		out[s] = (double)(loop_now_ns() - t0) / calls;
	}
	sink = c;
	qsort(out, samples, sizeof(*out), cmp_double);
}

int main(int argc, char **argv)
{
	uint64_t samples = 2000;
	struct flag_spec specs[] = {
		{ .name = "samples", .type = FLAG_UINT64, .dst = &samples,
		  .help = "timed blocks per size and function (default 2000)" },
		{ 0 },
	};
	char err[256];
	int first;
	int rc = flags_parse(specs, argc, argv, &first, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, "bench-raftcrc", "[flags]", specs);
		return 0;
	}
	if (rc || first < argc || samples == 0 || samples > 1000000) {
		fprintf(stderr, "bench-raftcrc: %s\n", rc ? err : "bad argument");
		return 2;
	}
	flags_free(specs);
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i << 24;
		for (int k = 0; k < 8; k++)
			c = c & 0x80000000u ? (c << 1) ^ 0x04C11DB7u : c << 1;
		table[i] = c;
	}
	static unsigned char buf[65536 + 8];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 13);
	double *a = malloc(samples * sizeof(double)), *b = malloc(samples * sizeof(double));
	if (!a || !b)
		return 1;
	static const size_t sizes[] = { 4, 8, 15, 24, 64, 256, 4352, 65536 };
	printf("libraft byteCrc32, ns per call (p50 / p99 / max over %llu blocks)\n\n",
	       (unsigned long long)samples);
	printf("| bytes | table loop (stock) | ISA-L (raftcrc) | p50 speed-up |\n");
	printf("|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		if (byteCrc32(buf, n, 7) != table_crc(buf, n, 7)) {
			fprintf(stderr, "bench-raftcrc: values differ at %zu bytes\n", n);
			return 1;
		}
		run(table_crc, buf, n, (unsigned)samples, a);
		run(byteCrc32, buf, n, (unsigned)samples, b);
		size_t p50 = samples / 2, p99 = samples * 99 / 100;
		printf("| %zu | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.1fx |\n", n, a[p50],
		       a[p99], a[samples - 1], b[p50], b[p99], b[samples - 1], a[p50] / b[p50]);
	}
	free(a);
	free(b);
	return 0;
}
