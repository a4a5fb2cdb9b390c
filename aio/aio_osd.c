/*
 * aio_osd.c — one OSD of iolake-aio (aio_osd.h): its start on its loop
 * thread and its shutdown chain (meta link, recovery driver, sweep,
 * drain, store, service), each step in the previous one's callback.
 *
 * Owns the OSD's services of a struct osd_slot. Not aio's flags (main.c
 * fills struct aio_osd_opts).
 *
 * Thread: the slot's loop thread; aio_osd_stop waits on the main thread.
 */
#include "aio/aio_osd.h"

#include <stdio.h>
#include <uv.h>

#include "common/err.h"
#include "common/log.h"
#include "common/rpc.h"
#include "osd/metaclient.h"
#include "osd/recover.h"
#include "osd/service.h"
#include "osd/store/store.h"
#include "osd/sweep.h"

/* A close chain's state: the caller waits on sem until the last step. */
struct sync_call {
	uv_sem_t sem;
	void *arg;
};

static void sync_done(void *ud)
{
	uv_sem_post(&((struct sync_call *)ud)->sem);
}


/* On the OSD's loop; the main loop reads the flag. */
static void on_osd_registered(void *arg, uint32_t osd_id)
{
	(void)osd_id;
	struct osd_slot *o = arg;
	atomic_store(&o->registered, true);
}

void aio_osd_start_fn(void *arg)
{
	struct osd_slot *o = arg;
	/* Each OSD scrubs at --scrub-rate: they share one host's disks, so
	 * the host sees up to --osds times that. */
	struct osd_service_opts so = { .osd_id = o->id, .metrics = o->opt->reg,
				       .scrub_rate_bytes = o->opt->scrub_rate,
				       .scrub_interval_ms = o->opt->scrub_interval_ms,
				       .slow_log = true, .slow_op_ms = (uint32_t)o->opt->slow_op_ms };
	o->rc = osd_service_new(&o->lt.loop, &so, &o->svc);
	if (o->rc) {
		snprintf(o->err, sizeof(o->err), "service: %s", iol_strerror(o->rc));
		return;
	}
	char dev[4200], meta[4200];
	snprintf(dev, sizeof(dev), "%s/dev", o->dir);
	snprintf(meta, sizeof(meta), "%s/meta", o->dir);
	struct store_opts sto = { .device_path = dev, .create_size = o->opt->osd_size,
				  .create_sparse = true, .meta_dir = meta,
				  .osd_id = o->id, .observer = osd_service_observer(o->svc),
				  .cache = o->opt->cache,
				  .write_buffer_bytes = o->opt->write_buffer_bytes };
	o->rc = store_open(&o->lt.loop, &sto, &o->st, o->err, sizeof(o->err));
	if (o->rc)
		return;
	osd_service_attach(o->svc, o->st);
	struct store_space sp;
	store_space(o->st, &sp);
	o->capacity = sp.total_bytes;
	o->rpc = rpc_server_new(&o->lt.loop, NULL);
	o->rc = o->rpc ? osd_service_register(o->svc, o->rpc) : -ENOMEM;
	char local[32];
	snprintf(local, sizeof(local), "local:osd-%u", o->id);
	if (!o->rc)
		o->rc = rpc_server_listen(o->rpc, local);
	if (!o->rc && o->opt->loopback) {
		o->rc = rpc_server_listen(o->rpc, "127.0.0.1:0");
		snprintf(o->addr, sizeof(o->addr), "127.0.0.1:%d", rpc_server_port(o->rpc));
	} else {
		snprintf(o->addr, sizeof(o->addr), "%s", local);
	}
	if (o->rc) {
		snprintf(o->err, sizeof(o->err), "rpc listen: %s", iol_strerror(o->rc));
		return;
	}
	char host[16];
	snprintf(host, sizeof(host), "aio-%u", o->id);
	const char *mmembers[1] = { o->opt->meta_target };
	struct osd_metaclient_opts mo = { .addrs = mmembers, .naddrs = 1, .osd_id = o->id,
					  .listen_addr = o->addr, .host = host,
					  .capacity_bytes = o->capacity, .heartbeat_ms = o->opt->beat_ms,
					  .backoff_min_ms = o->opt->retry_ms, .on_registered = on_osd_registered,
					  .arg = o };
	o->rc = osd_metaclient_start(&o->lt.loop, &mo, &o->mc);
	if (o->rc) {
		snprintf(o->err, sizeof(o->err), "meta client: %s", iol_strerror(o->rc));
		return;
	}
	if (o->opt->orphan_interval_ms) {
		const char *members[1] = { o->opt->meta_target };
		struct osd_sweep_opts wo = { .osd_id = o->id, .meta = members, .n_meta = 1,
					     .grace_ms = o->opt->orphan_grace_ms,
					     .interval_ms = o->opt->orphan_interval_ms, .metrics = o->opt->reg };
		o->rc = osd_sweep_start(&o->lt.loop, o->st, &wo, &o->sweep);
		if (o->rc) {
			snprintf(o->err, sizeof(o->err), "orphan sweep: %s", iol_strerror(o->rc));
			return;
		}
		osd_service_set_sweep(o->svc, o->sweep);
	}
	const char *members[1] = { o->opt->meta_target };
	struct osd_recover_opts ro = { .osd_id = o->id, .meta = members, .n_meta = 1,
				       .rate_bytes = o->opt->recovery_rate,
				       .max_pgs = (uint32_t)o->opt->recovery_max_pgs,
				       .report_ms = (uint32_t)o->opt->pg_report_ms,
				       .rescan_ms = o->opt->recovery_rescan_ms,
				       .deep_scrub_ms = o->opt->deep_scrub_ms, .metrics = o->opt->reg };
	int rc = osd_recover_start(&o->lt.loop, &ro, &o->rec);
	if (rc) {
		LOG_ERROR("recovery driver did not start; serving without it", "osd=%u err=%s",
			  o->id, LOG_Q(iol_strerror(rc)));
		o->rec = NULL;
		return;
	}
	struct osd_service_hooks h;
	osd_recover_hooks(o->rec, &h);
	osd_service_set_hooks(o->svc, &h);
}

