/*
 * fuzz_mux_preamble.c — libFuzzer target for the Raft mux preamble decoder
 * (meta/raft_mux.c raft_mux_preamble_decode): the first bytes any client
 * of a member's Raft port sends, read before anything is known of it.
 *
 * Checks, for every input:
 *   - a "need more" answer asks for more than it was given and never more
 *     than RAFT_MUX_PREAMBLE_MAX (the reader's buffer);
 *   - the answer is the same whether the bytes come at once or one prefix
 *     at a time: every prefix of an input either needs more, or gives the
 *     input's own answer (the reader calls it after each partial read);
 *   - a decoded preamble fits what it was read from, names a non-empty
 *     printable address and a server id > 0, and survives encode and a
 *     second decode unchanged.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "meta/raft_mux.h"

static int decode(const uint8_t *p, size_t len, struct raft_mux_preamble *out)
{
	int rc = raft_mux_preamble_decode(p, len, out);
	if (rc > 0 && ((size_t)rc <= len || rc > RAFT_MUX_PREAMBLE_MAX))
		__builtin_trap();
	if (rc < 0 && rc != -EBADMSG && rc != -EPROTONOSUPPORT && rc != -EINVAL &&
	    rc != -EMSGSIZE && rc != -EILSEQ)
		__builtin_trap();
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct raft_mux_preamble pre, part;
	int rc = decode(data, size, &pre);
	if (rc == 0) {
		size_t n = strnlen(pre.address, sizeof(pre.address));
		if (pre.len > size || pre.len % 8 || pre.len > RAFT_MUX_PREAMBLE_MAX ||
		    n == 0 || n == sizeof(pre.address) || pre.server_id == 0)
			__builtin_trap();
	}
	/* As the reader sees it: growing prefixes, each decoded alone. The
	 * decoder never looks past RAFT_MUX_PREAMBLE_MAX bytes, so longer
	 * prefixes add nothing. */
	size_t end = size < RAFT_MUX_PREAMBLE_MAX + 8 ? size : RAFT_MUX_PREAMBLE_MAX + 8;
	bool decided = false;
	for (size_t len = 0; len <= end; len++) {
		int r = decode(data, len, &part);
		if (rc == 0) {
			if (len < pre.len && (r <= 0 || (size_t)r > pre.len))
				__builtin_trap();   /* decided early, or asked past the preamble */
			if (len >= pre.len && (r != 0 || part.len != pre.len || part.group != pre.group ||
					       part.server_id != pre.server_id ||
					       strcmp(part.address, pre.address)))
				__builtin_trap();
		} else if (rc > 0) {
			if (r <= 0 || r > rc)
				__builtin_trap();   /* more bytes can only ask for more */
		} else {
			if (decided && r != rc)
				__builtin_trap();   /* an error, once shown, stays */
			if (r <= 0 && r != rc)
				__builtin_trap();
			decided = r == rc;
		}
	}
	if (rc < 0 && !decided)
		__builtin_trap();   /* the error must show within RAFT_MUX_PREAMBLE_MAX bytes */
	if (rc != 0)
		return 0;
	uint8_t buf[RAFT_MUX_PREAMBLE_MAX];
	int n = raft_mux_preamble_encode(buf, sizeof(buf), pre.group, pre.server_id, pre.address);
	if (n <= 0 || (size_t)n > pre.len)
		__builtin_trap();   /* what we read, we can write (minimal padding) */
	struct raft_mux_preamble again;
	if (raft_mux_preamble_decode(buf, (size_t)n, &again) != 0 || again.len != (size_t)n ||
	    again.group != pre.group || again.server_id != pre.server_id ||
	    strcmp(again.address, pre.address))
		__builtin_trap();
	return 0;
}
