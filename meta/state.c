/*
 * state.c — the meta state machine over RocksDB (contracts in state.h).
 *
 * Key layout (one column family; the first byte names the table; all
 * integers big-endian so byte order is numeric order):
 *
 *   "A"                                   u64 applied raft index
 *   "F"                                   u32 format version (1)
 *   'B' bucket                            Bucket
 *   'O' bucket 0x00 key                   ObjectRecord (the current version)
 *   'V' bucket 0x00 key 0x00 be64(~order) ObjectRecord: an older version
 *                                         (state_ver.c, docs/architecture.md
 *                                         "Versioning")
 *   'U' bucket 0x00 key 0x00 upload_id    MultipartUpload
 *   'P' upload_id(16 hex) u32 part        Part
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
 * Not here: Raft, RPC, heartbeat timers (the leader turns missed beats
 * into SetOsdState ops), linearizable-read barriers, listing of objects
 * and of uploads (list.c, over the iterators at the end of this file).
 *
 * Size: ~1,700 lines, over the 1,500 of STYLE.md, because the ops, the
 * request table, the reads and the snapshot code share the private key
 * helpers. The planned split: ops into meta/apply.c behind a small
 * internal header with the key helpers.
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
#define SNAP_MAGIC "IOLMSNP1"
#define NAME_MAX_BYTES 128

/* A block cache several states share (the groups of one member). */
struct meta_state_cache {
	rocksdb_cache_t *cache;
};

/* struct meta_state, struct tx, struct key: meta/state_internal.h */

/* ------------------------------------------------------------ helpers */

void put_be64(char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (char)(v & 0xff);
}

uint64_t get_be64(const char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | (uint8_t)p[i];
	return v;
}

void k_init(struct key *k, char table)
{
	k->b[0] = table;
	k->n = 1;
}

void k_str(struct key *k, const char *s)
{
	size_t n = strlen(s);
	/* Callers validate lengths first; this only guards the buffer. */
	if (n > sizeof(k->b) - k->n - 1)
		n = sizeof(k->b) - k->n - 1;
	memcpy(k->b + k->n, s, n);
	k->n += n;
}

void k_byte(struct key *k, char c)
{
	k->b[k->n++] = c;
}

void k_u64(struct key *k, uint64_t v)
{
	put_be64(k->b + k->n, v);
	k->n += 8;
}

void k_u32(struct key *k, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		k->b[k->n++] = (char)((v >> (8 * i)) & 0xff);
}

static void key_gc(struct key *k, uint64_t gen, uint16_t seq)
{
	k_init(k, 'G');
	k_u64(k, gen);
	k_byte(k, (char)(seq >> 8));
	k_byte(k, (char)(seq & 0xff));
}

void key_object(struct key *k, const char *bucket, const char *key)
{
	k_init(k, 'O');
	k_str(k, bucket);
	k_byte(k, 0);
	k_str(k, key);
}

void key_upload(struct key *k, const char *bucket, const char *key, const char *id)
{
	k_init(k, 'U');
	k_str(k, bucket);
	k_byte(k, 0);
	k_str(k, key);
	k_byte(k, 0);
	k_str(k, id);
}

void key_part(struct key *k, const char *upload_id, uint32_t part)
{
	k_init(k, 'P');
	k_str(k, upload_id);
	k_u32(k, part);
}

bool valid_bucket(const char *b)
{
	size_t n = b ? strlen(b) : 0;
	if (n < 3 || n > BUCKET_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return false;
	}
	return true;
}

bool valid_key(const char *k)
{
	size_t n = k ? strlen(k) : 0;
	return n >= 1 && n <= META_KEY_MAX;
}

static bool valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n >= 1 && n <= NAME_MAX_BYTES;
}

static bool valid_upload_id(const char *id)
{
	if (!id || strlen(id) != 16)
		return false;
	for (int i = 0; i < 16; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

Iolake__Meta__Status meta_state_err_to_status(int err)
{
	switch (err) {
	case 0: return IOLAKE__META__STATUS__STATUS_OK;
	case IOL_ENOT_FOUND: return IOLAKE__META__STATUS__STATUS_NOT_FOUND;
	case IOL_EEXISTS: return IOLAKE__META__STATUS__STATUS_EXISTS;
	case IOL_ECONFLICT: return IOLAKE__META__STATUS__STATUS_CONFLICT;
	case META_ENOTEMPTY: return IOLAKE__META__STATUS__STATUS_BUCKET_NOT_EMPTY;
	case -EINVAL: return IOLAKE__META__STATUS__STATUS_INVALID;
	case META_ESTALE: return IOLAKE__META__STATUS__STATUS_STALE_REQUEST;
	case META_EINVALID_PART: return IOLAKE__META__STATUS__STATUS_INVALID_PART;
	case IOL_ETOO_LARGE: return IOLAKE__META__STATUS__STATUS_TOO_LARGE;
	case META_EWRONG_RANGE: return IOLAKE__META__STATUS__STATUS_WRONG_RANGE;
	default: return IOLAKE__META__STATUS__STATUS_INTERNAL;
	}
}

int meta_state_status_to_err(Iolake__Meta__Status st)
{
	switch (st) {
	case IOLAKE__META__STATUS__STATUS_OK: return 0;
	case IOLAKE__META__STATUS__STATUS_NOT_FOUND: return IOL_ENOT_FOUND;
	case IOLAKE__META__STATUS__STATUS_EXISTS: return IOL_EEXISTS;
	case IOLAKE__META__STATUS__STATUS_CONFLICT: return IOL_ECONFLICT;
	case IOLAKE__META__STATUS__STATUS_BUCKET_NOT_EMPTY: return META_ENOTEMPTY;
	case IOLAKE__META__STATUS__STATUS_INVALID: return -EINVAL;
	case IOLAKE__META__STATUS__STATUS_STALE_REQUEST: return META_ESTALE;
	case IOLAKE__META__STATUS__STATUS_INVALID_PART: return META_EINVALID_PART;
	case IOLAKE__META__STATUS__STATUS_TOO_LARGE: return IOL_ETOO_LARGE;
	case IOLAKE__META__STATUS__STATUS_WRONG_RANGE: return META_EWRONG_RANGE;
	default: return -EIO;
	}
}

void meta_state_free_msg(void *msg)
{
	if (msg)
		protobuf_c_message_free_unpacked(msg, NULL);
}

/* Read a key through the batch. 0 and *val (rocksdb_free it), or
 * IOL_ENOT_FOUND, or -EIO (also latched in tx). */
int tx_get(struct tx *t, const struct key *k, char **val, size_t *vlen)
{
	char *err = NULL;
	*val = rocksdb_writebatch_wi_get_from_batch_and_db(t->wb, t->s->db, t->s->ro, k->b, k->n,
							    vlen, &err);
	if (err) {
		fprintf(stderr, "meta/state: read: %s\n", err);
		rocksdb_free(err);
		t->io_err = -EIO;
		return -EIO;
	}
	return *val ? 0 : IOL_ENOT_FOUND;
}

bool tx_exists(struct tx *t, const struct key *k)
{
	char *v;
	size_t n;
	if (tx_get(t, k, &v, &n) != 0)
		return false;
	rocksdb_free(v);
	return true;
}

/* Read and unpack a record through the batch. */
int tx_get_msg(struct tx *t, const struct key *k, const ProtobufCMessageDescriptor *d,
		      void **out)
{
	char *v;
	size_t n;
	int rc = tx_get(t, k, &v, &n);
	if (rc)
		return rc;
	*out = protobuf_c_message_unpack(d, NULL, n, (const uint8_t *)v);
	rocksdb_free(v);
	if (!*out) {
		/* Our own encoding failed to decode: on-disk corruption. */
		t->io_err = -EIO;
		return IOL_ECORRUPT;
	}
	return 0;
}

int tx_put_msg(struct tx *t, const struct key *k, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t stackbuf[512];
	uint8_t *buf = n <= sizeof(stackbuf) ? stackbuf : malloc(n);
	if (!buf) {
		t->io_err = -ENOMEM;
		return -ENOMEM;
	}
	protobuf_c_message_pack(m, buf);
	rocksdb_writebatch_wi_put(t->wb, k->b, k->n, (const char *)buf, n);
	if (buf != stackbuf)
		free(buf);
	return 0;
}

void tx_del(struct tx *t, const struct key *k)
{
	rocksdb_writebatch_wi_delete(t->wb, k->b, k->n);
}

/* An iterator over the batch and the DB from lo; the caller checks the
 * upper bound itself (the batch part ignores iterate_upper_bound). */
rocksdb_iterator_t *tx_iter(struct tx *t, const struct key *lo)
{
	rocksdb_iterator_t *base = rocksdb_create_iterator(t->s->db, t->s->ro);
	/* Takes over base. */
	rocksdb_iterator_t *it = rocksdb_writebatch_wi_create_iterator_with_base(t->wb, base);
	rocksdb_iter_seek(it, lo->b, lo->n);
	return it;
}

bool iter_has_prefix(rocksdb_iterator_t *it, const struct key *prefix)
{
	if (!rocksdb_iter_valid(it))
		return false;
	size_t n;
	const char *k = rocksdb_iter_key(it, &n);
	return n >= prefix->n && memcmp(k, prefix->b, prefix->n) == 0;
}

/* Queue a replaced or deleted record's shards for GC (inline objects own
 * no shards; others name theirs by segments or by data_layout). */
void gc_record(struct tx *t, const Iolake__Meta__ObjectRecord *r)
{
	if (r->n_segments == 0 && r->data_layout.len == 0)
		return;
	Iolake__Meta__ObjectRecord copy = *r;
	copy.inline_data.len = 0;
	copy.inline_data.data = NULL;
	copy.n_user_meta = 0;
	struct key k;
	key_gc(&k, t->gen, t->gc_seq);
	t->gc_seq++;
	t->gc_added++;
	tx_put_msg(t, &k, &copy.base);
}

static void gc_part(struct tx *t, const char *bucket, const char *key,
		    const Iolake__Meta__Part *p)
{
	if (!p->segment)
		return;
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	Iolake__Meta__Segment *segs[1] = { p->segment };
	r.bucket = (char *)bucket;
	r.key = (char *)key;
	r.size = p->size;
	r.n_segments = 1;
	r.segments = segs;
	gc_record(t, &r);
}

/* ---------------------------------------------------- reference index
 *
 * 'X' pg id gen -> "" for every live reference to the shards of a gw_data
 * PUT: gen is the generation of the record (ObjectRecord.data_layout, each
 * Segment.data_layout) or part (Part.segment) that names it. Put in the
 * same batch as the record where an op starts naming a layout, deleted
 * where it stops (the places that queue GC entries), blindly: the record
 * and its generation say which key, so apply reads nothing more. The
 * index is a pure function of the 'O' and 'P' tables (ref_build computes
 * it from them, for a state written before it existed). An id is
 * referenced while any key has the prefix 'X' pg id: CheckShards.
 */

/* The pg and 16-byte object id of an encoded layout (layout.proto fields
 * 7 and 6), scanned without unpacking (no allocation in apply). false: not
 * a layout whose shards can be named (corrupt, or an id of another size). */
bool meta_layout_ref(const uint8_t *p, size_t n, uint32_t *pg, uint8_t id[META_REF_ID_LEN])
{
	const uint8_t *end = p + n;
	bool have_id = false;
	*pg = 0;
	while (p < end) {
		uint64_t tag = 0, v = 0;
		for (unsigned sh = 0;; sh += 7) {   /* varint tag */
			if (p == end || sh > 63)
				return false;
			tag |= (uint64_t)(*p & 0x7f) << sh;
			if (!(*p++ & 0x80))
				break;
		}
		uint32_t field = (uint32_t)(tag >> 3);
		switch (tag & 7) {
		case 0:
			for (unsigned sh = 0;; sh += 7) {
				if (p == end || sh > 63)
					return false;
				v |= (uint64_t)(*p & 0x7f) << sh;
				if (!(*p++ & 0x80))
					break;
			}
			if (field == 7)
				*pg = (uint32_t)v;
			break;
		case 1:
			if (end - p < 8)
				return false;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return false;
			p += 4;
			break;
		case 2:
			for (unsigned sh = 0;; sh += 7) {
				if (p == end || sh > 63)
					return false;
				v |= (uint64_t)(*p & 0x7f) << sh;
				if (!(*p++ & 0x80))
					break;
			}
			if (v > (uint64_t)(end - p))
				return false;
			if (field == 6) {
				if (v != META_REF_ID_LEN)
					return false;
				memcpy(id, p, META_REF_ID_LEN);
				have_id = true;
			}
			p += v;
			break;
		default:
			return false;
		}
	}
	return have_id;
}

static void key_ref(struct key *k, uint32_t pg, const uint8_t *id)
{
	k_init(k, 'X');
	k_u32(k, pg);
	memcpy(k->b + k->n, id, META_REF_ID_LEN);
	k->n += META_REF_ID_LEN;
}

/* Add (or drop) the reference of the record or part of generation gen to
 * one layout's shards. A layout that names no shards (undecodable) is not
 * indexed: the gateway cannot read it either. */
static void ref_layout(struct tx *t, const ProtobufCBinaryData *lay, uint64_t gen, bool add)
{
	uint32_t pg;
	uint8_t id[META_REF_ID_LEN];
	if (lay->len == 0 || !meta_layout_ref(lay->data, lay->len, &pg, id))
		return;
	struct key k;
	key_ref(&k, pg, id);
	k_u64(&k, gen);
	if (add)
		rocksdb_writebatch_wi_put(t->wb, k.b, k.n, "", 0);
	else
		tx_del(t, &k);
}

void ref_record(struct tx *t, const Iolake__Meta__ObjectRecord *r, uint64_t gen, bool add)
{
	ref_layout(t, &r->data_layout, gen, add);
	for (size_t i = 0; i < r->n_segments; i++)
		ref_layout(t, &r->segments[i]->data_layout, gen, add);
}

void ref_part(struct tx *t, const Iolake__Meta__Part *p, bool add)
{
	if (p->segment)
		ref_layout(t, &p->segment->data_layout, p->generation, add);
}

/* --------------------------------------------------------- operations */

/* An ACL as apply accepts it: at most META_ACL_GRANTS_MAX grants, each a
 * known permission and either a group or a 32-byte user id; a canned
 * name is known. (What S3 allows where is the gateway's.) */
static bool valid_acl(const Iolake__Meta__Acl *a)
{
	if (!a)
		return true;
	if ((unsigned)a->canned > IOLAKE__META__CANNED_ACL__CANNED_LOG_DELIVERY_WRITE ||
	    a->n_grants > META_ACL_GRANTS_MAX)
		return false;
	for (size_t i = 0; i < a->n_grants; i++) {
		const Iolake__Meta__AclGrant *g = a->grants[i];
		if (g->permission < IOLAKE__META__ACL_PERMISSION__ACL_PERM_READ ||
		    g->permission > IOLAKE__META__ACL_PERMISSION__ACL_PERM_FULL_CONTROL ||
		    (unsigned)g->group > IOLAKE__META__ACL_GROUP__ACL_GROUP_LOG_DELIVERY ||
		    (g->group == IOLAKE__META__ACL_GROUP__ACL_GROUP_NONE) != (g->user_id.len == 32) ||
		    (g->group != IOLAKE__META__ACL_GROUP__ACL_GROUP_NONE && g->user_id.len))
			return false;
	}
	return true;
}

static bool valid_ownership(Iolake__Meta__ObjectOwnership o)
{
	return (unsigned)o <= IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_OBJECT_WRITER;
}

/* A bucket policy as apply accepts it: its size only (the gateway parsed
 * and validated the document with its policy engine before proposing). */
static bool valid_policy(const char *p)
{
	return !p || strlen(p) <= META_POLICY_MAX;
}

static int op_create_bucket(struct tx *t, const Iolake__Meta__CreateBucket *op)
{
	if (!op->bucket || !valid_bucket(op->bucket->name) || !valid_name(op->bucket->owner) ||
	    !valid_acl(op->bucket->acl) || !valid_ownership(op->bucket->object_ownership) ||
	    !valid_policy(op->bucket->policy))
		return -EINVAL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, op->bucket->name);
	if (tx_exists(t, &k))
		return IOL_EEXISTS;
	Iolake__Meta__Bucket b = *op->bucket;
	b.generation = t->gen;
	int rc = tx_put_msg(t, &k, &b.base);
	return rc ? rc : create_bucket_range(t, b.name);
}

/* The smallest key above every key that starts with p (its last byte
 * below 0xFF incremented, the rest cut): false when there is none. */
bool key_prefix_end(const struct key *p, struct key *end)
{
	*end = *p;
	while (end->n && (uint8_t)end->b[end->n - 1] == 0xFF)
		end->n--;
	if (!end->n)
		return false;
	end->b[end->n - 1]++;
	return true;
}

/* Read options whose iterators stop at the end of prefix p (NULL when p
 * has no end, or out of memory: the default options then). A seek into
 * an empty prefix must not walk the tombstones that follow it: 'Q' (the
 * range table) sits just below 'R' (the request table), whose pruned
 * entries are deleted keys, so an unbounded seek for a bucket without
 * ranges stepped over every tombstone not yet compacted, on every op (a
 * meta thread at 80% and 64 KiB PUTs at a third of their rate in aio). */
rocksdb_readoptions_t *prefix_ro(const struct key *p, struct key *end)
{
	if (!key_prefix_end(p, end))
		return NULL;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	if (ro)
		rocksdb_readoptions_set_iterate_upper_bound(ro, end->b, end->n);
	return ro;
}

bool prefix_nonempty(struct tx *t, const struct key *prefix)
{
	struct key end;
	rocksdb_readoptions_t *ro = prefix_ro(prefix, &end);
	rocksdb_iterator_t *base = rocksdb_create_iterator(t->s->db, ro ? ro : t->s->ro);
	/* Takes over base; the batch part ignores the bound: checked below. */
	rocksdb_iterator_t *it = rocksdb_writebatch_wi_create_iterator_with_base(t->wb, base);
	rocksdb_iter_seek(it, prefix->b, prefix->n);
	bool any = iter_has_prefix(it, prefix);
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	return any;
}

static int op_delete_bucket(struct tx *t, const Iolake__Meta__DeleteBucket *op)
{
	if (!valid_bucket(op->name))
		return -EINVAL;
	struct key k, o;
	k_init(&k, 'B');
	k_str(&k, op->name);
	if (!tx_exists(t, &k))
		return IOL_ENOT_FOUND;
	if (bucket_moving(t, op->name))
		return IOL_ECONFLICT;   /* records in flight between groups */
	/* Objects or unfinished uploads keep a bucket. */
	for (const char *tab = "OU"; *tab; tab++) {
		k_init(&o, *tab);
		k_str(&o, op->name);
		k_byte(&o, 0);
		if (prefix_nonempty(t, &o))
			return META_ENOTEMPTY;
	}
	tx_del(t, &k);
	t->bucket_ok[0] = 0;
	delete_bucket_ranges(t, op->name);
	return 0;
}

bool bucket_exists(struct tx *t, const char *bucket)
{
	if (t->bucket_ok[0] && !strcmp(t->bucket_ok, bucket))
		return true;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, bucket);
	if (!tx_exists(t, &k))
		return false;
	snprintf(t->bucket_ok, sizeof(t->bucket_ok), "%s", bucket);
	return true;
}

