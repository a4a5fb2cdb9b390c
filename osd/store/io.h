/*
 * io.h — the store's I/O and fault seam: every call osd/store makes to
 * the device, to the commit-log file and to the clock goes through one
 * table, struct store_io (as canonical/raft's struct raft_io and SQLite's
 * VFS / os_unix.c system-call table). store_io_default() is the real one:
 * plain pread/pwrite/fdatasync for files, io_uring for the device, the
 * monotonic clock. A test passes its own (tests/lib/fault_io.h) in
 * store_opts.io to fail, delay or drop what the store writes.
 *
 * What goes through the seam:
 *  - file contents: open, pread, pwrite, fdatasync, close of the device
 *    (superblock reads and writes, and the fd handed to the engine) and
 *    of the commit log (creation, header, records);
 *  - the device's asynchronous reads, writes and fdatasyncs (an "engine"
 *    per device fd, completed on the owner's loop: aio_*);
 *  - the clock the store measures latencies and batching with (now_ns);
 *  - kv_durable: kv tells the seam each time RocksDB itself holds a state
 *    durably (RocksDB does its file I/O through its own Env, outside this
 *    table; see the comment at the hook).
 * What does not: namespace and size operations (stat, rename, unlink,
 * mkdir, directory fsync, fallocate, ftruncate, flock, fstat, ioctl) are
 * made directly on the fds and paths the seam handed out; RocksDB's own
 * files.
 *
 * Fds are real file descriptors in every implementation: the store may
 * flock, fstat or ioctl them. Every fd opened through the seam is closed
 * through it. Threads: file calls come from the opener's thread, kv's
 * commit thread and kv's checkpoint thread (one user per fd at a time);
 * an engine lives on one loop; now_ns and kv_durable from any thread.
 * An implementation must be thread-safe to that extent.
 *
 * Cost: one indirect call per file call and per device request (and per
 * completion). The table is read-only after setup; the store keeps a
 * pointer to it, which must outlive the store.
 */
#ifndef OSD_STORE_IO_H
#define OSD_STORE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

struct rocksdb_t;
struct store_io_aio;

enum store_io_op { STORE_IO_READ, STORE_IO_WRITE, STORE_IO_FSYNC };

/* One device request as the engine sees it; owned by the submitter until
 * the engine's completion callback for it. */
struct store_io_req {
	enum store_io_op op;
	void *buf;        /* READ/WRITE: 4 KiB-aligned; FSYNC: unused */
	uint32_t len;     /* bytes to transfer (multiple of 4 KiB) */
	uint64_t off;     /* device byte offset (multiple of 4 KiB) */
};

/* Engine completion, on the engine's loop, never from inside aio_submit:
 * res is the bytes transferred (possibly short; 0 at the end of the
 * device) for READ/WRITE, 0 for FSYNC, or -errno. */
typedef void (*store_io_aio_cb)(void *arg, struct store_io_req *req, int res);

struct store_io {
	void *impl;  /* the implementation's state */

	/* Files: synchronous. open returns an fd or -errno; pread/pwrite
	 * return the bytes transferred (possibly short) or -errno; the rest
	 * 0 or -errno. fdatasync makes every pwrite on fd that returned
	 * before the call durable. close always releases fd. */
	int (*open)(const struct store_io *io, const char *path, int flags, mode_t mode);
	ssize_t (*pread)(const struct store_io *io, int fd, void *buf, size_t len, uint64_t off);
	ssize_t (*pwrite)(const struct store_io *io, int fd, const void *buf, size_t len,
			  uint64_t off);
	int (*fdatasync)(const struct store_io *io, int fd);
	int (*close)(const struct store_io *io, int fd);

	/* The device engine over fd (opened through open above; the engine
	 * does not close it) on loop: depth requests at most are submitted
	 * at once (dev.c queues the rest). aio_submit cannot fail: errors
	 * come back through cb. An FSYNC makes durable the WRITEs whose
	 * completion ran before it was submitted. aio_close requires no
	 * request in flight; done_cb(arg) runs on the loop once the engine's
	 * handles closed. */
	int (*aio_open)(const struct store_io *io, uv_loop_t *loop, int fd, uint32_t depth,
			store_io_aio_cb cb, void *arg, struct store_io_aio **out);
	void (*aio_submit)(struct store_io_aio *a, struct store_io_req *req);
	void (*aio_close)(struct store_io_aio *a, void (*done_cb)(void *arg), void *arg);

	/* Monotonic nanoseconds (latency figures and kv's batching window). */
	uint64_t (*now_ns)(const struct store_io *io);

	/*
	 * RocksDB does its own file I/O, so the seam cannot see its writes;
	 * instead kv calls this at each point after which it relies on
	 * RocksDB's own durability: a memtable flush that returned (the
	 * commit log is trimmed only after this hook returned 0 for the flush
	 * that covers it), and a synced WAL write (open-time records, a group
	 * too large for the commit log). db's state under dir at that moment
	 * is the least a crash may leave. Returns 0, or -errno: kv then
	 * treats the flush or write as failed (nothing is trimmed, the write
	 * is not acknowledged). May be NULL (the default: nothing to do).
	 */
	int (*kv_durable)(const struct store_io *io, struct rocksdb_t *db, const char *dir);
};

/* The real implementation (files, io_uring, CLOCK_MONOTONIC): a static
 * table, never freed. */
const struct store_io *store_io_default(void);

/* io, or the default when io is NULL. */
static inline const struct store_io *store_io_or_default(const struct store_io *io)
{
	return io ? io : store_io_default();
}

/* Helpers over io: the whole of len, retrying short transfers and EINTR.
 * 0, -errno, or -EIO when a read finds the end of the file first. */
int store_io_pread_all(const struct store_io *io, int fd, void *buf, size_t len, uint64_t off);
int store_io_pwrite_all(const struct store_io *io, int fd, const void *buf, size_t len,
			uint64_t off);

#endif
