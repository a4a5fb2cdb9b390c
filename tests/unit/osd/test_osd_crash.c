/*
 * test_osd_crash.c — kill -9 of the real iolake-osd binary under load,
 * then restart and verify over RPC (HTTP/2 on loopback).
 *
 * Each round: start build/iolake-osd (the one next to this test's build
 * tree) on a 512 MiB file in /dev/shm; verify what earlier rounds left:
 *   - every shard acknowledged (PutShard answered OK) reads back identical;
 *   - every shard ListShards shows (acknowledged or not) reads back whole,
 *     with the length its name says, content and crc32c intact: nothing
 *     half-written is visible;
 *   - space adds up: reserved == 0, used + free == total, and used equals
 *     the extents of the listed shards; after deleting them all, used == 0.
 * Then keep 32 PutShard calls of mixed sizes (1 KiB..4 MiB, a third of
 * them inline-sized) in flight, recording a shard as acknowledged only in
 * the OK callback, and SIGKILL the OSD at a random moment. After the last
 * round the OSD is started once more, verified, and stopped with SIGTERM,
 * which must exit 0.
 *
 * Shard content is a slice of one random pool chosen by the object id, so
 * any visible shard can be checked without remembering it. The seed is
 * printed; IOLAKE_SEED replays it, IOLAKE_CRASH_ROUNDS sets the rounds.
 * This process never opens RocksDB (only the OSD child does).
 *
 * Each OSD listens on a port the kernel picks, which may be one an earlier
 * round's OSD had: this process's circuit for that address (opened by the
 * kill) then refuses calls at once until its retry time. The verify waits
 * for that time (wait_circuit_retry), and its first call must then go
 * through, as the half-open trial.
 *
 * Each round's OSD log is its own file beside the device; all are removed
 * when the test passes and kept when it fails (under tests/run-tests.py,
 * in the scratch dir it keeps and names).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "tests/lib/osd_call.h"
#include "tests/lib/scratch.h"

#define INFLIGHT 32
#define PGS 8
#define DEV_SIZE (512ull << 20)  /* tmpfs: fallocate takes RAM */
#define POOL_BYTES (8u << 20)
#define MAX_LEN (4u << 20)

static char bin[PATH_MAX + 32], dev[128], meta[128], logbase[128], logp[160];

struct ack {
	char oid[48];
	uint32_t pg;
	uint32_t len;
};

static struct buf *pool;

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* The device and the OSD's metadata; the logs go only when the test
 * passes (remove_logs): a failure's are its evidence. */
static void cleanup_files(void)
{
	unlink(dev);
	nftw(meta, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void log_path(int round)
{
	snprintf(logp, sizeof(logp), "%s-r%02d.log", logbase, round);
}

static void remove_logs(int rounds)
{
	for (int r = 0; r <= rounds; r++) {
		log_path(r);
		unlink(logp);
	}
}

/* The binary of the same build flavour: <build>/tests/unit/osd/this ->
 * <build>/iolake-osd; else $IOLAKE_BUILD/iolake-osd. */
static void find_binary(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	bin[0] = '\0';
	if (n > 0) {
		self[n] = '\0';
		for (int up = 0; up < 4; up++) {
			char *s = strrchr(self, '/');
			if (s)
				*s = '\0';
		}
		snprintf(bin, sizeof(bin), "%s/iolake-osd", self);
	}
	if (access(bin, X_OK) != 0 && getenv("IOLAKE_BUILD"))
		snprintf(bin, sizeof(bin), "%s/iolake-osd", getenv("IOLAKE_BUILD"));
	ck_assert_msg(access(bin, X_OK) == 0, "iolake-osd not found (tried %s)", bin);
}

static uint32_t content_off(const char *oid)
{
	return crc32c(0, oid, strlen(oid)) % (POOL_BYTES - MAX_LEN);
}

/* "r<round>-<n>-<len>": the length is part of the name. */
static uint32_t len_of(const char *oid)
{
	const char *dash = strrchr(oid, '-');
	return dash ? (uint32_t)strtoul(dash + 1, NULL, 10) : 0;
}

/* ------------------------------------------------------------ process */

static void print_log_tail(void)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "tail -20 %s", logp);
	if (system(cmd) < 0)
		perror("system");
}

