/*
 * lc_rule.h — S3 bucket lifecycle configurations as values (issue 17): a
 * LifecycleConfiguration document parsed and checked as S3 checks it into
 * meta's LifecycleConfig, that record rendered back as XML, and the rule
 * matcher the worker (lc_worker) and the x-amz-expiration header share:
 * which rule applies to an object, a noncurrent version, a delete marker
 * or an upload, and when it is due.
 *
 * Time: a "day" is day_ms milliseconds (86,400,000; the test clock,
 * --debug-lifecycle-day-seconds, makes it shorter). As S3, a rule of N
 * days is due at the first day boundary (midnight UTC: a multiple of
 * day_ms since the epoch) at or after the start time plus N days.
 *
 * Pure: no I/O, no clock; any thread. Owns nothing beyond what it
 * returns. Does not store or apply anything (s3_lifecycle, lc_worker).
 */
#ifndef GATEWAY_LC_RULE_H
#define GATEWAY_LC_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/s3_err.h"
#include "gateway/xml.h"
#include "proto/meta.pb-c.h"

#define LC_BODY_MAX (512 * 1024)   /* a LifecycleConfiguration document */
#define LC_RULES_MAX 1000
#define LC_ID_MAX 255
#define LC_DAY_MS 86400000ull

/* Parse and check a LifecycleConfiguration document (len bytes, need not
 * be NUL-terminated). S3E_OK and *out (malloc'd; lc_config_free), or the
 * S3 error with *msg pointing at a message (into msgbuf, or static; NULL:
 * the error's default): MalformedXML (not XML, unknown or misplaced
 * elements, a rule without Status or Filter/Prefix, Days with Date,
 * more than LC_RULES_MAX rules), InvalidArgument (non-positive days, a
 * Date not at midnight UTC, duplicate or too long IDs, sizes out of
 * order), InvalidRequest (a rule without an action, tags with
 * ExpiredObjectDeleteMarker or AbortIncompleteMultipartUpload),
 * NotImplemented (transitions: there are no storage classes to move to). */
enum s3_err lc_parse(const char *body, size_t len, Iolake__Meta__LifecycleConfig **out,
		     const char **msg, char *msgbuf, size_t msgcap);
void lc_config_free(Iolake__Meta__LifecycleConfig *c);

/* GetBucketLifecycleConfiguration's body for c. */
void lc_render(struct xml_w *w, const Iolake__Meta__LifecycleConfig *c);

/* An object as a rule's filter sees it (tags as ObjectRecord's map). */
struct lc_obj {
	const char *key;
	uint64_t size;
	Iolake__Meta__ObjectRecord__TagsEntry *const *tags;
	size_t n_tags;
};

/* Whether r is enabled and its filter (prefix, every tag, sizes) admits o. */
bool lc_rule_matches(const Iolake__Meta__LifecycleRule *r, const struct lc_obj *o);

/* The first day boundary at or after from_ms + days days. */
uint64_t lc_due_ms(uint64_t from_ms, uint32_t days, uint64_t day_ms);

/* When the current version o, written at mtime_ms, expires: the earliest
 * due time of the enabled rules admitting it with Expiration Days or
 * Date (*rule: that rule; ties: the first). 0: no rule expires it. */
uint64_t lc_current_expiry(const Iolake__Meta__LifecycleConfig *c, const struct lc_obj *o,
			   uint64_t mtime_ms, uint64_t day_ms,
			   const Iolake__Meta__LifecycleRule **rule);

/* Whether a noncurrent version o (noncurrent since since_ms, the nth
 * newest noncurrent version of its key, n from 1) is due at now_ms under a
 * rule with NoncurrentVersionExpiration: older than NoncurrentDays and
 * beyond the NewerNoncurrentVersions kept. */
bool lc_noncurrent_due(const Iolake__Meta__LifecycleConfig *c, const struct lc_obj *o,
		       uint64_t since_ms, uint32_t nth, uint64_t now_ms, uint64_t day_ms);

/* Whether a delete marker on key with no other version, made at
 * mtime_ms, goes at now_ms: a rule admitting it (a marker has size 0 and
 * no tags: a tag filter never admits one) with ExpiredObjectDeleteMarker,
 * or with Expiration Days once the marker is that old (S3 cleans expired
 * markers up under Days too). */
bool lc_marker_due(const Iolake__Meta__LifecycleConfig *c, const char *key, uint64_t mtime_ms,
		   uint64_t now_ms, uint64_t day_ms);

/* Whether an upload of key initiated at init_ms is due at now_ms under an
 * AbortIncompleteMultipartUpload rule admitting key by prefix. */
bool lc_upload_due(const Iolake__Meta__LifecycleConfig *c, const char *key, uint64_t init_ms,
		   uint64_t now_ms, uint64_t day_ms);

/* x-amz-expiration's value: expiry-date="<RFC 7231 date>", rule-id="<id>"
 * into out (cap bytes, NUL-terminated, the id escaped as a quoted string
 * needs). Its length, or 0 when it does not fit. */
size_t lc_expiration_header(uint64_t due_ms, const char *rule_id, char *out, size_t cap);

#endif
