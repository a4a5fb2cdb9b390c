/*
 * test_s3_status.c — the meta-answer-to-S3-error table: for every subject,
 * the answers the handlers gave before the table (one if/else chain per
 * call site) come out of it unchanged, wire code and message included.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "common/err.h"
#include "gateway/s3_status.h"
#include "proto/meta.pb-c.h"

#define ST(x) IOLAKE__META__STATUS__STATUS_##x

static const int all_status[] = { ST(OK), ST(NOT_FOUND), ST(EXISTS), ST(CONFLICT),
				  ST(BUCKET_NOT_EMPTY), ST(INVALID), ST(STALE_REQUEST),
				  ST(INVALID_PART), ST(TOO_LARGE), ST(INTERNAL) };
#define N_STATUS (sizeof(all_status) / sizeof(all_status[0]))

/* subj answers `want` for status st, and `other` for every status not OK
 * nor listed in (sts, errs). */
static void check_subject(enum s3_subj subj, enum s3_err other, const int *sts,
			  const enum s3_err *errs, size_t n)
{
	for (size_t i = 0; i < N_STATUS; i++) {
		enum s3_err want = all_status[i] == ST(OK) ? S3E_OK : other;
		for (size_t j = 0; j < n; j++)
			if (sts[j] == all_status[i])
				want = errs[j];
		enum s3_err got = s3_status_err(subj, 0, all_status[i]);
		ck_assert_msg(got == want, "%s status %d: %s, want %s", s3_subj_name(subj),
			      all_status[i], s3_err_name(got), s3_err_name(want));
	}
}

START_TEST(test_statuses)
{
	check_subject(S3_SUBJ_NONE, S3E_InternalError, NULL, NULL, 0);
	check_subject(S3_SUBJ_BUCKET_NEW, S3E_InternalError, (int[]){ ST(EXISTS), ST(INVALID) },
		      (enum s3_err[]){ S3E_BucketAlreadyOwnedByYou, S3E_InvalidBucketName }, 2);
	/* CONFLICT reaches the client only when a bucket change's retries
	 * are spent (s3_rq_bucket_change): 409 OperationAborted, as S3. */
	check_subject(S3_SUBJ_BUCKET, S3E_InternalError,
		      (int[]){ ST(NOT_FOUND), ST(BUCKET_NOT_EMPTY), ST(CONFLICT) },
		      (enum s3_err[]){ S3E_NoSuchBucket, S3E_BucketNotEmpty, S3E_OperationAborted }, 3);
	check_subject(S3_SUBJ_BUCKET_READ, S3E_NoSuchBucket, NULL, NULL, 0);
	check_subject(S3_SUBJ_OBJECT, S3E_InternalError, (int[]){ ST(NOT_FOUND), ST(TOO_LARGE) },
		      (enum s3_err[]){ S3E_NoSuchBucket, S3E_MetadataTooLarge }, 2);
	check_subject(S3_SUBJ_OBJECT_READ, S3E_NoSuchKey, NULL, NULL, 0);
	check_subject(S3_SUBJ_OBJECT_DEL, S3E_InternalError, (int[]){ ST(NOT_FOUND) },
		      (enum s3_err[]){ S3E_OK }, 1);
	check_subject(S3_SUBJ_OBJECT_TAGS, S3E_InternalError, (int[]){ ST(NOT_FOUND) },
		      (enum s3_err[]){ S3E_NoSuchKey }, 1);
	check_subject(S3_SUBJ_UPLOAD, S3E_InternalError, (int[]){ ST(NOT_FOUND) },
		      (enum s3_err[]){ S3E_NoSuchUpload }, 1);
	check_subject(S3_SUBJ_UPLOAD_READ, S3E_NoSuchUpload, NULL, NULL, 0);
	check_subject(S3_SUBJ_COMPLETE, S3E_InternalError,
		      (int[]){ ST(NOT_FOUND), ST(INVALID_PART), ST(INVALID), ST(TOO_LARGE) },
		      (enum s3_err[]){ S3E_NoSuchUpload, S3E_InvalidPart, S3E_InvalidPartOrder,
				       S3E_RecordTooLarge }, 4);
	check_subject(S3_SUBJ_LISTING, S3E_InvalidContinuationToken, (int[]){ ST(NOT_FOUND) },
		      (enum s3_err[]){ S3E_NoSuchBucket }, 1);
	check_subject(S3_SUBJ_UPLOADS, S3E_NoSuchBucket, (int[]){ ST(INVALID) },
		      (enum s3_err[]){ S3E_ListArgumentTooLong }, 1);
}
END_TEST

