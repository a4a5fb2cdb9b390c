/*
 * clog.h — the store's commit log: a fixed-size, preallocated ring file
 * that group commits are made durable in, so that RocksDB can be written
 * without a synced WAL.
 *
 * Why: a synced RocksDB write appends to its WAL, and on ext4 every
 * fdatasync of a growing (or fallocated-but-unwritten) file also commits
 * the journal: ~2 device flushes per group commit. The ring is written in
 * place over blocks that were written at creation and never change size,
 * so a record costs what a single writer's in-place pwrite + fdatasync
 * costs: one data write and one device flush.
 *
 * On-disk format (all integers little-endian):
 *   bytes 0..4095     header block:
 *                       char[8] magic "IOLCLOG1"
 *                       u32 version (1)
 *                       u32 block size (4096)
 *                       u64 file size in bytes (multiple of 4096)
 *                       u64 salt (random, chosen at creation)
 *                       u32 crc32c of the 32 bytes above
 *                       zeros to 4096
 *   bytes 4096..size  records, each starting on a 4 KiB boundary:
 *                       u32 magic 0x474f4c43 ("CLOG")
 *                       u32 crc: crc32c over (salt, bytes 8..31 of this
 *                           header, payload), so stale or crafted bytes of
 *                           another ring never validate
 *                       u64 seq (1, 2, 3... never reused by one store)
 *                       u32 payload length in bytes
 *                       u32 reserved (0)
 *                       u64 reserved (0)
 *                       payload, then zero padding to the next 4 KiB
 *   A record never straddles the end: when one does not fit between the
 *   tail and the end, it is written at 4096 instead (the bytes skipped are
 *   garbage and never read).
 *
 * Replay (at open): the caller names the last seq its index holds and the
 * offset just past that record; records seq+1, seq+2... are read from
 * there (or from 4096 when the one expected is not at the tail, i.e. the
 * writer wrapped) until one is missing, torn (bad crc) or out of order.
 *
 * Trimming: the caller says when everything appended so far is durable
 * elsewhere (store_clog_trim_all); until then appends that would overwrite
 * a live record are refused (store_clog_fits is false).
 *
 * Thread: one user at a time (kv's commit thread, or its opener).
 * Does not: know what the payload is, or sync anything but its own file.
 */
#ifndef OSD_STORE_CLOG_H
#define OSD_STORE_CLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "osd/store/io.h"

#define STORE_CLOG_BLOCK 4096u
#define STORE_CLOG_HDR 32u
#define STORE_CLOG_MIN_BYTES (64u << 10)

struct store_clog;

/*
 * Open the ring at path; if missing, create it size_bytes large (rounded
 * down to 4 KiB, at least STORE_CLOG_MIN_BYTES): written with zeros,
 * synced, renamed into place, directory synced. An existing ring keeps
 * its own size. Every read, write and flush of the file goes through io
 * (NULL: the default), which must outlive the ring. Returns 0, -errno,
 * or IOL_ECORRUPT (bad header block), with a message in err.
 */
int store_clog_open(const struct store_io *io, const char *path, uint64_t size_bytes,
		    struct store_clog **out, char *err, size_t errlen);

/* Called by replay for each record in order; a non-zero return stops the
 * replay and is returned by it. end_off is the offset just past the
 * record (what the caller keeps to find the next one). */
typedef int (*store_clog_replay_fn)(void *arg, uint64_t seq, uint64_t end_off,
				    const void *payload, size_t len);

/*
 * Hand fn every valid record after (after_seq, after_off) in order (see
 * the top comment); after_off 0 means "from the start of the records".
 * Then the ring's tail is just past the last one handed over, the next
 * seq follows it, and the live region is empty (the caller made the
 * replayed records durable elsewhere before appending again; see
 * store_kv). Returns the number of records replayed, or fn's error, or
 * -errno from reading.
 */
int store_clog_replay(struct store_clog *c, uint64_t after_seq, uint64_t after_off,
		      store_clog_replay_fn fn, void *arg);

/* Bytes a payload of len takes in the ring. */
uint64_t store_clog_need(size_t len);

/* Would a record of len fit without overwriting a live record? A record
 * that is larger than the whole ring never fits. */
bool store_clog_fits(struct store_clog *c, size_t len);

/* Where the next record of len will land: its seq and the offset just past
 * it (what the caller stores in its index, to replay from later).
 * Requires store_clog_fits(c, len). */
void store_clog_next(struct store_clog *c, size_t len, uint64_t *seq, uint64_t *end_off);

/*
 * Write the next record (len as passed to store_clog_next) and fdatasync
 * the ring. 0 once it is durable, or -errno (the ring is then unusable:
 * callers stop writing). Requires store_clog_fits(c, len).
 */
int store_clog_append(struct store_clog *c, const void *payload, size_t len);

/* Everything appended so far is durable elsewhere: its space may be reused. */
void store_clog_trim_all(struct store_clog *c);

/* A position in the log (bytes consumed since open), and: everything
 * appended before that position is durable elsewhere. */
uint64_t store_clog_pos(const struct store_clog *c);
void store_clog_trim_to(struct store_clog *c, uint64_t pos);

/* Live bytes (appended, not trimmed, including skipped ends) and the size
 * of the record area. */
uint64_t store_clog_used(const struct store_clog *c);
uint64_t store_clog_capacity(const struct store_clog *c);

void store_clog_close(struct store_clog *c);

#endif