static void osd_store_closed(void *arg)
{
	struct sync_call *sc = arg;
	struct osd_slot *o = sc->arg;
	osd_service_free(o->svc);
	o->svc = NULL;
	sync_done(sc);
}

static void osd_drained(void *arg)
{
	struct sync_call *sc = arg;
	struct osd_slot *o = sc->arg;
	if (o->rpc)
		rpc_server_close(o->rpc);
	o->rpc = NULL;
	store_close(o->st, osd_store_closed, sc);
}

static void osd_close_fn(void *arg);

static void osd_sweep_stopped(void *arg)
{
	struct sync_call *sc = arg;
	struct osd_slot *o = sc->arg;
	osd_service_drain(o->svc, osd_drained, sc);
}

static void osd_rec_stopped(void *arg)
{
	struct sync_call *sc = arg;
	struct osd_slot *o = sc->arg;
	o->rec = NULL;
	osd_close_fn(sc);    /* on to the sweep, then the service */
}

static void osd_mc_stopped(void *arg)
{
	struct sync_call *sc = arg;
	osd_close_fn(sc);    /* on to the recovery driver, the sweep, the service */
}

static void osd_close_fn(void *arg)
{
	struct sync_call *sc = arg;
	struct osd_slot *o = sc->arg;
	if (o->mc) {
		/* Stop beating first: meta marks the OSD down after it stops. */
		struct osd_metaclient *mc = o->mc;
		o->mc = NULL;
		osd_metaclient_stop(mc, osd_mc_stopped, sc);
		return;
	}
	if (o->rec) {
		/* The driver first (its calls cancelled), then the service. */
		osd_service_set_hooks(o->svc, NULL);
		osd_recover_stop(o->rec, osd_rec_stopped, sc);
		return;
	}
	if (!o->svc) {
		sync_done(sc);
		return;
	}
	if (!o->st) {
		osd_service_free(o->svc);
		o->svc = NULL;
		sync_done(sc);
		return;
	}
	if (o->sweep) {
		/* Its store deletes land before the store closes. */
		osd_service_set_sweep(o->svc, NULL);
		osd_sweep_stop(o->sweep, osd_sweep_stopped, sc);
		o->sweep = NULL;
		return;
	}
	osd_service_drain(o->svc, osd_drained, sc);
}

void aio_osd_stop(struct osd_slot *o)
{
	if (o->lt.running) {
		struct sync_call sc;
		uv_sem_init(&sc.sem, 0);
		sc.arg = o;
		if (loop_thread_call(&o->lt, osd_close_fn, &sc) == 0)
			uv_sem_wait(&sc.sem);
		uv_sem_destroy(&sc.sem);
	}
	loop_thread_stop(&o->lt);
}
