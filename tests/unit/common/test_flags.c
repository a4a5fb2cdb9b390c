/*
 * test_flags.c — flags.c: the size and duration parsers and formatters
 * (good, bad, overflow), and flags_parse over a table like a service's:
 * every type, positional stop, "--", help, and the exact error text for
 * each kind of mistake (an operator reads those; they must name the flag).
 */
#include "common/flags.h"

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ units */

START_TEST(test_parse_size_good)
{
	static const struct { const char *s; uint64_t v; } cases[] = {
		{ "0", 0 }, { "4096", 4096 }, { "4K", 4096 }, { "4k", 4096 },
		{ "4Ki", 4096 }, { "4KiB", 4096 }, { "4kib", 4096 }, { "4KB", 4000 },
		{ "64G", 64ULL << 30 }, { "64GiB", 64ULL << 30 }, { "64GB", 64000000000ULL },
		{ "10 MiB", 10ULL << 20 }, { "1T", 1ULL << 40 }, { "2P", 2ULL << 50 },
		{ "1MB", 1000000 }, { "7B", 7 }, { "7 B", 7 }, { "1.5G", 1610612736ULL },
		{ "1.5KiB", 1536 }, { "0.5K", 512 }, { "1.3K", 1331 }, /* rounds down */
		{ "0.0000001K", 0 }, { "18446744073709551615", UINT64_MAX },
		{ "16383P", 16383ULL << 50 }, { "007", 7 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		ck_assert_msg(flags_parse_size(cases[i].s, &v) == 0, "rejected %s", cases[i].s);
		ck_assert_msg(v == cases[i].v, "%s gave %lu", cases[i].s, (unsigned long)v);
	}
}
END_TEST

START_TEST(test_parse_size_bad)
{
	static const char *const bad[] = {
		"", "-1", "+1", "12X", "4 ", " 4", "4KiBx", "4KiB ", "1.5", "1.", ".5K",
		"1..5K", "4 K B", "0x10", "1e3", "16E", "4Kb5", "K", "4  K",
		"99999999999T", "18446744073709551616", "16384P", "17179869184G",
		"18446744073709551615K",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 12345;
		ck_assert_msg(flags_parse_size(bad[i], &v) == -EINVAL, "accepted \"%s\"", bad[i]);
		ck_assert_msg(v == 12345, "\"%s\" touched *out", bad[i]);
	}
	uint64_t v;
	ck_assert_int_eq(flags_parse_size(NULL, &v), -EINVAL);
}
END_TEST

START_TEST(test_parse_duration)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "500ms", 500 }, { "3s", 3000 }, { "2m", 120000 }, { "1h", 3600000 },
		{ "1d", 86400000 }, { "250", 250 }, { "0", 0 }, { "1h30m", 5400000 },
		{ "1m30s", 90000 }, { "1.5s", 1500 }, { "0.5ms", 0 }, { "1s500ms", 1500 },
		{ "2h2m2s2ms", 7322002 },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t v = 777;
		ck_assert_msg(flags_parse_duration_ms(good[i].s, &v) == 0, "rejected %s", good[i].s);
		ck_assert_msg(v == good[i].v, "%s gave %lu", good[i].s, (unsigned long)v);
	}
	static const char *const bad[] = {
		"", "3x", "-1s", "1.5", "s", "3 s", "1h5", "3S", "3sec", "ms", "1hh",
		"99999999999999999999", "300000000000d", "18446744073709551615s",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 777;
		ck_assert_msg(flags_parse_duration_ms(bad[i], &v) == -EINVAL, "accepted \"%s\"",
			      bad[i]);
		ck_assert_uint_eq(v, 777);
	}
}
END_TEST

