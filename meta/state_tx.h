/*
 * state_tx.h — internal to meta/state*.c: the state's struct, one apply
 * in progress (struct tx) and the key and read/write helpers that
 * state.c defines and the other apply modules (state_ver.c) share. Not a
 * public header: nothing outside meta/state*.c includes it.
 */
#ifndef META_STATE_TX_H
#define META_STATE_TX_H

#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta/state.h"

#define BUCKET_MAX 63
#define KEYBUF (1 + BUCKET_MAX + 1 + META_KEY_MAX + 1 + 16 + 8)

/* A block cache several states share (the groups of one member). */
struct meta_state_cache {
	rocksdb_cache_t *cache;
};

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

/* Key building (state.c). */
void k_init(struct key *k, char table);
void k_str(struct key *k, const char *s);
void k_byte(struct key *k, char c);
void k_u64(struct key *k, uint64_t v);
void key_object(struct key *k, const char *bucket, const char *key);
bool valid_bucket(const char *b);
bool valid_key(const char *k);

/* Reads and writes through the batch being built (state.c). */
int tx_get(struct tx *t, const struct key *k, char **val, size_t *vlen);
int tx_get_msg(struct tx *t, const struct key *k, const ProtobufCMessageDescriptor *d,
	       void **out);
int tx_put_msg(struct tx *t, const struct key *k, const ProtobufCMessage *m);
void tx_del(struct tx *t, const struct key *k);
rocksdb_iterator_t *tx_iter(struct tx *t, const struct key *lo);
bool iter_has_prefix(rocksdb_iterator_t *it, const struct key *prefix);
rocksdb_readoptions_t *prefix_ro(const struct key *p, struct key *end);

/* Space: queue a record's shards for GC; add or drop its references. */
void gc_record(struct tx *t, const Iolake__Meta__ObjectRecord *r);
void ref_record(struct tx *t, const Iolake__Meta__ObjectRecord *r, uint64_t gen, bool add);

/* Key ranges: whether the op's range admits bucket/key; its counters. */
int range_check(struct tx *t, const char *bucket, const char *key);
void range_count(struct tx *t, int64_t objects, int64_t bytes, int64_t uploads);

#endif
