/*
 * s3_req.c — S3 routing. See s3_req.h for the contract.
 *
 * Operation selection is a decision on (method, bucket?, key?, which
 * subresources are present). Query names are classified once, by a small
 * table, into a bitmask of subresources; the decision then reads bits.
 * S3 ignores parameters it does not know when they carry a value
 * (x-id=GetObject from newer SDKs, response-content-type, ...); a bare
 * name it does not know ("?cors") is a subresource we do not serve, and is
 * answered NotImplemented rather than silently treated as a GET.
 *
 * Owns nothing: writes only into the caller's scratch. Does not
 * authenticate nor look anything up.
 */
#include "gateway/s3_req.h"

#include <errno.h>
#include <string.h>

static const char *const op_names[S3_OP__COUNT] = {
	[S3_OP_NONE] = "None",
#define S3_OP_NAME(name) [S3_OP_##name] = #name,
	S3_OPS(S3_OP_NAME)
#undef S3_OP_NAME
};

const char *s3_op_name(enum s3_op op)
{
	return (unsigned)op < S3_OP__COUNT ? op_names[op] : "None";
}

/* ------------------------------------------------------------ helpers */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long s3_pct_decode(char *dst, const char *s, size_t n, bool plus_space)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%') {
			if (n - i < 3)
				return -EINVAL;
			int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (char)(hi << 4 | lo);
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		dst[o++] = c;
	}
	return (long)o;
}

/* Well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF) without NUL. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t len;
		uint32_t cp, min;
		if ((c & 0xe0) == 0xc0) {
			len = 2, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			len = 3, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			len = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

static bool span_is(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	return n == l && memcmp(s, lit, l) == 0;
}

static bool ends_with(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	return n >= l && memcmp(s + n - l, lit, l) == 0;
}

bool s3_bucket_name_valid(const char *s, size_t n)
{
	if (n < S3_BUCKET_MIN || n > S3_BUCKET_MAX)
		return false;
	bool all_ipv4 = true; /* digits and dots only, exactly three dots */
	int dots = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '.' && c != '-')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
		if (i > 0 && c == '.' && (s[i - 1] == '.' || s[i - 1] == '-'))
			return false;
		if (i > 0 && c == '-' && s[i - 1] == '.')
			return false;
		if (c == '.')
			dots++;
		else if (!(c >= '0' && c <= '9'))
			all_ipv4 = false;
	}
	if (all_ipv4 && dots == 3)
		return false;
	if ((n >= 4 && memcmp(s, "xn--", 4) == 0) || (n >= 7 && memcmp(s, "sthree-", 7) == 0))
		return false;
	if (ends_with(s, n, "-s3alias") || ends_with(s, n, "--ol-s3"))
		return false;
	return true;
}

/* ------------------------------------------------------------ query */

/* Subresources and parameters that change the operation. */
enum {
	SR_LOCATION = 1u << 0,
	SR_UPLOADS = 1u << 1,
	SR_UPLOAD_ID = 1u << 2,
	SR_PART_NUMBER = 1u << 3,
	SR_DELETE = 1u << 4,
	SR_TAGGING = 1u << 5,
	SR_VERSIONING = 1u << 6,
	SR_VERSIONS = 1u << 7,
	SR_ACL = 1u << 8,
	SR_ATTRIBUTES = 1u << 9,
	SR_LIST_TYPE = 1u << 10,
	SR_OWNERSHIP = 1u << 11,
	SR_POLICY = 1u << 12,
	SR_POLICY_STATUS = 1u << 13,
	SR_PAB = 1u << 14,
	SR_CORS = 1u << 15,
	SR_OBJECT_LOCK = 1u << 16,   /* object lock (issue 17) */
	SR_RETENTION = 1u << 17,
	SR_LEGAL_HOLD = 1u << 18,
	SR_LIFECYCLE = 1u << 19,
	SR_ENCRYPTION = 1u << 20,
	/* Configurations IOLake has no way to set: only their reads (and the
	 * deletes of website and replication) are served, as of a bucket that
	 * never set one (s3_unset.c). */
	SR_ACCELERATE = 1u << 21,
	SR_REQUEST_PAYMENT = 1u << 22,
	SR_LOGGING = 1u << 23,
	SR_NOTIFICATION = 1u << 24,
	SR_WEBSITE = 1u << 25,
	SR_REPLICATION = 1u << 26,
	SR_UNSET = SR_ACCELERATE | SR_REQUEST_PAYMENT | SR_LOGGING | SR_NOTIFICATION |
		   SR_WEBSITE | SR_REPLICATION,
	SR_UNSUPPORTED = 1u << 31,
};

