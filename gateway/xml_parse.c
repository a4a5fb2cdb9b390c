/*
 * xml_parse.c — S3 request XML. See xml_parse.h.
 *
 * Each document is a pair of hooks on xml_doc.h's reader (which owns
 * expat, the limits and the refusal of DOCTYPEs): a start hook that
 * checks the root and opens per-element state, an end hook that sees the
 * path and the element's text.
 *
 * Owns nothing beyond one parse. Does not choose S3 errors: callers
 * answer a failure with MalformedXML.
 */
#include "gateway/xml_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/xml_doc.h"

/* xml_parse.h's limits are the reader's defaults. */
_Static_assert(XMLP_MAX_DEPTH == XML_DOC_DEPTH_MAX, "depth limit");
_Static_assert(XMLP_TEXT_MAX == XML_DOC_TEXT_MAX, "text limit");

/* ------------------------------------------------------------ CompleteMultipartUpload */

struct mpu {
	struct xmlp_part *parts;
	size_t max, n;
	bool have_num, have_etag;
	struct xmlp_part cur;
};

static void mpu_start(struct xml_doc *s)
{
	struct mpu *m = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "CompleteMultipartUpload") != 0)
		xml_doc_stop(s, -EBADMSG);
	else if (xml_doc_at(s, "CompleteMultipartUpload/Part")) {
		memset(&m->cur, 0, sizeof(m->cur));
		m->have_num = m->have_etag = false;
	}
}

static void mpu_end(struct xml_doc *s)
{
	struct mpu *m = s->ud;
	if (xml_doc_at(s, "CompleteMultipartUpload/Part/PartNumber")) {
		char *end;
		unsigned long v = strtoul(s->text, &end, 10);
		if (!s->text[0] || *end || v < 1 || v > 10000) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		m->cur.part_number = (uint32_t)v;
		m->have_num = true;
	} else if (xml_doc_at(s, "CompleteMultipartUpload/Part/ETag")) {
		if (s->text_len == 0 || s->text_len > XMLP_ETAG_MAX) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		memcpy(m->cur.etag, s->text, s->text_len + 1);
		m->have_etag = true;
	} else if (s->depth == 3 && strcmp(s->path[0], "CompleteMultipartUpload") == 0 &&
		   strcmp(s->path[1], "Part") == 0 && strncmp(s->path[2], "Checksum", 8) == 0) {
		/* meta.proto ChecksumAlgo numbers; other Part children are ignored */
		static const char *const names[] = { NULL, "CRC32", "CRC32C", "SHA1", "SHA256",
						     "CRC64NVME" };
		for (uint8_t a = 1; a < sizeof(names) / sizeof(names[0]); a++) {
			if (strcmp(s->path[2] + 8, names[a]) != 0)
				continue;
			if (m->cur.ck_algo || s->text_len == 0 || s->text_len > XMLP_CK_MAX) {
				xml_doc_stop(s, -EBADMSG);
				return;
			}
			m->cur.ck_algo = a;
			memcpy(m->cur.ck, s->text, s->text_len + 1);
		}
	} else if (xml_doc_at(s, "CompleteMultipartUpload/Part")) {
		if (!m->have_num || !m->have_etag) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		if (m->n == m->max) {
			xml_doc_stop(s, -E2BIG);
			return;
		}
		m->parts[m->n++] = m->cur;
	}
}

int xmlp_complete_mpu(const char *body, size_t len, size_t max_len, struct xmlp_part *parts,
		      size_t max_parts, size_t *n)
{
	struct mpu m = { .parts = parts, .max = max_parts };
	struct xml_doc s = { .on_start = mpu_start, .on_end = mpu_end, .ud = &m };
	int rc = xml_doc_parse(&s, body, len, max_len);
	*n = m.n;
	if (rc == 0 && m.n == 0)
		rc = -EBADMSG; /* S3: MalformedXML for an empty part list */
	return rc;
}

/* ------------------------------------------------------------ Delete */

struct del {
	struct xmlp_delete *d;
	bool have_key, have_vid;
	char vid[XMLP_VERSION_ID_MAX + 1];
};

static void del_start(struct xml_doc *s)
{
	struct del *x = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "Delete") != 0)
		xml_doc_stop(s, -EBADMSG);
	else if (xml_doc_at(s, "Delete/Object"))
		x->have_key = x->have_vid = false;
}

