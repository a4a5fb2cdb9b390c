/*
 * log.c — logfmt lines built on the stack and written with one write(2).
 *
 * Owns: the process-wide minimum level and output fd (atomics, any thread),
 * each thread's context string (thread-local), and the request-id counter.
 * There is no lock and no queue: a line is formatted by the thread that logs
 * it, in a LOG_LINE_MAX buffer, and handed to the kernel in one call, which
 * is what keeps lines whole (write(2) on a pipe is atomic up to PIPE_BUF,
 * 4096 on Linux, and on an O_APPEND file for any length).
 *
 * Invariant: every line written ends in exactly one '\n' and holds no other:
 * msg and req are escaped, and raw CR/LF that a caller's fields carry are
 * turned into spaces, so a peer's bytes cannot forge a log line.
 *
 * Does not: buffer, rotate files, rate-limit, or log asynchronously. A slow
 * stderr slows the logging thread; point the fd at a file or journald.
 */
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

_Static_assert(LOG_LINE_MAX <= 4096, "a line must fit PIPE_BUF to stay atomic");

atomic_int log_level_min = LOG_LEVEL_INFO;
static atomic_int log_fd = 2;

static _Thread_local char tl_ctx[LOG_CONTEXT_MAX];
static _Thread_local time_t tl_ts_sec = -1;  /* second cached in tl_ts_text */
static _Thread_local char tl_ts_text[24];    /* "2026-11-29T23:59:59" */

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level level)
{
	atomic_store_explicit(&log_level_min, (int)level, memory_order_relaxed);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&log_level_min, memory_order_relaxed);
}

int log_parse_level(const char *name)
{
	if (!name)
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		if (strcasecmp(name, level_names[i]) == 0)
			return i;
	if (strcasecmp(name, "warning") == 0)
		return LOG_LEVEL_WARN;
	return -EINVAL;
}

const char *log_level_name(enum log_level level)
{
	if ((unsigned)level > LOG_LEVEL_ERROR)
		return "?";
	return level_names[level];
}

int log_set_fd(int fd)
{
	return atomic_exchange(&log_fd, fd);
}

int log_set_thread_context(const char *ctx)
{
	if (!ctx)
		ctx = "";
	size_t n = strlen(ctx);
	if (n >= sizeof(tl_ctx))
		return -ENAMETOOLONG;
	memcpy(tl_ctx, ctx, n + 1);
	return 0;
}

/* ------------------------------------------------------------ quoting */

static bool needs_quote(const char *s)
{
	if (!*s)
		return true;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == '=' || *p == '"' || *p == '\\' || *p == 0x7f)
			return true;
	return false;
}

/* Write s as a logfmt value into dst, at most cap bytes, no NUL. Returns
 * the bytes written; sets *cut when s did not fit (a quoted value is still
 * closed). */
static size_t quote_into(char *dst, size_t cap, const char *s, bool *cut)
{
	static const char hex[] = "0123456789abcdef";
	if (!s)
		s = "(null)";
	if (!needs_quote(s)) {
		size_t n = strlen(s);
		if (n > cap) {
			n = cap;
			*cut = true;
		}
		memcpy(dst, s, n);
		return n;
	}
	if (cap < 2) {
		*cut = true;
		return 0;
	}
	size_t len = 0, room = cap - 1; /* keep a byte for the closing quote */
	dst[len++] = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[4];
		size_t n = 2;
		esc[0] = '\\';
		switch (*p) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			if (*p < ' ' || *p == 0x7f) {
				esc[1] = 'x';
				esc[2] = hex[*p >> 4];
				esc[3] = hex[*p & 15];
				n = 4;
			} else {
				esc[0] = (char)*p;
				n = 1;
			}
		}
		if (len + n > room) {
			*cut = true;
			break;
		}
		memcpy(dst + len, esc, n);
		len += n;
	}
	dst[len++] = '"';
	return len;
}

char *log_quote(char *dst, size_t dstlen, const char *s)
{
	if (dstlen == 0)
		return dst;
	bool cut = false;
	size_t n = quote_into(dst, dstlen - 1, s, &cut);
	dst[n] = '\0';
	return dst;
}

/* ------------------------------------------------------------ lines */

/* A line under construction. Content never exceeds LOG_LINE_MAX - 1 bytes,
 * leaving room for the '\n'; buf has one more byte for vsnprintf's NUL. */
