/*
 * fuzz_fault_spec.c — libFuzzer target for the RPC fault layer's spec
 * parser (common/rpc_fault.h rpc_fault_set): a test's --debug-fault
 * string. Whatever comes: no overread or leak, a refusal always says why
 * and keeps the rules set before, and a spec accepted once is accepted
 * again (parsing does not depend on the rules it replaces).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/rpc_fault.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char spec[2048];
	char err[256];
	size_t n = size < sizeof(spec) - 1 ? size : sizeof(spec) - 1;
	memcpy(spec, data, n);
	spec[n] = 0;
	if (rpc_fault_set("drop,peer=before:1", err, sizeof(err)))
		__builtin_trap();
	err[0] = 0;
	int rc = rpc_fault_set(spec, err, sizeof(err));
	if (rc == -EINVAL && (!err[0] || !rpc_fault_enabled()))
		__builtin_trap();
	if (rc == 0) {
		if (rpc_fault_enabled() != (spec[0] != 0))
			__builtin_trap();
		if (rpc_fault_set(spec, err, sizeof(err)))
			__builtin_trap();
	}
	if (rpc_fault_set(NULL, err, sizeof(err)) || rpc_fault_enabled())
		__builtin_trap();
	return 0;
}