static void del_end(struct xml_doc *s)
{
	struct del *x = s->ud;
	struct xmlp_delete *d = x->d;
	if (xml_doc_at(s, "Delete/Quiet")) {
		if (strcmp(s->text, "true") == 0)
			d->quiet = true;
		else if (strcmp(s->text, "false") == 0)
			d->quiet = false;
		else
			xml_doc_stop(s, -EBADMSG);
	} else if (xml_doc_at(s, "Delete/Object/Key")) {
		if (x->have_key || s->text_len == 0) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		if (d->n_keys == d->max_keys) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		if (s->text_len + 1 > d->arena_cap - d->arena_len) {
			xml_doc_stop(s, -E2BIG);
			return;
		}
		char *k = d->arena + d->arena_len;
		memcpy(k, s->text, s->text_len + 1);
		d->arena_len += s->text_len + 1;
		d->keys[d->n_keys] = k;
		d->key_lens[d->n_keys] = s->text_len;
		d->n_keys++;
		x->have_key = true;
	} else if (xml_doc_at(s, "Delete/Object/VersionId")) {
		if (x->have_vid || s->text_len > XMLP_VERSION_ID_MAX) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		memcpy(x->vid, s->text, s->text_len + 1);
		x->have_vid = true;
	} else if (xml_doc_at(s, "Delete/Object")) {
		if (!x->have_key) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		if (d->version_ids) {
			size_t n = x->have_vid ? strlen(x->vid) : 0;
			if (n + 1 > d->arena_cap - d->arena_len) {
				xml_doc_stop(s, -E2BIG);
				return;
			}
			char *v = d->arena + d->arena_len;
			memcpy(v, x->have_vid ? x->vid : "", n + 1);
			d->arena_len += n + 1;
			d->version_ids[d->n_keys - 1] = v;
		}
	}
}

int xmlp_delete(const char *body, size_t len, size_t max_len, struct xmlp_delete *d)
{
	d->quiet = false;
	d->n_keys = 0;
	d->arena_len = 0;
	struct del x = { .d = d };
	struct xml_doc s = { .on_start = del_start, .on_end = del_end, .ud = &x };
	int rc = xml_doc_parse(&s, body, len, max_len);
	if (rc == 0 && d->n_keys == 0)
		rc = -EBADMSG;
	return rc;
}

/* ------------------------------------------------------------ Tagging */

struct tagp {
	struct xmlp_tagging *t;
	bool have_set, have_key, have_value;
	const char *key, *value;
};

static void tag_start(struct xml_doc *s)
{
	struct tagp *x = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "Tagging") != 0)
		xml_doc_stop(s, -EBADMSG);
	else if (xml_doc_at(s, "Tagging/TagSet"))
		x->have_set = true;
	else if (xml_doc_at(s, "Tagging/TagSet/Tag"))
		x->have_key = x->have_value = false;
}

/* Copy the element's text into the arena; NULL (and stopped) when full. */
static const char *tag_copy(struct xml_doc *s, struct xmlp_tagging *t)
{
	if (s->text_len + 1 > t->arena_cap - t->arena_len) {
		xml_doc_stop(s, -E2BIG);
		return NULL;
	}
	char *p = t->arena + t->arena_len;
	memcpy(p, s->text, s->text_len + 1);
	t->arena_len += s->text_len + 1;
	return p;
}

static void tag_end(struct xml_doc *s)
{
	struct tagp *x = s->ud;
	struct xmlp_tagging *t = x->t;
	bool is_key = xml_doc_at(s, "Tagging/TagSet/Tag/Key");
	if (is_key || xml_doc_at(s, "Tagging/TagSet/Tag/Value")) {
		bool *have = is_key ? &x->have_key : &x->have_value;
		if (*have) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		const char *p = tag_copy(s, t);
		if (!p)
			return;
		*(is_key ? &x->key : &x->value) = p;
		*have = true;
	} else if (xml_doc_at(s, "Tagging/TagSet/Tag")) {
		if (!x->have_key || !x->have_value) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		if (t->n_tags == t->max_tags) {
			xml_doc_stop(s, -E2BIG);
			return;
		}
		t->keys[t->n_tags] = x->key;
		t->values[t->n_tags] = x->value;
		t->n_tags++;
	}
}

