/*
 * flags.c — table-driven flag parsing, unit parsers and usage text.
 *
 * Owns nothing global: flags_parse reads argv, writes through each spec's
 * dst, and allocates only for FLAG_LIST values (one block per list, freed
 * by flags_free). It runs once at start-up, on the main thread, so it
 * favours clear error messages over speed: every error names the flag and
 * says what was wrong, because an operator reads it, not a program.
 *
 * Numbers are parsed by hand, not with strtod/strtoull with base 0: those
 * accept leading spaces, a '-' on unsigned input (wrapping it), octal
 * "010", and locale-dependent decimal points.
 */
#include "common/flags.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef unsigned __int128 u128;

/* ------------------------------------------------------------ numbers */

/* A non-negative decimal "I" or "I.F": value = ip + frac / den. Reads at
 * most 18 fraction digits (later ones only matter below the rounding).
 * Returns 0, -EINVAL when no number starts at *p, -ERANGE when I > 2^64-1. */
static int scan_decimal(const char **p, uint64_t *ip, uint64_t *frac, uint64_t *den)
{
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	u128 v = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned)(*s - '0');
		if (v > UINT64_MAX)
			return -ERANGE;
	}
	*ip = (uint64_t)v;
	*frac = 0;
	*den = 1;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (int d = 0; *s >= '0' && *s <= '9'; s++, d++) {
			if (d < 18) {
				*frac = *frac * 10 + (unsigned)(*s - '0');
				*den *= 10;
			}
		}
	}
	*p = s;
	return 0;
}

/* floor((ip + frac/den) * mult) into *acc, or -ERANGE past UINT64_MAX. */
static int scale_add(u128 *acc, uint64_t ip, uint64_t frac, uint64_t den, uint64_t mult)
{
	*acc += (u128)ip * mult + (u128)frac * mult / den;
	return *acc > UINT64_MAX ? -ERANGE : 0;
}

static int parse_size(const char *s, uint64_t *out)
{
	uint64_t ip, frac, den;
	int rc = scan_decimal(&s, &ip, &frac, &den);
	if (rc)
		return rc;
	if (*s == ' ' && s[1])
		s++;
	uint64_t mult = 1;
	if (*s && strcasecmp(s, "b") != 0) {
		static const char letters[] = "kmgtp";
		const char *l = strchr(letters, s[0] | 0x20);
		if (!l || !s[0])
			return -EINVAL;
		int exp = (int)(l - letters) + 1;
		bool si = strcasecmp(s + 1, "b") == 0;
		if (!si && s[1] && strcasecmp(s + 1, "i") && strcasecmp(s + 1, "ib"))
			return -EINVAL;
		for (int i = 0; i < exp; i++)
			mult *= si ? 1000 : 1024;
	} else if (den != 1) {
		return -EINVAL; /* "1.5" bytes */
	}
	u128 acc = 0;
	rc = scale_add(&acc, ip, frac, den, mult);
	if (rc == 0)
		*out = (uint64_t)acc;
	return rc;
}

static int parse_duration(const char *s, uint64_t *out)
{
	static const struct { const char *unit; uint64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 },
	};
	u128 acc = 0;
	bool first = true;
	do {
		uint64_t ip, frac, den;
		int rc = scan_decimal(&s, &ip, &frac, &den);
		if (rc)
			return rc;
		uint64_t mult = 0;
		if (!*s && first && den == 1) {
			mult = 1; /* plain digits: milliseconds */
		} else {
			for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && !mult; i++) {
				size_t n = strlen(units[i].unit);
				/* "m" must not swallow the "m" of "ms" */
				if (strncmp(s, units[i].unit, n) == 0 &&
				    !(s[n] >= 'a' && s[n] <= 'z')) {
					mult = units[i].ms;
					s += n;
				}
			}
			if (!mult)
				return -EINVAL;
		}
		if ((rc = scale_add(&acc, ip, frac, den, mult)))
			return rc;
		first = false;
	} while (*s);
	*out = (uint64_t)acc;
	return 0;
}

/* An integer: optional '-' when is_signed, then decimal or 0x hex. */
static int parse_integer(const char *s, bool is_signed, int64_t *sv, uint64_t *uv)
{
	bool neg = is_signed && *s == '-';
	if (neg)
		s++;
	int base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -EINVAL;
	u128 v = 0;
	for (; *s; s++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && (*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
			d = (*s | 0x20) - 'a' + 10;
		else
			return -EINVAL;
		v = v * (unsigned)base + (unsigned)d;
		if (v > UINT64_MAX)
			return -ERANGE;
	}
	if (!is_signed) {
		*uv = (uint64_t)v;
		return 0;
	}
	if (neg ? v > (u128)INT64_MAX + 1 : v > INT64_MAX)
		return -ERANGE;
	*sv = neg ? (int64_t)(0 - (uint64_t)v) : (int64_t)v;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };
	for (int i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *out = false, 0;
	}
	return -EINVAL;
}

