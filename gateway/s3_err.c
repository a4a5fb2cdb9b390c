/*
 * s3_err.c — the S3 error table and its XML rendering. See s3_err.h.
 *
 * Owns the table. Does not decide which error a situation gets: the
 * handlers do, and meta's answers go through s3_status.
 */
#include "gateway/s3_err.h"

struct s3_err_info {
	const char *name;
	const char *code;
	const char *message;
	int status;
};

static const struct s3_err_info table[S3E__COUNT] = {
	[S3E_OK] = { "OK", "OK", "OK", 200 },
#define S3_ERR_ROW(n, st, c, m) [S3E_##n] = { #n, c, m, st },
	S3_ERRORS(S3_ERR_ROW)
#undef S3_ERR_ROW
};

static const struct s3_err_info *info(enum s3_err e)
{
	if ((unsigned)e >= S3E__COUNT)
		return &table[S3E_InternalError];
	return &table[e];
}

int s3_err_status(enum s3_err e)
{
	return info(e)->status;
}

const char *s3_err_code(enum s3_err e)
{
	return info(e)->code;
}

const char *s3_err_message(enum s3_err e)
{
	return info(e)->message;
}

const char *s3_err_name(enum s3_err e)
{
	return info(e)->name;
}

int s3_err_render(struct xml_w *w, enum s3_err e, const char *message, const char *region,
		  const char *resource, const char *request_id)
{
	const struct s3_err_info *i = info(e);
	xml_decl(w);
	xml_open(w, "Error");
	xml_elem(w, "Code", i->code);
	xml_elem(w, "Message", message ? message : i->message);
	if (region)
		xml_elem(w, "Region", region);
	if (resource)
		xml_elem(w, "Resource", resource);
	if (request_id)
		xml_elem(w, "RequestId", request_id);
	xml_close(w);
	const char *out;
	size_t len;
	return xml_finish(w, &out, &len);
}
