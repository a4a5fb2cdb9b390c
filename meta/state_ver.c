/*
 * state_ver.c — object versions in the meta state machine (issue 17):
 * what an overwrite or a delete does to the version it replaces, delete
 * markers, deleting one version, the bucket's versioning state, and the
 * reads of versions (one by id, a ListObjectVersions page of a range).
 *
 * Layout (docs/architecture.md, "Versioning"): 'O' bucket 0x00 key holds
 * the key's newest version (the current one, possibly a delete marker);
 * every older version is a row
 *
 *   'V' bucket 0x00 key 0x00 be64(~order)      ObjectRecord
 *
 * so a key's versions sort under the key, newest first (a forward scan),
 * beside the key's 'O' row in the same key range. Invariants: (1) a key
 * with a 'V' row has an 'O' row, whose order is above every 'V' row's;
 * (2) at most one null version (version_id "") per key; (3) every
 * version's shards are referenced ('X') while its row exists and queued
 * for GC ('G') in the batch that deletes the row.
 *
 * Version ids: 16 hex digits of the version's order, which is the apply
 * generation (Raft index << 16 | position), raised above the key's
 * current order when needed (a key moved to another group by a split
 * keeps its order), so ids are unique per key, ordered by apply, and a
 * non-null id finds its row without a scan.
 *
 * Runs on the apply thread (the ops) or any thread (the reads). Does not
 * decide who may do what (the gateway) nor route by range (meta/route.c).
 */
#include "meta/state_ver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"
#include "meta/wire.h"

#define ENABLED IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED
#define SUSPENDED IOLAKE__META__VERSIONING_STATE__VERSIONING_SUSPENDED
#define REC_DESC (&iolake__meta__object_record__descriptor)

uint64_t meta_ver_order(const Iolake__Meta__ObjectRecord *r)
{
	return r->version_order ? r->version_order : r->generation;
}

bool meta_ver_id_parse(const char *id, uint64_t *order)
{
	uint64_t v = 0;
	if (!id || strlen(id) != 16)
		return false;
	for (int i = 0; i < 16; i++) {
		char c = id[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d == 16)
			return false;
		v = v << 4 | d;
	}
	*order = v;
	return true;
}

bool meta_ver_is_marker(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	struct meta_wire_field f;
	while (p < end) {
		if (!meta_wire_next(&p, end, &f))
			return false;
		if (f.num == 31 && f.type == 0)
			return f.varint != 0;
	}
	return false;
}

static bool is_null_id(const char *vid)
{
	return !strcmp(vid, "null");
}

/* Whether record r is the version vid names. */
static bool id_matches(const Iolake__Meta__ObjectRecord *r, const char *vid)
{
	const char *mine = r->version_id ? r->version_id : "";
	return is_null_id(vid) ? mine[0] == 0 : !strcmp(mine, vid);
}

/* 'V' bucket 0 key 0 (the prefix of the key's versions) and, with an
 * order, that version's row. */
static void key_versions(struct key *k, const char *bucket, const char *key)
{
	k_init(k, 'V');
	k_str(k, bucket);
	k_byte(k, 0);
	k_str(k, key);
	k_byte(k, 0);
}

static void key_version(struct key *k, const char *bucket, const char *key, uint64_t order)
{
	key_versions(k, bucket, key);
	k_u64(k, ~order);
}

/* Free one version: its shards go to the GC queue, its references and
 * its count go. The caller deletes its row, and ran lock_check on it
 * before writing anything (meta/state_lock.c). */
static void free_version(struct tx *t, const Iolake__Meta__ObjectRecord *r)
{
	gc_record(t, r);
	ref_record(t, r, r->generation, false);
	range_count(t, -1, -(int64_t)r->size, 0);
}

/* The first 'V' row of bucket/key (the newest noncurrent version), or
 * with want_null the null one. 0 with *out and its row key, IOL_ENOT_FOUND,
 * or an error. The scan for the null version walks the key's versions:
 * bounded by them, and only done when a null version may be there. */