int xmlp_tagging(const char *body, size_t len, size_t max_len, struct xmlp_tagging *t)
{
	t->n_tags = 0;
	t->arena_len = 0;
	struct tagp x = { .t = t };
	struct xml_doc s = { .on_start = tag_start, .on_end = tag_end, .ud = &x };
	int rc = xml_doc_parse(&s, body, len, max_len);
	if (rc == 0 && !x.have_set)
		rc = -EBADMSG;
	return rc;
}

/* ------------------------------------------------------------ AccessControlPolicy */

struct aclp {
	struct xmlp_acl *a;
	bool have_list;
	struct xmlp_grant cur;
};

/* Inside AccessControlPolicy/AccessControlList/Grant (at any depth >= 3). */
static bool in_grant(const struct xml_doc *s)
{
	return s->depth >= 3 && strcmp(s->path[0], "AccessControlPolicy") == 0 &&
	       strcmp(s->path[1], "AccessControlList") == 0 && strcmp(s->path[2], "Grant") == 0;
}

static void acl_start(struct xml_doc *s)
{
	struct aclp *x = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "AccessControlPolicy") != 0) {
		xml_doc_stop(s, -EBADMSG);
		return;
	}
	if (xml_doc_at(s, "AccessControlPolicy/AccessControlList"))
		x->have_list = true;
	if (!in_grant(s))
		return;
	if (s->depth == 3) {
		memset(&x->cur, 0, sizeof(x->cur));
		return;
	}
	if (s->depth != 4 || strcmp(s->path[3], "Grantee") != 0)
		return;
	if (x->cur.has_grantee) {
		xml_doc_stop(s, -EBADMSG);
		return;
	}
	x->cur.has_grantee = true;
	for (const char **p = s->attrs; p && p[0] && p[1]; p += 2) {
		/* xsi:type, under whatever prefix the client bound. */
		const char *colon = strchr(p[0], ':');
		if (strcmp(colon ? colon + 1 : p[0], "type") != 0)
			continue;
		if (strlen(p[1]) >= sizeof(x->cur.type)) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		snprintf(x->cur.type, sizeof(x->cur.type), "%s", p[1]);
	}
}

/* Copy the element's text into a grant field; false (stopped) when it
 * does not fit or the field came twice. */
static bool acl_take(struct xml_doc *s, char *dst, size_t cap, bool *have)
{
	if (*have || s->text_len >= cap) {
		xml_doc_stop(s, -EBADMSG);
		return false;
	}
	memcpy(dst, s->text, s->text_len + 1);
	*have = true;
	return true;
}

static void acl_end(struct xml_doc *s)
{
	struct aclp *x = s->ud;
	struct xmlp_acl *a = x->a;
	if (s->depth == 3 && strcmp(s->path[0], "AccessControlPolicy") == 0 &&
	    strcmp(s->path[1], "Owner") == 0 && strcmp(s->path[2], "ID") == 0) {
		acl_take(s, a->owner_id, sizeof(a->owner_id), &a->has_owner);
		return;
	}
	if (!in_grant(s))
		return;
	struct xmlp_grant *g = &x->cur;
	if (s->depth == 3) {   /* </Grant> */
		if (!g->has_grantee || !g->has_perm) {
			xml_doc_stop(s, -EBADMSG);
			return;
		}
		if (a->n_grants == a->max_grants) {
			xml_doc_stop(s, -E2BIG);
			return;
		}
		a->grants[a->n_grants++] = *g;
	} else if (s->depth == 4 && strcmp(s->path[3], "Permission") == 0) {
		acl_take(s, g->perm, sizeof(g->perm), &g->has_perm);
	} else if (s->depth == 5 && strcmp(s->path[3], "Grantee") == 0) {
		const char *n = s->path[4];
		if (strcmp(n, "ID") == 0)
			acl_take(s, g->id, sizeof(g->id), &g->has_id);
		else if (strcmp(n, "URI") == 0)
			acl_take(s, g->uri, sizeof(g->uri), &g->has_uri);
		else if (strcmp(n, "EmailAddress") == 0)
			acl_take(s, g->email, sizeof(g->email), &g->has_email);
	}
}

int xmlp_acl(const char *body, size_t len, size_t max_len, struct xmlp_acl *a)
{
	a->n_grants = 0;
	a->has_owner = false;
	a->owner_id[0] = '\0';
	struct aclp *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->a = a;
	struct xml_doc s = { .on_start = acl_start, .on_end = acl_end, .ud = x };
	int rc = xml_doc_parse(&s, body, len, max_len);
	if (rc == 0 && !x->have_list)
		rc = -EBADMSG;
	free(x);
	return rc;
}

