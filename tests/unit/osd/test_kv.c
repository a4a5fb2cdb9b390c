/*
 * test_kv.c — group commit: concurrent callers on several threads all
 * complete on the owner's loop, share flushes (batches < writes), and
 * their writes survive a reopen. Commit log: groups that RocksDB lost
 * (a power cut through the fault seam, tests/lib/fault_io.h, while its
 * checkpoints are held: RocksDB comes back as the last open left it, its
 * WAL-less memtable gone) come back at reopen, in order, across log wraps
 * and checkpoints; so do those of a process that exits without closing,
 * and a group too large for the log is not overwritten by an older
 * logged one.
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/loop.h"
#include "osd/store/clog.h"
#include "osd/store/kv.h"
#include "tests/lib/fault_io.h"
#include "tests/lib/scratch.h"

#define THREADS 4
#define PER_THREAD 8      /* 32 in flight per round */
#define ROUNDS 20

static char dir[128], snap[128];

static void setup_once(void)
{
	test_scratch_path(dir, sizeof(dir), "iolake-test-kv-%d", (int)getpid());
	test_scratch_path(snap, sizeof(snap), "iolake-test-kv-%d.snap", (int)getpid());
}

/* Remove a directory tree with plain syscalls: the runner process must not
 * start RocksDB's background threads, or forked tests inherit a broken
 * thread pool. */
static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void teardown_once(void)
{
	rm_tree(dir);
	rm_tree(snap);
}

struct ctx {
	struct store_kv *kv;
	struct loop_queue q;
	pthread_barrier_t bar;
	int done;
	int errors;
	pthread_t loop_thread;
	int round;
};

struct item {
	struct store_kv_req req;
	rocksdb_writebatch_t *wb;
	struct ctx *c;
};

static void on_commit(struct store_kv_req *req, int status)
{
	struct item *it = req->data;
	/* Completions run on the owner's loop thread. */
	ck_assert(pthread_equal(pthread_self(), it->c->loop_thread));
	if (status)
		it->c->errors++;
	it->c->done++;
	rocksdb_writebatch_destroy(it->wb);
	free(it);
}

struct worker {
	struct ctx *c;
	int id;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ctx *c = w->c;
	pthread_barrier_wait(&c->bar);
	for (int i = 0; i < PER_THREAD; i++) {
		struct item *it = calloc(1, sizeof(*it));
		it->c = c;
		it->req.data = it;
		it->wb = rocksdb_writebatch_create();
		char k[64], v[64];
		int kl = snprintf(k, sizeof(k), "k-%03d-%d-%02d", c->round, w->id, i);
		int vl = snprintf(v, sizeof(v), "v-%03d-%d-%02d", c->round, w->id, i);
		rocksdb_writebatch_put(it->wb, k, (size_t)kl, v, (size_t)vl);
		int rc = store_kv_commit(c->kv, &it->req, it->wb, &c->q, on_commit);
		ck_assert_int_eq(rc, 0);
	}
	return NULL;
}