int flags_parse_size(const char *s, uint64_t *out)
{
	return s && parse_size(s, out) == 0 ? 0 : -EINVAL;
}

int flags_parse_duration_ms(const char *s, uint64_t *out)
{
	return s && parse_duration(s, out) == 0 ? 0 : -EINVAL;
}

char *flags_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	int u = 0;
	while (u < 5 && bytes >> (10 * (u + 2)))
		u++;
	uint64_t unit = 1ULL << (10 * (u + 1));
	if (bytes % unit == 0)
		snprintf(buf, len, "%" PRIu64 " %s", bytes / unit, units[u]);
	else
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)unit, units[u]);
	return buf;
}

char *flags_format_duration_ms(uint64_t ms, char *buf, size_t len)
{
	static const struct { const char *unit; uint64_t ms; } units[] = {
		{ "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 },
		{ "ms", 1 },
	};
	size_t off = 0;
	if (len)
		buf[0] = '\0';
	if (ms == 0)
		snprintf(buf, len, "0ms");
	for (size_t i = 0; i < 5 && ms; i++) {
		if (ms < units[i].ms)
			continue;
		int n = snprintf(buf + off, off < len ? len - off : 0, "%" PRIu64 "%s",
				 ms / units[i].ms, units[i].unit);
		off += n > 0 ? (size_t)n : 0;
		ms %= units[i].ms;
	}
	return buf;
}

/* ------------------------------------------------------------ parsing */

static int seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Optimal string alignment distance (Damerau: a swap costs 1), for "did
 * you mean". Names longer than 63 bytes are never suggested. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return SIZE_MAX;
	size_t d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < c)
				c = d[i - 2][j - 2] + 1;
			d[i][j] = c;
		}
	}
	return d[la][lb];
}

static int unknown_flag(const struct flag_spec *specs, const char *arg, size_t namelen,
			char *err, size_t errlen)
{
	char name[64];
	snprintf(name, sizeof(name), "%.*s", (int)namelen, arg);
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	const char *bare = name + (name[0] == '-') + (name[0] == '-' && name[1] == '-');
	for (const struct flag_spec *s = specs; s->name; s++) {
		size_t d = edit_distance(bare, s->name);
		if (d < best_d) {
			best_d = d;
			best = s->name;
		}
	}
	if (best && best_d <= 2 && best_d < strlen(bare))
		return seterr(err, errlen, "unknown flag %s (did you mean --%s?)", name, best);
	return seterr(err, errlen, "unknown flag %s", name);
}

static int store_list(const struct flag_spec *s, const char *v)
{
	size_t vlen = strlen(v), max = 1;
	for (const char *c = v; *c; c++)
		max += *c == ',';
	char **items = malloc(max * sizeof(char *) + vlen + 1);
	if (!items)
		return -ENOMEM;
	char *copy = (char *)(items + max);
	memcpy(copy, v, vlen + 1);
	size_t n = 0;
	for (char *tok = copy, *next; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		if (*tok)
			items[n++] = tok;
	}
	struct flag_list *l = s->dst;
	l->items = (const char **)items;
	l->n = n;
	l->alloc = items;
	return 0;
}

