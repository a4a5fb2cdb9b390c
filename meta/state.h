/*
 * state.h — the meta service's replicated state machine on RocksDB.
 *
 * Owns one RocksDB directory holding buckets, object records, multipart
 * uploads and parts, users and access keys, the cluster map (OSDs, PG
 * table, epoch), the request table for exactly-once retries and the shard
 * GC queue and the shard reference index (what CheckShards answers);
 * in the root group's state, also the table of the other Raft groups
 * (CreateGroup / DeleteGroup; the member starts and stops them) and the
 * range table (which group holds which keys of a bucket); in a range
 * group's, the ranges it serves (open or sealed), which fence every
 * object op by the range id it carries (meta.proto RangeDesc).
 * The Raft layer hands each committed entry to
 * meta_state_apply(); everything else here reads.
 *
 * Threads: apply, import, install and close on one thread (the Raft
 * loop). Reads (get_*, list, iterators, digest, export, checkpoint) may
 * run on any thread concurrently with apply: every apply is one atomic
 * RocksDB write, so a reader sees the state before or after a whole
 * entry, never half (an install is many writes: see meta_state_install).
 * A reader that reads several rows and needs them from one state (a
 * direct read, meta/node_direct.c) brackets them with
 * meta_state_read_seq / meta_state_read_same: every write to the DB
 * (apply's batch, import, install) moves the state's write sequence.
 *
 * Memory: bounded by meta_state_opts (block cache, memtables), not by the
 * number of records; snapshots are checkpoints (files), never a buffer.
 *
 * Records returned by reads are protobuf-c messages unpacked with the
 * default allocator; the caller frees them with meta_state_free_msg().
 */
#ifndef META_STATE_H
#define META_STATE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto/meta_methods.h"
#include "proto/meta.pb-c.h"

#define META_BATCH_MAX_OPS 4096          /* ops in one entry */
#define META_ENTRY_MAX_BYTES (1u << 20)  /* one Raft entry, framing included */
#define META_KEY_MAX 1024                /* S3 object key bytes */
#define META_LIST_BUCKETS_MAX 10000
#define META_LIST_USERS_MAX 10000
#define META_PARTS_MAX 10000
#define META_CHECK_SHARDS_MAX 1000       /* object ids in one CheckShards */
#define META_REF_ID_LEN 16               /* a gw_data PUT's object id */
#define META_POLICY_MAX 20480           /* a bucket policy's bytes (S3: 20 KB) */
#define META_TAGS_MAX 50                 /* tags on a bucket (objects: 10, gateway) */
#define META_CORS_RULES_MAX 100          /* CORSRules of a bucket (S3's limit) */
#define META_ACL_GRANTS_MAX 100   /* grants in one ACL (S3: 100) */
#define META_TAG_KEY_MAX_BYTES 512       /* 128 characters of UTF-8 */
#define META_TAG_VALUE_MAX_BYTES 1024    /* 256 characters of UTF-8 */
#define META_GROUPS_MAX 1024             /* live Raft groups >= 1 in the root's table */
#define META_GROUP_VOTERS_MAX 9          /* voters of one group */

/* Errors besides common/err.h's: a bucket that is not empty, a request id
 * the request table no longer remembers, a part that is missing or whose
 * ETag differs. */
#define META_ENOTEMPTY (-ENOTEMPTY)
#define META_ESTALE (-ESTALE)
#define META_EINVALID_PART (-EBADE)
/* The op's key range is not open in this group, is sealed, or does not
 * cover its key (meta.proto RangeDesc): the sender re-reads the table. */
#define META_EWRONG_RANGE (-EXDEV)
/* Object lock (issue 17): the op would remove or replace a version under
 * retention or legal hold, or shorten a retention (STATUS_LOCKED). */
#define META_ELOCKED (-EACCES)
#define META_RANGES_MAX 10000            /* ranges in one GetRanges answer */