struct line {
	char buf[LOG_LINE_MAX + 1];
	size_t len;
	bool cut;
};

#define LINE_CAP (LOG_LINE_MAX - 1)

static void line_add(struct line *l, const char *s, size_t n)
{
	if (n > LINE_CAP - l->len) {
		n = LINE_CAP - l->len;
		l->cut = true;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void line_str(struct line *l, const char *s)
{
	line_add(l, s, strlen(s));
}

static void line_quoted(struct line *l, const char *s)
{
	l->len += quote_into(l->buf + l->len, LINE_CAP - l->len, s, &l->cut);
}

static void line_ts(struct line *l)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts); /* vDSO: no syscall */
	if (ts.tv_sec != tl_ts_sec) {
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		strftime(tl_ts_text, sizeof(tl_ts_text), "%Y-%m-%dT%H:%M:%S", &tm);
		tl_ts_sec = ts.tv_sec;
	}
	char ms[8];
	snprintf(ms, sizeof(ms), ".%03dZ", (int)(ts.tv_nsec / 1000000));
	line_str(l, "ts=");
	line_str(l, tl_ts_text);
	line_str(l, ms);
}

__attribute__((format(printf, 2, 0)))
static void line_fields(struct line *l, const char *fmt, va_list ap)
{
	if (!fmt[0] || (fmt[0] == ' ' && !fmt[1]))
		return; /* the macros' " " for "no fields" */
	size_t room = LINE_CAP - l->len;
	char *start = l->buf + l->len;
	int n = vsnprintf(start, room + 1, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n > room) {
		n = (int)room;
		l->cut = true;
	}
	/* A caller's %s may carry a peer's bytes: one event, one line. */
	for (int i = 0; i < n; i++)
		if (start[i] == '\n' || start[i] == '\r')
			start[i] = ' ';
	l->len += (size_t)n;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		/* Only a full disk or a signal makes a short write; finish the
		 * line rather than lose its end. */
		p += w;
		n -= (size_t)w;
	}
}

void log_vwrite(enum log_level level, const char *reqid, const char *msg,
		const char *fmt, va_list ap)
{
	if (!log_enabled(level))
		return;
	int saved_errno = errno;
	struct line l;
	l.len = 0;
	l.cut = false;

	line_ts(&l);
	line_str(&l, " level=");
	line_str(&l, log_level_name(level));
	if (tl_ctx[0]) {
		line_str(&l, " ");
		line_str(&l, tl_ctx);
	}
	if (reqid) {
		line_str(&l, " req=");
		line_quoted(&l, reqid);
	}
	line_str(&l, " msg=");
	line_quoted(&l, msg);
	line_fields(&l, fmt, ap);

	if (l.cut) {
		size_t mark = sizeof(LOG_TRUNC_MARK) - 1;
		if (l.len > LINE_CAP - mark)
			l.len = LINE_CAP - mark;
		memcpy(l.buf + l.len, LOG_TRUNC_MARK, mark);
		l.len += mark;
	}
	l.buf[l.len++] = '\n';
	write_all(atomic_load_explicit(&log_fd, memory_order_relaxed), l.buf, l.len);
	errno = saved_errno;
}

void log_write(enum log_level level, const char *reqid, const char *msg,
	       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vwrite(level, reqid, msg, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ request ids */

static atomic_uint_fast64_t reqid_next;
static pthread_once_t reqid_once = PTHREAD_ONCE_INIT;

static void reqid_seed(void)
{
	uint64_t seed;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		       ((uint64_t)getpid() << 48);
	}
	atomic_store(&reqid_next, seed);
}

static void reqid_init(void)
{
	reqid_seed();
	/* A forked child would otherwise hand out its parent's next ids. */
	pthread_atfork(NULL, NULL, reqid_seed);
}

/* splitmix64's finaliser: each step (xor-shift, multiply by an odd
 * constant) is invertible, so distinct counters give distinct ids. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

char *log_new_request_id(char out[LOG_REQ_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	pthread_once(&reqid_once, reqid_init);
	uint64_t v = mix64(atomic_fetch_add_explicit(&reqid_next, 1, memory_order_relaxed));
	for (int i = LOG_REQ_ID_LEN - 1; i >= 0; i--, v >>= 4)
		out[i] = hex[v & 15];
	out[LOG_REQ_ID_LEN] = '\0';
	return out;
}