START_TEST(group_commit)
{
	char err[256];
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct ctx c = { .loop_thread = pthread_self() };
	ck_assert_int_eq(store_kv_open(NULL, dir, 0, 0, NULL, 0, &c.kv, err, sizeof(err)), 0);
	ck_assert_int_eq(loop_queue_init(&c.q, &loop), 0);

	for (c.round = 0; c.round < ROUNDS; c.round++) {
		pthread_barrier_init(&c.bar, NULL, THREADS);
		pthread_t th[THREADS];
		struct worker w[THREADS];
		for (int i = 0; i < THREADS; i++) {
			w[i] = (struct worker){ &c, i };
			pthread_create(&th[i], NULL, worker_main, &w[i]);
		}
		while (c.done < (c.round + 1) * THREADS * PER_THREAD)
			uv_run(&loop, UV_RUN_ONCE);
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&c.bar);
	}
	ck_assert_int_eq(c.errors, 0);
	struct store_kv_stats st;
	store_kv_stats(c.kv, &st);
	printf("kv group_commit: %llu writes in %llu batches (max %llu per batch), "
	       "mean flush %.1f us\n",
	       (unsigned long long)st.commits, (unsigned long long)st.batches,
	       (unsigned long long)st.max_batch,
	       st.batches ? (double)st.flush_ns_total / (double)st.batches / 1e3 : 0.0);
	ck_assert_uint_eq(st.commits, ROUNDS * THREADS * PER_THREAD);
	ck_assert_uint_lt(st.batches, st.commits);
	ck_assert_uint_gt(st.max_batch, 1);

	/* Bounded: a full queue refuses with -EAGAIN, the caller keeps req. */
	store_kv_close(c.kv);
	ck_assert_int_eq(store_kv_open(NULL, dir, 1, 0, NULL, 0, &c.kv, err, sizeof(err)), 0);
	/* (The commit thread may take the first at once; fill until refused.) */
	struct item *its[64];
	int queued = 0, refused = 0;
	for (int i = 0; i < 64; i++) {
		its[i] = calloc(1, sizeof(*its[i]));
		its[i]->c = &c;
		its[i]->req.data = its[i];
		its[i]->wb = rocksdb_writebatch_create();
		rocksdb_writebatch_put(its[i]->wb, "bound", 5, "x", 1);
		int rc = store_kv_commit(c.kv, &its[i]->req, its[i]->wb, &c.q, on_commit);
		if (rc == 0) {
			queued++;
		} else {
			ck_assert_int_eq(rc, -EAGAIN);
			refused++;
			rocksdb_writebatch_destroy(its[i]->wb);
			free(its[i]);
		}
	}
	ck_assert_int_gt(refused, 0);
	int target = c.done + queued;
	while (c.done < target)
		uv_run(&loop, UV_RUN_ONCE);
	store_kv_close(c.kv);

	/* Reopen: every write is there. */
	ck_assert_int_eq(store_kv_open(NULL, dir, 0, 0, NULL, 0, &c.kv, err, sizeof(err)), 0);
	for (int r = 0; r < ROUNDS; r++)
		for (int t = 0; t < THREADS; t++)
			for (int i = 0; i < PER_THREAD; i++) {
				char k[64], v[64];
				int kl = snprintf(k, sizeof(k), "k-%03d-%d-%02d", r, t, i);
				int vl = snprintf(v, sizeof(v), "v-%03d-%d-%02d", r, t, i);
				char *got;
				size_t gl;
				ck_assert_int_eq(store_kv_get(c.kv, k, (size_t)kl, &got, &gl), 0);
				ck_assert_uint_eq(gl, (size_t)vl);
				ck_assert_mem_eq(got, v, gl);
				free(got);
			}
	char *got;
	size_t gl;
	ck_assert_int_eq(store_kv_get(c.kv, "nope", 4, &got, &gl), IOL_ENOT_FOUND);
	store_kv_close(c.kv);
	loop_queue_close(&c.q, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

/* One commit at a time (each its own group), waited for. */
static void commit_one(struct ctx *c, uv_loop_t *loop, const char *k, const char *v, size_t vl)
{
	struct item *it = calloc(1, sizeof(*it));
	it->c = c;
	it->req.data = it;
	it->wb = rocksdb_writebatch_create();
	if (v)
		rocksdb_writebatch_put(it->wb, k, strlen(k), v, vl);
	else
		rocksdb_writebatch_delete(it->wb, k, strlen(k));
	int target = c->done + 1;
	ck_assert_int_eq(store_kv_commit(c->kv, &it->req, it->wb, &c->q, on_commit), 0);
	while (c->done < target)
		uv_run(loop, UV_RUN_ONCE);
}

static void val(char *v, size_t vl, int i, int gen)
{
	for (size_t j = 0; j < vl; j++)
		v[j] = (char)('a' + (i * 7 + gen * 3 + (int)j) % 26);
}

static void expect(struct store_kv *kv, const char *k, const char *v, size_t vl)
{
	char *got;
	size_t gl;
	int rc = store_kv_get(kv, k, strlen(k), &got, &gl);
	if (!v) {
		ck_assert_msg(rc == IOL_ENOT_FOUND, "%s should be deleted", k);
		return;
	}
	ck_assert_msg(rc == 0, "%s missing", k);
	ck_assert_uint_eq(gl, vl);
	ck_assert_msg(memcmp(got, v, vl) == 0, "%s has another value", k);
	free(got);
}

#define LOG_BYTES (256u << 10) /* small: many wraps and checkpoints */
#define KEYS 64
#define VLEN 3000              /* one 4 KiB log record per commit */

START_TEST(log_replay)
{
	char err[256], v[VLEN], k[32];
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct ctx c = { .loop_thread = pthread_self() };
	rm_tree(dir);
	ck_assert_int_eq(store_kv_open(NULL, dir, 0, LOG_BYTES, NULL, 0, &c.kv, err, sizeof(err)), 0);
	ck_assert_int_eq(loop_queue_init(&c.q, &loop), 0);
	/* Six times around the log (63 records of 4 KiB each), each key
	 * rewritten many times; 428 = 6 * 63 + 50, so the 24 records below
	 * run across the end of the log. */
	int gen[KEYS] = { 0 };
	for (int n = 0; n < 428; n++) {
		int i = n % KEYS;
		snprintf(k, sizeof(k), "key-%02d", i);
		val(v, VLEN, i, ++gen[i]);
		commit_one(&c, &loop, k, v, VLEN);
	}
	struct store_kv_stats st;
	store_kv_stats(c.kv, &st);
	ck_assert_uint_gt(st.checkpoints, 0);
	/* Reopen through the fault seam so the log starts empty (a clean
	 * close flushes): the records below then fit whatever the checkpoint
	 * thread's pace. The tail stays where it was. */
	store_kv_close(c.kv);
	struct fault_io *fi;
	struct fault_io_opts fo = { .seed = 1, .snap_dir = snap };
	ck_assert_int_eq(fault_io_new(&fo, &fi), 0);
	const struct store_io *io = fault_io_ops(fi);
	ck_assert_int_eq(store_kv_open(io, dir, 0, 0, NULL, 0, &c.kv, err, sizeof(err)), 0);
	store_kv_stats(c.kv, &st);
	ck_assert_uint_eq(st.replayed, 0);
	/* From here no checkpoint completes (they wait in the seam), so the
	 * log keeps every group, and the power cut below leaves RocksDB as
	 * this open made it durable: only the log has the groups. Rewrite
	 * some keys, delete others, rewrite one twice. */
	fault_io_hold(fi, FAULT_IO_KV_DURABLE, true);
	bool deleted[KEYS] = { false };
	for (int n = 0; n < 24; n++) {
		int i = (n * 5) % KEYS;
		snprintf(k, sizeof(k), "key-%02d", i);
		if (n % 4 == 3) {
			commit_one(&c, &loop, k, NULL, 0);
			deleted[i] = true;
		} else {
			val(v, VLEN, i, ++gen[i]);
			commit_one(&c, &loop, k, v, VLEN);
			deleted[i] = false;
		}
	}
	ck_assert_int_eq(c.errors, 0);
	fault_io_cut(fi, 0);
	store_kv_close(c.kv); /* what it flushes now goes nowhere */
	ck_assert_msg(fault_io_recover(fi, err, sizeof(err)) == 0, "%s", err);

	ck_assert_int_eq(store_kv_open(io, dir, 0, 0, NULL, 0, &c.kv, err, sizeof(err)), 0);
	store_kv_stats(c.kv, &st);
	ck_assert_uint_eq(st.replayed, 24);
	for (int i = 0; i < KEYS; i++) {
		snprintf(k, sizeof(k), "key-%02d", i);
		val(v, VLEN, i, gen[i]);
		expect(c.kv, k, deleted[i] ? NULL : v, VLEN);
	}
	/* The replay was made durable: the next open replays nothing, and
	 * the log takes writes again. */
	snprintf(k, sizeof(k), "key-%02d", 1);
	val(v, VLEN, 1, ++gen[1]);
	commit_one(&c, &loop, k, v, VLEN);
	store_kv_close(c.kv);
	ck_assert_int_eq(store_kv_open(io, dir, 0, 0, NULL, 0, &c.kv, err, sizeof(err)), 0);
	store_kv_stats(c.kv, &st);
	ck_assert_uint_eq(st.replayed, 0);
	expect(c.kv, k, v, VLEN);
	store_kv_close(c.kv);
	fault_io_destroy(fi);
	ck_assert_int_eq(c.errors, 0);
	loop_queue_close(&c.q, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

/*
 * A process that dies without closing loses RocksDB's memtable (its group
 * writes skip the WAL): reopen must restore every acknowledged commit from
 * the log. A group larger than the whole log goes through a synced WAL
 * write; the older logged value of the same key must not be replayed over
 * it.
 */
START_TEST(crash_and_oversized)
{
	static char big[100 << 10]; /* > the 60 KiB of a 64 KiB log */
	val(big, sizeof(big), 9, 9);
	rm_tree(dir);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char err[256];
		uv_loop_t loop;
		uv_loop_init(&loop);
		struct ctx c = { .loop_thread = pthread_self() };
		if (store_kv_open(NULL, dir, 0, STORE_CLOG_MIN_BYTES, NULL, 0, &c.kv, err, sizeof(err)) ||
		    loop_queue_init(&c.q, &loop))
			_exit(2);
		commit_one(&c, &loop, "A", "a1", 2);
		commit_one(&c, &loop, "B", "b1", 2);
		commit_one(&c, &loop, "A", big, sizeof(big)); /* oversized */
		commit_one(&c, &loop, "C", "c1", 2);
		commit_one(&c, &loop, "B", NULL, 0);
		_exit(c.errors ? 3 : 0); /* no close: as if killed */
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char err[256];
	struct store_kv *kv;
	ck_assert_int_eq(store_kv_open(NULL, dir, 0, 0, NULL, 0, &kv, err, sizeof(err)), 0);
	struct store_kv_stats ks;
	store_kv_stats(kv, &ks);
	ck_assert_uint_eq(ks.replayed, 2); /* C and the deletion of B */
	expect(kv, "A", big, sizeof(big));
	expect(kv, "B", NULL, 0);
	expect(kv, "C", "c1", 2);
	store_kv_close(kv);
}
END_TEST

/*
 * write_buffer_bytes bounds the memtables (two at most): 6 MiB of 16 KiB
 * values, less than the quarter of the default 64 MiB log at which the
 * checkpoint flushes, so only the bound can flush them. Without it (0,
 * RocksDB's 64 MiB) the same writes stay in memory, which the stat shows.
 */
#define WB_VLEN (16u << 10)
#define WB_WRITES 384          /* 6 MiB */

static uint64_t fill_and_watch(uint64_t write_buffer_bytes)
{
	static char v[WB_VLEN];
	char err[256], k[32];
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct ctx c = { .loop_thread = pthread_self() };
	rm_tree(dir);
	ck_assert_int_eq(store_kv_open(NULL, dir, 0, 0, NULL, write_buffer_bytes, &c.kv, err,
				       sizeof(err)), 0);
	ck_assert_int_eq(loop_queue_init(&c.q, &loop), 0);
	uint64_t most = 0;
	for (int n = 0; n < WB_WRITES; n++) {
		snprintf(k, sizeof(k), "wb-%04d", n);
		val(v, WB_VLEN, n, 1);
		commit_one(&c, &loop, k, v, WB_VLEN);
		struct store_kv_stats st;
		store_kv_stats(c.kv, &st);
		if (st.memtable_bytes > most)
			most = st.memtable_bytes;
	}
	ck_assert_int_eq(c.errors, 0);
	for (int n = 0; n < WB_WRITES; n += 37) {
		snprintf(k, sizeof(k), "wb-%04d", n);
		val(v, WB_VLEN, n, 1);
		expect(c.kv, k, v, WB_VLEN);
	}
	store_kv_close(c.kv);
	loop_queue_close(&c.q, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	return most;
}

START_TEST(write_buffer_bound)
{
	uint64_t bounded = fill_and_watch(1u << 20);
	uint64_t unbounded = fill_and_watch(0);
	fprintf(stderr, "write_buffer_bound: memtables at most %llu bytes with 1 MiB buffers, "
		"%llu with RocksDB's default\n", (unsigned long long)bounded,
		(unsigned long long)unbounded);
	ck_assert_uint_gt(bounded, 0);
	ck_assert_uint_le(bounded, 3u << 20);         /* two 1 MiB memtables and slack */
	ck_assert_uint_ge(unbounded, 5u << 20);       /* the 6 MiB written, unflushed */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/kv");
	TCase *tc = tcase_create("kv");
	tcase_add_unchecked_fixture(tc, setup_once, teardown_once);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, group_commit);
	tcase_add_test(tc, log_replay);
	tcase_add_test(tc, crash_and_oversized);
	tcase_add_test(tc, write_buffer_bound);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
