/*
 * xml_parse.h — parsing of S3 request bodies (CompleteMultipartUpload,
 * Delete, ...) with expat (gateway/xml_doc.h), bounded and hostile-input
 * safe.
 *
 * Limits: a body over the caller's max is refused before parsing; element
 * depth at most XMLP_MAX_DEPTH; one element's text at most XMLP_TEXT_MAX
 * bytes; any DOCTYPE (and so any entity declaration, internal or
 * external) is refused outright, so no entity is ever expanded ("billion
 * laughs", XXE). Unknown elements are ignored, as S3 does; namespaces are
 * not checked (clients differ on sending the S3 xmlns).
 *
 * Every failure is S3's MalformedXML (returned as -EBADMSG), except
 * limits that S3 names otherwise (see each function). Pure: no I/O; the
 * outputs live in caller-provided storage.
 */
#ifndef GATEWAY_XML_PARSE_H
#define GATEWAY_XML_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XMLP_MAX_DEPTH 8
#define XMLP_TEXT_MAX 2048
#define XMLP_ETAG_MAX 128

#define XMLP_CK_MAX 48              /* base64 of a SHA-256 is 44 */

struct xmlp_part {
	uint32_t part_number;
	char etag[XMLP_ETAG_MAX + 1];   /* as sent, quotes included */
	/* The part's additional checksum, when listed (<ChecksumCRC32> ...):
	 * ck_algo is meta.proto's ChecksumAlgo (1 CRC32, 2 CRC32C, 3 SHA1,
	 * 4 SHA256, 5 CRC64NVME; 0 none), ck its base64 text as sent. */
	uint8_t ck_algo;
	char ck[XMLP_CK_MAX + 1];
};

/* <CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"…"</ETag>
 * [<ChecksumCRC32>…</ChecksumCRC32>]</Part>…</CompleteMultipartUpload>.
 * Fills parts[0..*n). Returns 0,
 * -EBADMSG (malformed, wrong root, a Part without PartNumber or ETag, a
 * PartNumber outside 1..10000, two checksums in a part or one longer than
 * XMLP_CK_MAX), -E2BIG (more than max_parts parts, or len
 * > max_len). Order is NOT checked here (InvalidPartOrder is the
 * caller's, with the stored parts at hand). */
int xmlp_complete_mpu(const char *body, size_t len, size_t max_len, struct xmlp_part *parts,
		      size_t max_parts, size_t *n);

struct xmlp_delete {
	bool quiet;
	size_t n_keys;
	const char **keys;       /* caller's array of max_keys pointers */
	size_t *key_lens;        /* caller's array of max_keys lengths */
	size_t max_keys;
	char *arena;             /* caller's storage for the key bytes */
	size_t arena_cap;
	size_t arena_len;
	/* Optional (NULL: VersionId ignored): caller's array of max_keys
	 * pointers, each key's <VersionId> as sent ("" when absent), copied
	 * into the arena too; a VersionId over XMLP_VERSION_ID_MAX bytes or
	 * given twice is -EBADMSG. */
	const char **version_ids;
};

#define XMLP_VERSION_ID_MAX 64

/* <Delete><Quiet>true</Quiet><Object><Key>k</Key>[<VersionId>…]</Object>…
 * </Delete>. Keys are copied NUL-terminated into d->arena. Returns 0,
 * -EBADMSG (malformed, wrong root, an Object without Key, no Object at
 * all, more than max_keys objects — S3 answers MalformedXML to 1,001
 * keys), -E2BIG (len > max_len or arena full). */
int xmlp_delete(const char *body, size_t len, size_t max_len, struct xmlp_delete *d);

struct xmlp_tagging {
	size_t n_tags;
	const char **keys;       /* caller's arrays of max_tags pointers */
	const char **values;
	size_t max_tags;
	char *arena;             /* caller's storage for the key and value bytes */
	size_t arena_cap;
	size_t arena_len;
};

/* <Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>…</TagSet>
 * </Tagging>. Keys and values are copied NUL-terminated into t->arena, in
 * document order; limits on their lengths and uniqueness are the
 * caller's (S3 answers InvalidTag). Zero tags is valid (an empty TagSet).
 * Returns 0, -EBADMSG (malformed, wrong root, a Tag without exactly one
 * Key and one Value, no TagSet), -E2BIG (more than max_tags tags, len >
 * max_len or arena full). */
int xmlp_tagging(const char *body, size_t len, size_t max_len, struct xmlp_tagging *t);

/* ------------------------------------------------------------ ACL */

#define XMLP_ACL_TEXT_MAX 128   /* an ID, URI or e-mail address */

struct xmlp_grant {
	char type[24];                          /* Grantee's xsi:type, "" when absent */
	char id[XMLP_ACL_TEXT_MAX + 1];         /* <ID> */
	char uri[XMLP_ACL_TEXT_MAX + 1];        /* <URI> */
	char email[XMLP_ACL_TEXT_MAX + 1];      /* <EmailAddress> */
	char perm[16];                          /* <Permission> */
	bool has_id, has_uri, has_email, has_perm, has_grantee;
};