/* Current record for a conditional write. 0 (with *cur possibly NULL),
 * IOL_ECONFLICT or a storage error. */
static int check_condition(struct tx *t, const struct key *k, bool if_none_match,
			   uint64_t if_generation, Iolake__Meta__ObjectRecord **cur)
{
	*cur = NULL;
	int rc = tx_get_msg(t, k, &iolake__meta__object_record__descriptor, (void **)cur);
	if (rc && rc != IOL_ENOT_FOUND)
		return rc;
	/* A delete marker is no object: If-None-Match: * writes over it. */
	if (if_none_match && *cur && !(*cur)->is_delete_marker)
		return IOL_ECONFLICT;
	if (if_generation && (!*cur || (*cur)->generation != if_generation))
		return IOL_ECONFLICT;
	return 0;
}

static int op_put_object(struct tx *t, Iolake__Meta__PutObject *op, struct meta_op_result *r)
{
	Iolake__Meta__ObjectRecord *rec = op->record, *cur = NULL;
	if (!rec || !valid_bucket(rec->bucket) || !valid_key(rec->key) || !valid_acl(rec->acl))
		return -EINVAL;
	int rc = range_check(t, rec->bucket, rec->key);
	if (rc)
		return rc;
	struct key k;
	key_object(&k, rec->bucket, rec->key);
	rc = check_condition(t, &k, op->if_none_match, op->if_generation, &cur);
	if (rc == 0)
		rc = meta_ver_put_current(t, &k, rec, cur, r);
	meta_state_free_msg(cur);
	return rc;
}

static int op_delete_object(struct tx *t, const Iolake__Meta__DeleteObject *op,
			    struct meta_op_result *r)
{
	if (!valid_bucket(op->bucket) || !valid_key(op->key))
		return -EINVAL;
	if (t->range_id) {
		int rrc = range_check(t, op->bucket, op->key);
		if (rrc)
			return rrc;
	}
	Iolake__Meta__ObjectRecord *cur = NULL;
	struct key k;
	key_object(&k, op->bucket, op->key);
	int rc = check_condition(t, &k, false, op->if_generation, &cur);
	if (rc == 0 && meta_ver_delete_is_versioned(t, cur)) {
		rc = meta_ver_delete(t, op, cur, &k, r);
		meta_state_free_msg(cur);
		return rc;
	}
	if (rc == 0 && !cur)
		rc = IOL_ENOT_FOUND;
	if (rc == 0) {
		gc_record(t, cur);
		ref_record(t, cur, cur->generation, false);
		range_count(t, -1, -(int64_t)cur->size, 0);
		tx_del(t, &k);
	}
	meta_state_free_msg(cur);
	return rc;
}

static int op_create_multipart(struct tx *t, Iolake__Meta__CreateMultipart *op,
			       struct meta_op_result *r)
{
	Iolake__Meta__MultipartUpload *u = op->upload;
	if (!u || !valid_bucket(u->bucket) || !valid_key(u->key) ||
	    (unsigned)u->checksum_algo > IOLAKE__META__CHECKSUM_ALGO__CHECKSUM_CRC64NVME)
		return -EINVAL;
	int rrc = range_check(t, u->bucket, u->key);
	if (rrc)
		return rrc;
	range_count(t, 0, 0, 1);
	snprintf(r->upload_id, sizeof(r->upload_id), "%016llx", (unsigned long long)t->gen);
	char *client_id = u->upload_id;   /* whatever the proposer sent is ignored */
	u->upload_id = r->upload_id;
	struct key k;
	key_upload(&k, u->bucket, u->key, r->upload_id);
	int rc = tx_put_msg(t, &k, &u->base);
	u->upload_id = client_id;         /* the batch's free_unpacked owns it */
	return rc;
}

static int get_upload(struct tx *t, const char *bucket, const char *key, const char *id,
		      Iolake__Meta__MultipartUpload **u)
{
	if (!valid_bucket(bucket) || !valid_key(key) || !valid_upload_id(id))
		return -EINVAL;
	if (t->range_id) {
		int rc = range_check(t, bucket, key);
		if (rc)
			return rc;
	}
	struct key k;
	key_upload(&k, bucket, key, id);
	return tx_get_msg(t, &k, &iolake__meta__multipart_upload__descriptor, (void **)u);
}

static int op_put_part(struct tx *t, const Iolake__Meta__PutPart *op)
{
	Iolake__Meta__MultipartUpload *u = NULL;
	Iolake__Meta__Part *old = NULL;
	if (!op->part || op->part->part_number < 1 || op->part->part_number > META_PARTS_MAX)
		return -EINVAL;
	int rc = get_upload(t, op->bucket, op->key, op->upload_id, &u);
	if (rc)
		return rc;
	struct key k;
	key_part(&k, op->upload_id, op->part->part_number);
	rc = tx_get_msg(t, &k, &iolake__meta__part__descriptor, (void **)&old);
	if (rc && rc != IOL_ENOT_FOUND)
		goto out;
	/* The gateway frees a replaced part's shards: it names the part it
	 * replaces (its generation), so two racing uploads of one part
	 * number cannot both believe they replaced the same one. */
	if (op->conditional && (old ? old->generation : 0) != op->if_generation) {
		rc = IOL_ECONFLICT;
		goto out;
	}
	if (old) {
		gc_part(t, op->bucket, op->key, old);   /* re-uploaded part */
		ref_part(t, old, false);
	}
	Iolake__Meta__Part p = *op->part;
	p.upload_id = op->upload_id;
	p.generation = t->gen;
	ref_part(t, &p, true);
	rc = tx_put_msg(t, &k, &p.base);
	if (rc == 0) {
		/* Complete and Abort may require the parts unchanged since
		 * their caller listed them. */
		struct key uk;
		key_upload(&uk, op->bucket, op->key, op->upload_id);
		u->parts_generation = t->gen;
		rc = tx_put_msg(t, &uk, &u->base);
	}
out:
	meta_state_free_msg(old);
	meta_state_free_msg(u);
	return rc;
}

