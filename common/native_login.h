/*
 * native_login.h — the client half of a native-protocol connection's
 * login (docs/native-protocol.md, "Sessions"): Hello, then a Login signed
 * over Hello's challenge (common/native_sig), on one rpc_channel. After it
 * answers OK, calls on that channel may go unsigned (an Auth with no
 * authorization) while its connection lives; a call answered
 * "LoginRequired: ..." met a new connection (the channel reconnected) or
 * a gateway that forgot the login: log in again and resend it.
 *
 * Used by libiolake (lib/iolake.c) and the bench's native engine
 * (bench/s3bench/s3b_native.c). Owns nothing past the callback.
 * Thread: the channel's loop.
 */
#ifndef COMMON_NATIVE_LOGIN_H
#define COMMON_NATIVE_LOGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rpc.h"

/* status RPC_OK: logged in; user is whom the key belongs to. Otherwise
 * status and message are the failed call's (RPC_UNIMPLEMENTED from
 * Hello: a gateway without sessions, so sign every call). */
typedef void (*native_login_cb)(void *ud, int status, const char *message, const char *user);

/* Log ch's connection in as access_key: key is the day's signing key
 * (sigv4_signing_key(secret, amz_date[0..8], region, "s3")), amz_date
 * YYYYMMDDTHHMMSSZ of that day. cb runs once, on ch's loop, never inside
 * this call. 0, or -ENOMEM (cb will not run). */
int native_login_start(struct rpc_channel *ch, const uint8_t key[32], const char *access_key,
		       const char *region, const char *amz_date, uint32_t timeout_ms,
		       native_login_cb cb, void *ud);

/* "LoginRequired: ...": the call needs a (new) login on its connection. */
bool native_login_required(int status, const char *message);

#endif
