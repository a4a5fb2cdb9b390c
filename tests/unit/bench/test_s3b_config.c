/*
 * test_s3b_config.c — iolake-s3-bench's flags through common/flags: sizes
 * and durations with units, defaults, the checks between flags, and
 * errors that name the flag.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "bench/s3bench/s3b_config.h"
#include "common/flags.h"

#define BASE "iolake-s3-bench", "--endpoint", "http://127.0.0.1:9000", "--access-key", "AK", \
	     "--secret-key", "SK"

static int parse(struct s3b_config *c, char *err, size_t errlen, char **argv, int argc)
{
	return s3b_config_parse(c, argc, argv, err, errlen);
}

#define PARSE(c, err, ...) \
	parse((c), (err), sizeof(err), (char *[]){ BASE, __VA_ARGS__, NULL }, \
	      (int)(sizeof((char *[]){ BASE, __VA_ARGS__ }) / sizeof(char *)))

START_TEST(test_contract_and_units)
{
	struct s3b_config c;
	char err[256] = "";
	ck_assert_int_eq(PARSE(&c, err, "--size", "64KiB", "--objects", "6000", "--concurrency", "32",
			       "--gets", "4", "--json", "out.json", "--latency-log", "lat.txt"), 0);
	ck_assert_uint_eq(c.size_bytes, 65536);
	ck_assert_uint_eq(c.objects, 6000);
	ck_assert_int_eq(c.concurrency, 32);
	ck_assert_uint_eq(c.gets, 4);
	ck_assert_str_eq(c.json_path, "out.json");
	ck_assert_str_eq(c.latency_log, "lat.txt");
	ck_assert_uint_eq(c.warmup_ms, 2000); /* defaults */
	ck_assert_uint_eq(c.timeout_ms, 30000);
	ck_assert(c.get_random && c.create_bucket && !c.verify);

	ck_assert_int_eq(PARSE(&c, err, "--size", "4MiB", "--duration", "30s", "--warmup", "1.5s"), 0);
	ck_assert_uint_eq(c.size_bytes, 4u << 20);
	ck_assert_uint_eq(c.duration_ms, 30000);
	ck_assert_uint_eq(c.objects, 0);
	ck_assert_uint_eq(c.warmup_ms, 1500);
	ck_assert_ptr_null(c.latency_log); /* off unless asked */

	ck_assert_int_eq(PARSE(&c, err, "--size=4KiB", "--get-order", "sequential", "--no-create-bucket"), 0);
	ck_assert_uint_eq(c.size_bytes, 4096);
	ck_assert_uint_eq(c.objects, S3B_DEFAULT_OBJECTS); /* neither objects nor duration */
	ck_assert(!c.get_random && !c.create_bucket);
}
END_TEST

START_TEST(test_errors_name_the_flag)
{
	struct s3b_config c;
	char err[256];
	ck_assert_int_eq(PARSE(&c, err, "--size", "64XB"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--size"));
	ck_assert_int_eq(PARSE(&c, err, "--duration", "soon"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--duration"));
	ck_assert_int_eq(PARSE(&c, err, "--concurrency", "0"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--concurrency"));
	ck_assert_int_eq(PARSE(&c, err, "--concurrency", "5000"), -EINVAL);
	ck_assert_int_eq(PARSE(&c, err, "--size", "0"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--size"));
	ck_assert_int_eq(PARSE(&c, err, "--size", "2GiB"), -EINVAL);
	ck_assert_int_eq(PARSE(&c, err, "--objects", "10", "--duration", "5s"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not both"));
	ck_assert_int_eq(PARSE(&c, err, "--get-order", "shuffled"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--get-order"));
	ck_assert_int_eq(PARSE(&c, err, "--verify", "--gets", "0"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--verify"));
	ck_assert_int_eq(PARSE(&c, err, "--sise", "4KiB"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--size")); /* did you mean */
	ck_assert_int_eq(PARSE(&c, err, "stray"), -EINVAL);
	ck_assert_int_eq(parse(&c, err, sizeof(err), (char *[]){ "b", "--endpoint", "x", NULL }, 3),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--access-key"));
	ck_assert_int_eq(PARSE(&c, err, "--help"), FLAGS_HELP);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3b_config");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_contract_and_units);
	tcase_add_test(tc, test_errors_name_the_flag);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
