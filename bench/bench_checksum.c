/*
 * bench_checksum.c — throughput of the S3 additional checksums a PUT may
 * ask for (gateway/s3_checksum: CRC32, CRC32C, CRC64NVME, SHA1, SHA256)
 * and of MD5 (the ETag every PUT pays), streamed in 64 KiB pieces as the
 * front end feeds them from its read buffer. One core, data in memory.
 *
 * Prints figures only; it asserts nothing about speed.
 *
 *   build/bench-checksum [--duration 1s]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/flags.h"
#include "common/hash.h"
#include "common/loop.h"
#include "gateway/s3_checksum.h"

#define BUF_BYTES (16u << 20)
#define PIECE (64u << 10)

static uint64_t duration_ms = 1000;

/* GB/s of feeding buf to update() in PIECE pieces for duration_ms. */
static double run(void (*update)(void *ctx, const void *p, size_t n), void *ctx, const uint8_t *buf)
{
	uint64_t t0 = loop_now_ns(), bytes = 0;
	while (loop_now_ns() - t0 < duration_ms * 1000000ull) {
		for (size_t off = 0; off < BUF_BYTES; off += PIECE)
			update(ctx, buf + off, PIECE);
		bytes += BUF_BYTES;
	}
	return (double)bytes / (double)(loop_now_ns() - t0);
}

static void ck_update(void *ctx, const void *p, size_t n)
{
	s3_ck_update(ctx, p, n);
}

static void md5_update(void *ctx, const void *p, size_t n)
{
	hash_stream_update(ctx, p, n);
}

int main(int argc, char **argv)
{
	struct flag_spec specs[] = {
		{ .name = "duration", .type = FLAG_DURATION, .dst = &duration_ms,
		  .help = "time per algorithm (default 1s)" },
		{ 0 },
	};
	char err[256];
	int first;
	int rc = flags_parse(specs, argc, argv, &first, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, "bench-checksum", "[flags]", specs);
		return 0;
	}
	if (rc || first < argc) {
		fprintf(stderr, "bench-checksum: %s\n", rc ? err : "unexpected argument");
		return 2;
	}
	flags_free(specs);
	uint8_t *buf = malloc(BUF_BYTES);
	if (!buf)
		return 1;
	for (size_t i = 0; i < BUF_BYTES; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	printf("S3 checksums, %u KiB pieces, one core, %llu ms each\n\n", PIECE >> 10,
	       (unsigned long long)duration_ms);
	printf("| algorithm | GB/s |\n|---|---:|\n");
	struct s3_ck k;
	if (s3_ck_init(&k))
		return 1;
	for (int a = S3_CK_CRC32; a < S3_CK__COUNT; a++) {
		struct s3_ck_value v;
		s3_ck_begin(&k, (enum s3_ck_algo)a);
		double gbs = run(ck_update, &k, buf);
		s3_ck_final(&k, &v);
		printf("| %s | %.2f |\n", s3_ck_name((enum s3_ck_algo)a), gbs);
	}
	s3_ck_free(&k);
	struct hash_stream *md5 = hash_stream_new(HASH_MD5);
	if (!md5)
		return 1;
	double gbs = run(md5_update, md5, buf);
	printf("| MD5 (ETag, for comparison) | %.2f |\n", gbs);
	hash_stream_free(md5);
	free(buf);
	return 0;
}
