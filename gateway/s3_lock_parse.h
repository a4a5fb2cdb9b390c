/*
 * s3_lock_parse.h — the object lock documents and dates (issue 17), bytes
 * in, values out: ObjectLockConfiguration, Retention and LegalHold bodies
 * (expat, with xml_parse.h's limits: no DOCTYPE, so no entity is ever
 * expanded; bounded depth and text) and the ISO 8601 dates of
 * x-amz-object-lock-retain-until-date and <RetainUntilDate>.
 *
 * Pure: no I/O, no allocation the caller sees; any thread. Fuzzed by
 * tests/fuzz/fuzz_lock_xml.c. Does not decide S3 errors beyond saying
 * which kind: -EBADMSG is MalformedXML, -EINVAL a well-formed document
 * with a bad value (the caller answers InvalidArgument or MalformedXML as
 * S3 does for that field), -E2BIG a body over max_len.
 */
#ifndef GATEWAY_S3_LOCK_PARSE_H
#define GATEWAY_S3_LOCK_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S3_LOCK_BODY_MAX 4096   /* any of the three documents */

/* meta.proto LockMode values */
enum s3_lock_mode { S3_LOCK_NONE = 0, S3_LOCK_GOVERNANCE = 1, S3_LOCK_COMPLIANCE = 2 };

/* "GOVERNANCE" / "COMPLIANCE" (exact, as S3) of n bytes: the mode, or -1. */
int s3_lock_mode_parse(const char *s, size_t n);
/* "GOVERNANCE", "COMPLIANCE", "" for NONE. */
const char *s3_lock_mode_name(int mode);

/* An ISO 8601 date-time, YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
 * (what SDKs send), or a date alone YYYY-MM-DD (midnight UTC), of n bytes,
 * to Unix ms (the fraction to ms, truncated). 0, or -EINVAL (malformed,
 * out of range, before 1970 or after 9999). */
int s3_lock_date_parse(const char *s, size_t n, uint64_t *ms);

/* <ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>
 * <Rule><DefaultRetention><Mode>…</Mode><Days>…</Days>|<Years>…</Years>
 * </DefaultRetention></Rule></ObjectLockConfiguration>. */
struct s3_lock_config {
	bool enabled;              /* ObjectLockEnabled was "Enabled" */
	bool has_rule;
	int mode;                  /* enum s3_lock_mode */
	uint32_t days, years;      /* at most one is non-zero */
};

/* 0, -EBADMSG (malformed, wrong root, no or another ObjectLockEnabled, an
 * element twice, a Rule without DefaultRetention or Mode, Days and Years
 * both or neither), -EINVAL (a Mode not GOVERNANCE/COMPLIANCE, Days or
 * Years not a positive integer, Days over 36,500 or Years over 100: S3's
 * InvalidArgument), -E2BIG. */
int s3_lock_parse_config(const char *body, size_t len, size_t max_len, struct s3_lock_config *c);

/* <Retention><Mode>…</Mode><RetainUntilDate>…</RetainUntilDate></Retention>:
 * both, or neither (an empty Retention: remove it; mode NONE, until 0).
 * 0, -EBADMSG (malformed, wrong root, one without the other, an element
 * twice), -EINVAL (a bad mode or date), -E2BIG. */
int s3_lock_parse_retention(const char *body, size_t len, size_t max_len, int *mode,
			    uint64_t *until_ms);

/* <LegalHold><Status>ON|OFF</Status></LegalHold>. 0, -EBADMSG (malformed,
 * wrong root, no Status or another value), -E2BIG. */
int s3_lock_parse_legal_hold(const char *body, size_t len, size_t max_len, bool *on);

#endif
