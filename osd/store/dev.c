/*
 * dev.c — io_uring O_DIRECT I/O completed on a libuv loop.
 *
 * Owns: one ring and an eventfd the kernel signals on every completion;
 * a uv_poll on that eventfd reaps the completion queue on the loop thread.
 * Invariant: in_ring <= depth; requests beyond it wait in a FIFO and enter
 * the ring in submission order as completions free slots. Submission is
 * batched: requests made while reaping (callbacks submitting follow-ups)
 * are flushed to the kernel with one io_uring_submit at the end.
 * Loop thread only. Does not retry errors; short transfers are continued.
 */
#include "osd/store/dev.h"

#include <errno.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "osd/store/super.h"

struct store_dev {
	uv_loop_t *loop;
	int fd;
	int efd;
	struct io_uring ring;
	uv_poll_t poll;
	uint32_t depth;
	uint32_t in_ring;
	uint32_t unsubmitted;     /* SQEs prepared but not yet submitted */
	bool reaping;             /* inside on_poll: defer the submit */
	bool closing;
	struct store_dev_req *wait_head, *wait_tail;
	uint32_t waiting;
	struct store_dev_stats st;
	void (*done_cb)(void *arg);
	void *done_arg;
};

static void submit_now(struct store_dev *d)
{
	if (d->unsubmitted == 0)
		return;
	int rc;
	do
		rc = io_uring_submit(&d->ring);
	while (rc == -EINTR);
	/* A failure here (e.g. -EAGAIN under memory pressure) leaves the
	 * SQEs in the ring; the next submit retries them. */
	if (rc > 0)
		d->unsubmitted -= (uint32_t)rc > d->unsubmitted ? d->unsubmitted : (uint32_t)rc;
}

/* Put req's (remaining) I/O into the ring; there must be room. */
static void prep(struct store_dev *d, struct store_dev_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&d->ring);
	if (!sqe) { /* SQ full of unsubmitted entries: flush and retry */
		submit_now(d);
		sqe = io_uring_get_sqe(&d->ring);
	}
	/* in_ring <= depth == SQ size and every submitted entry left the SQ,
	 * so an SQE is always available after a submit. */
	if (!sqe)
		abort();
	switch (req->op) {
	case STORE_DEV_READ:
		io_uring_prep_read(sqe, d->fd, req->buf + req->done, req->len - req->done,
				   req->off + req->done);
		break;
	case STORE_DEV_WRITE:
		io_uring_prep_write(sqe, d->fd, req->buf + req->done, req->len - req->done,
				    req->off + req->done);
		break;
	case STORE_DEV_FSYNC:
		io_uring_prep_fsync(sqe, d->fd, IORING_FSYNC_DATASYNC);
		req->off = uv_hrtime(); /* start time, for the fsync latency */
		break;
	}
	io_uring_sqe_set_data(sqe, req);
	d->in_ring++;
	d->unsubmitted++;
	if (!d->reaping)
		submit_now(d);
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

