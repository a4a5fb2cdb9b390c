/*
 * s3_status.c — the meta-answer-to-S3-error table of s3_status.h, and its
 * lookup. Owns the table only; handlers own what they do with the error.
 */
#include "gateway/s3_status.h"

#include <errno.h>
#include <stddef.h>

#include "common/err.h"
#include "proto/meta.pb-c.h"

/* The statuses the table names, and REFUSED past them. */
enum {
	MS_OK = IOLAKE__META__STATUS__STATUS_OK,
	MS_NOT_FOUND = IOLAKE__META__STATUS__STATUS_NOT_FOUND,
	MS_EXISTS = IOLAKE__META__STATUS__STATUS_EXISTS,
	MS_CONFLICT = IOLAKE__META__STATUS__STATUS_CONFLICT,
	MS_BUCKET_NOT_EMPTY = IOLAKE__META__STATUS__STATUS_BUCKET_NOT_EMPTY,
	MS_INVALID = IOLAKE__META__STATUS__STATUS_INVALID,
	MS_INVALID_PART = IOLAKE__META__STATUS__STATUS_INVALID_PART,
	MS_TOO_LARGE = IOLAKE__META__STATUS__STATUS_TOO_LARGE,
	MS_LOCKED = IOLAKE__META__STATUS__STATUS_LOCKED,
	MS_REFUSED = 1000,
};

static const struct {
	const char *name;
	bool read;
	enum s3_err other;
} subjects[S3_SUBJ__COUNT] = {
#define SUBJ_ROW(n, rd, o) [S3_SUBJ_##n] = { #n, rd, S3E_##o },
	S3_SUBJECTS(SUBJ_ROW)
#undef SUBJ_ROW
};

static const struct {
	enum s3_subj subj;
	int status;
	enum s3_err err;
} map[] = {
#define MAP_ROW(sj, st, e) { S3_SUBJ_##sj, MS_##st, S3E_##e },
	S3_STATUS_MAP(MAP_ROW)
#undef MAP_ROW
};

/* The row for (subj, status); false when there is none. */
static bool lookup(enum s3_subj subj, int status, enum s3_err *out)
{
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].subj == subj && map[i].status == status) {
			*out = map[i].err;
			return true;
		}
	return false;
}

enum s3_err s3_status_client_err(int err)
{
	if (err == -EAGAIN || iol_err_retryable(err))
		return S3E_ServiceUnavailable;
	return S3E_InternalError;
}

enum s3_err s3_status_err(enum s3_subj subj, int err, int status)
{
	enum s3_err e;
	if ((unsigned)subj >= S3_SUBJ__COUNT)
		return S3E_InternalError;
	if (err) {
		if (err == -EINVAL && lookup(subj, MS_REFUSED, &e))
			return e;
		if (err != IOL_ENOT_FOUND || !subjects[subj].read)
			return s3_status_client_err(err);
		status = MS_NOT_FOUND;
	}
	if (status == MS_OK)
		return S3E_OK;
	if (lookup(subj, status, &e))
		return e;
	return subjects[subj].other;
}

const char *s3_subj_name(enum s3_subj subj)
{
	return (unsigned)subj < S3_SUBJ__COUNT ? subjects[subj].name : "?";
}