/* Delete an upload's parts, GC those not in keep (sorted part numbers). */
static void drop_parts(struct tx *t, const char *bucket, const char *key, const char *id,
		       const uint32_t *keep, size_t n_keep)
{
	struct key prefix;
	k_init(&prefix, 'P');
	k_str(&prefix, id);
	rocksdb_iterator_t *it = tx_iter(t, &prefix);
	size_t j = 0;
	for (; iter_has_prefix(it, &prefix); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		const char *vb = rocksdb_iter_value(it, &vn);
		struct key k;
		memcpy(k.b, kb, kn);
		k.n = kn;
		const uint8_t *nb = (const uint8_t *)kb + kn - 4;
		uint32_t num = (uint32_t)nb[0] << 24 | (uint32_t)nb[1] << 16 | (uint32_t)nb[2] << 8 | nb[3];
		while (j < n_keep && keep[j] < num)
			j++;
		if (!(j < n_keep && keep[j] == num)) {
			Iolake__Meta__Part *p =
				iolake__meta__part__unpack(NULL, vn, (const uint8_t *)vb);
			if (p) {
				gc_part(t, bucket, key, p);
				ref_part(t, p, false);
			}
			meta_state_free_msg(p);
		}
		tx_del(t, &k);
	}
	rocksdb_iter_destroy(it);
}

static int op_complete_multipart(struct tx *t, const Iolake__Meta__CompleteMultipart *op,
				 struct meta_op_result *r)
{
	Iolake__Meta__MultipartUpload *u = NULL;
	Iolake__Meta__ObjectRecord *cur = NULL;
	Iolake__Meta__Part **parts = NULL;
	Iolake__Meta__Segment *segs = NULL, **segp = NULL;
	uint32_t *nums = NULL;
	uint8_t *md5s = NULL;
	Iolake__Meta__ObjectPart *ops = NULL, **opp = NULL;
	size_t n = op->n_parts;
	int rc = get_upload(t, op->bucket, op->key, op->upload_id, &u);
	if (rc)
		return rc;
	if (op->parts_conditional && u->parts_generation != op->if_parts_generation) {
		rc = IOL_ECONFLICT;
		goto out;
	}
	if (n == 0 || n > META_PARTS_MAX) {
		rc = -EINVAL;
		goto out;
	}
	parts = calloc(n, sizeof(*parts));
	segs = calloc(n, sizeof(*segs));
	segp = calloc(n, sizeof(*segp));
	nums = calloc(n, sizeof(*nums));
	md5s = calloc(n, MD5_LEN);
	ops = calloc(n, sizeof(*ops));
	opp = calloc(n, sizeof(*opp));
	if (!parts || !segs || !segp || !nums || !md5s || !ops || !opp) {
		rc = -ENOMEM;
		t->io_err = -ENOMEM;
		goto out;
	}
	/* Order first (S3 InvalidPartOrder), before any part is looked at. */
	for (size_t i = 0; i < n; i++) {
		nums[i] = op->parts[i]->part_number;
		if (nums[i] < 1 || nums[i] > META_PARTS_MAX || (i > 0 && nums[i] <= nums[i - 1])) {
			rc = -EINVAL;
			goto out;
		}
	}
	uint64_t off = 0;
	size_t n_segs = 0;
	for (size_t i = 0; i < n; i++) {
		const Iolake__Meta__PartRef *ref = op->parts[i];
		struct key k;
		key_part(&k, op->upload_id, ref->part_number);
		rc = tx_get_msg(t, &k, &iolake__meta__part__descriptor, (void **)&parts[i]);
		if (rc == IOL_ENOT_FOUND || (rc == 0 && (strcmp(parts[i]->etag, ref->etag) != 0 ||
					     strlen(ref->etag) != 32 ||
					     hash_unhex(ref->etag, MD5_LEN, md5s + i * MD5_LEN))))
			rc = META_EINVALID_PART;
		if (rc)
			goto out;
		if (parts[i]->segment) {
			segs[n_segs] = *parts[i]->segment;
			segs[n_segs].offset = off;
			segs[n_segs].part_number = ref->part_number;
			segp[n_segs] = &segs[n_segs];
			n_segs++;
		}
		off += parts[i]->size;
		/* An upload with a checksum algorithm keeps each part's. */
		iolake__meta__object_part__init(&ops[i]);
		ops[i].part_number = ref->part_number;
		ops[i].size = parts[i]->size;
		for (size_t c = 0; c < parts[i]->n_checksums; c++)
			if (parts[i]->checksums[c]->algo == u->checksum_algo)
				ops[i].checksum = parts[i]->checksums[c];
		opp[i] = &ops[i];
	}
	struct key ok;
	key_object(&ok, op->bucket, op->key);
	rc = check_condition(t, &ok, op->if_none_match, op->if_generation, &cur);
	if (rc)
		goto out;

	/* S3's multipart ETag: MD5 of the parts' binary MD5s, "-N". */
	uint8_t d[MD5_LEN];
	char hex[2 * MD5_LEN + 1];
	hash_md5(md5s, n * MD5_LEN, d);
	hash_hex(d, MD5_LEN, hex);
	snprintf(r->etag, sizeof(r->etag), "%s-%zu", hex, n);

	Iolake__Meta__ObjectRecord rec = IOLAKE__META__OBJECT_RECORD__INIT;
	if (u->meta)
		rec = *u->meta;   /* headers, user metadata, pg, layout */
	rec.bucket = op->bucket;
	rec.key = op->key;
	rec.generation = t->gen;
	rec.size = off;
	rec.etag = r->etag;
	rec.mtime_ms = op->time_ms;
	rec.parts_count = (uint32_t)n;
	rec.n_segments = n_segs;
	rec.segments = segp;
	rec.inline_data.len = 0;
	rec.inline_data.data = NULL;
	rec.n_checksums = 0;
	rec.checksums = NULL;
	/* The object's checksum, when of the upload's algorithm and of its
	 * length (4 CRC32/CRC32C, 20 SHA1, 32 SHA256, 8 CRC64NVME). */
	static const size_t ck_len[] = { 0, 4, 4, 20, 32, 8 };
	Iolake__Meta__Checksum *ckp = op->checksum;
	if (ckp && u->checksum_algo && ckp->algo == u->checksum_algo &&
	    (unsigned)ckp->algo < sizeof(ck_len) / sizeof(ck_len[0]) &&
	    ckp->value.len == ck_len[ckp->algo]) {
		rec.n_checksums = 1;
		rec.checksums = &ckp;
	}
	rec.upload_id = op->upload_id;
	rec.n_part_list = u->checksum_algo ? n : 0;
	rec.part_list = opp;
	range_count(t, 0, 0, -1);   /* the upload; meta_ver_put_current counts the object */
	/* The kept parts' layouts move into the object: the parts stop
	 * naming them (drop_parts handles the others), the object starts. */
	for (size_t i = 0; i < n; i++)
		ref_part(t, parts[i], false);
	rc = meta_ver_put_current(t, &ok, &rec, cur, r);
	drop_parts(t, op->bucket, op->key, op->upload_id, nums, n);
	struct key uk;
	key_upload(&uk, op->bucket, op->key, op->upload_id);
	tx_del(t, &uk);
out:
	if (parts)
		for (size_t i = 0; i < n; i++)
			meta_state_free_msg(parts[i]);
	free(opp);
	free(ops);
	free(md5s);
	free(nums);
	free(segp);
	free(segs);
	free(parts);
	meta_state_free_msg(cur);
	meta_state_free_msg(u);
	return rc;
}

static int op_abort_multipart(struct tx *t, const Iolake__Meta__AbortMultipart *op)
{
	Iolake__Meta__MultipartUpload *u = NULL;
	int rc = get_upload(t, op->bucket, op->key, op->upload_id, &u);
	if (rc)
		return rc;
	if (op->parts_conditional && u->parts_generation != op->if_parts_generation) {
		meta_state_free_msg(u);
		return IOL_ECONFLICT;
	}
	drop_parts(t, op->bucket, op->key, op->upload_id, NULL, 0);
	range_count(t, 0, 0, -1);
	struct key k;
	key_upload(&k, op->bucket, op->key, op->upload_id);
	tx_del(t, &k);
	meta_state_free_msg(u);
	return 0;
}

static int op_put_user(struct tx *t, const Iolake__Meta__PutUser *op)
{
	if (!op->user || !valid_name(op->user->name))
		return -EINVAL;
	struct key k;
	k_init(&k, 'u');
	k_str(&k, op->user->name);
	if (tx_exists(t, &k))
		return IOL_EEXISTS;
	Iolake__Meta__User u = *op->user;
	u.n_access_keys = 0;   /* apply keeps this list */
	u.access_keys = NULL;
	u.n_grants = 0;        /* and SetUserGrant this one */
	u.grants = NULL;
	return tx_put_msg(t, &k, &u.base);
}

static int revoke_creds(struct tx *t, struct meta_op_result *r);

static int op_delete_user(struct tx *t, const Iolake__Meta__DeleteUser *op,
			  struct meta_op_result *r)
{
	Iolake__Meta__User *u = NULL;
	if (!valid_name(op->name))
		return -EINVAL;
	struct key k, ak;
	k_init(&k, 'u');
	k_str(&k, op->name);
	int rc = tx_get_msg(t, &k, &iolake__meta__user__descriptor, (void **)&u);
	if (rc)
		return rc;
	for (size_t i = 0; i < u->n_access_keys; i++) {
		k_init(&ak, 'K');
		k_str(&ak, u->access_keys[i]);
		tx_del(t, &ak);
	}
	tx_del(t, &k);
	meta_state_free_msg(u);
	return revoke_creds(t, r);
}

#define USER_KEYS_MAX 64
#define USER_GRANTS_MAX 32   /* gateways cache them: S3_GRANTS_MAX */

/* A key's secret: sealed (meta/secret.h's blob, which apply does not
 * open: the cluster key is not in the state), or in clear as older
 * members and a meta without --secret-key-file write it. */
static bool valid_secret(const Iolake__Meta__AccessKey *a)
{
	if (a->secret_sealed.len) {
		struct meta_secret_blob b;
		return (!a->secret_key || !a->secret_key[0]) &&
		       meta_secret_blob_parse(a->secret_sealed.data, a->secret_sealed.len, &b) == 0 &&
		       b.ct_len >= 16;
	}
	return a->secret_key && strlen(a->secret_key) >= 16 &&
	       strlen(a->secret_key) <= NAME_MAX_BYTES;
}

static int op_put_access_key(struct tx *t, const Iolake__Meta__PutAccessKey *op)
{
	const Iolake__Meta__AccessKey *a = op->key;
	Iolake__Meta__User *u = NULL;
	if (!a || !valid_name(a->access_key_id) || !valid_name(a->user) || !valid_secret(a))
		return -EINVAL;
	struct key uk, k;
	k_init(&uk, 'u');
	k_str(&uk, a->user);
	int rc = tx_get_msg(t, &uk, &iolake__meta__user__descriptor, (void **)&u);
	if (rc)
		return rc;
	k_init(&k, 'K');
	k_str(&k, a->access_key_id);
	if (tx_exists(t, &k)) {
		rc = IOL_EEXISTS;
	} else if (u->n_access_keys >= USER_KEYS_MAX) {
		rc = IOL_ETOO_LARGE;
	} else {
		char *ids[USER_KEYS_MAX];
		if (u->n_access_keys)
			memcpy(ids, u->access_keys, u->n_access_keys * sizeof(*ids));
		ids[u->n_access_keys] = a->access_key_id;
		Iolake__Meta__User nu = *u;
		nu.access_keys = ids;
		nu.n_access_keys = u->n_access_keys + 1;
		rc = tx_put_msg(t, &uk, &nu.base);
		if (!rc)
			rc = tx_put_msg(t, &k, &a->base);
	}
	meta_state_free_msg(u);
	return rc;
}

static int op_delete_access_key(struct tx *t, const Iolake__Meta__DeleteAccessKey *op,
				struct meta_op_result *r)
{
	Iolake__Meta__AccessKey *a = NULL;
	Iolake__Meta__User *u = NULL;
	if (!valid_name(op->access_key_id))
		return -EINVAL;
	struct key k, uk;
	k_init(&k, 'K');
	k_str(&k, op->access_key_id);
	int rc = tx_get_msg(t, &k, &iolake__meta__access_key__descriptor, (void **)&a);
	if (rc)
		return rc;
	k_init(&uk, 'u');
	k_str(&uk, a->user);
	if (tx_get_msg(t, &uk, &iolake__meta__user__descriptor, (void **)&u) == 0) {
		size_t w = 0;
		for (size_t i = 0; i < u->n_access_keys; i++)
			if (strcmp(u->access_keys[i], op->access_key_id) != 0)
				u->access_keys[w++] = u->access_keys[i];
			else
				free(u->access_keys[i]);
		u->n_access_keys = w;
		tx_put_msg(t, &uk, &u->base);
	}
	tx_del(t, &k);
	meta_state_free_msg(u);
	meta_state_free_msg(a);
	return revoke_creds(t, r);
}

/* Issue 16: a user's grants, admin flag and a key's secret replaced.
 * Each bumps creds_epoch (revoke_creds), as removals do: gateways cache a
 * user's grants and admin flag with its key's secret. */

