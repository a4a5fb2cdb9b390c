/*
 * bench_osd.c — PutShard calls per second through the whole OSD service
 * (RPC + service + store), next to the flush rate a single writer gets on
 * the same file system, measured in the same run.
 *
 *   build/bench-osd [--dir DIR] [--seconds S] [--size BYTES] [--target ADDR]
 *
 * Without --target: an OSD (store on DIR, service, RPC server) runs on its
 * own loop thread in this process and is called over HTTP/2 on loopback
 * and over the in-process transport, with 1 and with 32 calls in flight.
 * With --target host:port: a running iolake-osd is called over HTTP/2
 * (used by tests/integration/test_osd_binary.sh to see that it serves).
 *
 * DIR /dev/shm measures the software (tmpfs flushes are free); a directory
 * on a disk measures the flush. Exit 1 on any failed call.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/flags.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "common/proto/osd_methods.h"
#include "common/rpc.h"
#include "osd/service.h"
#include "osd/store/store.h"
#include "proto/osd.pb-c.h"
#include "tests/lib/flush_rate.h"


static const char *f_dir = "/dev/shm";
static uint64_t f_ms = 2000;
static uint64_t f_size = 4096;
static const char *f_target;

static const struct flag_spec specs[] = {
	{ .name = "dir", .type = FLAG_STRING, .dst = &f_dir, .metavar = "DIR",
	  .help = "file system to measure (device file, RocksDB, flush rate)" },
	{ .name = "seconds", .type = FLAG_DURATION, .dst = &f_ms, .help = "per measurement" },
	{ .name = "size", .type = FLAG_SIZE, .dst = &f_size, .min = 1, .max = 64 << 20,
	  .help = "shard size" },
	{ .name = "target", .type = FLAG_STRING, .dst = &f_target, .metavar = "ADDR",
	  .help = "bench a running iolake-osd at host:port instead" },
	{ 0 }
};

static double now_s(void)
{
	return (double)loop_now_ns() / 1e9;
}

/* ------------------------------------------------------------ in-process OSD */

struct osd {
	struct loop_thread lt;
	struct metrics_registry *reg;
	struct store *st;
	struct osd_service *svc;
	struct rpc_server *rpc;
	char dev[512], meta[512], err[512];
	int port, rc;
	atomic_int closed;
};

static void osd_start(void *arg)
{
	struct osd *o = arg;
	struct osd_service_opts so = { .osd_id = 1, .max_inflight = 1024, .metrics = o->reg };
	o->rc = osd_service_new(&o->lt.loop, &so, &o->svc);
	if (o->rc)
		return;
	struct store_opts sto = { .device_path = o->dev, .meta_dir = o->meta,
				  .create_size = 4ull << 30, .osd_id = 1,
				  .observer = osd_service_observer(o->svc) };
	o->rc = store_open(&o->lt.loop, &sto, &o->st, o->err, sizeof(o->err));
	if (o->rc)
		return;
	osd_service_attach(o->svc, o->st);
	o->rpc = rpc_server_new(&o->lt.loop, NULL);
	o->rc = osd_service_register(o->svc, o->rpc);
	if (!o->rc)
		o->rc = rpc_server_listen(o->rpc, "127.0.0.1:0");
	if (!o->rc)
		o->rc = rpc_server_listen(o->rpc, "local:bench-osd");
	o->port = rpc_server_port(o->rpc);
}

static void on_store_closed(void *arg)
{
	struct osd *o = arg;
	osd_service_free(o->svc);
	atomic_store(&o->closed, 1);
}

static void on_drained(void *arg)
{
	struct osd *o = arg;
	rpc_server_close(o->rpc);
	store_close(o->st, on_store_closed, o);
}

