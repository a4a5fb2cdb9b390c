/*
 * state_internal.h — private to the state machine's files (meta/state*.c,
 * listed at the top of meta/state.c): the state, one apply in progress
 * (struct tx), the key builder and the helpers they share. Nothing outside
 * meta/state*.c includes it.
 */
#ifndef META_STATE_INTERNAL_H
#define META_STATE_INTERNAL_H

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "meta/state.h"

#define BUCKET_MAX 63
#define NAME_MAX_BYTES 128        /* user names, access key ids, secrets */
#define SNAP_MAGIC "IOLMSNP1"     /* meta_state_export's header */
#define KEYBUF (1 + BUCKET_MAX + 1 + META_KEY_MAX + 1 + 16 + 8)
#define META_REQ_HW_SLOTS 64      /* clients whose request-table top is remembered */

/*
 * What apply remembers about a bucket from one op to the next, across
 * entries: three reads an object op would otherwise make once per entry
 * (an iterator's creation and seek over the batch, the memtables and
 * every table for the range rows, ~1 us per PUT at aio's 13 PUTs per
 * entry, and two gets). Each is a fact only other ops change:
 *   bucket_ok         the bucket's row exists ('B');
 *   bucket_noranges   the root holds no range rows for it ('Q');
 *   digest_bucket/ok  its row has digest digest_ok and neither it nor its
 *                     owner has a quota (state_obj.c, if_bucket_digest).
 * PutObject and DeleteObject write none of those rows: apply_body forgets
 * the first two before and after any other op, the digest before and
 * after any op but PutObject (as the per-entry memo did); an entry that
 * fails forgets all (they may come from reads of its unwritten batch),
 * and so do snapshot import and install (meta_state_apply_reset). Apply
 * thread only.
 */
struct apply_memo {
	char bucket_ok[BUCKET_MAX + 1];
	char bucket_noranges[BUCKET_MAX + 1];
	char digest_bucket[BUCKET_MAX + 1];
	uint64_t digest_ok;
};

/*
 * Bucket rows kept for meta_state_get_bucket (state_read.c): every GET's
 * HeadObject reads its bucket, and the row's skip-list search in a full
 * memtable was 9 % of aio's CPU per GET 4 KiB (issue 19). A slot holds one
 * row's bytes as read at bucket generation `gen`; it answers while
 * meta_state.bgen has not moved since, that is, while no write that may
 * have changed a 'B' row has landed. Such a write moves bgen inside its
 * write bracket (wseq odd), so a direct read overlapping it is declined by
 * meta_state_read_same, and one after it misses. Direct-mapped by name;
 * rows above BUCKET_SLOT_VAL_MAX (a large policy or lifecycle) are not
 * kept. Any thread: a mutex per slot.
 */
#define BUCKET_SLOTS 64
#define BUCKET_SLOT_VAL_MAX 8192

struct bucket_slot {
	pthread_mutex_t mu;
	uint64_t gen;
	char name[BUCKET_MAX + 1];
	uint8_t *val;              /* malloc'd; NULL: empty */
	size_t n;
};

