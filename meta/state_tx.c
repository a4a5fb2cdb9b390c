/*
 * state_tx.c — what every op of the state machine is written with (the
 * files listed at the top of meta/state.c; contracts in state_internal.h):
 * the key builder and the keys more than one table file makes (layout at
 * the top of state.c), the checks of bucket, key, name and upload id, the
 * one mapping between errors and Meta statuses (state.h), and the reads
 * and writes of one apply through its batch (struct tx: a read sees the
 * entry's earlier ops; a storage error is latched in t->io_err, which
 * aborts the entry), prefix scans included.
 *
 * Owns no state: every function works on what it is given. Thread: the
 * apply thread for the tx_* ones; the rest any.
 *
 * Not here: the op dispatch, the request table, entry framing, apply and
 * open/close (state.c); any table's rows and rules (state_<table>.c);
 * reads of the committed state outside an apply (state_read.c).
 */
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state.h"
#include "meta/state_internal.h"

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

void put_be32(char *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (char)(v & 0xff);
}

uint32_t get_be32(const char *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
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

void key_gc(struct key *k, uint64_t gen, uint16_t seq)
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

bool valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n >= 1 && n <= NAME_MAX_BYTES;
}

bool valid_upload_id(const char *id)
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
	case META_ELOCKED: return IOLAKE__META__STATUS__STATUS_LOCKED;
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
	case IOLAKE__META__STATUS__STATUS_LOCKED: return META_ELOCKED;
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
	t->bucket_written |= k->n && k->b[0] == 'B';
	if (buf != stackbuf)
		free(buf);
	return 0;
}

void tx_del(struct tx *t, const struct key *k)
{
	rocksdb_writebatch_wi_delete(t->wb, k->b, k->n);
	t->bucket_written |= k->n && k->b[0] == 'B';
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
