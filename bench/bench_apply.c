/*
 * bench_apply.c — build/bench-apply: meta's apply alone, the serial part
 * of a small PUT on the meta loop that is IOLake's own code
 * (meta_state_apply on real RocksDB under /dev/shm; docs/performance.md,
 * "PUT 4 KiB: the meta loop's cost per PUT (branch metaput)").
 *
 * Entries shaped like iolake-aio's under PUT 4 KiB at 32 in flight: --ops
 * PutObjects per entry (a gateway loop's batch), --size inline bytes each,
 * new keys, if_bucket_digest set (a gateway that caches the bucket), two
 * clients taking turns (aio's two gateway loops), each op's acked_below
 * one batch behind its first id. Every entry is framed with
 * meta_state_entry_encode, as group_flush does, outside the timing. Per
 * window of --window entries: the thread's CPU time per op in
 * meta_state_apply (CLOCK_THREAD_CPUTIME_ID, so other work on the machine
 * moves it less than wall time), so a cost that grows with the entries
 * already applied shows. Libraft (its entry CRC, the log write) and the
 * RPCs are not in it. Prints figures; asserts nothing (an op that fails is
 * counted and printed).
 *
 *   build/bench-apply [--entries 6000] [--ops 13] [--size 4096]
 *                     [--window 1000] [--dir /dev/shm]
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/flags.h"
#include "meta/state.h"

#define OPS_MAX 256

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Frame b into *buf (grown as needed); its length. */
static size_t frame(const Iolake__Meta__OpBatch *b, uint8_t **buf, size_t *cap)
{
	size_t n = meta_state_entry_size(b);
	if (n > *cap) {
		free(*buf);
		*buf = malloc(n);
		*cap = n;
		if (!*buf)
			abort();
	}
	long w = meta_state_entry_encode(b, *buf, n);
	if (w < 0) {
		fprintf(stderr, "bench-apply: encode: %ld\n", w);
		exit(1);
	}
	return (size_t)w;
}

static struct meta_op_result res[META_BATCH_MAX_OPS];