/* ------------------------------------------------------------ OwnershipControls */

struct ownp {
	char *out;
	size_t cap;
	int rules, values;
};

static void own_start(struct xml_doc *s)
{
	struct ownp *x = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "OwnershipControls") != 0)
		xml_doc_stop(s, -EBADMSG);
	else if (xml_doc_at(s, "OwnershipControls/Rule"))
		x->rules++;
}

static void own_end(struct xml_doc *s)
{
	struct ownp *x = s->ud;
	if (!xml_doc_at(s, "OwnershipControls/Rule/ObjectOwnership"))
		return;
	if (x->values++ || s->text_len >= x->cap) {
		xml_doc_stop(s, -EBADMSG);
		return;
	}
	memcpy(x->out, s->text, s->text_len + 1);
}

int xmlp_ownership(const char *body, size_t len, size_t max_len, char *out, size_t cap)
{
	struct ownp x = { .out = out, .cap = cap };
	struct xml_doc s = { .on_start = own_start, .on_end = own_end, .ud = &x };
	int rc = xml_doc_parse(&s, body, len, max_len);
	if (rc == 0 && (x.rules != 1 || x.values != 1))
		rc = -EBADMSG;
	return rc;
}

/* ------------------------------------------------------------ VersioningConfiguration */

struct verp {
	char *status, *mfa;
	size_t cap;
	int n_status, n_mfa;
};

static void ver_start(struct xml_doc *s)
{
	if (s->depth == 1 && strcmp(s->path[0], "VersioningConfiguration") != 0)
		xml_doc_stop(s, -EBADMSG);
}

static void ver_end(struct xml_doc *s)
{
	struct verp *x = s->ud;
	bool st = xml_doc_at(s, "VersioningConfiguration/Status");
	bool mfa = xml_doc_at(s, "VersioningConfiguration/MfaDelete");
	if (!st && !mfa)
		return;
	if ((st ? x->n_status++ : x->n_mfa++) || s->text_len >= x->cap) {
		xml_doc_stop(s, -EBADMSG);
		return;
	}
	memcpy(st ? x->status : x->mfa, s->text, s->text_len + 1);
}

int xmlp_versioning(const char *body, size_t len, size_t max_len, char *status, char *mfa,
		    size_t cap)
{
	if (cap == 0)
		return -EBADMSG;
	status[0] = mfa[0] = 0;
	struct verp x = { .status = status, .mfa = mfa, .cap = cap };
	struct xml_doc s = { .on_start = ver_start, .on_end = ver_end, .ud = &x };
	return xml_doc_parse(&s, body, len, max_len);
}

/* ------------------------------------------------------------ CORSConfiguration */

static const char *const cors_fields[] = {
	[XMLP_CORS_ID] = "ID",
	[XMLP_CORS_ORIGIN] = "AllowedOrigin",
	[XMLP_CORS_METHOD] = "AllowedMethod",
	[XMLP_CORS_HEADER] = "AllowedHeader",
	[XMLP_CORS_EXPOSE] = "ExposeHeader",
	[XMLP_CORS_MAX_AGE] = "MaxAgeSeconds",
};

static void cors_start(struct xml_doc *s)
{
	struct xmlp_cors *c = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "CORSConfiguration") != 0)
		xml_doc_stop(s, -EBADMSG);
	else if (xml_doc_at(s, "CORSConfiguration/CORSRule") && c->n_rules++ == XMLP_CORS_RULES_MAX)
		xml_doc_stop(s, -E2BIG);
}

static void cors_end(struct xml_doc *s)
{
	struct xmlp_cors *c = s->ud;
	if (s->depth != 3 || strcmp(s->path[0], "CORSConfiguration") || strcmp(s->path[1], "CORSRule"))
		return;
	size_t f = 0;
	while (f < sizeof(cors_fields) / sizeof(cors_fields[0]) && strcmp(cors_fields[f], s->path[2]))
		f++;
	if (f == sizeof(cors_fields) / sizeof(cors_fields[0]))
		return; /* unknown element: ignored, as S3 does */
	if (c->n_items == c->max_items || s->text_len + 1 > c->arena_cap - c->arena_len) {
		xml_doc_stop(s, -E2BIG);
		return;
	}
	char *v = c->arena + c->arena_len;
	memcpy(v, s->text, s->text_len + 1);
	c->arena_len += s->text_len + 1;
	c->items[c->n_items++] = (struct xmlp_cors_item){ .rule = (uint32_t)(c->n_rules - 1),
							   .field = (enum xmlp_cors_field)f,
							   .value = v, .len = s->text_len };
}

