/*
 * s3_policy_int.h — what s3_policy.c (parse, validate), s3_policy_eval.c
 * (evaluate, is_public) and s3_policy_tab.c (AWS's tables) share: the
 * compiled form of a policy and the matching primitives. Internal to the
 * module.
 *
 * A compiled policy is immutable after parse and lives entirely in the
 * JSON document's arena (json_doc_alloc): strings point into the decoded
 * JSON tree, arrays are carved from the same arena, one free releases it.
 */
#ifndef GATEWAY_S3_POLICY_INT_H
#define GATEWAY_S3_POLICY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/json.h"
#include "gateway/s3_policy.h"

/* ---------------------------------------------------------------- patterns */

/* A pattern is a list of items; a policy variable is resolved at
 * evaluation to literal text (never to wildcards). */
enum pat_kind {
	PAT_LIT,        /* s[0..len) literally */
	PAT_STAR,       /* any run of characters, the empty one too */
	PAT_QMARK,      /* exactly one character (one UTF-8 sequence) */
	PAT_VAR,        /* ${key} or ${key, 'default'}: s = key, dflt */
};

#define PAT_MAX_VARS 16 /* policy variables in one pattern */

struct pat_item {
	uint8_t kind;
	bool has_dflt;
	uint32_t len;
	const char *s;
	const char *dflt;       /* PAT_VAR with has_dflt: the default (quotes undone) */
	uint32_t dflt_len;
};

struct pat {
	const struct pat_item *it;
	uint32_t n;
	uint32_t n_vars;
	bool wild;              /* contains * or ? (for is_public's "fixed value") */
	const char *text;       /* as written in the policy */
};

/* Literal text a pattern's variables resolved to, per item index of the
 * PAT_VAR items in order. */
struct pat_vals {
	const char *s[PAT_MAX_VARS];
	size_t len[PAT_MAX_VARS];
};

/* s3_policy_pat.c. Compiles s[0..n) into a pattern in doc's arena: wild
 * makes * and ? wildcards, vars makes ${...} variables (both are otherwise
 * literal); literal items point into s, which lives in the document. 0,
 * -ENOMEM, or -EBADMSG (more than PAT_MAX_VARS variables). */
int pat_compile(struct json_doc *doc, const char *s, size_t n, bool wild, bool vars,
		struct pat *out);

/* Could pattern p (its variables taken as '*') match a string that
 * starts with pre (whole: equal to it)? 1 or 0, -ENOMEM. Used only while
 * validating. */
int pat_can_match(const struct pat *p, const char *pre, bool whole);

/* Matches s[0..slen) (two parts: a then b, so "arn...bucket/" + key needs
 * no copy) against pattern p with its variables in v (NULL if none).
 * fold: ASCII case-insensitive. O(items x length), no recursion. */
bool pat_match(const struct pat *p, const struct pat_vals *v, const char *a, size_t alen,
	       const char *b, size_t blen, bool fold);

/* ---------------------------------------------------------------- conditions */

enum cond_base {
	COP_STR_EQ,
	COP_STR_EQ_IC,
	COP_STR_LIKE,
	COP_NUM_EQ,
	COP_NUM_LT,
	COP_NUM_LE,
	COP_NUM_GT,
	COP_NUM_GE,
	COP_DATE_EQ,
	COP_DATE_LT,
	COP_DATE_LE,
	COP_DATE_GT,
	COP_DATE_GE,
	COP_BOOL,
	COP_BIN_EQ,
	COP_IP,
	COP_ARN_LIKE,   /* ArnEquals and ArnLike are the same test in AWS */
	COP_NULL,
};

enum cond_set { SET_NONE, SET_ANY, SET_ALL };

struct cidr {
	uint8_t family;         /* 4 or 6 */
	uint8_t bits;           /* prefix length */
	uint8_t addr[16];       /* network address, host bits cleared */
};

#define ARN_PARTS 6

