/*
 * state.c — the meta state machine over RocksDB (contracts in state.h).
 *
 * Key layout (one column family; the first byte names the table; all
 * integers big-endian so byte order is numeric order):
 *
 *   "A"                                   u64 applied raft index
 *   "F"                                   u32 format version (1)
 *   "L"                                   u32 the highest op level an
 *                                         applied entry needed (absent: 0;
 *                                         written when it rises, with "A")
 *   'B' bucket                            Bucket
 *   'O' bucket 0x00 key                   ObjectRecord (the current version)
 *   'V' bucket 0x00 key 0x00 be64(~order) ObjectRecord: an older version
 *                                         (state_ver.c, docs/architecture.md
 *                                         "Versioning")
 *   'U' bucket 0x00 key 0x00 upload_id    MultipartUpload
 *   'P' upload_id(16 hex) u32 part        Part (uploads without part_rows)
 *   'p' bucket 0x00 key 0x00 be64(upload  Part: a part row of an upload with
 *       generation) u32 part              part_rows, kept by the object
 *                                         Complete makes (state_prows.c)
 *   'u' user name                         User
 *   'K' access key id                     AccessKey
 *   "M"                                   ClusterMap (OSDs, PG table, epoch)
 *   'R' u64 client u64 request            OpResult (request table)
 *   'C' u64 client                        ClientSession
 *   'G' u64 generation u16 seq            ObjectRecord without inline data:
 *                                         shards to free (GC queue)
 *   'g' u64 group id                      GroupDesc (root group: the table
 *                                         of Raft groups >= 1, tombstones
 *                                         of deleted ones included)
 *   'Q' bucket 0x00 start                 RangeDesc (root: the range table)
 *   'q' u64 group                         u64 ranges the group holds (root)
 *   'r' u64 range id                      RangeDesc (range group: an open
 *                                         or sealed range, its counters)
 *   'N' bucket                            Usage (root: objects, bytes of a
 *                                         bucket without ranges; quotas,
 *                                         state_quota.c)
 *   'X' u32 pg, 16-byte object id,        "": the record or part of that
 *       u64 generation                    generation names that gw_data
 *                                         PUT's shards (reference index)
 *   "X"                                   u64 the applied index the
 *                                         reference index is current at
 *                                         (written with "A"; else rebuilt)
 *
 * Bucket names never contain 0x00 and keys are checked for it, so 'O'
 * keys sort by bucket, then key bytes: an S3 listing is one range scan.
 *
 * Invariants: (1) one apply = one atomic RocksDB write that includes "A",
 * so the applied index and the data it covers never diverge; an entry at
 * or below "A" is skipped. (2) apply reads no clock and no randomness;
 * generations are (raft index << 16) | position in the batch, upload ids
 * the hex of that, PG tables come from common/place.c (integer only).
 * (3) ops read through the batch being built (a WriteBatchWithIndex), so a
 * batch behaves as its ops applied one after another.
 *
 * The state machine's files, by table (each op in the file of its
 * table; all share struct tx and the key helpers in state_internal.h):
 *   state.c         the op dispatch (apply_body), the request table, entry
 *                   framing, apply, open/close
 *   state_tx.c      keys and names, the error <-> status mapping,
 *                   reads/writes through an apply's batch
 *   state_bucket.c  'B': CreateBucket, DeleteBucket, access, tags, CORS
 *   state_obj.c     'O': PutObject, DeleteObject, object tags and ACLs
 *   state_ver.c     'V': versions, delete markers, SetBucketVersioning
 *   state_lock.c    object lock: the one check before a version is freed,
 *                   retention, legal hold, the bucket's lock configuration
 *   state_mpu.c     'U' 'P': multipart uploads and parts
 *   state_prows.c   'p': part rows (parts of a 5 TiB object), FreePartRows
 *   state_user.c    'u' 'K': users, access keys, grants
 *   state_map.c     "M" 'g': the cluster map, OSDs, Raft groups
 *   state_members.c 'g': the members each range group must have (issue 13)
 *   state_range.c   'Q' 'q' 'r': key ranges; state_move.c: moving them
 *   state_gc.c      'G': the shard GC queue
 *   state_ref.c     'X': the shard reference index
 *   state_read.c    reads of the committed state, the object iterator
 *   state_snap.c    digest, export/import, checkpoints and install
 *
 * Not here: Raft, RPC, heartbeat timers (the leader turns missed beats
 * into SetOsdState ops), linearizable-read barriers, listing of objects
 * and of uploads (list.c, over state_read.c's iterators).
 */
#include "meta/state.h"
#include "meta/secret.h"
#include "meta/state_internal.h"
#include "meta/state_ver.h"

#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/place.h"

#define FORMAT_VERSION 1u
#define ENTRY_MAGIC 0x4d4c4f49u   /* "IOLM" little-endian */

/* A block cache several states share (the groups of one member). */
struct meta_state_cache {
	rocksdb_cache_t *cache;   /* blocks */
	rocksdb_cache_t *rows;    /* point reads' results */
};

/* struct meta_state, struct tx, struct key: meta/state_internal.h */

/* --------------------------------------------------------- op dispatch */