static int find_row(struct tx *t, const char *bucket, const char *key, bool want_null,
		    Iolake__Meta__ObjectRecord **out, struct key *row)
{
	struct key pfx;
	key_versions(&pfx, bucket, key);
	rocksdb_iterator_t *it = tx_iter(t, &pfx);
	int rc = IOL_ENOT_FOUND;
	for (; iter_has_prefix(it, &pfx); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__ObjectRecord *r =
			iolake__meta__object_record__unpack(NULL, vn, (const uint8_t *)vb);
		if (!r) {
			t->io_err = -EIO;
			rc = IOL_ECORRUPT;
			break;
		}
		if (!want_null || !r->version_id[0]) {
			memcpy(row->b, kb, kn);
			row->n = kn;
			*out = r;
			rc = 0;
			break;
		}
		meta_state_free_msg(r);
	}
	rocksdb_iter_destroy(it);
	return rc;
}

int meta_ver_put_current(struct tx *t, const struct key *ok, Iolake__Meta__ObjectRecord *rec,
			 Iolake__Meta__ObjectRecord *cur, struct meta_op_result *r)
{
	uint64_t order = t->gen;
	if (cur && meta_ver_order(cur) >= order)
		order = meta_ver_order(cur) + 1;
	bool enabled = t->versioning == ENABLED;
	char vid[17] = "";
	if (enabled)
		snprintf(vid, sizeof(vid), "%016llx", (unsigned long long)order);
	r->retained = false;
	if (!lock_valid_record(rec))
		return -EINVAL;
	/* Object lock, before anything is written (an op that fails writes
	 * nothing): the versions this write frees — a null current one, or
	 * when suspended the older null one — must not be held. */
	Iolake__Meta__ObjectRecord *old = NULL;
	struct key old_row;
	if (cur && !enabled) {
		int rc = 0;
		if (!cur->version_id[0]) {
			rc = lock_check(t, cur);
		} else {
			rc = find_row(t, rec->bucket, rec->key, true, &old, &old_row);
			if (rc == IOL_ENOT_FOUND)
				rc = 0;
			else if (rc == 0)
				rc = lock_check(t, old);
		}
		if (rc) {
			meta_state_free_msg(old);
			return rc;
		}
	}
	if (cur) {
		bool cur_null = !cur->version_id[0];
		if (enabled || !cur_null) {
			/* The replaced version stays, noncurrent. */
			struct key vk;
			key_version(&vk, rec->bucket, rec->key, meta_ver_order(cur));
			int rc = tx_put_msg(t, &vk, &cur->base);
			if (rc) {
				meta_state_free_msg(old);
				return rc;
			}
			r->retained = true;
		} else {
			free_version(t, cur);   /* the null version it replaces */
		}
		if (old) {
			/* Suspended: the new null version replaces an older one
			 * (found and checked above). */
			free_version(t, old);
			tx_del(t, &old_row);
			meta_state_free_msg(old);
		}
	}
	char *sent_vid = rec->version_id;   /* whatever the proposer sent is ignored */
	rec->generation = t->gen;
	rec->version_order = order == t->gen ? 0 : order;   /* 0: the generation stands in */
	rec->version_id = vid;
	range_count(t, 1, (int64_t)rec->size, 0);
	ref_record(t, rec, t->gen, true);
	int rc = tx_put_msg(t, ok, &rec->base);
	rec->version_id = sent_vid;   /* vid is on our stack; the message owns its own */
	r->generation = t->gen;
	snprintf(r->version_id, sizeof(r->version_id), "%s", vid);
	return rc;
}

/* DeleteObject without a version id in a versioned (or suspended)
 * bucket: a delete marker becomes the current version. */
