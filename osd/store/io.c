/*
 * io.c — the default store_io (io.h): system calls on files, io_uring on
 * the device, CLOCK_MONOTONIC.
 *
 * Owns, per device engine: one ring and an eventfd the kernel signals on
 * every completion; a uv_poll on that eventfd reaps the completion queue
 * on the loop thread. Invariant: at most depth requests are in the ring
 * (dev.c keeps the rest), so an SQE is always free after a submit.
 * Submission is batched: requests submitted while reaping (completion
 * callbacks submitting follow-ups) go to the kernel with one
 * io_uring_submit at the end of the reap. Engine calls: loop thread only.
 * Does not: retry, continue short transfers (dev.c does), or fail a call
 * on purpose (that is the test implementation's business).
 */
#include "osd/store/io.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ files */

static int f_open(const struct store_io *io, const char *path, int flags, mode_t mode)
{
	(void)io;
	int fd = open(path, flags, mode);
	return fd < 0 ? -errno : fd;
}

static ssize_t f_pread(const struct store_io *io, int fd, void *buf, size_t len, uint64_t off)
{
	(void)io;
	ssize_t n = pread(fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static ssize_t f_pwrite(const struct store_io *io, int fd, const void *buf, size_t len,
			uint64_t off)
{
	(void)io;
	ssize_t n = pwrite(fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static int f_fdatasync(const struct store_io *io, int fd)
{
	(void)io;
	return fdatasync(fd) < 0 ? -errno : 0;
}

static int f_close(const struct store_io *io, int fd)
{
	(void)io;
	return close(fd) < 0 ? -errno : 0;
}

static uint64_t mono_ns(const struct store_io *io)
{
	(void)io;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int store_io_pread_all(const struct store_io *io, int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *b = buf;
	while (len) {
		ssize_t n = io->pread(io, fd, b, len, off);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO; /* the file is shorter than asked */
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int store_io_pwrite_all(const struct store_io *io, int fd, const void *buf, size_t len,
			uint64_t off)
{
	const uint8_t *b = buf;
	while (len) {
		ssize_t n = io->pwrite(io, fd, b, len, off);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO;
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* ------------------------------------------------------------ io_uring engine */

struct store_io_aio {
	int fd;
	int efd;
	struct io_uring ring;
	uv_poll_t poll;
	uint32_t unsubmitted;     /* SQEs prepared but not yet submitted */
	bool reaping;             /* inside on_poll: defer the submit */
	store_io_aio_cb cb;
	void *arg;
	void (*done_cb)(void *arg);
	void *done_arg;
};

static void submit_now(struct store_io_aio *a)
{
	if (a->unsubmitted == 0)
		return;
	int rc;
	do
		rc = io_uring_submit(&a->ring);
	while (rc == -EINTR);
	/* A failure here (e.g. -EAGAIN under memory pressure) leaves the
	 * SQEs in the ring; the next submit retries them. */
	if (rc > 0)
		a->unsubmitted -= (uint32_t)rc > a->unsubmitted ? a->unsubmitted : (uint32_t)rc;
}

static void u_submit(struct store_io_aio *a, struct store_io_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&a->ring);
	if (!sqe) { /* SQ full of unsubmitted entries: flush and retry */
		submit_now(a);
		sqe = io_uring_get_sqe(&a->ring);
	}
	/* dev.c keeps at most depth (== SQ size) requests here and every
	 * submitted entry left the SQ, so one is always free after a submit. */
	if (!sqe)
		abort();
	switch (req->op) {
	case STORE_IO_READ:
		io_uring_prep_read(sqe, a->fd, req->buf, req->len, req->off);
		break;
	case STORE_IO_WRITE:
		io_uring_prep_write(sqe, a->fd, req->buf, req->len, req->off);
		break;
	case STORE_IO_FSYNC:
		io_uring_prep_fsync(sqe, a->fd, IORING_FSYNC_DATASYNC);
		break;
	}
	io_uring_sqe_set_data(sqe, req);
	a->unsubmitted++;
	if (!a->reaping)
		submit_now(a);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	struct store_io_aio *a = p->data;
	uint64_t v;
	/* Only drains the eventfd; the CQ says what completed. */
	(void)!read(a->efd, &v, sizeof(v));
	a->reaping = true;
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		/* Collect first, then run callbacks outside the CQ walk:
		 * callbacks may submit new requests. */
		struct store_io_req *done[64];
		int res[64];
		io_uring_for_each_cqe(&a->ring, head, cqe) {
			done[n] = io_uring_cqe_get_data(cqe);
			res[n] = cqe->res;
			if (++n == 64)
				break;
		}
		if (n == 0)
			break;
		io_uring_cq_advance(&a->ring, n);
		for (unsigned i = 0; i < n; i++)
			a->cb(a->arg, done[i], res[i]);
	}
	a->reaping = false;
	submit_now(a);
}

static int u_open(const struct store_io *io, uv_loop_t *loop, int fd, uint32_t depth,
		  store_io_aio_cb cb, void *arg, struct store_io_aio **out)
{
	(void)io;
	int rc;
	struct store_io_aio *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = fd;
	a->cb = cb;
	a->arg = arg;
	rc = io_uring_queue_init(depth, &a->ring, 0);
	if (rc < 0)
		goto out_free;
	a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (a->efd < 0) {
		rc = -errno;
		goto out_ring;
	}
	rc = io_uring_register_eventfd(&a->ring, a->efd);
	if (rc < 0)
		goto out_efd;
	rc = uv_poll_init(loop, &a->poll, a->efd);
	if (rc < 0)
		goto out_efd;
	a->poll.data = a;
	rc = uv_poll_start(&a->poll, UV_READABLE, on_poll);
	if (rc < 0) {
		/* The handle is initialised: it must be closed through the loop.
		 * Rare enough to leak the struct to the close path. */
		uv_close((uv_handle_t *)&a->poll, NULL);
		io_uring_queue_exit(&a->ring);
		close(a->efd);
		return rc;
	}
	*out = a;
	return 0;

out_efd:
	close(a->efd);
out_ring:
	io_uring_queue_exit(&a->ring);
out_free:
	free(a);
	return rc;
}

static void on_poll_closed(uv_handle_t *h)
{
	struct store_io_aio *a = h->data;
	void (*cb)(void *) = a->done_cb;
	void *arg = a->done_arg;
	close(a->efd);
	free(a);
	if (cb)
		cb(arg);
}

static void u_close(struct store_io_aio *a, void (*done_cb)(void *arg), void *arg)
{
	a->done_cb = done_cb;
	a->done_arg = arg;
	uv_poll_stop(&a->poll);
	io_uring_unregister_eventfd(&a->ring);
	io_uring_queue_exit(&a->ring);
	/* The eventfd is closed after the poll handle (libuv's rule). */
	uv_close((uv_handle_t *)&a->poll, on_poll_closed);
}

static const struct store_io default_io = {
	.open = f_open,
	.pread = f_pread,
	.pwrite = f_pwrite,
	.fdatasync = f_fdatasync,
	.close = f_close,
	.aio_open = u_open,
	.aio_submit = u_submit,
	.aio_close = u_close,
	.now_ns = mono_ns,
	.kv_durable = NULL,
};

const struct store_io *store_io_default(void)
{
	return &default_io;
}