static int get_user(struct tx *t, const char *name, struct key *k, Iolake__Meta__User **u)
{
	if (!valid_name(name))
		return -EINVAL;
	k_init(k, 'u');
	k_str(k, name);
	return tx_get_msg(t, k, &iolake__meta__user__descriptor, (void **)u);
}

/* Whether g still names a live bucket (the one it was granted on). */
static bool grant_live(struct tx *t, const Iolake__Meta__BucketGrant *g)
{
	Iolake__Meta__Bucket *b = NULL;
	struct key k;
	if (!valid_bucket(g->bucket))
		return false;
	k_init(&k, 'B');
	k_str(&k, g->bucket);
	if (tx_get_msg(t, &k, &iolake__meta__bucket__descriptor, (void **)&b))
		return false;
	bool live = b->created_ms == g->bucket_created_ms;
	meta_state_free_msg(b);
	return live;
}

static int op_set_user_grant(struct tx *t, const Iolake__Meta__SetUserGrant *op,
			     struct meta_op_result *r)
{
	Iolake__Meta__User *u = NULL;
	Iolake__Meta__Bucket *b = NULL;
	struct key k, bk;
	if (!valid_bucket(op->bucket) || (unsigned)op->level > IOLAKE__META__GRANT_LEVEL__GRANT_FULL)
		return -EINVAL;
	int rc = get_user(t, op->user, &k, &u);
	if (rc)
		return rc;
	if (op->level != IOLAKE__META__GRANT_LEVEL__GRANT_NONE) {
		k_init(&bk, 'B');
		k_str(&bk, op->bucket);
		rc = tx_get_msg(t, &bk, &iolake__meta__bucket__descriptor, (void **)&b);
		if (rc)
			goto out;
	}
	/* Keep the other live grants (stale ones go: their bucket is gone
	 * or another of the name), then this one. */
	Iolake__Meta__BucketGrant *keep[USER_GRANTS_MAX + 1], mine = IOLAKE__META__BUCKET_GRANT__INIT;
	size_t n = 0;
	for (size_t i = 0; i < u->n_grants; i++)
		if (strcmp(u->grants[i]->bucket, op->bucket) != 0 && grant_live(t, u->grants[i]) &&
		    n < USER_GRANTS_MAX)
			keep[n++] = u->grants[i];
	if (b) {
		if (n >= USER_GRANTS_MAX) {
			rc = IOL_ETOO_LARGE;
			goto out;
		}
		mine.bucket = op->bucket;
		mine.level = op->level;
		mine.bucket_created_ms = b->created_ms;
		keep[n++] = &mine;
	}
	Iolake__Meta__User nu = *u;
	nu.grants = keep;
	nu.n_grants = n;
	rc = tx_put_msg(t, &k, &nu.base);
	if (!rc)
		rc = revoke_creds(t, r);
out:
	meta_state_free_msg(b);
	meta_state_free_msg(u);
	return rc;
}

static int op_set_user_admin(struct tx *t, const Iolake__Meta__SetUserAdmin *op,
			     struct meta_op_result *r)
{
	Iolake__Meta__User *u = NULL;
	struct key k;
	int rc = get_user(t, op->user, &k, &u);
	if (rc)
		return rc;
	u->admin = op->admin;
	rc = tx_put_msg(t, &k, &u->base);
	meta_state_free_msg(u);
	return rc ? rc : revoke_creds(t, r);
}

static int op_reseal_access_key(struct tx *t, const Iolake__Meta__ResealAccessKey *op,
				struct meta_op_result *r)
{
	const Iolake__Meta__AccessKey *a = op->key;
	Iolake__Meta__AccessKey *old = NULL;
	if (!a || !valid_name(a->access_key_id) || !valid_secret(a))
		return -EINVAL;
	struct key k;
	k_init(&k, 'K');
	k_str(&k, a->access_key_id);
	int rc = tx_get_msg(t, &k, &iolake__meta__access_key__descriptor, (void **)&old);
	if (rc)
		return rc;
	if (!a->user || strcmp(a->user, old->user) != 0) {
		rc = IOL_ECONFLICT;
	} else {
		Iolake__Meta__AccessKey nk = *old;
		nk.secret_key = a->secret_key;
		nk.secret_sealed = a->secret_sealed;
		rc = tx_put_msg(t, &k, &nk.base);
	}
	meta_state_free_msg(old);
	return rc ? rc : revoke_creds(t, r);
}

/* ---- cluster map */

static int get_map(struct tx *t, Iolake__Meta__ClusterMap **m)
{
	struct key k;
	k_init(&k, 'M');
	return tx_get_msg(t, &k, &iolake__meta__cluster_map__descriptor, (void **)m);
}

/* A user or key was removed: bump the map's epoch and creds_epoch, so
 * gateways (which watch the map) drop the secrets they cached at once
 * rather than when their TTL runs out. Placement is untouched. Before
 * InitMap there is no map and no gateway can have served anything. */
static int revoke_creds(struct tx *t, struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	int rc = get_map(t, &m);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	m->epoch++;
	m->creds_epoch++;
	struct key k;
	k_init(&k, 'M');
	rc = tx_put_msg(t, &k, &m->base);
	r->epoch = m->epoch;
	meta_state_free_msg(m);
	return rc;
}

/*
 * Store map m with osds replaced by osds[0..n) (sorted by id), the PG
 * table recomputed from them (survivors keep slots: see place.h) and the
 * epoch bumped. The previous table comes from m itself.
 */
static int save_map(struct tx *t, Iolake__Meta__ClusterMap *m, Iolake__Meta__OsdInfo **osds,
		    size_t n, uint64_t time_ms, struct meta_op_result *r)
{
	int rc;
	uint32_t w = m->k + m->m;
	struct meta_pg_table prev = { 0 }, next = { 0 };
	struct meta_place_osd *po = calloc(n ? n : 1, sizeof(*po));
	Iolake__Meta__PgEntry *pe = calloc(m->pg_count, sizeof(*pe));
	Iolake__Meta__PgEntry **pp = calloc(m->pg_count, sizeof(*pp));
	if (!po || !pe || !pp) {
		rc = -ENOMEM;
		goto out;
	}
	rc = meta_place_table_init(&next, m->pg_count, w);
	if (rc)
		goto out;
	if (m->n_pgs == m->pg_count && meta_place_table_init(&prev, m->pg_count, w) == 0) {
		for (uint32_t pg = 0; pg < m->pg_count; pg++)
			for (uint32_t s = 0; s < w && s < m->pgs[pg]->n_osds; s++)
				prev.osds[(size_t)pg * w + s] = m->pgs[pg]->osds[s];
	}
	for (size_t i = 0; i < n; i++)
		po[i] = (struct meta_place_osd){ .id = osds[i]->id, .host = osds[i]->host,
						 .weight = osds[i]->weight, .up = osds[i]->up,
						 .in = osds[i]->in };
	struct meta_place_params p = { .pg_count = m->pg_count, .width = w,
				       .down_keeps_slot = m->down_keeps_slot };
	rc = meta_place_compute(po, n, &p, prev.osds ? &prev : NULL, &next);
	if (rc)
		goto out;
	for (uint32_t pg = 0; pg < m->pg_count; pg++) {
		iolake__meta__pg_entry__init(&pe[pg]);
		pe[pg].pg_id = pg;
		pe[pg].n_osds = w;
		pe[pg].osds = &next.osds[(size_t)pg * w];
		pp[pg] = &pe[pg];
	}
	Iolake__Meta__ClusterMap nm = *m;
	nm.epoch = m->epoch + 1;
	nm.modified_ms = time_ms;
	nm.n_osds = n;
	nm.osds = osds;
	nm.n_pgs = m->pg_count;
	nm.pgs = pp;
	struct key k;
	k_init(&k, 'M');
	rc = tx_put_msg(t, &k, &nm.base);
	r->epoch = nm.epoch;
out:
	if (rc == -ENOMEM)
		t->io_err = -ENOMEM;
	meta_place_table_free(&prev);
	meta_place_table_free(&next);
	free(pp);
	free(pe);
	free(po);
	return rc;
}

static int op_init_map(struct tx *t, const Iolake__Meta__InitMap *op, struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	uint32_t pgs = op->pg_count ? op->pg_count : META_PLACE_DEFAULT_PGS;
	if (pgs > META_PLACE_MAX_PGS || (pgs & (pgs - 1)) || op->k < 1 || op->m > 16 ||
	    op->k + op->m > META_PLACE_MAX_WIDTH)
		return -EINVAL;
	int rc = get_map(t, &m);
	if (rc == 0) {
		meta_state_free_msg(m);
		return IOL_EEXISTS;
	}
	if (rc != IOL_ENOT_FOUND)
		return rc;
	Iolake__Meta__ClusterMap nm = IOLAKE__META__CLUSTER_MAP__INIT;
	nm.pg_count = pgs;
	nm.k = op->k;
	nm.m = op->m;
	nm.down_keeps_slot = op->down_keeps_slot;
	return save_map(t, &nm, NULL, 0, op->time_ms, r);
}

static int op_register_osd(struct tx *t, const Iolake__Meta__RegisterOsd *op,
			   struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	const Iolake__Meta__OsdInfo *in = op->osd;
	if (!in || in->id == META_PLACE_NONE || !valid_name(in->host) || !in->addr)
		return -EINVAL;
	int rc = get_map(t, &m);
	if (rc)
		return rc;
	if (m->n_osds >= META_PLACE_MAX_OSDS) {
		meta_state_free_msg(m);
		return IOL_ETOO_LARGE;
	}
	Iolake__Meta__OsdInfo **osds = calloc(m->n_osds + 1, sizeof(*osds));
	if (!osds) {
		meta_state_free_msg(m);
		t->io_err = -ENOMEM;
		return -ENOMEM;
	}
	Iolake__Meta__OsdInfo fresh = *in;
	size_t n = 0;
	bool placed = false;
	for (size_t i = 0; i < m->n_osds; i++) {
		Iolake__Meta__OsdInfo *o = m->osds[i];
		if (o->id == in->id) {
			/* Re-registration: address, host, weight, capacity change;
			 * up/in and history stay. */
			fresh.up = o->up;
			fresh.in = o->in;
			fresh.admin_out = o->admin_out;
			fresh.registered_ms = o->registered_ms;
			fresh.last_heartbeat_ms = o->last_heartbeat_ms;
			osds[n++] = &fresh;
			placed = true;
			continue;
		}
		if (!placed && o->id > in->id) {
			placed = true;
			fresh.up = fresh.in = true;
			fresh.admin_out = false;
			fresh.registered_ms = fresh.last_heartbeat_ms = op->time_ms;
			osds[n++] = &fresh;
		}
		osds[n++] = o;
	}
	if (!placed) {
		fresh.up = fresh.in = true;
		fresh.admin_out = false;
		fresh.registered_ms = fresh.last_heartbeat_ms = op->time_ms;
		osds[n++] = &fresh;
	}
	rc = save_map(t, m, osds, n, op->time_ms, r);
	free(osds);
	meta_state_free_msg(m);
	return rc;
}

/* Drop an OSD that is down and out from the map; the PG table is
 * recomputed without it (it held no slot once out). */
static int op_remove_osd(struct tx *t, const Iolake__Meta__RemoveOsd *op,
			 struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	if (!op)
		return -EINVAL;
	int rc = get_map(t, &m);
	if (rc)
		return rc;
	size_t at = m->n_osds;
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == op->id)
			at = i;
	r->epoch = m->epoch;
	if (at == m->n_osds) {
		rc = IOL_ENOT_FOUND;
	} else if (m->osds[at]->up || m->osds[at]->in) {
		rc = IOL_ECONFLICT;
	} else {
		Iolake__Meta__OsdInfo *gone = m->osds[at];
		memmove(&m->osds[at], &m->osds[at + 1], (m->n_osds - at - 1) * sizeof(*m->osds));
		m->n_osds--;
		rc = save_map(t, m, m->osds, m->n_osds, op->time_ms, r);
		/* back in the array so the free below releases it */
		m->osds[m->n_osds++] = gone;
	}
	meta_state_free_msg(m);
	return rc;
}

static int op_set_osd_state(struct tx *t, const Iolake__Meta__SetOsdState *op,
			    struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	int rc = get_map(t, &m);
	if (rc)
		return rc;
	Iolake__Meta__OsdInfo *o = NULL;
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == op->id)
			o = m->osds[i];
	if (!o) {
		rc = IOL_ENOT_FOUND;
		goto out;
	}
	bool changed = false;
	if (op->set_admin_out && o->admin_out != op->admin_out) {
		o->admin_out = op->admin_out;
		changed = true;
	}
	if (op->set_up && o->up != op->up) {
		o->up = op->up;
		changed = true;
	}
	/* An operator's out is sticky: while admin_out is set nothing but
	 * the op clearing it (osd in) brings the OSD in, so a heartbeat's
	 * up+in proposal, even one queued before the out, leaves it out. */
	bool want_in = op->set_in ? op->in : o->in;
	if (o->admin_out)
		want_in = false;
	if (o->in != want_in) {
		o->in = want_in;
		changed = true;
	}
	if (op->set_up && op->up)
		o->last_heartbeat_ms = op->time_ms;
	r->epoch = m->epoch;
	if (changed)   /* no-op transitions do not bump the epoch */
		rc = save_map(t, m, m->osds, m->n_osds, op->time_ms, r);
