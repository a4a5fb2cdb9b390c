/*
 * bench_common.c — microbenchmarks of the common runtime:
 *
 *   RPC calls/s for 100-byte calls with 1 and 64 in flight, over HTTP/2 on
 *   loopback and over the in-process transport (server on its own loop
 *   thread, client on this one: the cross-thread path iolake-aio takes);
 *   Reed-Solomon 4+2 encode and two-loss decode GB/s on 1 MiB stripes;
 *   CRC32C GB/s; MD5 MiB/s of OpenSSL (one stream) against common/md5_mb
 *   (every kernel this CPU has, 1 to 16 streams at once, 4 MiB each, one
 *   core): the lanes-busy curve the hashing service lives on; a deep copy
 *   of a 4 KiB inline PutObject Op (what meta's client and its range router
 *   each keep of a submit) through protobuf-c's default allocator against
 *   common/pb_block's one block, ns per copy and free.
 *
 * Prints figures only; it asserts nothing about speed.
 *
 *   build/bench-common [--duration 2s] [--only rpc|ec|md5|pb]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/ec.h"
#include "common/flags.h"
#include "common/loop.h"
#include "common/md5_mb.h"
#include "common/pb_block.h"
#include "common/rpc.h"
#include "proto/echo.pb-c.h"
#include "proto/meta.pb-c.h"

static uint64_t duration_ms = 2000;

/* ------------------------------------------------------------ RPC */

static void echo_handler(struct rpc_req *r, void *ud)
{
	(void)ud;
	const Iolake__Test__EchoRequest *req = (const void *)rpc_req_msg(r);
	Iolake__Test__EchoResponse resp = IOLAKE__TEST__ECHO_RESPONSE__INIT;
	resp.text = req->text;
	resp.seq = req->seq;
	rpc_respond(r, &resp.base, NULL);
}

struct bench_server {
	struct loop_thread lt;
	struct rpc_server *srv;
	const char *addr;
	int port;
	int rc;
};

static void bench_server_start_fn(void *arg)
{
	struct bench_server *bs = arg;
	static const rpc_handler_fn handlers[] = { echo_handler, NULL, NULL };
	bs->srv = rpc_server_new(&bs->lt.loop, NULL);
	if (!bs->srv) {
		bs->rc = -ENOMEM;
		return;
	}
	bs->rc = rpc_server_add_service(bs->srv, &iolake__test__echo__descriptor, handlers, NULL);
	if (bs->rc == 0)
		bs->rc = rpc_server_listen(bs->srv, bs->addr);
	bs->port = rpc_server_port(bs->srv);
}

static void bench_server_stop_fn(void *arg)
{
	struct bench_server *bs = arg;
	rpc_server_close(bs->srv);
}

struct rpc_run {
	struct rpc_channel *ch;
	Iolake__Test__EchoRequest req;
	unsigned inflight;
	uint64_t done, errors;
	uint64_t deadline_ms;
	unsigned outstanding;
	uv_loop_t *loop;
};

static void issue(struct rpc_run *run);

static void on_echo(void *ud, const struct rpc_result *res)
{
	struct rpc_run *run = ud;
	run->outstanding--;
	if (res->status == RPC_OK)
		run->done++;
	else
		run->errors++;
	if (loop_now_ms() < run->deadline_ms)
		issue(run);
	else if (run->outstanding == 0)
		uv_stop(run->loop);
}

static void issue(struct rpc_run *run)
{
	static const struct rpc_call_opts opts = { .timeout_ms = 5000 };
	run->outstanding++;
	run->req.seq++;
	rpc_call(run->ch, &iolake__test__echo__descriptor, 0, &run->req.base, NULL, &opts,
		 on_echo, run);
}

static int bench_rpc_one(uv_loop_t *loop, const char *target, unsigned inflight, double *out)
{
	char text[101];
	memset(text, 'x', 100);
	text[100] = '\0';
	struct rpc_run run = { .inflight = inflight, .loop = loop };
	iolake__test__echo_request__init(&run.req);
	run.req.text = text;
	run.ch = rpc_channel_open(loop, target, NULL);
	if (!run.ch)
		return -ENOMEM;

	/* Warm up: connect and touch every path once. */
	run.deadline_ms = 0;
	issue(&run);
	uv_run(loop, UV_RUN_DEFAULT);
	run.done = run.errors = 0;

	uint64_t t0 = loop_now_ns();
	run.deadline_ms = loop_now_ms() + duration_ms;
	for (unsigned i = 0; i < inflight; i++)
		issue(&run);
	uv_run(loop, UV_RUN_DEFAULT);
	double secs = (double)(loop_now_ns() - t0) / 1e9;
	rpc_channel_close(run.ch);
	uv_run(loop, UV_RUN_NOWAIT);
	if (run.errors)
		fprintf(stderr, "bench-common: %s: %llu calls failed\n", target,
			(unsigned long long)run.errors);
	*out = (double)run.done / secs;
	return run.errors ? -EIO : 0;
}

