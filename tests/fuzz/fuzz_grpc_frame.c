/*
 * fuzz_grpc_frame.c — libFuzzer target for the gRPC length-prefixed
 * message parser (common/rpc_wire.c) and the grpc-timeout / grpc-message
 * decoders. The first input byte picks how the rest is split into feeds,
 * so prefixes split across DATA frames are covered.
 *
 * Not built by the Makefile. Build by hand, e.g.:
 *   clang -g -O1 -fsanitize=fuzzer,address -I. -Ibuild/gen \
 *     tests/fuzz/fuzz_grpc_frame.c common/rpc_wire.c common/buf.c -o fuzz_grpc_frame
 */
#include <stddef.h>
#include <stdint.h>

#include "common/rpc_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)data[0] % 64 + 1;
	data++, size--;

	struct grpc_parser p;
	grpc_parser_init(&p, 1u << 16, 2);
	for (size_t off = 0; off < size;) {
		size_t n = size - off < step ? size - off : step;
		if (grpc_parser_feed(&p, data + off, n) != 0)
			break;
		off += n;
	}
	for (unsigned i = 0; i < p.nmsgs; i++)
		if (p.msgs[i]->len != p.msgs[i]->cap)
			__builtin_trap(); /* a delivered message is always whole */
	grpc_parser_reset(&p);

	uint64_t ms;
	(void)grpc_timeout_parse(data, size, &ms);
	char out[64];
	size_t n = grpc_message_decode(data, size, out, sizeof(out));
	if (n >= sizeof(out))
		__builtin_trap();
	return 0;
}