static void complete(struct store_dev *d, struct store_dev_req *req, int res)
{
	d->in_ring--;
	if (req->op == STORE_DEV_FSYNC) {
		d->st.fsync_ns_total += uv_hrtime() - req->off;
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

static void on_poll(uv_poll_t *p, int status, int events)
{
	(void)events;
	struct store_dev *d = p->data;
	uint64_t v;
	if (read(d->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		status = status ? status : -errno;
	d->reaping = true;
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		/* Collect first, then run callbacks outside the CQ walk:
		 * callbacks may prep new SQEs. */
		struct store_dev_req *done[64];
		int res[64];
		io_uring_for_each_cqe(&d->ring, head, cqe) {
			done[n] = io_uring_cqe_get_data(cqe);
			res[n] = cqe->res;
			if (++n == 64)
				break;
		}
		if (n == 0)
			break;
		io_uring_cq_advance(&d->ring, n);
		for (unsigned i = 0; i < n; i++)
			complete(d, done[i], res[i]);
	}
	fill_from_wait(d);
	d->reaping = false;
	submit_now(d);
}

int store_dev_open(uv_loop_t *loop, int fd, uint32_t queue_depth, struct store_dev **out)
{
	int rc;
	if (queue_depth == 0)
		queue_depth = 128;
	struct store_dev *d = calloc(1, sizeof(*d));
	if (!d) {
		rc = -ENOMEM;
		goto out_fd;
	}
	d->loop = loop;
	d->fd = fd;
	d->depth = queue_depth;
	rc = io_uring_queue_init(queue_depth, &d->ring, 0);
	if (rc < 0)
		goto out_free;
	d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->efd < 0) {
		rc = -errno;
		goto out_ring;
	}
	rc = io_uring_register_eventfd(&d->ring, d->efd);
	if (rc < 0)
		goto out_efd;
	rc = uv_poll_init(loop, &d->poll, d->efd);
	if (rc < 0)
		goto out_efd;
	d->poll.data = d;
	rc = uv_poll_start(&d->poll, UV_READABLE, on_poll);
	if (rc < 0) {
		/* The handle is initialised: it must be closed through the loop.
		 * Rare enough to leak the struct to the close path. */
		uv_close((uv_handle_t *)&d->poll, NULL);
		io_uring_queue_exit(&d->ring);
		close(d->efd);
		close(fd);
		return rc;
	}
	*out = d;
	return 0;

out_efd:
	close(d->efd);
out_ring:
	io_uring_queue_exit(&d->ring);
out_free:
	free(d);
out_fd:
	close(fd);
	return rc;
}

static int submit(struct store_dev *d, struct store_dev_req *req, enum store_dev_op op,
		  void *buf, uint32_t len, uint64_t off, store_dev_cb cb)
{
	if (d->closing)
		return -ESHUTDOWN;
	if (op != STORE_DEV_FSYNC &&
	    (len == 0 || len % STORE_BLOCK_SIZE || off % STORE_BLOCK_SIZE ||
	     (uintptr_t)buf % STORE_BLOCK_SIZE))
		return -EINVAL;
	req->op = op;
	req->buf = buf;
	req->len = len;
	req->off = off;
	req->done = 0;
	req->cb = cb;
	req->next = NULL;
	switch (op) {
	case STORE_DEV_READ:
		d->st.reads++;
		d->st.read_bytes += len;
		break;
	case STORE_DEV_WRITE:
		d->st.writes++;
		d->st.write_bytes += len;
		break;
	case STORE_DEV_FSYNC:
		d->st.fsyncs++;
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
	return submit(d, req, STORE_DEV_READ, buf, len, off, cb);
}

int store_dev_write(struct store_dev *d, struct store_dev_req *req, const void *buf,
		    uint32_t len, uint64_t off, store_dev_cb cb)
{
	/* The kernel only reads from buf; the cast keeps one request type. */
	return submit(d, req, STORE_DEV_WRITE, (void *)buf, len, off, cb);
}

int store_dev_fsync(struct store_dev *d, struct store_dev_req *req, store_dev_cb cb)
{
	return submit(d, req, STORE_DEV_FSYNC, NULL, 0, 0, cb);
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

static void on_poll_closed(uv_handle_t *h)
{
	struct store_dev *d = h->data;
	void (*cb)(void *) = d->done_cb;
	void *arg = d->done_arg;
	close(d->efd);
	free(d);
	if (cb)
		cb(arg);
}

void store_dev_close(struct store_dev *d, void (*done_cb)(void *arg), void *arg)
{
	d->closing = true;
	d->done_cb = done_cb;
	d->done_arg = arg;
	uv_poll_stop(&d->poll);
	io_uring_unregister_eventfd(&d->ring);
	io_uring_queue_exit(&d->ring);
	close(d->fd);
	/* The eventfd is closed after the poll handle (libuv's rule). */
	uv_close((uv_handle_t *)&d->poll, on_poll_closed);
}
