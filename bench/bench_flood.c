/*
 * bench_flood.c — bench-flood: an authenticated client's GET latency while
 * one address floods the S3 port with unauthenticated requests (issue 16,
 * must-show 3). Two threads, each its own epoll loop:
 *
 *   victim   GETs the presigned (SigV4) paths listed in --paths at a fixed
 *            --victim-rate over --victim-conns keep-alive connections from
 *            --victim-source; latency runs from each request's scheduled
 *            time to the end of its response (so queueing behind a slow
 *            answer counts: no coordinated omission)
 *   flooder  --flood-conns connections from --flood-source, each sending
 *            "GET /flood/x" without Authorization as fast as the
 *            --flood-rate budget allows; a connection the server closes
 *            (503 SlowDown + Connection: close) is opened again
 *
 * Phases of --phase-secs each, in the order of --phases (e.g.
 * "off,on,off"): the flooder runs only in "on" phases; the victim runs
 * throughout, and its latencies are reported per phase (p50/p99/max), with
 * the flood's sent and answered counts by status.
 *
 * HTTP/1.1 only, responses with Content-Length (what the gateway sends).
 * Not a load generator for throughput: see iolake-s3-bench.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define RBUF 16384
#define MAX_PHASES 8

struct conn {
	int fd;
	bool busy;
	bool connecting;
	uint64_t t0_ns;        /* scheduled time of the request in flight */
	size_t rlen;
	char rbuf[RBUF];
};

static const char *target_ip = "127.0.0.1";
static int target_port;
static const char *victim_src = "127.0.0.1", *flood_src = "127.0.0.2";
static double victim_rate = 500, flood_rate = 10000;
static int victim_conns = 4, flood_conns = 64, phase_secs = 10;
static char *paths[65536];
static int n_paths;
static char phase_on[MAX_PHASES];
static int n_phases;

static atomic_int cur_phase = -1; /* -1 before, n_phases after */
static int server_pid;            /* --pid: CPU of the server per phase */
static int flood_nice;            /* --flood-nice: the flooder thread's nice value */
static double cpu_self[MAX_PHASES];

static double self_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}
static double cpu_all[MAX_PHASES], cpu_gw[MAX_PHASES];

/* CPU seconds used so far by process pid: all threads, and the threads
 * named "gw" or "gw.N" (iolake-aio's gateway loops, one per --gw-loops;
 * for iolake-gw: the whole). */
static void cpu_now(double *all, double *gw)
{
	*all = *gw = 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", server_pid);
	FILE *ls;
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "ls %s", path);
	if (!(ls = popen(cmd, "r")))
		return;
	char tid[32];
	long hz = sysconf(_SC_CLK_TCK);
	while (fgets(tid, sizeof(tid), ls)) {
		tid[strcspn(tid, "\n")] = 0;
		char f[128], buf[1024];
		snprintf(f, sizeof(f), "%s/%s/stat", path, tid);
		FILE *st = fopen(f, "r");
		if (!st)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, st);
		fclose(st);
		buf[n] = 0;
		char *rp = strrchr(buf, ')');
		if (!rp)
			continue;
		unsigned long ut = 0, stt = 0;
		/* fields after ") ": state(3) ... utime(14) stime(15) */
		sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt);
		double sec = (double)(ut + stt) / (double)hz;
		*all += sec;
		char *lp = strchr(buf, '(');
		if (lp && (!strncmp(lp + 1, "gw)", 3) || !strncmp(lp + 1, "gw.", 3)))
			*gw += sec;
	}
	pclose(ls);
}

