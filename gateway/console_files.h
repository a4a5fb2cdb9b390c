/*
 * console_files.h — the web console's built files (every file of console/dist),
 * embedded in the binary: scripts/embed-console.py writes the table into
 * $(B)/gen/console_files.c at build time from the committed files, and
 * gateway/admin_api_console.c serves it under /console/.
 */
#ifndef GATEWAY_CONSOLE_FILES_H
#define GATEWAY_CONSOLE_FILES_H

#include <stddef.h>

struct console_file {
	const char *name;               /* "index.html", "app.js", ... */
	const char *content_type;       /* by extension */
	const char *etag;               /* strong, quoted: a SHA-256 prefix */
	const unsigned char *data;
	size_t len;
};

extern const struct console_file console_files[];
extern const size_t console_n_files;

#endif
