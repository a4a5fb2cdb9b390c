/*
 * iolake.c — the `iolake` command: objects over the native protocol
 * (libiolake, docs/native-protocol.md), in the manner of `aws s3`:
 *
 *   iolake [--endpoint H:P] [--access-key K] [--secret-key S] CMD ARGS
 *     put BUCKET/KEY [FILE|-] [--skip-md5] [--content-type T]
 *     get BUCKET/KEY [FILE|-] [--range FIRST-LAST]
 *     head BUCKET/KEY
 *     rm BUCKET/KEY
 *     ls BUCKET[/PREFIX] [--delimiter D] [--start-after K] [--max-keys N]
 *
 * Keys come from the flags, else IOLAKE_ACCESS_KEY / IOLAKE_SECRET_KEY,
 * else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; the endpoint from
 * --endpoint, else IOLAKE_ENDPOINT. Exit status: 0, 1 for a failed call
 * (the gateway's "Code: detail" on stderr), 2 for bad usage.
 *
 * Owns nothing beyond one libiolake handle and the file it reads or
 * writes. Files stream (16 MiB at a time), so any size up to 5 GiB works.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <stdbool.h>
#include <unistd.h>

#include "lib/include/iolake.h"

#define PROG "iolake"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [OPTIONS] COMMAND ARGS\n"
		"Objects in IOLake over its native protocol (not S3).\n\n"
		"Commands:\n"
		"  put BUCKET/KEY [FILE|-]   store FILE (stdin: -, the default)\n"
		"  get BUCKET/KEY [FILE|-]   fetch into FILE (stdout: -, the default)\n"
		"  head BUCKET/KEY           size, ETag, time, content type\n"
		"  rm BUCKET/KEY             delete\n"
		"  ls BUCKET[/PREFIX]        list keys (and common prefixes with --delimiter)\n\n"
		"Options:\n"
		"  --endpoint HOST:PORT      the gateway's native listener (IOLAKE_ENDPOINT;\n"
		"                            iolake-aio prints it as \"native:\")\n"
		"  --access-key K            (IOLAKE_ACCESS_KEY, else AWS_ACCESS_KEY_ID)\n"
		"  --secret-key S            (IOLAKE_SECRET_KEY, else AWS_SECRET_ACCESS_KEY)\n"
		"  --region R                of the signature's scope (default us-east-1)\n"
		"  --skip-md5                put: store an opaque \"<hex>-0\" ETag, no MD5\n"
		"  --content-type T          put: the object's Content-Type\n"
		"  --range FIRST-LAST        get: those bytes only (inclusive, as HTTP)\n"
		"  --delimiter D             ls: group keys at D\n"
		"  --start-after K           ls: from after K\n"
		"  --max-keys N              ls: at most N names\n"
		"  --unsigned-payload        send UNSIGNED-PAYLOAD instead of body hashes\n"
		"  --sign-each-call          sign every call (default: log the connection in once)\n"
		"  --timeout MS              per call (default 60000)\n"
		"  --tls-ca/--tls-cert/--tls-key FILE  mutual TLS, when the gateway has --rpc-tls-*\n"
		"  --debug-clock-offset S    tests only: sign as if the clock were S seconds off\n"
		"  -h, --help                this text\n",
		PROG);
}

static int split(const char *arg, char *bucket, size_t bcap, const char **key)
{
	const char *slash = strchr(arg, '/');
	size_t bl = slash ? (size_t)(slash - arg) : strlen(arg);
	if (!bl || bl >= bcap)
		return -1;
	memcpy(bucket, arg, bl);
	bucket[bl] = 0;
	*key = slash ? slash + 1 : "";
	return 0;
}

static long read_fd(void *arg, void *buf, size_t cap)
{
	int fd = *(int *)arg;
	for (;;) {
		ssize_t n = read(fd, buf, cap);
		if (n >= 0 || errno != EINTR)
			return (long)n;
	}
}

static int write_fd(void *arg, const void *data, size_t n)
{
	int fd = *(int *)arg;
	const char *p = data;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int print_entry(void *arg, const struct iolake_entry *e)
{
	(void)arg;
	if (e->is_prefix) {
		printf("%30s PRE %s\n", "", e->name);
		return 0;
	}
	time_t t = (time_t)(e->mtime_ms / 1000);
	struct tm tm;
	char ts[32];
	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s %12" PRIu64 " %s  %s\n", ts, e->size, e->etag ? e->etag : "", e->name);
	return 0;
}

static const char *env2(const char *a, const char *b)
{
	const char *v = getenv(a);
	return v && *v ? v : getenv(b);
}

int main(int argc, char **argv)
{
	const char *endpoint = getenv("IOLAKE_ENDPOINT");
	const char *ak = env2("IOLAKE_ACCESS_KEY", "AWS_ACCESS_KEY_ID");
	const char *sk = env2("IOLAKE_SECRET_KEY", "AWS_SECRET_ACCESS_KEY");
	const char *region = NULL, *ctype = NULL, *range = NULL, *delim = NULL, *start = NULL;
	uint64_t max_keys = 0;
	int skip_md5 = 0, unsigned_payload = 0, sign_each_call = 0;
	uint32_t timeout_ms = 0;
	int64_t skew_s = 0;
	const char *tls_ca = NULL, *tls_cert = NULL, *tls_key = NULL;
	enum { O_EP = 256, O_AK, O_SK, O_REGION, O_SKIP, O_CT, O_RANGE, O_DELIM, O_START, O_MAX,
	       O_UNSIGNED, O_SIGN_EACH, O_TIMEOUT, O_SKEW, O_TLS_CA, O_TLS_CERT, O_TLS_KEY };
	static const struct option opts[] = {
		{ "endpoint", required_argument, NULL, O_EP },
		{ "access-key", required_argument, NULL, O_AK },
		{ "secret-key", required_argument, NULL, O_SK },
		{ "region", required_argument, NULL, O_REGION },
		{ "skip-md5", no_argument, NULL, O_SKIP },
		{ "content-type", required_argument, NULL, O_CT },
		{ "range", required_argument, NULL, O_RANGE },
		{ "delimiter", required_argument, NULL, O_DELIM },
		{ "start-after", required_argument, NULL, O_START },
		{ "max-keys", required_argument, NULL, O_MAX },
		{ "unsigned-payload", no_argument, NULL, O_UNSIGNED },
		{ "sign-each-call", no_argument, NULL, O_SIGN_EACH },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "debug-clock-offset", required_argument, NULL, O_SKEW },
		{ "tls-ca", required_argument, NULL, O_TLS_CA },
		{ "tls-cert", required_argument, NULL, O_TLS_CERT },
		{ "tls-key", required_argument, NULL, O_TLS_KEY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (o) {
		case O_EP: endpoint = optarg; break;
		case O_AK: ak = optarg; break;
		case O_SK: sk = optarg; break;
		case O_REGION: region = optarg; break;
		case O_SKIP: skip_md5 = 1; break;
		case O_CT: ctype = optarg; break;
		case O_RANGE: range = optarg; break;
		case O_DELIM: delim = optarg; break;
		case O_START: start = optarg; break;
		case O_MAX: max_keys = strtoull(optarg, NULL, 10); break;
		case O_UNSIGNED: unsigned_payload = 1; break;
		case O_SIGN_EACH: sign_each_call = 1; break;
		case O_TIMEOUT: timeout_ms = (uint32_t)strtoul(optarg, NULL, 10); break;
		case O_SKEW: skew_s = strtoll(optarg, NULL, 10); break;
		case O_TLS_CA: tls_ca = optarg; break;
		case O_TLS_CERT: tls_cert = optarg; break;
		case O_TLS_KEY: tls_key = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s (IOLake native protocol client)\n", PROG); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[optind++];
	if (optind >= argc) {
		fprintf(stderr, "%s %s: BUCKET%s is needed\n", PROG, cmd, strcmp(cmd, "ls") ? "/KEY" : "");
		return 2;
	}
	char bucket[256];
	const char *key;
	if (split(argv[optind++], bucket, sizeof(bucket), &key)) {
		fprintf(stderr, "%s: '%s' is not BUCKET/KEY\n", PROG, argv[optind - 1]);
		return 2;
	}
	const char *file = optind < argc ? argv[optind++] : "-";
	if (!endpoint || !*endpoint) {
		fprintf(stderr, "%s: no endpoint: --endpoint HOST:PORT or IOLAKE_ENDPOINT\n", PROG);
		return 2;
	}
	if (!ak || !*ak || !sk || !*sk) {
		fprintf(stderr, "%s: no credentials: --access-key/--secret-key or IOLAKE_ACCESS_KEY/"
			"IOLAKE_SECRET_KEY\n", PROG);
		return 2;
	}
	bool need_key = strcmp(cmd, "ls") != 0;
	if (need_key && !*key) {
		fprintf(stderr, "%s %s: a key is needed (BUCKET/KEY)\n", PROG, cmd);
		return 2;
	}
	struct iolake_opts io = { .region = region, .timeout_ms = timeout_ms,
				  .unsigned_payload = unsigned_payload,
				  .sign_each_call = sign_each_call,
				  .debug_clock_offset_s = skew_s, .tls_ca = tls_ca,
				  .tls_cert = tls_cert, .tls_key = tls_key };
	iolake_t *c = iolake_open(endpoint, ak, sk, &io);
	if (!c) {
		fprintf(stderr, "%s: cannot open %s\n", PROG, endpoint);
		return 1;
	}
	int rc = 0, fd = -1;
	struct iolake_info info;
	memset(&info, 0, sizeof(info));
	if (!strcmp(cmd, "put")) {
		fd = strcmp(file, "-") ? open(file, O_RDONLY | O_CLOEXEC) : 0;
		struct stat st;
		if (fd < 0 || fstat(fd, &st)) {
			fprintf(stderr, "%s put: %s: %s\n", PROG, file, strerror(errno));
			iolake_close(c);
			return 1;
		}
		struct iolake_put_opts po = { .content_type = ctype, .skip_md5 = skip_md5 };
		if (S_ISREG(st.st_mode)) {
			rc = iolake_put_stream(c, bucket, key, (uint64_t)st.st_size, read_fd, &fd, &po, &info);
		} else {
			/* A pipe: its length is known only at its end. */
			size_t cap = 1 << 20, len = 0;
			char *b = malloc(cap);
			long n;
			while (b && (n = read_fd(&fd, b + len, cap - len)) > 0) {
				len += (size_t)n;
				if (len == cap) {
					char *nb = cap < (5ull << 30) ? realloc(b, cap * 2) : NULL;
					if (!nb) {
						free(b);
						b = NULL;
						break;
					}
					b = nb;
					cap *= 2;
				}
			}
			rc = b ? iolake_put(c, bucket, key, b, len, &po, &info) : IOLAKE_ENOMEM;
			free(b);
		}
		if (!rc)
			printf("%s\n", info.etag);
	} else if (!strcmp(cmd, "get")) {
		uint64_t off = 0, len = 0;
		if (range) {
			unsigned long long a, b;
			if (sscanf(range, "%llu-%llu", &a, &b) != 2 || b < a) {
				fprintf(stderr, "%s get: --range wants FIRST-LAST, not '%s'\n", PROG, range);
				iolake_close(c);
				return 2;
			}
			off = a;
			len = b - a + 1;
		}
		fd = strcmp(file, "-") ? open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : 1;
		if (fd < 0) {
			fprintf(stderr, "%s get: %s: %s\n", PROG, file, strerror(errno));
			iolake_close(c);
			return 1;
		}
		rc = iolake_get_cb(c, bucket, key, off, len, write_fd, &fd, &info);
	} else if (!strcmp(cmd, "head")) {
		rc = iolake_head(c, bucket, key, &info);
		if (!rc)
			printf("size %" PRIu64 "\netag %s\nmtime_ms %" PRIu64 "\ncontent_type %s\n",
			       info.size, info.etag, info.mtime_ms, info.content_type);
	} else if (!strcmp(cmd, "rm")) {
		rc = iolake_delete(c, bucket, key);
	} else if (!strcmp(cmd, "ls")) {
		rc = iolake_list(c, bucket, key, delim, start, max_keys, print_entry, NULL);
	} else {
		fprintf(stderr, "%s: unknown command '%s'\n", PROG, cmd);
		iolake_close(c);
		return 2;
	}
	if (rc)
		fprintf(stderr, "%s %s: %s (%s)\n", PROG, cmd, iolake_errmsg(c), iolake_strerror(rc));
	if (fd > 2 && close(fd) && !rc) {
		fprintf(stderr, "%s: %s: %s\n", PROG, file, strerror(errno));
		rc = IOLAKE_EIO;
	}
	iolake_close(c);
	return rc ? 1 : 0;
}