struct qname {
	const char *name;
	uint8_t len;               /* strlen(name): classify compares lengths first */
	uint32_t bit;
};

#define Q(lit, bit) { lit, sizeof(lit) - 1, bit }

/* The subresource names S3 defines; SR_UNSUPPORTED: ones we do not
 * serve at all (NotImplemented). */
static const struct qname qnames[] = {
	Q("location", SR_LOCATION),       Q("uploads", SR_UPLOADS),
	Q("uploadId", SR_UPLOAD_ID),      Q("partNumber", SR_PART_NUMBER),
	Q("delete", SR_DELETE),           Q("tagging", SR_TAGGING),
	Q("versioning", SR_VERSIONING),   Q("versions", SR_VERSIONS),
	Q("acl", SR_ACL),                 Q("attributes", SR_ATTRIBUTES),
	Q("list-type", SR_LIST_TYPE),
	Q("accelerate", SR_ACCELERATE),   Q("analytics", SR_UNSUPPORTED),
	Q("cors", SR_CORS),        Q("encryption", SR_ENCRYPTION),
	Q("intelligent-tiering", SR_UNSUPPORTED), Q("inventory", SR_UNSUPPORTED),
	Q("legal-hold", SR_LEGAL_HOLD),  Q("lifecycle", SR_LIFECYCLE),
	Q("logging", SR_LOGGING),         Q("metrics", SR_UNSUPPORTED),
	Q("notification", SR_NOTIFICATION), Q("object-lock", SR_OBJECT_LOCK),
	Q("ownershipControls", SR_OWNERSHIP), Q("policy", SR_POLICY),
	Q("policyStatus", SR_POLICY_STATUS), Q("publicAccessBlock", SR_PAB),
	Q("replication", SR_REPLICATION), Q("requestPayment", SR_REQUEST_PAYMENT),
	Q("restore", SR_UNSUPPORTED),     Q("retention", SR_RETENTION),
	Q("select", SR_UNSUPPORTED),      Q("session", SR_UNSUPPORTED),
	Q("torrent", SR_UNSUPPORTED),     Q("website", SR_WEBSITE),
};
#undef Q

static uint32_t classify(const struct s3_qparam *p)
{
	for (size_t i = 0; i < sizeof(qnames) / sizeof(qnames[0]); i++)
		if (p->name_len == qnames[i].len && memcmp(p->name, qnames[i].name, p->name_len) == 0)
			return qnames[i].bit;
	/* An unknown bare name is an unknown subresource. */
	return p->has_value ? 0 : SR_UNSUPPORTED;
}

/* Split raw query q into r->q, decoding into *sp. Returns S3E_OK or the
 * error. */