START_TEST(test_format)
{
	char b[32];
	ck_assert_str_eq(flags_format_size(0, b, sizeof(b)), "0 B");
	ck_assert_str_eq(flags_format_size(1023, b, sizeof(b)), "1023 B");
	ck_assert_str_eq(flags_format_size(1024, b, sizeof(b)), "1 KiB");
	ck_assert_str_eq(flags_format_size(65536, b, sizeof(b)), "64 KiB");
	ck_assert_str_eq(flags_format_size(1536ULL << 20, b, sizeof(b)), "1.5 GiB");
	ck_assert_str_eq(flags_format_size(64ULL << 30, b, sizeof(b)), "64 GiB");
	ck_assert_str_eq(flags_format_size(3ULL << 60, b, sizeof(b)), "3 EiB");
	ck_assert_str_eq(flags_format_size(UINT64_MAX, b, sizeof(b)), "16.0 EiB");

	ck_assert_str_eq(flags_format_duration_ms(0, b, sizeof(b)), "0ms");
	ck_assert_str_eq(flags_format_duration_ms(500, b, sizeof(b)), "500ms");
	ck_assert_str_eq(flags_format_duration_ms(3000, b, sizeof(b)), "3s");
	ck_assert_str_eq(flags_format_duration_ms(5400000, b, sizeof(b)), "1h30m");
	ck_assert_str_eq(flags_format_duration_ms(1500, b, sizeof(b)), "1s500ms");
	ck_assert_str_eq(flags_format_duration_ms(90061001, b, sizeof(b)), "1d1h1m1s1ms");

	/* what the formatters print, the parsers read back */
	static const uint64_t sizes[] = { 0, 1, 4096, 1ULL << 20, 5ULL << 40, 7ULL << 50 };
	static const uint64_t durs[] = { 0, 1, 999, 1000, 3723004, UINT64_MAX };
	for (size_t i = 0; i < 6; i++) {
		uint64_t v;
		ck_assert_int_eq(flags_parse_size(flags_format_size(sizes[i], b, sizeof(b)), &v), 0);
		ck_assert_uint_eq(v, sizes[i]);
		ck_assert_int_eq(
			flags_parse_duration_ms(flags_format_duration_ms(durs[i], b, sizeof(b)), &v), 0);
		ck_assert_uint_eq(v, durs[i]);
	}
	/* a short buffer is cut, NUL-terminated */
	ck_assert_str_eq(flags_format_duration_ms(5400000, b, 3), "1h");
	ck_assert_str_eq(flags_format_size(65536, b, 4), "64 ");
}
END_TEST

/* ------------------------------------------------------------ flags_parse */

static int64_t id;
static uint64_t count, size, timeout;
static bool verbose;
static const char *name;
static const char *device;
static struct flag_list meta;
static const char *default_peers[] = { "1@a", "2@b" };
static struct flag_list peers;

static const struct flag_spec specs[] = {
	{ .name = "id", .type = FLAG_INT64, .dst = &id, .min = 0, .max = 65535,
	  .help = "node id" },
	{ .name = "count", .type = FLAG_UINT64, .dst = &count, .help = "how many" },
	{ .name = "size", .type = FLAG_SIZE, .dst = &size, .min = 1 << 20,
	  .max = INT64_MAX, .help = "device size" },
	{ .name = "timeout", .type = FLAG_DURATION, .dst = &timeout, .help = "deadline" },
	{ .name = "verbose", .type = FLAG_BOOL, .dst = &verbose, .help = "say more" },
	{ .name = "name", .type = FLAG_STRING, .dst = &name, .help = "a name" },
	{ .name = "device", .type = FLAG_STRING, .dst = &device, .required = true,
	  .metavar = "PATH", .help = "block device" },
	{ .name = "meta", .type = FLAG_LIST, .dst = &meta, .help = "meta addresses" },
	{ .name = "peers", .type = FLAG_LIST, .dst = &peers, .help = "raft peers" },
	{ 0 },
};

static void reset(void)
{
	id = -7;
	count = 0;
	size = 64ULL << 30;
	timeout = 3000;
	verbose = false;
	name = "default";
	device = NULL;
	memset(&meta, 0, sizeof(meta));
	peers = (struct flag_list){ .items = default_peers, .n = 2 };
}

static char errbuf[256];
static int pos;

/* flags_parse on "prog" and the given arguments (NULL-terminated). */
static int parse(const char *first, ...)
{
	static char *argv[64];
	int argc = 0;
	argv[argc++] = "prog";
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	pos = -1;
	errbuf[0] = '\0';
	return flags_parse(specs, argc, argv, &pos, errbuf, sizeof(errbuf));
}

#define ck_fails_with(msg, ...)                                              \
	do {                                                                 \
		ck_assert_int_eq(parse(__VA_ARGS__, NULL), -EINVAL);         \
		ck_assert_str_eq(errbuf, msg);                               \
	} while (0)