struct meta_state;

/* The answer to one op of a batch (the C form of proto OpResult). */
struct meta_op_result {
	int err;                 /* 0, IOL_E*, -EINVAL or a META_E* above */
	bool deduped;            /* answered from the request table, not applied */
	uint64_t generation;     /* put-object / complete: new generation */
	uint64_t epoch;          /* map ops: epoch after the op */
	char upload_id[17];      /* create-multipart: the new upload id */
	char etag[48];           /* complete-multipart: "<md5 hex>-<parts>" */
	bool groups;             /* create/delete-group: the table of groups changed */
	/* Versioning (meta/state_ver.c): the version written, made or
	 * deleted ("": the null version), whether it is a delete marker, and
	 * whether the version the op replaced or hid was kept (its shards
	 * are not the caller's to free). */
	char version_id[24];
	bool delete_marker;
	bool retained;
	bool part_rows_more;     /* FreePartRows: rows are left (state_prows.c) */
	bool bucket_changed;     /* PutObject: if_bucket_digest failed (state_obj.c) */
	bool replaced_shards;    /* PutObject: queued a replaced version's shards for GC */
};

#define META_STATE_CACHE_BYTES (256ull << 20)        /* default block + row cache */
/* The share of the cache bytes that caches rows (point reads' results,
 * RocksDB's row_cache) rather than blocks: a read of a table-resident
 * record then skips the filter, index and data block lookups. */
#define META_STATE_ROW_CACHE_DIV 8
#define META_STATE_WRITE_BUFFER_BYTES (64ull << 20)  /* default memtable */
#define META_STATE_BYTES_PER_SYNC (256u << 10)       /* tables' writeback step */

/* A RocksDB block cache and row cache shared by several states (a
 * member's groups), so that together they stay within one bound: bytes /
 * META_STATE_ROW_CACHE_DIV for rows, the rest for blocks. Free it after
 * every state that uses it is closed. */
struct meta_state_cache;
/* 0 and *out, or -ENOMEM. bytes 0: META_STATE_CACHE_BYTES. */
int meta_state_cache_new(uint64_t bytes, struct meta_state_cache **out);
void meta_state_cache_free(struct meta_state_cache *c);   /* NULL ok */
/* Bytes held in both caches now. Any thread. */
uint64_t meta_state_cache_usage(const struct meta_state_cache *c);

struct meta_state_opts {
	bool sync;               /* fsync each apply's write. Off by default:
	                          * the Raft log is the durable copy and replay
	                          * from it is idempotent (see apply). */
	uint64_t cache_bytes;    /* RocksDB block cache (data, index and filter
	                          * blocks) and row cache, split as in
	                          * meta_state_cache_new; 0: META_STATE_CACHE_BYTES */
	uint64_t write_buffer_bytes;  /* one memtable (at most two exist);
	                               * 0: META_STATE_WRITE_BUFFER_BYTES */
	struct meta_state_cache *cache;  /* shared caches (cache_bytes is then
	                                  * ignored); NULL: caches of its own */
	int max_open_files;      /* RocksDB's table files kept open; 0: 256 */
	uint64_t manifest_preallocation_bytes;  /* 0: RocksDB's (4 MiB, allocated on disk
	                                         * by each state even when empty) */
	uint32_t op_level;       /* highest op level applied; 0: META_OP_LEVEL
	                          * (another: tests, --debug-op-level) */
};

/* Open or create the state in dir (created if missing, parent must
 * exist). opts may be NULL. 0 and *out, or -errno / IOL_EBAD_FORMAT (a
 * newer format) / -EIO (RocksDB error, text on stderr). */
int meta_state_open(const char *dir, const struct meta_state_opts *opts, struct meta_state **out);
void meta_state_close(struct meta_state *s);

/* Bytes of the state's RocksDB memtables (active, waiting for flush,
 * pinned). Takes RocksDB's DB mutex. Any thread. */