static enum s3_err parse_query(struct s3_req *r, const char *q, size_t n, char **sp,
			       uint32_t *bits)
{
	char *s = *sp;
	for (size_t i = 0; i < n;) {
		size_t end = i;
		while (end < n && q[end] != '&')
			end++;
		if (end == i) { /* "a&&b", trailing '&' */
			i = end + 1;
			continue;
		}
		if (r->n_q == S3_QUERY_MAX) {
			r->err_msg = "Too many query parameters";
			return S3E_InvalidArgument;
		}
		size_t eq = i;
		while (eq < end && q[eq] != '=')
			eq++;
		struct s3_qparam *p = &r->q[r->n_q];
		long kl = s3_pct_decode(s, q + i, eq - i, true);
		if (kl < 0)
			goto bad;
		p->name = s;
		p->name_len = (uint32_t)kl;
		s += kl;
		*s++ = '\0';
		p->has_value = eq < end;
		long vl = p->has_value ? s3_pct_decode(s, q + eq + 1, end - eq - 1, true) : 0;
		if (vl < 0)
			goto bad;
		p->value = s;
		p->value_len = (uint32_t)vl;
		s += vl;
		*s++ = '\0';
		r->n_q++;
		*bits |= classify(p);
		i = end + 1;
	}
	*sp = s;
	return S3E_OK;
bad:
	r->err_msg = "Malformed percent-encoding in the query string";
	return S3E_InvalidArgument;
}

const struct s3_qparam *s3_req_query(const struct s3_req *r, const char *name)
{
	for (uint32_t i = 0; i < r->n_q; i++)
		if (span_is(r->q[i].name, r->q[i].name_len, name))
			return &r->q[i];
	return NULL;
}

/* ------------------------------------------------------------ addressing */

