/*
 * fault_io.h — a test implementation of the store's I/O seam
 * (osd/store/io.h) that can fail a call with an errno, delay or hold
 * calls, reorder device completions, and simulate a power cut. Test code
 * only: it lives in tests/lib and never in a production object.
 *
 * Files and the device are real files (under /dev/shm in the tests); the
 * simulation keeps, for every file opened through the seam, the writes
 * not yet covered by a completed flush of that file, each with the bytes
 * it overwrote. A cut (fault_io_cut, or armed with fault_io_cut_at)
 * happens at one instant under one lock and leaves on the files what a
 * disk that lost power then could hold:
 *
 *  - every write covered by a completed flush stays (a file pwrite that
 *    returned before an fdatasync of that fd was called; a device WRITE
 *    whose completion ran before a device FSYNC was submitted, once that
 *    FSYNC completed);
 *  - every other write is dropped or kept per 4 KiB sector, independently
 *    (keep_permille: 0 drops them all, 1000 keeps them all as a SIGKILL
 *    would): a kept sector holds the bytes of one of the unflushed writes
 *    to it, a random one in write order, or, for a device WRITE still in
 *    flight at the cut, its new bytes. So writes are torn at 4 KiB and
 *    reordered across sectors, as a real disk's volatile cache does; a
 *    sector is never torn inside;
 *  - from the cut on, the seam is dead: every call fails with -EIO (close
 *    still releases fds), device requests complete with -EIO, kv_durable
 *    fails. The store can then be closed normally: nothing it does after
 *    the cut reaches the simulated disk (its RocksDB writes are undone by
 *    the restore below). fault_io_recover() then restores the RocksDB
 *    directories and revives the seam for a reopen on what is left.
 *
 * RocksDB writes through its own Env, outside the seam, so its files are
 * simulated differently: at each kv_durable call (kv calls it after every
 * memtable flush that returned and every synced WAL write, before it
 * trims the commit log or acknowledges that write; see io.h) the seam
 * takes a RocksDB checkpoint of the database without flushing it (table
 * files, MANIFEST, and the WAL, which holds only synced writes here) into
 * its snapshot dir; fault_io_recover() replaces the database directory's
 * RocksDB files with the last such snapshot (files opened through the
 * seam, i.e. the commit log, stay). The restored state is exactly the
 * least RocksDB guarantees at the cut: what kv made durable through it,
 * nothing of its WAL-less memtable writes. A test can also model RocksDB
 * being ahead of that (its own background flushes): flush the memtable
 * and call fault_io_kv_flushed().
 *
 * Not modelled: namespace and size operations (create, rename, unlink,
 * fallocate, directory fsync) are durable when they return; a write that
 * extended a file and is dropped leaves zeros, not a shorter file; torn
 * sectors (a sector is all old or all new); corrupted or misdirected
 * writes and read errors other than injected ones; RocksDB states newer
 * than the last kv_durable unless the test says so (fault_io_kv_flushed:
 * otherwise its background flushes that completed after it are dropped
 * too, a stricter world than a real crash), and damage to RocksDB's own
 * files (its crash consistency is trusted). The clock is the real one.
 *
 * Determinism: the seed fixes the random choices (delays, cut tears) in
 * the order they are drawn; thread scheduling (kv's commit and checkpoint
 * threads) is not fixed, so a seed replays the same workload and cut
 * point in calls, with possibly different interleavings.
 *
 * Threads: every call is safe from any thread; the device engine runs on
 * its loop (completions after a random number of loop turns, 0 to
 * dev_max_turns, so completions reorder).
 */
#ifndef TESTS_LIB_FAULT_IO_H
#define TESTS_LIB_FAULT_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "osd/store/io.h"

struct fault_io;

/* Calls that can be failed, held and counted. */
enum fault_io_call {
	FAULT_IO_OPEN,
	FAULT_IO_PREAD,
	FAULT_IO_PWRITE,
	FAULT_IO_FDATASYNC,
	FAULT_IO_DEV_READ,
	FAULT_IO_DEV_WRITE,
	FAULT_IO_DEV_FSYNC,
	FAULT_IO_KV_DURABLE,
	FAULT_IO_NCALLS
};

struct fault_io_opts {
	uint64_t seed;
	const char *snap_dir;       /* RocksDB snapshots (created if missing;
	                             * its content is the seam's) */
	uint32_t dev_max_turns;     /* device completions wait 0..this loop
	                             * turns (0: the next turn, in order) */
	uint32_t sync_delay_max_us; /* file pwrite/fdatasync sleep 0..this */
	uint32_t kv_delay_max_us;   /* kv_durable sleeps 0..this first */
};

struct fault_io_stats {
	uint64_t events;            /* writes, flushes, kv_durable calls */
	uint64_t cuts;
	uint64_t snapshots;         /* RocksDB checkpoints taken */
	uint64_t sectors_dropped;   /* at cuts: unflushed sectors lost */
	uint64_t sectors_kept;      /* ... and kept (some write's bytes) */
	uint64_t injected;          /* calls failed by fault_io_fail */
};

/* 0 and *out, or -errno. */
int fault_io_new(const struct fault_io_opts *o, struct fault_io **out);

/* The table to put in store_opts.io (or pass to store_kv_open...). */
const struct store_io *fault_io_ops(struct fault_io *f);

/* Requires every fd and engine opened through it closed. */
void fault_io_destroy(struct fault_io *f);

/* The nth call of kind from now (1: the next) fails with -err, once;
 * nth 0 disarms. The failed call does nothing. */
void fault_io_fail(struct fault_io *f, enum fault_io_call call, uint64_t nth, int err);

/* While on, calls of kind block (outside the lock) until turned off or
 * a cut (then they fail with -EIO, and the hold is over). File calls and
 * kv_durable only: device requests (on the loop) are never held. */
void fault_io_hold(struct fault_io *f, enum fault_io_call call, bool on);

/* Cut power at the nth event from now (1: the next write, flush or
 * kv_durable call, which then does not happen and fails), keeping each
 * unflushed sector with probability keep_permille / 1000. nth 0 disarms. */
void fault_io_cut_at(struct fault_io *f, uint64_t nth, uint32_t keep_permille);

/* Cut power now. */
void fault_io_cut(struct fault_io *f, uint32_t keep_permille);

bool fault_io_is_cut(struct fault_io *f);

/* RocksDB made db's state durable on its own (the caller flushed its
 * memtable, as RocksDB's background flushes do): a cut from now on leaves
 * at least that. Models RocksDB ahead of kv's last kv_durable. 0 or -EIO
 * (also when the power is off). Any thread. */
int fault_io_kv_flushed(struct fault_io *f, struct rocksdb_t *db, const char *dir);

/* After a cut, once the store using the seam is closed: put back the last
 * RocksDB snapshot of every database the seam saw, and make the seam
 * work again (nothing unflushed: the files are what the cut left).
 * 0, or -errno with a message in err. */
int fault_io_recover(struct fault_io *f, char *err, size_t errlen);

void fault_io_stats(struct fault_io *f, struct fault_io_stats *out);

#endif