static int bench_rpc(void)
{
	struct {
		const char *name, *listen;
	} transports[] = {
		{ "h2 (loopback TCP)", "127.0.0.1:0" },
		{ "in-process", "local:bench-common" },
	};
	unsigned inflights[] = { 1, 64 };
	uv_loop_t loop;
	uv_loop_init(&loop);
	int rc = 0;
	printf("\nRPC, 100-byte requests, server on another thread (%llu ms per cell)\n",
	       (unsigned long long)duration_ms);
	printf("| transport | in flight | calls/s |\n|---|---:|---:|\n");
	for (size_t t = 0; t < 2; t++) {
		struct bench_server bs = { .addr = transports[t].listen };
		if (loop_thread_start(&bs.lt, "bench-srv") != 0)
			return -1;
		loop_thread_call(&bs.lt, bench_server_start_fn, &bs);
		if (bs.rc) {
			fprintf(stderr, "bench-common: server on %s: %s\n", bs.addr, strerror(-bs.rc));
			rc = bs.rc;
			goto stop;
		}
		char target[64];
		if (bs.port)
			snprintf(target, sizeof(target), "127.0.0.1:%d", bs.port);
		else
			snprintf(target, sizeof(target), "%s", bs.addr);
		for (size_t i = 0; i < 2; i++) {
			double cps = 0;
			int r = bench_rpc_one(&loop, target, inflights[i], &cps);
			if (r)
				rc = r;
			printf("| %s | %u | %.0f |\n", transports[t].name, inflights[i], cps);
			fflush(stdout);
		}
stop:
		loop_thread_call(&bs.lt, bench_server_stop_fn, &bs);
		loop_thread_stop(&bs.lt);
		if (rc)
			break;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return rc;
}

/* ------------------------------------------------------------ EC, CRC */

static int bench_ec(void)
{
	enum { K = 4, M = 2, STRIPE = 1 << 20, SHARD = STRIPE / K };
	struct ec_code *code;
	if (ec_new(K, M, &code) != 0)
		return -1;
	uint8_t *mem = malloc((size_t)(K + M) * SHARD);
	uint8_t *shards[K + M];
	for (int i = 0; i < K + M; i++)
		shards[i] = mem + (size_t)i * SHARD;
	for (size_t i = 0; i < (size_t)K * SHARD; i++)
		mem[i] = (uint8_t)(i * 2654435761u >> 13);

	printf("\nErasure coding 4+2 on 1 MiB stripes, CRC32C (one core, %llu ms per cell)\n",
	       (unsigned long long)duration_ms);
	printf("| operation | GB/s of data |\n|---|---:|\n");

	uint64_t t0 = loop_now_ns(), stripes = 0;
	while (loop_now_ns() - t0 < duration_ms * 1000000ull) {
		for (int r = 0; r < 16; r++)
			ec_encode(code, SHARD, (const uint8_t *const *)shards, shards + K);
		stripes += 16;
	}
	double enc = (double)stripes * STRIPE / ((double)(loop_now_ns() - t0));
	printf("| encode | %.2f |\n", enc);

	/* Lose data shards 0 and 2; rebuild them from 1, 3 and the parity. */
	uint32_t present = (1u << (K + M)) - 1 - (1u << 0) - (1u << 2);
	uint32_t want = (1u << 0) | (1u << 2);
	t0 = loop_now_ns();
	stripes = 0;
	while (loop_now_ns() - t0 < duration_ms * 1000000ull) {
		for (int r = 0; r < 16; r++)
			ec_decode(code, SHARD, shards, present, want);
		stripes += 16;
	}
	double dec = (double)stripes * STRIPE / ((double)(loop_now_ns() - t0));
	printf("| decode, 2 data shards lost | %.2f |\n", dec);

	t0 = loop_now_ns();
	stripes = 0;
	uint32_t c = 0;
	while (loop_now_ns() - t0 < duration_ms * 1000000ull) {
		for (int r = 0; r < 16; r++)
			c = crc32c(c, mem, STRIPE);
		stripes += 16;
	}
	double crc = (double)stripes * STRIPE / ((double)(loop_now_ns() - t0));
	printf("| crc32c | %.2f |\n", crc);
	if (c == 0x12345678)
		printf("(crc %08x)\n", c); /* keep the loop from being optimised away */
	free(mem);
	ec_free(code);
	return 0;
}

/* ------------------------------------------------------------ MD5 */

static double md5_rate(unsigned lanes, unsigned streams, const uint8_t *mem, size_t each)
{
	if (md5_mb_force(lanes))
		return 0;
	struct md5_mb_ctx c[16], *cp[16];
	const uint8_t *d[16];
	size_t l[16];
	for (unsigned i = 0; i < streams; i++) {
		md5_mb_init(&c[i]);
		cp[i] = &c[i];
		d[i] = mem + i * each;
		l[i] = each;
	}
	uint64_t t0 = loop_now_ns(), bytes = 0;
	while (loop_now_ns() - t0 < duration_ms * 1000000ull) {
		md5_mb_update_n(cp, d, l, streams);
		bytes += (uint64_t)streams * each;
	}
	double s = (double)(loop_now_ns() - t0) / 1e9;
	uint8_t out[16];
	for (unsigned i = 0; i < streams; i++)
		md5_mb_final(&c[i], out);
	return (double)bytes / (1 << 20) / s;
}

static int bench_md5(void)
{
	enum { EACH = 4 << 20 };
	uint8_t *mem = malloc(16 * (size_t)EACH);
	if (!mem)
		return -1;
	for (size_t i = 0; i < 16 * (size_t)EACH; i++)
		mem[i] = (uint8_t)(i * 2654435761u >> 13);
	printf("\nMD5 of 4 MiB streams, n at once (one core, %llu ms per cell; MiB/s of all "
	       "streams together)\n", (unsigned long long)duration_ms);
	printf("| kernel | 1 | 2 | 4 | 8 | 12 | 16 |\n|---|---:|---:|---:|---:|---:|---:|\n");
	static const unsigned kernels[] = { 1, 8, 16 };
	static const unsigned counts[] = { 1, 2, 4, 8, 12, 16 };
	for (unsigned k = 0; k < 3; k++) {
		if (md5_mb_force(kernels[k]))
			continue;
		printf("| %s%s |", md5_mb_kernel(), kernels[k] == 1 ? " (OpenSSL)" : "");
		for (unsigned j = 0; j < 6; j++) {
			printf(" %.0f |", md5_rate(kernels[k], counts[j], mem, EACH));
			fflush(stdout);
		}
		printf("\n");
	}
	if (md5_mb_force(16))   /* back to the best */
		md5_mb_force(8);
	free(mem);
	return 0;
}

/* ------------------------------------------------------------ copies */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The default copy, as meta_client_copy_msg makes it. */
static ProtobufCMessage *copy_default(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len);
	protobuf_c_message_pack(m, buf);
	ProtobufCMessage *c = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	free(buf);
	return c;
}

