/*
 * test_store_crash.c — kill -9 under load, then verify.
 *
 * Each round: a writer child opens the store, deletes the previous round's
 * shards, then keeps 32 puts of mixed sizes (1 KiB..4 MiB) in flight,
 * reporting each key to a pipe only after its callback said durable. The
 * parent SIGKILLs it at a random moment. A verifier child then reopens the
 * store and checks: every acknowledged shard reads back identical; every
 * shard the index shows (acknowledged or not) reads back whole and
 * correct (nothing half-written is visible); used space equals the blocks
 * the index names, nothing is reserved, used + free == total (no leak).
 *
 * RocksDB runs only in the children: the runner process must stay free of
 * its threads, since it forks. Seed printed; IOLAKE_SEED replays it,
 * IOLAKE_CRASH_ROUNDS sets the round count.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/err.h"
#include "osd/store/store.h"
#include "osd/store/super.h"
#include "tests/lib/scratch.h"

#define INFLIGHT 32
#define PGS 8
#define DEV_SIZE (1ull << 30)

static char dev[96], meta[96];

struct ack {
	char oid[48];
	uint32_t pg;
	uint32_t len;
};

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void cleanup(void)
{
	unlink(dev);
	nftw(meta, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup_once(void)
{
	test_scratch_path(dev, sizeof(dev), "iolake-test-crash-%d.dev", (int)getpid());
	test_scratch_path(meta, sizeof(meta), "iolake-test-crash-%d.meta", (int)getpid());
	cleanup();
}

/* Content is a function of the key: any visible shard can be checked. */
static void fill(uint8_t *p, size_t len, const char *oid)
{
	uint32_t x = crc32c(0, oid, strlen(oid)) | 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

/* "r<round>-<n>-<len>": the length is part of the name. */
static size_t len_of(const struct store_key *k)
{
	char s[STORE_OID_MAX + 1];
	memcpy(s, k->oid, k->oid_len);
	s[k->oid_len] = '\0';
	const char *dash = strrchr(s, '-');
	return dash ? strtoul(dash + 1, NULL, 10) : 0;
}

static struct store_opts opts(void)
{
	struct store_opts o = { .device_path = dev, .meta_dir = meta, .create_size = DEV_SIZE,
				.osd_id = 1 };
	o.cluster_id[0] = 0x42;
	return o;
}

/* ------------------------------------------------------------ writer */

struct writer {
	uv_loop_t loop;
	struct store *s;
	int fd;
	int round;
	unsigned seed;
	int next;
	int inflight;
	uint64_t budget;
};

struct wput {
	struct store_put_req req;
	struct writer *w;
	struct ack a;
	struct buf *b;
};

static void start_put(struct writer *w);

static void on_put(struct store_put_req *req, int status)
{
	struct wput *p = req->data;
	struct writer *w = p->w;
	w->inflight--;
	if (status == 0) {
		/* Acknowledged: only now may the key be reported. */
		if (write(w->fd, &p->a, sizeof(p->a)) != (ssize_t)sizeof(p->a))
			_exit(3);
	}
	free(p);
	start_put(w);
}

static void start_put(struct writer *w)
{
	while (w->inflight < INFLIGHT) {
		/* 1 KiB..4 MiB, a third of them inline-sized. */
		uint32_t r = (uint32_t)rand_r(&w->seed);
		size_t len = r % 3 == 0 ? 1024 + (size_t)(r >> 8) % (64 << 10)
					: 1024 + (size_t)(r >> 8) % (4 << 20);
		if (w->budget < len)
			return; /* stay clear of ENOSPC: idle until killed */
		w->budget -= len;
		struct wput *p = calloc(1, sizeof(*p));
		p->w = w;
		p->req.data = p;
		snprintf(p->a.oid, sizeof(p->a.oid), "r%d-%d-%zu", w->round, w->next++, len);
		p->a.pg = (uint32_t)w->next % PGS;
		p->a.len = (uint32_t)len;
		struct buf *b = buf_new(len);
		fill(b->data, len, p->a.oid);
		b->len = len;
		struct store_key k;
		store_key_make(&k, p->a.pg, p->a.oid, strlen(p->a.oid), 0);
		int rc = store_put(w->s, &p->req, &k, (struct buf_slice){ b, 0, len }, on_put);
		buf_unref(b);
		if (rc)
			_exit(4);
		w->inflight++;
	}
}

struct wdel {
	struct store_del_req req;
	int *left;
};

static void on_del(struct store_del_req *req, int status)
{
	struct wdel *d = req->data;
	if (status)
		_exit(5);
	(*d->left)--;
	free(d);
}

static void writer_main(int fd, int round, unsigned seed)
{
	struct writer w = { .fd = fd, .round = round, .seed = seed, .budget = DEV_SIZE / 2 };
	char err[512];
	uv_loop_init(&w.loop);
	struct store_opts o = opts();
	if (store_open(&w.loop, &o, &w.s, err, sizeof(err)) != 0) {
		fprintf(stderr, "writer: store_open: %s\n", err);
		_exit(2);
	}
	/* Delete what earlier rounds left (the kill may land here too). */
	int left = 0;
	struct store_list_ent ents[64];
	for (uint32_t pg = 0; pg < PGS; pg++) {
		bool more = true;
		while (more) {
			int n = store_list(w.s, pg, NULL, ents, 64, &more);
			if (n < 0)
				_exit(6);
			for (int i = 0; i < n; i++) {
				struct wdel *d = calloc(1, sizeof(*d));
				d->req.data = d;
				d->left = &left;
				if (store_delete(w.s, &d->req, &ents[i].key, on_del) != 0)
					_exit(7);
				left++;
			}
			while (left)
				uv_run(&w.loop, UV_RUN_ONCE);
		}
	}
	start_put(&w);
	for (;;)
		uv_run(&w.loop, UV_RUN_DEFAULT); /* until SIGKILL */
}

/* ------------------------------------------------------------ verifier */

static int fails;
#define VCHECK(cond, ...)                                   \
	do {                                                \
		if (!(cond)) {                              \
			fprintf(stderr, "VERIFY: " __VA_ARGS__); \
			fputc('\n', stderr);                \
			fails++;                            \
		}                                           \
	} while (0)

struct vget {
	struct store_get_req req;
	bool fired;
	int status;
};

static void on_get(struct store_get_req *req, int status)
{
	struct vget *g = req->data;
	g->fired = true;
	g->status = status;
}

static void check_shard(uv_loop_t *loop, struct store *s, const struct store_key *k, size_t len,
			const char *why)
{
	char oid[STORE_OID_MAX + 1];
	memcpy(oid, k->oid, k->oid_len);
	oid[k->oid_len] = '\0';
	struct vget g = { 0 };
	g.req.data = &g;
	int rc = store_get(s, &g.req, k, 0, UINT64_MAX, on_get);
	VCHECK(rc == 0, "%s shard %s: get: %s", why, oid, iol_errname(rc));
	if (rc)
		return;
	while (!g.fired)
		uv_run(loop, UV_RUN_ONCE);
	VCHECK(g.status == 0, "%s shard %s: get status %s %s", why, oid, iol_errname(g.status),
	       g.req.err);
	if (g.status)
		return;
	VCHECK(g.req.out.len == len, "%s shard %s: length %zu, want %zu", why, oid,
	       g.req.out.len, len);
	if (g.req.out.len == len) {
		uint8_t *want = malloc(len ? len : 1);
		fill(want, len, oid);
		VCHECK(memcmp(buf_slice_data(&g.req.out), want, len) == 0, "%s shard %s: bytes differ",
		       why, oid);
		free(want);
	}
	buf_unref(g.req.out.buf);
}

static void on_closed(void *arg)
{
	*(bool *)arg = true;
}

static int verify_main(const struct ack *acks, size_t nacks, size_t *listed_out)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct store *s;
	char err[512];
	struct store_opts o = opts();
	int rc = store_open(&loop, &o, &s, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "VERIFY: store_open: %s\n", err);
		return 1;
	}
	struct store_stats ss;
	store_stats(s, &ss);
	printf("verify: %llu commit-log records replayed at open\n",
	       (unsigned long long)ss.kv.replayed);
	fflush(stdout);
	for (size_t i = 0; i < nacks; i++) {
		struct store_key k;
		store_key_make(&k, acks[i].pg, acks[i].oid, strlen(acks[i].oid), 0);
		check_shard(&loop, s, &k, acks[i].len, "acknowledged");
	}
	uint64_t blocks = 0;
	size_t listed = 0;
	struct store_list_ent ents[64];
	for (uint32_t pg = 0; pg < PGS; pg++) {
		bool more = true;
		struct store_key after;
		bool have = false;
		while (more) {
			int n = store_list(s, pg, have ? &after : NULL, ents, 64, &more);
			VCHECK(n >= 0, "list pg %u: %s", pg, iol_errname(n));
			if (n <= 0)
				break;
			for (int i = 0; i < n; i++) {
				check_shard(&loop, s, &ents[i].key, len_of(&ents[i].key), "visible");
				blocks += ents[i].stat.blocks;
			}
			listed += (size_t)n;
			after = ents[n - 1].key;
			have = true;
		}
	}
	struct store_space sp;
	store_space(s, &sp);
	VCHECK(sp.used_bytes == blocks * STORE_BLOCK_SIZE, "used %llu != indexed %llu",
	       (unsigned long long)sp.used_bytes,
	       (unsigned long long)(blocks * STORE_BLOCK_SIZE));
	VCHECK(sp.reserved_bytes == 0, "reserved %llu after open",
	       (unsigned long long)sp.reserved_bytes);
	VCHECK(sp.used_bytes + sp.free_bytes == sp.total_bytes, "used + free != total");
	bool closed = false;
	store_close(s, on_closed, &closed);
	while (!closed)
		uv_run(&loop, UV_RUN_ONCE);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
	*listed_out = listed;
	return fails ? 1 : 0;
}

