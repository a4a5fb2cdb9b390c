/*
 * state_read.c — reads of the committed meta state (no apply): buckets,
 * users, keys, the map, groups, objects, uploads and parts, and the
 * object/upload iterator the listings walk.
 *
 * Not here: listing logic (meta/list.c), version listings (state_ver.c),
 * the GC queue's page (state_gc.c).
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

/* ---- bucket rows kept (struct bucket_slot, state_internal.h) */

void bucket_gen_move(struct meta_state *s)
{
	atomic_fetch_add(&s->bgen, 1);
}

void bucket_slots_init(struct meta_state *s)
{
	for (size_t i = 0; i < BUCKET_SLOTS; i++)
		pthread_mutex_init(&s->bslots[i].mu, NULL);
}

void bucket_slots_fini(struct meta_state *s)
{
	for (size_t i = 0; i < BUCKET_SLOTS; i++) {
		free(s->bslots[i].val);
		pthread_mutex_destroy(&s->bslots[i].mu);
	}
}

static struct bucket_slot *bucket_slot_of(struct meta_state *s, const char *name)
{
	return &s->bslots[hash_fnv1a_str(name) % BUCKET_SLOTS];
}

/* The row unpacked from slot sl when it holds name at generation gen:
 * 1 (*out set), 0 (not there), or -ENOMEM. */
static int bucket_slot_get(struct bucket_slot *sl, const char *name, uint64_t gen,
			   Iolake__Meta__Bucket **out)
{
	int rc = 0;
	pthread_mutex_lock(&sl->mu);
	if (sl->val && sl->gen == gen && strcmp(sl->name, name) == 0) {
		*out = iolake__meta__bucket__unpack(NULL, sl->n, sl->val);
		rc = *out ? 1 : -ENOMEM;   /* the bytes unpacked when kept */
	}
	pthread_mutex_unlock(&sl->mu);
	return rc;
}

/* Keep the row v[0..n) read at generation gen (a copy); when it does not
 * fit or memory runs out, the slot just stays as it was. */
static void bucket_slot_put(struct bucket_slot *sl, const char *name, uint64_t gen,
			    const char *v, size_t n)
{
	if (n > BUCKET_SLOT_VAL_MAX)
		return;
	uint8_t *copy = malloc(n ? n : 1);
	if (!copy)
		return;
	memcpy(copy, v, n);
	pthread_mutex_lock(&sl->mu);
	uint8_t *old = sl->val;
	sl->val = copy;
	sl->n = n;
	sl->gen = gen;
	snprintf(sl->name, sizeof(sl->name), "%s", name);
	pthread_mutex_unlock(&sl->mu);
	free(old);
}

int meta_state_get_bucket(struct meta_state *s, const char *name, Iolake__Meta__Bucket **out)
{
	if (!valid_bucket(name))
		return -EINVAL;
	/* The generation before the read: a write landing after this load
	 * moves it, so what the read returns is never kept as newer than it
	 * is (state_internal.h, struct bucket_slot). */
	uint64_t gen = atomic_load(&s->bgen);
	struct bucket_slot *sl = bucket_slot_of(s, name);
	int hit = bucket_slot_get(sl, name, gen, out);
	if (hit)
		return hit < 0 ? hit : 0;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, name);
	char *v;
	size_t n;
	int rc = db_get(s, &k, &v, &n);
	if (rc)
		return rc;
	*out = (void *)protobuf_c_message_unpack(&iolake__meta__bucket__descriptor, NULL, n,
						 (const uint8_t *)v);
	if (*out)
		bucket_slot_put(sl, name, gen, v, n);
	rocksdb_free(v);
	return *out ? 0 : IOL_ECORRUPT;
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
int push_msg(ProtobufCMessage ***v, size_t *n, size_t *cap, ProtobufCMessage *m)
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

void free_msgs(ProtobufCMessage **v, size_t n)
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
