/*
 * dev.c — O_DIRECT device I/O over the seam's engine (io.h), completed on
 * a libuv loop.
 *
 * Owns: the device fd, one engine, the wait FIFO and the stats.
 * Invariant: in_ring <= depth; requests beyond it wait in the FIFO and
 * enter the engine in submission order as completions free slots (the
 * default engine, io_uring, relies on it: its SQ has depth entries).
 * Follow-ups submitted from completion callbacks are batched by the
 * engine (one io_uring_submit per reap). Loop thread only. Does not retry
 * errors; short transfers are continued.
 */
#include "osd/store/dev.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/loop.h"
#include "osd/store/super.h"

struct store_dev {
	const struct store_io *io;
	struct store_io_aio *aio;
	int fd;
	uint32_t depth;
	uint32_t in_ring;         /* requests in the engine */
	bool closing;
	struct store_dev_req *wait_head, *wait_tail;
	uint32_t waiting;
	struct store_dev_stats st;
	void (*done_cb)(void *arg);
	void *done_arg;
};

/* Hand req's (remaining) I/O to the engine; there must be room. */
static void prep(struct store_dev *d, struct store_dev_req *req)
{
	if (req->io.op != STORE_IO_FSYNC) {
		req->io.buf = req->buf + req->done;
		req->io.len = req->len - req->done;
		req->io.off = req->off + req->done;
	}
	d->in_ring++;
	d->io->aio_submit(d->aio, &req->io);
}

static void fill_from_wait(struct store_dev *d)
{
	while (d->wait_head && d->in_ring < d->depth) {
		struct store_dev_req *r = d->wait_head;
		d->wait_head = r->next;
		if (!d->wait_head)
			d->wait_tail = NULL;
		d->waiting--;
		prep(d, r);
	}
}

static void finish(struct store_dev *d, struct store_dev_req *req, int res)
{
	if (req->io.op == STORE_IO_FSYNC) {
		d->st.fsync_ns_total += d->io->now_ns(d->io) - req->start_ns;
		req->cb(req, res < 0 ? res : 0);
		return;
	}
	if (res < 0) {
		req->cb(req, res);
		return;
	}
	if (res == 0) { /* end of device: nothing more will come */
		req->cb(req, -EIO);
		return;
	}
	req->done += (uint32_t)res;
	if (req->done < req->len) {
		/* Short transfer: continue where it stopped. */
		prep(d, req);
		return;
	}
	req->cb(req, 0);
}

/* The engine's completion callback. */
static void on_complete(void *arg, struct store_io_req *ioreq, int res)
{
	struct store_dev *d = arg;
	struct store_dev_req *req = container_of(ioreq, struct store_dev_req, io);
	d->in_ring--;
	finish(d, req, res);
	fill_from_wait(d);
}

int store_dev_open(uv_loop_t *loop, const struct store_io *io, int fd, uint32_t queue_depth,
		   struct store_dev **out)
{
	int rc;
	io = store_io_or_default(io);
	if (queue_depth == 0)
		queue_depth = 128;
	struct store_dev *d = calloc(1, sizeof(*d));
	if (!d) {
		rc = -ENOMEM;
		goto out_fd;
	}
	d->io = io;
	d->fd = fd;
	d->depth = queue_depth;
	rc = io->aio_open(io, loop, fd, queue_depth, on_complete, d, &d->aio);
	if (rc < 0)
		goto out_free;
	*out = d;
	return 0;

out_free:
	free(d);
out_fd:
	io->close(io, fd);
	return rc;
}

static int submit(struct store_dev *d, struct store_dev_req *req, enum store_io_op op,
		  void *buf, uint32_t len, uint64_t off, store_dev_cb cb)
{
	if (d->closing)
		return -ESHUTDOWN;
	if (op != STORE_IO_FSYNC &&
	    (len == 0 || len % STORE_BLOCK_SIZE || off % STORE_BLOCK_SIZE ||
	     (uintptr_t)buf % STORE_BLOCK_SIZE))
		return -EINVAL;
	req->io.op = op;
	req->io.buf = NULL;
	req->io.len = 0;
	req->io.off = 0;
	req->buf = buf;
	req->len = len;
	req->off = off;
	req->done = 0;
	req->cb = cb;
	req->next = NULL;
	switch (op) {
	case STORE_IO_READ:
		d->st.reads++;
		d->st.read_bytes += len;
		break;
	case STORE_IO_WRITE:
		d->st.writes++;
		d->st.write_bytes += len;
		break;
	case STORE_IO_FSYNC:
		d->st.fsyncs++;
		req->start_ns = d->io->now_ns(d->io);
		break;
	}
	if (d->in_ring < d->depth && !d->wait_head) {
		prep(d, req);
	} else {
		if (d->wait_tail)
			d->wait_tail->next = req;
		else
			d->wait_head = req;
		d->wait_tail = req;
		d->waiting++;
	}
	return 0;
}

int store_dev_read(struct store_dev *d, struct store_dev_req *req, void *buf,
		   uint32_t len, uint64_t off, store_dev_cb cb)
{
	return submit(d, req, STORE_IO_READ, buf, len, off, cb);
}

int store_dev_write(struct store_dev *d, struct store_dev_req *req, const void *buf,
		    uint32_t len, uint64_t off, store_dev_cb cb)
{
	/* The engine only reads from buf; the cast keeps one request type. */
	return submit(d, req, STORE_IO_WRITE, (void *)buf, len, off, cb);
}

int store_dev_fsync(struct store_dev *d, struct store_dev_req *req, store_dev_cb cb)
{
	return submit(d, req, STORE_IO_FSYNC, NULL, 0, 0, cb);
}

void store_dev_stats(const struct store_dev *d, struct store_dev_stats *out)
{
	*out = d->st;
	out->in_ring = d->in_ring;
	out->queued = d->waiting;
}

uint32_t store_dev_inflight(const struct store_dev *d)
{
	return d->in_ring + d->waiting;
}

static void on_engine_closed(void *arg)
{
	struct store_dev *d = arg;
	void (*cb)(void *) = d->done_cb;
	void *cb_arg = d->done_arg;
	free(d);
	if (cb)
		cb(cb_arg);
}

void store_dev_close(struct store_dev *d, void (*done_cb)(void *arg), void *arg)
{
	d->closing = true;
	d->done_cb = done_cb;
	d->done_arg = arg;
	d->io->aio_close(d->aio, on_engine_closed, d);
	d->io->close(d->io, d->fd);
}
