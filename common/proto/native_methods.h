/*
 * native_methods.h — the method numbers of the native protocol's RPC
 * service (iolake.native.Native in native.proto), defined once for the
 * gateway's service, libiolake and the bench. A method is its index in the
 * service descriptor, the order of the `rpc` lines in native.proto: append
 * new methods at the end of both. test_proto_methods checks every name
 * here against the generated descriptor. Also the protocol's shared
 * limits.
 */
#ifndef PROTO_NATIVE_METHODS_H
#define PROTO_NATIVE_METHODS_H

#include "proto/native.pb-c.h"

#define NATIVE_SVC (&iolake__native__native__descriptor)

/* The most payload bytes one call carries (a Put, a PutAppend, a Get's
 * answer): larger bodies are PutBegin/PutAppend/PutCommit and ranged Gets. */
#define NATIVE_CHUNK_MAX (16u << 20)
/* The largest object (as S3's single PUT). */
#define NATIVE_OBJECT_MAX (5ull << 30)
#define NATIVE_LIST_MAX 1000
/* Hello's challenge: 16 random bytes as hex. */
#define NATIVE_CHALLENGE_LEN 32

enum native_method {
	NATIVE_M_PUT,          /* Put */
	NATIVE_M_PUT_BEGIN,    /* PutBegin */
	NATIVE_M_PUT_APPEND,   /* PutAppend */
	NATIVE_M_PUT_COMMIT,   /* PutCommit */
	NATIVE_M_PUT_ABORT,    /* PutAbort */
	NATIVE_M_GET,          /* Get */
	NATIVE_M_HEAD,         /* Head */
	NATIVE_M_DELETE,       /* Delete */
	NATIVE_M_LIST,         /* List */
	NATIVE_M_HELLO,        /* Hello */
	NATIVE_M_LOGIN,        /* Login */
	NATIVE_M_COUNT
};

#endif
