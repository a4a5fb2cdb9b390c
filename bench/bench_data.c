/*
 * bench_data.c — build/bench-data: the gateway data path's software cost.
 * Six OSDs (store on /dev/shm + service, each on its own loop thread,
 * in-process transport), gw_data 4+2 on the main loop; PUT then GET of
 * whole objects at 8 and 32 in flight, for 64 KiB and 4 MiB objects.
 * tmpfs measures the software, not the flush (DESIGN.md).
 *
 *   build/bench-data [--h2]     (--h2: HTTP/2 over loopback instead)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "gateway/gw_data.h"
#include "tests/lib/osd_cluster.h"

#define NOSD 6

struct bench;

struct job {
	struct bench *b;
	struct gw_data_put *p;
	struct gw_data_get *g;
	uint64_t fed;
	unsigned obj;
};

struct bench {
	uv_loop_t loop;
	struct gw_data *d;
	struct gw_data_target t;
	struct buf *body;
	size_t size;
	unsigned objects, inflight;
	unsigned next, done, running;
	struct gw_data_layout *layouts;
	struct job jobs[64];
	int err;
};

static void put_next(struct job *j);
static void get_next(struct job *j);

static void feed(struct job *j)
{
	struct bench *b = j->b;
	while (j->fed < b->size) {
		ssize_t n = gw_data_put_write(j->p, b->body->data + j->fed, b->size - j->fed);
		if (n < 0)
			return; /* on_done reports */
		j->fed += (uint64_t)n;
		if (j->fed < b->size && n >= 0)
			return; /* short: on_writable follows */
	}
	gw_data_put_finish(j->p);
}

static void on_writable(struct gw_data_put *p, void *ud)
{
	(void)p;
	feed(ud);
}

static void on_put_done(struct gw_data_put *p, int status, void *ud)
{
	struct job *j = ud;
	struct bench *b = j->b;
	if (status) {
		fprintf(stderr, "put: %s: %s\n", iol_strerror(status), gw_data_put_error(p));
		b->err = status;
	} else {
		gw_data_layout_copy(&b->layouts[j->obj], gw_data_put_layout(p));
	}
	gw_data_put_free(p);
	b->done++;
	put_next(j);
}

static void put_next(struct job *j)
{
	struct bench *b = j->b;
	if (b->next >= b->objects || b->err) {
		if (--b->running == 0)
			uv_stop(&b->loop);
		return;
	}
	static const struct gw_data_put_cbs cbs = { on_writable, on_put_done };
	j->obj = b->next++;
	j->fed = 0;
	int rc = gw_data_put_start(b->d, &b->t, b->size, NULL, &cbs, j, &j->p);
	if (rc) {
		b->err = rc;
		if (--b->running == 0)
			uv_stop(&b->loop);
		return;
	}
	feed(j);
}

static void drain(struct job *j)
{
	struct bench *b = j->b;
	for (;;) {
		struct buf_slice s;
		int rc = gw_data_get_read(j->g, &s);
		if (rc == 1) {
			buf_unref(s.buf);
			continue;
		}
		if (rc == -EAGAIN)
			return;
		if (rc < 0) {
			fprintf(stderr, "get: %s: %s\n", iol_strerror(rc), gw_data_get_error(j->g));
			b->err = rc;
		}
		gw_data_get_free(j->g);
		b->done++;
		get_next(j);
		return;
	}
}

static void on_readable(struct gw_data_get *g, void *ud)
{
	(void)g;
	drain(ud);
}

static void get_next(struct job *j)
{
	struct bench *b = j->b;
	if (b->next >= b->objects || b->err) {
		if (--b->running == 0)
			uv_stop(&b->loop);
		return;
	}
	j->obj = b->next++;
	int rc = gw_data_get_start(b->d, &b->t, &b->layouts[j->obj], 0, b->size, on_readable, j,
				   &j->g);
	if (rc) {
		b->err = rc;
		if (--b->running == 0)
			uv_stop(&b->loop);
		return;
	}
	drain(j);
}

static void on_deleted(void *ud, int status, uint32_t failed)
{
	(void)status;
	(void)failed;
	struct bench *b = ud;
	if (--b->running == 0)
		uv_stop(&b->loop);
}

