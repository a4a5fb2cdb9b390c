/*
 * gw_rec.c — an object record's shard layouts and their deletion (contract
 * in gw_rec.h). Owns nothing: every call decodes what it needs from the
 * record and hands the delete to gw_data with the PG's current target.
 *
 * Does not decide whose shards may go: callers delete only what their own
 * commit stopped naming (the S3 handlers) or what meta's GC queue lists
 * (gw_gc); the argument why that is safe is at the top of gw_gc.c.
 *
 * Also the steps of writing a new version every PUT pipeline shares (its
 * body in the record, its PutObject, its unclaimed shards' deletion).
 *
 * Thread: the gateway loop.
 */
#include "gateway/gw_rec.h"
#include "gateway/sse_crypt.h"

#include <errno.h>
#include <stdlib.h>

#include "common/err.h"
#include "common/log.h"

bool gw_rec_is_inline(const Iolake__Meta__ObjectRecord *r)
{
	return r->data_layout.len == 0 && r->n_segments == 0 && !r->part_rows;
}

/* A record with part_rows (issue 18) is multipart with no segments here:
 * its layouts are in its part rows (s3_prows.h), freed through the GC
 * queue (gw_gc.c), never by gw_rec_drop_shards. */
bool gw_rec_is_multipart(const Iolake__Meta__ObjectRecord *r)
{
	return r->data_layout.len == 0 && (r->n_segments > 0 || r->part_rows);
}

/* Decode enc into *l and check it describes size bytes. */
static int decode_sized(const ProtobufCBinaryData *enc, uint64_t size, struct gw_data_layout *l)
{
	int rc = gw_data_layout_decode(enc->data, enc->len, l);
	if (rc)
		return rc;
	if (l->size != size) {
		gw_data_layout_clear(l);
		return IOL_ECORRUPT;
	}
	return 0;
}

/* The stored length of plain bytes of r: an encrypted record's layouts
 * hold the chunk cipher's output (gateway/sse_crypt.h). */
static uint64_t stored_size(const Iolake__Meta__ObjectRecord *r, uint64_t plain)
{
	if (r->sse == IOLAKE__META__SSE_KIND__SSE_NONE)
		return plain;
	return sse_stored_len(plain, r->sse_chunk_bytes ? r->sse_chunk_bytes : SSE_CHUNK_BYTES);
}

int gw_rec_seg_layout(const Iolake__Meta__ObjectRecord *r, const Iolake__Meta__Segment *sg,
		      struct gw_data_layout *l)
{
	return decode_sized(&sg->data_layout, stored_size(r, sg->length), l);
}

int gw_rec_layout(const Iolake__Meta__ObjectRecord *r, struct gw_data_layout *l)
{
	return decode_sized(&r->data_layout, stored_size(r, r->size), l);
}

/* Start deleting the shards of a decoded layout on its PG's current OSDs. */
static int drop_decoded(struct gw_map *map, struct gw_data *data, const struct gw_data_layout *l,
			gw_data_delete_cb cb, void *ud)
{
	struct gw_data_target t;
	int rc = gw_map_target(map, l->pg, &t);
	if (rc == 0)
		rc = gw_data_delete(data, &t, l, cb, ud);
	return rc;
}

void gw_rec_drop_encoded(struct gw_map *map, struct gw_data *data, const uint8_t *enc, size_t len)
{
	struct gw_data_layout l = { 0 };
	if (!len || gw_data_layout_decode(enc, len, &l))
		return;
	drop_decoded(map, data, &l, gw_rec_on_drop_done, NULL);
	gw_data_layout_clear(&l);
}

void gw_rec_on_drop_done(void *ud, int status, uint32_t failed)
{
	(void)ud;
	if (status)
		LOG_WARN("shard delete incomplete", "failed=%u", failed);
}

size_t gw_rec_n_layouts(const Iolake__Meta__ObjectRecord *r)
{
	if (gw_rec_is_multipart(r))
		return r->n_segments;
	return gw_rec_is_inline(r) ? 0 : 1;
}

int gw_rec_drop_layout(struct gw_map *map, struct gw_data *data,
		       const Iolake__Meta__ObjectRecord *r, size_t i, gw_data_delete_cb cb,
		       void *ud)
{
	struct gw_data_layout l = { 0 };
	int rc;
	if (gw_rec_is_multipart(r)) {
		const Iolake__Meta__Segment *sg = r->segments[i];
		if (!sg->data_layout.len)
			return 1;   /* names no shards */
		rc = gw_data_layout_decode(sg->data_layout.data, sg->data_layout.len, &l);
	} else {
		rc = gw_rec_layout(r, &l);
	}
	if (rc)
		return rc;
	rc = drop_decoded(map, data, &l, cb, ud);
	gw_data_layout_clear(&l);
	return rc;
}

void gw_rec_drop_shards(struct gw_map *map, struct gw_data *data,
			const Iolake__Meta__ObjectRecord *r)
{
	if (!r)
		return;
	size_t n = gw_rec_n_layouts(r);
	for (size_t i = 0; i < n; i++)
		gw_rec_drop_layout(map, data, r, i, gw_rec_on_drop_done, NULL);
}

int gw_rec_put_layout(const struct gw_data_put *put, uint8_t **enc, size_t *len)
{
	const struct gw_data_layout *l = gw_data_put_layout(put);
	size_t n = gw_data_layout_encoded_len(l);
	uint8_t *b = malloc(n ? n : 1);
	if (!b || gw_data_layout_encode(l, b, n) != (ssize_t)n) {
		free(b);
		return -ENOMEM;
	}
	*enc = b;
	*len = n;
	return 0;
}

int gw_rec_set_body(Iolake__Meta__ObjectRecord *r, const struct gw_data_put *put,
		    uint8_t *inl, size_t len, uint8_t **lbuf)
{
	*lbuf = NULL;
	if (!put) {
		r->inline_data.data = inl;
		r->inline_data.len = len;
		return 0;
	}
	int rc = gw_rec_put_layout(put, lbuf, &r->data_layout.len);
	if (!rc)
		r->data_layout.data = *lbuf;
	return rc;
}

void gw_rec_put_op(Iolake__Meta__Op *op, Iolake__Meta__PutObject *po,
		   Iolake__Meta__ObjectRecord *r, const Iolake__Meta__ObjectRecord *cur,
		   bool if_none, uint64_t bucket_digest)
{
	iolake__meta__put_object__init(po);
	po->record = r;
	if (cur)
		po->if_generation = cur->generation;
	else
		po->if_none_match = if_none;
	po->if_bucket_digest = bucket_digest;
	iolake__meta__op__init(op);
	op->body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
	op->put_object = po;
}

void gw_rec_drop_new(struct gw_data *data, const struct gw_data_target *t,
		     const struct gw_data_put *put, bool data_done, bool *settled)
{
	if (!put || !data_done || *settled)
		return;
	*settled = true;
	gw_data_delete(data, t, gw_data_put_layout(put), gw_rec_on_drop_done, NULL);
}