static int delete_marker(struct tx *t, const Iolake__Meta__DeleteObject *op,
			 Iolake__Meta__ObjectRecord *cur, const struct key *ok,
			 struct meta_op_result *r)
{
	Iolake__Meta__ObjectRecord m = IOLAKE__META__OBJECT_RECORD__INIT;
	m.bucket = op->bucket;
	m.key = op->key;
	m.is_delete_marker = true;
	m.mtime_ms = t->time_ms;
	m.owner = cur && cur->owner ? cur->owner : (char *)"";
	int rc = meta_ver_put_current(t, ok, &m, cur, r);
	r->delete_marker = true;
	return rc;
}

/* DeleteObject with a version id: that version (or marker) goes, for
 * good; when it was the current one, the newest older one takes its
 * place. */
static int delete_version(struct tx *t, const Iolake__Meta__DeleteObject *op,
			  Iolake__Meta__ObjectRecord *cur, const struct key *ok,
			  struct meta_op_result *r)
{
	const char *vid = t->version_id;
	uint64_t order = 0;
	if (!is_null_id(vid) && !meta_ver_id_parse(vid, &order))
		return -EINVAL;
	if (!cur)
		return IOL_ENOT_FOUND;
	snprintf(r->version_id, sizeof(r->version_id), "%s", is_null_id(vid) ? "" : vid);
	if (id_matches(cur, vid)) {
		int lrc = lock_check(t, cur);   /* object lock: before any write */
		if (lrc)
			return lrc;
		r->delete_marker = cur->is_delete_marker;
		free_version(t, cur);
		Iolake__Meta__ObjectRecord *next = NULL;
		struct key row;
		int rc = find_row(t, op->bucket, op->key, false, &next, &row);
		if (rc == IOL_ENOT_FOUND) {
			tx_del(t, ok);
			return 0;
		}
		if (rc)
			return rc;
		tx_del(t, &row);
		rc = tx_put_msg(t, ok, &next->base);   /* promoted: current again */
		meta_state_free_msg(next);
		return rc;
	}
	Iolake__Meta__ObjectRecord *v = NULL;
	struct key row;
	int rc;
	if (is_null_id(vid)) {
		rc = find_row(t, op->bucket, op->key, true, &v, &row);
	} else {
		key_version(&row, op->bucket, op->key, order);
		rc = tx_get_msg(t, &row, REC_DESC, (void **)&v);
		if (rc == 0 && !id_matches(v, vid))
			rc = IOL_ENOT_FOUND;
	}
	if (rc == 0)
		rc = lock_check(t, v);   /* object lock: before any write */
	if (rc == 0) {
		r->delete_marker = v->is_delete_marker;
		free_version(t, v);
		tx_del(t, &row);
	}
	meta_state_free_msg(v);
	return rc;
}

int meta_ver_delete(struct tx *t, const Iolake__Meta__DeleteObject *op,
		    Iolake__Meta__ObjectRecord *cur, const struct key *ok, struct meta_op_result *r)
{
	if (t->version_id && t->version_id[0])
		return delete_version(t, op, cur, ok, r);
	return delete_marker(t, op, cur, ok, r);
}

bool meta_ver_delete_is_versioned(const struct tx *t, const Iolake__Meta__ObjectRecord *cur)
{
	if ((t->version_id && t->version_id[0]) || t->versioning == ENABLED ||
	    t->versioning == SUSPENDED)
		return true;
	/* An op that read the bucket before versioning was turned on never
	 * removes a version or a marker outright, nor the current version of
	 * a key with older ones (their 'O' row must stay): it hides it as
	 * suspended versioning would. */
	if (!cur)
		return false;
	if (cur->version_id[0] || cur->is_delete_marker)
		return true;
	struct key pfx, end;
	key_versions(&pfx, cur->bucket, cur->key);
	rocksdb_readoptions_t *ro = prefix_ro(&pfx, &end);
	rocksdb_iterator_t *base = rocksdb_create_iterator(t->s->db, ro ? ro : t->s->ro);
	rocksdb_iterator_t *it = rocksdb_writebatch_wi_create_iterator_with_base(t->wb, base);
	rocksdb_iter_seek(it, pfx.b, pfx.n);
	bool older = iter_has_prefix(it, &pfx);
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	return older;
}