uint64_t meta_state_memtable_bytes(struct meta_state *s);

/* Raft index of the last applied (or skipped-as-malformed) entry; 0 new. */
uint64_t meta_state_applied_index(const struct meta_state *s);

/* A seqlock over the DB's writes, for readers on other threads: the
 * write sequence now, odd while a write (an apply's batch, an import, an
 * install) is under way. A read that starts at an even seq and finds
 * meta_state_read_same(s, seq) true after its last row saw one state:
 * no write landed, or began, in between. Any thread. */
uint64_t meta_state_read_seq(const struct meta_state *s);
bool meta_state_read_same(const struct meta_state *s, uint64_t seq);

/* ------------------------------------------------------------ entries
 * A Raft entry: u32 magic "IOLM" (LE), u32 payload length, an OpBatch in
 * protobuf, zero padding to a multiple of 8 bytes (canonical/raft misreads
 * segments otherwise). */

/* Op levels, for meta members of different builds in one group (a
 * rolling upgrade). META_OP_LEVEL is the highest level this build
 * applies. The proposer records in each entry the highest level its ops
 * need (OpBatch.op_level = meta_state_batch_level); a member whose build
 * applies less refuses the entry: meta_state_apply answers
 * IOL_EBAD_FORMAT without applying it, and the group stops that member
 * (group_apply_entry), instead of letting it apply the entry otherwise
 * than the members that understand it (an unknown op refused, an unknown
 * field ignored: states that part).
 * Raise META_OP_LEVEL, and return the new level for that op in
 * meta_op_level, whenever apply starts to do what an older build would
 * not: a new op type, a new field apply reads, a changed effect. Level 1
 * is every op as of this build. */
#define META_OP_LEVEL 1u
uint32_t meta_op_level(const Iolake__Meta__Op *op);
uint32_t meta_state_batch_level(const Iolake__Meta__OpBatch *b);

/* Bytes meta_state_entry_encode will write for b. */
size_t meta_state_entry_size(const Iolake__Meta__OpBatch *b);

/* Frame b into buf (cap bytes; allocate with raft_malloc for raft_apply).
 * Returns bytes written (a multiple of 8), -ENOBUFS when cap is short,
 * IOL_ETOO_LARGE over META_ENTRY_MAX_BYTES or META_BATCH_MAX_OPS ops. */
long meta_state_entry_encode(const Iolake__Meta__OpBatch *b, uint8_t *buf, size_t cap);

/* The same two with b's packed size (iolake__meta__op_batch__get_packed_size)
 * computed once by the caller: each call above walks every op of b for it. */
size_t meta_state_entry_size_of(size_t payload);
long meta_state_entry_encode_sized(const Iolake__Meta__OpBatch *b, size_t payload, uint8_t *buf,
				   size_t cap);

/*
 * Apply the entry committed at raft_index. All its ops go into one RocksDB
 * write together with the new applied index; ops later in a batch see the
 * effects of earlier ones. Deterministic: the result depends only on the
 * state and the entry.
 *
 * res must hold at least as many results as the batch has ops
 * (META_BATCH_MAX_OPS always suffices). Returns:
 *   n >= 0   the number of ops; res[0..n) answer them in order (an op's
 *            failure is in res[i].err, not in the return value)
 *   0        also when raft_index <= applied index: the entry was applied
 *            before a restart and is skipped; res is untouched
 *   IOL_EPROTOCOL  the entry does not decode; the index is recorded as
 *            applied (every member skips it alike) and no op runs
 *   -ENOBUFS res_cap too small; nothing applied
 *   IOL_EBAD_FORMAT  the entry's op level is above this build's (op
 *            levels, above): nothing applied, the index not recorded; the
 *            member must stop applying until it runs a newer build
 *   -EIO     RocksDB failed: the member must stop applying (fatal)
 */