struct meta_state {
	uint32_t op_level;                 /* highest op level applied (state.h) */
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_cache_t *cache;            /* the block cache, bounded (opts) */
	rocksdb_cache_t *rows;             /* the row cache: point reads' results */
	struct meta_state_cache *own_cache; /* made at open when opts gave none
	                                     * (cache and rows are its); NULL: the
	                                     * caller's, not freed here */
	rocksdb_block_based_table_options_t *bbto;
	rocksdb_readoptions_t *ro;
	rocksdb_writeoptions_t *wo;
	uint64_t applied;          /* mirror of "A"; apply thread only */
	uint32_t level_seen;       /* mirror of "L"; apply thread only */
	/* Entries under 'G': counted once at open and import, then moved by
	 * each apply after its write landed; read from any thread. */
	_Atomic uint64_t gc_entries;
	/* The request table's high-water marks (state.c, apply_op): per
	 * slot, a client and an id at or above every 'R' row of that client
	 * in the DB, so a newer id of it needs no read to know it is not a
	 * retry. Client 0: an empty slot. Apply thread only; emptied by
	 * meta_state_apply_reset wherever the DB is written other than by
	 * apply (snapshot import and install). */
	struct req_hw { uint64_t client, hw; } req_hw[META_REQ_HW_SLOTS];
	/* The write sequence (meta_state_read_seq): odd from wseq_enter to
	 * wseq_leave, around every write to the DB after open. Written by
	 * the writing thread, read from any. */
	_Atomic uint64_t wseq;
	/* The bucket generation (struct bucket_slot): moved, inside the
	 * write bracket, by apply's batches that put or delete a 'B' row
	 * (tx.bucket_written) and by import and install. */
	_Atomic uint64_t bgen;
	struct bucket_slot bslots[BUCKET_SLOTS];
	/* Apply's batch, cleared and used again by the next entry (state.c,
	 * apply_batch): its buffer keeps its capacity, so an entry's writes
	 * do not regrow it (a reallocation and copy per doubling, on fresh
	 * pages) as a batch made per entry did. Dropped after an entry that
	 * wrote more than APPLY_WB_KEEP bytes. Apply thread only; NULL until
	 * the first entry. */
	rocksdb_writebatch_wi_t *apply_wb;
	struct apply_memo memo;    /* see above; zero: nothing known */
};

/* Around every write to the DB (write_batch, import, install). */
void wseq_enter(struct meta_state *s);
void wseq_leave(struct meta_state *s);

/* Forget what apply remembers across entries, every request-table
 * high-water mark and the bucket memo (the DB was replaced under them). */
void meta_state_apply_reset(struct meta_state *s);

/* One apply in progress. */
struct tx {
	struct meta_state *s;
	rocksdb_writebatch_wi_t *wb;
	uint64_t index;
	uint64_t gen;              /* generation of the op being applied */
	uint16_t gc_seq;           /* GC entries written by this op */
	uint64_t gc_added, gc_removed;   /* GC entries this entry put / deleted */
	int io_err;                /* sticky storage error: abort the batch */
	bool bucket_written;       /* a 'B' row put or deleted (bgen moves) */
	/* Per-entry memo, to spare the ops of one entry repeated reads and
	 * writes: the session of the last client seen (written once, by
	 * session_flush, when another client comes or the entry ends) and
	 * (the bucket found to exist: struct apply_memo, across entries). */
	uint64_t sess_client;      /* 0: none */
	uint64_t sess_pruned;
	bool sess_dirty;
	/* Key ranges: the op's range id and the last open-range row read
	 * (its counters written back once, by range_flush, when another range
	 * comes or the entry ends); the bucket found to have no range rows:
	 * struct apply_memo. */
	uint64_t range_id;
	Iolake__Meta__RangeDesc *rng;
	bool rng_dirty;
	/* Versioning (Op fields 55-58): the bucket's state as the proposer
	 * read it, the version an op names ("": none), the proposer's time. */
	int versioning;            /* Iolake__Meta__VersioningState */
	const char *version_id;
	uint64_t time_ms;
	/* Quotas (state_quota.c): the bucket whose usage an object op's
	 * range_count moves (NULL: not an object op). */
	const char *quota_bucket;
	/* The root's usage row of the last bucket an op counted in ("":
	 * none), moved in memory and written back once, by quota_flush, when
	 * another bucket comes, the bucket is forgotten, or the entry ends
	 * (as the range row's counters: one read and one write per entry, not
	 * per op). */
	char usage_bucket[BUCKET_MAX + 1];
	uint64_t usage_objects, usage_bytes;
	bool usage_dirty;
	/* Object lock (Op field 70): GOVERNANCE retention does not hold
	 * against this op (meta/state_lock.c). */
	bool bypass;
};

struct key {
	char b[KEYBUF];
	size_t n;
};

/* ---- state_tx.c: keys and names */
void put_be64(char *p, uint64_t v);
uint64_t get_be64(const char *p);
void put_be32(char *p, uint32_t v);
uint32_t get_be32(const char *p);
void k_init(struct key *k, char table);
void k_str(struct key *k, const char *s);
void k_byte(struct key *k, char c);
void k_u64(struct key *k, uint64_t v);
void k_u32(struct key *k, uint32_t v);
void key_object(struct key *k, const char *bucket, const char *key);
void key_upload(struct key *k, const char *bucket, const char *key, const char *id);
void key_part(struct key *k, const char *upload_id, uint32_t part);
bool key_prefix_end(const struct key *p, struct key *end);
bool valid_bucket(const char *b);
bool valid_key(const char *k);
bool valid_name(const char *s);
bool valid_upload_id(const char *id);
void key_gc(struct key *k, uint64_t gen, uint16_t seq);

