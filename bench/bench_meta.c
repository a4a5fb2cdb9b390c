/*
 * bench_meta.c — committed meta ops/s through Raft: 3 voters (meta/node.h)
 * on their own loop threads in this process, talking Raft over loopback
 * TCP; a meta_client on another loop thread keeps 1 or 64 PutObject
 * submits in flight (over the HTTP/2 RPC to the leader; the client
 * coalesces the submits of one loop turn) for --duration each. Group
 * commit shows as ops per Raft entry.
 *
 * Data under /dev/shm (tmpfs: fsync is free, so this measures software,
 * not a disk's flush latency). Prints figures; asserts nothing. Besides
 * ops/s it prints the process's CPU time (user + system, all threads: the
 * three members and the client) per committed op, which moves less than
 * ops/s when other work shares the cores.
 *
 *   build/bench-meta [--duration 3s] [--slice 500ms] [--members 3] [--only N]
 *                    [--rpc-tls-ca F --rpc-tls-cert F --rpc-tls-key F]
 *
 * With the --rpc-tls-* flags (a meta certificate: iolake-admin ca issue
 * --role meta) every member's RPC and Raft port runs mutual TLS (issue 16)
 * and the client presents the same certificate. Per phase it prints the
 * latency of each op, submit to commit, as p50 / p99 / max.
 *
 * The two phases take turns (--slice each, --duration in all per phase),
 * so a burst of other work on a shared machine hits both alike.
 */
#include <errno.h>
#include <netinet/in.h>
#include <raft.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ftw.h>

#include "common/flags.h"
#include "common/log.h"
#include "common/rpc_tls.h"
#include "common/loop.h"
#include "meta/client.h"
#include "meta/node.h"

#define MAXM 5

static uint64_t duration_ms = 3000;

static int bindable(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (ok && port == 0) {
		socklen_t l = sizeof(a);
		getsockname(fd, (struct sockaddr *)&a, &l);
		ok = ntohs(a.sin_port);
	}
	close(fd);
	return ok;
}