/* Start the OSD of round; return its pid and the port it logged. */
static pid_t osd_start(int round, int *port)
{
	log_path(round);
	unlink(logp); /* or the last run's "listening" line may be read */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
		execl(bin, bin, "--id", "1", "--device", dev, "--size", "512M", "--meta-dir", meta,
		      "--listen", "127.0.0.1:0", "--cluster-id",
		      "4242aaaa-0000-4000-8000-000000000001", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000; i++) { /* 30 s: slow under ASan */
		FILE *f = fopen(logp, "r");
		char line[1024];
		while (f && fgets(line, sizeof(line), f)) {
			const char *p = strstr(line, "msg=listening");
			const char *q = p ? strstr(p, " port=") : NULL;
			if (q) {
				*port = atoi(q + 6);
				fclose(f);
				return pid;
			}
		}
		if (f)
			fclose(f);
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			print_log_tail();
			ck_abort_msg("iolake-osd exited during start-up (status 0x%x)", st);
		}
		usleep(10000);
	}
	print_log_tail();
	kill(pid, SIGKILL);
	ck_abort_msg("iolake-osd did not log its port");
	return -1;
}

/* ------------------------------------------------------------ client */

struct client {
	uv_loop_t loop;
	struct rpc_channel *ch;
};

static void client_open(struct client *c, int port)
{
	char t[64];
	snprintf(t, sizeof(t), "127.0.0.1:%d", port);
	ck_assert_int_eq(uv_loop_init(&c->loop), 0);
	c->ch = rpc_channel_open(&c->loop, t, NULL);
	ck_assert_ptr_nonnull(c->ch);
}

/* The kernel may have given this OSD the port an earlier one had, whose
 * kill opened this process's circuit for the address (rpc_health.c: one
 * per "host:port" per process); calls to it then fail at once until the
 * circuit's retry time, 40-60 ms after that kill, and the restart can be
 * quicker. Wait for that time, a state, not a guessed sleep; past it the
 * first call must be served (the half-open trial), which the verify
 * checks. */
static void wait_circuit_retry(int port)
{
	char t[64];
	snprintf(t, sizeof(t), "127.0.0.1:%d", port);
	uint64_t now = loop_now_ms(), at = rpc_peer_retry_at_ms(t);
	if (rpc_peer_state(t) == RPC_PEER_UP || at <= now)
		return;
	printf("port %d was an earlier OSD's: its circuit is open %llu ms more, waiting\n", port,
	       (unsigned long long)(at - now));
	fflush(stdout);
	usleep((useconds_t)(at - now + 1) * 1000);
}

static void client_close(struct client *c)
{
	rpc_channel_close(c->ch);
	while (uv_run(&c->loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&c->loop), 0);
}

/* Read oid back whole; it must be exactly its content. */
static void verify_shard(struct client *c, uint32_t pg, const char *oid, bool must_exist)
{
	Iolake__Osd__ShardKey k;
	Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
	osd_key(&k, pg, oid, 0);
	q.key = &k;
	struct osd_call r;
	int st = osd_call_sync(&c->loop, c->ch, OSD_M_GET, &q.base, NULL, &r);
	if (!must_exist && st == RPC_NOT_FOUND) {
		osd_call_clear(&r);
		return;
	}
	ck_assert_msg(st == RPC_OK, "shard %s: %s %s", oid, rpc_status_name(st), r.message);
	uint32_t len = len_of(oid);
	const Iolake__Osd__GetShardResponse *g = (const void *)r.resp;
	size_t got = r.payload.buf ? r.payload.len : 0;
	ck_assert_msg(got == len && g->info->length == len, "shard %s: %zu bytes, want %u", oid,
		      got, len);
	const uint8_t *want = pool->data + content_off(oid);
	ck_assert_msg(memcmp(buf_slice_data(&r.payload), want, len) == 0,
		      "shard %s: content differs", oid);
	ck_assert_uint_eq(g->info->crc32c, crc32c(0, want, len));
	osd_call_clear(&r);
}

static void del_shard(struct client *c, uint32_t pg, const char *oid)
{
	Iolake__Osd__ShardKey k;
	Iolake__Osd__DeleteShardRequest q = IOLAKE__OSD__DELETE_SHARD_REQUEST__INIT;
	osd_key(&k, pg, oid, 0);
	q.key = &k;
	struct osd_call r;
	int st = osd_call_sync(&c->loop, c->ch, OSD_M_DEL, &q.base, NULL, &r);
	ck_assert_msg(st == RPC_OK, "delete %s: %s", oid, r.message);
	osd_call_clear(&r);
}

static void space(struct client *c, uint64_t *used, uint64_t *free_b, uint64_t *total,
		  uint64_t *reserved)
{
	Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
	struct osd_call r;
	ck_assert_int_eq(osd_call_sync(&c->loop, c->ch, OSD_M_STATUS, &q.base, NULL, &r), RPC_OK);
	const Iolake__Osd__StatusResponse *s = (const void *)r.resp;
	*used = s->used_bytes;
	*free_b = s->free_bytes;
	*total = s->total_bytes;
	*reserved = s->reserved_bytes;
	osd_call_clear(&r);
}

/* Everything visible is whole; space matches; then delete it all. Returns
 * the number of shards listed. */