out:
	meta_state_free_msg(m);
	return rc;
}

/* Acks are idempotent: an entry already gone (acked by another gateway's
 * worker, or twice in one batch) is skipped, so gc_removed counts only
 * what this entry really deleted. */
static int op_gc_ack(struct tx *t, const Iolake__Meta__GcAck *op)
{
	for (size_t i = 0; i < op->n_generations; i++) {
		struct key prefix;
		k_init(&prefix, 'G');
		k_u64(&prefix, op->generations[i]);
		rocksdb_iterator_t *it = tx_iter(t, &prefix);
		for (; iter_has_prefix(it, &prefix); rocksdb_iter_next(it)) {
			struct key k;
			const char *kb = rocksdb_iter_key(it, &k.n);
			memcpy(k.b, kb, k.n);
			tx_del(t, &k);
			t->gc_removed++;
		}
		rocksdb_iter_destroy(it);
	}
	for (size_t i = 0; i < op->n_entries; i++) {
		const Iolake__Meta__GcKey *e = op->entries[i];
		if (e->seq > UINT16_MAX)
			continue;   /* no such key can exist */
		struct key k;
		key_gc(&k, e->generation, (uint16_t)e->seq);
		if (tx_exists(t, &k)) {
			tx_del(t, &k);
			t->gc_removed++;
		}
	}
	return 0;
}

/* ---- tagging (only tags change: same generation, nothing queued for GC) */

/* Tag sets as the gateway checks them (S3: 10 per object, 50 per bucket,
 * keys up to 128 and values up to 256 characters, i.e. at most 4x as many
 * UTF-8 bytes); apply re-checks the byte bounds so a record stays small. */
static bool valid_tags(size_t n, const char *const *keys, const char *const *vals)
{
	if (n > META_TAGS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t kl = keys[i] ? strlen(keys[i]) : 0, vl = vals[i] ? strlen(vals[i]) : 0;
		if (kl == 0 || kl > META_TAG_KEY_MAX_BYTES || vl > META_TAG_VALUE_MAX_BYTES)
			return false;
		for (size_t j = 0; j < i; j++)
			if (strcmp(keys[i], keys[j]) == 0)
				return false;
	}
	return true;
}

/* Gather a map's keys and values (both entry types have key, value). */
#define TAGS_SPLIT(n, entries, keys, vals)              \
	do {                                            \
		for (size_t i_ = 0; i_ < (n); i_++) {   \
			(keys)[i_] = (entries)[i_]->key; \
			(vals)[i_] = (entries)[i_]->value; \
		}                                       \
	} while (0)

static int op_set_object_tags(struct tx *t, const Iolake__Meta__SetObjectTags *op)
{
	const char *keys[META_TAGS_MAX], *vals[META_TAGS_MAX];
	if (!valid_bucket(op->bucket) || !valid_key(op->key) || op->n_tags > META_TAGS_MAX)
		return -EINVAL;
	TAGS_SPLIT(op->n_tags, op->tags, keys, vals);
	if (!valid_tags(op->n_tags, keys, vals))
		return -EINVAL;
	if (t->range_id) {
		int rrc = range_check(t, op->bucket, op->key);
		if (rrc)
			return rrc;
	}
	Iolake__Meta__ObjectRecord *cur = NULL;
	struct key k;
	/* the current version, or the one Op.version_id names (issue 17) */
	int rc = meta_ver_target(t, op->bucket, op->key, op->if_generation, &cur, &k);
	if (rc)
		goto out;
	Iolake__Meta__ObjectRecord__TagsEntry ents[META_TAGS_MAX], *pents[META_TAGS_MAX];
	for (size_t i = 0; i < op->n_tags; i++) {
		iolake__meta__object_record__tags_entry__init(&ents[i]);
		ents[i].key = (char *)keys[i];
		ents[i].value = (char *)vals[i];
		pents[i] = &ents[i];
	}
	/* Swap the new tags in for the write, then back so the unpacked
	 * record frees only what it allocated. */
	size_t old_n = cur->n_tags;
	Iolake__Meta__ObjectRecord__TagsEntry **old = cur->tags;
	cur->n_tags = op->n_tags;
	cur->tags = op->n_tags ? pents : NULL;
	rc = tx_put_msg(t, &k, &cur->base);
	cur->n_tags = old_n;
	cur->tags = old;
out:
	meta_state_free_msg(cur);
	return rc;
}

static int op_set_object_acl(struct tx *t, const Iolake__Meta__SetObjectAcl *op)
{
	if (!valid_bucket(op->bucket) || !valid_key(op->key) || !valid_acl(op->acl))
		return -EINVAL;
	if (t->range_id) {
		int rrc = range_check(t, op->bucket, op->key);
		if (rrc)
			return rrc;
	}
	Iolake__Meta__ObjectRecord *cur = NULL;
	struct key k;
	/* the current version, or the one Op.version_id names (issue 17) */
	int rc = meta_ver_target(t, op->bucket, op->key, op->if_generation, &cur, &k);
	if (rc == 0) {
		/* Swap the new ACL in for the write, then back (as tags). */
		Iolake__Meta__Acl *old = cur->acl;
		cur->acl = op->acl;
		rc = tx_put_msg(t, &k, &cur->base);
		cur->acl = old;
	}
	meta_state_free_msg(cur);
	return rc;
}

static int op_set_bucket_access(struct tx *t, const Iolake__Meta__SetBucketAccess *op)
{
	if (!valid_bucket(op->name) || !valid_acl(op->acl) ||
	    !valid_ownership(op->object_ownership) || !valid_policy(op->policy))
		return -EINVAL;
	Iolake__Meta__Bucket *b = NULL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, op->name);
	int rc = tx_get_msg(t, &k, &iolake__meta__bucket__descriptor, (void **)&b);
	if (rc)
		return rc;
	if (op->conditional && b->generation != op->if_generation) {
		meta_state_free_msg(b);
		return IOL_ECONFLICT;
	}
	/* Swap the new values in for the write, then back (b owns the old). */
	Iolake__Meta__Acl *old = b->acl;
	char *old_policy = b->policy;
	Iolake__Meta__PublicAccessBlock *old_pab = b->public_access_block;
	if (op->set_acl)
		b->acl = op->acl;
	if (op->set_ownership)
		b->object_ownership = op->object_ownership;
	if (op->set_policy)
		b->policy = op->policy ? op->policy : (char *)"";
	if (op->set_public_access_block)
		b->public_access_block = op->public_access_block;
	b->generation = t->gen;
	rc = tx_put_msg(t, &k, &b->base);
	b->acl = old;
	b->policy = old_policy;
	b->public_access_block = old_pab;
	meta_state_free_msg(b);
	return rc;
}

static int op_set_bucket_tags(struct tx *t, const Iolake__Meta__SetBucketTags *op)
{
	const char *keys[META_TAGS_MAX], *vals[META_TAGS_MAX];
	if (!valid_bucket(op->name) || op->n_tags > META_TAGS_MAX)
		return -EINVAL;
	TAGS_SPLIT(op->n_tags, op->tags, keys, vals);
	if (!valid_tags(op->n_tags, keys, vals))
		return -EINVAL;
	Iolake__Meta__Bucket *b = NULL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, op->name);
	int rc = tx_get_msg(t, &k, &iolake__meta__bucket__descriptor, (void **)&b);
	if (rc)
		return rc;
	Iolake__Meta__Bucket__TagsEntry ents[META_TAGS_MAX], *pents[META_TAGS_MAX];
	for (size_t i = 0; i < op->n_tags; i++) {
		iolake__meta__bucket__tags_entry__init(&ents[i]);
		ents[i].key = (char *)keys[i];
		ents[i].value = (char *)vals[i];
		pents[i] = &ents[i];
	}
	size_t old_n = b->n_tags;
	Iolake__Meta__Bucket__TagsEntry **old = b->tags;
	b->n_tags = op->n_tags;
	b->tags = op->n_tags ? pents : NULL;
	rc = tx_put_msg(t, &k, &b->base);
	b->n_tags = old_n;
	b->tags = old;
	meta_state_free_msg(b);
	return rc;
}

/* A CORS configuration as apply accepts it: its shape only (the gateway
 * validated the rules' values before proposing). */
static bool valid_cors(const Iolake__Meta__CorsConfig *c)
{
	if (!c)
		return true;
	if (c->n_rules > META_CORS_RULES_MAX)
		return false;
	for (size_t i = 0; i < c->n_rules; i++) {
		const Iolake__Meta__CorsRule *r = c->rules[i];
		if (!r || r->n_allowed_origins == 0 || r->n_allowed_methods == 0)
			return false;
	}
	return true;
}

static int op_set_bucket_cors(struct tx *t, const Iolake__Meta__SetBucketCors *op)
{
	if (!valid_bucket(op->name) || !valid_cors(op->cors))
		return -EINVAL;
	Iolake__Meta__Bucket *b = NULL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, op->name);
	int rc = tx_get_msg(t, &k, &iolake__meta__bucket__descriptor, (void **)&b);
	if (rc)
		return rc;
	/* Swap the new configuration in for the write, then back (b owns the old). */
	Iolake__Meta__CorsConfig *old = b->cors;
	b->cors = op->cors && op->cors->n_rules ? op->cors : NULL;
	rc = tx_put_msg(t, &k, &b->base);
	b->cors = old;
	meta_state_free_msg(b);
	return rc;
}

/* ---- the table of Raft groups (root group) */

static void key_group(struct key *k, uint64_t id)
{
	k_init(k, 'g');
	k_u64(k, id);
}

/* "host:port" with a non-empty host and a port 1..65535, short enough for
 * a member address. */
static bool valid_member_addr(const char *a)
{
	size_t n = a ? strlen(a) : 0;
	const char *colon = n ? strrchr(a, ':') : NULL;
	if (!colon || colon == a || n >= 64)
		return false;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	return *end == 0 && end != colon + 1 && port >= 1 && port <= 65535;
}

/* Live (not deleted) groups in the table, up to META_GROUPS_MAX + 1. */
static int count_live_groups(struct tx *t, size_t *out)
{
	struct key lo;
	k_init(&lo, 'g');
	size_t n = 0;
	int rc = 0;
	rocksdb_iterator_t *it = tx_iter(t, &lo);
	for (; iter_has_prefix(it, &lo) && n <= META_GROUPS_MAX; rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__GroupDesc *g = (Iolake__Meta__GroupDesc *)protobuf_c_message_unpack(
			&iolake__meta__group_desc__descriptor, NULL, vn, (const uint8_t *)vb);
		if (!g) {
			t->io_err = -EIO;   /* our own encoding: on-disk corruption */
			rc = IOL_ECORRUPT;
			break;
		}
		if (!g->deleted)
			n++;
		meta_state_free_msg(g);
	}
	rocksdb_iter_destroy(it);
	*out = n;
	return rc;
}

static int op_create_group(struct tx *t, const Iolake__Meta__CreateGroup *op,
			   struct meta_op_result *r)
{
	const Iolake__Meta__GroupDesc *d = op->group;
	if (!d || d->id == 0 || d->n_voters == 0 || d->n_voters > META_GROUP_VOTERS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < d->n_voters; i++) {
		if (!d->voters[i] || d->voters[i]->id == 0 || !valid_member_addr(d->voters[i]->address))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (d->voters[j]->id == d->voters[i]->id)
				return -EINVAL;
	}
	struct key k;
	key_group(&k, d->id);
	if (tx_exists(t, &k))
		return IOL_EEXISTS;   /* live or a tombstone: ids are never reused */
	if (t->io_err)
		return t->io_err;
	size_t live;
	int rc = count_live_groups(t, &live);
	if (rc)
		return rc;
	if (live >= META_GROUPS_MAX)
		return -EINVAL;
	Iolake__Meta__GroupDesc g = *d;
	g.deleted = false;
	g.created_index = t->index;
	g.deleted_index = 0;
	rc = tx_put_msg(t, &k, &g.base);
	if (rc == 0)
		r->groups = true;
	return rc;
}

