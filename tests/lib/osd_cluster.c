/*
 * osd_cluster.c — see osd_cluster.h. Node setup mirrors the iolake-osd
 * binary's order: service, store (with the service's observer), attach,
 * server, register, listen; shutdown drains the service, closes the
 * server, then the store, then frees the service.
 */
#include "tests/lib/osd_cluster.h"

#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/metrics.h"
#include "common/rpc.h"
#include "osd/service.h"

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void node_start(void *arg)
{
	struct osd_node *s = arg;
	struct osd_service_opts so = { .osd_id = s->id, .metrics = s->reg };
	so.cluster_id[0] = 0xcd;
	s->rc = osd_service_new(&s->lt.loop, &so, &s->svc);
	if (s->rc)
		return;
	struct store_opts o = { .device_path = s->dev, .meta_dir = s->meta,
				.create_size = s->dev_size, .osd_id = s->id,
				.observer = osd_service_observer(s->svc) };
	o.cluster_id[0] = 0xcd;
	s->rc = store_open(&s->lt.loop, &o, &s->st, s->err, sizeof(s->err));
	if (s->rc)
		return;
	osd_service_attach(s->svc, s->st);
	s->rpc = rpc_server_new(&s->lt.loop, NULL);
	if (!s->rpc) {
		s->rc = -12;
		return;
	}
	s->rc = osd_service_register(s->svc, s->rpc);
	if (!s->rc)
		s->rc = rpc_server_listen(s->rpc, "127.0.0.1:0");
	char a[80];
	snprintf(a, sizeof(a), "local:%s", s->local);
	if (!s->rc)
		s->rc = rpc_server_listen(s->rpc, a);
	s->port = rpc_server_port(s->rpc);
}

static void on_store_closed(void *arg)
{
	struct osd_node *s = arg;
	osd_service_free(s->svc);
	s->svc = NULL;
	atomic_store(&s->closed, 1);
}

static void on_drained(void *arg)
{
	struct osd_node *s = arg;
	rpc_server_close(s->rpc);
	store_close(s->st, on_store_closed, s);
}

static void node_drain(void *arg)
{
	struct osd_node *s = arg;
	if (s->draining)
		return;
	s->draining = true;
	osd_service_drain(s->svc, on_drained, s);
}

/* Clusters alive in this process, for the exit hook: a test that fails an
 * assertion exits without its teardown, and /dev/shm is memory. */
static struct osd_cluster *live[4];

static void remove_files(struct osd_cluster *c)
{
	for (unsigned i = 0; i < c->n; i++) {
		unlink(c->node[i].dev);
		nftw(c->node[i].meta, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
}

static void at_exit(void)
{
	for (unsigned j = 0; j < 4; j++)
		if (live[j])
			remove_files(live[j]);
}

static void track(struct osd_cluster *c, struct osd_cluster *with)
{
	static bool hooked;
	if (!hooked) {
		atexit(at_exit);
		hooked = true;
	}
	for (unsigned j = 0; j < 4; j++)
		if (live[j] == c) {
			live[j] = with;
			return;
		}
	for (unsigned j = 0; j < 4 && with; j++)
		if (!live[j]) {
			live[j] = with;
			return;
		}
}

#define RUNNER_ENV "IOLAKE_TEST_RUNNER_PID"

/* The pid files are named by: the runner's when it said so. */
static int owner_pid(void)
{
	const char *e = getenv(RUNNER_ENV);
	return e && *e ? atoi(e) : (int)getpid();
}

void osd_cluster_runner_begin(void)
{
	char v[16];
	snprintf(v, sizeof(v), "%d", (int)getpid());
	setenv(RUNNER_ENV, v, 1);
}

void osd_cluster_runner_end(void)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "/dev/shm/iolake-*-%d-osd*", (int)getpid());
	glob_t g;
	if (glob(pat, 0, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc; i++)
			nftw(g.gl_pathv[i], rm_one, 16, FTW_DEPTH | FTW_PHYS);
	globfree(&g);
}

int osd_cluster_start(struct osd_cluster *c, unsigned n, const char *tag, uint64_t dev_size)
{
	memset(c, 0, sizeof(*c));
	track(c, c);
	if (n > OSD_CLUSTER_MAX)
		return -22;
	c->n = n;
	for (unsigned i = 0; i < n; i++) {
		struct osd_node *s = &c->node[i];
		s->id = i;
		s->dev_size = dev_size;
		snprintf(s->dev, sizeof(s->dev), "/dev/shm/iolake-%s-%d-osd%u.dev", tag,
			 owner_pid(), i);
		snprintf(s->meta, sizeof(s->meta), "/dev/shm/iolake-%s-%d-osd%u.meta", tag,
			 owner_pid(), i);
		snprintf(s->local, sizeof(s->local), "%s-%d-osd%u", tag, (int)getpid(), i);
		unlink(s->dev);
		nftw(s->meta, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		s->reg = metrics_registry_new();
		char name[16];
		snprintf(name, sizeof(name), "osd%u", i);
		int rc = loop_thread_start(&s->lt, name);
		if (rc)
			return rc;
		s->started = true;
		rc = loop_thread_call(&s->lt, node_start, s);
		if (rc || s->rc) {
			fprintf(stderr, "osd %u: start: %d %s\n", i, rc ? rc : s->rc, s->err);
			return rc ? rc : s->rc;
		}
	}
	return 0;
}

void osd_cluster_target(const struct osd_cluster *c, unsigned i, bool local, char *out,
			size_t cap)
{
	if (local)
		snprintf(out, cap, "local:%s", c->node[i].local);
	else
		snprintf(out, cap, "127.0.0.1:%d", c->node[i].port);
}

void osd_cluster_stop_node(struct osd_cluster *c, unsigned i)
{
	struct osd_node *s = &c->node[i];
	if (!s->started || !s->st)
		return;
	if (!atomic_load(&s->closed))
		loop_thread_call(&s->lt, node_drain, s);
	while (!atomic_load(&s->closed))
		usleep(1000);
}

struct stat_arg {
	struct osd_node *s;
	const struct store_key *k;
	struct store_stat *out;
	int rc;
};

static void do_stat(void *arg)
{
	struct stat_arg *a = arg;
	a->rc = store_stat(a->s->st, a->k, a->out);
}

int osd_cluster_stat(struct osd_cluster *c, unsigned i, const struct store_key *k,
		     struct store_stat *out)
{
	struct stat_arg a = { &c->node[i], k, out, 0 };
	int rc = loop_thread_call(&c->node[i].lt, do_stat, &a);
	return rc ? rc : a.rc;
}

void osd_cluster_destroy(struct osd_cluster *c)
{
	for (unsigned i = 0; i < c->n; i++) {
		struct osd_node *s = &c->node[i];
		if (s->started && s->st)
			osd_cluster_stop_node(c, i);
		if (s->started)
			loop_thread_stop(&s->lt);
		if (s->reg)
			metrics_registry_free(s->reg);
	}
	remove_files(c);
	track(c, NULL);
	memset(c, 0, sizeof(*c));
}