int meta_ver_target(struct tx *t, const char *bucket, const char *key, uint64_t if_generation,
		    Iolake__Meta__ObjectRecord **out, struct key *row)
{
	*out = NULL;
	key_object(row, bucket, key);
	Iolake__Meta__ObjectRecord *r = NULL;
	int rc = tx_get_msg(t, row, REC_DESC, (void **)&r);
	if (rc)
		return rc;
	const char *vid = t->version_id;
	if (vid && vid[0] && !id_matches(r, vid)) {
		meta_state_free_msg(r);
		r = NULL;
		uint64_t order;
		if (is_null_id(vid)) {
			rc = find_row(t, bucket, key, true, &r, row);
		} else if (!meta_ver_id_parse(vid, &order)) {
			rc = -EINVAL;
		} else {
			key_version(row, bucket, key, order);
			rc = tx_get_msg(t, row, REC_DESC, (void **)&r);
			if (rc == 0 && !id_matches(r, vid))
				rc = IOL_ENOT_FOUND;
		}
	}
	if (rc == 0 && r->is_delete_marker)
		rc = IOL_ENOT_FOUND;   /* a marker has no tags or ACL */
	if (rc == 0 && if_generation && r->generation != if_generation)
		rc = IOL_ECONFLICT;
	if (rc)
		meta_state_free_msg(r);
	else
		*out = r;
	return rc;
}

static int edit_versioning(struct tx *t, Iolake__Meta__Bucket *b, const void *arg)
{
	(void)t;
	const Iolake__Meta__SetBucketVersioning *op = arg;
	if (op->state != ENABLED && lock_bucket_enabled(b))
		return -EINVAL;   /* object lock keeps versioning on for good (S3 InvalidBucketState) */
	b->versioning = op->state;
	return 0;
}

int meta_ver_set_bucket(struct tx *t, const Iolake__Meta__SetBucketVersioning *op)
{
	if (!valid_bucket(op->name) || (op->state != ENABLED && op->state != SUSPENDED))
		return -EINVAL;
	return bucket_config_update(t, op->name, edit_versioning, op);
}

/* ------------------------------------------------------------ reads */

static int db_get_rec(struct meta_state *s, const struct key *k, Iolake__Meta__ObjectRecord **out)
{
	char *err = NULL;
	size_t n;
	char *v = rocksdb_get(s->db, s->ro, k->b, k->n, &n, &err);
	if (err) {
		rocksdb_free(err);
		return -EIO;
	}
	if (!v)
		return IOL_ENOT_FOUND;
	*out = iolake__meta__object_record__unpack(NULL, n, (const uint8_t *)v);
	rocksdb_free(v);
	return *out ? 0 : IOL_ECORRUPT;
}