static int apply_body_op(struct tx *t, Iolake__Meta__Op *op, struct meta_op_result *r)
{
	switch (op->body_case) {
	case IOLAKE__META__OP__BODY_CREATE_BUCKET: return op_create_bucket(t, op->create_bucket);
	case IOLAKE__META__OP__BODY_DELETE_BUCKET: return op_delete_bucket(t, op->delete_bucket);
	case IOLAKE__META__OP__BODY_PUT_OBJECT: return op_put_object(t, op->put_object, r);
	case IOLAKE__META__OP__BODY_DELETE_OBJECT: return op_delete_object(t, op->delete_object, r);
	case IOLAKE__META__OP__BODY_CREATE_MULTIPART:
		return op_create_multipart(t, op->create_multipart, r);
	case IOLAKE__META__OP__BODY_PUT_PART: return op_put_part(t, op->put_part);
	case IOLAKE__META__OP__BODY_COMPLETE_MULTIPART:
		return op_complete_multipart(t, op->complete_multipart, r);
	case IOLAKE__META__OP__BODY_ABORT_MULTIPART:
		return op_abort_multipart(t, op->abort_multipart);
	case IOLAKE__META__OP__BODY_PUT_USER: return op_put_user(t, op->put_user);
	case IOLAKE__META__OP__BODY_DELETE_USER: return op_delete_user(t, op->delete_user, r);
	case IOLAKE__META__OP__BODY_PUT_ACCESS_KEY:
		return op_put_access_key(t, op->put_access_key, r);
	case IOLAKE__META__OP__BODY_DELETE_ACCESS_KEY:
		return op_delete_access_key(t, op->delete_access_key, r);
	case IOLAKE__META__OP__BODY_SET_USER_GRANT:
		return op_set_user_grant(t, op->set_user_grant, r);
	case IOLAKE__META__OP__BODY_SET_USER_ADMIN:
		return op_set_user_admin(t, op->set_user_admin, r);
	case IOLAKE__META__OP__BODY_RESEAL_ACCESS_KEY:
		return op_reseal_access_key(t, op->reseal_access_key, r);
	case IOLAKE__META__OP__BODY_INIT_MAP: return op_init_map(t, op->init_map, r);
	case IOLAKE__META__OP__BODY_REGISTER_OSD: return op_register_osd(t, op->register_osd, r);
	case IOLAKE__META__OP__BODY_SET_OSD_STATE:
		return op_set_osd_state(t, op->set_osd_state, r);
	case IOLAKE__META__OP__BODY_REMOVE_OSD: return op_remove_osd(t, op->remove_osd, r);
	case IOLAKE__META__OP__BODY_SET_EXPECT_OSDS:
		return op_set_expect_osds(t, op->set_expect_osds, r);
	case IOLAKE__META__OP__BODY_GC_ACK: return op_gc_ack(t, op->gc_ack);
	case IOLAKE__META__OP__BODY_PUT_OBJECT_TAGS:
		return op_set_object_tags(t, op->put_object_tags);
	case IOLAKE__META__OP__BODY_PUT_BUCKET_TAGS:
		return op_set_bucket_tags(t, op->put_bucket_tags);
	case IOLAKE__META__OP__BODY_SET_BUCKET_CORS:
		return op_set_bucket_cors(t, op->set_bucket_cors);
	case IOLAKE__META__OP__BODY_SET_OBJECT_LOCK_CONFIG:   /* object lock: state_lock.c */
		return op_set_object_lock_config(t, op->set_object_lock_config);
	case IOLAKE__META__OP__BODY_SET_OBJECT_RETENTION:
		return op_set_object_retention(t, op->set_object_retention);
	case IOLAKE__META__OP__BODY_SET_OBJECT_LEGAL_HOLD:
		return op_set_object_legal_hold(t, op->set_object_legal_hold);
	case IOLAKE__META__OP__BODY_SET_BUCKET_ENCRYPTION:
		return op_set_bucket_encryption(t, op->set_bucket_encryption);
	case IOLAKE__META__OP__BODY_SET_BUCKET_VERSIONING:
		return meta_ver_set_bucket(t, op->set_bucket_versioning);
	case IOLAKE__META__OP__BODY_SET_BUCKET_LIFECYCLE:
		return meta_lc_set(t, op->set_bucket_lifecycle);
	case IOLAKE__META__OP__BODY_LIFECYCLE_ADVANCE:
		return meta_lc_advance(t, op->lifecycle_advance);
	case IOLAKE__META__OP__BODY_SET_QUOTA: return op_set_quota(t, op->set_quota);
	case IOLAKE__META__OP__BODY_FREE_PART_ROWS:   /* issue 18: state_prows.c */
		return op_free_part_rows(t, op->free_part_rows, r);
	case IOLAKE__META__OP__BODY_CREATE_GROUP: return op_create_group(t, op->create_group, r);
	case IOLAKE__META__OP__BODY_DELETE_GROUP:
		if (group_holds_ranges(t, op->delete_group->id))
			return IOL_ECONFLICT;   /* its ranges would lose their records */
		return op_delete_group(t, op->delete_group, r);
	case IOLAKE__META__OP__BODY_SET_GROUP_MEMBERS:   /* issue 13: state_members.c */
		return op_set_group_members(t, op->set_group_members, r);
	case IOLAKE__META__OP__BODY_GROUP_RECONCILED:
		return op_group_reconciled(t, op->group_reconciled, r);
	case IOLAKE__META__OP__BODY_SET_OBJECT_ACL:
		return op_set_object_acl(t, op->set_object_acl);
	case IOLAKE__META__OP__BODY_SET_BUCKET_ACCESS:
		return op_set_bucket_access(t, op->set_bucket_access);
	case IOLAKE__META__OP__BODY_OPEN_RANGE: return op_open_range(t, op->open_range);
	case IOLAKE__META__OP__BODY_SEAL_RANGE: return op_seal_range(t, op->seal_range);
	case IOLAKE__META__OP__BODY_SPLIT_RANGE: return op_split_range(t, op->split_range);
	case IOLAKE__META__OP__BODY_MOVE_RANGE: return op_move_range(t, op->move_range, r);
	case IOLAKE__META__OP__BODY_MOVE_RANGE_STEP:
		return op_move_range_step(t, op->move_range_step);
	case IOLAKE__META__OP__BODY_INGEST_RANGE: return op_ingest_range(t, op->ingest_range);
	case IOLAKE__META__OP__BODY_DROP_RANGE: return op_drop_range(t, op->drop_range, r);
	case IOLAKE__META__OP__BODY_FEED_RANGE: return op_feed_range(t, op->feed_range);
	default: return -EINVAL;
	}
}

