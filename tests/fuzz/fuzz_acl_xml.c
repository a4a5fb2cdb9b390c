/*
 * fuzz_acl_xml.c — libFuzzer target for access-control input a client
 * controls: the AccessControlPolicy body (xml_parse's xmlp_acl under
 * s3_acl_from_xml), the x-amz-acl / x-amz-grant-* header syntax
 * (s3_acl_from_headers) and the OwnershipControls body (xmlp_ownership).
 *
 * Input: byte 0 picks the parser (and, for headers, which header); the
 * rest is the body or header value, copied into an exactly-sized malloc'd
 * buffer (no NUL terminator), so a read past the end is an ASan report.
 * Checked: an accepted ACL has at most S3_ACL_GRANTS_MAX grants, each one
 * permission bit set (or FULL_CONTROL) and a known group; rendered and
 * parsed again it gives the same grants; the record form round-trips.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_acl.h"
#include "gateway/xml.h"
#include "gateway/xml_parse.h"

static uint8_t owner[S3_ID_LEN];

static void check_acl(const struct s3_acl *a)
{
	if (a->canned != S3_CANNED_NONE) {
		if (a->canned > S3_CANNED_LOG_DELIVERY_WRITE)
			abort();
		return;
	}
	if (a->n > S3_ACL_GRANTS_MAX)
		abort();
	for (unsigned i = 0; i < a->n; i++) {
		uint8_t p = a->g[i].perm;
		if (p != S3_PERM_FULL && (p == 0 || (p & (p - 1))))
			abort();
		if (a->g[i].group > S3_GROUP_LOG_DELIVERY)
			abort();
	}
	/* Rendered, parsed back: the same grants. */
	struct xml_w w;
	xml_init(&w, 0);
	s3_acl_render(&w, a, "fuzz", "fuzz");
	const char *out;
	size_t len;
	if (xml_finish(&w, &out, &len) == 0) {
		struct s3_acl *b = malloc(sizeof(*b));
		if (s3_acl_from_xml(out, len, owner, b) != S3E_OK || b->n != a->n ||
		    memcmp(b->g, a->g, a->n * sizeof(a->g[0])) != 0)
			abort();
		free(b);
	}
	xml_free(&w);
	/* Record form. */
	struct s3_acl_msg *m = malloc(sizeof(*m));
	struct s3_acl *c = malloc(sizeof(*c));
	s3_acl_to_msg(a, m);
	if (!s3_acl_from_msg(&m->m, c) || c->n != a->n ||
	    memcmp(c->g, a->g, a->n * sizeof(a->g[0])) != 0)
		abort();
	free(c);
	free(m);
}

struct one_hdr {
	const char *name;
	const char *v;
	size_t n;
};

static const char *get(void *ctx, const char *name, size_t *len)
{
	struct one_hdr *h = ctx;
	if (strcmp(name, h->name) != 0)
		return NULL;
	*len = h->n;
	return h->v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	s3_acl_user_id("fuzz", owner);
	static const char *const hdrs[] = { "x-amz-acl", "x-amz-grant-read", "x-amz-grant-write",
					    "x-amz-grant-read-acp", "x-amz-grant-write-acp",
					    "x-amz-grant-full-control" };
	uint8_t sel = data[0];
	size_t n = size - 1;
	char *b = malloc(n ? n : 1);
	memcpy(b, data + 1, n);
	struct s3_acl *a = malloc(sizeof(*a));
	switch (sel % 3) {
	case 0:
		if (s3_acl_from_xml(b, n, owner, a) == S3E_OK)
			check_acl(a);
		break;
	case 1: {
		struct one_hdr h = { hdrs[(sel / 3) % 6], b, n };
		bool present;
		if (s3_acl_from_headers(get, &h, a, &present) == S3E_OK && present)
			check_acl(a);
		break;
	}
	default: {
		char v[32];
		if (xmlp_ownership(b, n, 1024, v, sizeof(v)) == 0 && strlen(v) >= sizeof(v))
			abort();
		break;
	}
	}
	free(a);
	free(b);
	return 0;
}
