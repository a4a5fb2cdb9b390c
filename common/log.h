/*
 * log.h — structured logging: one logfmt line per event, e.g.
 *
 *   ts=2026-11-29T23:59:59.123Z level=info svc=osd.3 req=ab12cd34ef56a789 msg="put shard" shard=7 len=4096
 *
 * Fields in order: ts (UTC, milliseconds), level, the calling thread's
 * context (log_set_thread_context), req (the _REQ macros), msg (quoted when
 * it needs to be), then the caller's printf-formatted " key=value" fields.
 *
 * Cost and guarantees:
 *   - The level check is one relaxed atomic load and a compare, done in the
 *     macro before any argument is evaluated or formatted.
 *   - A line is built in a stack buffer (no malloc) and written with one
 *     write(2), so lines from many threads never interleave (pipes: the line
 *     is at most PIPE_BUF bytes; files: open them O_APPEND). A line longer
 *     than LOG_LINE_MAX is cut and ends in LOG_TRUNC_MARK.
 *   - Logging never fails its caller and preserves errno. Write errors are
 *     dropped: there is nowhere better to report them.
 *
 * Field values are formatted by the caller: a value that may hold spaces,
 * quotes or '=' should go through LOG_Q() (or log_quote()).
 */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

enum log_level {
	LOG_LEVEL_DEBUG = 0,
	LOG_LEVEL_INFO = 1,
	LOG_LEVEL_WARN = 2,
	LOG_LEVEL_ERROR = 3,
};

#define LOG_LINE_MAX 4096                 /* bytes, newline included */
#define LOG_TRUNC_MARK " ...[truncated]"  /* ends a line cut at LOG_LINE_MAX */
#define LOG_CONTEXT_MAX 128               /* bytes of thread context, NUL included */
#define LOG_REQ_ID_LEN 16                 /* hex chars in a request id */
#define LOG_QUOTE_MAX 512                 /* LOG_Q() buffer, NUL included */

/* The minimum level written. Read by the macros; set with log_set_level. */
extern atomic_int log_level_min;

static inline bool log_enabled(enum log_level level)
{
	return (int)level >= atomic_load_explicit(&log_level_min, memory_order_relaxed);
}

/* Write lines at level and above from now on (any thread). Default: info. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* "debug", "info", "warn" (or "warning"), "error", any case: the level
 * (>= 0), or -EINVAL for anything else. */
int log_parse_level(const char *name);

/* "debug", "info", "warn", "error"; "?" for a value outside the enum. */
const char *log_level_name(enum log_level level);

/* Send lines to fd from now on (default 2, stderr); returns the previous
 * fd. The caller owns fd and keeps it open while logging may use it. */
int log_set_fd(int fd);

/* Text put after level= on every line this thread writes, e.g.
 * "svc=osd.3 loop=io2" (logfmt, no leading/trailing space). NULL or ""
 * clears it. Copied. Returns 0, or -ENAMETOOLONG if it does not fit in
 * LOG_CONTEXT_MAX (the context is then left unchanged). */
int log_set_thread_context(const char *ctx);

/* Write one line. Normally called through the LOG_* macros, which check
 * the level first; this function checks it again. reqid may be NULL. fmt
 * formats the fields and must begin with a space unless it is empty (the
 * macros add it). */
void log_write(enum log_level level, const char *reqid, const char *msg,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void log_vwrite(enum log_level level, const char *reqid, const char *msg,
		const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

/*
 * LOG_INFO(msg)                             ts=... level=info msg=...
 * LOG_INFO(msg, "shard=%u len=%zu", s, n)   ... msg=... shard=7 len=4096
 * LOG_INFO_REQ(reqid, msg, fmt, ...)        ... req=<reqid> msg=...
 *
 * fmt must be a string literal (it is pasted after " "); the compiler
 * checks it against the arguments. Arguments are not evaluated when the
 * level is disabled.
 */
#define LOG_AT(level, reqid, msg, ...)                                        \
	do {                                                                  \
		if (log_enabled(level))                                       \
			log_write((level), (reqid), (msg), " " __VA_ARGS__);  \
	} while (0)

#define LOG_DEBUG(msg, ...) LOG_AT(LOG_LEVEL_DEBUG, NULL, msg, __VA_ARGS__)
#define LOG_INFO(msg, ...)  LOG_AT(LOG_LEVEL_INFO, NULL, msg, __VA_ARGS__)
#define LOG_WARN(msg, ...)  LOG_AT(LOG_LEVEL_WARN, NULL, msg, __VA_ARGS__)
#define LOG_ERROR(msg, ...) LOG_AT(LOG_LEVEL_ERROR, NULL, msg, __VA_ARGS__)

#define LOG_DEBUG_REQ(req, msg, ...) LOG_AT(LOG_LEVEL_DEBUG, req, msg, __VA_ARGS__)
#define LOG_INFO_REQ(req, msg, ...)  LOG_AT(LOG_LEVEL_INFO, req, msg, __VA_ARGS__)
#define LOG_WARN_REQ(req, msg, ...)  LOG_AT(LOG_LEVEL_WARN, req, msg, __VA_ARGS__)
#define LOG_ERROR_REQ(req, msg, ...) LOG_AT(LOG_LEVEL_ERROR, req, msg, __VA_ARGS__)

/* s as a logfmt value: unchanged when it is non-empty and holds no space,
 * '=', '"', '\\' or control byte; otherwise in double quotes with '"', '\\',
 * \n, \r, \t escaped and other control bytes as \xHH. NULL gives "(null)".
 * Written to dst (always NUL-terminated when dstlen > 0; a value that does
 * not fit is cut and, if quoted, still closed with '"'). Returns dst. */
char *log_quote(char *dst, size_t dstlen, const char *s);

/* log_quote into a temporary that lives until the end of the enclosing
 * block — inside a LOG_* call, until the line is written:
 *   LOG_INFO("get", "key=%s", LOG_Q(key));  */
#define LOG_Q(s) log_quote((char[LOG_QUOTE_MAX]){0}, LOG_QUOTE_MAX, (s))

/* A new request id: 16 lowercase hex chars and a NUL in out. Ids from one
 * process are distinct for 2^64 calls (a bijective mix of a 64-bit counter
 * that starts at a random value; reseeded in a forked child), and look
 * random, so ids from different processes rarely collide. One atomic add,
 * no syscall (but the first call reads getrandom). Any thread. Returns out. */
char *log_new_request_id(char out[LOG_REQ_ID_LEN + 1]);

#endif