/* Forget what the memo knows that op may change (struct apply_memo):
 * the bucket's row and range rows for any op but an object's PUT or
 * DELETE, the digest for any op but a PUT. */
static void memo_forget(struct apply_memo *m, const Iolake__Meta__Op *op)
{
	bool put = op->body_case == IOLAKE__META__OP__BODY_PUT_OBJECT;
	if (!put)
		m->digest_ok = 0;
	if (!put && op->body_case != IOLAKE__META__OP__BODY_DELETE_OBJECT) {
		m->bucket_ok[0] = 0;
		m->bucket_noranges[0] = 0;
	}
}

static int apply_body(struct tx *t, Iolake__Meta__Op *op, struct meta_op_result *r)
{
	t->range_id = op->range_id;
	t->versioning = op->versioning;
	t->version_id = op->version_id;
	t->time_ms = op->time_ms;
	t->quota_bucket = quota_op_bucket(op);
	t->bypass = op->bypass_governance;   /* object lock (state_lock.c) */
	/* Before and after: an op may read a fact into the memo (a
	 * CreateMultipart finds its bucket) and then change it. */
	memo_forget(&t->s->memo, op);
	int rc = apply_body_op(t, op, r);
	memo_forget(&t->s->memo, op);
	return rc;
}

/* ---- request table */

static void key_request(struct key *k, uint64_t client, uint64_t req)
{
	k_init(k, 'R');
	k_u64(k, client);
	k_u64(k, req);
}

static void result_from_msg(const Iolake__Meta__OpResult *m, struct meta_op_result *r)
{
	r->err = meta_state_status_to_err(m->status);
	r->generation = m->generation;
	r->epoch = m->epoch;
	snprintf(r->upload_id, sizeof(r->upload_id), "%s", m->upload_id ? m->upload_id : "");
	snprintf(r->etag, sizeof(r->etag), "%s", m->etag ? m->etag : "");
	snprintf(r->version_id, sizeof(r->version_id), "%s", m->version_id ? m->version_id : "");
	r->delete_marker = m->delete_marker;
	r->retained = m->retained;
	r->part_rows_more = m->part_rows_more;
	r->bucket_changed = m->bucket_changed;
	r->replaced_shards = m->replaced_shards;
}

/* Write the memo's session (see struct tx): the same record the last of
 * its ops would have written. */
static void session_flush(struct tx *t)
{
	if (!t->sess_dirty)
		return;
	struct key ck;
	k_init(&ck, 'C');
	k_u64(&ck, t->sess_client);
	Iolake__Meta__ClientSession ns = IOLAKE__META__CLIENT_SESSION__INIT;
	ns.pruned_below = t->sess_pruned;
	ns.last_index = t->index;
	tx_put_msg(t, &ck, &ns.base);
	t->sess_dirty = false;
}

/*
 * High-water marks of the request table (struct meta_state's req_hw): a
 * new op's id is above every id its client sent before, so its 'R' read
 * (apply's lookup for a retry) nearly always misses; the miss searched the
 * batch, the memtable and the L0 tables' filters on every op. A slot
 * remembers, for one client, an id at or above all of that client's rows:
 * an op above it cannot be a retry, and its read is skipped.
 *
 * Safe because the mark may only be too high, never too low: it is loaded
 * from the DB itself (the client's last row, read through the batch), it
 * rises with every row apply writes, and rows leave only by apply's
 * prune (which leaves it too high: more reads, no wrong answer). A retry
 * of any id at or below the mark is read as before. The DB written under
 * it by a snapshot import or install empties every slot first; a batch
 * that fails after raising a mark leaves it too high. Slots are direct
 * mapped by client id: a collision evicts, costing the next op of the
 * evicted client one bounded seek.
 */
void meta_state_apply_reset(struct meta_state *s)
{
	memset(s->req_hw, 0, sizeof(s->req_hw));
	memset(&s->memo, 0, sizeof(s->memo));
}

static struct req_hw *req_hw_slot(struct meta_state *s, uint64_t client)
{
	return &s->req_hw[(client * 0x9e3779b97f4a7c15ull) >> 58 & (META_REQ_HW_SLOTS - 1)];
}

