/*
 * fuzz_native_req.c — libFuzzer target for what the gateway does with a
 * native-protocol request before any method runs (gateway/native_srv.c):
 * the message unpacked as the method's request type (the first byte picks
 * the method), its Auth made into common/native_sig's canonical request
 * (the arguments re-packed without Auth and hashed) and verified by
 * gateway/s3_auth against a fixed key. Bytes from the network: whatever
 * comes, no crash, no leak; a verdict of OK only for a signature made with
 * the key (the seeds hold such calls, so the fuzzer mutates real ones).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common/native_sig.h"
#include "common/proto/native_methods.h"
#include "gateway/s3_auth.h"

#define AK "AKIANATIVEFUZZ000001"
#define SK "native-fuzz-secret-0123456789abcdefghij"
#define NOW 1764633600 /* 20251202T000000Z: the seeds' date */

static void lookup(void *ctx, struct s3_cred_lookup *l)
{
	(void)ctx;
	if (!strcmp(l->access_key, AK))
		l->done(l, 0, &(struct s3_cred){ .secret = SK, .user = "fuzz" });
	else
		l->done(l, -ENOENT, NULL);
}

static struct s3_auth *auth;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!auth) {
		struct s3_auth_cfg cfg = { .region = "us-east-1", .source = { lookup, NULL },
					   .no_sigv2 = true, .cache_slots = 8 };
		auth = s3_auth_new(&cfg);
	}
	if (!size)
		return 0;
	unsigned method = data[0] % NATIVE_M_COUNT;
	const ProtobufCMessageDescriptor *d = NATIVE_SVC->methods[method].input;
	ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, size - 1, data + 1);
	if (!m)
		return 0;
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, "auth");
	if (!f) {
		if (method != NATIVE_M_HELLO)
			__builtin_trap();   /* every request but Hello has its Auth */
		protobuf_c_message_free_unpacked(m, NULL);
		return 0;
	}
	const Iolake__Native__Auth *a = *(Iolake__Native__Auth **)((char *)m + f->offset);
	struct native_sig_req sig;
	if (a && a->authorization && a->authorization[0] &&
	    !native_sig_build(&sig, NATIVE_SVC, method, m, a->amz_date, a->content_sha256,
			      a->authorization)) {
		struct s3_auth_req r;
		memset(&r, 0, sizeof(r));
		r.method = sig.req.method;
		r.path = sig.req.path;
		r.path_len = sig.req.path_len;
		r.query = "";
		r.headers = sig.hdrs;
		r.n_headers = sig.n_hdrs;
		r.now = NOW;
		r.now_ms = 1;
		if (s3_auth_verify(auth, &r, NULL) != 0)
			__builtin_trap();   /* the source is synchronous */
	}
	protobuf_c_message_free_unpacked(m, NULL);
	return 0;
}
