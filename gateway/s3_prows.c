/*
 * s3_prows.c — reading a part-rows multipart object's parts (contract in
 * s3_prows.h; the layout is meta/state_prows.c's).
 *
 * Cost: building the offsets is one pass over the record's part_list
 * (which the record read brought anyway, ~10-50 bytes a part); each
 * segment is then a binary search, and a meta read per window of
 * S3_PROWS_WINDOW rows (meta bounds an answer to ~4 MiB of rows: at
 * 5 GiB parts, ~123 KB of layout each, about 32). A ranged GET reads the
 * rows of the parts it touches and no others.
 *
 * Does not read bytes (the callers' gw_data GETs do) nor free anything.
 */
#include "gateway/s3_prows.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/s3_util.h"

bool s3_prows_is(const Iolake__Meta__ObjectRecord *rec)
{
	return rec && rec->part_rows;
}

int s3_prows_init(struct s3_prows *pr, const Iolake__Meta__ObjectRecord *rec)
{
	memset(pr, 0, sizeof(*pr));
	pr->rec = rec;
	size_t n = rec->n_part_list;
	if (n == 0 || n != rec->parts_count)
		return IOL_ECORRUPT;
	pr->cum = malloc((n + 1) * sizeof(*pr->cum));
	if (!pr->cum)
		return -ENOMEM;
	uint64_t off = 0;
	for (size_t i = 0; i < n; i++) {
		const Iolake__Meta__ObjectPart *p = rec->part_list[i];
		if (i > 0 && p->part_number <= rec->part_list[i - 1]->part_number)
			return IOL_ECORRUPT;
		pr->cum[i] = off;
		off += p->size;
	}
	pr->cum[n] = off;
	pr->n = n;
	if (off != rec->size)
		return IOL_ECORRUPT;
	return 0;
}

void s3_prows_clear(struct s3_prows *pr)
{
	free(pr->cum);
	s3u_free_msg(pr->win);
	memset(pr, 0, sizeof(*pr));
}

/* The index of the part holding byte pos: the first i with cum[i+1] > pos
 * (empty parts hold nothing). n when pos is at or past the end. */
static size_t part_at(const struct s3_prows *pr, uint64_t pos)
{
	size_t lo = 0, hi = pr->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pr->cum[mid + 1] > pos)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int s3_prows_seg(struct s3_prows *pr, uint64_t pos, const Iolake__Meta__Segment **seg)
{
	size_t i = part_at(pr, pos);
	if (i >= pr->n)
		return IOL_ECORRUPT;
	uint32_t pn = pr->rec->part_list[i]->part_number;
	const Iolake__Meta__GetPartRowsResponse *w = pr->win;
	const Iolake__Meta__Part *row = NULL;
	for (size_t j = 0; w && j < w->n_parts; j++)
		if (w->parts[j]->part_number == pn) {
			row = w->parts[j];
			break;
		}
	if (!row) {
		/* Fetched from this very part on and not there: missing. */
		if (w && pr->win_from == pn)
			return IOL_ECORRUPT;
		pr->want = i;
		return -EAGAIN;
	}
	uint64_t size = pr->rec->part_list[i]->size;
	if (row->size != size || !row->segment || row->segment->length != size ||
	    !row->segment->data_layout.len)
		return IOL_ECORRUPT;
	pr->seg = *row->segment;
	pr->seg.offset = pr->cum[i];
	pr->seg.part_number = pn;
	*seg = &pr->seg;
	return 0;
}

void s3_prows_request(struct s3_prows *pr, Iolake__Meta__GetPartRowsRequest *req)
{
	uint32_t pn = pr->rec->part_list[pr->want]->part_number;
	iolake__meta__get_part_rows_request__init(req);
	req->bucket = pr->rec->bucket;
	req->key = pr->rec->key;
	req->upload_id = pr->rec->upload_id;
	req->part_number_marker = pn - 1;
	req->max_parts = S3_PROWS_WINDOW;
	pr->win_from = pn;
}

int s3_prows_fetch(struct s3_prows *pr, struct s3_rq *rq, s3_rq_read_cb cb)
{
	Iolake__Meta__GetPartRowsRequest req;
	s3_prows_request(pr, &req);
	return s3_rq_call(rq, META_M_GET_PART_ROWS, &req.base, S3_SUBJ_OBJECT_READ, cb);
}

enum s3_err s3_prows_take(struct s3_prows *pr, enum s3_err e, const ProtobufCMessage *resp)
{
	if (e)
		return e == S3E_NoSuchKey ? S3E_InternalError : e;
	if (!resp)
		return S3E_ServiceUnavailable;
	s3u_free_msg(pr->win);
	pr->win = (Iolake__Meta__GetPartRowsResponse *)s3u_copy_msg(resp);
	return pr->win ? S3E_OK : S3E_InternalError;
}

int s3_prows_part_range(const Iolake__Meta__ObjectRecord *rec, uint32_t pn, uint64_t *off,
			uint64_t *len)
{
	uint64_t o = 0;
	for (size_t i = 0; i < rec->n_part_list; i++) {
		const Iolake__Meta__ObjectPart *p = rec->part_list[i];
		if (p->part_number == pn) {
			*off = o;
			*len = p->size;
			return 1;
		}
		o += p->size;
	}
	return -1;
}