/* The highest id of client's rows, through the batch (0 when none), into
 * slot h; 0, or -EIO with h left empty. The iterator is bounded to the
 * client's rows on both sides: the rows below its live ones are deleted
 * (pruned) and a walk past them would step every tombstone not yet
 * compacted (the prune's trap, see below). */
static int req_hw_load(struct tx *t, struct req_hw *h, uint64_t client)
{
	struct key lo, hi;
	key_request(&lo, client, 0);
	key_request(&hi, client, UINT64_MAX);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_lower_bound(ro, lo.b, lo.n);
	rocksdb_readoptions_set_iterate_upper_bound(ro, hi.b, hi.n);
	rocksdb_iterator_t *it = rocksdb_writebatch_wi_create_iterator_with_base(
		t->wb, rocksdb_create_iterator(t->s->db, ro));
	rocksdb_iter_seek_for_prev(it, hi.b, hi.n);
	uint64_t top = 0;
	/* The batch's side ignores the bounds: checked here. */
	for (; rocksdb_iter_valid(it); rocksdb_iter_prev(it)) {
		size_t n;
		const char *kb = rocksdb_iter_key(it, &n);
		if (n != hi.n || memcmp(kb, lo.b, 9) != 0) {
			if (n >= 9 && memcmp(kb, lo.b, 9) < 0)
				break;   /* below the client's rows */
			continue;    /* another length under the same prefix: none expected */
		}
		top = get_be64(kb + 9);
		break;
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	if (err) {
		fprintf(stderr, "meta/state: read: %s\n", err);
		rocksdb_free(err);
		h->client = 0;
		t->io_err = -EIO;
		return -EIO;
	}
	h->client = client;
	h->hw = top;
	return 0;
}

/*
 * One op with exactly-once semantics. The request table keeps each
 * client's results for ids in [pruned_below, ...); pruned_below rises to
 * the client's acked_below and to keep at most META_DEDUPE_WINDOW ids, so
 * the table is bounded per client. A retry of a pruned id is answered
 * STALE rather than applied again.
 */
#define PRUNE_POINT_MAX 32  /* ids pruned by key, not by a scan */

static void apply_op(struct tx *t, Iolake__Meta__Op *op, struct meta_op_result *r)
{
	memset(r, 0, sizeof(*r));
	if (op->client_id == 0) {
		r->err = apply_body(t, op, r);
		return;
	}
	struct key rk;
	Iolake__Meta__OpResult *prior = NULL;
	Iolake__Meta__ClientSession *sess = NULL;
	key_request(&rk, op->client_id, op->request_id);
	struct req_hw *h = req_hw_slot(t->s, op->client_id);
	bool above = h->client == op->client_id && op->request_id > h->hw &&
		     op->request_id != UINT64_MAX;   /* the load's bound excludes that row */
	if (!above &&
	    tx_get_msg(t, &rk, &iolake__meta__op_result__descriptor, (void **)&prior) == 0) {
		result_from_msg(prior, r);
		r->deduped = true;
		meta_state_free_msg(prior);
		return;
	}
	if (h->client != op->client_id && req_hw_load(t, h, op->client_id)) {
		r->err = -EIO;
		return;
	}
	if (t->sess_client != op->client_id) {
		session_flush(t);
		struct key ck;
		k_init(&ck, 'C');
		k_u64(&ck, op->client_id);
		t->sess_pruned = 0;
		if (tx_get_msg(t, &ck, &iolake__meta__client_session__descriptor, (void **)&sess) == 0)
			t->sess_pruned = sess->pruned_below;
		meta_state_free_msg(sess);
		t->sess_client = op->client_id;
	}
	uint64_t pruned = t->sess_pruned;
	if (op->request_id < pruned) {
		r->err = META_ESTALE;
		return;
	}

	r->err = apply_body(t, op, r);

	Iolake__Meta__OpResult m = IOLAKE__META__OP_RESULT__INIT;
	m.status = meta_state_err_to_status(r->err);
	m.generation = r->generation;
	m.epoch = r->epoch;
	m.upload_id = r->upload_id;
	m.etag = r->etag;
	m.version_id = r->version_id;
	m.delete_marker = r->delete_marker;
	m.retained = r->retained;
	m.part_rows_more = r->part_rows_more;
	m.bucket_changed = r->bucket_changed;
	m.replaced_shards = r->replaced_shards;
	tx_put_msg(t, &rk, &m.base);
	if (op->request_id > h->hw)
		h->hw = op->request_id;   /* h is this client's: loaded above */

	uint64_t want = op->acked_below;
	if (op->request_id >= META_DEDUPE_WINDOW && op->request_id - META_DEDUPE_WINDOW + 1 > want)
		want = op->request_id - META_DEDUPE_WINDOW + 1;
	if (want > op->request_id)
		want = op->request_id;   /* keep the answer just stored */
	if (want > pruned && want - pruned <= PRUNE_POINT_MAX) {
		/* The usual step (a client sends one acked_below per batch:
		 * its first op in an entry prunes the previous batch, a few
		 * ids to a few dozen): the ids are known, so each is deleted
		 * by key, without the iterator's creation and seek (~4 us).
		 * An id without a row (sent to another group, or answered
		 * STALE) leaves a tombstone of a key that was absent: no
		 * change to the state, at most PRUNE_POINT_MAX per op. */
		for (uint64_t id = pruned; id < want; id++) {
			struct key k;
			key_request(&k, op->client_id, id);
			tx_del(t, &k);
		}
		pruned = want;
	} else if (want > pruned) {
		struct key lo, hi;
		key_request(&lo, op->client_id, pruned);
		key_request(&hi, op->client_id, want);
		/* The DB's side stops at hi: unbounded, its step past the last
		 * row to delete walked every deleted key up to the next live
		 * one, i.e. the next client's pruned rows not yet compacted (two
		 * gateway loops are two clients): per op, a scan growing with
		 * the PUTs since the last compaction (perf: RocksDB iterator
		 * steps under apply_op, up to 30% of the meta thread). The
		 * batch's side ignores the bound: checked below. */
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		rocksdb_readoptions_set_iterate_upper_bound(ro, hi.b, hi.n);
		rocksdb_iterator_t *it = rocksdb_writebatch_wi_create_iterator_with_base(
			t->wb, rocksdb_create_iterator(t->s->db, ro));
		rocksdb_iter_seek(it, lo.b, lo.n);
		for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
			struct key k;
			const char *kb = rocksdb_iter_key(it, &k.n);
			if (k.n != hi.n || memcmp(kb, hi.b, hi.n) >= 0)
				break;
			memcpy(k.b, kb, k.n);
			tx_del(t, &k);
		}
		rocksdb_iter_destroy(it);
		rocksdb_readoptions_destroy(ro);
		pruned = want;
	}
	t->sess_pruned = pruned;
	t->sess_dirty = true;
}

