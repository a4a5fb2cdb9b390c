/*
 * s3_pab.c — PublicAccessBlock as values (contracts and the meaning of
 * each setting in s3_pab.h). Pure: no I/O; any thread.
 *
 * Owns the settings' record and XML forms and "is this ACL public". Does
 * not decide requests (s3_authz) nor store anything (s3_bucket_policy).
 */
#include "gateway/s3_pab.h"

#include <errno.h>
#include <string.h>

#include "gateway/xml_parse.h"

#define S3_XMLNS_PAB "http://s3.amazonaws.com/doc/2006-03-01/"

void s3_pab_from_msg(const Iolake__Meta__PublicAccessBlock *m, struct s3_pab *out)
{
	memset(out, 0, sizeof(*out));
	if (!m)
		return;
	out->block_public_acls = m->block_public_acls;
	out->ignore_public_acls = m->ignore_public_acls;
	out->block_public_policy = m->block_public_policy;
	out->restrict_public_buckets = m->restrict_public_buckets;
}

void s3_pab_to_msg(const struct s3_pab *p, Iolake__Meta__PublicAccessBlock *out)
{
	iolake__meta__public_access_block__init(out);
	out->block_public_acls = p->block_public_acls;
	out->ignore_public_acls = p->ignore_public_acls;
	out->block_public_policy = p->block_public_policy;
	out->restrict_public_buckets = p->restrict_public_buckets;
}

enum s3_err s3_pab_from_xml(const char *body, size_t len, struct s3_pab *out)
{
	int v[XMLP_PAB_N];
	int rc = xmlp_public_access_block(body, len, S3_PAB_XML_MAX, v);
	if (rc == -E2BIG)
		return S3E_MaxMessageLengthExceeded;
	if (rc)
		return S3E_MalformedXML;
	out->block_public_acls = v[0] == 1;
	out->ignore_public_acls = v[1] == 1;
	out->block_public_policy = v[2] == 1;
	out->restrict_public_buckets = v[3] == 1;
	return S3E_OK;
}

void s3_pab_render(struct xml_w *w, const struct s3_pab *p)
{
	xml_decl(w);
	xml_open_ns(w, "PublicAccessBlockConfiguration", S3_XMLNS_PAB);
	xml_elem(w, "BlockPublicAcls", p->block_public_acls ? "true" : "false");
	xml_elem(w, "IgnorePublicAcls", p->ignore_public_acls ? "true" : "false");
	xml_elem(w, "BlockPublicPolicy", p->block_public_policy ? "true" : "false");
	xml_elem(w, "RestrictPublicBuckets", p->restrict_public_buckets ? "true" : "false");
	xml_close(w);
}

static bool public_group(uint8_t g)
{
	return g == S3_GROUP_ALL_USERS || g == S3_GROUP_AUTH_USERS;
}

bool s3_pab_acl_is_public(const struct s3_acl *a)
{
	switch ((enum s3_canned)a->canned) {
	case S3_CANNED_PUBLIC_READ:
	case S3_CANNED_PUBLIC_READ_WRITE:
	case S3_CANNED_AUTHENTICATED_READ:
		return true;
	case S3_CANNED_NONE:
		for (unsigned i = 0; i < a->n; i++)
			if (public_group(a->g[i].group))
				return true;
		return false;
	default:
		return false;
	}
}

void s3_pab_drop_public(struct s3_acl *e)
{
	unsigned n = 0;
	for (unsigned i = 0; i < e->n; i++)
		if (!public_group(e->g[i].group))
			e->g[n++] = e->g[i];
	e->n = (uint16_t)n;
}
