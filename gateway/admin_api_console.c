/*
 * admin_api_console.c — the web console's static files under /console/
 * on the admin API's port: the table compiled from console/dist
 * (console_files.h), no authentication (the console logs in through
 * POST /api/v1/login like any client).
 *
 * Headers: the file's Content-Type; a strong ETag (If-None-Match answers
 * 304) with "Cache-Control: no-cache", so a browser revalidates each load
 * and a new binary's files are seen at once; a strict
 * Content-Security-Policy (scripts, styles and fetches from this origin
 * only, no inline script or style element, no framing); nosniff.
 * "/console/" is index.html; any other name not in the table is a 404.
 *
 * Does not: read files from disk at run time, or know what the files are.
 */
#include <string.h>

#include "gateway/admin_api_int.h"
#include "gateway/console_files.h"

#define CONSOLE_CSP                                                                        \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "  \
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "      \
	"frame-ancestors 'none'"

static const struct console_file *find(const char *name, size_t len)
{
	if (!len) {
		name = "index.html";
		len = 10;
	}
	for (size_t i = 0; i < console_n_files; i++)
		if (strlen(console_files[i].name) == len && !memcmp(console_files[i].name, name, len))
			return &console_files[i];
	return NULL;
}

void admin_h_console(struct admin_call *c)
{
	const struct admin_route *r = admin_call_route(c);
	const struct console_file *f = find(r->file, r->file_len);
	if (!f) {
		admin_reply_error(c, 404, "NotFound", "no such console file");
		return;
	}
	size_t vl;
	const char *inm = admin_header(c->headers, c->n_headers, "if-none-match", &vl);
	bool fresh = inm && admin_etag_match(inm, vl, f->etag);
	struct admin_static_hdr h[] = {
		{ "ETag", f->etag },
		{ "Cache-Control", "no-cache" },
		{ "Content-Security-Policy", CONSOLE_CSP },
		{ "X-Frame-Options", "DENY" },
		{ "Referrer-Policy", "no-referrer" },
	};
	admin_reply_static(c, fresh ? 304 : 200, f->content_type, h, sizeof(h) / sizeof(h[0]),
			   fresh ? NULL : f->data, fresh ? 0 : f->len);
}