/* ---- state_tx.c: reads and writes through the batch of an apply (and
 * bucket_exists: state_bucket.c; gc_record: state_gc.c; ref_*:
 * state_ref.c) */
int tx_get(struct tx *t, const struct key *k, char **val, size_t *vlen);
bool tx_exists(struct tx *t, const struct key *k);
int tx_get_msg(struct tx *t, const struct key *k, const ProtobufCMessageDescriptor *d, void **out);
int tx_put_msg(struct tx *t, const struct key *k, const ProtobufCMessage *m);
void tx_del(struct tx *t, const struct key *k);
rocksdb_iterator_t *tx_iter(struct tx *t, const struct key *lo);
bool iter_has_prefix(rocksdb_iterator_t *it, const struct key *prefix);
rocksdb_readoptions_t *prefix_ro(const struct key *p, struct key *end);
bool prefix_nonempty(struct tx *t, const struct key *prefix);
bool bucket_exists(struct tx *t, const char *bucket);
/* Space: queue a record's shards for GC. */
void gc_record(struct tx *t, const Iolake__Meta__ObjectRecord *r);
/* The shard reference index ('X'): add or drop a record's / part's. */
void ref_record(struct tx *t, const Iolake__Meta__ObjectRecord *r, uint64_t gen, bool add);
void ref_part(struct tx *t, const Iolake__Meta__Part *p, bool add);

/* ---- state.c: reads of the committed state, and one write of a batch
 * (0 or -EIO) */
/* One write of wb to the DB, in the write bracket; buckets: it may change
 * a 'B' row (the bucket generation moves). */
int write_batch(struct meta_state *s, rocksdb_writebatch_wi_t *wb, bool buckets);
/* Move the bucket generation: inside the write bracket, with or before
 * the write that may change a 'B' row. */
void bucket_gen_move(struct meta_state *s);
/* The bucket slots: set up at open, emptied and torn down at close. */
void bucket_slots_init(struct meta_state *s);
void bucket_slots_fini(struct meta_state *s);
int db_get(struct meta_state *s, const struct key *k, char **v, size_t *n);
int read_msg(struct meta_state *s, const struct key *k, const ProtobufCMessageDescriptor *d,
	     void **out);
int list_prefix(struct meta_state *s, const char *pfx, size_t pn,
		const ProtobufCMessageDescriptor *desc,
		bool (*keep)(const ProtobufCMessage *m, const void *arg), const void *arg,
		size_t max, ProtobufCMessage ***out, size_t *n_out);
/* state_read.c: a growing array of messages, and its release. */
int push_msg(ProtobufCMessage ***v, size_t *n, size_t *cap, ProtobufCMessage *m);
void free_msgs(ProtobufCMessage **v, size_t n);

/* ---- state_range.c: key ranges in apply */
void key_open_range(struct key *k, uint64_t id);
bool valid_range_bounds(const char *bucket, const char *start, const char *end);
/* The open-range row id through the apply's memo (struct tx rng); NULL:
 * absent. */