START_TEST(test_parse_all_types)
{
	int rc = parse("--id", "3", "--size=10G", "--verbose", "--count", "0x10",
		       "--meta", "a:1,b:2,,c:3,", "--timeout", "1m30s", "--name=x=y",
		       "--device", "/dev/nvme0n1", "cluster", "status", "--id", "9", NULL);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, errbuf);
	ck_assert_int_eq(pos, 14); /* argv[14] == "cluster" */
	ck_assert_int_eq(id, 3);
	ck_assert_uint_eq(size, 10ULL << 30);
	ck_assert(verbose);
	ck_assert_uint_eq(count, 16);
	ck_assert_uint_eq(timeout, 90000);
	ck_assert_str_eq(name, "x=y");
	ck_assert_str_eq(device, "/dev/nvme0n1");
	ck_assert_uint_eq(meta.n, 3);
	ck_assert_str_eq(meta.items[0], "a:1");
	ck_assert_str_eq(meta.items[1], "b:2");
	ck_assert_str_eq(meta.items[2], "c:3");
	ck_assert_uint_eq(peers.n, 2); /* default kept */
	ck_assert_ptr_eq(peers.items, default_peers);
	flags_free(specs);
	ck_assert_uint_eq(meta.n, 0);
	ck_assert_ptr_null(meta.alloc);
	ck_assert_ptr_eq(peers.items, default_peers); /* static default not freed */

	reset();
	ck_assert_int_eq(parse("--device", "d", "--id=-0", "--count=18446744073709551615",
			       "--peers", "1@h1:7000", NULL), 0);
	ck_assert_int_eq(pos, 7); /* no positional: argc */
	ck_assert_int_eq(id, 0);
	ck_assert_uint_eq(count, UINT64_MAX);
	ck_assert_uint_eq(peers.n, 1);
	ck_assert_str_eq(peers.items[0], "1@h1:7000");
	flags_free(specs);
	ck_assert_ptr_eq(peers.alloc, NULL);
}
END_TEST

START_TEST(test_positional_and_dashdash)
{
	ck_assert_int_eq(parse("--device", "d", "--", "--size", "3", NULL), 0);
	ck_assert_int_eq(pos, 4); /* after "--" */
	ck_assert_uint_eq(size, 64ULL << 30);
	ck_assert_int_eq(parse("--device", "d", "--", NULL), 0);
	ck_assert_int_eq(pos, 4);
	ck_assert_int_eq(parse("--device", "d", "-", "x", NULL), 0);
	ck_assert_int_eq(pos, 3); /* "-" is positional */
	/* a bool never takes the next argument */
	ck_assert_int_eq(parse("--device", "d", "--verbose", "true", NULL), 0);
	ck_assert_int_eq(pos, 4);
	ck_assert(verbose);
	/* values may start with '-', or be "--x" when attached */
	ck_assert_int_eq(parse("--device", "-", "--name", "-n", "--id=7", NULL), 0);
	ck_assert_str_eq(device, "-");
	ck_assert_str_eq(name, "-n");
	ck_assert_int_eq(parse("--device=--weird", NULL), 0);
	ck_assert_str_eq(device, "--weird");
}
END_TEST

START_TEST(test_bool_forms)
{
	ck_assert_int_eq(parse("--device", "d", "--verbose=true", NULL), 0);
	ck_assert(verbose);
	ck_assert_int_eq(parse("--device", "d", "--verbose=off", NULL), 0);
	ck_assert(!verbose);
	ck_assert_int_eq(parse("--device", "d", "--verbose=YES", NULL), 0);
	ck_assert(verbose);
	ck_assert_int_eq(parse("--device", "d", "--no-verbose", NULL), 0);
	ck_assert(!verbose);
	ck_fails_with("flag --verbose: \"maybe\" is not a boolean (true or false)",
		      "--device", "d", "--verbose=maybe");
	ck_fails_with("flag --verbose: --no-verbose takes no value", "--no-verbose=1");
	ck_fails_with("unknown flag --no-size", "--no-size");
}
END_TEST

START_TEST(test_errors_name_the_flag)
{
	ck_fails_with("unknown flag --sise (did you mean --size?)", "--sise", "1G");
	ck_fails_with("unknown flag --szie (did you mean --size?)", "--szie=1G");
	ck_fails_with("unknown flag --verbos (did you mean --verbose?)", "--verbos");
	ck_fails_with("unknown flag --zzzzzz", "--zzzzzz");
	ck_fails_with("unknown flag -v", "-v");
	ck_fails_with("flag --size: \"12X\" is not a size (examples: 4096, 64KiB, 10G)",
		      "--device", "d", "--size", "12X");
	ck_fails_with("flag --size: 99999999999T is too large (at most 16 EiB)",
		      "--size", "99999999999T");
	ck_fails_with("flag --size: 4 KiB is below the minimum 1 MiB", "--size", "4KiB");
	ck_fails_with("flag --timeout: \"3x\" is not a duration (examples: 500ms, 3s, 2m, "
		      "1h30m)", "--timeout", "3x");
	ck_fails_with("flag --id: needs a value", "--device", "d", "--id");
	ck_fails_with("flag --id: needs a value", "--id", "--size", "1G");
	ck_fails_with("flag --id: 70000 is above the maximum 65535", "--id", "70000");
	ck_fails_with("flag --id: -1 is below the minimum 0", "--id", "-1");
	ck_fails_with("flag --id: \"3a\" is not an integer", "--id", "3a");
	ck_fails_with("flag --id: \"\" is not an integer", "--id=");
	ck_fails_with("flag --id: 99999999999999999999 is out of range",
		      "--id", "99999999999999999999");
	ck_fails_with("flag --count: \"-1\" is not a non-negative integer", "--count", "-1");
	ck_fails_with("flag --id given twice", "--id", "1", "--id=2");
	ck_fails_with("missing required flag --device", "--id", "1");
	ck_fails_with("flag --device: needs a value", "--id", "1", "--device");
	/* lists parsed before an error are freed (LSan checks under make asan) */
	ck_fails_with("flag --meta given twice", "--meta", "a,b", "--meta", "c");
	ck_assert_ptr_null(meta.alloc);
	ck_fails_with("flag --id: \"x\" is not an integer", "--meta", "a,b", "--id", "x");
	ck_assert_ptr_null(meta.alloc);
}
END_TEST

