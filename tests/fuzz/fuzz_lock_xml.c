/*
 * fuzz_lock_xml.c — libFuzzer target for the object lock documents and
 * dates (gateway/s3_lock_parse.c): ObjectLockConfiguration, Retention,
 * LegalHold and the ISO 8601 dates of retain-until.
 *
 * Input: the first byte picks the parser (0 config, 1 retention, 2 legal
 * hold, 3 a date), the rest is copied into an exactly-sized buffer (no
 * NUL), so a read past the end is an ASan report. Checked: a config that
 * parses is enabled, has exactly one of Days and Years within S3's bounds
 * when it has a rule, a known mode; a retention that parses has a known
 * mode, or none and no date; a date that parses prints back (s3u-style,
 * through gmtime) to the same instant when it was written in UTC with
 * milliseconds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/s3_lock_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned which = data[0] % 4;
	size_t n = size - 1;
	char *doc = malloc(n ? n : 1);
	memcpy(doc, data + 1, n);
	switch (which) {
	case 0: {
		struct s3_lock_config c;
		if (s3_lock_parse_config(doc, n, S3_LOCK_BODY_MAX, &c) == 0) {
			if (!c.enabled)
				abort();
			if (c.has_rule) {
				if (c.mode != S3_LOCK_GOVERNANCE && c.mode != S3_LOCK_COMPLIANCE)
					abort();
				if (!c.days == !c.years || c.days > 36500 || c.years > 100)
					abort();
			} else if (c.mode || c.days || c.years) {
				abort();
			}
		}
		break;
	}
	case 1: {
		int mode;
		uint64_t until;
		if (s3_lock_parse_retention(doc, n, S3_LOCK_BODY_MAX, &mode, &until) == 0 &&
		    ((mode == S3_LOCK_NONE && until != 0) ||
		     (mode != S3_LOCK_NONE && mode != S3_LOCK_GOVERNANCE && mode != S3_LOCK_COMPLIANCE)))
			abort();
		break;
	}
	case 2: {
		bool on;
		(void)s3_lock_parse_legal_hold(doc, n, S3_LOCK_BODY_MAX, &on);
		break;
	}
	default: {
		uint64_t ms;
		if (s3_lock_date_parse(doc, n, &ms) == 0) {
			/* a UTC form with milliseconds must round-trip */
			if (n == 24 && doc[23] == 'Z' && doc[19] == '.') {
				time_t t = (time_t)(ms / 1000);
				struct tm tm;
				char back[40];
				if (!gmtime_r(&t, &tm))
					abort();
				size_t k = strftime(back, sizeof(back), "%Y-%m-%dT%H:%M:%S", &tm);
				snprintf(back + k, sizeof(back) - k, ".%03uZ", (unsigned)(ms % 1000));
				if (memcmp(back, doc, 24) != 0)
					abort();
			}
		}
		break;
	}
	}
	free(doc);
	return 0;
}