int xmlp_cors(const char *body, size_t len, size_t max_len, struct xmlp_cors *c)
{
	c->n_rules = 0;
	c->n_items = 0;
	c->arena_len = 0;
	struct xml_doc s = { .on_start = cors_start, .on_end = cors_end, .ud = c };
	int rc = xml_doc_parse(&s, body, len, max_len);
	if (rc == 0 && s.depth == 0 && c->n_rules == 0)
		rc = -EBADMSG;
	return rc;
}

/* ------------------------------------------------------------ PublicAccessBlockConfiguration */

static const char *const pab_names[XMLP_PAB_N] = { "BlockPublicAcls", "IgnorePublicAcls",
						    "BlockPublicPolicy", "RestrictPublicBuckets" };

static void pab_start(struct xml_doc *s)
{
	if (s->depth == 1 && strcmp(s->path[0], "PublicAccessBlockConfiguration") != 0)
		xml_doc_stop(s, -EBADMSG);
}

static void pab_end(struct xml_doc *s)
{
	int *vals = s->ud;
	if (s->depth != 2)
		return;
	for (int i = 0; i < XMLP_PAB_N; i++) {
		if (strcmp(s->path[1], pab_names[i]) != 0)
			continue;
		int v = strcasecmp(s->text, "true") == 0 ? 1 : strcasecmp(s->text, "false") == 0 ? 0 : -1;
		if (v < 0 || vals[i] >= 0)   /* not a boolean, or said twice */
			xml_doc_stop(s, -EBADMSG);
		else
			vals[i] = v;
	}
}

int xmlp_public_access_block(const char *body, size_t len, size_t max_len, int vals[XMLP_PAB_N])
{
	for (int i = 0; i < XMLP_PAB_N; i++)
		vals[i] = -1;
	struct xml_doc s = { .on_start = pab_start, .on_end = pab_end, .ud = vals };
	return xml_doc_parse(&s, body, len, max_len);
}

/* ------------------------------------------------------------ ServerSideEncryptionConfiguration */

#define SSE_ROOT "ServerSideEncryptionConfiguration"
#define SSE_DEF SSE_ROOT "/Rule/ApplyServerSideEncryptionByDefault"

static void sse_start(struct xml_doc *s)
{
	struct xmlp_sse *x = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], SSE_ROOT) != 0)
		xml_doc_stop(s, -EBADMSG);
	else if (xml_doc_at(s, SSE_ROOT "/Rule"))
		x->n_rules++;
	else if (xml_doc_at(s, SSE_DEF)) {
		if (x->have_default)
			xml_doc_stop(s, -EBADMSG);
		x->have_default = true;
	}
}

/* The element's text into dst (cap bytes), once. */
static void sse_take(struct xml_doc *s, char *dst, size_t cap)
{
	if (dst[0] || s->text_len >= cap || s->text_len == 0) {
		xml_doc_stop(s, -EBADMSG);
		return;
	}
	memcpy(dst, s->text, s->text_len + 1);
}

static void sse_end(struct xml_doc *s)
{
	struct xmlp_sse *x = s->ud;
	if (xml_doc_at(s, SSE_ROOT "/Rule/BucketKeyEnabled")) {
		sse_take(s, x->bucket_key, sizeof(x->bucket_key));
		return;
	}
	/* ServerSideEncryptionConfiguration/Rule/ApplyServerSide…/leaf */
	if (xml_doc_at(s, SSE_DEF "/SSEAlgorithm"))
		sse_take(s, x->algorithm, sizeof(x->algorithm));
	else if (xml_doc_at(s, SSE_DEF "/KMSMasterKeyID"))
		sse_take(s, x->kms_key_id, sizeof(x->kms_key_id));
}

int xmlp_sse(const char *body, size_t len, size_t max_len, struct xmlp_sse *out)
{
	memset(out, 0, sizeof(*out));
	struct xml_doc s = { .on_start = sse_start, .on_end = sse_end, .ud = out };
	return xml_doc_parse(&s, body, len, max_len);
}