START_TEST(test_help)
{
	ck_assert_int_eq(parse("--help", NULL), FLAGS_HELP);
	ck_assert_int_eq(parse("-h", NULL), FLAGS_HELP);
	ck_assert_int_eq(parse("--id", "3", "-h", "--bogus", NULL), FLAGS_HELP);
	ck_assert_int_eq(id, 3);
	/* after a positional, --help belongs to the subcommand */
	ck_assert_int_eq(parse("--device", "d", "status", "--help", NULL), 0);
	ck_assert_int_eq(pos, 3);

	reset(); /* usage shows current values as defaults */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	flags_usage(f, "iolake-osd", "<command>", specs);
	fclose(f);
	static const char *const want[] = {
		"Usage: iolake-osd [flags] <command>\n",
		"  --id N ", "node id (default -7)\n",
		"  --size BYTES ", "device size (default 64 GiB)\n",
		"  --timeout DURATION ", "deadline (default 3s)\n",
		"  --verbose ", "say more\n",
		"  --name VALUE ", "a name (default \"default\")\n",
		"  --device PATH ", "block device (required)\n",
		"  --meta A,B,... ", "meta addresses\n",
		"raft peers (default 1@a,2@b)\n",
		"  -h, --help ",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(text, want[i]), "usage lacks \"%s\":\n%s", want[i], text);
	free(text);
}
END_TEST

START_TEST(test_parse_program)
{
	/* The main() preamble: go on (-1), or the exit status to return. */
	char *ok[] = { "prog", "--device", "/dev/x", NULL };
	char *help[] = { "prog", "--help", NULL };
	char *bad[] = { "prog", "--device", "/dev/x", "--nope", NULL };
	char *extra[] = { "prog", "--device", "/dev/x", "cluster", NULL };
	int first = -1;
	reset();
	ck_assert_int_eq(flags_parse_program("prog", "", specs, 3, ok, NULL), -1);
	ck_assert_str_eq(device, "/dev/x");
	flags_free(specs);
	reset();
	FILE *saved = stdout;
	stdout = fopen("/dev/null", "w"); /* the usage text */
	ck_assert_int_eq(flags_parse_program("prog", "", specs, 2, help, NULL), 0);
	fclose(stdout);
	stdout = saved;
	reset();
	ck_assert_int_eq(flags_parse_program("prog", "", specs, 4, bad, NULL), 2);
	reset();
	ck_assert_int_eq(flags_parse_program("prog", "", specs, 4, extra, NULL), 2);
	reset();
	ck_assert_int_eq(flags_parse_program("prog", "", specs, 4, extra, &first), -1);
	ck_assert_int_eq(first, 3);
	flags_free(specs);
}
END_TEST

static Suite *flags_suite(void)
{
	Suite *s = suite_create("flags");
	TCase *tc = tcase_create("units");
	tcase_add_test(tc, test_parse_program);
	tcase_add_test(tc, test_parse_size_good);
	tcase_add_test(tc, test_parse_size_bad);
	tcase_add_test(tc, test_parse_duration);
	tcase_add_test(tc, test_format);
	suite_add_tcase(s, tc);

	tc = tcase_create("parse");
	tcase_add_checked_fixture(tc, reset, NULL);
	tcase_add_test(tc, test_parse_all_types);
	tcase_add_test(tc, test_positional_and_dashdash);
	tcase_add_test(tc, test_bool_forms);
	tcase_add_test(tc, test_errors_name_the_flag);
	tcase_add_test(tc, test_help);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(flags_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