/* A numeric value as an operator would write it. */
static const char *fmt_num(enum flag_type t, uint64_t v, char *buf, size_t len)
{
	if (t == FLAG_SIZE)
		return flags_format_size(v, buf, len);
	if (t == FLAG_DURATION)
		return flags_format_duration_ms(v, buf, len);
	if (t == FLAG_INT64)
		snprintf(buf, len, "%" PRId64, (int64_t)v);
	else
		snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

/* What a bad value "is not", and what an overflowing one "is", by type. */
static const char *const not_a[] = {
	[FLAG_BOOL] = "a boolean (true or false)",
	[FLAG_INT64] = "an integer",
	[FLAG_UINT64] = "a non-negative integer",
	[FLAG_SIZE] = "a size (examples: 4096, 64KiB, 10G)",
	[FLAG_DURATION] = "a duration (examples: 500ms, 3s, 2m, 1h30m)",
};
static const char *const too_big[] = {
	[FLAG_INT64] = "out of range", [FLAG_UINT64] = "out of range",
	[FLAG_SIZE] = "too large (at most 16 EiB)", [FLAG_DURATION] = "too long",
};

/* Convert v for s, check its bounds and store it. An int64 travels in uv
 * as its two's-complement bits. */
static int store_value(const struct flag_spec *s, const char *v, char *err, size_t errlen)
{
	int64_t sv = 0;
	uint64_t uv = 0;
	bool bv;
	int rc = 0;
	switch (s->type) {
	case FLAG_STRING:
		*(const char **)s->dst = v;
		return 0;
	case FLAG_LIST:
		if (store_list(s, v))
			return seterr(err, errlen, "flag --%s: out of memory", s->name);
		return 0;
	case FLAG_BOOL:
		if (!(rc = parse_bool(v, &bv)))
			*(bool *)s->dst = bv;
		break;
	case FLAG_INT64:
		rc = parse_integer(v, true, &sv, &uv);
		uv = (uint64_t)sv;
		break;
	case FLAG_UINT64:
		rc = parse_integer(v, false, &sv, &uv);
		break;
	case FLAG_SIZE:
		rc = parse_size(v, &uv);
		break;
	case FLAG_DURATION:
		rc = parse_duration(v, &uv);
		break;
	}
	if (rc == -ERANGE)
		return seterr(err, errlen, "flag --%s: %s is %s", s->name, v, too_big[s->type]);
	if (rc)
		return seterr(err, errlen, "flag --%s: \"%s\" is not %s", s->name, v,
			      not_a[s->type]);
	if (s->type == FLAG_BOOL)
		return 0;

	bool sgn = s->type == FLAG_INT64;
	bool below = sgn ? (int64_t)uv < s->min : uv < (uint64_t)s->min;
	bool above = sgn ? (int64_t)uv > s->max : uv > (uint64_t)s->max;
	if (s->max > s->min && (below || above)) {
		char a[32], b[32];
		return seterr(err, errlen, "flag --%s: %s is %s %s", s->name,
			      fmt_num(s->type, uv, a, sizeof(a)),
			      above ? "above the maximum" : "below the minimum",
			      fmt_num(s->type, (uint64_t)(above ? s->max : s->min), b, sizeof(b)));
	}
	if (sgn)
		*(int64_t *)s->dst = (int64_t)uv;
	else
		*(uint64_t *)s->dst = uv;
	return 0;
}

static const struct flag_spec *find_spec(const struct flag_spec *specs, const char *name,
					 size_t len)
{
	for (const struct flag_spec *s = specs; s->name; s++)
		if (strlen(s->name) == len && memcmp(s->name, name, len) == 0)
			return s;
	return NULL;
}

static void free_lists(const struct flag_spec *specs, const unsigned char *only)
{
	for (size_t i = 0; specs[i].name; i++) {
		struct flag_list *l = specs[i].dst;
		if (specs[i].type != FLAG_LIST || !l->alloc || (only && !only[i]))
			continue;
		free(l->alloc);
		l->items = NULL;
		l->n = 0;
		l->alloc = NULL;
	}
}

int flags_parse_program(const char *prog, const char *synopsis,
			const struct flag_spec *specs, int argc, char **argv,
			int *first_positional)
{
	char err[512];
	int pos;
	int rc = flags_parse(specs, argc, argv, &pos, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, prog, synopsis, specs);
		flags_free(specs);
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n%s: see --help\n", prog, err, prog);
		return 2;
	}
	if (!first_positional && pos < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (every option is a --flag)\n", prog,
			argv[pos]);
		flags_free(specs);
		return 2;
	}
	if (first_positional)
		*first_positional = pos;
	return -1;
}

void flags_free(const struct flag_spec *specs)
{
	free_lists(specs, NULL);
}

/* One argument (and maybe the next): returns 0, FLAGS_HELP or -EINVAL;
 * *i is left on the last argument consumed. */