Iolake__Meta__RangeDesc *range_load(struct tx *t, uint64_t id);
int create_bucket_range(struct tx *t, const char *bucket);
void delete_bucket_ranges(struct tx *t, const char *bucket);
/* Whether the op's range admits bucket/key, and the range's counters. */
int range_check(struct tx *t, const char *bucket, const char *key);
void range_count(struct tx *t, int64_t objects, int64_t bytes, int64_t uploads);
void range_flush(struct tx *t);
bool group_holds_ranges(struct tx *t, uint64_t group);
int op_open_range(struct tx *t, const Iolake__Meta__OpenRange *op);
int op_seal_range(struct tx *t, const Iolake__Meta__SealRange *op);
int op_split_range(struct tx *t, const Iolake__Meta__SplitRange *op);
int op_move_range(struct tx *t, const Iolake__Meta__MoveRange *op, struct meta_op_result *r);
int op_move_range_step(struct tx *t, const Iolake__Meta__MoveRangeStep *op);
int op_ingest_range(struct tx *t, const Iolake__Meta__IngestRange *op);
int op_drop_range(struct tx *t, const Iolake__Meta__DropRange *op, struct meta_op_result *r);
/* state_move.c, shared with state_feed.c: the s3 key length of a per-key
 * table's state key (prefix length pn); whether s3 key s[0..n) is below
 * end; the state pairs of [start, end) appended to out (after a state key;
 * at most max_records records, about max_bytes); what a moved pair brings
 * along (references; counters of r when not NULL) where it lands (add) or
 * leaves; an IngestRange's pairs well-formed and within its range; its
 * pairs written into range r (fed or feed: replacing what is there); up to max records
 * of [start, end) deleted with their parts and effects (counted in r when
 * not NULL). */
size_t move_s3key_len(const char *kb, size_t kn, size_t pn);
bool move_below_end(const char *s, size_t n, const char *end);
int move_span_pairs(struct meta_state *s, const char *bucket, const char *start, const char *end,
		    const uint8_t *after, size_t after_len, uint32_t max_records,
		    uint32_t max_bytes, struct meta_range_pairs *out);
int move_pair_effects(struct tx *t, const char *kb, const char *vb, size_t vn, bool add,
		      Iolake__Meta__RangeDesc *r);
bool move_pairs_ok(const Iolake__Meta__IngestRange *op);
int move_put_pairs(struct tx *t, const Iolake__Meta__IngestRange *op, Iolake__Meta__RangeDesc *r);
int move_drop_span(struct tx *t, const char *bucket, const char *start, const char *end,
		   uint32_t max, Iolake__Meta__RangeDesc *r, uint32_t *dropped);
/* state_feed.c: a split's change feed. feed_note (from range_check): an
 * op on key of range r, noted when r's feed covers it; a catch-up batch
 * into range r (IngestRange.feed); DropRange's removal of the changes of
 * this group's move sources whose feed started at start (up to max, *n
 * removed). */
void feed_note(struct tx *t, Iolake__Meta__RangeDesc *r, const char *key);
int op_feed_range(struct tx *t, const Iolake__Meta__FeedRange *op);
int feed_ingest(struct tx *t, Iolake__Meta__RangeDesc *r, const Iolake__Meta__IngestRange *op);
int feed_drop(struct tx *t, const char *bucket, const char *start, uint32_t max, uint32_t *n);
/* Whether a move of bucket's records is under way (root). */
bool bucket_moving(struct tx *t, const char *bucket);

/* ---- state_bucket.c: bucket ops */
/* Change bucket name's record in place: read it, let edit change b (it
 * may point b's fields at memory the op owns; the record is put back as
 * read before it is freed), write it unless edit returned non-zero. 0,
 * edit's error, IOL_ENOT_FOUND (no such bucket), -EINVAL (the edited
 * record would not unpack again: nothing written) or a storage error. */
typedef int (*bucket_edit_fn)(struct tx *t, Iolake__Meta__Bucket *b, const void *op);
int bucket_config_update(struct tx *t, const char *name, bucket_edit_fn edit, const void *op);
bool valid_acl(const Iolake__Meta__Acl *a);
int op_create_bucket(struct tx *t, const Iolake__Meta__CreateBucket *op);
int op_delete_bucket(struct tx *t, const Iolake__Meta__DeleteBucket *op);
int op_set_bucket_access(struct tx *t, const Iolake__Meta__SetBucketAccess *op);
int op_set_bucket_tags(struct tx *t, const Iolake__Meta__SetBucketTags *op);
int op_set_bucket_cors(struct tx *t, const Iolake__Meta__SetBucketCors *op);

/* ---- state_sse.c: a bucket's default encryption (issue 18) */
int op_set_bucket_encryption(struct tx *t, const Iolake__Meta__SetBucketEncryption *op);

/* ---- state_obj.c: object ops, tags, ACLs */
/* The current record of key k for a conditional write: 0 (with *cur
 * possibly NULL), IOL_ECONFLICT or a storage error. */