int meta_state_apply(struct meta_state *s, uint64_t raft_index, const uint8_t *entry,
		     size_t len, struct meta_op_result *res, size_t res_cap);

/* Object lock (meta/state_lock.c): whether record r (NULL: no) is held
 * against removal at now_ms — a legal hold, or a retention in force that
 * bypass (GOVERNANCE only) does not lift. Pure. */
bool meta_lock_held(const Iolake__Meta__ObjectRecord *r, bool bypass, uint64_t now_ms);
/* Since start: ops refused by the lock, and locked records that reached
 * the GC queue (must stay 0). Any thread. */
void meta_lock_stats(uint64_t *refused, uint64_t *gc_violations);

/* Map between C errors and the wire status. */
Iolake__Meta__Status meta_state_err_to_status(int err);
int meta_state_status_to_err(Iolake__Meta__Status st);

/* -------------------------------------------------------------- reads
 * Each returns 0 and a record the caller frees with meta_state_free_msg,
 * IOL_ENOT_FOUND, -EINVAL for a malformed name, IOL_ECORRUPT for a stored
 * value that does not decode, or -EIO. */

void meta_state_free_msg(void *msg);   /* any record below; NULL ok */

int meta_state_get_bucket(struct meta_state *s, const char *name, Iolake__Meta__Bucket **out);
/* Issue 19 (state_obj.c): the digest of a bucket's stored record (the
 * first 8 bytes of the SHA-256 of its bytes but the lifecycle cursor's,
 * Bucket.lc_cursor; never 0), as GetBucket answers it and
 * PutObject.if_bucket_digest is checked against: a lifecycle batch does
 * not make the gateways' cached copies stale. 0 and *digest,
 * IOL_ENOT_FOUND, -EINVAL or a storage error. */
int meta_state_get_bucket_digest(struct meta_state *s, const char *name, uint64_t *digest);
uint64_t meta_state_bucket_digest(const void *stored, size_t len);
/* Buckets in name order, of owner (NULL: all), at most
 * META_LIST_BUCKETS_MAX. *out is a malloc'd array; free each with
 * meta_state_free_msg and the array with free. */
int meta_state_list_buckets(struct meta_state *s, const char *owner, Iolake__Meta__Bucket ***out,
			    size_t *n);
/* The table of Raft groups (root group), live ones and tombstones, in id
 * order; freed like meta_state_list_buckets' array. At most
 * META_GROUPS_MAX live entries; tombstones are a few dozen bytes each. */
int meta_state_list_groups(struct meta_state *s, Iolake__Meta__GroupDesc ***out, size_t *n);
/* Users in name order, at most META_LIST_USERS_MAX; freed like
 * meta_state_list_buckets' array. */
int meta_state_list_users(struct meta_state *s, Iolake__Meta__User ***out, size_t *n);
int meta_state_head_object(struct meta_state *s, const char *bucket, const char *key,
			   Iolake__Meta__ObjectRecord **out);
int meta_state_get_upload(struct meta_state *s, const char *bucket, const char *key,
			  const char *upload_id, Iolake__Meta__MultipartUpload **out);
int meta_state_get_part(struct meta_state *s, const char *upload_id, uint32_t part_number,
			Iolake__Meta__Part **out);
/* An upload's parts in part-number order after marker, at most max (0 or
 * over META_PARTS_MAX: META_PARTS_MAX); *truncated when more follow.
 * Freed like meta_state_list_buckets' array. An unknown upload id gives
 * no parts (check the upload with meta_state_get_upload). */
int meta_state_list_parts(struct meta_state *s, const char *upload_id, uint32_t marker,
			  uint32_t max, Iolake__Meta__Part ***out, size_t *n, bool *truncated);