struct xmlp_acl {
	char owner_id[XMLP_ACL_TEXT_MAX + 1];   /* <Owner><ID>, when has_owner */
	bool has_owner;
	struct xmlp_grant *grants;              /* caller's array of max_grants */
	size_t max_grants;
	size_t n_grants;
};

/* <AccessControlPolicy><Owner><ID>…</ID></Owner><AccessControlList>
 * <Grant><Grantee xsi:type="…"><ID|URI|EmailAddress>…</…></Grantee>
 * <Permission>…</Permission></Grant>…</AccessControlList>
 * </AccessControlPolicy>. Strings as sent (the caller checks their
 * values: a permission's name, an id's form, a group's URI). Returns 0,
 * -EBADMSG (malformed, wrong root, no AccessControlList, a Grant without
 * one Grantee and one Permission, a text over its field), -E2BIG (more
 * than max_grants grants, or len > max_len). */
int xmlp_acl(const char *body, size_t len, size_t max_len, struct xmlp_acl *a);

/* <OwnershipControls><Rule><ObjectOwnership>…</ObjectOwnership></Rule>
 * </OwnershipControls>: the one rule's value, as sent, into out (cap
 * bytes). Returns 0, -EBADMSG (malformed, wrong root, not exactly one
 * Rule with one ObjectOwnership, a value over cap), -E2BIG (len >
 * max_len). */
int xmlp_ownership(const char *body, size_t len, size_t max_len, char *out, size_t cap);

/* <VersioningConfiguration><Status>…</Status><MfaDelete>…</MfaDelete>
 * </VersioningConfiguration> (issue 17): each value, as sent, into
 * status and mfa (cap bytes each; "" when absent). Returns 0, -EBADMSG
 * (malformed, wrong root, a field twice or over cap), -E2BIG (len >
 * max_len). The values are the caller's to check. */
int xmlp_versioning(const char *body, size_t len, size_t max_len, char *status, char *mfa,
		    size_t cap);

/* ------------------------------------------------------------ CORS */

#define XMLP_CORS_RULES_MAX 100   /* S3's limit on CORSRules */

enum xmlp_cors_field {
	XMLP_CORS_ID, XMLP_CORS_ORIGIN, XMLP_CORS_METHOD, XMLP_CORS_HEADER, XMLP_CORS_EXPOSE,
	XMLP_CORS_MAX_AGE,
};

/* One child element of a CORSRule, its text as sent (NUL-terminated in
 * the arena). */
struct xmlp_cors_item {
	uint32_t rule;                 /* 0-based, in document order */
	enum xmlp_cors_field field;
	const char *value;
	size_t len;
};

struct xmlp_cors {
	size_t n_rules;
	struct xmlp_cors_item *items;  /* caller's array of max_items */
	size_t max_items;
	size_t n_items;
	char *arena;                   /* caller's storage for the texts */
	size_t arena_cap;
	size_t arena_len;
};

/* <CORSConfiguration><CORSRule><ID>…</ID><AllowedOrigin>…</AllowedOrigin>
 * <AllowedMethod>…</AllowedMethod><AllowedHeader>…</AllowedHeader>
 * <ExposeHeader>…</ExposeHeader><MaxAgeSeconds>…</MaxAgeSeconds>
 * </CORSRule>…</CORSConfiguration>: every rule's children as items, in
 * document order (the caller checks their values and which are
 * required). Returns 0, -EBADMSG (malformed, wrong root, no CORSRule),
 * -E2BIG (more than XMLP_CORS_RULES_MAX rules, more than max_items items,
 * arena full, or len > max_len). */
int xmlp_cors(const char *body, size_t len, size_t max_len, struct xmlp_cors *c);
/* ------------------------------------------------------------ PublicAccessBlock */

#define XMLP_PAB_N 4   /* BlockPublicAcls, IgnorePublicAcls, BlockPublicPolicy,
			* RestrictPublicBuckets, in that order */

/* <PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls>
 * <IgnorePublicAcls>…</…><BlockPublicPolicy>…</…><RestrictPublicBuckets>
 * …</…></PublicAccessBlockConfiguration>: vals[i] is 1 (true), 0 (false)
 * or -1 (left out), in the order above; values compare without regard to
 * ASCII case. Returns 0, -EBADMSG (malformed, wrong root, a value other
 * than true/false, an element twice), -E2BIG (len > max_len). */
int xmlp_public_access_block(const char *body, size_t len, size_t max_len, int vals[XMLP_PAB_N]);

/* ------------------------------------------------------------ ServerSideEncryptionConfiguration */

/* <ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionBy
 * Default><SSEAlgorithm>…</SSEAlgorithm><KMSMasterKeyID>…</…></Apply…>
 * <BucketKeyEnabled>…</BucketKeyEnabled></Rule></…> (issue 18): each
 * value as sent ("" when absent), and how many Rules there were. */
struct xmlp_sse {
	unsigned n_rules;
	char algorithm[32];
	char kms_key_id[256];
	char bucket_key[8];
	bool have_default;             /* an ApplyServerSideEncryptionByDefault came */
};
/* Returns 0, -EBADMSG (malformed, wrong root, a value twice or too long),
 * -E2BIG (len > max_len). The values are the caller's to check. */
int xmlp_sse(const char *body, size_t len, size_t max_len, struct xmlp_sse *out);

#endif
