/*
 * err.h — IOLake's error convention and its table of domain errors.
 *
 * Every action returns 0 (or a count) on success and a negative number on
 * failure. OS errors travel as -errno, unchanged. Errors that belong to
 * IOLake itself are listed once below (an X-macro: name, code, text,
 * retryable) and live above IOL_ERR_BASE so they never collide with errno.
 * iol_strerror() names either kind.
 */
#ifndef COMMON_ERR_H
#define COMMON_ERR_H

#include <stdbool.h>

#define IOL_ERR_BASE 4096

/*       name            code  text                                     retryable */
#define IOL_ERRORS(X)                                                              \
	X(CHECKSUM,     4097, "checksum mismatch",                         false)      \
	X(CORRUPT,      4098, "corrupt record",                            false)      \
	X(NOT_FOUND,    4099, "not found",                                 false)      \
	X(EXISTS,       4100, "already exists",                            false)      \
	X(UNAVAILABLE,  4101, "peer unavailable",                          true)       \
	X(TIMEOUT,      4102, "deadline exceeded",                         true)       \
	X(CONFLICT,     4103, "condition not met",                         false)      \
	X(NO_SPACE,     4104, "no space left",                             false)      \
	X(BAD_FORMAT,   4105, "unknown or newer on-disk format",           false)      \
	X(NOT_LEADER,   4106, "not the leader",                            true)       \
	X(SHUTDOWN,     4107, "shutting down",                             true)       \
	X(PROTOCOL,     4108, "protocol error",                            false)      \
	X(TOO_LARGE,    4109, "too large",                                 false)

enum iol_err {
#define IOL_ERR_ENUM(name, code, text, retry) IOL_E##name = -(code),
	IOL_ERRORS(IOL_ERR_ENUM)
#undef IOL_ERR_ENUM
};

/* Text for a negative error: an IOLake domain error or -errno. Never NULL;
 * the string is static. */
const char *iol_strerror(int err);

/* Name of a domain error ("CHECKSUM") or of an errno ("ENOENT"); static. */
const char *iol_errname(int err);

/* Whether retrying the same operation may succeed (peer down, timeout,
 * EAGAIN, ...). */
bool iol_err_retryable(int err);

#endif
