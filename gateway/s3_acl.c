/*
 * s3_acl.c — S3 ACLs as values (contracts in s3_acl.h): canonical ids,
 * canned ACLs and their expansion, the x-amz-grant-* header syntax, the
 * AccessControlPolicy document both ways, and meta's record form.
 *
 * Owns nothing beyond a call. Does not decide requests (s3_authz) nor
 * parse XML itself (xml_parse's xmlp_acl: expat, bounded).
 *
 * Pure: no I/O; any thread (the last canonical id derived is kept per
 * thread).
 */
#include "gateway/s3_acl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "gateway/xml_parse.h"

#define XSI_NS "http://www.w3.org/2001/XMLSchema-instance"

static const char *const group_uri[] = {
	[S3_GROUP_ALL_USERS] = "http://acs.amazonaws.com/groups/global/AllUsers",
	[S3_GROUP_AUTH_USERS] = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
	[S3_GROUP_LOG_DELIVERY] = "http://acs.amazonaws.com/groups/s3/LogDelivery",
};

static const struct {
	const char *name;
	uint8_t bits;
} perms[] = {
	{ "READ", S3_PERM_READ },           { "WRITE", S3_PERM_WRITE },
	{ "READ_ACP", S3_PERM_READ_ACP },   { "WRITE_ACP", S3_PERM_WRITE_ACP },
	{ "FULL_CONTROL", S3_PERM_FULL },
};

static const char *const canned_names[] = {
	[S3_CANNED_PRIVATE] = "private",
	[S3_CANNED_PUBLIC_READ] = "public-read",
	[S3_CANNED_PUBLIC_READ_WRITE] = "public-read-write",
	[S3_CANNED_AUTHENTICATED_READ] = "authenticated-read",
	[S3_CANNED_BUCKET_OWNER_READ] = "bucket-owner-read",
	[S3_CANNED_BUCKET_OWNER_FULL_CONTROL] = "bucket-owner-full-control",
	[S3_CANNED_LOG_DELIVERY_WRITE] = "log-delivery-write",
};

/* ------------------------------------------------------------ ids */

/* The last id this thread derived, by user name: a request derives its
 * principal's id and the records' owners' (two to four SHA-256 per S3
 * GET, ~1.4 % of a GET 64 KiB's gateway CPU; docs/performance.md, branch
 * get64c), and on a loop they are nearly always one user. Names longer
 * than the buffer are not cached. */
static __thread struct {
	bool ok;
	char user[64];
	uint8_t id[S3_ID_LEN];
} last_id;

void s3_acl_user_id(const char *user, uint8_t id[S3_ID_LEN])
{
	if (!user)
		user = "";
	size_t ulen = strlen(user);
	if (last_id.ok && ulen < sizeof(last_id.user) && memcmp(last_id.user, user, ulen + 1) == 0) {
		memcpy(id, last_id.id, S3_ID_LEN);
		return;
	}
	char buf[16 + 256];
	int n = snprintf(buf, sizeof(buf), "iolake-user:%s", user);
	if (n < 0)
		n = 0;
	hash_sha256(buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1, id);
	if (ulen < sizeof(last_id.user)) {
		memcpy(last_id.user, user, ulen + 1);
		memcpy(last_id.id, id, S3_ID_LEN);
		last_id.ok = true;
	}
}

void s3_acl_user_id_hex(const char *user, char hex[S3_ID_HEX + 1])
{
	uint8_t id[S3_ID_LEN];
	s3_acl_user_id(user, id);
	hash_hex(id, S3_ID_LEN, hex);
	hex[S3_ID_HEX] = '\0';
}

void s3_principal_init(struct s3_principal *p, const char *user, bool admin)
{
	memset(p, 0, sizeof(*p));
	if (!user || !*user)
		return;
	p->user = user;
	p->admin = admin;
	s3_acl_user_id(user, p->id);
}

/* ------------------------------------------------------------ making ACLs */

bool s3_acl_canned_parse(const char *s, size_t n, enum s3_canned *out)
{
	for (size_t i = 1; i < sizeof(canned_names) / sizeof(canned_names[0]); i++)
		if (strlen(canned_names[i]) == n && memcmp(s, canned_names[i], n) == 0) {
			*out = (enum s3_canned)i;
			return true;
		}
	return false;
}