static int parse_one(const struct flag_spec *specs, unsigned char *seen, int argc,
		     char **argv, int *i, char *err, size_t errlen)
{
	const char *arg = argv[*i];
	const char *name = arg + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const char *value = eq ? eq + 1 : NULL;
	bool negated = false;

	const struct flag_spec *s = arg[1] == '-' ? find_spec(specs, name, len) : NULL;
	if (!s && arg[1] == '-' && len > 3 && strncmp(name, "no-", 3) == 0) {
		s = find_spec(specs, name + 3, len - 3);
		if (s && s->type != FLAG_BOOL)
			s = NULL;
		negated = s != NULL;
	}
	if (!s) {
		if (!find_spec(specs, "help", 4) &&
		    (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0))
			return FLAGS_HELP;
		return unknown_flag(specs, arg, eq ? (size_t)(eq - arg) : strlen(arg), err,
				    errlen);
	}
	size_t idx = (size_t)(s - specs);
	if (seen[idx])
		return seterr(err, errlen, "flag --%s given twice", s->name);
	seen[idx] = 1;

	if (s->type == FLAG_BOOL && (negated || !value)) {
		if (negated && value)
			return seterr(err, errlen, "flag --%s: --no-%s takes no value",
				      s->name, s->name);
		*(bool *)s->dst = !negated;
		return 0;
	}
	if (!value) {
		if (*i + 1 >= argc || (argv[*i + 1][0] == '-' && argv[*i + 1][1] == '-' &&
				       argv[*i + 1][2]))
			return seterr(err, errlen, "flag --%s: needs a value", s->name);
		value = argv[++*i];
	}
	return store_value(s, value, err, errlen);
}

int flags_parse(const struct flag_spec *specs, int argc, char **argv,
		int *first_positional, char *err, size_t errlen)
{
	unsigned char seen[FLAGS_MAX_SPECS] = { 0 };
	size_t nspecs = 0;
	while (specs[nspecs].name)
		nspecs++;
	if (nspecs > FLAGS_MAX_SPECS)
		return seterr(err, errlen, "too many flags in the table (%zu > %d)",
			      nspecs, FLAGS_MAX_SPECS);
	if (errlen)
		err[0] = '\0';

	int i = 1, rc = 0;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break; /* first positional */
		if ((rc = parse_one(specs, seen, argc, argv, &i, err, errlen)))
			break;
	}
	if (rc == 0) {
		for (size_t k = 0; k < nspecs; k++) {
			if (specs[k].required && !seen[k]) {
				rc = seterr(err, errlen, "missing required flag --%s",
					    specs[k].name);
				break;
			}
		}
	}
	if (rc < 0) {
		free_lists(specs, seen);
		return rc;
	}
	if (first_positional)
		*first_positional = i > argc ? argc : i;
	return rc;
}

/* ------------------------------------------------------------ usage */

static const char *metavar(const struct flag_spec *s)
{
	static const char *const by_type[] = {
		[FLAG_STRING] = "VALUE", [FLAG_BOOL] = "", [FLAG_INT64] = "N",
		[FLAG_UINT64] = "N", [FLAG_SIZE] = "BYTES", [FLAG_DURATION] = "DURATION",
		[FLAG_LIST] = "A,B,...",
	};
	return s->metavar ? s->metavar : by_type[s->type];
}

/* The default shown in usage, or "" for none. */
static void describe_default(const struct flag_spec *s, char *buf, size_t len)
{
	char v[64];
	buf[0] = '\0';
	if (s->type == FLAG_STRING) {
		const char *str = *(const char **)s->dst;
		if (str && *str)
			snprintf(buf, len, "default \"%s\"", str);
	} else if (s->type == FLAG_BOOL) {
		if (*(bool *)s->dst)
			snprintf(buf, len, "default true");
	} else if (s->type == FLAG_LIST) {
		const struct flag_list *l = s->dst;
		size_t off = 0;
		for (size_t k = 0; k < l->n && off < len; k++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
						k ? "," : "default ", l->items[k]);
	} else {
		snprintf(buf, len, "default %s",
			 fmt_num(s->type, *(uint64_t *)s->dst, v, sizeof(v)));
	}
}

void flags_usage(FILE *out, const char *prog, const char *synopsis,
		 const struct flag_spec *specs)
{
	fprintf(out, "Usage: %s [flags]%s%s\n\nFlags:\n", prog,
		synopsis && *synopsis ? " " : "", synopsis ? synopsis : "");
	int width = 12;
	for (const struct flag_spec *s = specs; s->name; s++) {
		int w = (int)(strlen(s->name) + 3 + strlen(metavar(s)));
		if (w > width && w <= 32)
			width = w;
	}
	for (const struct flag_spec *s = specs; s->name; s++) {
		char left[160], def[128];
		const char *mv = metavar(s);
		snprintf(left, sizeof(left), "--%s%s%s", s->name, *mv ? " " : "", mv);
		describe_default(s, def, sizeof(def));
		fprintf(out, "  %-*s  %s", width, left, s->help ? s->help : "");
		if (s->required)
			fprintf(out, " (required)");
		else if (def[0])
			fprintf(out, " (%s)", def);
		fputc('\n', out);
	}
	fprintf(out, "  %-*s  %s\n", width, "-h, --help", "show this help");
}