static double phase(struct bench *b, bool put)
{
	b->next = b->done = 0;
	b->running = b->inflight;
	uint64_t t0 = loop_now_ns();
	for (unsigned i = 0; i < b->inflight; i++) {
		b->jobs[i].b = b;
		if (put)
			put_next(&b->jobs[i]);
		else
			get_next(&b->jobs[i]);
	}
	uv_run(&b->loop, UV_RUN_DEFAULT);
	return (double)(loop_now_ns() - t0) / 1e9;
}

static int run(struct bench *b, size_t size, unsigned objects, unsigned inflight, const char *tr)
{
	b->size = size;
	b->objects = objects;
	b->inflight = inflight;
	b->err = 0;
	b->body = buf_new(size);
	for (size_t i = 0; i < size; i++)
		b->body->data[i] = (uint8_t)(i * 2654435761u >> 13);
	b->body->len = size;
	b->layouts = calloc(objects, sizeof(*b->layouts));
	double tp = phase(b, true);
	double tg = b->err ? 0 : phase(b, false);
	if (!b->err) {
		double mib = (double)size * objects / (1 << 20);
		printf("%-6s %8zu B x %4u  %2u in flight   PUT %8.1f MiB/s %7.0f op/s   "
		       "GET %8.1f MiB/s %7.0f op/s\n",
		       tr, size, objects, inflight, mib / tp, objects / tp, mib / tg, objects / tg);
	}
	/* Free the space for the next run. */
	b->running = 1;
	for (unsigned i = 0; i < objects; i++)
		if (b->layouts[i].k) {
			b->running++;
			gw_data_delete(b->d, &b->t, &b->layouts[i], on_deleted, b);
		}
	if (--b->running)
		uv_run(&b->loop, UV_RUN_DEFAULT);
	for (unsigned i = 0; i < objects; i++)
		gw_data_layout_clear(&b->layouts[i]);
	free(b->layouts);
	buf_unref(b->body);
	return b->err;
}

int main(int argc, char **argv)
{
	bool h2 = argc > 1 && strcmp(argv[1], "--h2") == 0;
	static struct osd_cluster c;
	static struct bench b;
	int rc = osd_cluster_start(&c, NOSD, "benchdata", 192ull << 20);
	if (rc) {
		fprintf(stderr, "osd cluster: %s\n", iol_strerror(rc));
		return 1;
	}
	uv_loop_init(&b.loop);
	struct rpc_channel *ch[NOSD];
	for (unsigned i = 0; i < NOSD; i++) {
		char t[96];
		osd_cluster_target(&c, i, !h2, t, sizeof(t));
		ch[i] = rpc_channel_open(&b.loop, t, NULL);
		b.t.osds[i] = ch[i];
	}
	b.t.pg = 1;
	struct gw_data_opts o = { .k = 4, .m = 2 };
	if (gw_data_new(&b.loop, &o, &b.d)) {
		fprintf(stderr, "gw_data_new failed\n");
		return 1;
	}
	const char *tr = h2 ? "h2" : "local";
	printf("gw_data 4+2, 4 MiB segments, window 2, six OSDs on /dev/shm, %s transport\n", tr);
	static const unsigned inflights[] = { 8, 32 };
	for (unsigned i = 0; i < 2 && !rc; i++)
		rc = run(&b, 64 << 10, 4000, inflights[i], tr);
	for (unsigned i = 0; i < 2 && !rc; i++)
		rc = run(&b, 4 << 20, 128, inflights[i], tr);
	struct gw_data_stats st;
	gw_data_stats(b.d, &st);
	printf("buffered peak %.1f MiB, decodes %llu\n", (double)st.buffered_peak / (1 << 20),
	       (unsigned long long)st.decodes);
	gw_data_free(b.d);
	for (unsigned i = 0; i < NOSD; i++)
		rpc_channel_close(ch[i]);
	while (uv_run(&b.loop, UV_RUN_DEFAULT))
		;
	uv_loop_close(&b.loop);
	osd_cluster_destroy(&c);
	return rc ? 1 : 0;
}
