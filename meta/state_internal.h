/*
 * state_internal.h — private to the state machine's files (meta/state.c,
 * meta/state_range.c, meta/state_move.c, meta/state_ver.c): the state, one apply in progress
 * (struct tx), the key builder and the helpers they share. Nothing outside
 * meta/state*.c includes it.
 */
#ifndef META_STATE_INTERNAL_H
#define META_STATE_INTERNAL_H

#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "meta/state.h"

#define BUCKET_MAX 63
#define KEYBUF (1 + BUCKET_MAX + 1 + META_KEY_MAX + 1 + 16 + 8)

struct meta_state {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_cache_t *cache;            /* the block cache, bounded (opts) */
	bool own_cache;                    /* else a meta_state_cache's: not destroyed */
	rocksdb_block_based_table_options_t *bbto;
	rocksdb_readoptions_t *ro;
	rocksdb_writeoptions_t *wo;
	uint64_t applied;          /* mirror of "A"; apply thread only */
	/* Entries under 'G': counted once at open and import, then moved by
	 * each apply after its write landed; read from any thread. */
	_Atomic uint64_t gc_entries;
};

/* One apply in progress. */
struct tx {
	struct meta_state *s;
	rocksdb_writebatch_wi_t *wb;
	uint64_t index;
	uint64_t gen;              /* generation of the op being applied */
	uint16_t gc_seq;           /* GC entries written by this op */
	uint64_t gc_added, gc_removed;   /* GC entries this entry put / deleted */
	int io_err;                /* sticky storage error: abort the batch */
	/* Per-entry memo, to spare the ops of one entry repeated reads and
	 * writes: the session of the last client seen (written once, by
	 * session_flush, when another client comes or the entry ends) and
	 * the last bucket found to exist (forgotten by DeleteBucket). */
	uint64_t sess_client;      /* 0: none */
	uint64_t sess_pruned;
	bool sess_dirty;
	char bucket_ok[BUCKET_MAX + 1];
	/* Key ranges: the op's range id, the last open-range row read (its
	 * counters written back once, by range_flush, when another range
	 * comes or the entry ends) and the last bucket found to have no
	 * range rows (a root op routed by range id 0). */
	uint64_t range_id;
	Iolake__Meta__RangeDesc *rng;
	bool rng_dirty;
	char bucket_noranges[BUCKET_MAX + 1];
	/* Versioning (Op fields 55-58): the bucket's state as the proposer
	 * read it, the version an op names ("": none), the proposer's time. */
	int versioning;            /* Iolake__Meta__VersioningState */
	const char *version_id;
	uint64_t time_ms;
};

struct key {
	char b[KEYBUF];
	size_t n;
};

/* ---- state.c: keys */
void put_be64(char *p, uint64_t v);
uint64_t get_be64(const char *p);
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

/* ---- state.c: reads and writes through the batch of an apply */
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

/* ---- state.c: reads of the committed state */
int db_get(struct meta_state *s, const struct key *k, char **v, size_t *n);
int read_msg(struct meta_state *s, const struct key *k, const ProtobufCMessageDescriptor *d,
	     void **out);
int list_prefix(struct meta_state *s, const char *pfx, size_t pn,
		const ProtobufCMessageDescriptor *desc,
		bool (*keep)(const ProtobufCMessage *m, const void *arg), const void *arg,
		size_t max, ProtobufCMessage ***out, size_t *n_out);

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
/* Whether a move of bucket's records is under way (root). */
bool bucket_moving(struct tx *t, const char *bucket);

#endif