/* ------------------------------------------------------- entry framing */

size_t meta_state_entry_size_of(size_t payload)
{
	return (8 + payload + 7) & ~(size_t)7;
}

size_t meta_state_entry_size(const Iolake__Meta__OpBatch *b)
{
	return meta_state_entry_size_of(iolake__meta__op_batch__get_packed_size(b));
}

uint32_t meta_op_level(const Iolake__Meta__Op *op)
{
	(void)op;   /* every op and field is level 1 (state.h: raise it here) */
	return 1;
}

uint32_t meta_state_batch_level(const Iolake__Meta__OpBatch *b)
{
	uint32_t level = 0;
	for (size_t i = 0; i < b->n_ops; i++) {
		uint32_t l = meta_op_level(b->ops[i]);
		level = l > level ? l : level;
	}
	return level;
}

long meta_state_entry_encode(const Iolake__Meta__OpBatch *b, uint8_t *buf, size_t cap)
{
	return meta_state_entry_encode_sized(b, iolake__meta__op_batch__get_packed_size(b), buf,
					     cap);
}

long meta_state_entry_encode_sized(const Iolake__Meta__OpBatch *b, size_t payload, uint8_t *buf,
				   size_t cap)
{
	size_t total = meta_state_entry_size_of(payload);
	if (total > META_ENTRY_MAX_BYTES || b->n_ops > META_BATCH_MAX_OPS)
		return IOL_ETOO_LARGE;
	if (cap < total)
		return -ENOBUFS;
	uint32_t hdr[2] = { ENTRY_MAGIC, (uint32_t)payload };
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 4; j++)
			buf[i * 4 + j] = (uint8_t)(hdr[i] >> (8 * j));
	iolake__meta__op_batch__pack(b, buf + 8);
	memset(buf + 8 + payload, 0, total - 8 - payload);
	return (long)total;
}

/* A bump allocator for unpacking one entry: an OpBatch is many small
 * pieces per op (op, body, record, strings); they come from a few blocks
 * and go back together, with no free per piece. */
struct arena_blk {
	struct arena_blk *next;
	size_t used, cap;
	max_align_t data[];
};

struct arena {
	struct arena_blk *head;
	size_t next_cap;
	bool oom;
};