struct cond_val {
	const char *text;       /* as written (numbers and bools as their text) */
	struct pat pat;         /* String*, BinaryEquals */
	struct pat arn[ARN_PARTS]; /* Arn*: one pattern per colon-separated part */
	double num;             /* Numeric* */
	int64_t ms;             /* Date*: ms since the epoch, UTC */
	bool b;                 /* Bool; Null: true = "key must be absent" */
	struct cidr ip;         /* IpAddress, NotIpAddress */
};

struct cond {
	uint8_t base;           /* enum cond_base */
	uint8_t set;            /* enum cond_set */
	bool negate;            /* the Not form: true iff no value matches */
	bool if_exists;         /* ...IfExists: an absent key passes */
	const char *key;        /* as written */
	const struct cond_val *v;
	uint32_t n;
};

/* ---------------------------------------------------------------- statements */

enum princ_kind {
	PR_ANY,         /* "*" */
	PR_USER,        /* an IOLake user by name */
	PR_CANONICAL,   /* {"CanonicalUser": 64 hex digits}: the ACLs' canonical id */
	PR_OWNER,       /* arn:aws:iam::<acct>:root or a bare account id: the bucket owner */
	PR_SERVICE,     /* {"Service": ...}: never matches */
};

struct princ {
	uint8_t kind;
	const char *name;       /* PR_USER: the user name; else the text as written */
};

struct stmt {
	const char *sid;        /* NULL if none */
	bool deny;
	bool not_principal, not_action, not_resource;
	const struct princ *pr;
	uint32_t n_pr;
	const struct pat *act;  /* matched with fold */
	uint32_t n_act;
	const struct pat *res;
	uint32_t n_res;
	const struct cond *cond;
	uint32_t n_cond;
};

struct s3_policy {
	struct json_doc *doc;   /* owns every byte of the policy */
	bool v2012;             /* Version 2012-10-17: policy variables on */
	const char *bucket_arn; /* "arn:aws:s3:::<bucket>" */
	const char *object_arn; /* "arn:aws:s3:::<bucket>/" */
	size_t bucket_arn_len;
	const struct stmt *st;
	uint32_t n_st;
};

/* ---------------------------------------------------------------- tables */

enum act_type { ACT_OBJECT, ACT_BUCKET, ACT_OTHER /* account, job, access point... */ };

struct act_info {
	const char *name;       /* without "s3:" */
	uint8_t type;           /* enum act_type */
};

extern const struct act_info s3p_actions[];
extern const size_t s3p_n_actions;

/* The operator name without ForAnyValue:/ForAllValues: and IfExists:
 * 0 and base/negate filled, or -1 if unknown. Case-insensitive. */
int s3p_operator(const char *name, size_t len, enum cond_base *base, bool *negate);

/* A known condition key (global aws:* or s3:*, tag-style prefixes too)?
 * If it is one whose use AWS ties to certain actions (s3:prefix ...),
 * *only is set to their NUL-separated list ("ListBucket\0ListBucketVersions\0\0"),
 * else NULL. */
bool s3p_condition_key(const char *key, const char **only);

/* Is key, case-insensitively, one whose fixed value makes an Allow to
 * everyone non-public (s3_policy_is_public)? */
bool s3p_public_restricting_key(const char *key);

/* ---------------------------------------------------------------- values */

/* ISO 8601 (W3C profile: YYYY, YYYY-MM, YYYY-MM-DD, with Thh:mm[:ss[.s+]]
 * and Z or +hh:mm) or epoch seconds; 0 and *ms, or -1. */
int s3p_parse_date(const char *s, size_t n, int64_t *ms);

/* A decimal number (optional sign, digits, optional fraction and
 * exponent); 0 and *d, or -1. */
int s3p_parse_number(const char *s, size_t n, double *d);

/* "a.b.c.d[/n]" or an IPv6 address [/n]; a bare address is /32 or /128.
 * 0, or -1. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is IPv4. */
int s3p_parse_cidr(const char *s, size_t n, struct cidr *c);

bool s3p_cidr_contains(const struct cidr *net, const struct cidr *addr);

/* Condition key names compare without regard to case up to and including
 * the first '/', and exactly after it (tag keys are case-sensitive). */
bool s3p_key_eq(const char *a, const char *b);

#endif