static int free_port_pair(void)
{
	for (;;) {
		int p = bindable(0);
		if (p > 0 && p < 65534 && bindable(p + 1))
			return p;
	}
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

struct member {
	struct loop_thread lt;
	struct meta_node *node;
	struct meta_node_opts o;
	char dir[64], addr[32];
	int rc;
	atomic_bool closed;
	struct meta_node_info info;
};

static void m_start_fn(void *arg)
{
	struct member *m = arg;
	m->rc = meta_node_start(&m->lt.loop, &m->o, &m->node);
}

static void m_info_fn(void *arg)
{
	struct member *m = arg;
	meta_node_info(m->node, &m->info);
}

static void m_closed(void *ud)
{
	atomic_store(&((struct member *)ud)->closed, true);
}

static void m_close_fn(void *arg)
{
	struct member *m = arg;
	meta_node_close(m->node, m_closed, m);
}

/* ------------------------------------------------------------ load */

struct load {
	struct loop_thread lt;
	struct meta_client *cli;
	const char *members[MAXM];
	size_t n;
	unsigned window, inflight;
	uint64_t seq;
	atomic_bool stop, idle, ready;
	atomic_ulong done_ops;
	uint64_t lat_sum_us;
	uint64_t errors;
	uint64_t *lat;                 /* this phase's samples, us (LAT_MAX kept) */
	size_t n_lat;
};

#define LAT_MAX (1u << 21)

struct op_ud {
	struct load *L;
	uint64_t t0;
};

static void pump(struct load *L);

static void on_put(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct op_ud *u = ud;
	struct load *L = u->L;
	L->inflight--;
	if (err || res->status != IOLAKE__META__STATUS__STATUS_OK)
		L->errors++;
	else
		atomic_fetch_add(&L->done_ops, 1);
	uint64_t us = (loop_now_ns() / 1000) - u->t0;
	L->lat_sum_us += us;
	if (L->lat && L->n_lat < LAT_MAX)
		L->lat[L->n_lat++] = us;
	free(u);
	pump(L);
}

static void pump(struct load *L)
{
	while (!atomic_load(&L->stop) && L->inflight < L->window) {
		char key[40], val[64];
		snprintf(key, sizeof(key), "k/%012llu", (unsigned long long)L->seq++);
		memset(val, 'v', sizeof(val));
		Iolake__Meta__ObjectRecord rec = IOLAKE__META__OBJECT_RECORD__INIT;
		rec.bucket = "bench";
		rec.key = key;
		rec.size = sizeof(val);
		rec.etag = "d41d8cd98f00b204e9800998ecf8427e";
		rec.owner = "bench";
		rec.inline_data.data = (uint8_t *)val;
		rec.inline_data.len = sizeof(val);
		Iolake__Meta__PutObject po = IOLAKE__META__PUT_OBJECT__INIT;
		po.record = &rec;
		Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
		op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
		op.put_object = &po;
		struct op_ud *u = malloc(sizeof(*u));
		u->L = L;
		u->t0 = loop_now_ns() / 1000;
		if (meta_client_submit(L->cli, &op, on_put, u)) {
			free(u);
			break;
		}
		L->inflight++;
	}
	if (L->inflight == 0)
		atomic_store(&L->idle, true);
}

static void on_bucket(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	(void)res;
	struct load *L = ud;
	if (err)
		fprintf(stderr, "bench-meta: create bucket: %d\n", err);
	atomic_store(&L->ready, true);
}

static void load_start_fn(void *arg)
{
	struct load *L = arg;
	struct meta_client_opts o = { .members = L->members, .n_members = L->n };
	if (meta_client_new(&L->lt.loop, &o, &L->cli))
		abort();
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = "bench";
	b.owner = "bench";
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &b;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	meta_client_submit(L->cli, &op, on_bucket, L);
}

static void load_go_fn(void *arg)
{
	struct load *L = arg;
	atomic_store(&L->stop, false);
	atomic_store(&L->idle, false);
	pump(L);
}

static void load_close_fn(void *arg)
{
	meta_client_close(((struct load *)arg)->cli);
}

static double cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void leader_stats(struct member *m, size_t n, uint64_t *entries, uint64_t *ops)
{
	*entries = *ops = 0;
	for (size_t i = 0; i < n; i++) {
		loop_thread_call(&m[i].lt, m_info_fn, &m[i]);
		*entries += m[i].info.entries_proposed;   /* only a leader proposes */
	}
	*ops = m[0].info.ops_committed;
}

/* What one phase (a window size) did over all its slices. */
struct phase {
	uint64_t el_ms, done, entries, lat_us;
	double cpu_us;
	uint64_t *lat;                 /* samples of all its slices */
	size_t n_lat;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Run the load at this window for ms, wait until it drained, add up. */
static void run_slice(struct member *m, size_t n, struct load *L, unsigned window, uint64_t ms,
		      struct phase *acc)
{
	L->window = window;
	atomic_store(&L->done_ops, 0);
	L->lat_sum_us = 0;
	if (!acc->lat)
		acc->lat = calloc(LAT_MAX, sizeof(uint64_t));
	L->lat = acc->lat;
	L->n_lat = acc->n_lat;
	uint64_t e0, o0, e1, o1;
	leader_stats(m, n, &e0, &o0);
	uint64_t t0 = loop_now_ms();
	double c0 = cpu_us();
	loop_thread_call(&L->lt, load_go_fn, L);
	usleep((useconds_t)ms * 1000);
	atomic_store(&L->stop, true);
	while (!atomic_load(&L->idle))
		usleep(1000);
	acc->el_ms += loop_now_ms() - t0;
	acc->cpu_us += cpu_us() - c0;
	leader_stats(m, n, &e1, &o1);
	acc->done += atomic_load(&L->done_ops);
	acc->entries += e1 - e0;
	acc->lat_us += L->lat_sum_us;
	acc->n_lat = L->n_lat;
}

int main(int argc, char **argv)
{
	int64_t nmemb = 3, only = 0;
	uint64_t slice_ms = 500;
	struct rpc_tls_files tlsf = { 0 };
	const struct flag_spec specs[] = {
		{ .name = "duration", .type = FLAG_DURATION, .dst = &duration_ms, .help = "per phase" },
		{ .name = "members", .type = FLAG_INT64, .dst = &nmemb, .min = 1, .max = MAXM,
		  .help = "voters" },
		{ .name = "slice", .type = FLAG_DURATION, .dst = &slice_ms,
		  .help = "the phases take turns this long each; 0: one after the other" },
		{ .name = "only", .type = FLAG_INT64, .dst = &only, .min = 0, .max = 1024,
		  .help = "run one phase with this many in flight (for profiling); 0: 1 then 64" },
		RPC_TLS_FLAGS(tlsf),
		{ 0 }
	};
	char err[256];
	int pos;
	int rc = flags_parse(specs, argc, argv, &pos, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, argv[0], "", specs);
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_LEVEL_WARN);
	if (rpc_tls_setup(&tlsf, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	size_t n = (size_t)nmemb;
	static struct member m[MAXM];
	struct meta_peer peers[MAXM];
	for (size_t i = 0; i < n; i++) {
		snprintf(m[i].dir, sizeof(m[i].dir), "/dev/shm/iolake-bench-meta-XXXXXX");
		if (!mkdtemp(m[i].dir))
			return 1;
		snprintf(m[i].addr, sizeof(m[i].addr), "127.0.0.1:%d", free_port_pair());
		peers[i].id = i + 1;
		peers[i].addr = m[i].addr;
	}
	for (size_t i = 0; i < n; i++) {
		m[i].o = (struct meta_node_opts){ .id = i + 1, .data_dir = m[i].dir, .listen = m[i].addr,
						  .peers = peers, .n_peers = n, .pg_count = 64 };
		loop_thread_start(&m[i].lt, "meta-member");
		loop_thread_call(&m[i].lt, m_start_fn, &m[i]);
		if (m[i].rc) {
			fprintf(stderr, "bench-meta: member %zu: %d\n", i + 1, m[i].rc);
			return 1;
		}
	}
	static struct load L;
	for (size_t i = 0; i < n; i++)
		L.members[i] = m[i].addr;
	L.n = n;
	loop_thread_start(&L.lt, "meta-load");
	loop_thread_call(&L.lt, load_start_fn, &L);
	while (!atomic_load(&L.ready))
		usleep(10000);

	printf("bench-meta: %zu voters on loopback (raft_uv + raft_uv_tcp, data on /dev/shm), "
	       "PutObject ops of ~150 bytes via meta_client over HTTP/2, %llu ms per phase "
	       "in turns of %llu ms\n",
	       n, (unsigned long long)duration_ms,
	       (unsigned long long)(slice_ms && slice_ms < duration_ms ? slice_ms : duration_ms));
	printf("transport: %s\n", rpc_tls_default() ? "mutual TLS on RPC and Raft" : "plain TCP");
	printf("%-10s %12s %12s %14s %12s %12s %9s %9s %9s\n", "in-flight", "ops/s", "entries/s",
	       "ops/entry", "mean lat us", "cpu us/op", "p50 us", "p99 us", "max us");
	unsigned windows[] = { 1, 64 };
	if (only)
		windows[1] = (unsigned)only;
	/* The phases take turns in slices: other work on a shared machine
	 * then hits both alike instead of whichever ran during a burst. */
	uint64_t slice = slice_ms && slice_ms < duration_ms ? slice_ms : duration_ms;
	uint64_t rounds = duration_ms / slice;
	struct phase acc[2] = { 0 };
	for (uint64_t r = 0; r < rounds; r++)
		for (size_t w = only ? 1 : 0; w < 2; w++)
			run_slice(m, n, &L, windows[w], slice, &acc[w]);
	double rate[2] = { 0 };
	for (size_t w = only ? 1 : 0; w < 2; w++) {
		const struct phase *a = &acc[w];
		rate[w] = (double)a->done * 1000.0 / (double)a->el_ms;
		qsort(a->lat, a->n_lat, sizeof(uint64_t), cmp_u64);
		uint64_t p50 = a->n_lat ? a->lat[a->n_lat / 2] : 0;
		uint64_t p99 = a->n_lat ? a->lat[(a->n_lat * 99) / 100] : 0;
		uint64_t mx = a->n_lat ? a->lat[a->n_lat - 1] : 0;
		printf("%-10u %12.0f %12.0f %14.1f %12.0f %12.1f %9llu %9llu %9llu\n", windows[w],
		       rate[w], (double)a->entries * 1000.0 / (double)a->el_ms,
		       a->entries ? (double)a->done / (double)a->entries : 0.0,
		       a->done ? (double)a->lat_us / (double)a->done : 0.0,
		       a->done ? a->cpu_us / (double)a->done : 0.0, (unsigned long long)p50,
		       (unsigned long long)p99, (unsigned long long)mx);
	}
	if (!only)
		printf("batching: 64 in flight / 1 in flight = %.1fx%s\n", rate[1] / rate[0],
		       L.errors ? " (errors seen)" : "");

	loop_thread_call(&L.lt, load_close_fn, &L);
	loop_thread_stop(&L.lt);
	for (size_t i = 0; i < n; i++) {
		loop_thread_call(&m[i].lt, m_close_fn, &m[i]);
		while (!atomic_load(&m[i].closed))
			usleep(1000);
		loop_thread_stop(&m[i].lt);
		nftw(m[i].dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	flags_free(specs);
	return 0;
}
