/*
 * s3_prows.h — the part rows of a multipart object whose record has
 * part_rows (issue 18, meta/state_prows.c): which part holds an object
 * byte (a binary search over the cumulative sizes of the record's
 * part_list) and that part's segment, read from meta a window of rows at
 * a time (GetPartRows), never the whole list. GET, HEAD with partNumber,
 * CopyObject and UploadPartCopy read such objects through it.
 *
 * Owns its cumulative offsets and the window of rows it fetched; the
 * record is the caller's and must outlive it. Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_PROWS_H
#define GATEWAY_S3_PROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/s3_rq.h"
#include "proto/meta.pb-c.h"

#define S3_PROWS_WINDOW 32     /* rows one GetPartRows asks for */

struct s3_prows {
	const Iolake__Meta__ObjectRecord *rec;
	uint64_t *cum;             /* n_part_list + 1 offsets: part_list[i] starts at cum[i] */
	size_t n;
	Iolake__Meta__GetPartRowsResponse *win;   /* the rows fetched last (a copy) */
	uint32_t win_from;         /* the first part number that fetch asked for */
	Iolake__Meta__Segment seg; /* handed out by s3_prows_seg (layout borrowed from win) */
	size_t want;               /* the part_list index the next fetch starts at */
};

/* Whether rec keeps its parts in part rows. */
bool s3_prows_is(const Iolake__Meta__ObjectRecord *rec);

/* 0, IOL_ECORRUPT (a part_list that does not add up to the record's
 * size or count), -ENOMEM. */
int s3_prows_init(struct s3_prows *pr, const Iolake__Meta__ObjectRecord *rec);
void s3_prows_clear(struct s3_prows *pr);

/* The segment holding object byte pos (offset and length in the object,
 * the part's layout): 0 and *seg (valid until the next call); -EAGAIN
 * when its row is not fetched yet (s3_prows_fetch, then again);
 * IOL_ECORRUPT when pos is past the end or the row is missing or does
 * not match the summary. */
int s3_prows_seg(struct s3_prows *pr, uint64_t pos, const Iolake__Meta__Segment **seg);

/* Fetch the rows from the one s3_prows_seg missed on: one meta read on
 * behalf of rq, whose callback cb must hand its answer to s3_prows_take.
 * 0, or the error after answering (s3_rq_call's contract). */
/* The GetPartRows request for the window holding the wanted part (sets
 * the window's start); pointers into pr->rec. s3_prows_fetch sends it
 * through the request's meta call; the native GET sends it itself. */
void s3_prows_request(struct s3_prows *pr, Iolake__Meta__GetPartRowsRequest *req);
int s3_prows_fetch(struct s3_prows *pr, struct s3_rq *rq, s3_rq_read_cb cb);
/* Keep a GetPartRows answer: 0, or the S3 error to answer with. */
enum s3_err s3_prows_take(struct s3_prows *pr, enum s3_err e, const ProtobufCMessage *resp);

/* Where part number pn lies in the object, from the summary alone: 1 and
 * *off, *len; -1 when the object has no such part. */
int s3_prows_part_range(const Iolake__Meta__ObjectRecord *rec, uint32_t pn, uint64_t *off,
			uint64_t *len);

#endif