/* victim results, per phase */
static uint64_t *lat[MAX_PHASES];
static size_t n_lat[MAX_PHASES], cap_lat[MAX_PHASES];
static uint64_t v_err[MAX_PHASES];
/* flood results, per phase */
static atomic_uint_fast64_t f_sent[MAX_PHASES], f_status[MAX_PHASES][6], f_connerr[MAX_PHASES],
	f_conns[MAX_PHASES];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int open_conn(const char *src)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	inet_pton(AF_INET, src, &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	struct sockaddr_in ta = { .sin_family = AF_INET, .sin_port = htons((uint16_t)target_port) };
	inet_pton(AF_INET, target_ip, &ta.sin_addr);
	if (connect(fd, (struct sockaddr *)&ta, sizeof(ta)) && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A complete response in c->rbuf: its length, status and whether the
 * server closes; 0 when incomplete. */
static size_t response_done(struct conn *c, int *status, bool *closes)
{
	c->rbuf[c->rlen < RBUF ? c->rlen : RBUF - 1] = 0;
	char *end = strstr(c->rbuf, "\r\n\r\n");
	if (!end)
		return 0;
	size_t head = (size_t)(end - c->rbuf) + 4;
	size_t cl = 0;
	*closes = false;
	for (char *l = strstr(c->rbuf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n")) {
		if (!strncasecmp(l + 2, "content-length:", 15))
			cl = strtoul(l + 17, NULL, 10);
		else if (!strncasecmp(l + 2, "connection: close", 17))
			*closes = true;
	}
	*status = atoi(c->rbuf + 9);
	if (c->rlen < head + cl)
		return 0;
	return head + cl;
}

/* Read what there is; 1 response complete, 0 not yet, -1 closed/error. */
static int pump(struct conn *c, int *status, bool *closes, bool keep_body)
{
	bool gone = false;
	for (;;) {
		size_t room = RBUF - 1 - c->rlen;
		if (!room) {
			if (!keep_body) /* only the head matters: drop the middle */
				c->rlen = 0;
			else
				return -1;
			room = RBUF - 1;
		}
		ssize_t n = read(c->fd, c->rbuf + c->rlen, room);
		if (n > 0) {
			c->rlen += (size_t)n;
			continue;
		}
		if (n == 0 || errno != EAGAIN)
			gone = true;
		break;
	}
	size_t len = response_done(c, status, closes);
	if (!len)
		return gone ? -1 : 0;
	if (gone)
		*closes = true; /* the response arrived with (or before) the end */
	memmove(c->rbuf, c->rbuf + len, c->rlen - len);
	c->rlen -= len;
	return 1;
}

static int send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ------------------------------------------------------------ victim */

static void record(int ph, uint64_t ns)
{
	if (n_lat[ph] == cap_lat[ph]) {
		cap_lat[ph] = cap_lat[ph] ? 2 * cap_lat[ph] : 4096;
		lat[ph] = realloc(lat[ph], cap_lat[ph] * sizeof(uint64_t));
	}
	lat[ph][n_lat[ph]++] = ns;
}

static void *victim(void *arg)
{
	(void)arg;
	int ep = epoll_create1(0);
	struct conn *cs = calloc((size_t)victim_conns, sizeof(*cs));
	for (int i = 0; i < victim_conns; i++) {
		cs[i].fd = open_conn(victim_src);
		if (cs[i].fd < 0) {
			perror("victim connect");
			exit(1);
		}
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &cs[i] };
		epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
	}
	uint64_t period = (uint64_t)(1e9 / victim_rate), next = now_ns();
	uint64_t backlog[4096];
	int qh = 0, qn = 0, pi = 0;
	for (;;) {
		int ph = atomic_load(&cur_phase);
		if (ph >= n_phases)
			break;
		uint64_t t = now_ns();
		while (next <= t) { /* due requests join the queue */
			if (qn < 4096)
				backlog[(qh + qn++) % 4096] = next;
			next += period;
		}
		for (int i = 0; i < victim_conns && qn; i++) {
			struct conn *c = &cs[i];
			if (c->busy)
				continue;
			c->t0_ns = backlog[qh];
			qh = (qh + 1) % 4096;
			qn--;
			char req[4096];
			int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n",
					 paths[pi++ % n_paths], target_ip, target_port);
			if (send_all(c->fd, req, (size_t)n)) {
				perror("victim send");
				exit(1);
			}
			c->busy = true;
		}
		struct epoll_event evs[64];
		t = now_ns();
		int wait_ms = next > t ? (int)((next - t) / 1000000) : 0;
		int k = epoll_wait(ep, evs, 64, wait_ms);
		for (int i = 0; i < k; i++) {
			struct conn *c = evs[i].data.ptr;
			int st;
			bool closes;
			int r = pump(c, &st, &closes, false);
			if (r == 0)
				continue;
			ph = atomic_load(&cur_phase);
			if (r < 0 || closes) {
				fprintf(stderr, "victim: connection lost (status %d)\n", r < 0 ? 0 : st);
				exit(1);
			}
			c->busy = false;
			if (ph < 0 || ph >= n_phases)
				continue;
			if (st != 200)
				v_err[ph]++;
			else
				record(ph, now_ns() - c->t0_ns);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ flooder */

static void *flooder(void *arg)
{
	(void)arg;
	/* A flood comes from other machines: a nice value lets this one yield
	 * the shared CPU to the server under test. */
	if (flood_nice)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), flood_nice);
	int ep = epoll_create1(0);
	struct conn *cs = calloc((size_t)flood_conns, sizeof(*cs));
	for (int i = 0; i < flood_conns; i++)
		cs[i].fd = -1;
	static const char req[] = "GET /flood/x HTTP/1.1\r\nHost: flood\r\n\r\n";
	double budget = 0;
	uint64_t last = now_ns();
	for (;;) {
		int ph = atomic_load(&cur_phase);
		if (ph >= n_phases)
			break;
		bool on = ph >= 0 && phase_on[ph];
		uint64_t t = now_ns();
		budget += (double)(t - last) * flood_rate / 1e9;
		if (budget > flood_rate / 100)
			budget = flood_rate / 100; /* at most 10 ms worth at once */
		last = t;
		for (int i = 0; i < flood_conns && on; i++) {
			struct conn *c = &cs[i];
			if (c->fd < 0) {
				c->fd = open_conn(flood_src);
				if (c->fd < 0) {
					f_connerr[ph]++;
					continue;
				}
				f_conns[ph]++;
				c->rlen = 0;
				c->busy = false;
				c->connecting = true; /* until writable */
				struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
				epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
			}
			if (c->busy || c->connecting || budget < 1)
				continue;
			if (send_all(c->fd, req, sizeof(req) - 1)) {
				f_connerr[ph]++;
				close(c->fd);
				c->fd = -1;
				continue;
			}
			budget -= 1;
			c->busy = true;
			f_sent[ph]++;
		}
		struct epoll_event evs[256];
		int k = epoll_wait(ep, evs, 256, 1);
		for (int i = 0; i < k; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c->connecting) {
				int err = 0;
				socklen_t l = sizeof(err);
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
				if (err) {
					if (ph >= 0 && ph < n_phases)
						f_connerr[ph]++;
					close(c->fd);
					c->fd = -1;
					continue;
				}
				c->connecting = false;
				struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
				continue;
			}
			int st;
			bool closes;
			int r = pump(c, &st, &closes, false);
			if (r == 0)
				continue;
			if (r > 0 && ph >= 0 && ph < n_phases) {
				int cls = st / 100;
				f_status[ph][cls >= 1 && cls <= 5 ? cls : 0]++;
			}
			c->busy = false;
			if (r < 0 || closes) {
				if (r < 0 && ph >= 0 && ph < n_phases)
					f_connerr[ph]++;
				close(c->fd);
				c->fd = -1;
			}
		}
		if (!on) /* between flood phases: drop the connections */
			for (int i = 0; i < flood_conns; i++)
				if (cs[i].fd >= 0 && !cs[i].busy && !cs[i].connecting) {
					close(cs[i].fd);
					cs[i].fd = -1;
				}
	}
	return NULL;
}

/* ------------------------------------------------------------ main */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct_ms(int ph, double p)
{
	if (!n_lat[ph])
		return 0;
	size_t i = (size_t)(p * (double)(n_lat[ph] - 1) + 0.5);
	return (double)lat[ph][i] / 1e6;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench-flood --target IP:PORT --paths FILE [--victim-rate 500] "
		"[--victim-conns 4]\n  [--victim-source 127.0.0.1] [--flood-rate 10000] "
		"[--flood-conns 64] [--flood-source 127.0.0.2]\n  [--phase-secs 10] "
		"[--phases off,on,off]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *paths_file = NULL, *phases = "off,on,off";
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		if (!strcmp(argv[i], "--target")) {
			static char ip[64];
			const char *c = strrchr(v, ':');
			if (!c || (size_t)(c - v) >= sizeof(ip))
				usage();
			memcpy(ip, v, (size_t)(c - v));
			target_ip = ip;
			target_port = atoi(c + 1);
		} else if (!strcmp(argv[i], "--paths")) {
			paths_file = v;
		} else if (!strcmp(argv[i], "--victim-rate")) {
			victim_rate = atof(v);
		} else if (!strcmp(argv[i], "--victim-conns")) {
			victim_conns = atoi(v);
		} else if (!strcmp(argv[i], "--victim-source")) {
			victim_src = v;
		} else if (!strcmp(argv[i], "--flood-rate")) {
			flood_rate = atof(v);
		} else if (!strcmp(argv[i], "--flood-conns")) {
			flood_conns = atoi(v);
		} else if (!strcmp(argv[i], "--flood-source")) {
			flood_src = v;
		} else if (!strcmp(argv[i], "--phase-secs")) {
			phase_secs = atoi(v);
		} else if (!strcmp(argv[i], "--flood-nice")) {
			flood_nice = atoi(v);
		} else if (!strcmp(argv[i], "--pid")) {
			server_pid = atoi(v);
		} else if (!strcmp(argv[i], "--phases")) {
			phases = v;
		} else {
			usage();
		}
		i++;
	}
	if (!paths_file || !target_port || victim_rate <= 0 || victim_conns < 1 ||
	    victim_conns > MAX_CONNS || flood_conns < 1 || flood_conns > MAX_CONNS || phase_secs < 1)
		usage();
	for (const char *p = phases; *p && n_phases < MAX_PHASES;) {
		phase_on[n_phases++] = !strncmp(p, "on", 2);
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	FILE *f = fopen(paths_file, "r");
	if (!f) {
		perror(paths_file);
		return 1;
	}
	char line[4096];
	while (n_paths < 65536 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (*line)
			paths[n_paths++] = strdup(line);
	}
	fclose(f);
	if (!n_paths) {
		fprintf(stderr, "%s: no paths\n", paths_file);
		return 1;
	}
	pthread_t tv, tf;
	pthread_create(&tv, NULL, victim, NULL);
	pthread_create(&tf, NULL, flooder, NULL);
	usleep(500000); /* connections up, victim warm */
	for (int ph = 0; ph < n_phases; ph++) {
		double a0 = 0, g0 = 0, a1, g1, s0 = self_cpu_s();
		if (server_pid)
			cpu_now(&a0, &g0);
		atomic_store(&cur_phase, ph);
		sleep((unsigned)phase_secs);
		cpu_self[ph] = (self_cpu_s() - s0) / phase_secs * 100;
		if (server_pid) {
			cpu_now(&a1, &g1);
			cpu_all[ph] = (a1 - a0) / phase_secs * 100;
			cpu_gw[ph] = (g1 - g0) / phase_secs * 100;
		}
	}
	atomic_store(&cur_phase, n_phases);
	pthread_join(tv, NULL);
	pthread_join(tf, NULL);

	printf("| phase | flood | victim GETs | victim errors | p50 ms | p99 ms | max ms | flood "
	       "sent/s | flood 503/s | flood other answered/s | flood conns/s | flood conn errors "
	       "| server CPU %% | gw thread CPU %% | bench-flood CPU %% |\n");
	printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int ph = 0; ph < n_phases; ph++) {
		qsort(lat[ph], n_lat[ph], sizeof(uint64_t), cmp_u64);
		double s = phase_secs;
		uint64_t other = f_status[ph][0] + f_status[ph][1] + f_status[ph][2] +
				 f_status[ph][3] + f_status[ph][4];
		printf("| %d | %s | %zu | %llu | %.3f | %.3f | %.3f | %.0f | %.0f | %.0f | %.0f | %llu "
		       "| %.0f | %.0f | %.0f |\n",
		       ph + 1, phase_on[ph] ? "on" : "off", n_lat[ph], (unsigned long long)v_err[ph],
		       pct_ms(ph, 0.50), pct_ms(ph, 0.99),
		       n_lat[ph] ? (double)lat[ph][n_lat[ph] - 1] / 1e6 : 0.0,
		       (double)f_sent[ph] / s, (double)f_status[ph][5] / s, (double)other / s,
		       (double)f_conns[ph] / s, (unsigned long long)f_connerr[ph], cpu_all[ph],
		       cpu_gw[ph], cpu_self[ph]);
	}
	/* Issue 16 must-show 3 in one line: the victim's p99 over every
	 * flooded phase against its p99 over every unflooded one. */
	double p99[2] = { 0, 0 };
	size_t n[2] = { 0, 0 };
	for (int on = 0; on < 2; on++) {
		for (int ph = 0; ph < n_phases; ph++)
			if (phase_on[ph] == on)
				n[on] += n_lat[ph];
		uint64_t *all = n[on] ? malloc(n[on] * sizeof(*all)) : NULL;
		if (!all)
			continue;
		size_t k = 0;
		for (int ph = 0; ph < n_phases; ph++)
			if (phase_on[ph] == on) {
				memcpy(all + k, lat[ph], n_lat[ph] * sizeof(*all));
				k += n_lat[ph];
			}
		qsort(all, n[on], sizeof(*all), cmp_u64);
		p99[on] = (double)all[(size_t)(0.99 * (double)(n[on] - 1) + 0.5)] / 1e6;
		free(all);
	}
	if (n[0] && n[1])
		printf("\nvictim p99 over all phases: unflooded %.3f ms (%zu GETs), flooded %.3f ms "
		       "(%zu GETs): %.2fx\n",
		       p99[0], n[0], p99[1], n[1], p99[0] > 0 ? p99[1] / p99[0] : 0.0);
	int bad = 0;
	for (int ph = 0; ph < n_phases; ph++)
		bad |= v_err[ph] != 0;
	return bad;
}
