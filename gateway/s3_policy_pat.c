/*
 * s3_policy_pat.c — compiling the patterns of a bucket policy (Action and
 * Resource wildcards, condition strings, ${...} policy variables) and the
 * validation-time question "can this pattern match that?". Matching a
 * compiled pattern at request time is s3_policy_eval.c's (pat_match).
 *
 * Owns the pattern syntax (IAM User Guide, "IAM policy elements:
 * Variables and tags"); allocates only in the policy document's arena.
 * Pure and reentrant.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_policy_int.h"


static bool var_key_char(char ch)
{
	return ch != '}' && ch != ',' && ch != ' ' && ch != '\'' && ch != '$' && ch != '{' &&
	       ch != '\0';
}

/* A policy variable at s[i] == '$', s[i+1] == '{' (IAM User Guide,
 * "IAM policy elements: Variables and tags"): ${key}, ${key, 'default'}
 * (a quote inside the default is written ''), and the escapes ${*},
 * ${?}, ${$} for those characters. Returns the length consumed, or 0 if
 * this is not a well-formed variable (then the '$' is literal text). An
 * escape sets *lit to its character inside s; a variable fills *it when
 * it is not NULL (the counting pass gives NULL: nothing is allocated).
 * (size_t)-1: out of memory. */
static size_t parse_var(struct json_doc *doc, const char *s, size_t n, size_t i, struct pat_item *it,
			const char **lit)
{
	size_t j = i + 2;
	*lit = NULL;
	while (j < n && s[j] == ' ')
		j++;
	size_t k0 = j;
	if (j < n && (s[j] == '*' || s[j] == '?' || s[j] == '$')) {
		size_t e = j + 1;
		while (e < n && s[e] == ' ')
			e++;
		if (e < n && s[e] == '}') {
			*lit = s + j;
			return e + 1 - i;
		}
		return 0;
	}
	while (j < n && var_key_char(s[j]))
		j++;
	size_t k1 = j;
	if (k1 == k0)
		return 0;
	while (j < n && s[j] == ' ')
		j++;
	size_t d0 = 0, d1 = 0;          /* the default between its quotes */
	bool has_dflt = false;
	if (j < n && s[j] == ',') {
		j++;
		while (j < n && s[j] == ' ')
			j++;
		if (j >= n || s[j] != '\'')
			return 0;
		d0 = ++j;
		for (;;) {
			if (j >= n)
				return 0;
			if (s[j] == '\'') {
				if (j + 1 < n && s[j + 1] == '\'') {
					j += 2;
					continue;
				}
				break;
			}
			j++;
		}
		d1 = j++;
		has_dflt = true;
		while (j < n && s[j] == ' ')
			j++;
	}
	if (j >= n || s[j] != '}')
		return 0;
	if (it) {
		char *key = json_doc_alloc(doc, k1 - k0 + 1);
		char *d = json_doc_alloc(doc, d1 - d0 + 1);
		if (!key || !d)
			return (size_t)-1;      /* out of memory */
		memcpy(key, s + k0, k1 - k0);
		size_t dn = 0;
		for (size_t x = d0; x < d1; x++) {
			d[dn++] = s[x];
			if (s[x] == '\'')
				x++;    /* '' is one quote */
		}
		*it = (struct pat_item){ .kind = PAT_VAR, .s = key, .len = (uint32_t)(k1 - k0),
					 .has_dflt = has_dflt, .dflt = d, .dflt_len = (uint32_t)dn };
	}
	return j + 1 - i;
}