static int verify_listed_and_clear(struct client *c)
{
	char (*oids)[48] = NULL;
	uint32_t *pgs = NULL;
	int n = 0, cap = 0;
	uint64_t extents = 0;
	for (uint32_t pg = 0; pg < PGS; pg++) {
		Iolake__Osd__ShardKey after;
		char after_oid[64];
		bool have_after = false;
		for (;;) {
			Iolake__Osd__ListShardsRequest q = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
			q.pg = pg;
			q.limit = 100;
			if (have_after)
				q.after = &after;
			struct osd_call r;
			ck_assert_int_eq(osd_call_sync(&c->loop, c->ch, OSD_M_LIST, &q.base, NULL, &r),
					 RPC_OK);
			const Iolake__Osd__ListShardsResponse *l = (const void *)r.resp;
			for (size_t i = 0; i < l->n_shards; i++) {
				if (n == cap) {
					cap = cap ? cap * 2 : 256;
					oids = realloc(oids, (size_t)cap * sizeof(*oids));
					pgs = realloc(pgs, (size_t)cap * sizeof(*pgs));
				}
				const Iolake__Osd__ShardInfo *in = l->shards[i];
				snprintf(oids[n], sizeof(oids[n]), "%.*s", (int)in->key->object_id.len,
					 in->key->object_id.data);
				pgs[n] = pg;
				if (!in->is_inline)
					extents += (in->length + 4095) / 4096 * 4096;
				n++;
			}
			bool more = l->more;
			if (l->n_shards) {
				snprintf(after_oid, sizeof(after_oid), "%s", oids[n - 1]);
				osd_key(&after, pg, after_oid, 0);
				have_after = true;
			}
			osd_call_clear(&r);
			if (!more)
				break;
		}
	}
	for (int i = 0; i < n; i++)
		verify_shard(c, pgs[i], oids[i], true);
	uint64_t used, free_b, total, reserved;
	space(c, &used, &free_b, &total, &reserved);
	ck_assert_uint_eq(reserved, 0);
	ck_assert_uint_eq(used + free_b, total);
	ck_assert_msg(used == extents, "used %llu bytes, listed extents %llu: leak",
		      (unsigned long long)used, (unsigned long long)extents);
	for (int i = 0; i < n; i++)
		del_shard(c, pgs[i], oids[i]);
	space(c, &used, &free_b, &total, &reserved);
	ck_assert_uint_eq(used, 0);
	ck_assert_uint_eq(free_b, total);
	free(oids);
	free(pgs);
	return n;
}

/* ------------------------------------------------------------ writer */

struct writer {
	struct client *c;
	int round;
	unsigned seed;
	int next;
	int inflight;
	uint64_t budget;
	struct ack *acks;
	int nacks, cap;
	bool stop;
	int failed; /* calls that did not answer OK (the kill) */
};

struct wput {
	struct osd_call call;
	struct writer *w;
	struct ack a;
	Iolake__Osd__ShardKey k;
};

static void start_puts(struct writer *w);

static void on_put(struct osd_call *call)
{
	struct wput *p = container_of(call, struct wput, call);
	struct writer *w = p->w;
	w->inflight--;
	if (call->status == RPC_OK) {
		/* Acknowledged: only now does the shard count. */
		if (w->nacks == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 256;
			w->acks = realloc(w->acks, (size_t)w->cap * sizeof(*w->acks));
		}
		w->acks[w->nacks++] = p->a;
	} else {
		ck_assert_msg(call->status == RPC_UNAVAILABLE || call->status == RPC_CANCELLED,
			      "put %s: %s %s", p->a.oid, rpc_status_name(call->status),
			      call->message);
		w->failed++;
		w->stop = true; /* the OSD is gone */
	}
	osd_call_clear(call);
	free(p);
	start_puts(w);
}

static void start_puts(struct writer *w)
{
	while (!w->stop && w->inflight < INFLIGHT) {
		uint32_t r = (uint32_t)rand_r(&w->seed);
		uint32_t len = r % 3 == 0 ? 1024 + (r >> 8) % (63u << 10)
					  : 1024 + (r >> 8) % (MAX_LEN - 1024);
		if (w->budget < len)
			return; /* stay clear of ENOSPC: idle until killed */
		w->budget -= len;
		struct wput *p = calloc(1, sizeof(*p));
		p->w = w;
		snprintf(p->a.oid, sizeof(p->a.oid), "r%d-%d-%u", w->round, w->next++, len);
		p->a.pg = (uint32_t)w->next % PGS;
		p->a.len = len;
		osd_key(&p->k, p->a.pg, p->a.oid, 0);
		Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		q.key = &p->k;
		q.length = len;
		uint32_t off = content_off(p->a.oid);
		q.crc32c = crc32c(0, pool->data + off, len);
		struct buf_slice pl = { pool, off, len };
		p->call.then = on_put;
		w->inflight++;
		osd_call_start(&w->c->loop, w->c->ch, OSD_M_PUT, &q.base, &pl, 60000, &p->call);
	}
}

