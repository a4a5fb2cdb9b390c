/*
 * bench_sse.c — throughput of the SSE chunk cipher (gateway/sse_crypt.h)
 * against MD5 (the ETag every PUT pays): the stream encryptor fed 64 KiB
 * pieces as the front end feeds a PUT, and per-chunk decryption as a GET
 * does it. One core, data in memory. Also the time of one 64 KiB chunk,
 * the longest the gateway loop spends in the cipher at a time.
 *
 * Prints figures only; it asserts nothing about speed.
 *
 *   build/bench-sse [--duration 1s]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/flags.h"
#include "common/hash.h"
#include "common/loop.h"
#include "gateway/sse_crypt.h"

#define BUF_BYTES (16u << 20)
#define PIECE (64u << 10)

static uint64_t duration_ms = 1000;
static const uint8_t key[SSE_KEY_BYTES] = { 42 };

/* GB/s of encrypting buf as one stream, PIECE at a time. */
static double enc_run(const uint8_t *buf, uint8_t *stored)
{
	uint64_t t0 = loop_now_ns(), bytes = 0;
	while (loop_now_ns() - t0 < duration_ms * 1000000ull) {
		struct sse_enc e;
		if (sse_enc_init(&e, key, BUF_BYTES, SSE_CHUNK_BYTES))
			exit(1);
		size_t o = 0;
		for (size_t off = 0; off < BUF_BYTES; off += PIECE) {
			size_t i = 0;
			while (i < PIECE) {
				i += sse_enc_put(&e, buf + off + i, PIECE - i);
				const uint8_t *b;
				size_t bl;
				if (sse_enc_full(&e) && !sse_enc_seal(&e, &b, &bl)) {
					memcpy(stored + o, b, bl);
					o += bl;
				}
			}
		}
		sse_enc_fini(&e);
		bytes += BUF_BYTES;
	}
	return (double)bytes / (double)(loop_now_ns() - t0);
}

/* GB/s of decrypting the stored stream chunk by chunk; *chunk_us the
 * mean time of one chunk. */
static double dec_run(const uint8_t *stored, uint8_t *out, double *chunk_us)
{
	struct sse_ctx *c = sse_ctx_new(key);
	uint64_t n = sse_nchunks(BUF_BYTES, SSE_CHUNK_BYTES), t0 = loop_now_ns(), bytes = 0, chunks = 0;
	size_t stride = SSE_CHUNK_BYTES + SSE_TAG_BYTES;
	while (loop_now_ns() - t0 < duration_ms * 1000000ull) {
		for (uint64_t i = 0; i < n; i++)
			if (sse_open_chunk(c, i, i + 1 == n, stored + i * stride, stride, out))
				exit(1);
		bytes += BUF_BYTES;
		chunks += n;
	}
	uint64_t ns = loop_now_ns() - t0;
	sse_ctx_free(c);
	*chunk_us = (double)ns / 1e3 / (double)chunks;
	return (double)bytes / (double)ns;
}

static double md5_run(const uint8_t *buf)
{
	struct hash_stream *h = hash_stream_new(HASH_MD5);
	uint8_t d[16];
	uint64_t t0 = loop_now_ns(), bytes = 0;
	while (loop_now_ns() - t0 < duration_ms * 1000000ull) {
		for (size_t off = 0; off < BUF_BYTES; off += PIECE)
			hash_stream_update(h, buf + off, PIECE);
		bytes += BUF_BYTES;
	}
	hash_stream_final(h, d);
	hash_stream_free(h);
	return (double)bytes / (double)(loop_now_ns() - t0);
}

int main(int argc, char **argv)
{
	struct flag_spec specs[] = {
		{ .name = "duration", .type = FLAG_DURATION, .dst = &duration_ms,
		  .help = "time per measurement (default 1s)" },
		{ 0 },
	};
	char err[256];
	int first;
	int rc = flags_parse(specs, argc, argv, &first, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, "bench-sse", "[flags]", specs);
		return 0;
	}
	if (rc || first < argc) {
		fprintf(stderr, "bench-sse: %s\n", rc ? err : "unexpected argument");
		return 2;
	}
	flags_free(specs);
	uint8_t *buf = malloc(BUF_BYTES), *out = malloc(BUF_BYTES);
	uint8_t *stored = malloc(sse_stored_len(BUF_BYTES, SSE_CHUNK_BYTES));
	if (!buf || !out || !stored)
		return 1;
	for (size_t i = 0; i < BUF_BYTES; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	printf("SSE chunk cipher (AES-256-GCM, %u KiB chunks), one core, %llu ms each\n\n",
	       SSE_CHUNK_BYTES >> 10, (unsigned long long)duration_ms);
	printf("| pass | GB/s |\n|---|---:|\n");
	printf("| encrypt (stream, %u KiB pieces) | %.2f |\n", PIECE >> 10, enc_run(buf, stored));
	double chunk_us;
	double d = dec_run(stored, out, &chunk_us);
	printf("| decrypt (per chunk) | %.2f |\n", d);
	printf("| MD5 (ETag, for comparison) | %.2f |\n", md5_run(buf));
	printf("\none chunk decrypted in %.1f us (the longest the loop stays in the cipher)\n",
	       chunk_us);
	if (memcmp(out, buf + BUF_BYTES - SSE_CHUNK_BYTES, SSE_CHUNK_BYTES) != 0)
		return 1;   /* the last chunk decrypted is the last plaintext chunk */
	free(buf), free(out), free(stored);
	return 0;
}