static int op_delete_group(struct tx *t, const Iolake__Meta__DeleteGroup *op,
			   struct meta_op_result *r)
{
	if (op->id == 0)
		return -EINVAL;
	struct key k;
	key_group(&k, op->id);
	Iolake__Meta__GroupDesc *g = NULL;
	int rc = tx_get_msg(t, &k, &iolake__meta__group_desc__descriptor, (void **)&g);
	if (rc)
		return rc;
	if (g->deleted) {
		meta_state_free_msg(g);
		return IOL_ENOT_FOUND;
	}
	g->deleted = true;
	g->deleted_index = t->index;
	rc = tx_put_msg(t, &k, &g->base);
	meta_state_free_msg(g);
	if (rc == 0)
		r->groups = true;
	return rc;
}


/* ---- key ranges: meta/state_range.c */

static int apply_body(struct tx *t, Iolake__Meta__Op *op, struct meta_op_result *r)
{
	t->range_id = op->range_id;
	t->versioning = op->versioning;
	t->version_id = op->version_id;
	t->time_ms = op->time_ms;
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
	case IOLAKE__META__OP__BODY_PUT_ACCESS_KEY: return op_put_access_key(t, op->put_access_key);
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
	case IOLAKE__META__OP__BODY_GC_ACK: return op_gc_ack(t, op->gc_ack);
	case IOLAKE__META__OP__BODY_PUT_OBJECT_TAGS:
		return op_set_object_tags(t, op->put_object_tags);
	case IOLAKE__META__OP__BODY_PUT_BUCKET_TAGS:
		return op_set_bucket_tags(t, op->put_bucket_tags);
	case IOLAKE__META__OP__BODY_SET_BUCKET_CORS:
		return op_set_bucket_cors(t, op->set_bucket_cors);
	case IOLAKE__META__OP__BODY_SET_BUCKET_VERSIONING:
		return meta_ver_set_bucket(t, op->set_bucket_versioning);
	case IOLAKE__META__OP__BODY_CREATE_GROUP: return op_create_group(t, op->create_group, r);
	case IOLAKE__META__OP__BODY_DELETE_GROUP:
		if (group_holds_ranges(t, op->delete_group->id))
			return IOL_ECONFLICT;   /* its ranges would lose their records */
		return op_delete_group(t, op->delete_group, r);
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
	default: return -EINVAL;
	}
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
 * One op with exactly-once semantics. The request table keeps each
 * client's results for ids in [pruned_below, ...); pruned_below rises to
 * the client's acked_below and to keep at most META_DEDUPE_WINDOW ids, so
 * the table is bounded per client. A retry of a pruned id is answered
 * STALE rather than applied again.
 */
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
	if (tx_get_msg(t, &rk, &iolake__meta__op_result__descriptor, (void **)&prior) == 0) {
		result_from_msg(prior, r);
		r->deduped = true;
		meta_state_free_msg(prior);
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
	tx_put_msg(t, &rk, &m.base);

	uint64_t want = op->acked_below;
	if (op->request_id >= META_DEDUPE_WINDOW && op->request_id - META_DEDUPE_WINDOW + 1 > want)
		want = op->request_id - META_DEDUPE_WINDOW + 1;
	if (want > op->request_id)
		want = op->request_id;   /* keep the answer just stored */
	if (want > pruned) {
		struct key lo, hi;
		key_request(&lo, op->client_id, pruned);
		key_request(&hi, op->client_id, want);
		rocksdb_iterator_t *it = tx_iter(t, &lo);
		for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
			struct key k;
			const char *kb = rocksdb_iter_key(it, &k.n);
			if (k.n != hi.n || memcmp(kb, hi.b, hi.n) >= 0)
				break;
			memcpy(k.b, kb, k.n);
			tx_del(t, &k);
		}
		rocksdb_iter_destroy(it);
		pruned = want;
	}
	t->sess_pruned = pruned;
	t->sess_dirty = true;
}

/* ------------------------------------------------------- entry framing */

size_t meta_state_entry_size(const Iolake__Meta__OpBatch *b)
{
	size_t n = 8 + iolake__meta__op_batch__get_packed_size(b);
	return (n + 7) & ~(size_t)7;
}

long meta_state_entry_encode(const Iolake__Meta__OpBatch *b, uint8_t *buf, size_t cap)
{
	size_t payload = iolake__meta__op_batch__get_packed_size(b);
	size_t total = (8 + payload + 7) & ~(size_t)7;
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

static int write_batch(struct meta_state *s, rocksdb_writebatch_wi_t *wb)
{
	char *err = NULL;
	rocksdb_write_writebatch_wi(s->db, s->wo, wb, &err);
	if (err) {
		fprintf(stderr, "meta/state: write: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
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
	t.wb = rocksdb_writebatch_wi_create(0, 1);
	if (a.oom) {
		rc = -ENOMEM;   /* not the entry's fault: must not be skipped */
		goto out_wb;
	}
	if (!b) {
		/* Every member decodes the same bytes the same way: record the
		 * index so all skip it, and tell the caller. */
		put_applied(t.wb, raft_index);
		rc = write_batch(s, t.wb);
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
	if (t.io_err) {
		rc = -EIO;
		goto out_batch;
	}
	put_applied(t.wb, raft_index);
	rc = write_batch(s, t.wb);
	if (rc == 0) {
		s->applied = raft_index;
		atomic_fetch_add(&s->gc_entries, t.gc_added - t.gc_removed);
		rc = (int)b->n_ops;
	}
out_batch:
	meta_state_free_msg(t.rng);
out_wb:
	arena_release(&a);
	rocksdb_writebatch_wi_destroy(t.wb);
	return rc;
}

/* ------------------------------------------------------- open / close */

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

/* Entries under 'G' (at open; applies keep the count after). */
static uint64_t gc_scan(struct meta_state *s)
{
	uint64_t n = 0;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, "G", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn == 0 || kb[0] != 'G')
			break;
		n++;
	}
	rocksdb_iter_destroy(it);
	return n;
}

/* Build the reference index from the 'O' and 'P' tables, replacing any
 * 'X' keys, and mark it current ("X" = the applied index), in one write.
 * For a state written before the index existed, or last applied by a
 * binary that did not keep it (open, import): every member derives the
 * same keys from the same records. Memory: one batch of all the index keys
 * (~30 bytes per live layout), once. 0, -EIO, -ENOMEM. */
static int ref_build(struct meta_state *s)
{
	struct tx t = { .s = s };
	t.wb = rocksdb_writebatch_wi_create(0, 1);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, "X", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn == 0 || kb[0] != 'X')
			break;
		rocksdb_writebatch_wi_delete(t.wb, kb, kn);
	}
	uint64_t records = 0;
	for (const char *tab = "OPV"; *tab && !t.io_err; tab++) {
		for (rocksdb_iter_seek(it, tab, 1); rocksdb_iter_valid(it) && !t.io_err;
		     rocksdb_iter_next(it)) {
			size_t kn, vn;
			const char *kb = rocksdb_iter_key(it, &kn);
			if (kn == 0 || kb[0] != *tab)
				break;
			const uint8_t *vb = (const uint8_t *)rocksdb_iter_value(it, &vn);
			if (*tab != 'P') {   /* 'O' and 'V': object versions */
				Iolake__Meta__ObjectRecord *r =
					iolake__meta__object_record__unpack(NULL, vn, vb);
				if (!r) {
					t.io_err = IOL_ECORRUPT;
					break;
				}
				ref_record(&t, r, r->generation, true);
				meta_state_free_msg(r);
			} else {
				Iolake__Meta__Part *pt = iolake__meta__part__unpack(NULL, vn, vb);
				if (!pt) {
					t.io_err = IOL_ECORRUPT;
					break;
				}
				ref_part(&t, pt, true);
				meta_state_free_msg(pt);
			}
			records++;
		}
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	if (err) {
		rocksdb_free(err);
		t.io_err = -EIO;
	}
	int rc = t.io_err;
	if (rc == 0) {
		char v[8];
		put_be64(v, s->applied);
		rocksdb_writebatch_wi_put(t.wb, "X", 1, v, 8);
		rc = write_batch(s, t.wb);
	}
	rocksdb_writebatch_wi_destroy(t.wb);
	if (rc == 0 && records)
		fprintf(stderr, "meta/state: built the shard reference index from %llu records\n",
			(unsigned long long)records);
	return rc;
}

int meta_state_open(const char *dir, const struct meta_state_opts *opts, struct meta_state **out)
{
	int rc = -EIO;
	char *err = NULL;
	struct meta_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
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
	 * cache of cache_bytes (index and filter blocks outside the cache
	 * would grow with the number of records), memtables are at most two
	 * of write_buffer_bytes. On the final options: the tuned path above
	 * replaced s->opts. */
	uint64_t cache_bytes = opts && opts->cache_bytes ? opts->cache_bytes : META_STATE_CACHE_BYTES;
	uint64_t wbuf_bytes = opts && opts->write_buffer_bytes ? opts->write_buffer_bytes
							    : META_STATE_WRITE_BUFFER_BYTES;
	if (opts && opts->cache) {
		s->cache = opts->cache->cache;
	} else {
		s->cache = rocksdb_cache_create_lru(cache_bytes);
		s->own_cache = true;
	}
	s->bbto = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(s->bbto, s->cache);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(s->bbto, 1);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(s->bbto, 1);
	rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(s->bbto, 1);
	rocksdb_options_set_block_based_table_factory(s->opts, s->bbto);
	rocksdb_options_set_write_buffer_size(s->opts, wbuf_bytes);
	rocksdb_options_set_max_write_buffer_number(s->opts, 2);
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
		bool ok = n == 4 && (uint8_t)v[3] == FORMAT_VERSION && !v[0] && !v[1] && !v[2];
		rocksdb_free(v);
		if (!ok) {
			rc = IOL_EBAD_FORMAT;
			goto out_fail;
		}
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
	if (s->db)
		rocksdb_close(s->db);
	rocksdb_writeoptions_destroy(s->wo);
	rocksdb_readoptions_destroy(s->ro);
	rocksdb_options_destroy(s->opts);
	if (s->bbto)
		rocksdb_block_based_options_destroy(s->bbto);
	if (s->cache && s->own_cache)
		rocksdb_cache_destroy(s->cache);
	free(s);
}

int meta_state_cache_new(uint64_t bytes, struct meta_state_cache **out)
{
	struct meta_state_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cache = rocksdb_cache_create_lru(bytes ? bytes : META_STATE_CACHE_BYTES);
	if (!c->cache) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void meta_state_cache_free(struct meta_state_cache *c)
{
	if (!c)
		return;
	rocksdb_cache_destroy(c->cache);
	free(c);
}

uint64_t meta_state_cache_usage(const struct meta_state_cache *c)
{
	return c ? (uint64_t)rocksdb_cache_get_usage(c->cache) : 0;
}

uint64_t meta_state_applied_index(const struct meta_state *s)
{
	return s->applied;
}

/* -------------------------------------------------------------- reads */

int read_msg(struct meta_state *s, const struct key *k, const ProtobufCMessageDescriptor *d,
		    void **out)
{
	char *v;
	size_t n;
	int rc = db_get(s, k, &v, &n);
	if (rc)
		return rc;
	*out = protobuf_c_message_unpack(d, NULL, n, (const uint8_t *)v);
	rocksdb_free(v);
	return *out ? 0 : IOL_ECORRUPT;
}

int meta_state_get_bucket(struct meta_state *s, const char *name, Iolake__Meta__Bucket **out)
{
	if (!valid_bucket(name))
		return -EINVAL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, name);
	return read_msg(s, &k, &iolake__meta__bucket__descriptor, (void **)out);
}

/* Every record of one table (keys starting with `table`), unpacked with
 * desc, in key order, at most max; keep (may be NULL) filters. The array
 * and its messages are the caller's (meta_state_free_msg each, free). */
/* Records under the key prefix pfx[0..pn), in key order. */
int list_prefix(struct meta_state *s, const char *pfx, size_t pn,
		       const ProtobufCMessageDescriptor *desc,
		       bool (*keep)(const ProtobufCMessage *m, const void *arg), const void *arg,
		       size_t max, ProtobufCMessage ***out, size_t *n_out)
{
	int rc = 0;
	size_t n = 0, cap = 16;
	ProtobufCMessage **v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, pfx, pn); rocksdb_iter_valid(it) && n < max;
	     rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn < pn || memcmp(kb, pfx, pn) != 0)
			break;
		const char *vb = rocksdb_iter_value(it, &vn);
		ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, vn, (const uint8_t *)vb);
		if (!m) {
			rc = IOL_ECORRUPT;
			break;
		}
		if (keep && !keep(m, arg)) {
			meta_state_free_msg(m);
			continue;
		}
		if (n == cap) {
			ProtobufCMessage **nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv) {
				meta_state_free_msg(m);
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap *= 2;
		}
		v[n++] = m;
	}
	rocksdb_iter_destroy(it);
	if (rc) {
		for (size_t i = 0; i < n; i++)
			meta_state_free_msg(v[i]);
		free(v);
		return rc;
	}
	*out = v;
	*n_out = n;
	return 0;
}

