/*
 * dev.h — asynchronous O_DIRECT block I/O on the store's device, completed
 * on the owner's libuv loop, through the I/O seam's device engine (io.h:
 * io_uring by default).
 *
 * Owns: the device fd (once handed over) and one engine over it. At most
 * queue_depth requests are in the engine; more wait in a FIFO in memory
 * (unbounded in count here: the store bounds its own in-flight
 * operations). Loop thread only.
 *
 * Does not: know about shards, allocate, or retry failed I/O (a short
 * transfer is continued; an error is reported).
 */
#ifndef OSD_STORE_DEV_H
#define OSD_STORE_DEV_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "osd/store/io.h"

struct store_dev;
struct store_dev_req;
typedef void (*store_dev_cb)(struct store_dev_req *req, int status);

/* A request, owned by the caller from submit until its callback. */
struct store_dev_req {
	void *data;              /* the caller's */
	/* private */
	struct store_io_req io;  /* what the engine does next (the remainder
	                          * after a short transfer) */
	uint8_t *buf;
	uint64_t off;
	uint32_t len;
	uint32_t done;           /* bytes transferred so far */
	uint64_t start_ns;       /* FSYNC: submit time, for its latency */
	store_dev_cb cb;
	struct store_dev_req *next;
};

struct store_dev_stats {
	uint64_t reads, writes, fsyncs;
	uint64_t read_bytes, write_bytes;
	uint32_t in_ring;        /* requests in the engine (ring) now */
	uint32_t queued;         /* requests waiting for ring space now */
	uint64_t fsync_ns_total; /* summed fsync latency */
};

/*
 * Take over fd (opened O_DIRECT|O_RDWR through io; closed through io by
 * store_dev_close, or here on failure) and set up io's engine for
 * queue_depth requests (0: 128) on loop. io (NULL: the default) must
 * outlive the device. Returns 0 or -errno.
 */
int store_dev_open(uv_loop_t *loop, const struct store_io *io, int fd, uint32_t queue_depth,
		   struct store_dev **out);

/*
 * Read or write len bytes at byte offset off. buf, len and off must be
 * multiples of 4096 (buf from buf_new_aligned(..., 4096)); len > 0.
 * cb runs later on the loop with 0 or -errno (never from inside the call).
 * Returns 0 (queued) or -EINVAL (misaligned) / -ESHUTDOWN (closing); on
 * error cb is not called.
 */
int store_dev_read(struct store_dev *d, struct store_dev_req *req, void *buf,
		   uint32_t len, uint64_t off, store_dev_cb cb);
int store_dev_write(struct store_dev *d, struct store_dev_req *req, const void *buf,
		    uint32_t len, uint64_t off, store_dev_cb cb);

/* fdatasync the device: writes completed before this is submitted are
 * durable when cb(0) runs. */
int store_dev_fsync(struct store_dev *d, struct store_dev_req *req, store_dev_cb cb);

void store_dev_stats(const struct store_dev *d, struct store_dev_stats *out);

/* Requests in the engine or waiting. */
uint32_t store_dev_inflight(const struct store_dev *d);

/*
 * Close: requires no request in flight (store_dev_inflight() == 0). Closes
 * the engine and the fd; done_cb(arg) runs on the loop once the engine's
 * handles are closed and d is freed.
 */
void store_dev_close(struct store_dev *d, void (*done_cb)(void *arg), void *arg);

#endif