static void *arena_alloc(void *ud, size_t n)
{
	struct arena *a = ud;
	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	struct arena_blk *b = a->head;
	if (!b || b->cap - b->used < n) {
		size_t cap = a->next_cap > n ? a->next_cap : n;
		b = malloc(sizeof(*b) + cap);
		if (!b) {
			a->oom = true;
			return NULL;
		}
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
		a->next_cap = cap * 2;
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

static void arena_free_piece(void *ud, void *p)
{
	(void)ud;
	(void)p;   /* all at once in arena_release */
}

static void arena_release(struct arena *a)
{
	while (a->head) {
		struct arena_blk *next = a->head->next;
		free(a->head);
		a->head = next;
	}
}

/* The batch's pieces come from *a (arena_release frees them). */
static Iolake__Meta__OpBatch *entry_decode(const uint8_t *e, size_t len, struct arena *a)
{
	if (len < 8 || len % 8 || len > META_ENTRY_MAX_BYTES)
		return NULL;
	uint32_t magic = 0, payload = 0;
	for (int j = 3; j >= 0; j--) {
		magic = (magic << 8) | e[j];
		payload = (payload << 8) | e[4 + j];
	}
	if (magic != ENTRY_MAGIC || payload > len - 8)
		return NULL;
	/* Unpacked, an entry takes a few times its packed size. */
	a->next_cap = 4 * (size_t)payload + 1024;
	ProtobufCAllocator al = { .alloc = arena_alloc, .free = arena_free_piece, .allocator_data = a };
	Iolake__Meta__OpBatch *b = iolake__meta__op_batch__unpack(&al, payload, e + 8);
	if (b && b->n_ops > META_BATCH_MAX_OPS)
		return NULL;
	return b;
}

/* -------------------------------------------------------------- apply */

static void put_applied(rocksdb_writebatch_wi_t *wb, uint64_t index)
{
	char v[8];
	put_be64(v, index);
	rocksdb_writebatch_wi_put(wb, "A", 1, v, 8);
	/* The reference index is current at this index: a binary that did
	 * not maintain it (an older one, after a downgrade) leaves "X"
	 * behind "A", and the next open rebuilds instead of trusting it. */
	rocksdb_writebatch_wi_put(wb, "X", 1, v, 8);
}

/* seq_cst both ways: the odd value is visible before any effect of the
 * write a reader's Get may see (RocksDB publishes its sequence with a
 * release store after this), and the even one after all of them. */
void wseq_enter(struct meta_state *s)
{
	atomic_fetch_add(&s->wseq, 1);
}

void wseq_leave(struct meta_state *s)
{
	atomic_fetch_add(&s->wseq, 1);
}

uint64_t meta_state_read_seq(const struct meta_state *s)
{
	return atomic_load(&s->wseq);
}

bool meta_state_read_same(const struct meta_state *s, uint64_t seq)
{
	/* The reads before are ordered before this load (seq_cst fence):
	 * a write whose effect they saw had made wseq odd first. */
	atomic_thread_fence(memory_order_seq_cst);
	return !(seq & 1) && atomic_load(&s->wseq) == seq;
}

int write_batch(struct meta_state *s, rocksdb_writebatch_wi_t *wb, bool buckets)
{
	char *err = NULL;
	wseq_enter(s);
	rocksdb_write_writebatch_wi(s->db, s->wo, wb, &err);
	if (buckets)
		bucket_gen_move(s);
	wseq_leave(s);
	if (err) {
		fprintf(stderr, "meta/state: write: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

/* Apply's batch (struct meta_state's apply_wb): kept between entries,
 * up to this many bytes of writes. An aio entry of 13 PUTs of 4 KiB
 * writes ~60 KB; a larger one (an IngestRange's pairs) is let go. */
#define APPLY_WB_KEEP (1u << 20)

static rocksdb_writebatch_wi_t *apply_batch(struct meta_state *s)
{
	if (!s->apply_wb)
		s->apply_wb = rocksdb_writebatch_wi_create(0, 1);
	return s->apply_wb;
}

static void apply_batch_done(struct meta_state *s)
{
	size_t n = 0;
	rocksdb_writebatch_wi_data(s->apply_wb, &n);
	if (n > APPLY_WB_KEEP) {
		rocksdb_writebatch_wi_destroy(s->apply_wb);
		s->apply_wb = NULL;
	} else {
		rocksdb_writebatch_wi_clear(s->apply_wb);
	}
}

int meta_state_apply(struct meta_state *s, uint64_t raft_index, const uint8_t *entry,
		     size_t len, struct meta_op_result *res, size_t res_cap)
{
	if (raft_index <= s->applied)
		return 0;   /* applied before a restart: idempotent skip */
	/* RocksDB counts into thread-local perf counters by default: a TLS
	 * lookup per counter per call, which nobody reads here. */
	rocksdb_set_perf_level(rocksdb_disable);
	int rc;
	struct arena a = { 0 };
	Iolake__Meta__OpBatch *b = entry_decode(entry, len, &a);
	struct tx t = { .s = s, .index = raft_index };
	t.wb = apply_batch(s);
	if (a.oom) {
		rc = -ENOMEM;   /* not the entry's fault: must not be skipped */
		goto out_wb;
	}
	if (!b) {
		/* Every member decodes the same bytes the same way: record the
		 * index so all skip it, and tell the caller. */
		put_applied(t.wb, raft_index);
		rc = write_batch(s, t.wb, false);
		if (rc == 0) {
			s->applied = raft_index;
			rc = IOL_EPROTOCOL;
		}
		goto out_wb;
	}
	if (b->n_ops > res_cap) {
		rc = -ENOBUFS;
		goto out_batch;
	}
	if (b->op_level > s->op_level) {
		/* A newer build's ops: not applied here, not skipped either
		 * (the members that understand them applied them). */
		fprintf(stderr, "meta/state: entry %llu needs op level %u; this build applies "
			"level %u: upgrade this member\n", (unsigned long long)raft_index,
			b->op_level, s->op_level);
		rc = IOL_EBAD_FORMAT;
		goto out_batch;
	}
	for (size_t i = 0; i < b->n_ops; i++) {
		t.gen = (raft_index << 16) | (uint64_t)i;
		t.gc_seq = 0;
		apply_op(&t, b->ops[i], &res[i]);
		if (t.io_err) {
			rc = t.io_err == -ENOMEM ? -ENOMEM : -EIO;
			goto out_batch;
		}
	}
	session_flush(&t);
	range_flush(&t);
	quota_flush(&t);
	if (t.io_err) {
		rc = -EIO;
		goto out_batch;
	}
	put_applied(t.wb, raft_index);
	if (b->op_level > s->level_seen) {
		/* The state now holds what only builds of this level read:
		 * an older one must refuse it (open, install), not misread it. */
		char lv[4];
		put_be32(lv, b->op_level);
		rocksdb_writebatch_wi_put(t.wb, "L", 1, lv, 4);
	}
	rc = write_batch(s, t.wb, t.bucket_written);
	if (rc == 0) {
		s->applied = raft_index;
		if (b->op_level > s->level_seen)
			s->level_seen = b->op_level;
		atomic_fetch_add(&s->gc_entries, t.gc_added - t.gc_removed);
		rc = (int)b->n_ops;
	}
out_batch:
	if (rc < 0)   /* the memo may hold reads of the batch not written */
		memset(&s->memo, 0, sizeof(s->memo));
	meta_state_free_msg(t.rng);
out_wb:
	arena_release(&a);
	apply_batch_done(s);
	return rc;
}

/* ------------------------------------------------------- open / close */

int state_source_ok(const struct meta_state *s, const char *what, const char *f, size_t fn,
		    const char *l, size_t ln, uint32_t *level)
{
	*level = 0;
	if (f) {
		if (fn != 4) {
			fprintf(stderr, "meta/state: %s: format record of %zu bytes, not 4\n", what, fn);
			return IOL_ECORRUPT;
		}
		uint32_t fv = get_be32(f);
		if (fv != FORMAT_VERSION) {
			/* A newer IOLake's state (a downgrade), or not ours:
			 * say which, not only that it failed. */
			fprintf(stderr, "meta/state: %s holds state format %u; this build reads "
				"format %u (written by a newer IOLake?)\n", what, fv, FORMAT_VERSION);
			return IOL_EBAD_FORMAT;
		}
	}
	if (l) {
		if (ln != 4) {
			fprintf(stderr, "meta/state: %s: op level record of %zu bytes, not 4\n", what, ln);
			return IOL_ECORRUPT;
		}
		*level = get_be32(l);
		if (*level > s->op_level) {
			fprintf(stderr, "meta/state: %s holds entries of op level %u; this build applies "
				"level %u: upgrade this member\n", what, *level, s->op_level);
			return IOL_EBAD_FORMAT;
		}
	}
	return 0;
}

int db_get(struct meta_state *s, const struct key *k, char **v, size_t *n)
{
	char *err = NULL;
	*v = rocksdb_get(s->db, s->ro, k->b, k->n, n, &err);
	if (err) {
		fprintf(stderr, "meta/state: get: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	return *v ? 0 : IOL_ENOT_FOUND;
}

int meta_state_open(const char *dir, const struct meta_state_opts *opts, struct meta_state **out)
{
	int rc = -EIO;
	char *err = NULL;
	struct meta_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	bucket_slots_init(s);
	s->op_level = opts && opts->op_level ? opts->op_level : META_OP_LEVEL;
	s->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(s->opts, 1);
	rocksdb_options_set_keep_log_file_num(s->opts, 2);
	rocksdb_options_set_max_open_files(s->opts, opts && opts->max_open_files
							    ? opts->max_open_files : 256);
	if (opts && opts->manifest_preallocation_bytes)
		rocksdb_options_set_manifest_preallocation_size(s->opts,
								opts->manifest_preallocation_bytes);
	/* A whole-key bloom filter on the memtable: apply's lookups that miss
	 * (request table, new object keys) skip the skip-list search. */
	rocksdb_options_t *tuned = rocksdb_options_create();
	rocksdb_get_options_from_string(s->opts,
					"memtable_whole_key_filtering=true;"
					"memtable_prefix_bloom_size_ratio=0.05;"
					"memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.1",
					tuned, &err);
	if (err) {   /* an older RocksDB: run without the filter */
		rocksdb_free(err);
		err = NULL;
		rocksdb_options_destroy(tuned);
	} else {
		rocksdb_options_destroy(s->opts);
		s->opts = tuned;
	}
	/* Bounded memory: data, index and filter blocks all live in one LRU
	 * cache, and point reads' rows in another, of cache_bytes together
	 * (index and filter blocks outside the cache
	 * would grow with the number of records), memtables are at most two
	 * of write_buffer_bytes. On the final options: the tuned path above
	 * replaced s->opts. */
	uint64_t cache_bytes = opts && opts->cache_bytes ? opts->cache_bytes : META_STATE_CACHE_BYTES;
	uint64_t wbuf_bytes = opts && opts->write_buffer_bytes ? opts->write_buffer_bytes
							    : META_STATE_WRITE_BUFFER_BYTES;
	const struct meta_state_cache *caches = opts ? opts->cache : NULL;
	if (!caches) {
		rc = meta_state_cache_new(cache_bytes, &s->own_cache);
		if (rc)
			goto out_fail;
		caches = s->own_cache;
	}
	s->cache = caches->cache;
	s->rows = caches->rows;
	/* Point reads (the gateway's HeadObject, GetBucket, apply's reads)
	 * of records in tables: a hit answers from here without the filter,
	 * index and data block lookups of the block cache (each an LRU
	 * shard's lock); RocksDB keys it by table file, so a newer write
	 * (memtable, or a later table) is never shadowed. GET 4 KiB under
	 * wrk: 1.5-1.7 us less CPU a GET (docs/performance.md, "row cache"). */
	rocksdb_options_set_row_cache(s->opts, s->rows);
	s->bbto = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(s->bbto, s->cache);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(s->bbto, 1);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(s->bbto, 1);
	rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(s->bbto, 1);
	/* A whole-key bloom filter in every table, as the memtable has: most
	 * of apply's reads miss (a new object's 'O' key, the request table's
	 * 'R' row), and without it each miss searched an index block and
	 * read a data block of every L0 table and of each level below. */
	rocksdb_block_based_options_set_filter_policy(s->bbto,
						      rocksdb_filterpolicy_create_bloom_full(10));
	rocksdb_options_set_block_based_table_factory(s->opts, s->bbto);
	rocksdb_options_set_write_buffer_size(s->opts, wbuf_bytes);
	rocksdb_options_set_max_write_buffer_number(s->opts, 2);
	/* Flushes and compactions start the writeback of their tables every
	 * META_STATE_BYTES_PER_SYNC (sync_file_range), not all at the table's
	 * fsync. On a device with a write cache the Raft log's synced writes
	 * share with them, one flush of that cache carries whatever was
	 * written since the last: a table's tens of MiB at once made the log
	 * write behind it wait (docs/performance.md, "bytes_per_sync"). */
	rocksdb_options_set_bytes_per_sync(s->opts, META_STATE_BYTES_PER_SYNC);
	s->ro = rocksdb_readoptions_create();
	s->wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(s->wo, opts && opts->sync);
	/* Unsynced applies need no RocksDB WAL either: the Raft log is the
	 * durable copy. After a crash the state is the last flushed memtable
	 * (every write is one atomic batch with "A", so whole entries), and
	 * Raft restores its snapshot and replays the entries after it; a
	 * clean close flushes. Saves a WAL record (CRC, write) per apply. */
	rocksdb_writeoptions_disable_WAL(s->wo, !(opts && opts->sync));
	s->db = rocksdb_open(s->opts, dir, &err);
	if (err) {
		fprintf(stderr, "meta/state: open %s: %s\n", dir, err);
		rocksdb_free(err);
		goto out_fail;
	}
	struct key k;
	char *v;
	size_t n;
	k_init(&k, 'F');
	rc = db_get(s, &k, &v, &n);
	if (rc == IOL_ENOT_FOUND) {
		char fv[4] = { 0, 0, 0, FORMAT_VERSION };
		rocksdb_put(s->db, s->wo, "F", 1, fv, 4, &err);
		if (err) {
			rocksdb_free(err);
			rc = -EIO;
			goto out_fail;
		}
	} else if (rc == 0) {
		char *lv = NULL;
		size_t ln = 0;
		k_init(&k, 'L');
		rc = db_get(s, &k, &lv, &ln);
		if (rc == 0 || rc == IOL_ENOT_FOUND)
			rc = state_source_ok(s, dir, v, n, lv, ln, &s->level_seen);
		rocksdb_free(lv);
		rocksdb_free(v);
		if (rc)
			goto out_fail;
	} else {
		goto out_fail;
	}
	k_init(&k, 'A');
	rc = db_get(s, &k, &v, &n);
	if (rc == 0) {
		if (n == 8)
			s->applied = get_be64(v);
		rocksdb_free(v);
		if (n != 8) {
			rc = IOL_ECORRUPT;
			goto out_fail;
		}
	} else if (rc != IOL_ENOT_FOUND) {
		goto out_fail;
	}
	atomic_store(&s->gc_entries, gc_scan(s));
	k_init(&k, 'X');
	rc = db_get(s, &k, &v, &n);
	if (rc == 0) {
		bool current = n == 8 && get_be64(v) == s->applied;
		rocksdb_free(v);
		if (!current)
			rc = ref_build(s);
	} else if (rc == IOL_ENOT_FOUND) {
		rc = ref_build(s);
	}
	if (rc)
		goto out_fail;
	*out = s;
	return 0;
out_fail:
	meta_state_close(s);
	return rc;
}

void meta_state_close(struct meta_state *s)
{
	if (!s)
		return;
	if (s->apply_wb)
		rocksdb_writebatch_wi_destroy(s->apply_wb);
	if (s->db)
		rocksdb_close(s->db);
	rocksdb_writeoptions_destroy(s->wo);
	rocksdb_readoptions_destroy(s->ro);
	rocksdb_options_destroy(s->opts);
	if (s->bbto)
		rocksdb_block_based_options_destroy(s->bbto);
	meta_state_cache_free(s->own_cache);
	bucket_slots_fini(s);
	free(s);
}

int meta_state_cache_new(uint64_t bytes, struct meta_state_cache **out)
{
	struct meta_state_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (!bytes)
		bytes = META_STATE_CACHE_BYTES;
	c->cache = rocksdb_cache_create_lru(bytes - bytes / META_STATE_ROW_CACHE_DIV);
	c->rows = rocksdb_cache_create_lru(bytes / META_STATE_ROW_CACHE_DIV);
	if (!c->cache || !c->rows) {
		meta_state_cache_free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void meta_state_cache_free(struct meta_state_cache *c)
{
	if (!c)
		return;
	if (c->cache)
		rocksdb_cache_destroy(c->cache);
	if (c->rows)
		rocksdb_cache_destroy(c->rows);
	free(c);
}

uint64_t meta_state_cache_usage(const struct meta_state_cache *c)
{
	return c ? (uint64_t)rocksdb_cache_get_usage(c->cache) +
			   (uint64_t)rocksdb_cache_get_usage(c->rows)
		 : 0;
}

uint64_t meta_state_memtable_bytes(struct meta_state *s)
{
	uint64_t v;
	return rocksdb_property_int(s->db, "rocksdb.size-all-mem-tables", &v) ? 0 : v;
}

uint64_t meta_state_applied_index(const struct meta_state *s)
{
	return s->applied;
}