int check_condition(struct tx *t, const struct key *k, bool if_none_match,
		    uint64_t if_generation, Iolake__Meta__ObjectRecord **cur);
int op_put_object(struct tx *t, Iolake__Meta__PutObject *op, struct meta_op_result *r);
int op_delete_object(struct tx *t, const Iolake__Meta__DeleteObject *op, struct meta_op_result *r);
bool valid_tags(size_t n, const char *const *keys, const char *const *vals);
int op_set_object_tags(struct tx *t, const Iolake__Meta__SetObjectTags *op);
int op_set_object_acl(struct tx *t, const Iolake__Meta__SetObjectAcl *op);

/* Gather a map's keys and values (both entry types have key, value). */
#define TAGS_SPLIT(n, entries, keys, vals)              \
	do {                                            \
		for (size_t i_ = 0; i_ < (n); i_++) {   \
			(keys)[i_] = (entries)[i_]->key; \
			(vals)[i_] = (entries)[i_]->value; \
		}                                       \
	} while (0)

/* ---- state_mpu.c: multipart uploads */
int op_create_multipart(struct tx *t, Iolake__Meta__CreateMultipart *op, struct meta_op_result *r);
int op_put_part(struct tx *t, const Iolake__Meta__PutPart *op);
int op_complete_multipart(struct tx *t, const Iolake__Meta__CompleteMultipart *op, struct meta_op_result *r);
int op_abort_multipart(struct tx *t, const Iolake__Meta__AbortMultipart *op);

/* ---- state_user.c: users, keys, grants */
int op_put_user(struct tx *t, const Iolake__Meta__PutUser *op);
int op_delete_user(struct tx *t, const Iolake__Meta__DeleteUser *op, struct meta_op_result *r);
int op_put_access_key(struct tx *t, const Iolake__Meta__PutAccessKey *op,
		      struct meta_op_result *r);
int op_delete_access_key(struct tx *t, const Iolake__Meta__DeleteAccessKey *op, struct meta_op_result *r);
int op_set_user_grant(struct tx *t, const Iolake__Meta__SetUserGrant *op, struct meta_op_result *r);
int op_set_user_admin(struct tx *t, const Iolake__Meta__SetUserAdmin *op, struct meta_op_result *r);
int op_reseal_access_key(struct tx *t, const Iolake__Meta__ResealAccessKey *op, struct meta_op_result *r);

/* ---- state_map.c: the cluster map, OSDs, Raft groups */
int get_map(struct tx *t, Iolake__Meta__ClusterMap **m);
int creds_changed(struct tx *t, struct meta_op_result *r);
int op_init_map(struct tx *t, const Iolake__Meta__InitMap *op, struct meta_op_result *r);
int op_register_osd(struct tx *t, const Iolake__Meta__RegisterOsd *op, struct meta_op_result *r);
int op_remove_osd(struct tx *t, const Iolake__Meta__RemoveOsd *op, struct meta_op_result *r);
int op_set_expect_osds(struct tx *t, const Iolake__Meta__SetExpectOsds *op,
		       struct meta_op_result *r);
int op_set_osd_state(struct tx *t, const Iolake__Meta__SetOsdState *op, struct meta_op_result *r);
int op_create_group(struct tx *t, const Iolake__Meta__CreateGroup *op, struct meta_op_result *r);
int op_delete_group(struct tx *t, const Iolake__Meta__DeleteGroup *op, struct meta_op_result *r);
/* ---- state_members.c: the members each group must have (issue 13) */
int op_set_group_members(struct tx *t, const Iolake__Meta__SetGroupMembers *op,
			 struct meta_op_result *r);
int op_group_reconciled(struct tx *t, const Iolake__Meta__GroupReconciled *op,
			struct meta_op_result *r);

/* ---- state_gc.c: the shard GC queue */
void gc_part(struct tx *t, const char *bucket, const char *key, const Iolake__Meta__Part *p);
int op_gc_ack(struct tx *t, const Iolake__Meta__GcAck *op);
uint64_t gc_scan(struct meta_state *s);

/* ---- state_ref.c: the reference index */
int ref_build(struct meta_state *s);