START_TEST(test_client_errors)
{
	for (int s = 0; s < S3_SUBJ__COUNT; s++) {
		/* Retryable (or the client's queue full): 503; else 500; the
		 * status is not looked at. */
		ck_assert_int_eq(s3_status_err(s, -EAGAIN, ST(OK)), S3E_ServiceUnavailable);
		ck_assert_int_eq(s3_status_err(s, IOL_ETIMEOUT, ST(OK)), S3E_ServiceUnavailable);
		ck_assert_int_eq(s3_status_err(s, IOL_ESHUTDOWN, ST(NOT_FOUND)), S3E_ServiceUnavailable);
		ck_assert_int_eq(s3_status_err(s, -EIO, ST(OK)), S3E_InternalError);
		ck_assert_int_eq(s3_status_err(s, -EOPNOTSUPP, ST(OK)), S3E_InternalError);
	}
	/* NOT_FOUND from the client: a read's missing thing, a write's 500. */
	ck_assert_int_eq(s3_status_err(S3_SUBJ_BUCKET_READ, IOL_ENOT_FOUND, 0), S3E_NoSuchBucket);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_OBJECT_READ, IOL_ENOT_FOUND, 0), S3E_NoSuchKey);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_UPLOAD_READ, IOL_ENOT_FOUND, 0), S3E_NoSuchUpload);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_LISTING, IOL_ENOT_FOUND, 0), S3E_NoSuchBucket);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_UPLOADS, IOL_ENOT_FOUND, 0), S3E_NoSuchBucket);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_OBJECT, IOL_ENOT_FOUND, 0), S3E_InternalError);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_OBJECT_DEL, IOL_ENOT_FOUND, 0), S3E_InternalError);
	/* A refused request: CreateBucket's bad name, ListObjects' bad token;
	 * elsewhere a 500. */
	ck_assert_int_eq(s3_status_err(S3_SUBJ_BUCKET_NEW, -EINVAL, 0), S3E_InvalidBucketName);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_LISTING, -EINVAL, 0), S3E_InvalidContinuationToken);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_BUCKET_READ, -EINVAL, 0), S3E_InternalError);
	ck_assert_int_eq(s3_status_err(S3_SUBJ_UPLOADS, -EINVAL, 0), S3E_InternalError);
	ck_assert_int_eq(s3_status_client_err(-EAGAIN), S3E_ServiceUnavailable);
	ck_assert_int_eq(s3_status_client_err(-ENOMEM), S3E_InternalError);
	ck_assert_int_eq(s3_status_err(S3_SUBJ__COUNT, 0, 0), S3E_InternalError);
}
END_TEST

/* The situations the table added keep the wire codes and messages the
 * call sites used to pass by hand. */
START_TEST(test_wire)
{
	ck_assert_str_eq(s3_err_code(S3E_MetadataTooLarge), "MetadataTooLarge"); /* AWS's code */
	ck_assert_str_eq(s3_err_message(S3E_MetadataTooLarge),
			 "Your metadata headers exceed the maximum allowed metadata size.");
	ck_assert_int_eq(s3_err_status(S3E_MetadataTooLarge), 400);
	ck_assert_str_eq(s3_err_code(S3E_InvalidContinuationToken), "InvalidArgument");
	ck_assert_str_eq(s3_err_message(S3E_InvalidContinuationToken),
			 "The continuation token provided is incorrect");
	ck_assert_str_eq(s3_err_code(S3E_ListArgumentTooLong), "InvalidArgument");
	ck_assert_str_eq(s3_err_message(S3E_ListArgumentTooLong),
			 "Prefix, delimiter or key-marker too long");
	ck_assert_str_eq(s3_err_code(S3E_RecordTooLarge), "EntityTooLarge");
	ck_assert_int_eq(s3_err_status(S3E_RecordTooLarge), 400);
	ck_assert_str_eq(s3_err_message(S3E_RecordTooLarge),
			 "The object's record (one layout per part) is too large");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_status");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_statuses);
	tcase_add_test(tc, test_client_errors);
	tcase_add_test(tc, test_wire);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