struct killer {
	uv_timer_t t;
	pid_t pid;
	bool fired;
};

static void on_kill(uv_timer_t *t)
{
	struct killer *k = container_of(t, struct killer, t);
	kill(k->pid, SIGKILL);
	k->fired = true;
}

/* ------------------------------------------------------------ the test */

START_TEST(kill9_rounds)
{
	find_binary();
	cleanup_files();
	const char *env = getenv("IOLAKE_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	int rounds = getenv("IOLAKE_CRASH_ROUNDS") ? atoi(getenv("IOLAKE_CRASH_ROUNDS")) : 20;
	printf("osd crash: binary %s seed=%u rounds=%d (replay: IOLAKE_SEED=%u), OSD logs %s-rNN.log\n",
	       bin, seed, rounds, seed, logbase);
	fflush(stdout);

	pool = buf_new(POOL_BYTES);
	unsigned ps = seed;
	for (size_t i = 0; i < POOL_BYTES; i += 4) {
		uint32_t v = (uint32_t)rand_r(&ps) * 2654435761u;
		memcpy(pool->data + i, &v, 4);
	}
	pool->len = POOL_BYTES;

	struct ack *prev = NULL;
	int nprev = 0;
	uint64_t t_start = loop_now_ms();
	int total_acked = 0, total_listed = 0;
	for (int round = 0; round <= rounds; round++) {
		int port;
		pid_t pid = osd_start(round, &port);
		wait_circuit_retry(port);
		struct client c;
		client_open(&c, port);
		/* 1. Every shard acknowledged last round is there, identical. */
		for (int i = 0; i < nprev; i++)
			verify_shard(&c, prev[i].pg, prev[i].oid, true);
		/* 2. Everything visible is whole; space adds up; clear. */
		total_listed += verify_listed_and_clear(&c);
		free(prev);
		prev = NULL;
		nprev = 0;
		if (round == rounds) {
			/* Clean stop: SIGTERM exits 0 within a few seconds. */
			client_close(&c);
			uint64_t t0 = loop_now_ms();
			kill(pid, SIGTERM);
			int st;
			ck_assert_int_eq(waitpid(pid, &st, 0), pid);
			uint64_t dt = loop_now_ms() - t0;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				print_log_tail();
			ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				      "SIGTERM: status 0x%x", st);
			ck_assert_msg(dt < 5000, "SIGTERM took %llu ms", (unsigned long long)dt);
			break;
		}

		/* 3. Load, then a kill at a random moment. */
		struct writer w = { .c = &c, .round = round, .seed = seed + (unsigned)round * 7919u,
				    .budget = DEV_SIZE / 2 };
		unsigned ks = w.seed;
		struct killer k = { .pid = pid };
		uv_timer_init(&c.loop, &k.t);
		uv_timer_start(&k.t, on_kill, 20 + (uint64_t)rand_r(&ks) % 700, 0);
		start_puts(&w);
		while (!k.fired || w.inflight)
			uv_run(&c.loop, UV_RUN_ONCE);
		uv_close((uv_handle_t *)&k.t, NULL);
		int st;
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		client_close(&c);
		printf("round %2d: port %5d, %4d acknowledged, %2d cut by the kill\n", round, port,
		       w.nacks, w.failed);
		fflush(stdout);
		total_acked += w.nacks;
		prev = w.acks;
		nprev = w.nacks;
	}
	printf("osd crash: %d rounds, %d shards acknowledged, %d listed and verified, %.1f s\n",
	       rounds, total_acked, total_listed, (double)(loop_now_ms() - t_start) / 1e3);
	ck_assert_int_gt(total_acked, 0);
	buf_unref(pool);
	cleanup_files();
	remove_logs(rounds);
}
END_TEST

/* In the runner: names from its pid, so its teardown removes them even
 * when the forked test failed or timed out. */
static void setup_once(void)
{
	test_scratch_path(dev, sizeof(dev), "iolake-osdcrash-%d.dev", (int)getpid());
	test_scratch_path(meta, sizeof(meta), "iolake-osdcrash-%d.meta", (int)getpid());
	test_scratch_path(logbase, sizeof(logbase), "iolake-osdcrash-%d", (int)getpid());
	cleanup_files();
}

static Suite *crash_suite(void)
{
	Suite *s = suite_create("osd_crash");
	TCase *tc = tcase_create("kill9");
	tcase_add_unchecked_fixture(tc, setup_once, cleanup_files);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, kill9_rounds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* As the binaries do: a peer that closed must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	SRunner *sr = srunner_create(crash_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
