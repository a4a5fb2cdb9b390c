/*
 * test_err.c — the error table: every domain error has a distinct code
 * above IOL_ERR_BASE, a name and a text; errno values pass through.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "common/err.h"

START_TEST(test_table)
{
	static const int codes[] = {
#define CODE(name, code, text, retry) IOL_E##name,
		IOL_ERRORS(CODE)
#undef CODE
	};
	size_t n = sizeof(codes) / sizeof(codes[0]);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_lt(codes[i], -IOL_ERR_BASE);
		for (size_t j = i + 1; j < n; j++)
			ck_assert_int_ne(codes[i], codes[j]);
		ck_assert_str_ne(iol_strerror(codes[i]), "unknown error");
		ck_assert_str_ne(iol_errname(codes[i]), "EUNKNOWN");
	}
	ck_assert_str_eq(iol_errname(IOL_ECHECKSUM), "CHECKSUM");
	ck_assert_str_eq(iol_strerror(IOL_ECHECKSUM), "checksum mismatch");
	ck_assert(iol_err_retryable(IOL_EUNAVAILABLE));
	ck_assert(!iol_err_retryable(IOL_ECHECKSUM));
}
END_TEST

START_TEST(test_errno_passthrough)
{
	ck_assert_str_eq(iol_strerror(-ENOENT), strerror(ENOENT));
	ck_assert_str_eq(iol_errname(-ENOENT), "ENOENT");
	ck_assert_str_eq(iol_errname(0), "OK");
	ck_assert_str_eq(iol_strerror(0), "success");
	ck_assert_str_eq(iol_strerror(-99999), "unknown error");
	ck_assert(iol_err_retryable(-EAGAIN));
	ck_assert(!iol_err_retryable(-EINVAL));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("err");
	TCase *tc = tcase_create("err");
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_errno_passthrough);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