const char *s3_acl_canned_name(enum s3_canned c)
{
	return (unsigned)c < sizeof(canned_names) / sizeof(canned_names[0]) && canned_names[c]
		       ? canned_names[c]
		       : "";
}

void s3_acl_canned(struct s3_acl *a, enum s3_canned c)
{
	a->canned = (uint8_t)c;
	a->n = 0;
}

static bool add_grant(struct s3_acl *a, uint8_t perm, uint8_t group, const uint8_t *id)
{
	if (a->n == S3_ACL_GRANTS_MAX)
		return false;
	struct s3_grant *g = &a->g[a->n++];
	g->perm = perm;
	g->group = group;
	if (id)
		memcpy(g->id, id, S3_ID_LEN);
	else
		memset(g->id, 0, S3_ID_LEN);
	return true;
}

static int group_of(const char *s, size_t n)
{
	for (int i = 1; i <= S3_GROUP_LOG_DELIVERY; i++)
		if (strlen(group_uri[i]) == n && memcmp(s, group_uri[i], n) == 0)
			return i;
	return 0;
}

static bool id_parse(const char *s, size_t n, uint8_t id[S3_ID_LEN])
{
	if (n != S3_ID_HEX)
		return false;
	char lower[S3_ID_HEX];
	for (size_t i = 0; i < n; i++)
		lower[i] = (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 'a' : s[i]);
	return hash_unhex(lower, S3_ID_LEN, id) == 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* One header's grant list: `id="…", uri="…", emailAddress="…"`. */
static enum s3_err grants_from_header(struct s3_acl *a, uint8_t perm, const char *v, size_t n)
{
	size_t i = 0;
	bool any = false;
	while (i < n) {
		while (i < n && (is_space(v[i]) || v[i] == ','))
			i++;
		if (i == n)
			break;
		size_t k0 = i;
		while (i < n && v[i] != '=' && v[i] != ',')
			i++;
		if (i == n || v[i] != '=')
			return S3E_InvalidArgument;
		size_t k1 = i++;
		while (k1 > k0 && is_space(v[k1 - 1]))
			k1--;
		while (i < n && is_space(v[i]))
			i++;
		size_t v0, v1;
		if (i < n && v[i] == '"') {
			v0 = ++i;
			while (i < n && v[i] != '"')
				i++;
			if (i == n)
				return S3E_InvalidArgument;
			v1 = i++;
		} else {
			v0 = i;
			while (i < n && v[i] != ',')
				i++;
			v1 = i;
			while (v1 > v0 && is_space(v[v1 - 1]))
				v1--;
		}
		while (i < n && is_space(v[i]))
			i++;
		if (i < n && v[i] != ',')
			return S3E_InvalidArgument;
		size_t kl = k1 - k0;
		const char *key = v + k0;
		uint8_t id[S3_ID_LEN];
		if (kl == 2 && strncasecmp(key, "id", 2) == 0) {
			if (!id_parse(v + v0, v1 - v0, id))
				return S3E_InvalidArgument;
			if (!add_grant(a, perm, S3_GROUP_NONE, id))
				return S3E_InvalidArgument;
		} else if (kl == 3 && strncasecmp(key, "uri", 3) == 0) {
			int g = group_of(v + v0, v1 - v0);
			if (!g || !add_grant(a, perm, (uint8_t)g, NULL))
				return S3E_InvalidArgument;
		} else if (kl == 12 && strncasecmp(key, "emailAddress", 12) == 0) {
			return S3E_UnresolvableGrantByEmailAddress;
		} else {
			return S3E_InvalidArgument;
		}
		any = true;
	}
	return any ? S3E_OK : S3E_InvalidArgument;
}

enum s3_err s3_acl_from_headers(s3_acl_hdr_fn hdr, void *ctx, struct s3_acl *a, bool *present)
{
	static const struct {
		const char *name;
		uint8_t perm;
	} gh[] = {
		{ "x-amz-grant-read", S3_PERM_READ },
		{ "x-amz-grant-write", S3_PERM_WRITE },
		{ "x-amz-grant-read-acp", S3_PERM_READ_ACP },
		{ "x-amz-grant-write-acp", S3_PERM_WRITE_ACP },
		{ "x-amz-grant-full-control", S3_PERM_FULL },
	};
	*present = false;
	a->canned = S3_CANNED_NONE;
	a->n = 0;
	size_t cl = 0;
	const char *canned = hdr(ctx, "x-amz-acl", &cl);
	bool grants = false;
	for (size_t i = 0; i < sizeof(gh) / sizeof(gh[0]); i++) {
		size_t l;
		const char *v = hdr(ctx, gh[i].name, &l);
		if (!v)
			continue;
		if (canned)
			return S3E_InvalidRequest;
		enum s3_err e = grants_from_header(a, gh[i].perm, v, l);
		if (e)
			return e;
		grants = true;
	}
	if (canned) {
		enum s3_canned c;
		if (!s3_acl_canned_parse(canned, cl, &c))
			return S3E_InvalidArgument;
		s3_acl_canned(a, c);
	}
	*present = canned || grants;
	return S3E_OK;
}

enum s3_err s3_acl_from_xml(const char *body, size_t len, const uint8_t owner_id[S3_ID_LEN],
			    struct s3_acl *a)
{
	struct xmlp_grant *gs = calloc(S3_ACL_GRANTS_MAX, sizeof(*gs));
	if (!gs)
		return S3E_InternalError;
	struct xmlp_acl x = { .grants = gs, .max_grants = S3_ACL_GRANTS_MAX };
	enum s3_err e = S3E_OK;
	int rc = xmlp_acl(body, len, S3_ACL_XML_MAX, &x);
	if (rc == -E2BIG) {
		e = len > S3_ACL_XML_MAX ? S3E_MaxMessageLengthExceeded : S3E_InvalidArgument;
		goto out;
	}
	if (rc == -ENOMEM) {
		e = S3E_InternalError;
		goto out;
	}
	if (rc) {
		e = S3E_MalformedACLError;
		goto out;
	}
	a->canned = S3_CANNED_NONE;
	a->n = 0;
	if (x.has_owner) {
		uint8_t id[S3_ID_LEN];
		if (!id_parse(x.owner_id, strlen(x.owner_id), id)) {
			e = S3E_InvalidArgument;
			goto out;
		}
		if (memcmp(id, owner_id, S3_ID_LEN) != 0) {
			e = S3E_AccessDenied;   /* S3: an ACL cannot change the owner */
			goto out;
		}
	}
	for (size_t i = 0; i < x.n_grants; i++) {
		const struct xmlp_grant *g = &gs[i];
		uint8_t perm = 0;
		for (size_t p = 0; p < sizeof(perms) / sizeof(perms[0]); p++)
			if (strcmp(g->perm, perms[p].name) == 0)
				perm = perms[p].bits;
		if (!perm) {
			e = S3E_MalformedACLError;
			goto out;
		}
		/* The kind: xsi:type when given, else the one child present. */
		const char *t = g->type;
		bool user = !strcmp(t, "CanonicalUser") || (!*t && g->has_id && !g->has_uri && !g->has_email);
		bool group = !strcmp(t, "Group") || (!*t && g->has_uri && !g->has_id && !g->has_email);
		bool email = !strcmp(t, "AmazonCustomerByEmail") ||
			     (!*t && g->has_email && !g->has_id && !g->has_uri);
		if (email) {
			e = S3E_UnresolvableGrantByEmailAddress;
			goto out;
		}
		if (user && g->has_id) {
			uint8_t id[S3_ID_LEN];
			if (!id_parse(g->id, strlen(g->id), id)) {
				e = S3E_InvalidArgument;
				goto out;
			}
			add_grant(a, perm, S3_GROUP_NONE, id);
		} else if (group && g->has_uri) {
			int gr = group_of(g->uri, strlen(g->uri));
			if (!gr) {
				e = S3E_InvalidArgument;
				goto out;
			}
			add_grant(a, perm, (uint8_t)gr, NULL);
		} else {
			e = S3E_MalformedACLError;
			goto out;
		}
	}
out:
	free(gs);
	return e;
}

/* ------------------------------------------------------------ reading ACLs */

void s3_acl_expand(const struct s3_acl *a, const uint8_t owner[S3_ID_LEN],
		   const uint8_t bucket_owner[S3_ID_LEN], struct s3_acl *out)
{
	if (a->canned == S3_CANNED_NONE) {
		if (out != a)
			memcpy(out, a, offsetof(struct s3_acl, g) + a->n * sizeof(a->g[0]));
		return;
	}
	enum s3_canned c = a->canned;
	bool other = memcmp(owner, bucket_owner, S3_ID_LEN) != 0;
	out->canned = S3_CANNED_NONE;
	out->n = 0;
	add_grant(out, S3_PERM_FULL, S3_GROUP_NONE, owner);
	switch (c) {
	case S3_CANNED_PUBLIC_READ:
		add_grant(out, S3_PERM_READ, S3_GROUP_ALL_USERS, NULL);
		break;
	case S3_CANNED_PUBLIC_READ_WRITE:
		add_grant(out, S3_PERM_READ, S3_GROUP_ALL_USERS, NULL);
		add_grant(out, S3_PERM_WRITE, S3_GROUP_ALL_USERS, NULL);
		break;
	case S3_CANNED_AUTHENTICATED_READ:
		add_grant(out, S3_PERM_READ, S3_GROUP_AUTH_USERS, NULL);
		break;
	case S3_CANNED_BUCKET_OWNER_READ:
		if (other)
			add_grant(out, S3_PERM_READ, S3_GROUP_NONE, bucket_owner);
		break;
	case S3_CANNED_BUCKET_OWNER_FULL_CONTROL:
		if (other)
			add_grant(out, S3_PERM_FULL, S3_GROUP_NONE, bucket_owner);
		break;
	case S3_CANNED_LOG_DELIVERY_WRITE:
		add_grant(out, S3_PERM_WRITE, S3_GROUP_LOG_DELIVERY, NULL);
		add_grant(out, S3_PERM_READ_ACP, S3_GROUP_LOG_DELIVERY, NULL);
		break;
	default:
		break;
	}
}

unsigned s3_acl_perms(const struct s3_acl *e, const struct s3_principal *p)
{
	unsigned bits = 0;
	for (unsigned i = 0; i < e->n; i++) {
		const struct s3_grant *g = &e->g[i];
		bool match = g->group == S3_GROUP_ALL_USERS ||
			     (p->user && g->group == S3_GROUP_AUTH_USERS) ||
			     (p->user && g->group == S3_GROUP_NONE &&
			      memcmp(g->id, p->id, S3_ID_LEN) == 0);
		if (match)
			bits |= g->perm;
	}
	return bits;
}

bool s3_acl_owner_only(const struct s3_acl *e, const uint8_t owner[S3_ID_LEN])
{
	for (unsigned i = 0; i < e->n; i++)
		if (e->g[i].group != S3_GROUP_NONE || memcmp(e->g[i].id, owner, S3_ID_LEN) != 0)
			return false;
	return true;
}

static const char *perm_name(uint8_t bits)
{
	for (size_t p = 0; p < sizeof(perms) / sizeof(perms[0]); p++)
		if (perms[p].bits == bits)
			return perms[p].name;
	return "FULL_CONTROL";
}

void s3_acl_render(struct xml_w *w, const struct s3_acl *e, const char *owner,
		   const char *bucket_owner)
{
	char oid[S3_ID_HEX + 1], bid[S3_ID_HEX + 1];
	s3_acl_user_id_hex(owner, oid);
	s3_acl_user_id_hex(bucket_owner ? bucket_owner : owner, bid);
	xml_decl(w);
	xml_open_ns(w, "AccessControlPolicy", "http://s3.amazonaws.com/doc/2006-03-01/");
	xml_open(w, "Owner");
	xml_elem(w, "ID", oid);
	xml_elem(w, "DisplayName", owner);
	xml_close(w);
	xml_open(w, "AccessControlList");
	for (unsigned i = 0; i < e->n; i++) {
		const struct s3_grant *g = &e->g[i];
		bool user = g->group == S3_GROUP_NONE;
		const char *attrs[] = { "xmlns:xsi", XSI_NS, "xsi:type",
					user ? "CanonicalUser" : "Group" };
		xml_open(w, "Grant");
		xml_open_attrs(w, "Grantee", attrs, 2);
		if (user) {
			char hex[S3_ID_HEX + 1];
			hash_hex(g->id, S3_ID_LEN, hex);
			hex[S3_ID_HEX] = '\0';
			xml_elem(w, "ID", hex);
			if (!strcmp(hex, oid))
				xml_elem(w, "DisplayName", owner);
			else if (bucket_owner && !strcmp(hex, bid))
				xml_elem(w, "DisplayName", bucket_owner);
		} else {
			xml_elem(w, "URI", group_uri[g->group]);
		}
		xml_close(w);
		xml_elem(w, "Permission", perm_name(g->perm));
		xml_close(w);
	}
	xml_close(w);
	xml_close(w);
}

/* ------------------------------------------------------------ records */

static const uint8_t perm_of_msg[] = {
	[IOLAKE__META__ACL_PERMISSION__ACL_PERM_READ] = S3_PERM_READ,
	[IOLAKE__META__ACL_PERMISSION__ACL_PERM_WRITE] = S3_PERM_WRITE,
	[IOLAKE__META__ACL_PERMISSION__ACL_PERM_READ_ACP] = S3_PERM_READ_ACP,
	[IOLAKE__META__ACL_PERMISSION__ACL_PERM_WRITE_ACP] = S3_PERM_WRITE_ACP,
	[IOLAKE__META__ACL_PERMISSION__ACL_PERM_FULL_CONTROL] = S3_PERM_FULL,
};

bool s3_acl_from_msg(const Iolake__Meta__Acl *m, struct s3_acl *a)
{
	a->n = 0;
	if (!m) {
		a->canned = S3_CANNED_PRIVATE;
		return true;
	}
	if ((unsigned)m->canned > S3_CANNED_LOG_DELIVERY_WRITE || m->n_grants > S3_ACL_GRANTS_MAX) {
		a->canned = S3_CANNED_PRIVATE;
		return false;
	}
	a->canned = (uint8_t)m->canned;
	for (size_t i = 0; i < m->n_grants; i++) {
		const Iolake__Meta__AclGrant *g = m->grants[i];
		unsigned pm = (unsigned)g->permission;
		if (pm == 0 || pm >= sizeof(perm_of_msg) || (unsigned)g->group > S3_GROUP_LOG_DELIVERY ||
		    (g->group == 0 && g->user_id.len != S3_ID_LEN)) {
			a->canned = S3_CANNED_PRIVATE;
			a->n = 0;
			return false;
		}
		add_grant(a, perm_of_msg[pm], (uint8_t)g->group, g->group ? NULL : g->user_id.data);
	}
	return true;
}

void s3_acl_to_msg(const struct s3_acl *a, struct s3_acl_msg *out)
{
	iolake__meta__acl__init(&out->m);
	out->m.canned = (Iolake__Meta__CannedAcl)a->canned;
	if (a->canned != S3_CANNED_NONE)
		return;
	for (unsigned i = 0; i < a->n; i++) {
		const struct s3_grant *g = &a->g[i];
		Iolake__Meta__AclGrant *m = &out->grants[i];
		iolake__meta__acl_grant__init(m);
		for (unsigned pm = 1; pm < sizeof(perm_of_msg); pm++)
			if (perm_of_msg[pm] == g->perm)
				m->permission = (Iolake__Meta__AclPermission)pm;
		m->group = (Iolake__Meta__AclGroup)g->group;
		if (g->group == S3_GROUP_NONE) {
			m->user_id.len = S3_ID_LEN;
			m->user_id.data = (uint8_t *)g->id;
		}
		out->gp[i] = m;
	}
	out->m.n_grants = a->n;
	out->m.grants = a->n ? out->gp : NULL;
}