int main(int argc, char **argv)
{
	int64_t entries = 6000, nops = 13, size = 4096, window = 1000;
	const char *base = "/dev/shm";
	struct flag_spec specs[] = {
		{ .name = "entries", .type = FLAG_INT64, .dst = &entries, .min = 1,
		  .max = 10000000, .help = "entries to apply" },
		{ .name = "ops", .type = FLAG_INT64, .dst = &nops, .min = 1, .max = OPS_MAX,
		  .help = "PutObjects per entry" },
		{ .name = "size", .type = FLAG_INT64, .dst = &size, .min = 0, .max = 1 << 16,
		  .help = "inline bytes per object" },
		{ .name = "window", .type = FLAG_INT64, .dst = &window, .min = 1,
		  .max = 10000000, .help = "entries per printed line" },
		{ .name = "dir", .type = FLAG_STRING, .dst = &base,
		  .help = "where the state's directory is made (a tmpfs)" },
		{ 0 },
	};
	int pos = 0;
	char err[256];
	int rc = flags_parse(specs, argc, argv, &pos, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, argv[0], "", specs);
		return 0;
	}
	if (rc) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/bench-apply.XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	struct meta_state *s = NULL;
	if (meta_state_open(dir, NULL, &s)) {
		fprintf(stderr, "bench-apply: cannot open a state in %s\n", dir);
		return 1;
	}
	uint8_t *buf = NULL;
	size_t cap = 0;
	uint64_t index = 1;

	/* The bucket, and its digest as a gateway caches it. */
	Iolake__Meta__Bucket bk = IOLAKE__META__BUCKET__INIT;
	bk.name = "bench";
	bk.owner = "alice";
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &bk;
	Iolake__Meta__Op cop = IOLAKE__META__OP__INIT;
	cop.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	cop.create_bucket = &cb;
	Iolake__Meta__Op *cops[1] = { &cop };
	Iolake__Meta__OpBatch batch = IOLAKE__META__OP_BATCH__INIT;
	batch.ops = cops;
	batch.n_ops = 1;
	size_t len = frame(&batch, &buf, &cap);
	if (meta_state_apply(s, index++, buf, len, res, META_BATCH_MAX_OPS) != 1 || res[0].err) {
		fprintf(stderr, "bench-apply: CreateBucket failed\n");
		return 1;
	}
	uint64_t digest = 0;
	meta_state_get_bucket_digest(s, "bench", &digest);

	static Iolake__Meta__Op ops[OPS_MAX], *pops[OPS_MAX];
	static Iolake__Meta__PutObject puts[OPS_MAX];
	static Iolake__Meta__ObjectRecord recs[OPS_MAX];
	static char keys[OPS_MAX][32];
	uint8_t *body = malloc((size_t)size + 1);
	for (int64_t i = 0; i < size; i++)
		body[i] = (uint8_t)(rand() >> 7);
	uint64_t next_id[2] = { 1, 1 };
	const uint64_t client[2] = { 0x51a7e0001ull, 0x51a7e0002ull };
	uint64_t key_no = 0, failed = 0;

	printf("bench-apply: %lld entries of %lld PutObjects of %lld B (two clients taking turns), "
	       "state in %s\n", (long long)entries, (long long)nops, (long long)size, dir);
	printf("| entries | ns CPU per op (apply) | wall ns per op | failed ops |\n"
	       "|---|---:|---:|---:|\n");
	uint64_t w_cpu = 0, w_wall = 0, all_cpu = 0, w_failed = 0;
	int64_t w_start = 0;
	for (int64_t e = 0; e < entries; e++) {
		int c = (int)(e & 1);
		uint64_t first = next_id[c];
		for (int64_t i = 0; i < nops; i++) {
			Iolake__Meta__ObjectRecord *r = &recs[i];
			iolake__meta__object_record__init(r);
			snprintf(keys[i], sizeof(keys[i]), "obj/%012llu", (unsigned long long)key_no++);
			r->bucket = "bench";
			r->key = keys[i];
			r->size = (uint64_t)size;
			r->etag = "d41d8cd98f00b204e9800998ecf8427e";
			r->content_type = "application/octet-stream";
			r->inline_data.data = body;
			r->inline_data.len = (size_t)size;
			iolake__meta__put_object__init(&puts[i]);
			puts[i].record = r;
			puts[i].if_bucket_digest = digest;
			iolake__meta__op__init(&ops[i]);
			ops[i].client_id = client[c];
			ops[i].request_id = next_id[c]++;
			ops[i].acked_below = first > (uint64_t)nops ? first - (uint64_t)nops : 0;
			ops[i].body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
			ops[i].put_object = &puts[i];
			pops[i] = &ops[i];
		}
		batch.ops = pops;
		batch.n_ops = (size_t)nops;
		len = frame(&batch, &buf, &cap);
		uint64_t w0 = wall_ns(), t0 = thread_ns();
		rc = meta_state_apply(s, index++, buf, len, res, META_BATCH_MAX_OPS);
		uint64_t t1 = thread_ns(), w1 = wall_ns();
		if (rc != nops) {
			fprintf(stderr, "bench-apply: apply returned %d\n", rc);
			return 1;
		}
		for (int64_t i = 0; i < nops; i++)
			w_failed += res[i].err != 0;
		w_cpu += t1 - t0;
		w_wall += w1 - w0;
		if ((e + 1) % window == 0 || e + 1 == entries) {
			double n = (double)(e + 1 - w_start) * (double)nops;
			printf("| %lld-%lld | %.0f | %.0f | %llu |\n", (long long)w_start,
			       (long long)e + 1, (double)w_cpu / n, (double)w_wall / n,
			       (unsigned long long)w_failed);
			all_cpu += w_cpu;
			failed += w_failed;
			w_cpu = w_wall = w_failed = 0;
			w_start = e + 1;
		}
	}
	printf("all: %.0f ns CPU per op over %lld ops, %llu failed\n",
	       (double)all_cpu / (double)(entries * nops), (long long)(entries * nops),
	       (unsigned long long)failed);
	meta_state_close(s);
	free(buf);
	free(body);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
