/*
 * bench_store.c — shard put throughput of the store engine, next to the
 * flush rate a single writer gets on the same file system.
 *
 *   build/bench-store [DIR] [SECONDS] [SIZE_BYTES]
 *
 * Prints: fdatasync'ed 4 KiB pwrites/s by one writer (the drive's flush
 * rate), then store puts/s with 1 and with 32 in flight, with the group
 * commit figures (writes per commit-log flush, device fdatasyncs,
 * checkpoints), then the flush rate again and the ratio of 32-in-flight
 * puts/s to the flush rate (against the mean of the two flush-rate
 * measurements, and against the higher one: on a shared disk the rate
 * drifts within seconds). DIR defaults to /dev/shm (measures the
 * software: tmpfs flushes are free); give a directory on a disk to
 * measure the flush.
 *
 * Then the ceiling: 32 puts in flight can share one flush at most, so no
 * group commit does better than one write of 32 puts' commit-log bytes
 * (the mean the run measured) per flush. The bench times that write
 * (pwrite + fdatasync in place, one writer) and prints 32 x its rate as
 * the most puts/s the file system allows at 32 in flight with zero
 * software cost, next to the 8x target: on a disk whose sync-write
 * bandwidth is below 32 x 8 x the flush rate x 4 KiB, 8x is out of reach
 * whatever the store does.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ftw.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/loop.h"
#include "osd/store/store.h"
#include "tests/lib/flush_rate.h"

static double now_s(void)
{
	return (double)loop_now_ns() / 1e9;
}

struct bench {
	uv_loop_t loop;
	struct store *s;
	struct buf *data;
	size_t size;
	uint64_t started, done;
	int inflight, depth;
	double end;
	int errors;
};

struct bput {
	struct store_put_req req;
	struct bench *b;
};

static void issue(struct bench *b);

static void on_put(struct store_put_req *req, int status)
{
	struct bput *p = req->data;
	struct bench *b = p->b;
	if (status)
		b->errors++;
	b->done++;
	b->inflight--;
	free(p);
	issue(b);
}

static void issue(struct bench *b)
{
	while (b->inflight < b->depth && now_s() < b->end) {
		struct bput *p = calloc(1, sizeof(*p));
		p->b = b;
		p->req.data = p;
		char oid[32];
		int n = snprintf(oid, sizeof(oid), "bench-%llu", (unsigned long long)b->started % 100000);
		struct store_key k;
		store_key_make(&k, (uint32_t)(b->started % 64), oid, (size_t)n, 0);
		b->started++;
		int rc = store_put(b->s, &p->req, &k, (struct buf_slice){ b->data, 0, b->size }, on_put);
		if (rc) {
			fprintf(stderr, "put: %s\n", iol_strerror(rc));
			free(p);
			b->errors++;
			return;
		}
		b->inflight++;
	}
}

static void on_closed(void *arg)
{
	*(int *)arg = 1;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/dev/shm";
	double secs = argc > 2 ? atof(argv[2]) : 2.0;
	size_t size = argc > 3 ? strtoul(argv[3], NULL, 0) : 4096;
	char dev[512], meta[512], err[512];
	snprintf(dev, sizeof(dev), "%s/bench-store-%d.dev", dir, (int)getpid());
	snprintf(meta, sizeof(meta), "%s/bench-store-%d.meta", dir, (int)getpid());

	double fr = flush_rate(dir, secs);
	printf("%s: single-writer 4 KiB pwrite+fdatasync: %.0f flushes/s\n", dir, fr);

	struct bench b = { .size = size };
	uv_loop_init(&b.loop);
	struct store_opts o = { .device_path = dev, .meta_dir = meta, .create_size = 4ull << 30,
				.osd_id = 1 };
	if (store_open(&b.loop, &o, &b.s, err, sizeof(err))) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	b.data = buf_new(size);
	/* Shard bytes are erasure-coded data: make them incompressible. */
	uint64_t x = 0x2545f4914f6cdd1dull;
	for (size_t i = 0; i < size; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b.data->data[i] = (uint8_t)x;
	}
	b.data->len = size;
	int depths[2] = { 1, 32 };
	double r32 = 0, put_log_bytes = 0;
	for (int i = 0; i < 2; i++) {
		struct store_stats s0, s1;
		store_stats(b.s, &s0);
		b.depth = depths[i];
		b.done = 0;
		double t0 = now_s();
		b.end = t0 + secs;
		issue(&b);
		while (b.inflight)
			uv_run(&b.loop, UV_RUN_ONCE);
		double dt = now_s() - t0;
		store_stats(b.s, &s1);
		uint64_t batches = s1.kv.batches - s0.kv.batches;
		uint64_t commits = s1.kv.commits - s0.kv.commits;
		r32 = (double)b.done / dt;
		if (s1.kv.commits > s0.kv.commits)
			put_log_bytes = (double)(s1.kv.log_bytes - s0.kv.log_bytes) /
					(double)(s1.kv.commits - s0.kv.commits);
		printf("%s: %zu-byte puts, %2d in flight: %8.0f puts/s  (%.1f puts per log "
		       "flush, mean group write %.0f us of which log %.0f us, %llu device "
		       "fdatasyncs, %llu checkpoints)%s\n",
		       dir, size, b.depth, r32, batches ? (double)commits / (double)batches : 0.0,
		       batches ? (double)(s1.kv.flush_ns_total - s0.kv.flush_ns_total) /
					 (double)batches / 1e3 : 0.0,
		       batches ? (double)(s1.kv.log_ns_total - s0.kv.log_ns_total) /
					 (double)batches / 1e3 : 0.0,
		       (unsigned long long)(s1.data_flushes - s0.data_flushes),
		       (unsigned long long)(s1.kv.checkpoints - s0.kv.checkpoints),
		       b.errors ? "  ERRORS" : "");
	}
	size_t group = (size_t)(32 * put_log_bytes);
	double gr = sync_write_rate(dir, secs, group);
	double fr2 = flush_rate(dir, secs);
	printf("%s: single-writer 4 KiB pwrite+fdatasync: %.0f flushes/s (after)\n", dir, fr2);
	double mean = (fr + fr2) / 2, hi = fr > fr2 ? fr : fr2;
	printf("%s: group commit: 32 in flight = %.2fx the single-writer flush rate "
	       "(%.2fx against the higher measurement; target >= 8x)\n",
	       dir, mean > 0 ? r32 / mean : 0.0, hi > 0 ? r32 / hi : 0.0);
	printf("%s: ceiling: one %zu-byte pwrite+fdatasync (32 puts' log bytes, %.0f each): "
	       "%.0f/s, so at most %.0f puts/s at 32 in flight = %.2fx the flush rate; "
	       "this run reached %.0f%% of it\n",
	       dir, group, put_log_bytes, gr, 32 * gr, mean > 0 ? 32 * gr / mean : 0.0,
	       gr > 0 ? 100 * r32 / (32 * gr) : 0.0);
	int closed = 0;
	store_close(b.s, on_closed, &closed);
	while (!closed)
		uv_run(&b.loop, UV_RUN_ONCE);
	uv_run(&b.loop, UV_RUN_NOWAIT);
	uv_loop_close(&b.loop);
	buf_unref(b.data);
	unlink(dev);
	nftw(meta, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return b.errors ? 1 : 0;
}
