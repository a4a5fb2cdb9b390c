/*
 * flags.h — command-line flags for every IOLake binary, from one table.
 *
 *   static int64_t id;
 *   static uint64_t size = 64ULL << 30;
 *   static struct flag_list meta;
 *   static const struct flag_spec specs[] = {
 *       { .name = "id", .type = FLAG_INT64, .dst = &id, .required = true,
 *         .min = 0, .max = 65535, .help = "OSD id" },
 *       { .name = "size", .type = FLAG_SIZE, .dst = &size, .help = "device size" },
 *       { .name = "meta", .type = FLAG_LIST, .dst = &meta, .help = "meta addresses" },
 *       { 0 }
 *   };
 *   char err[256]; int pos;
 *   int rc = flags_parse(specs, argc, argv, &pos, err, sizeof(err));
 *   if (rc == FLAGS_HELP) { flags_usage(stdout, argv[0], "", specs); exit(0); }
 *   if (rc < 0) { fprintf(stderr, "%s: %s\n", argv[0], err); exit(2); }
 *   ...
 *   flags_free(specs);
 *
 * Syntax: --name value and --name=value; a bool is --name, --name=true|false
 * (also 1/0, yes/no, on/off) or --no-name, and never takes the next
 * argument. Parsing stops at "--" (skipped) or at the first argument that
 * is not a flag ("-" alone is positional), so "iolake-admin --meta X cluster
 * status" leaves "cluster status". A value beginning with "--" must use
 * --name=value. -h and --help ask for usage.
 *
 * Units (decided here, for every binary):
 *   sizes     plain digits are bytes; K, M, G, T, P and Ki/KiB, Mi/MiB, ...
 *             are binary (64G = 64 << 30, as ops people mean it); KB, MB,
 *             GB, TB, PB are decimal (4KB = 4000, as SI and disk vendors
 *             mean it); B is bytes. Unit letters in any case, one optional
 *             space before the unit. A fraction is allowed with a unit and
 *             rounds down to whole bytes (1.5G = 1610612736); "1.5" alone is
 *             rejected.
 *   durations ms, s, m, h, d, combinable ("1h30m", "1.5s"); plain digits
 *             are milliseconds; fractions round down to whole ms.
 */
#ifndef COMMON_FLAGS_H
#define COMMON_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FLAGS_HELP 1        /* flags_parse: -h or --help was given */
#define FLAGS_MAX_SPECS 128 /* flags in one table */

enum flag_type {
	FLAG_STRING,   /* dst: const char *, points into argv */
	FLAG_BOOL,     /* dst: bool */
	FLAG_INT64,    /* dst: int64_t; decimal, or 0x hex */
	FLAG_UINT64,   /* dst: uint64_t; decimal, or 0x hex */
	FLAG_SIZE,     /* dst: uint64_t bytes (see Units above) */
	FLAG_DURATION, /* dst: uint64_t milliseconds (see Units above) */
	FLAG_LIST,     /* dst: struct flag_list; split on ',', empty items dropped */
};

/* The value of a FLAG_LIST. Zero-initialise it, or point items at static
 * defaults (alloc NULL). flags_parse replaces it with an allocated copy;
 * flags_free releases that. */
struct flag_list {
	const char **items;
	size_t n;
	void *alloc; /* owned storage, or NULL */
};

struct flag_spec {
	const char *name;    /* without "--"; NULL ends the table */
	enum flag_type type;
	void *dst;           /* typed as the enum says; holds the default */
	const char *help;    /* one line for flags_usage */
	bool required;       /* error when absent */
	int64_t min, max;    /* inclusive bounds, checked only when max > min;
	                      * for the unsigned types they must be >= 0 */
	const char *metavar; /* name of the value in usage; NULL: by type */
};

/*
 * Parse argv[1..argc) against specs, storing each value through its dst.
 * Returns:
 *   0          *first_positional = index of the first argument left over
 *              (argc when none); every required flag was given.
 *   FLAGS_HELP -h/--help was seen (unless a spec is named "help"); flags
 *              before it are already stored.
 *   -EINVAL    bad input; err holds one line naming the flag and the reason
 *              ("unknown flag --sise (did you mean --size?)",
 *              "flag --id: 70000 is above the maximum 65535", ...). Values of
 *              flags parsed before the bad one may already be stored; lists
 *              allocated by this call are freed.
 * err may be NULL when errlen is 0. On 0 or FLAGS_HELP, call flags_free.
 */
int flags_parse(const struct flag_spec *specs, int argc, char **argv,
		int *first_positional, char *err, size_t errlen);

/* Release what flags_parse allocated for list flags (their alloc); such a
 * list is reset to empty. Lists holding static defaults are left alone. */
void flags_free(const struct flag_spec *specs);

/* Print "Usage: prog [flags] synopsis" and a table of the flags, with
 * each one's current dst value as its default (so call it before parsing,
 * or after FLAGS_HELP), and "(required)" marks. */
void flags_usage(FILE *out, const char *prog, const char *synopsis,
		 const struct flag_spec *specs);

/* The start of every binary's main(): parse argv with specs; on --help
 * print usage (prog, synopsis) to stdout; on a bad flag print the error
 * and "see --help"; reject positional arguments unless allow_positional.
 * Returns -1 to go on (call flags_free when done), or the exit status to
 * return at once: 0 after --help, 2 after an error (storage freed).
 * *first_positional (may be NULL) as for flags_parse. */
int flags_parse_program(const char *prog, const char *synopsis,
			const struct flag_spec *specs, int argc, char **argv,
			int *first_positional);

/* The unit parsers of FLAG_SIZE and FLAG_DURATION (the whole string must
 * parse). Return 0, or -EINVAL on empty input, a sign, unknown unit,
 * trailing bytes or a value above UINT64_MAX (*out untouched). */
int flags_parse_size(const char *s, uint64_t *out);
int flags_parse_duration_ms(const char *s, uint64_t *out);

/* bytes for humans: "512 B", "64 KiB", "1.5 GiB" (exact multiples print
 * without a fraction, others with one decimal). Returns buf. */
char *flags_format_size(uint64_t bytes, char *buf, size_t len);

/* ms for humans, in the form flags_parse_duration_ms reads back: "0ms",
 * "500ms", "3s", "1h30m", "1s500ms". Returns buf. */
char *flags_format_duration_ms(uint64_t ms, char *buf, size_t len);

#endif