/* Two passes: the first counts the items, the second fills them. */
int pat_compile(struct json_doc *doc, const char *s, size_t n, bool wild, bool vars,
		struct pat *out)
{
	struct pat_item *items = NULL;
	uint32_t count = 0, nv = 0;
	bool any_wild = false;
	for (int pass = 0; pass < 2; pass++) {
		uint32_t k = 0;
		bool in_lit = false;
		nv = 0;
		any_wild = false;
		for (size_t i = 0; i < n;) {
			const char *lit = NULL;
			size_t used = 0;
			if (vars && s[i] == '$' && i + 1 < n && s[i + 1] == '{')
				used = parse_var(doc, s, n, i, items ? &items[k] : NULL, &lit);
			if (used == (size_t)-1)
				return -ENOMEM;
			if (used && !lit) {
				if (++nv > PAT_MAX_VARS)
					return -EBADMSG;
				k++;
				in_lit = false;
				i += used;
				continue;
			}
			if (used) {
				/* ${*} ${?} ${$}: that character, literally, alone. */
				if (items)
					items[k] = (struct pat_item){ .kind = PAT_LIT, .s = lit, .len = 1 };
				k++;
				in_lit = false;
				i += used;
				continue;
			}
			if (wild && (s[i] == '*' || s[i] == '?')) {
				if (items)
					items[k] = (struct pat_item){ .kind = s[i] == '*' ? PAT_STAR : PAT_QMARK };
				k++;
				any_wild = true;
				in_lit = false;
				i++;
				continue;
			}
			if (in_lit) {
				if (items)
					items[k - 1].len++;
			} else {
				if (items)
					items[k] = (struct pat_item){ .kind = PAT_LIT, .s = s + i, .len = 1 };
				k++;
				in_lit = true;
			}
			i++;
		}
		if (pass == 0) {
			count = k;
			items = json_doc_alloc(doc, (k ? k : 1) * sizeof(*items));
			if (!items)
				return -ENOMEM;
		}
	}
	*out = (struct pat){ .it = items, .n = count, .n_vars = nv, .wild = any_wild, .text = s };
	return 0;
}

/* A set-of-states simulation over the pattern's bytes. */
int pat_can_match(const struct pat *p, const char *pre, bool whole)
{
	/* Flatten: each literal byte one unit; STAR/VAR -> -1, QMARK -> -2. */
	size_t nu = 0;
	for (uint32_t k = 0; k < p->n; k++)
		nu += p->it[k].kind == PAT_LIT ? p->it[k].len : 1;
	int *u = malloc((nu + 1) * sizeof(*u));
	bool *cur = calloc(nu + 1, 1), *nxt = calloc(nu + 1, 1);
	int ok = 0;
	if (!u || !cur || !nxt) {
		ok = -ENOMEM;
		goto out;
	}
	size_t j = 0;
	for (uint32_t k = 0; k < p->n; k++) {
		const struct pat_item *it = &p->it[k];
		if (it->kind == PAT_LIT)
			for (uint32_t b = 0; b < it->len; b++)
				u[j++] = (unsigned char)it->s[b];
		else
			u[j++] = it->kind == PAT_QMARK ? -2 : -1;
	}
	/* cur[s]: after the input so far, the pattern may be at unit s
	 * (stars close over: a state before a star also reaches past it). */
	cur[0] = true;
	for (size_t s = 0; s < nu; s++)
		if (cur[s] && u[s] == -1)
			cur[s + 1] = true;
	for (const char *ch = pre; *ch; ch++) {
		memset(nxt, 0, nu + 1);
		bool live = false;
		for (size_t s = 0; s < nu; s++) {
			if (!cur[s])
				continue;
			if (u[s] == -1)
				nxt[s] = true;
			else if (u[s] == -2 || u[s] == (unsigned char)*ch)
				nxt[s + 1] = true;
		}
		for (size_t s = 0; s < nu; s++)
			if (nxt[s] && u[s] == -1)
				nxt[s + 1] = true;
		for (size_t s = 0; s <= nu; s++)
			live |= nxt[s];
		bool *t = cur;
		cur = nxt;
		nxt = t;
		if (!live)
			goto out;
	}
	if (whole) {
		ok = cur[nu];
	} else {
		for (size_t s = 0; s <= nu && !ok; s++)
			ok = cur[s];
	}
out:
	free(u);
	free(cur);
	free(nxt);
	return ok;
}
