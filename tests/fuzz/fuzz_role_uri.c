/*
 * fuzz_role_uri.c — libFuzzer target for the certificate role parser
 * (common/rpc_authz.c rpc_authz_parse_uri): the subjectAltName URIs of a
 * peer's certificate, read after a handshake with any CA-signed node.
 *
 * Input: URIs separated by '\n' (any bytes), folded into one identity as
 * a certificate's SAN list is. Checks, for every input:
 *   - a URI without the "iolake:" prefix is ignored (1) and changes
 *     nothing;
 *   - an accepted one (0) is exactly "iolake:role:R" with R one of the
 *     four names (its bit then set) or "iolake:node:N" with N decimal,
 *     1..2^32-1, no leading zero (node_id then N);
 *   - only -EINVAL otherwise; roles never leave RPC_ROLE_ALL; a refused
 *     URI leaves the identity as it was;
 *   - rpc_roles_format always writes a NUL-terminated string.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rpc_authz.h"

static void check_one(const uint8_t *u, size_t n, struct rpc_ident *id)
{
	struct rpc_ident before = *id;
	int rc = rpc_authz_parse_uri((const char *)u, n, id);
	if (rc == 1) {
		if (n >= 7 && !memcmp(u, "iolake:", 7))
			__builtin_trap();
		if (memcmp(&before, id, sizeof(before)))
			__builtin_trap();
		return;
	}
	if (rc == -EINVAL) {
		if (memcmp(&before, id, sizeof(before)))
			__builtin_trap();
		return;
	}
	if (rc != 0 || n < 12 || memcmp(u, "iolake:", 7))
		__builtin_trap();
	if (!memcmp(u + 7, "role:", 5)) {
		unsigned bit = rpc_role_parse((const char *)u + 12, n - 12);
		if (!bit || !(id->roles & bit))
			__builtin_trap();
	} else if (!memcmp(u + 7, "node:", 5)) {
		char num[16];
		if (n - 12 == 0 || n - 12 > 10)
			__builtin_trap();
		memcpy(num, u + 12, n - 12);
		num[n - 12] = 0;
		for (size_t i = 0; num[i]; i++)
			if (num[i] < '0' || num[i] > '9')
				__builtin_trap();
		if (num[0] == '0' || strtoull(num, NULL, 10) != id->node_id)
			__builtin_trap();
	} else {
		__builtin_trap();
	}
	if (id->roles & ~(unsigned)RPC_ROLE_ALL)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	struct rpc_ident id;
	memset(&id, 0, sizeof(id));
	size_t start = 0;
	for (size_t i = 0; i <= size; i++)
		if (i == size || data[i] == '\n') {
			check_one(data + start, i - start, &id);
			start = i + 1;
		}
	char buf[64];
	rpc_roles_format(id.roles, buf, sizeof(buf));
	if (!memchr(buf, 0, sizeof(buf)))
		__builtin_trap();
	return 0;
}