/* Part rows (meta/state_prows.c): an upload's with part_rows, or a
 * completed object's (ObjectRecord.part_rows), in part-number order after
 * marker; at most max (0: the cap) and, with layouts, about 4 MiB (at
 * least one row): the cap is 1000 rows with layouts, META_PARTS_MAX
 * without (no_layouts: each part's segment keeps its place but not its
 * layout, ~100 bytes a part). *truncated when more follow. Freed like
 * meta_state_list_buckets' array. No rows: 0 and none. */
int meta_state_list_part_rows(struct meta_state *s, const char *bucket, const char *key,
			      const char *upload_id, uint32_t marker, uint32_t max, bool no_layouts,
			      Iolake__Meta__Part ***out, size_t *n, bool *truncated);
int meta_state_get_part_row(struct meta_state *s, const char *bucket, const char *key,
			    const char *upload_id, uint32_t part_number, Iolake__Meta__Part **out);
int meta_state_get_user(struct meta_state *s, const char *name, Iolake__Meta__User **out);
/* The key holds the secret: never log it. */
int meta_state_get_access_key(struct meta_state *s, const char *access_key_id,
			      Iolake__Meta__AccessKey **out);
/* IOL_ENOT_FOUND before InitMap. */
int meta_state_get_map(struct meta_state *s, Iolake__Meta__ClusterMap **out);
/* Number of shard-GC entries pending (records replaced or deleted): a
 * counter kept by apply and import, no scan. Always 0. */
int meta_state_gc_count(struct meta_state *s, uint64_t *n);
/* A page of the shard-GC queue in key order ((generation, seq)
 * ascending), strictly after (after_gen, after_seq) — (0, 0): from the
 * start —, at most max entries (0 or over META_LIST_GC_MAX: that). One
 * seek and at most max + 1 steps: no scan of the queue before the cursor.
 * Each entry carries the replaced or deleted record (no inline data, no
 * user meta). *truncated when more follow. Freed like
 * meta_state_list_buckets' array. 0, IOL_ECORRUPT, -ENOMEM. */
int meta_state_list_gc(struct meta_state *s, uint64_t after_gen, uint32_t after_seq,
		       uint32_t max, Iolake__Meta__GcEntry ***out, size_t *n, bool *truncated);

/* The shard reference index ('X' in state.c): referenced[i] tells
 * whether any live object record or part names a layout with this pg and
 * ids[i] (META_REF_ID_LEN bytes each) — the shards under
 * (pg, ids[i] || be32(segment), *) belong to a live object. One iterator
 * seek per id. 0, -EINVAL (n over META_CHECK_SHARDS_MAX), -EIO. */
int meta_state_check_refs(struct meta_state *s, uint32_t pg, const uint8_t *const *ids,
			  size_t n, bool *referenced);
/* The pg and object id an encoded gw_data layout (layout.proto) names,
 * read without unpacking it. false: not decodable, or no 16-byte id. */
bool meta_layout_ref(const uint8_t *p, size_t n, uint32_t *pg, uint8_t id[META_REF_ID_LEN]);

/* ---------------------------------------------------------- key ranges
 * (meta.proto RangeDesc). Arrays are freed like meta_state_list_buckets'. */

/* Root: the range table rows of bucket (NULL: of every bucket) in (bucket,
 * start) order, at most META_RANGES_MAX. 0, IOL_ECORRUPT, -ENOMEM. */
int meta_state_list_ranges(struct meta_state *s, const char *bucket,
			   Iolake__Meta__RangeDesc ***out, size_t *n);
/* Range group: its open-range rows (open and sealed, with counters) in id
 * order, at most META_RANGES_MAX. */
int meta_state_list_open_ranges(struct meta_state *s, Iolake__Meta__RangeDesc ***out,
				size_t *n);
/* Range group: one open-range row. 0, IOL_ENOT_FOUND, IOL_ECORRUPT, -EIO. */
int meta_state_get_open_range(struct meta_state *s, uint64_t id, Iolake__Meta__RangeDesc **out);
/* Range group: the state pairs of the per-key tables (objects, uploads
 * with their parts; meta/state_range.c MOVE_TABLES) for [start, end) of
 * bucket after the state key `after` (empty: from the start), at most
 * max_records records and about max_bytes, when range range_id is sealed
 * here, or its change feed covers them, and spans them (else
 * META_EWRONG_RANGE): what a move copies
 * (meta.proto ReadRange). out is the caller's (meta_range_pairs_free). */