static bool host_eq(const char *a, size_t n, const char *b)
{
	if (strlen(b) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = a[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		char d = b[i];
		if (d >= 'A' && d <= 'Z')
			d = (char)(d - 'A' + 'a');
		if (c != d)
			return false;
	}
	return true;
}

/* The bucket named by Host ("<bucket>.<domain>[:port]"), as a span into
 * host; false when Host is a bare domain, an IP or unknown. */
static bool vhost_bucket(const struct s3_req_cfg *cfg, const char *host, size_t n,
			 const char **b, size_t *bn)
{
	if (!cfg || !host || n == 0 || host[0] == '[')
		return false;
	for (size_t i = 0; i < n; i++)
		if (host[i] == ':') {
			n = i;
			break;
		}
	for (size_t d = 0; d < cfg->n_domains; d++) {
		size_t dl = strlen(cfg->domains[d]);
		if (n < dl + 2 || host[n - dl - 1] != '.')
			continue;
		if (!host_eq(host + n - dl, dl, cfg->domains[d]))
			continue;
		*b = host;
		*bn = n - dl - 1;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------ ops */

static bool method_is(const char *m, const char *lit)
{
	return strcmp(m, lit) == 0;
}

static enum s3_err pick_op(struct s3_req *r, const char *m, uint32_t bits, bool copy_source,
			   bool form_data)
{
	if (bits & SR_UNSUPPORTED) {
		r->err_msg = "This subresource is not implemented";
		return S3E_NotImplemented;
	}
	bool get = method_is(m, "GET"), head = method_is(m, "HEAD"), put = method_is(m, "PUT"),
	     post = method_is(m, "POST"), del = method_is(m, "DELETE");
	if ((bits & SR_UNSET) &&
	    !(r->bucket && !r->key && (get || (del && (bits & (SR_WEBSITE | SR_REPLICATION)))))) {
		/* Setting one, or any use on an object: nothing to serve. */
		r->err_msg = "This subresource is not implemented";
		return S3E_NotImplemented;
	}
	if (method_is(m, "OPTIONS") && r->bucket) {
		/* A CORS preflight, of the bucket or of an object in it. */
		r->op = S3_OP_OptionsObject;
		return S3E_OK;
	}
	if (!r->bucket) {
		if (get) {
			r->op = S3_OP_ListBuckets;
			return S3E_OK;
		}
		return S3E_MethodNotAllowed;
	}
	if (!r->key) {
		if (get) {
			r->op = bits & SR_LOCATION     ? S3_OP_GetBucketLocation
				: bits & SR_UPLOADS    ? S3_OP_ListMultipartUploads
				: bits & SR_TAGGING    ? S3_OP_GetBucketTagging
				: bits & SR_VERSIONING ? S3_OP_GetBucketVersioning
				: bits & SR_VERSIONS   ? S3_OP_ListObjectVersions
				: bits & SR_ACL        ? S3_OP_GetBucketAcl
				: bits & SR_OWNERSHIP  ? S3_OP_GetBucketOwnershipControls
				: bits & SR_POLICY     ? S3_OP_GetBucketPolicy
				: bits & SR_POLICY_STATUS ? S3_OP_GetBucketPolicyStatus
				: bits & SR_PAB        ? S3_OP_GetPublicAccessBlock
				: bits & SR_CORS       ? S3_OP_GetBucketCors
				: bits & SR_LIFECYCLE  ? S3_OP_GetBucketLifecycleConfiguration
				: bits & SR_OBJECT_LOCK ? S3_OP_GetObjectLockConfiguration
				: bits & SR_ENCRYPTION ? S3_OP_GetBucketEncryption
				: bits & SR_ACCELERATE ? S3_OP_GetBucketAccelerateConfiguration
				: bits & SR_REQUEST_PAYMENT ? S3_OP_GetBucketRequestPayment
				: bits & SR_LOGGING    ? S3_OP_GetBucketLogging
				: bits & SR_NOTIFICATION ? S3_OP_GetBucketNotificationConfiguration
				: bits & SR_WEBSITE    ? S3_OP_GetBucketWebsite
				: bits & SR_REPLICATION ? S3_OP_GetBucketReplication
							 : S3_OP_ListObjects;
			if (r->op == S3_OP_ListObjects && (bits & SR_LIST_TYPE)) {
				const struct s3_qparam *lt = s3_req_query(r, "list-type");
				if (span_is(lt->value, lt->value_len, "2"))
					r->op = S3_OP_ListObjectsV2;
				else if (!span_is(lt->value, lt->value_len, "1")) {
					r->err_msg = "Invalid list-type";
					return S3E_InvalidArgument;
				}
			}
		} else if (head) {
			r->op = S3_OP_HeadBucket;
		} else if (put) {
			r->op = bits & SR_TAGGING      ? S3_OP_PutBucketTagging
				: bits & SR_VERSIONING ? S3_OP_PutBucketVersioning
				: bits & SR_ACL        ? S3_OP_PutBucketAcl
				: bits & SR_OWNERSHIP  ? S3_OP_PutBucketOwnershipControls
				: bits & SR_POLICY     ? S3_OP_PutBucketPolicy
				: bits & SR_PAB        ? S3_OP_PutPublicAccessBlock
				: bits & SR_CORS       ? S3_OP_PutBucketCors
				: bits & SR_LIFECYCLE  ? S3_OP_PutBucketLifecycleConfiguration
				: bits & SR_OBJECT_LOCK ? S3_OP_PutObjectLockConfiguration
				: bits & SR_ENCRYPTION ? S3_OP_PutBucketEncryption
						       : S3_OP_CreateBucket;
		} else if (del) {
			r->op = bits & SR_TAGGING     ? S3_OP_DeleteBucketTagging
				: bits & SR_OWNERSHIP ? S3_OP_DeleteBucketOwnershipControls
				: bits & SR_POLICY    ? S3_OP_DeleteBucketPolicy
				: bits & SR_PAB       ? S3_OP_DeletePublicAccessBlock
				: bits & SR_CORS      ? S3_OP_DeleteBucketCors
				: bits & SR_LIFECYCLE ? S3_OP_DeleteBucketLifecycle
				: bits & SR_ENCRYPTION ? S3_OP_DeleteBucketEncryption
				: bits & SR_WEBSITE   ? S3_OP_DeleteBucketWebsite
				: bits & SR_REPLICATION ? S3_OP_DeleteBucketReplication
						      : S3_OP_DeleteBucket;
		} else if (post) {
			if (bits & SR_DELETE) {
				r->op = S3_OP_DeleteObjects;
			} else if (form_data) {
				r->op = S3_OP_PostObject;
			} else {
				r->err_msg = "Bucket POST must be of the enclosure-type multipart/form-data";
				return S3E_PreconditionFailed;
			}
		} else {
			return S3E_MethodNotAllowed;
		}
		return S3E_OK;
	}
	bool upload = bits & SR_UPLOAD_ID;
	if ((bits & SR_PART_NUMBER) && (put || !upload)) {
		/* UploadPart, or GET/HEAD of one part of a completed upload. */
		const struct s3_qparam *pn = s3_req_query(r, "partNumber");
		uint32_t v = 0;
		bool ok = pn->value_len > 0 && pn->value_len <= 5;
		for (uint32_t i = 0; ok && i < pn->value_len; i++) {
			char c = pn->value[i];
			ok = c >= '0' && c <= '9';
			v = v * 10 + (uint32_t)(c - '0');
		}
		if (!ok || v < 1 || v > S3_PART_MAX) {
			r->err_msg = "Part number must be an integer between 1 and 10000, inclusive";
			return S3E_InvalidArgument;
		}
		r->part_number = v;
	}
	if (get) {
		r->op = bits & SR_TAGGING      ? S3_OP_GetObjectTagging
			: upload               ? S3_OP_ListParts
			: bits & SR_ATTRIBUTES ? S3_OP_GetObjectAttributes
			: bits & SR_ACL        ? S3_OP_GetObjectAcl
			: bits & SR_RETENTION  ? S3_OP_GetObjectRetention
			: bits & SR_LEGAL_HOLD ? S3_OP_GetObjectLegalHold
					       : S3_OP_GetObject;
	} else if (head) {
		r->op = S3_OP_HeadObject;
	} else if (put) {
		if (bits & SR_TAGGING)
			r->op = S3_OP_PutObjectTagging;
		else if (bits & SR_ACL)
			r->op = S3_OP_PutObjectAcl;
		else if (bits & SR_RETENTION)
			r->op = S3_OP_PutObjectRetention;
		else if (bits & SR_LEGAL_HOLD)
			r->op = S3_OP_PutObjectLegalHold;
		else if (upload || (bits & SR_PART_NUMBER)) {
			if (!upload || !(bits & SR_PART_NUMBER)) {
				r->err_msg = "UploadPart needs both uploadId and partNumber";
				return S3E_InvalidArgument;
			}
			r->op = copy_source ? S3_OP_UploadPartCopy : S3_OP_UploadPart;
		} else {
			r->op = copy_source ? S3_OP_CopyObject : S3_OP_PutObject;
		}
	} else if (del) {
		r->op = bits & SR_TAGGING ? S3_OP_DeleteObjectTagging
			: upload          ? S3_OP_AbortMultipartUpload
					  : S3_OP_DeleteObject;
	} else if (post) {
		if (bits & SR_UPLOADS)
			r->op = S3_OP_CreateMultipartUpload;
		else if (upload)
			r->op = S3_OP_CompleteMultipartUpload;
		else {
			r->err_msg = "This POST request is not implemented";
			return S3E_NotImplemented;
		}
	} else {
		return S3E_MethodNotAllowed;
	}
	return S3E_OK;
}

/* ------------------------------------------------------------ parse */

static enum s3_err set_key(struct s3_req *r, const char *raw, size_t n, char **sp)
{
	char *s = *sp;
	long kl = s3_pct_decode(s, raw, n, false);
	if (kl < 0) {
		r->err_msg = "Malformed percent-encoding in the key";
		return S3E_InvalidURI;
	}
	r->key = s;
	r->key_len = (size_t)kl;
	s[kl] = '\0';
	*sp = s + kl + 1;
	if (r->key_len > S3_KEY_MAX)
		return S3E_KeyTooLongError;
	if (!utf8_valid((const unsigned char *)r->key, r->key_len)) {
		r->err_msg = "Object key is not valid UTF-8";
		return S3E_InvalidArgument;
	}
	return S3E_OK;
}

static enum s3_err set_bucket(struct s3_req *r, const char *raw, size_t n, bool decode,
			      char **sp)
{
	char *s = *sp;
	long bl = decode ? s3_pct_decode(s, raw, n, false) : (long)n;
	if (bl < 0)
		return S3E_InvalidBucketName;
	if (!decode)
		memcpy(s, raw, n);
	r->bucket = s;
	r->bucket_len = (size_t)bl;
	s[bl] = '\0';
	*sp = s + bl + 1;
	return s3_bucket_name_valid(r->bucket, r->bucket_len) ? S3E_OK : S3E_InvalidBucketName;
}

static enum s3_err route(struct s3_req *r, const struct s3_req_cfg *cfg,
			 const struct s3_req_in *in, char *s)
{
	const char *t = in->target;
	size_t n = in->target_len;
	if (n == 0 || t[0] != '/') {
		r->err_msg = "The request target must be an absolute path";
		return S3E_InvalidURI;
	}
	size_t qpos = 0;
	while (qpos < n && t[qpos] != '?')
		qpos++;
	r->raw_path = t;
	r->raw_path_len = qpos;
	if (qpos < n) {
		r->raw_query = t + qpos + 1;
		r->raw_query_len = n - qpos - 1;
	}

	uint32_t bits = 0;
	enum s3_err e = parse_query(r, r->raw_query, r->raw_query_len, &s, &bits);
	if (e)
		return e;
	const struct s3_qparam *up = s3_req_query(r, "uploadId");
	if (up) { /* the value, not the entry: s3_req may be copied */
		r->upload_id = up->value;
		r->upload_id_len = up->value_len;
	}

	const char *path = t + 1; /* after the leading '/' */
	size_t plen = qpos - 1;
	const char *vb;
	size_t vbn;
	if (vhost_bucket(cfg, in->host, in->host_len, &vb, &vbn)) {
		r->virtual_host = true;
		if (vbn > S3_BUCKET_MAX) /* before copying: bounds the scratch */
			return S3E_InvalidBucketName;
		/* Host names are case-insensitive; bucket names are lower case. */
		e = set_bucket(r, vb, vbn, false, &s);
		for (size_t i = 0; i < r->bucket_len; i++)
			if (r->bucket[i] >= 'A' && r->bucket[i] <= 'Z')
				e = S3E_InvalidBucketName;
		if (e)
			return e;
		if (plen > 0 && (e = set_key(r, path, plen, &s)))
			return e;
	} else if (plen > 0) {
		size_t slash = 0;
		while (slash < plen && path[slash] != '/')
			slash++;
		if ((e = set_bucket(r, path, slash, true, &s)))
			return e;
		/* "/bucket/" is the bucket itself (minio-go's CreateBucket). */
		if (slash + 1 < plen && (e = set_key(r, path + slash + 1, plen - slash - 1, &s)))
			return e;
	}
	return pick_op(r, in->method, bits, in->has_copy_source, in->form_data);
}

enum s3_err s3_req_parse(struct s3_req *r, const struct s3_req_cfg *cfg,
			 const struct s3_req_in *in, char *scratch, size_t scratch_len)
{
	r->op = S3_OP_NONE;
	r->err_msg = NULL;
	r->virtual_host = false;
	r->bucket = r->key = NULL;
	r->bucket_len = r->key_len = 0;
	r->raw_path = r->raw_query = NULL;
	r->raw_path_len = r->raw_query_len = 0;
	r->n_q = 0;
	r->part_number = 0;
	r->upload_id = NULL;
	r->upload_id_len = 0;
	if (scratch_len < S3_REQ_SCRATCH(in->target_len)) {
		r->err = S3E_InternalError;
		return r->err;
	}
	r->err = route(r, cfg, in, scratch);
	if (r->err)
		r->op = S3_OP_NONE;
	return r->err;
}