static int bench_pb(void)
{
	static uint8_t body[4096];
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	r.bucket = "bench";
	r.key = "p4KiB/00000123";
	r.size = sizeof(body);
	r.etag = "0123456789abcdef0123456789abcdef";
	r.content_type = "application/octet-stream";
	r.owner = "root";
	r.mtime_ms = 1764700000000;
	r.inline_data.data = body;
	r.inline_data.len = sizeof(body);
	Iolake__Meta__PutObject po = IOLAKE__META__PUT_OBJECT__INIT;
	po.record = &r;
	po.if_bucket_digest = 77;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
	op.put_object = &po;
	printf("\nDeep copy and free of a 4 KiB inline PutObject Op (%zu bytes packed)\n",
	       protobuf_c_message_get_packed_size(&op.base));
	printf("| copy | ns per copy and free |\n|---|---:|\n");
	for (int way = 0; way < 2; way++) {
		uint64_t n = 0;
		double t0 = now_s(), t;
		do {
			for (int i = 0; i < 1000; i++) {
				ProtobufCMessage *c = way ? pb_block_copy(&op.base) : copy_default(&op.base);
				if (!c)
					return -1;
				if (way)
					pb_block_free(c);
				else
					protobuf_c_message_free_unpacked(c, NULL);
			}
			n += 1000;
			t = now_s() - t0;
		} while (t * 1000 < (double)duration_ms);
		printf("| %s | %.0f |\n", way ? "pb_block_copy (one block)" :
		       "pack + unpack, default allocator", t * 1e9 / (double)n);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	struct flag_spec specs[] = {
		{ .name = "duration", .type = FLAG_DURATION, .dst = &duration_ms,
		  .help = "measuring time per cell" },
		{ .name = "only", .type = FLAG_STRING, .dst = &only, .help = "rpc, ec, md5 or pb" },
		{ 0 },
	};
	char err[256];
	int first;
	int rc = flags_parse(specs, argc, argv, &first, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, "bench-common", "[flags]", specs);
		return 0;
	}
	if (rc || first < argc) {
		fprintf(stderr, "bench-common: %s\n", rc ? err : "unexpected argument");
		return 2;
	}
	if (only && strcmp(only, "rpc") && strcmp(only, "ec") && strcmp(only, "md5") &&
	    strcmp(only, "pb")) {
		fprintf(stderr, "bench-common: flag --only: \"%s\" is not rpc, ec, md5 or pb\n",
			only);
		return 2;
	}
	printf("bench-common: %ld cores online\n", sysconf(_SC_NPROCESSORS_ONLN));
	if (!only || !strcmp(only, "ec"))
		rc |= bench_ec();
	if (!only || !strcmp(only, "md5"))
		rc |= bench_md5();
	if (!only || !strcmp(only, "pb"))
		rc |= bench_pb();
	if (!only || !strcmp(only, "rpc"))
		rc |= bench_rpc();
	flags_free(specs);
	return rc ? 1 : 0;
}