/* ------------------------------------------------------------ runner */

START_TEST(kill9_rounds)
{
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	const char *env = getenv("IOLAKE_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 0);
	int rounds = 8;
	if (getenv("IOLAKE_CRASH_ROUNDS"))
		rounds = atoi(getenv("IOLAKE_CRASH_ROUNDS"));
	printf("crash test: seed=%u rounds=%d (IOLAKE_SEED / IOLAKE_CRASH_ROUNDS replay)\n", seed,
	       rounds);
	fflush(stdout);
	unsigned rs = seed;
	size_t cap = 1 << 16;
	struct ack *acks = malloc(cap * sizeof(*acks));
	for (int round = 0; round < rounds; round++) {
		int pfd[2];
		ck_assert_int_eq(pipe(pfd), 0);
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(pfd[0]);
			writer_main(pfd[1], round, seed + (unsigned)round);
			_exit(0);
		}
		close(pfd[1]);
		/* Kill somewhere in 20..1020 ms: during open, deletes or puts. */
		unsigned delay_ms = 20 + (unsigned)rand_r(&rs) % 1000;
		struct timespec ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int st;
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
			      "writer exited early (status 0x%x) in round %d", st, round);
		size_t nacks = 0;
		for (;;) {
			if (nacks == cap) {
				cap *= 2;
				acks = realloc(acks, cap * sizeof(*acks));
			}
			ssize_t n = read(pfd[0], &acks[nacks], sizeof(*acks));
			if (n <= 0)
				break;
			ck_assert_int_eq(n, (ssize_t)sizeof(*acks)); /* < PIPE_BUF: atomic */
			nacks++;
		}
		close(pfd[0]);

		int vp[2];
		ck_assert_int_eq(pipe(vp), 0);
		pid_t v = fork();
		ck_assert_int_ge(v, 0);
		if (v == 0) {
			close(vp[0]);
			size_t listed = 0;
			int rc = verify_main(acks, nacks, &listed);
			if (write(vp[1], &listed, sizeof(listed)) < 0)
				rc = 1;
			_exit(rc);
		}
		close(vp[1]);
		size_t listed = 0;
		if (read(vp[0], &listed, sizeof(listed)) != (ssize_t)sizeof(listed))
			listed = 0;
		close(vp[0]);
		ck_assert_int_eq(waitpid(v, &st, 0), v);
		printf("round %d: killed after %u ms, %zu acknowledged, %zu visible: %s\n", round,
		       delay_ms, nacks, listed,
		       WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "FAILED");
		fflush(stdout);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "verification failed in round %d (seed %u); see stderr", round, seed);
		ck_assert_uint_ge(listed, nacks);
	}
	free(acks);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/store_crash");
	TCase *tc = tcase_create("crash");
	tcase_add_unchecked_fixture(tc, setup_once, cleanup);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, kill9_rounds);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
