/*
 * fuzz_pieces.h — how the signature fuzzers (fuzz_sigv2, fuzz_sigv4) cut
 * their input: text split at NUL bytes into pieces, and the pieces after
 * the fixed ones read as "name:value" request headers. Header-only; each
 * target includes it once.
 */
#ifndef TESTS_FUZZ_FUZZ_PIECES_H
#define TESTS_FUZZ_FUZZ_PIECES_H

#include <stddef.h>
#include <string.h>

#include "common/sigv4.h"

/* Next NUL-separated piece of [*p, end). */
static inline const char *fuzz_piece(const char **p, const char *end, size_t *n)
{
	const char *s = *p;
	const char *z = memchr(s, 0, (size_t)(end - s));
	*n = z ? (size_t)(z - s) : (size_t)(end - s);
	*p = z ? z + 1 : end;
	return s;
}

/* The rest of [*p, end) as up to max headers (pieces without a ':' are
 * skipped) into hs; returns how many. */
static inline size_t fuzz_headers(const char **p, const char *end, struct sigv4_header *hs,
				  size_t max)
{
	size_t nh = 0;
	while (*p < end && nh < max) {
		size_t ln;
		const char *l = fuzz_piece(p, end, &ln);
		const char *colon = memchr(l, ':', ln);
		if (!colon)
			continue;
		hs[nh++] = (struct sigv4_header){ l, (size_t)(colon - l), colon + 1,
						  ln - (size_t)(colon - l) - 1 };
	}
	return nh;
}

#endif
