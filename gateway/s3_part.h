/*
 * s3_part.h — the part commit: the PUT pipeline's commit for a part of a
 * multipart upload (UploadPart here, UploadPartCopy in s3_copy.c). Once
 * the part's data is durable it reads the part it replaces (GetUpload of
 * that part number) and commits PutPart conditioned on that part's
 * generation, so two racing uploads of one part number each free exactly
 * the part they replaced (after their commit); it answers with the ETag
 * (UploadPart) or CopyPartResult (UploadPartCopy).
 *
 * Thread: the gateway loop.
 *
 * Owns nothing beyond the caller's struct s3_part. Does not stream the
 * body (s3_put.h) nor list or complete uploads (s3_multipart.c).
 */
#ifndef GATEWAY_S3_PART_H
#define GATEWAY_S3_PART_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/s3_checksum.h"
#include "gateway/s3_put.h"

/* A part commit's state; its user embeds it next to its struct s3_put. */
struct s3_part {
	char upload_id[17];
	uint32_t part_number;
	bool copy;                       /* UploadPartCopy: answer CopyPartResult */
	Iolake__Meta__Part *prev;        /* the part this one replaces */
	/* UploadPartCopy: the copied bytes' checksum of the upload's
	 * algorithm (UploadPart's comes from the request body). */
	struct s3_ck *ck;                /* NULL: none being computed */
	struct s3_ck_value ck_value;     /* after s3_part_ck_final */
};

/* UploadPartCopy into an upload of checksum algorithm a (NONE: nothing to
 * compute): 0, or -ENOMEM. Then every copied byte through
 * s3_part_ck_update, and s3_part_ck_final at the end. */
int s3_part_ck_begin(struct s3_part *mp, enum s3_ck_algo a);
void s3_part_ck_update(struct s3_part *mp, const void *data, size_t len);
void s3_part_ck_final(struct s3_part *mp);

/* Make p's commit a part commit of the request's upload id and part
 * number (checked by the caller: s3u_upload_id_ok), with its state in mp. */
void s3_part_setup(struct s3_put *p, struct s3_part *mp, bool copy);

/* Release mp's state (the request's fini calls it). */
void s3_part_fini(struct s3_part *mp);

#endif
