/*
 * segfill.h — libraft's Raft log segments preallocated as written blocks.
 *
 * canonical/raft's raft_uv creates every open segment ahead of use with
 * posix_fallocate(3) and then appends to it with O_DIRECT | O_DSYNC
 * writes. On ext4 (and xfs) fallocate leaves *unwritten* extents, so
 * every append is also an extent conversion: a journal commit per log
 * write, and ext4 refuses raft_uv's first, RWF_NOWAIT submit (it is not
 * an overwrite), so each write is submitted a second time from a libuv
 * pool thread and handed back. Measured on this VM's ext4 (fio, 64 KiB
 * O_DIRECT | O_DSYNC writes, one in flight): p50 0.30-0.33 ms into
 * fallocated blocks, 0.15 ms into written ones.
 *
 * This module defines posix_fallocate(3) in the executable, which
 * libraft's calls bind to. Every call is passed to libc's first. Then,
 * only for a file whose directory was registered with
 * segfill_register_dir (meta registers each group's Raft directory), the
 * range the call added past the file's old end is written with zeros
 * through a second, O_DIRECT descriptor and made durable with one
 * fdatasync: the blocks are then written, and each later append is an
 * overwrite that needs no journal commit and that the NOWAIT submit
 * accepts. It runs where raft_uv prepares segments (a libuv pool thread,
 * ahead of the appends), once per segment.
 *
 * Why it is sound: posix_fallocate's contract is that the range is
 * allocated and reads as before (zeros past the old end); writing zeros
 * there keeps both. Bytes below the old end are never written. libraft
 * reads an open segment's zero tail as "not written" either way, and it
 * truncates at the first batch whose checksum fails, so a torn append
 * into a written block loads as it does into an unwritten one.
 *
 * Calls for other files (RocksDB's, the OSD's data file), on memory
 * filesystems (tmpfs: nothing to convert) and where O_DIRECT is refused
 * are libc's posix_fallocate, unchanged. A failed fill leaves the range
 * allocated as libc left it and is only counted.
 */
#ifndef META_SEGFILL_H
#define META_SEGFILL_H

#include <stdint.h>

/* Fill segments created in `dir` (the directory itself, not below it).
 * Idempotent; thread-safe. Returns 0, -ENAMETOOLONG or -ENOMEM. */
int segfill_register_dir(const char *dir);

/* Stop filling in `dir` (a group closing). Unknown dirs are ignored. */
void segfill_unregister_dir(const char *dir);

struct segfill_stats {
	uint64_t files;    /* posix_fallocate calls whose range was filled */
	uint64_t bytes;    /* zero bytes written by those */
	uint64_t skipped;  /* registered, but not filled: memory fs, no O_DIRECT */
	uint64_t failed;   /* a fill that failed part-way (write or fdatasync) */
};

void segfill_get_stats(struct segfill_stats *st);

#endif
