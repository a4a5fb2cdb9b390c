/*
 * native_sig.h — the signature of a native-protocol call (issue 19,
 * docs/native-protocol.md): SigV4 (common/sigv4) over a canonical request
 * this protocol defines, so that the gateway verifies native calls with
 * the verifier, keys and caches S3 uses (gateway/s3_auth):
 *
 *   method   IOLAKE (no HTTP method: a native signature never verifies
 *            as an S3 request, nor the reverse)
 *   path     /iolake.native.Native/<Method>
 *   headers  host:iolake-native
 *            x-amz-content-sha256:<payload hash, or UNSIGNED-PAYLOAD>
 *            x-amz-date:<YYYYMMDDTHHMMSSZ>
 *            x-iolake-args-sha256:<SHA-256 of the request packed without auth>
 *
 * Every request message of native.proto has its Auth in field "auth";
 * the arguments' hash covers every other field, whatever the method.
 *
 * Pure: no I/O, no clock (callers pass the date); any thread.
 */
#ifndef COMMON_NATIVE_SIG_H
#define COMMON_NATIVE_SIG_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sigv4.h"

#define NATIVE_SIG_METHOD "IOLAKE"
#define NATIVE_SIG_HOST "iolake-native"
#define NATIVE_SIG_SIGNED_HEADERS "host;x-amz-content-sha256;x-amz-date;x-iolake-args-sha256"
#define NATIVE_SIG_AUTHZ_MAX 512   /* an Authorization value, NUL included */

/* The canonical request of one call, as sigv4 and s3_auth take it. The
 * strings point into the struct and into the caller's (amz_date,
 * content_sha256, authorization), which must outlive its use. */
struct native_sig_req {
	char path[96];
	char args_sha256[65];
	struct sigv4_header hdrs[5];
	size_t n_hdrs;
	struct sigv4_request req;
};

/* The hex SHA-256 of msg packed with its "auth" field unset (msg is
 * restored before returning). 0, -EINVAL (msg has no message field
 * "auth"), -ENOMEM. */
int native_sig_args_sha256(const ProtobufCMessage *msg, char out[65]);

/* Build the canonical request of a call of method (an index in svc) with
 * request msg. authorization: the value to verify (server side), or NULL
 * (client side, before signing: no Authorization header). 0, -EINVAL
 * (method out of range, msg has no auth field, a string is too long or
 * has a line break), -ENOMEM. */
int native_sig_build(struct native_sig_req *r, const ProtobufCServiceDescriptor *svc,
		     unsigned method, const ProtobufCMessage *msg, const char *amz_date,
		     const char *content_sha256, const char *authorization);

/* Client side: sign a call. key: sigv4_signing_key(secret, date8, region,
 * "s3"); amz_date: YYYYMMDDTHHMMSSZ of the same day. Writes the
 * Authorization value into authz (NATIVE_SIG_AUTHZ_MAX bytes); the
 * caller then points msg's Auth at authz, amz_date and content_sha256.
 * 0 or a negative errno. */
int native_sig_sign(const uint8_t key[32], const char *access_key, const char *region,
		    const char *amz_date, const ProtobufCServiceDescriptor *svc, unsigned method,
		    const ProtobufCMessage *msg, const char *content_sha256,
		    char authz[NATIVE_SIG_AUTHZ_MAX]);

/* The hex SHA-256 of a payload (content_sha256 when signing it). */
void native_sig_payload_sha256(const void *data, size_t len, char out[65]);

#endif
