/*
 * fuzz_leader_hint.c — libFuzzer target for the leader address a meta
 * member names to a client (meta/client.h meta_client_leader_addr): the
 * message of a "not leader; leader=HOST:PORT" redirect, or the payload
 * of an answer a follower forwarded ("leader=HOST:PORT"), both bytes from
 * the network. Whatever comes: no overread, the address fits its buffer,
 * holds no separator (' ' or ';') and is what follows the first
 * "leader=" of the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meta/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[1024];
	size_t n = size < sizeof(msg) - 1 ? size : sizeof(msg) - 1;
	memcpy(msg, data, n);
	msg[n] = 0;
	char out[64];
	size_t cap = size ? 1 + data[0] % sizeof(out) : sizeof(out);
	int len = meta_client_leader_addr(msg, out, cap);
	if (len < 0)
		return 0;
	if ((size_t)len >= cap || strlen(out) != (size_t)len || strpbrk(out, " ;"))
		__builtin_trap();
	const char *p = strstr(msg, "leader=");
	if (!p || strncmp(p + 7, out, (size_t)len) != 0)
		__builtin_trap();
	return 0;
}