int meta_state_get_version(struct meta_state *s, const char *bucket, const char *key,
			   const char *vid, Iolake__Meta__ObjectRecord **out)
{
	*out = NULL;
	uint64_t order = 0;
	if (!valid_bucket(bucket) || !valid_key(key) || !vid ||
	    (!is_null_id(vid) && !meta_ver_id_parse(vid, &order)))
		return -EINVAL;
	struct key k;
	key_object(&k, bucket, key);
	Iolake__Meta__ObjectRecord *cur = NULL;
	int rc = db_get_rec(s, &k, &cur);
	if (rc)
		return rc;
	if (id_matches(cur, vid)) {
		*out = cur;
		return 0;
	}
	meta_state_free_msg(cur);
	if (!is_null_id(vid)) {
		key_version(&k, bucket, key, order);
		rc = db_get_rec(s, &k, out);
		if (rc == 0 && !id_matches(*out, vid)) {
			meta_state_free_msg(*out);
			*out = NULL;
			rc = IOL_ENOT_FOUND;
		}
		return rc;
	}
	/* The null version among the older ones: walk the key's versions. */
	struct key pfx, end;
	key_versions(&pfx, bucket, key);
	rocksdb_readoptions_t *ro = prefix_ro(&pfx, &end);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
	rc = IOL_ENOT_FOUND;
	for (rocksdb_iter_seek(it, pfx.b, pfx.n); iter_has_prefix(it, &pfx); rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__ObjectRecord *r =
			iolake__meta__object_record__unpack(NULL, vn, (const uint8_t *)vb);
		if (!r) {
			rc = IOL_ECORRUPT;
			break;
		}
		if (!r->version_id[0]) {
			*out = r;
			rc = 0;
			break;
		}
		meta_state_free_msg(r);
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	return rc;
}

/* ---- ListObjectVersions within one range */

struct vlist {
	struct meta_state *s;
	const Iolake__Meta__ListVersionsRequest *q;
	const char *hi;                    /* range end, NULL: unbounded */
	size_t plen, dlen;
	Iolake__Meta__ListVersionsResponse *out;
	size_t cap;
	unsigned max;
};

static int push(struct vlist *l, Iolake__Meta__VersionEntry *e)
{
	if (l->out->n_entries == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		Iolake__Meta__VersionEntry **v =
			realloc(l->out->entries, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->out->entries = v;
		l->cap = cap;
	}
	l->out->entries[l->out->n_entries++] = e;
	return 0;
}

static int push_prefix(struct vlist *l, const char *k, size_t n)
{
	Iolake__Meta__VersionEntry *e = malloc(sizeof(*e));
	char *p = malloc(n + 1);
	if (!e || !p) {
		free(e);
		free(p);
		return -ENOMEM;
	}
	iolake__meta__version_entry__init(e);
	memcpy(p, k, n);
	p[n] = 0;
	e->prefix = p;
	if (push(l, e)) {
		free(p);
		free(e);
		return -ENOMEM;
	}
	return 0;
}

/* A version's record as listed: no inline data, no user metadata. */
static int push_record(struct vlist *l, const char *v, size_t vn, bool latest)
{
	Iolake__Meta__ObjectRecord *r =
		iolake__meta__object_record__unpack(NULL, vn, (const uint8_t *)v);
	if (!r)
		return IOL_ECORRUPT;
	Iolake__Meta__VersionEntry *e = malloc(sizeof(*e));
	if (!e) {
		meta_state_free_msg(r);
		return -ENOMEM;
	}
	iolake__meta__version_entry__init(e);
	e->record = r;
	e->is_latest = latest;
	if (push(l, e)) {
		meta_state_free_msg(r);
		free(e);
		return -ENOMEM;
	}
	return 0;
}

static bool full(struct vlist *l)
{
	return l->out->n_entries >= l->max;
}

/* The key's noncurrent versions from row key `from` (inclusive) on, until
 * the page is full: sets truncated when one is left. */
static int walk_versions(struct vlist *l, const char *key, const struct key *from)
{
	struct key pfx, end;
	key_versions(&pfx, l->q->bucket, key);
	rocksdb_readoptions_t *ro = prefix_ro(&pfx, &end);
	rocksdb_iterator_t *it = rocksdb_create_iterator(l->s->db, ro ? ro : l->s->ro);
	int rc = 0;
	for (rocksdb_iter_seek(it, from->b, from->n); iter_has_prefix(it, &pfx);
	     rocksdb_iter_next(it)) {
		if (full(l)) {
			l->out->truncated = true;
			break;
		}
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		rc = push_record(l, vb, vn, false);
		if (rc)
			break;
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	return rc;
}

/* The row after version vid of key (vid's own row excluded): the row key
 * to resume from. */
static int resume_row(struct vlist *l, const char *key, const char *vid, const char *cur_vid,
		      struct key *from)
{
	uint64_t order;
	key_versions(from, l->q->bucket, key);
	if (!strcmp(cur_vid, is_null_id(vid) ? "" : vid))
		return 0;   /* the current one: every older one follows */
	if (!is_null_id(vid)) {
		if (!meta_ver_id_parse(vid, &order))
			return -EINVAL;
		if (order == 0)
			return 1;   /* nothing can sort after it */
		k_u64(from, ~order + 1);
		return 0;
	}
	/* After the null version: find its row. */
	struct key pfx = *from, end;
	rocksdb_readoptions_t *ro = prefix_ro(&pfx, &end);
	rocksdb_iterator_t *it = rocksdb_create_iterator(l->s->db, ro ? ro : l->s->ro);
	int rc = 1;   /* no null version: nothing after it to list */
	for (rocksdb_iter_seek(it, pfx.b, pfx.n); iter_has_prefix(it, &pfx); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__ObjectRecord *r =
			iolake__meta__object_record__unpack(NULL, vn, (const uint8_t *)vb);
		if (!r) {
			rc = IOL_ECORRUPT;
			break;
		}
		bool hit = !r->version_id[0];
		meta_state_free_msg(r);
		if (hit) {
			memcpy(from->b, kb, kn);
			from->n = kn;
			from->b[from->n++] = 0;   /* just after that row */
			rc = 0;
			break;
		}
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	return rc;
}

/* Seek the 'O' iterator just past every key starting with k[0..n). */
static bool seek_past(rocksdb_iterator_t *it, const char *bucket, const char *k, size_t n)
{
	struct key s;
	key_object(&s, bucket, "");
	memcpy(s.b + s.n, k, n);
	s.n += n;
	while (s.n > 0 && (uint8_t)s.b[s.n - 1] == 0xff)
		s.n--;
	if (s.n == 0)
		return false;
	s.b[s.n - 1]++;
	rocksdb_iter_seek(it, s.b, s.n);
	return true;
}

/* The common prefix of key k (after the request's prefix), or 0. */
static size_t common_prefix(const struct vlist *l, const char *k, size_t kn)
{
	if (!l->dlen || kn < l->plen)
		return 0;
	const char *d = memmem(k + l->plen, kn - l->plen, l->q->delimiter, l->dlen);
	return d ? (size_t)(d - k) + l->dlen : 0;
}

int meta_state_list_versions(struct meta_state *s, const Iolake__Meta__ListVersionsRequest *q,
			     const char *lo, const char *hi,
			     Iolake__Meta__ListVersionsResponse *out)
{
	if (!valid_bucket(q->bucket))
		return -EINVAL;
	struct vlist l = {
		.s = s, .q = q, .hi = hi && hi[0] ? hi : NULL, .out = out,
		.plen = strlen(q->prefix), .dlen = strlen(q->delimiter),
		.max = q->max_keys > META_VERSIONS_MAX_KEYS ? META_VERSIONS_MAX_KEYS : q->max_keys,
	};
	out->n_entries = 0;
	out->entries = NULL;
	out->truncated = false;
	if (l.max == 0)
		return 0;
	struct key bpfx, bend;
	key_object(&bpfx, q->bucket, "");
	rocksdb_readoptions_t *ro = prefix_ro(&bpfx, &bend);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
	int rc = 0;
	const char *km = q->key_marker;
	size_t kml = strlen(km);

	/* Where the walk starts: in key_marker's versions, after it, or at
	 * the prefix; never below the range. */
	bool after_marker = false;
	if (kml && q->version_id_marker[0]) {
		struct key ok;
		key_object(&ok, q->bucket, km);
		Iolake__Meta__ObjectRecord *cur = NULL;
		int grc = db_get_rec(s, &ok, &cur);
		if (grc == 0) {
			struct key from;
			int r2 = resume_row(&l, km, q->version_id_marker, cur->version_id, &from);
			meta_state_free_msg(cur);
			if (r2 < 0) {
				rc = r2;
				goto out;
			}
			if (r2 == 0 && (rc = walk_versions(&l, km, &from)) != 0)
				goto out;
			if (l.out->truncated)
				goto out;
		} else if (grc != IOL_ENOT_FOUND) {
			rc = grc;
			goto out;
		}
		after_marker = true;
	} else if (kml) {
		after_marker = true;
	}
	bool km_in_prefix = kml >= l.plen && !memcmp(km, q->prefix, l.plen);
	size_t cpn = after_marker && km_in_prefix ? common_prefix(&l, km, kml) : 0;
	if (cpn) {
		/* key_marker is a common prefix: every key under it is done */
		if (!seek_past(it, q->bucket, km, cpn))
			goto out;
	} else {
		bool from_km = after_marker && strcmp(km, q->prefix) >= 0;
		struct key sk;
		key_object(&sk, q->bucket, from_km ? km : q->prefix);
		rocksdb_iter_seek(it, sk.b, sk.n);
		if (from_km && rocksdb_iter_valid(it)) {
			size_t n;
			const char *k = rocksdb_iter_key(it, &n);
			if (n == sk.n && !memcmp(k, sk.b, n))
				rocksdb_iter_next(it);
		}
	}
	if (lo && lo[0] && rocksdb_iter_valid(it)) {
		/* the range starts above: keys below lo are another range's */
		size_t n;
		const char *k = rocksdb_iter_key(it, &n);
		struct key lk;
		key_object(&lk, q->bucket, lo);
		size_t m = n < lk.n ? n : lk.n;
		int c = memcmp(k, lk.b, m);
		if (c < 0 || (c == 0 && n < lk.n))
			rocksdb_iter_seek(it, lk.b, lk.n);
	}
	while (iter_has_prefix(it, &bpfx)) {
		size_t n;
		const char *full_k = rocksdb_iter_key(it, &n);
		const char *k = full_k + bpfx.n;
		size_t kn = n - bpfx.n;
		if (kn < l.plen || memcmp(k, q->prefix, l.plen) != 0)
			break;   /* past the prefix (every seek lands at or above it) */
		if (l.hi) {
			size_t hn = strlen(l.hi);
			int c = memcmp(k, l.hi, kn < hn ? kn : hn);
			if (c > 0 || (c == 0 && kn >= hn))
				break;   /* the next range's */
		}
		if (full(&l)) {
			out->truncated = true;
			break;
		}
		size_t cp = common_prefix(&l, k, kn);
		if (cp) {
			if ((rc = push_prefix(&l, k, cp)) != 0)
				break;
			char tmp[META_KEY_MAX + 1];
			memcpy(tmp, k, cp);
			if (!seek_past(it, q->bucket, tmp, cp))
				break;
			continue;
		}
		size_t vn;
		const char *v = rocksdb_iter_value(it, &vn);
		if ((rc = push_record(&l, v, vn, true)) != 0)
			break;
		char key[META_KEY_MAX + 1];
		memcpy(key, k, kn);
		key[kn] = 0;
		struct key from;
		key_versions(&from, q->bucket, key);
		if ((rc = walk_versions(&l, key, &from)) != 0 || out->truncated)
			break;
		rocksdb_iter_next(it);
	}
	if (rc == 0) {
		char *err = NULL;
		rocksdb_iter_get_error(it, &err);
		if (err) {
			rocksdb_free(err);
			rc = -EIO;
		}
	}
out:
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	if (rc)
		meta_state_list_versions_free(out);
	return rc;
}

void meta_state_list_versions_free(Iolake__Meta__ListVersionsResponse *out)
{
	for (size_t i = 0; i < out->n_entries; i++)
		protobuf_c_message_free_unpacked(&out->entries[i]->base, NULL);
	free(out->entries);
	out->entries = NULL;
	out->n_entries = 0;
}
