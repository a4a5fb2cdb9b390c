/*
 * s3_policy.c — parsing and validation of a bucket policy into its
 * compiled form (s3_policy_int.h). See s3_policy.h for the grammar and
 * the principal mapping; evaluation is in s3_policy_eval.c.
 *
 * Owns: the PutBucketPolicy checks and their MalformedPolicy messages.
 * Invariant: a policy that parses is fully compiled (every pattern,
 * number, date and CIDR converted), so evaluation never fails and never
 * allocates. Everything lives in the JSON document's arena; a failed
 * parse frees it. Pure and reentrant.
 *
 * Messages are S3's where S3's are known (observed from S3 and quoted
 * in the S3 documentation and client issue trackers); "Missing required
 * field X" follows the one S3 gives for Principal and Statement.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/s3_policy_int.h"

#define MSG_SYNTAX "Invalid policy syntax."
#define MSG_JSON "This policy contains invalid Json"
#define MSG_FIRST_BYTE "Policies must be valid JSON and the first byte must be '{'"
#define MSG_TOO_BIG "Policy exceeds the maximum allowed document size."
#define MSG_VERSION "The policy must contain a valid version string"
#define MSG_NO_STATEMENT "Missing required field Statement"
#define MSG_EMPTY_STATEMENT "Could not parse the policy: Statement is empty!"
#define MSG_SID "Statement IDs (SID) in a single policy must be unique."
#define MSG_PRINCIPAL "Invalid principal in policy"
#define MSG_ACTION "Policy has invalid action"
#define MSG_RESOURCE "Policy has invalid resource"
#define MSG_ACTION_RESOURCE "Action does not apply to any resource(s) in statement"
#define MSG_COND_KEY "Policy has an invalid condition key"
#define MSG_COND_ACTION "Conditions do not apply to combination of actions and resources in statement"

struct ctx {
	struct json_doc *doc;
	struct s3_policy *p;
	const char *bucket;
	char *err;
	size_t errlen;
};

static int bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct ctx *c, const char *fmt, ...)
{
	if (c->err && c->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static void *alloc(struct ctx *c, size_t n)
{
	return json_doc_alloc(c->doc, n);
}

/* A JSON string usable as policy text: no U+0000 inside. */
static bool is_text(const struct json_value *v)
{
	return v && v->type == JSON_STRING && strlen(v->u.str.s) == v->u.str.len;
}

/* "A string, or an array of strings" — the shape of Action, Resource and
 * principal values. Iterates: cur NULL gives the first. */
static const struct json_value *strlist_next(const struct json_value *v, const struct json_value *cur)
{
	if (v->type == JSON_STRING)
		return cur ? NULL : v;
	return cur ? cur->next : v->u.list.first;
}

/* -1: not a string or an array of strings; else the count (0: []). */
static long strlist_len(const struct json_value *v)
{
	if (is_text(v))
		return 1;
	if (v->type != JSON_ARRAY)
		return -1;
	for (const struct json_value *e = v->u.list.first; e; e = e->next)
		if (!is_text(e))
			return -1;
	return v->u.list.n;
}

/* ---------------------------------------------------------------- patterns */

static int compile_pat(struct ctx *c, const char *s, size_t n, bool wild, bool vars, struct pat *out)
{
	int rc = pat_compile(c->doc, s, n, wild, vars, out);
	return rc == -EBADMSG ? bad(c, MSG_SYNTAX) : rc;
}

/* ---------------------------------------------------------------- principals */

static bool user_name_ok(const char *s)
{
	/* IAM's user name characters (IAM User Guide, "IAM object
	 * quotas"): letters, digits and + = , . @ _ -; 1 to 64. */
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      strchr("+=,.@_-", ch)))
			return false;
	}
	return true;
}

