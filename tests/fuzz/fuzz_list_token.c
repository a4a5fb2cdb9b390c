/*
 * fuzz_list_token.c — libFuzzer target for the S3 continuation token
 * (meta/list.h meta_list_token_decode), which a client sends back as it
 * likes and which the client side of key ranges (meta/route.c) now
 * decodes itself to find the range to start a page in; and for the
 * multi-range listing walk (meta/range.h) fed the same bytes as entry
 * names. A token that decodes must encode back to itself; the walk must
 * never take more than a page nor take an entry that is not above the
 * last one taken.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meta/list.h"
#include "meta/range.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char tok[META_LIST_TOKEN_MAX + 1];
	char out[META_KEY_MAX + 1], again[META_LIST_TOKEN_MAX];
	size_t n = size < sizeof(tok) - 1 ? size : sizeof(tok) - 1;
	memcpy(tok, data, n);
	tok[n] = 0;
	long len = meta_list_token_decode(tok, out, sizeof(out));
	if (len >= 0) {
		if ((size_t)len > META_KEY_MAX || memchr(out, 0, (size_t)len))
			__builtin_trap();
		meta_list_token_encode(out, (size_t)len, again);
		char back[META_KEY_MAX + 1];
		if (meta_list_token_decode(again, back, sizeof(back)) != len ||
		    memcmp(back, out, (size_t)len))
			__builtin_trap();
	}
	/* The walk over entries cut from the input at '\n' (one "range"). */
	const char *names[64];
	size_t lens[64], k = 0;
	bool take[64];
	for (size_t i = 0, s = 0; i <= size && k < 64; i++) {
		if (i == size || data[i] == '\n') {
			if (i > s) {
				names[k] = (const char *)data + s;
				lens[k++] = i - s;
			}
			s = i + 1;
		}
	}
	struct meta_range_walk w;
	unsigned max = size ? data[0] % 16 : 0;
	meta_range_walk_init(&w, max, "");
	size_t took = meta_range_walk_take(&w, names, lens, k, false, true, take);
	if (took > max || w.n > max)
		__builtin_trap();
	const char *last = NULL;
	size_t last_len = 0;
	for (size_t i = 0; i < k; i++) {
		if (!take[i])
			continue;
		if (last) {
			size_t m = lens[i] < last_len ? lens[i] : last_len;
			int c = memcmp(names[i], last, m);
			if (c < 0 || (c == 0 && lens[i] <= last_len))
				__builtin_trap();
		}
		last = names[i];
		last_len = lens[i];
	}
	return 0;
}
