/*
 * scrub.h — the OSD's background scrubber: re-reads every shard of a store
 * at a bounded rate, through store_get (the read path GETs use, so every
 * crc block is verified), and records the shards that fail in the index.
 *
 * A pass walks the shard index in key order (pg, object id, shard index).
 * Its position is kept in the index under "\x01scrub" (rec.h's 0x01
 * singletons): a restart resumes after the last shard known done; a pass
 * that reached the end waits interval_ms (wall clock, so across restarts
 * too) before the next one starts from the first shard.
 *
 * A shard that fails (checksum mismatch, device read error, undecodable
 * index record) gets a bad-shard record (rec.h namespace 'B', value below)
 * unless it was rewritten or deleted under the read; a shard already
 * recorded is not recorded or reported again. The store deletes the record
 * in the batch of the shard's next put or delete (store.c), so the list is
 * what a repair still has to fix.
 *
 * Pacing: a token bucket of rate_bytes per second (each read costs its
 * length, at least 4 KiB, so empty shards are paced too); at most `lanes`
 * reads in flight; an extent shard is read chunk_bytes at a time, so
 * memory stays lanes x chunk_bytes whatever the shard size. A store that
 * is busy (-EAGAIN) is retried later, never queued on.
 *
 * Runs on the store's loop; every call here is made on that thread. Does
 * not log (the owner's on_bad hook does) or repair.
 */
#ifndef OSD_STORE_SCRUB_H
#define OSD_STORE_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "osd/store/rec.h"
#include "osd/store/store.h"

/* Why a shard was recorded bad. */
enum store_bad_kind {
	STORE_BAD_CHECKSUM = 1, /* stored bytes fail their crc32c */
	STORE_BAD_READ = 2,     /* the device returned an error */
	STORE_BAD_INDEX = 3,    /* the shard's index record is undecodable */
};

/*
 * A bad-shard record. On disk (value under the 'B' key), little-endian:
 *   [0]      u8  version (1)
 *   [1]      u8  kind (enum store_bad_kind)
 *   [2..7]   zero
 *   [8..15]  u64 when found, Unix seconds
 *   [16..23] u64 first bad byte (shard offset)
 *   [24..31] u64 last bad byte of that first bad range (inclusive)
 *   [32..39] u64 the shard's length when found
 */
#define STORE_BAD_VAL_LEN 40
struct store_bad {
	struct store_key key;
	uint8_t kind;
	uint64_t found_unix_s;
	uint64_t from, to;      /* first bad byte range, inclusive */
	uint64_t length;
};

struct store_scrub_opts {
	uint64_t rate_bytes;     /* bytes per second; > 0 (0 is "do not start") */
	uint64_t interval_ms;    /* from a pass's end to the next one's start */
	uint32_t lanes;          /* reads in flight at most; 0: 2; max 8 */
	uint32_t chunk_bytes;    /* read size for extent shards, rounded up to
	                          * 64 KiB; 0: 1 MiB */
	uint32_t persist_every;  /* shards between cursor saves; 0: 1024 */
	/* Clock for pacing and the interval, ms; NULL: loop_now_ms. */
	uint64_t (*now_ms)(void *arg);
	void *now_arg;
	/* A newly found bad shard (once per shard: not for one recorded
	 * already). May be NULL. Must not call back into the scrubber. */
	void (*on_bad)(void *arg, const struct store_bad *b);
	void *on_bad_arg;
};

struct store_scrub_stats {
	uint64_t bytes;          /* shard bytes read and verified */
	uint64_t shards;         /* shards finished (good, bad or skipped) */
	uint64_t reads;          /* store_get calls issued */
	uint64_t passes;         /* passes completed (persisted: all time) */
	uint64_t errors;         /* bad shards newly recorded */
	uint64_t skipped;        /* gone or rewritten under the scrub */
	uint32_t position_pg;    /* pg of the shard last handed out */
	uint32_t inflight;       /* reads and record commits in flight now */
	bool idle;               /* between passes */
	uint64_t last_pass_end_unix_s;  /* when the last pass ended (persisted); 0: never */
};

struct store_scrub;

/*
 * Start scrubbing s (open, on loop) per opts: loads the cursor and starts
 * on the next loop turn. Returns 0 with *out, -EINVAL (rate 0, lanes > 8),
 * -ENOMEM, -EIO (cursor unreadable) or a libuv error. s must outlive the
 * scrubber: stop it and wait for done_cb before store_close.
 */
int store_scrub_start(uv_loop_t *loop, struct store *s, const struct store_scrub_opts *opts,
		      struct store_scrub **out);

/* Run the pacer now (after the clock moved; tests drive a fake clock with
 * it). Never calls back synchronously. */
void store_scrub_kick(struct store_scrub *sc);

/* Stop: no new reads; reads and records in flight finish; the cursor is
 * saved; then sc is freed and done_cb(arg) runs on the loop (never inside
 * this call; may be NULL). Once only. */
void store_scrub_stop(struct store_scrub *sc, void (*done_cb)(void *arg), void *arg);

void store_scrub_stats(const struct store_scrub *sc, struct store_scrub_stats *out);

/*
 * Up to max bad-shard records of s in key order, starting after *after
 * (NULL: from the first). Returns the count and sets *more when more
 * follow; or -EIO. Needs no scrubber (records outlive it).
 */
int store_scrub_list_bad(struct store *s, const struct store_key *after, struct store_bad *out,
			 size_t max, bool *more);

/* "checksum", "read_error", "index" (or "unknown"). */
const char *store_bad_kind_name(uint8_t kind);

#endif