static bool account_id(const char *s)
{
	size_t n = strlen(s);
	if (n != 12)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* One {"AWS": ...} value. */
static int aws_principal(struct ctx *c, const char *s, struct princ *pr)
{
	static const char iam[] = "arn:aws:iam::";
	pr->name = s;
	if (strcmp(s, "*") == 0) {
		pr->kind = PR_ANY;
		return 0;
	}
	if (account_id(s)) {
		pr->kind = PR_OWNER;
		return 0;
	}
	if (strncmp(s, iam, sizeof(iam) - 1) == 0) {
		const char *acct = s + sizeof(iam) - 1;
		const char *colon = strchr(acct, ':');
		if (!colon || colon == acct || memchr(acct, '*', (size_t)(colon - acct)) ||
		    memchr(acct, '?', (size_t)(colon - acct)))
			return bad(c, MSG_PRINCIPAL);
		const char *res = colon + 1;
		if (strcmp(res, "root") == 0) {
			pr->kind = PR_OWNER;
			return 0;
		}
		if (strncmp(res, "user/", 5) == 0) {
			/* user/[path/]name: the name is the last segment. */
			const char *name = strrchr(res, '/') + 1;
			if (!user_name_ok(name))
				return bad(c, MSG_PRINCIPAL);
			pr->kind = PR_USER;
			pr->name = name;
			return 0;
		}
		return bad(c, MSG_PRINCIPAL);   /* roles, groups, assumed roles */
	}
	if (!user_name_ok(s))
		return bad(c, MSG_PRINCIPAL);
	pr->kind = PR_USER;
	return 0;
}

static int compile_principal(struct ctx *c, const struct json_value *v, struct stmt *st)
{
	if (v->type == JSON_STRING) {
		if (!is_text(v) || strcmp(v->u.str.s, "*") != 0)
			return bad(c, MSG_PRINCIPAL);
		struct princ *pr = alloc(c, sizeof(*pr));
		if (!pr)
			return -ENOMEM;
		pr->kind = PR_ANY;
		pr->name = v->u.str.s;
		st->pr = pr;
		st->n_pr = 1;
		return 0;
	}
	if (v->type != JSON_OBJECT || v->u.list.n == 0)
		return bad(c, MSG_PRINCIPAL);
	size_t total = 0;
	for (const struct json_value *m = v->u.list.first; m; m = m->next) {
		long n = strlist_len(m);
		if (n <= 0)
			return bad(c, MSG_PRINCIPAL);
		total += (size_t)n;
	}
	struct princ *pr = alloc(c, total * sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	size_t k = 0;
	for (const struct json_value *m = v->u.list.first; m; m = m->next) {
		for (const struct json_value *e = strlist_next(m, NULL); e; e = strlist_next(m, e)) {
			const char *s = e->u.str.s;
			int rc = 0;
			if (strcmp(m->key, "AWS") == 0) {
				rc = aws_principal(c, s, &pr[k]);
			} else if (strcmp(m->key, "CanonicalUser") == 0) {
				/* IOLake's canonical user id is what ACLs show as
				 * Owner ID (s3_acl.h: 64 hex digits of a hash of
				 * the name); the name itself is accepted too. */
				size_t l = strlen(s), h = strspn(s, "0123456789abcdefABCDEF");
				if (l == 64 && h == 64)
					pr[k] = (struct princ){ .kind = PR_CANONICAL, .name = s };
				else if (user_name_ok(s))
					pr[k] = (struct princ){ .kind = PR_USER, .name = s };
				else
					return bad(c, MSG_PRINCIPAL);
			} else if (strcmp(m->key, "Service") == 0) {
				if (!*s)
					return bad(c, MSG_PRINCIPAL);
				pr[k] = (struct princ){ .kind = PR_SERVICE, .name = s };
			} else {
				return bad(c, MSG_PRINCIPAL);  /* Federated, unknown */
			}
			if (rc)
				return rc;
			k++;
		}
	}
	st->pr = pr;
	st->n_pr = (uint32_t)k;
	return 0;
}

/* ---------------------------------------------------------------- actions, resources */

/* Which resource types the actions pattern p names (bit 1 << act_type);
 * 0 if it names no S3 action at all. */
static unsigned action_types(const struct pat *p)
{
	unsigned types = 0;
	char name[96];
	for (size_t i = 0; i < s3p_n_actions; i++) {
		int n = snprintf(name, sizeof(name), "s3:%s", s3p_actions[i].name);
		if (pat_match(p, NULL, name, (size_t)n, "", 0, true))
			types |= 1u << s3p_actions[i].type;
	}
	return types;
}

static int compile_actions(struct ctx *c, const struct json_value *v, struct stmt *st,
			   unsigned *types)
{
	long n = strlist_len(v);
	if (n < 0)
		return bad(c, MSG_SYNTAX);
	if (n == 0)
		return bad(c, MSG_ACTION);
	struct pat *act = alloc(c, (size_t)n * sizeof(*act));
	if (!act)
		return -ENOMEM;
	uint32_t k = 0;
	for (const struct json_value *e = strlist_next(v, NULL); e; e = strlist_next(v, e), k++) {
		const char *s = e->u.str.s;
		if (strcmp(s, "*") != 0 && strncasecmp(s, "s3:", 3) != 0)
			return bad(c, MSG_ACTION);
		int rc = compile_pat(c, s, e->u.str.len, true, false, &act[k]);
		if (rc)
			return rc;
		types[k] = action_types(&act[k]);
		if (!types[k])
			return bad(c, MSG_ACTION);
	}
	st->act = act;
	st->n_act = k;
	return 0;
}

/* Resource types a resource pattern reaches: the bucket itself and/or
 * objects in it (bits 1 << act_type); 0 if neither ("Policy has invalid
 * resource": AWS wants every resource of a bucket policy in that
 * bucket); -ENOMEM. */
static int resource_types(struct ctx *c, const struct pat *p)
{
	int b = pat_can_match(p, c->p->bucket_arn, true);
	int o = pat_can_match(p, c->p->object_arn, false);
	if (b < 0 || o < 0)
		return -ENOMEM;
	return (b ? 1 << ACT_BUCKET : 0) | (o ? 1 << ACT_OBJECT : 0);
}

static int compile_resources(struct ctx *c, const struct json_value *v, struct stmt *st,
			     unsigned *types)
{
	long n = strlist_len(v);
	if (n < 0)
		return bad(c, MSG_SYNTAX);
	if (n == 0)
		return bad(c, MSG_RESOURCE);
	struct pat *res = alloc(c, (size_t)n * sizeof(*res));
	if (!res)
		return -ENOMEM;
	uint32_t k = 0;
	*types = 0;
	for (const struct json_value *e = strlist_next(v, NULL); e; e = strlist_next(v, e), k++) {
		int rc = compile_pat(c, e->u.str.s, e->u.str.len, true, c->p->v2012, &res[k]);
		if (rc)
			return rc;
		int t = resource_types(c, &res[k]);
		if (t < 0)
			return t;
		if (!t)
			return bad(c, MSG_RESOURCE);
		*types |= (unsigned)t;
	}
	st->res = res;
	st->n_res = k;
	return 0;
}

/* ---------------------------------------------------------------- conditions */

/* A condition value as text: strings as they are, numbers as written,
 * booleans as "true"/"false" (AWS converts them the same way). */
static const char *value_text(const struct json_value *v)
{
	switch (v->type) {
	case JSON_STRING: return is_text(v) ? v->u.str.s : NULL;
	case JSON_NUMBER: return v->u.num.text;
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	default: return NULL;
	}
}

/* The next ':' of an ARN, not counting those inside a ${...} variable
 * ("arn:aws:iam::${aws:PrincipalAccount}:user/x" has six parts). */
static const char *arn_colon(const char *p, bool vars)
{
	for (; *p; p++) {
		if (vars && p[0] == '$' && p[1] == '{') {
			const char *close = strchr(p, '}');
			if (close) {
				p = close;
				continue;
			}
		}
		if (*p == ':')
			return p;
	}
	return NULL;
}

static int compile_value(struct ctx *c, struct cond *cd, const char *t, struct cond_val *v)
{
	size_t n = strlen(t);
	v->text = t;
	switch (cd->base) {
	case COP_STR_EQ:
	case COP_STR_EQ_IC:
		return compile_pat(c, t, n, false, c->p->v2012, &v->pat);
	case COP_STR_LIKE:
		return compile_pat(c, t, n, true, c->p->v2012, &v->pat);
	case COP_BIN_EQ:
		return compile_pat(c, t, n, false, false, &v->pat);
	case COP_NUM_EQ: case COP_NUM_LT: case COP_NUM_LE: case COP_NUM_GT: case COP_NUM_GE:
		return s3p_parse_number(t, n, &v->num) ? bad(c, MSG_SYNTAX) : 0;
	case COP_DATE_EQ: case COP_DATE_LT: case COP_DATE_LE: case COP_DATE_GT: case COP_DATE_GE:
		return s3p_parse_date(t, n, &v->ms) ? bad(c, MSG_SYNTAX) : 0;
	case COP_BOOL:
	case COP_NULL:
		if (strcasecmp(t, "true") == 0)
			v->b = true;
		else if (strcasecmp(t, "false") == 0)
			v->b = false;
		else
			return bad(c, MSG_SYNTAX);
		return 0;
	case COP_IP:
		return s3p_parse_cidr(t, n, &v->ip) ? bad(c, MSG_SYNTAX) : 0;
	case COP_ARN_LIKE: {
		/* Each colon-separated part is matched on its own (IAM User
		 * Guide, "Amazon Resource Name (ARN) condition operators"). */
		const char *p = t;
		for (int i = 0; i < ARN_PARTS; i++) {
			const char *colon = i < ARN_PARTS - 1 ? arn_colon(p, c->p->v2012) : NULL;
			if (i < ARN_PARTS - 1 && !colon)
				return bad(c, MSG_SYNTAX);
			size_t pn = colon ? (size_t)(colon - p) : strlen(p);
			int rc = compile_pat(c, p, pn, true, c->p->v2012, &v->arn[i]);
			if (rc)
				return rc;
			p += pn + 1;
		}
		return 0;
	}
	}
	return bad(c, MSG_SYNTAX);
}

/* "[ForAnyValue:|ForAllValues:]Operator[IfExists]" */
static int parse_operator(struct ctx *c, const char *name, struct cond *cd)
{
	static const char any[] = "ForAnyValue:", all[] = "ForAllValues:", ifx[] = "IfExists";
	const char *s = name;
	size_t n = strlen(name);
	cd->set = SET_NONE;
	if (strncasecmp(s, any, sizeof(any) - 1) == 0) {
		cd->set = SET_ANY;
		s += sizeof(any) - 1;
		n -= sizeof(any) - 1;
	} else if (strncasecmp(s, all, sizeof(all) - 1) == 0) {
		cd->set = SET_ALL;
		s += sizeof(all) - 1;
		n -= sizeof(all) - 1;
	}
	enum cond_base base;
	bool negate;
	if (s3p_operator(s, n, &base, &negate) == 0) {
		cd->if_exists = false;
	} else if (n > sizeof(ifx) - 1 &&
		   strncasecmp(s + n - (sizeof(ifx) - 1), ifx, sizeof(ifx) - 1) == 0 &&
		   s3p_operator(s, n - (sizeof(ifx) - 1), &base, &negate) == 0) {
		cd->if_exists = true;
	} else {
		return bad(c, "Invalid Condition type : %s", name);
	}
	/* "You can add IfExists to the end of any condition operator name
	 * except the Null condition"; Null tests a key, not a set. */
	if (base == COP_NULL && (cd->if_exists || cd->set != SET_NONE))
		return bad(c, "Invalid Condition type : %s", name);
	cd->base = (uint8_t)base;
	cd->negate = negate;
	return 0;
}

/* AWS ties a few S3 keys to the actions that carry them (s3:prefix to
 * ListBucket...). Every action the statement names explicitly must be
 * one of them; wildcard actions and NotAction are not checked. */
static bool key_fits_actions(const struct stmt *st, const char *only)
{
	if (!only || st->not_action)
		return true;
	for (uint32_t i = 0; i < st->n_act; i++) {
		const struct pat *a = &st->act[i];
		if (a->wild)
			continue;
		bool found = false;
		for (const char *o = only; *o && !found; o += strlen(o) + 1)
			found = strcasecmp(a->text + 3, o) == 0;
		if (!found)
			return false;
	}
	return true;
}

static int compile_conditions(struct ctx *c, const struct json_value *v, struct stmt *st)
{
	if (v->type != JSON_OBJECT)
		return bad(c, MSG_SYNTAX);
	size_t total = 0;
	for (const struct json_value *op = v->u.list.first; op; op = op->next) {
		if (op->type != JSON_OBJECT)
			return bad(c, MSG_SYNTAX);
		total += op->u.list.n;
	}
	struct cond *cd = alloc(c, (total ? total : 1) * sizeof(*cd));
	if (!cd)
		return -ENOMEM;
	uint32_t k = 0;
	for (const struct json_value *op = v->u.list.first; op; op = op->next) {
		struct cond proto = { 0 };
		int rc = parse_operator(c, op->key, &proto);
		if (rc)
			return rc;
		for (const struct json_value *kv = op->u.list.first; kv; kv = kv->next, k++) {
			const char *only;
			if (!s3p_condition_key(kv->key, &only))
				return bad(c, MSG_COND_KEY);
			if (!key_fits_actions(st, only))
				return bad(c, MSG_COND_ACTION);
			cd[k] = proto;
			cd[k].key = kv->key;
			const struct json_value *first = kv;
			uint32_t n = 1;
			if (kv->type == JSON_ARRAY) {
				first = kv->u.list.first;
				n = kv->u.list.n;
				if (n == 0)
					return bad(c, MSG_SYNTAX);
			}
			struct cond_val *vals = alloc(c, n * sizeof(*vals));
			if (!vals)
				return -ENOMEM;
			const struct json_value *e = first;
			for (uint32_t i = 0; i < n; i++, e = e->next) {
				const char *t = value_text(e);
				if (!t)
					return bad(c, MSG_SYNTAX);
				rc = compile_value(c, &cd[k], t, &vals[i]);
				if (rc)
					return rc;
			}
			cd[k].v = vals;
			cd[k].n = n;
		}
	}
	st->cond = cd;
	st->n_cond = k;
	return 0;
}

/* ---------------------------------------------------------------- statements */

static int compile_statement(struct ctx *c, const struct json_value *v, struct stmt *st)
{
	if (v->type != JSON_OBJECT)
		return bad(c, MSG_SYNTAX);
	const struct json_value *effect = NULL, *principal = NULL, *action = NULL,
				*resource = NULL, *condition = NULL;
	for (const struct json_value *m = v->u.list.first; m; m = m->next) {
		const char *k = m->key;
		const struct json_value **slot = NULL;
		bool not = false;
		if (strcmp(k, "Sid") == 0) {
			if (!is_text(m))
				return bad(c, MSG_SYNTAX);
			st->sid = m->u.str.s;
			continue;
		}
		if (strcmp(k, "Effect") == 0) {
			slot = &effect;
		} else if (strcmp(k, "Principal") == 0 || (not = strcmp(k, "NotPrincipal") == 0)) {
			slot = &principal;
			st->not_principal = not;
		} else if (strcmp(k, "Action") == 0 || (not = strcmp(k, "NotAction") == 0)) {
			slot = &action;
			st->not_action = not;
		} else if (strcmp(k, "Resource") == 0 || (not = strcmp(k, "NotResource") == 0)) {
			slot = &resource;
			st->not_resource = not;
		} else if (strcmp(k, "Condition") == 0) {
			slot = &condition;
		} else {
			return bad(c, MSG_SYNTAX);   /* unknown element */
		}
		if (*slot)
			return bad(c, MSG_SYNTAX);   /* Principal and NotPrincipal, ... */
		*slot = m;
	}
	if (!effect)
		return bad(c, "Missing required field Effect");
	if (!is_text(effect))
		return bad(c, MSG_SYNTAX);
	if (strcmp(effect->u.str.s, "Allow") == 0)
		st->deny = false;
	else if (strcmp(effect->u.str.s, "Deny") == 0)
		st->deny = true;
	else
		return bad(c, "Invalid effect: %s", effect->u.str.s);
	if (!principal)
		return bad(c, "Missing required field Principal");
	if (!action)
		return bad(c, "Missing required field Action");
	if (!resource)
		return bad(c, "Missing required field Resource");
	int rc = compile_principal(c, principal, st);
	if (rc)
		return rc;
	unsigned *act_types = calloc(action->type == JSON_ARRAY ? action->u.list.n + 1 : 1,
				     sizeof(*act_types));
	if (!act_types)
		return -ENOMEM;
	unsigned res_types = 0;
	rc = compile_actions(c, action, st, act_types);
	if (!rc)
		rc = compile_resources(c, resource, st, &res_types);
	if (!rc && condition)
		rc = compile_conditions(c, condition, st);
	/* Every action must apply to one of the resources (as AWS checks,
	 * a statement's NotAction or NotResource is not checked). */
	for (uint32_t i = 0; !rc && !st->not_action && !st->not_resource && i < st->n_act; i++)
		if (!(act_types[i] & res_types))
			rc = bad(c, MSG_ACTION_RESOURCE);
	free(act_types);
	return rc;
}

static int compile_policy(struct ctx *c, const struct json_value *root)
{
	struct s3_policy *p = c->p;
	const struct json_value *version = NULL, *statement = NULL;
	for (const struct json_value *m = root->u.list.first; m; m = m->next) {
		if (strcmp(m->key, "Version") == 0)
			version = m;
		else if (strcmp(m->key, "Statement") == 0)
			statement = m;
		else if (strcmp(m->key, "Id") == 0) {
			if (!is_text(m))
				return bad(c, MSG_SYNTAX);
		} else {
			return bad(c, MSG_SYNTAX);
		}
	}
	/* No Version is the old language (IAM User Guide, "IAM JSON policy
	 * elements: Version"): no policy variables. */
	p->v2012 = false;
	if (version) {
		if (is_text(version) && strcmp(version->u.str.s, "2012-10-17") == 0)
			p->v2012 = true;
		else if (!is_text(version) || strcmp(version->u.str.s, "2008-10-17") != 0)
			return bad(c, MSG_VERSION);
	}
	if (!statement)
		return bad(c, MSG_NO_STATEMENT);
	uint32_t n = 1;
	const struct json_value *first = statement;
	if (statement->type == JSON_ARRAY) {
		n = statement->u.list.n;
		first = statement->u.list.first;
		if (n == 0)
			return bad(c, MSG_EMPTY_STATEMENT);
	} else if (statement->type != JSON_OBJECT) {
		return bad(c, MSG_SYNTAX);
	}
	struct stmt *st = alloc(c, n * sizeof(*st));
	if (!st)
		return -ENOMEM;
	const struct json_value *e = first;
	for (uint32_t i = 0; i < n; i++, e = e->next) {
		int rc = compile_statement(c, e, &st[i]);
		if (rc)
			return rc;
		for (uint32_t j = 0; st[i].sid && j < i; j++)
			if (st[j].sid && strcmp(st[j].sid, st[i].sid) == 0)
				return bad(c, MSG_SID);
	}
	p->st = st;
	p->n_st = n;
	return 0;
}

static bool has_nul(const struct json_value *v)
{
	if (v->key && strlen(v->key) != v->key_len)
		return true;
	if (v->type == JSON_STRING)
		return strlen(v->u.str.s) != v->u.str.len;
	if (v->type == JSON_ARRAY || v->type == JSON_OBJECT)
		for (const struct json_value *m = v->u.list.first; m; m = m->next)
			if (has_nul(m))
				return true;
	return false;
}

int s3_policy_parse(const char *json, size_t len, const char *bucket, struct s3_policy **out,
		    char *err, size_t errlen)
{
	struct ctx c = { .bucket = bucket, .err = err, .errlen = errlen };
	*out = NULL;
	if (len > S3_POLICY_MAX_INPUT_BYTES) {
		bad(&c, MSG_TOO_BIG);
		return -E2BIG;
	}
	if (len == 0 || json[0] != '{')
		return bad(&c, MSG_FIRST_BYTE);
	struct json_limits lim = { .max_bytes = S3_POLICY_MAX_INPUT_BYTES };
	struct json_error jerr;
	int rc = json_parse(json, len, &lim, &c.doc, &jerr);
	if (rc == -ENOMEM) {
		bad(&c, "out of memory");
		return rc;
	}
	if (rc)
		return bad(&c, MSG_JSON);
	if (json_compact_len(c.doc) > S3_POLICY_MAX_BYTES) {
		bad(&c, MSG_TOO_BIG);
		rc = -E2BIG;
		goto fail;
	}
	/* No element, key or value of a policy contains U+0000: refusing it
	 * once here keeps every later strcmp honest. */
	if (has_nul(json_root(c.doc))) {
		rc = bad(&c, MSG_SYNTAX);
		goto fail;
	}
	/* RFC 8259 leaves repeated names to the parser; AWS keeps one of
	 * them. A Deny whose Condition silently lost a key is too easy to
	 * write, so IOLake refuses the document. */
	if (json_first_dup(c.doc) >= 0) {
		rc = bad(&c, MSG_SYNTAX);
		goto fail;
	}
	c.p = json_doc_alloc(c.doc, sizeof(*c.p));
	size_t bn = strlen(bucket);
	char *arn = json_doc_alloc(c.doc, bn + 16);
	if (!c.p || !arn) {
		rc = -ENOMEM;
		bad(&c, "out of memory");
		goto fail;
	}
	/* "arn:aws:s3:::bucket/": object_arn is the whole, bucket_arn the
	 * same bytes without the slash (a separate copy, NUL-terminated). */
	char *barn = json_doc_alloc(c.doc, bn + 15);
	if (!barn) {
		rc = -ENOMEM;
		goto fail;
	}
	snprintf(arn, bn + 16, "arn:aws:s3:::%s/", bucket);
	snprintf(barn, bn + 15, "arn:aws:s3:::%s", bucket);
	c.p->doc = c.doc;
	c.p->object_arn = arn;
	c.p->bucket_arn = barn;
	c.p->bucket_arn_len = bn + 13;
	rc = compile_policy(&c, json_root(c.doc));
	if (rc)
		goto fail;
	*out = c.p;
	return 0;
fail:
	json_free(c.doc);
	return rc;
}

void s3_policy_free(struct s3_policy *p)
{
	if (p)
		json_free(p->doc);
}

const char *s3_policy_version(const struct s3_policy *p)
{
	return p->v2012 ? "2012-10-17" : "2008-10-17";
}

int s3_policy_users(const struct s3_policy *p, int (*cb)(const char *user, void *arg), void *arg)
{
	for (uint32_t i = 0; i < p->n_st; i++) {
		for (uint32_t j = 0; j < p->st[i].n_pr; j++) {
			const struct princ *pr = &p->st[i].pr[j];
			if (pr->kind != PR_USER)
				continue;
			/* Each name once: skip it if an earlier principal had it. */
			bool seen = false;
			for (uint32_t a = 0; a <= i && !seen; a++)
				for (uint32_t b = 0; b < (a == i ? j : p->st[a].n_pr) && !seen; b++)
					seen = p->st[a].pr[b].kind == PR_USER &&
					       strcmp(p->st[a].pr[b].name, pr->name) == 0;
			if (seen)
				continue;
			int rc = cb(pr->name, arg);
			if (rc)
				return rc;
		}
	}
	return 0;
}