struct meta_range_pairs {
	ProtobufCBinaryData *keys, *values;
	size_t n, cap, bytes;
	uint32_t records;              /* primary records (parts ride along) */
	uint8_t *upto;                 /* the last primary key (the next `after`) */
	size_t upto_len;
	bool done;                     /* nothing left after upto */
};
int meta_state_read_range(struct meta_state *s, uint64_t range_id, const char *bucket,
			  const char *start, const char *end, const uint8_t *after, size_t after_len,
			  uint32_t max_records, uint32_t max_bytes, struct meta_range_pairs *out);
void meta_range_pairs_free(struct meta_range_pairs *p);
/* Range group: a catch-up batch of a split's change feed (meta.proto
 * ReadRange feed; meta/state_feed.c): the keys changed after change
 * `after` (each once, at most max_changes changes, about max_bytes of
 * rows) with their rows now, the last change taken (upto), the changes
 * after it (left) and whether the range was sealed (no change can follow).
 * When range range_id has its feed on over [start, end) (else
 * META_EWRONG_RANGE). out is the caller's (meta_feed_batch_free). */
struct meta_feed_batch {
	struct meta_range_pairs pairs;
	char **keys;
	size_t n_keys, cap_keys;
	uint64_t upto, left;
	bool sealed;
};
int meta_state_read_feed(struct meta_state *s, uint64_t range_id, const char *bucket,
			 const char *start, const char *end, uint64_t after, uint32_t max_changes,
			 uint32_t max_bytes, struct meta_feed_batch *out);
void meta_feed_batch_free(struct meta_feed_batch *b);
/* Range group: the median object key of range range_id (open or sealed)
 * into out (cap >= META_KEY_MAX + 1): a scan that stops at half its
 * object count; "" when under two objects. 0, META_EWRONG_RANGE (no such
 * range here), -EIO. */
int meta_state_range_split_key(struct meta_state *s, uint64_t range_id, char *out, size_t cap);
/* Root: whether bucket has range rows (its records live in range groups). */
bool meta_state_bucket_has_ranges(struct meta_state *s, const char *bucket);
/* Root: how many ranges group holds (0 when none). 0 or -EIO. */
int meta_state_group_ranges(struct meta_state *s, uint64_t group, uint64_t *n);

/* ------------------------------------------------- object iteration
 * A cursor over one bucket's object records in key byte order, on a
 * consistent view (later applies are not seen). For meta/list.c. */
struct meta_state_objiter;
int meta_state_objiter_new(struct meta_state *s, const char *bucket,
			   struct meta_state_objiter **out);
/* The same cursor over the bucket's multipart uploads: its keys are
 * "key 0x00 upload_id" (so (key, upload id) order), its values
 * MultipartUpload records (meta_state_objiter_upload). */
int meta_state_uploaditer_new(struct meta_state *s, const char *bucket,
			      struct meta_state_objiter **out);
/* Position on the first key >= key[0..len). */
void meta_state_objiter_seek(struct meta_state_objiter *it, const char *key, size_t len);
bool meta_state_objiter_valid(const struct meta_state_objiter *it);
/* The current key (not NUL-terminated); valid until the next move. */
const char *meta_state_objiter_key(const struct meta_state_objiter *it, size_t *len);
/* Whether the record under the cursor is a delete marker (versioning:
 * ListObjects skips the keys whose current version is one). */
bool meta_state_objiter_is_marker(const struct meta_state_objiter *it);
int meta_state_objiter_record(const struct meta_state_objiter *it,
			      Iolake__Meta__ObjectRecord **out);