/* ---- state_lc.c: bucket lifecycle (issue 17), root group */
int meta_lc_set(struct tx *t, const Iolake__Meta__SetBucketLifecycle *op);
int meta_lc_advance(struct tx *t, const Iolake__Meta__LifecycleAdvance *op);
/* ---- state_quota.c: quotas (issue 20) */
/* Move the root's usage row of bucket (a root op's range_count), in
 * t's memo (usage_bucket) until quota_flush. */
void quota_count(struct tx *t, const char *bucket, int64_t objects, int64_t bytes);
/* Write the memo's usage row back to the batch if it moved; apply calls
 * it when the entry ends, before "A". */
void quota_flush(struct tx *t);
/* Drop bucket's usage row (DeleteBucket), and the memo's if it is that. */
void quota_forget(struct tx *t, const char *bucket);
int op_set_quota(struct tx *t, const Iolake__Meta__SetQuota *op);
/* The bucket an object op counts in (NULL: none). */
const char *quota_op_bucket(const Iolake__Meta__Op *op);
/* ---- state_lock.c: object lock (issue 17) */
/* THE check: 0, or META_ELOCKED when version v is held (legal hold, or a
 * retention in force at t->time_ms that t->bypass does not lift). Every
 * path that removes a version or frees its data calls it before writing
 * anything. */
int lock_check(struct tx *t, const Iolake__Meta__ObjectRecord *v);
/* gc_record's last line: true (and counted, logged) when r is still held,
 * i.e. some path freed it without lock_check; its shards are not queued. */
bool lock_gc_refuse(struct tx *t, const Iolake__Meta__ObjectRecord *r);
/* A record's lock fields as apply accepts them (a known mode with a date,
 * or neither). */
bool lock_valid_record(const Iolake__Meta__ObjectRecord *r);
/* A bucket's lock configuration (NULL ok) under its versioning state. */
bool lock_valid_config(const Iolake__Meta__ObjectLockConfig *c, int versioning);
bool lock_bucket_enabled(const Iolake__Meta__Bucket *b);
int op_set_object_lock_config(struct tx *t, const Iolake__Meta__SetObjectLockConfig *op);
int op_set_object_retention(struct tx *t, const Iolake__Meta__SetObjectRetention *op);
int op_set_object_legal_hold(struct tx *t, const Iolake__Meta__SetObjectLegalHold *op);
/* ---- state_prows.c: multipart part rows ('p' bucket 0 key 0 be64(upload
 * generation) be32(part)) of uploads with MultipartUpload.part_rows */
/* false: a name or upload id that makes no key */
bool key_part_rows(struct key *k, const char *bucket, const char *key, const char *upload_id);
bool key_part_row(struct key *k, const char *bucket, const char *key, const char *upload_id,
		  uint32_t part);
/* The key of part `part` of upload u ('p' when u->part_rows, else 'P'),
 * and the prefix of all its parts. */
void mpu_part_key(struct key *k, const Iolake__Meta__MultipartUpload *u, const char *bucket,
		  const char *key, const char *upload_id, uint32_t part);
void mpu_parts_prefix(struct key *k, const Iolake__Meta__MultipartUpload *u, const char *bucket,
		      const char *key, const char *upload_id);
int op_free_part_rows(struct tx *t, const Iolake__Meta__FreePartRows *op,
		      struct meta_op_result *r);

/* state_map.c: the root's row of a Raft group ('g' + id), and a member
 * address check ("host:port", non-empty host, port 1..65535, < 64 bytes);
 * shared with state_members.c. */
void state_key_group(struct key *k, uint64_t id);
bool state_valid_member_addr(const char *a);

/* Whether this build takes a state (its own at open, a checkpoint to
 * install, an export to import) whose "F" record is f (fn bytes; NULL:
 * absent) and "L" record is l (ln bytes; NULL: absent, level 0). 0 and
 * *level, or IOL_EBAD_FORMAT (a newer format or op level: a newer build's
 * state) or IOL_ECORRUPT (records of the wrong size), with a line on
 * stderr naming WHAT. */
int state_source_ok(const struct meta_state *s, const char *what, const char *f, size_t fn,
		    const char *l, size_t ln, uint32_t *level);

#endif