static int list_table(struct meta_state *s, char table, const ProtobufCMessageDescriptor *desc,
		      bool (*keep)(const ProtobufCMessage *m, const void *arg), const void *arg,
		      size_t max, ProtobufCMessage ***out, size_t *n_out)
{
	return list_prefix(s, &table, 1, desc, keep, arg, max, out, n_out);
}

static bool bucket_owned_by(const ProtobufCMessage *m, const void *owner)
{
	return strcmp(((const Iolake__Meta__Bucket *)m)->owner, owner) == 0;
}

int meta_state_list_buckets(struct meta_state *s, const char *owner, Iolake__Meta__Bucket ***out,
			    size_t *n_out)
{
	return list_table(s, 'B', &iolake__meta__bucket__descriptor, owner ? bucket_owned_by : NULL,
			  owner, META_LIST_BUCKETS_MAX, (ProtobufCMessage ***)out, n_out);
}

int meta_state_list_groups(struct meta_state *s, Iolake__Meta__GroupDesc ***out, size_t *n_out)
{
	return list_table(s, 'g', &iolake__meta__group_desc__descriptor, NULL, NULL, SIZE_MAX,
			  (ProtobufCMessage ***)out, n_out);
}

int meta_state_list_users(struct meta_state *s, Iolake__Meta__User ***out, size_t *n_out)
{
	return list_table(s, 'u', &iolake__meta__user__descriptor, NULL, NULL,
			  META_LIST_USERS_MAX, (ProtobufCMessage ***)out, n_out);
}

int meta_state_head_object(struct meta_state *s, const char *bucket, const char *key,
			   Iolake__Meta__ObjectRecord **out)
{
	if (!valid_bucket(bucket) || !valid_key(key))
		return -EINVAL;
	struct key k;
	key_object(&k, bucket, key);
	return read_msg(s, &k, &iolake__meta__object_record__descriptor, (void **)out);
}

int meta_state_get_upload(struct meta_state *s, const char *bucket, const char *key,
			  const char *upload_id, Iolake__Meta__MultipartUpload **out)
{
	if (!valid_bucket(bucket) || !valid_key(key) || !valid_upload_id(upload_id))
		return -EINVAL;
	struct key k;
	key_upload(&k, bucket, key, upload_id);
	return read_msg(s, &k, &iolake__meta__multipart_upload__descriptor, (void **)out);
}

int meta_state_get_part(struct meta_state *s, const char *upload_id, uint32_t part_number,
			Iolake__Meta__Part **out)
{
	if (!valid_upload_id(upload_id))
		return -EINVAL;
	struct key k;
	key_part(&k, upload_id, part_number);
	return read_msg(s, &k, &iolake__meta__part__descriptor, (void **)out);
}

/* Append m to a growing array; 0 or -ENOMEM (m then freed). */
static int push_msg(ProtobufCMessage ***v, size_t *n, size_t *cap, ProtobufCMessage *m)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		ProtobufCMessage **nv = realloc(*v, nc * sizeof(**v));
		if (!nv) {
			meta_state_free_msg(m);
			return -ENOMEM;
		}
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = m;
	return 0;
}

static void free_msgs(ProtobufCMessage **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

int meta_state_list_parts(struct meta_state *s, const char *upload_id, uint32_t marker,
			  uint32_t max, Iolake__Meta__Part ***out, size_t *n_out, bool *truncated)
{
	if (!valid_upload_id(upload_id))
		return -EINVAL;
	if (max == 0 || max > META_PARTS_MAX)
		max = META_PARTS_MAX;
	struct key prefix, lo;
	k_init(&prefix, 'P');
	k_str(&prefix, upload_id);
	key_part(&lo, upload_id, marker + 1);
	ProtobufCMessage **v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	*truncated = false;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, lo.b, lo.n); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn < prefix.n || memcmp(kb, prefix.b, prefix.n) != 0)
			break;
		if (n == max) {
			*truncated = true;
			break;
		}
		const char *vb = rocksdb_iter_value(it, &vn);
		ProtobufCMessage *m = protobuf_c_message_unpack(&iolake__meta__part__descriptor, NULL,
								vn, (const uint8_t *)vb);
		if (!m) {
			rc = IOL_ECORRUPT;
			break;
		}
		if ((rc = push_msg(&v, &n, &cap, m)))
			break;
	}
	rocksdb_iter_destroy(it);
	if (rc) {
		free_msgs(v, n);
		return rc;
	}
	*out = (Iolake__Meta__Part **)v;
	*n_out = n;
	return 0;
}

int meta_state_get_user(struct meta_state *s, const char *name, Iolake__Meta__User **out)
{
	if (!valid_name(name))
		return -EINVAL;
	struct key k;
	k_init(&k, 'u');
	k_str(&k, name);
	return read_msg(s, &k, &iolake__meta__user__descriptor, (void **)out);
}

int meta_state_get_access_key(struct meta_state *s, const char *access_key_id,
			      Iolake__Meta__AccessKey **out)
{
	if (!valid_name(access_key_id))
		return -EINVAL;
	struct key k;
	k_init(&k, 'K');
	k_str(&k, access_key_id);
	return read_msg(s, &k, &iolake__meta__access_key__descriptor, (void **)out);
}

int meta_state_get_map(struct meta_state *s, Iolake__Meta__ClusterMap **out)
{
	struct key k;
	k_init(&k, 'M');
	return read_msg(s, &k, &iolake__meta__cluster_map__descriptor, (void **)out);
}

int meta_state_gc_count(struct meta_state *s, uint64_t *n)
{
	*n = atomic_load(&s->gc_entries);
	return 0;
}

int meta_state_list_gc(struct meta_state *s, uint64_t after_gen, uint32_t after_seq,
		       uint32_t max, Iolake__Meta__GcEntry ***out, size_t *n_out, bool *truncated)
{
	if (max == 0 || max > META_LIST_GC_MAX)
		max = META_LIST_GC_MAX;
	/* Seek to the cursor itself and step over it when it is still there:
	 * a cursor past UINT16_MAX seqs starts at the next generation. */
	struct key lo;
	bool skip_lo = after_gen || after_seq;
	if (after_seq > UINT16_MAX) {
		key_gc(&lo, after_gen + 1, 0);
		skip_lo = false;
	} else {
		key_gc(&lo, after_gen, (uint16_t)after_seq);
	}
	ProtobufCMessage **v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	*truncated = false;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, lo.b, lo.n); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn == 0 || kb[0] != 'G')
			break;
		if (kn != lo.n) {
			rc = IOL_ECORRUPT;
			break;
		}
		if (skip_lo && memcmp(kb, lo.b, kn) == 0)
			continue;   /* the cursor: returned by the previous page */
		if (n == max) {
			*truncated = true;
			break;
		}
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__GcEntry *e = malloc(sizeof(*e));
		if (!e) {
			rc = -ENOMEM;
			break;
		}
		iolake__meta__gc_entry__init(e);
		e->generation = get_be64(kb + 1);
		e->seq = (uint32_t)(uint8_t)kb[9] << 8 | (uint8_t)kb[10];
		e->record = iolake__meta__object_record__unpack(NULL, vn, (const uint8_t *)vb);
		if (!e->record) {
			free(e);
			rc = IOL_ECORRUPT;
			break;
		}
		if ((rc = push_msg(&v, &n, &cap, &e->base)))
			break;   /* push_msg freed e */
	}
	rocksdb_iter_destroy(it);
	if (rc) {
		free_msgs(v, n);
		return rc;
	}
	*out = (Iolake__Meta__GcEntry **)v;
	*n_out = n;
	return 0;
}