/* The current upload of a meta_state_uploaditer_new cursor: 0, or
 * IOL_ECORRUPT. Free with meta_state_free_msg. */
int meta_state_objiter_upload(const struct meta_state_objiter *it,
			      Iolake__Meta__MultipartUpload **out);
void meta_state_objiter_next(struct meta_state_objiter *it);
/* 0, or -EIO when the iterator stopped on a storage error. */
int meta_state_objiter_error(const struct meta_state_objiter *it);
void meta_state_objiter_free(struct meta_state_objiter *it);

/* ------------------------------------------------ digest, snapshots */

/* SHA-256 over every key and value in key order (each as u32 length,
 * bytes), applied index included: equal on members that applied the same
 * entries. 0 or -EIO. */
int meta_state_digest(struct meta_state *s, uint8_t out[32]);

/*
 * Not used by meta/group.c (its snapshots are checkpoints:
 * meta_state_checkpoint / meta_state_install); kept for the unit tests,
 * which build states through it (test_refs: a state without the reference
 * index). Do not use it on a large state.
 *
 * Export the whole state as one buffer:
 * "IOLMSNP1", u64 pair count, pairs (u32 klen, u32 vlen, key, value),
 * then SHA-256 of all that. alloc is raft_malloc for Raft (malloc in
 * tests), release its inverse (used only on failure); the caller owns
 * *out. Limit: the whole state is in memory once
 * (and twice during import); fine for millions of records, not for
 * billions — a chunked or checkpoint-file snapshot is the next step.
 * 0, -ENOMEM, -EIO.
 */
int meta_state_export(struct meta_state *s, void *(*alloc)(size_t), void (*release)(void *),
		      uint8_t **out, size_t *len);

/* Replace the whole state with an export, atomically (one write deletes
 * every current key and puts every pair). 0, IOL_ECORRUPT (bad magic,
 * truncated, digest mismatch: state unchanged), -ENOMEM, -EIO. */
int meta_state_import(struct meta_state *s, const uint8_t *buf, size_t len);

/* A RocksDB checkpoint (hard links where possible) in dir_out, which must
 * not exist. Flushes the memtables first (applies skip RocksDB's WAL, so
 * only flushed data is in files). For snapshots (meta/snap.c), backups
 * and seeding a member; meta_state_open(dir_out) opens it. Any thread,
 * beside applies. 0 or -EIO. */
int meta_state_checkpoint(struct meta_state *s, const char *dir_out);

/* The applied index "A" stored in the checkpoint at dir (opened read-only;
 * 0 when it has none). 0, or -EIO (not a RocksDB directory, unreadable). */
int meta_state_checkpoint_applied(const char *dir, uint64_t *applied);

/*
 * Replace the whole state with the checkpoint at cp_dir (a directory made
 * by meta_state_checkpoint, here or on another member), in one ordered
 * pass over both without holding either in memory: every current key the
 * checkpoint lacks is deleted, every pair of the checkpoint put (where it
 * differs), in write batches of at most batch_bytes (0: 4 MiB).
 *
 * Crash safety: a durable "installing" marker (with tag, e.g. the
 * checkpoint's name) is written first (synced, through the WAL) and removed
 * last, after the batches were flushed to files; a crash in between
 * leaves the marker, which meta_state_install_pending reports, and the
 * caller redoes the install. Readers on other threads may see a mix until
 * it returns. Apply thread. 0, -EIO, -ENOMEM, IOL_ECORRUPT (the checkpoint
 * lacks "A").
 */
int meta_state_install(struct meta_state *s, const char *cp_dir, const char *tag,
		       size_t batch_bytes);

/* Whether an install was interrupted: 1 and its tag in tag[0..cap) (NUL
 * terminated, truncated to fit), 0 when none, -EIO. */
int meta_state_install_pending(struct meta_state *s, char *tag, size_t cap);

#endif
