/*
 * fuzz_lc_rule.c — libFuzzer target for lifecycle configurations
 * (gateway/lc_rule): the LifecycleConfiguration parser and checks
 * (lc_parse), the rendering of what it accepted and the parse of that
 * rendering, and the matcher over a key derived from the input.
 *
 * Input: a LifecycleConfiguration document, copied into an exactly-sized
 * buffer (no NUL: a read past the end is an ASan report). Checked: an
 * accepted configuration has 1..1000 rules with non-empty unique IDs;
 * its rendering parses again to the same number of rules with the same
 * IDs, prefixes and actions; the matcher and the due-time functions never
 * crash and x-amz-expiration's value stays within its buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/lc_rule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *doc = malloc(size ? size : 1);
	memcpy(doc, data, size);
	Iolake__Meta__LifecycleConfig *c = NULL;
	const char *msg = NULL;
	char mbuf[320];
	enum s3_err e = lc_parse(doc, size, &c, &msg, mbuf, sizeof(mbuf));
	if (e != S3E_OK) {
		if (c)
			abort();
		free(doc);
		return 0;
	}
	if (!c || !c->n_rules || c->n_rules > LC_RULES_MAX)
		abort();
	for (size_t i = 0; i < c->n_rules; i++) {
		if (!c->rules[i]->id[0] || strlen(c->rules[i]->id) > LC_ID_MAX)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->rules[i]->id, c->rules[j]->id))
				abort();
	}
	struct xml_w w;
	xml_init(&w, 4u << 20);
	lc_render(&w, c);
	const char *out;
	size_t n;
	if (xml_finish(&w, &out, &n) == 0) {
		Iolake__Meta__LifecycleConfig *c2 = NULL;
		if (lc_parse(out, n, &c2, &msg, NULL, 0) != S3E_OK || c2->n_rules != c->n_rules)
			abort();
		for (size_t i = 0; i < c->n_rules; i++) {
			const Iolake__Meta__LifecycleRule *a = c->rules[i], *b = c2->rules[i];
			if (strcmp(a->id, b->id) || strcmp(a->prefix, b->prefix) ||
			    a->exp_days != b->exp_days || a->exp_date_ms != b->exp_date_ms ||
			    a->noncurrent_days != b->noncurrent_days || a->abort_days != b->abort_days ||
			    a->n_tags != b->n_tags || a->enabled != b->enabled)
				abort();
		}
		lc_config_free(c2);
	}
	xml_free(&w);
	/* Match a key made of the input's tail against every rule. */
	size_t kl = size < 64 ? size : 64;
	char key[65];
	memcpy(key, doc + size - kl, kl);
	key[kl] = '\0';
	struct lc_obj o = { .key = key, .size = size };
	const Iolake__Meta__LifecycleRule *r = NULL;
	uint64_t due = lc_current_expiry(c, &o, size * 1000, 1000, &r);
	char v[LC_ID_MAX * 2 + 96];
	if (due && r && lc_expiration_header(due, r->id, v, sizeof(v)) >= sizeof(v))
		abort();
	(void)lc_noncurrent_due(c, &o, 0, 3, size * 1000, 1000);
	(void)lc_marker_due(c, key, 0, size * 1000, 1000);
	(void)lc_upload_due(c, key, 0, size * 1000, 1000);
	lc_config_free(c);
	free(doc);
	return 0;
}