static void osd_stop(void *arg)
{
	struct osd *o = arg;
	osd_service_drain(o->svc, on_drained, o);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* ------------------------------------------------------------ client */

struct bench {
	uv_loop_t loop;
	struct rpc_channel *ch;
	struct buf *data;
	uint32_t crc;
	uint64_t started, done;
	int inflight, depth;
	double end;
	int errors;
	char first_err[300];
};

static void issue(struct bench *b);

static void on_put(void *ud, const struct rpc_result *r)
{
	struct bench *b = ud;
	if (r->status != RPC_OK) {
		if (!b->errors++)
			snprintf(b->first_err, sizeof(b->first_err), "%s: %s",
				 rpc_status_name(r->status), r->message);
	}
	b->done++;
	b->inflight--;
	issue(b);
	if (!b->inflight)
		uv_stop(&b->loop);
}

static void issue(struct bench *b)
{
	while (b->inflight < b->depth && now_s() < b->end) {
		char oid[32];
		int n = snprintf(oid, sizeof(oid), "bench-%llu",
				 (unsigned long long)(b->started % 100000));
		Iolake__Osd__ShardKey k = IOLAKE__OSD__SHARD_KEY__INIT;
		k.pg = (uint32_t)(b->started % 64);
		k.object_id.data = (uint8_t *)oid;
		k.object_id.len = (size_t)n;
		Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		q.key = &k;
		q.length = b->data->len;
		q.crc32c = b->crc;
		struct buf_slice pl = { b->data, 0, b->data->len };
		struct rpc_call_opts co = { .timeout_ms = 30000 };
		b->started++;
		b->inflight++;
		rpc_call(b->ch, OSD_SVC, OSD_M_PUT, &q.base, &pl, &co, on_put, b);
	}
}

struct status_res {
	int done, status;
	uint64_t commits, batches, flushes;
};

static void on_status(void *ud, const struct rpc_result *r)
{
	struct status_res *s = ud;
	s->done = 1;
	s->status = r->status;
	if (r->resp) {
		const Iolake__Osd__StatusResponse *q = (const void *)r->resp;
		s->commits = q->kv_commits;
		s->batches = q->kv_batches;
		s->flushes = q->data_flushes;
	}
}

static struct status_res status(struct bench *b)
{
	struct status_res s = { 0 };
	Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
	struct rpc_call_opts co = { .timeout_ms = 10000 };
	rpc_call(b->ch, OSD_SVC, OSD_M_STATUS, &q.base, NULL, &co, on_status, &s);
	while (!s.done)
		uv_run(&b->loop, UV_RUN_ONCE);
	return s;
}

/* Puts/s at depth over ch. */
static double run(struct bench *b, const char *label, int depth, double secs, double fr)
{
	struct status_res s0 = status(b);
	b->depth = depth;
	b->done = 0;
	double t0 = now_s();
	b->end = t0 + secs;
	issue(b);
	while (b->inflight)
		uv_run(&b->loop, UV_RUN_DEFAULT);
	double dt = now_s() - t0;
	struct status_res s1 = status(b);
	double rate = (double)b->done / dt;
	uint64_t batches = s1.batches - s0.batches;
	printf("%-9s %-6s %7llu-byte puts, %2d in flight: %8.0f puts/s  (%.2fx flush rate; "
	       "%.1f puts per log flush)%s\n",
	       f_target ? f_target : f_dir, label, (unsigned long long)f_size, depth, rate,
	       fr > 0 ? rate / fr : 0.0,
	       batches ? (double)(s1.commits - s0.commits) / (double)batches : 0.0,
	       b->errors ? "  ERRORS" : "");
	return rate;
}

int main(int argc, char **argv)
{
	char err[256];
	int pos;
	int rc = flags_parse(specs, argc, argv, &pos, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, "bench-osd", "", specs);
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "bench-osd: %s\n", err);
		return 2;
	}
	double secs = (double)f_ms / 1e3;
	struct bench b = { 0 };
	b.data = buf_new(f_size);
	for (size_t i = 0; i < f_size; i++)
		b.data->data[i] = (uint8_t)(i * 131 + 7);
	b.data->len = f_size;
	b.crc = crc32c(0, b.data->data, f_size);
	uv_loop_init(&b.loop);

	if (f_target) {
		b.ch = rpc_channel_open(&b.loop, f_target, NULL);
		run(&b, "h2", 1, secs, 0);
		run(&b, "h2", 32, secs, 0);
	} else {
		double fr = flush_rate(f_dir, secs);
		printf("%-9s single-writer 4 KiB pwrite+fdatasync: %8.0f flushes/s\n", f_dir, fr);
		static struct osd o;
		snprintf(o.dev, sizeof(o.dev), "%s/bench-osd-%d.dev", f_dir, (int)getpid());
		snprintf(o.meta, sizeof(o.meta), "%s/bench-osd-%d.meta", f_dir, (int)getpid());
		o.reg = metrics_registry_new();
		loop_thread_start(&o.lt, "bench-osd");
		loop_thread_call(&o.lt, osd_start, &o);
		if (o.rc) {
			fprintf(stderr, "bench-osd: start: %d %s\n", o.rc, o.err);
			return 1;
		}
		char t[64];
		const char *targets[2] = { t, "local:bench-osd" };
		const char *labels[2] = { "h2", "local" };
		snprintf(t, sizeof(t), "127.0.0.1:%d", o.port);
		for (int i = 0; i < 2; i++) {
			/* Re-measured next to each series: on a shared disk the
			 * flush rate drifts within seconds. */
			if (i > 0) {
				fr = flush_rate(f_dir, secs);
				printf("%-9s single-writer 4 KiB pwrite+fdatasync: %8.0f flushes/s\n",
				       f_dir, fr);
			}
			b.ch = rpc_channel_open(&b.loop, targets[i], NULL);
			run(&b, labels[i], 1, secs, fr);
			double r32 = run(&b, labels[i], 32, secs, fr);
			double fr2 = flush_rate(f_dir, secs);
			printf("%-9s single-writer 4 KiB pwrite+fdatasync: %8.0f flushes/s (after)\n",
			       f_dir, fr2);
			double mean = (fr + fr2) / 2, hi = fr > fr2 ? fr : fr2;
			printf("%-9s %-6s group commit: 32 in flight = %.2fx the single-writer "
			       "flush rate (%.2fx against the higher measurement; target >= 8x)\n",
			       f_dir, labels[i], mean > 0 ? r32 / mean : 0.0, hi > 0 ? r32 / hi : 0.0);
			rpc_channel_close(b.ch);
		}
		while (uv_run(&b.loop, UV_RUN_NOWAIT))
			;
		loop_thread_call(&o.lt, osd_stop, &o);
		while (!atomic_load(&o.closed))
			usleep(1000);
		loop_thread_stop(&o.lt);
		metrics_registry_free(o.reg);
		unlink(o.dev);
		nftw(o.meta, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		b.ch = NULL;
	}
	if (b.ch)
		rpc_channel_close(b.ch);
	while (uv_run(&b.loop, UV_RUN_NOWAIT))
		;
	uv_loop_close(&b.loop);
	buf_unref(b.data);
	if (b.errors)
		fprintf(stderr, "bench-osd: %d failed calls; first: %s\n", b.errors, b.first_err);
	flags_free(specs);
	return b.errors ? 1 : 0;
}
