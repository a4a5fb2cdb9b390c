/*
 * admin_http.c — see admin_http.h. Parses the URL (numeric or named host,
 * port), signs the request (host, x-amz-content-sha256, x-amz-date), sends
 * it and reads until the server closes, then splits the status line and
 * the head from the body.
 */
#include "admin/http.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/sigv4.h"

static int parse_url(const char *url, char *host, size_t hcap, char *port, size_t pcap)
{
	if (strncmp(url, "http://", 7))
		return -EINVAL;
	const char *h = url + 7, *end = h + strcspn(h, "/");
	const char *colon = NULL;
	for (const char *p = h; p < end; p++)
		if (*p == ':')
			colon = p;
	const char *hend = colon ? colon : end;
	if (hend == h || (size_t)(hend - h) >= hcap)
		return -EINVAL;
	memcpy(host, h, (size_t)(hend - h));
	host[hend - h] = 0;
	size_t pl = colon ? (size_t)(end - colon - 1) : 2;
	if (!pl || pl >= pcap)
		return -EINVAL;
	if (colon)
		memcpy(port, colon + 1, pl);
	else
		memcpy(port, "80", 2);
	port[pl] = 0;
	return 0;
}

static int dial(const char *host, const char *port, unsigned timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	if (getaddrinfo(host, port, &hints, &ai))
		return -EHOSTUNREACH;
	int fd = -ECONNREFUSED;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (s < 0)
			continue;
		struct timeval tv = { .tv_sec = timeout_ms / 1000,
				      .tv_usec = (timeout_ms % 1000) * 1000 };
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(s, a->ai_addr, a->ai_addrlen) == 0) {
			fd = s;
			break;
		}
		fd = -errno;
		close(s);
	}
	freeaddrinfo(ai);
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int admin_http_call(const struct admin_http_req *r, int *status, char **body, size_t *len,
		    char *err, size_t err_len)
{
	char host[256], port[16], hostport[280], path[2048];
	if (parse_url(r->url, host, sizeof(host), port, sizeof(port))) {
		snprintf(err, err_len, "%s is not an http://HOST:PORT URL", r->url);
		return -EINVAL;
	}
	snprintf(hostport, sizeof(hostport), "%s:%s", host, port);
	if (r->path[0] == '/')
		snprintf(path, sizeof(path), "%s", r->path);
	else
		snprintf(path, sizeof(path), "/api/v1/%s", r->path);
	const char *q = strchr(path, '?');
	size_t blen = r->body ? strlen(r->body) : 0;
	uint8_t d[32];
	char payload[65], amz_date[17], authz[1400];
	hash_sha256(r->body ? r->body : "", blen, d);
	hash_hex(d, 32, payload);
	sigv4_format_amz_date(time(NULL), amz_date);
	struct sigv4_header hs[3] = {
		{ "host", 4, hostport, strlen(hostport) },
		{ "x-amz-content-sha256", 20, payload, 64 },
		{ "x-amz-date", 10, amz_date, 16 },
	};
	struct sigv4_auth a;
	memset(&a, 0, sizeof(a));
	snprintf(a.access_key, sizeof(a.access_key), "%s", r->access_key);
	memcpy(a.date, amz_date, 8);
	snprintf(a.region, sizeof(a.region), "%s", r->region ? r->region : "us-east-1");
	snprintf(a.service, sizeof(a.service), "iolake-admin");
	memcpy(a.amz_date, amz_date, 17);
	snprintf(a.signed_headers, sizeof(a.signed_headers), "host;x-amz-content-sha256;x-amz-date");
	struct sigv4_request sr = { r->method, path, q ? (size_t)(q - path) : strlen(path),
				    q ? q + 1 : NULL, q ? strlen(q + 1) : 0, hs, 3, payload };
	uint8_t key[32];
	sigv4_signing_key(r->secret_key, a.date, a.region, a.service, key);
	if (sigv4_sign(key, &sr, &a, a.signature) || sigv4_format_header(&a, authz, sizeof(authz)) < 0) {
		snprintf(err, err_len, "cannot sign the request (bad path?)");
		return -EINVAL;
	}
	char *head = NULL;
	int hl = asprintf(&head,
			  "%s %s HTTP/1.1\r\nHost: %s\r\nx-amz-content-sha256: %s\r\n"
			  "x-amz-date: %s\r\nAuthorization: %s\r\nContent-Length: %zu\r\n"
			  "%sConnection: close\r\n\r\n",
			  r->method, path, hostport, payload, amz_date, authz, blen,
			  blen ? "Content-Type: application/json\r\n" : "");
	if (hl < 0) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	unsigned tmo = r->timeout_ms ? r->timeout_ms : 10000;
	int fd = dial(host, port, tmo);
	if (fd < 0) {
		snprintf(err, err_len, "cannot connect to %s: %s", hostport, strerror(-fd));
		free(head);
		return fd;
	}
	int rc = send_all(fd, head, (size_t)hl);
	if (!rc && blen)
		rc = send_all(fd, r->body, blen);
	free(head);
	if (rc) {
		snprintf(err, err_len, "sending to %s: %s", hostport, strerror(-rc));
		close(fd);
		return rc;
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			close(fd);
			snprintf(err, err_len, "out of memory");
			return -ENOMEM;
		}
		if (n + 1 == cap) {
			if (cap >= ADMIN_HTTP_RESP_MAX) {
				free(buf);
				close(fd);
				snprintf(err, err_len, "the answer is over %u bytes", ADMIN_HTTP_RESP_MAX);
				return -E2BIG;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				free(buf);
			buf = nb;
			cap *= 2;
			continue;
		}
		ssize_t got = recv(fd, buf + n, cap - n - 1, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;
			free(buf);
			close(fd);
			snprintf(err, err_len, "reading from %s: %s", hostport,
				 e == EAGAIN ? "timed out" : strerror(e));
			return -e;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	buf[n] = 0;
	char *sep = strstr(buf, "\r\n\r\n");
	int st = 0;
	if (!sep || sscanf(buf, "HTTP/1.%*d %d", &st) != 1 || st < 100 || st > 599) {
		free(buf);
		snprintf(err, err_len, "%s did not answer HTTP", hostport);
		return -EPROTO;
	}
	size_t off = (size_t)(sep + 4 - buf);
	memmove(buf, buf + off, n - off + 1);
	*status = st;
	*body = buf;
	*len = n - off;
	return 0;
}