int meta_state_check_refs(struct meta_state *s, uint32_t pg, const uint8_t *const *ids,
			  size_t n, bool *referenced)
{
	if (n > META_CHECK_SHARDS_MAX)
		return -EINVAL;
	if (n == 0)
		return 0;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (size_t i = 0; i < n; i++) {
		struct key k;
		key_ref(&k, pg, ids[i]);
		rocksdb_iter_seek(it, k.b, k.n);
		referenced[i] = iter_has_prefix(it, &k);
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	if (err) {
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

/* ---------------------------------------------------- object iterator */

struct meta_state_objiter {
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	struct key prefix;     /* 'O' (or 'U') bucket 0x00 */
	struct key upper;      /* 'O' (or 'U') bucket 0x01 */
	size_t seek_max;       /* a seek target longer than this is past every key */
	char *err;
};

static int iter_new(struct meta_state *s, char table, const char *bucket, size_t seek_max,
		    struct meta_state_objiter **out)
{
	if (!valid_bucket(bucket))
		return -EINVAL;
	struct meta_state_objiter *it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->seek_max = seek_max;
	k_init(&it->prefix, table);
	k_str(&it->prefix, bucket);
	k_byte(&it->prefix, 0);
	it->upper = it->prefix;
	it->upper.b[it->upper.n - 1] = 1;
	it->ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(it->ro, it->upper.b, it->upper.n);
	it->it = rocksdb_create_iterator(s->db, it->ro);
	rocksdb_iter_seek(it->it, it->prefix.b, it->prefix.n);
	*out = it;
	return 0;
}

int meta_state_objiter_new(struct meta_state *s, const char *bucket,
			   struct meta_state_objiter **out)
{
	return iter_new(s, 'O', bucket, META_KEY_MAX + 1, out);
}

int meta_state_uploaditer_new(struct meta_state *s, const char *bucket,
			      struct meta_state_objiter **out)
{
	/* key 0x00 upload id: at most META_KEY_MAX + 1 + 16 bytes. */
	return iter_new(s, 'U', bucket, META_KEY_MAX + 1 + 16 + 1, out);
}

void meta_state_objiter_seek(struct meta_state_objiter *it, const char *key, size_t len)
{
	struct key k = it->prefix;
	if (len > it->seek_max)
		len = it->seek_max;   /* past every valid key of that prefix */
	memcpy(k.b + k.n, key, len);
	k.n += len;
	rocksdb_iter_seek(it->it, k.b, k.n);
}

bool meta_state_objiter_valid(const struct meta_state_objiter *it)
{
	if (!rocksdb_iter_valid(it->it))
		return false;
	size_t n;
	const char *k = rocksdb_iter_key(it->it, &n);
	return n > it->prefix.n && memcmp(k, it->prefix.b, it->prefix.n) == 0;
}

const char *meta_state_objiter_key(const struct meta_state_objiter *it, size_t *len)
{
	size_t n;
	const char *k = rocksdb_iter_key(it->it, &n);
	*len = n - it->prefix.n;
	return k + it->prefix.n;
}

int meta_state_objiter_record(const struct meta_state_objiter *it,
			      Iolake__Meta__ObjectRecord **out)
{
	size_t n;
	const char *v = rocksdb_iter_value(it->it, &n);
	*out = iolake__meta__object_record__unpack(NULL, n, (const uint8_t *)v);
	return *out ? 0 : IOL_ECORRUPT;
}

bool meta_state_objiter_is_marker(const struct meta_state_objiter *it)
{
	size_t n;
	const char *v = rocksdb_iter_value(it->it, &n);
	return meta_ver_is_marker((const uint8_t *)v, n);
}

int meta_state_objiter_upload(const struct meta_state_objiter *it,
			      Iolake__Meta__MultipartUpload **out)
{
	size_t n;
	const char *v = rocksdb_iter_value(it->it, &n);
	*out = iolake__meta__multipart_upload__unpack(NULL, n, (const uint8_t *)v);
	return *out ? 0 : IOL_ECORRUPT;
}

void meta_state_objiter_next(struct meta_state_objiter *it)
{
	rocksdb_iter_next(it->it);
}

int meta_state_objiter_error(const struct meta_state_objiter *it)
{
	char *err = NULL;
	rocksdb_iter_get_error(it->it, &err);
	if (err) {
		fprintf(stderr, "meta/state: iterate: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

void meta_state_objiter_free(struct meta_state_objiter *it)
{
	if (!it)
		return;
	rocksdb_iter_destroy(it->it);
	rocksdb_readoptions_destroy(it->ro);
	free(it);
}

/* ------------------------------------------------ digest and snapshots */

/* Walk every pair of one consistent view. */
static int for_each_pair(struct meta_state *s,
			 void (*fn)(void *arg, const char *k, size_t kn, const char *v, size_t vn),
			 void *arg)
{
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(s->db);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(ro, snap);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro);
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *k = rocksdb_iter_key(it, &kn);
		const char *v = rocksdb_iter_value(it, &vn);
		fn(arg, k, kn, v, vn);
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	rocksdb_release_snapshot(s->db, snap);
	if (err) {
		fprintf(stderr, "meta/state: scan: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void digest_pair(void *arg, const char *k, size_t kn, const char *v, size_t vn)
{
	struct hash_stream *h = arg;
	uint8_t len[4];
	le32(len, (uint32_t)kn);
	hash_stream_update(h, len, 4);
	hash_stream_update(h, k, kn);
	le32(len, (uint32_t)vn);
	hash_stream_update(h, len, 4);
	hash_stream_update(h, v, vn);
}

int meta_state_digest(struct meta_state *s, uint8_t out[32])
{
	struct hash_stream *h = hash_stream_new(HASH_SHA256);
	if (!h)
		return -ENOMEM;
	int rc = for_each_pair(s, digest_pair, h);
	hash_stream_final(h, out);
	hash_stream_free(h);
	return rc;
}

struct export_ctx {
	uint8_t *buf;      /* NULL: sizing pass */
	size_t off;
	uint64_t count;
};

static void export_pair(void *arg, const char *k, size_t kn, const char *v, size_t vn)
{
	struct export_ctx *e = arg;
	if (e->buf) {
		le32(e->buf + e->off, (uint32_t)kn);
		le32(e->buf + e->off + 4, (uint32_t)vn);
		memcpy(e->buf + e->off + 8, k, kn);
		memcpy(e->buf + e->off + 8 + kn, v, vn);
	}
	e->off += 8 + kn + vn;
	e->count++;
}

int meta_state_export(struct meta_state *s, void *(*alloc)(size_t), void (*release)(void *),
		      uint8_t **out, size_t *len)
{
	/* One RocksDB snapshot for both passes, so size and bytes agree. */
	int rc = 0;
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(s->db);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(ro, snap);
	struct export_ctx e = { .off = 16 };
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		if (pass == 1) {
			e.buf = alloc(e.off + SHA256_LEN);
			if (!e.buf) {
				rc = -ENOMEM;
				break;
			}
			memcpy(e.buf, SNAP_MAGIC, 8);
			for (int i = 0; i < 8; i++)
				e.buf[8 + i] = (uint8_t)(e.count >> (8 * i));
			e.off = 16;
			e.count = 0;
		}
		rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro);
		for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
			size_t kn, vn;
			const char *k = rocksdb_iter_key(it, &kn);
			const char *v = rocksdb_iter_value(it, &vn);
			export_pair(&e, k, kn, v, vn);
		}
		char *err = NULL;
		rocksdb_iter_get_error(it, &err);
		rocksdb_iter_destroy(it);
		if (err) {
			fprintf(stderr, "meta/state: export: %s\n", err);
			rocksdb_free(err);
			rc = -EIO;
		}
	}
	if (rc == 0) {
		hash_sha256(e.buf, e.off, e.buf + e.off);
		*out = e.buf;
		*len = e.off + SHA256_LEN;
	} else if (e.buf) {
		release(e.buf);
	}
	rocksdb_readoptions_destroy(ro);
	rocksdb_release_snapshot(s->db, snap);
	return rc;
}

int meta_state_import(struct meta_state *s, const uint8_t *buf, size_t len)
{
	if (len < 16 + SHA256_LEN || memcmp(buf, SNAP_MAGIC, 8) != 0)
		return IOL_ECORRUPT;
	uint8_t d[SHA256_LEN];
	hash_sha256(buf, len - SHA256_LEN, d);
	if (memcmp(d, buf + len - SHA256_LEN, SHA256_LEN) != 0)
		return IOL_ECORRUPT;
	uint64_t count = 0;
	for (int i = 7; i >= 0; i--)
		count = (count << 8) | buf[8 + i];
	size_t end = len - SHA256_LEN, off = 16;

	/* Validate the framing fully before touching the DB. */
	uint64_t seen = 0, applied = 0, gc = 0;
	uint64_t refs_at = UINT64_MAX;
	while (off < end) {
		if (end - off < 8)
			return IOL_ECORRUPT;
		uint32_t kn = get_le32(buf + off), vn = get_le32(buf + off + 4);
		if ((uint64_t)kn + vn > end - off - 8)
			return IOL_ECORRUPT;
		if (kn == 1 && buf[off + 8] == 'A' && vn == 8)
			applied = get_be64((const char *)buf + off + 9);
		if (kn > 0 && buf[off + 8] == 'G')
			gc++;
		if (kn == 1 && buf[off + 8] == 'X' && vn == 8)
			refs_at = get_be64((const char *)buf + off + 9);
		off += 8 + (size_t)kn + vn;
		seen++;
	}
	if (seen != count)
		return IOL_ECORRUPT;

	/* One write: delete every current key, put every pair. */
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn;
		const char *k = rocksdb_iter_key(it, &kn);
		rocksdb_writebatch_delete(wb, k, kn);
	}
	rocksdb_iter_destroy(it);
	for (off = 16; off < end;) {
		uint32_t kn = get_le32(buf + off), vn = get_le32(buf + off + 4);
		rocksdb_writebatch_put(wb, (const char *)buf + off + 8, kn,
				       (const char *)buf + off + 8 + kn, vn);
		off += 8 + (size_t)kn + vn;
	}
	char *err = NULL;
	rocksdb_write(s->db, s->wo, wb, &err);
	rocksdb_writebatch_destroy(wb);
	if (err) {
		fprintf(stderr, "meta/state: import: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	s->applied = applied;
	atomic_store(&s->gc_entries, gc);
	/* A snapshot of a member without the reference index: build it here,
	 * as that member's own open will. */
	return refs_at == applied ? 0 : ref_build(s);
}

int meta_state_checkpoint(struct meta_state *s, const char *dir_out)
{
	char *err = NULL;
	rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(s->db, &err);
	if (!err)
		rocksdb_checkpoint_create(cp, dir_out, 0, &err);
	if (cp)
		rocksdb_checkpoint_object_destroy(cp);
	if (err) {
		fprintf(stderr, "meta/state: checkpoint %s: %s\n", dir_out, err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

int meta_state_checkpoint_applied(const char *dir, uint64_t *applied)
{
	char *err = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_t *db = rocksdb_open_for_read_only(o, dir, 0, &err);
	int rc = 0;
	*applied = 0;
	if (!err) {
		size_t n = 0;
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		char *v = rocksdb_get(db, ro, "A", 1, &n, &err);
		rocksdb_readoptions_destroy(ro);
		if (v && n == 8)
			*applied = get_be64(v);
		rocksdb_free(v);
	}
	if (db)
		rocksdb_close(db);
	rocksdb_options_destroy(o);
	if (err) {
		fprintf(stderr, "meta/state: checkpoint %s: %s\n", dir, err);
		rocksdb_free(err);
		rc = -EIO;
	}
	return rc;
}

/* The marker of an install in progress: outside every table (tables are
 * one letter), and skipped by the install's own pass. */
#define INSTALL_KEY "~installing"
#define INSTALL_KEY_LEN (sizeof(INSTALL_KEY) - 1)

static int put_synced(struct meta_state *s, const char *k, size_t kn, const char *v, size_t vn,
		      bool del)
{
	char *err = NULL;
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(wo, 1);
	if (del)
		rocksdb_delete(s->db, wo, k, kn, &err);
	else
		rocksdb_put(s->db, wo, k, kn, v, vn, &err);
	rocksdb_writeoptions_destroy(wo);
	if (err) {
		fprintf(stderr, "meta/state: install marker: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

int meta_state_install_pending(struct meta_state *s, char *tag, size_t cap)
{
	char *err = NULL;
	size_t n = 0;
	char *v = rocksdb_get(s->db, s->ro, INSTALL_KEY, INSTALL_KEY_LEN, &n, &err);
	if (err) {
		rocksdb_free(err);
		return -EIO;
	}
	if (!v)
		return 0;
	if (cap) {
		size_t k = n < cap - 1 ? n : cap - 1;
		memcpy(tag, v, k);
		tag[k] = 0;
	}
	rocksdb_free(v);
	return 1;
}

static int key_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

int meta_state_install(struct meta_state *s, const char *cp_dir, const char *tag,
		       size_t batch_bytes)
{
	if (!batch_bytes)
		batch_bytes = 4u << 20;
	char *err = NULL;
	rocksdb_options_t *co = rocksdb_options_create();
	/* A small cache of its own: one sequential pass, no reuse. */
	rocksdb_cache_t *cc = rocksdb_cache_create_lru(8u << 20);
	rocksdb_block_based_table_options_t *cb = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(cb, cc);
	rocksdb_options_set_block_based_table_factory(co, cb);
	rocksdb_t *cp = rocksdb_open_for_read_only(co, cp_dir, 0, &err);
	int rc = 0;
	if (err) {
		fprintf(stderr, "meta/state: install: open %s: %s\n", cp_dir, err);
		rocksdb_free(err);
		err = NULL;
		rc = -EIO;
		goto out_opts;
	}
	size_t an = 0;
	char *av = rocksdb_get(cp, s->ro, "A", 1, &an, &err);
	uint64_t applied = av && an == 8 ? get_be64(av) : 0;
	rocksdb_free(av);
	if (err || !applied) {
		rc = err ? -EIO : IOL_ECORRUPT;
		rocksdb_free(err);
		err = NULL;
		goto out_cp;
	}
	rc = put_synced(s, INSTALL_KEY, INSTALL_KEY_LEN, tag, strlen(tag), false);
	if (rc)
		goto out_cp;

	/* Both iterators pin their view when created: the live one sees the
	 * state before the batches below, so it never meets its own writes. */
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_fill_cache(ro, 0);
	rocksdb_iterator_t *li = rocksdb_create_iterator(s->db, ro);
	rocksdb_iterator_t *ci = rocksdb_create_iterator(cp, ro);
	rocksdb_iter_seek_to_first(li);
	rocksdb_iter_seek_to_first(ci);
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	size_t pending = 0;
	uint64_t gc = 0, puts = 0, dels = 0;
	uint64_t refs_at = UINT64_MAX;
	while (rc == 0 && (rocksdb_iter_valid(li) || rocksdb_iter_valid(ci))) {
		size_t lkn = 0, ckn = 0, vn, lvn;
		const char *lk = rocksdb_iter_valid(li) ? rocksdb_iter_key(li, &lkn) : NULL;
		const char *ck = rocksdb_iter_valid(ci) ? rocksdb_iter_key(ci, &ckn) : NULL;
		if (lk && lkn == INSTALL_KEY_LEN && !memcmp(lk, INSTALL_KEY, lkn)) {
			rocksdb_iter_next(li);
			continue;
		}
		int c = !lk ? 1 : !ck ? -1 : key_cmp(lk, lkn, ck, ckn);
		if (c < 0) {   /* only here: gone from the source */
			rocksdb_writebatch_delete(wb, lk, lkn);
			pending += lkn + 16;
			dels++;
			rocksdb_iter_next(li);
			continue;
		}
		const char *v = rocksdb_iter_value(ci, &vn);
		if (ckn > 0 && ck[0] == 'G')
			gc++;
		if (ckn == 1 && ck[0] == 'X' && vn == 8)
			refs_at = get_be64(v);
		bool same = false;
		if (c == 0) {
			const char *lv = rocksdb_iter_value(li, &lvn);
			same = lvn == vn && !memcmp(lv, v, vn);
			rocksdb_iter_next(li);
		}
		if (!same) {
			rocksdb_writebatch_put(wb, ck, ckn, v, vn);
			pending += ckn + vn + 16;
			puts++;
		}
		rocksdb_iter_next(ci);
		if (pending >= batch_bytes) {
			rocksdb_write(s->db, s->wo, wb, &err);
			rocksdb_writebatch_clear(wb);
			pending = 0;
			if (err)
				rc = -EIO;
		}
	}
	if (rc == 0 && pending)
		rocksdb_write(s->db, s->wo, wb, &err);
	if (!err)
		rocksdb_iter_get_error(li, &err);
	if (!err)
		rocksdb_iter_get_error(ci, &err);
	if (err && rc == 0)
		rc = -EIO;
	rocksdb_writebatch_destroy(wb);
	rocksdb_iter_destroy(ci);
	rocksdb_iter_destroy(li);
	rocksdb_readoptions_destroy(ro);
	if (rc == 0) {
		/* The batches skipped the WAL: into files before the marker
		 * goes, so that a crash after it cannot lose them. */
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(s->db, fo, &err);
		rocksdb_flushoptions_destroy(fo);
		if (err)
			rc = -EIO;
	}
	if (err) {
		fprintf(stderr, "meta/state: install %s: %s\n", cp_dir, err);
		rocksdb_free(err);
		err = NULL;
	}
	if (rc == 0) {
		s->applied = applied;
		atomic_store(&s->gc_entries, gc);
		if (refs_at != applied)
			rc = ref_build(s);
	}
	if (rc == 0)
		rc = put_synced(s, INSTALL_KEY, INSTALL_KEY_LEN, NULL, 0, true);
	if (rc == 0)
		fprintf(stderr, "meta/state: installed %s at %llu: %llu puts, %llu deletes\n", cp_dir,
			(unsigned long long)applied, (unsigned long long)puts,
			(unsigned long long)dels);
out_cp:
	rocksdb_close(cp);
out_opts:
	rocksdb_options_destroy(co);
	rocksdb_block_based_options_destroy(cb);
	rocksdb_cache_destroy(cc);
	return rc;
}
