/*
 * md5_svc.c — the multi-buffer MD5 service. See md5_svc.h.
 *
 * One mutex guards the ready list (streams with chunks queued and no
 * lane), every stream's chunk queue and the counters; idle threads sleep
 * on one condition variable. A thread owns up to md5_mb_lanes() streams
 * (its lanes) and loops: take ready streams into free lanes, then, with
 * the lock released, one pass of md5_mb_update_n giving each lane up to
 * PASS_BYTES of its head chunk; then, under the lock, pop the chunks a
 * pass finished and free the lanes of streams with nothing more queued;
 * then call the finished chunks' done callbacks, unlocked. A pass is
 * short (16 lanes x 32 KiB: ~0.2 ms) so a stream that becomes ready waits
 * at most that long for a busy thread's free lane.
 *
 * Only the thread that holds a stream in a lane reads its head chunk and
 * writes its context; the head is popped only by that thread, so reading
 * it outside the lock is safe (submit changes only the tail, or the head
 * of an empty queue, which no lane holds).
 *
 * A second thread is woken only when no thread is hashing or gathering,
 * or when more streams are ready than one thread has lanes: lanes fill
 * best when one thread holds every busy stream. A gathering thread (fewer
 * than GATHER_LANES streams in lanes, none with an urgent chunk, its
 * oldest chunk younger than MD5_SVC_GATHER_US) waits on its own condition
 * variable, which a newly ready stream or an urgent chunk signals.
 */
#include "common/md5_svc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/metrics.h"

#define PASS_BYTES (32u << 10)
#define GATHER_LANES 8u   /* the AVX2 kernel's width: fuller is not cheaper per lane */

struct md5_svc {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_cond_t gcv;   /* gathering threads */
	struct md5_svc_stream *ready_head, *ready_tail;
	unsigned nready;
	unsigned hashing;     /* threads with a lane busy */
	unsigned idle;        /* threads waiting on cv */
	unsigned gathering;   /* threads waiting on gcv */
	unsigned lanes, nthreads;
	struct md5_svc_stats st;
	pthread_t threads[];
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct md5_svc *g_svc;
static bool g_tried;

static struct md5_svc_stream *ready_pop(struct md5_svc *s)
{
	struct md5_svc_stream *st = s->ready_head;
	if (st) {
		s->ready_head = st->next_ready;
		if (!s->ready_head)
			s->ready_tail = NULL;
		st->next_ready = NULL;
		st->ready = false;
		s->nready--;
	}
	return st;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Under mu: the deadline to wait for more lanes, or 0 to hash now (enough
 * lanes, an urgent chunk queued in one, or the oldest waited enough). */
static uint64_t gather_until(const struct md5_svc *s, struct md5_svc_stream *const *lane,
			     unsigned nl)
{
	if (nl >= GATHER_LANES || nl >= s->lanes)
		return 0;
	uint64_t oldest = UINT64_MAX;
	for (unsigned i = 0; i < nl; i++)
		for (const struct md5_svc_chunk *c = lane[i]->head; c; c = c->next) {
			if (c->urgent)
				return 0;
			if (c->t_ns < oldest)
				oldest = c->t_ns;
		}
	uint64_t until = oldest + MD5_SVC_GATHER_US * 1000ull;
	return until > now_ns() ? until : 0;
}

static void *hasher(void *arg)
{
	struct md5_svc *s = arg;
	struct md5_svc_stream *lane[MD5_MB_MAX_LANES];
	size_t off[MD5_MB_MAX_LANES];   /* bytes of the head chunk hashed */
	unsigned nl = 0;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (nl < s->lanes && s->ready_head) {
			struct md5_svc_stream *st = ready_pop(s);
			st->in_lane = true;
			lane[nl] = st;
			off[nl] = 0;
			nl++;
		}
		if (!nl) {
			s->idle++;
			pthread_cond_wait(&s->cv, &s->mu);
			s->idle--;
			continue;
		}
		if (s->ready_head && s->idle)
			pthread_cond_signal(&s->cv);   /* more than our lanes */
		uint64_t until = gather_until(s, lane, nl);
		if (until) {
			struct timespec ts = { (time_t)(until / 1000000000u),
					       (long)(until % 1000000000u) };
			s->gathering++;
			pthread_cond_timedwait(&s->gcv, &s->mu, &ts);
			s->gathering--;
			continue;   /* refill, then decide again */
		}
		if (nl > s->st.streams_max)
			s->st.streams_max = nl;
		s->hashing++;
		pthread_mutex_unlock(&s->mu);

		struct md5_mb_ctx *x[MD5_MB_MAX_LANES];
		const uint8_t *d[MD5_MB_MAX_LANES];
		size_t l[MD5_MB_MAX_LANES], sum = 0, span = 0;
		for (unsigned i = 0; i < nl; i++) {
			struct md5_svc_chunk *c = lane[i]->head;
			x[i] = &lane[i]->ctx;
			d[i] = c->data + off[i];
			l[i] = c->len - off[i];
			if (l[i] > PASS_BYTES)
				l[i] = PASS_BYTES;
			sum += l[i];
			if (l[i] > span)
				span = l[i];
		}
		md5_mb_update_n(x, d, l, nl);

		struct md5_svc_chunk *fin = NULL, **fin_tail = &fin;
		pthread_mutex_lock(&s->mu);
		s->hashing--;
		s->st.passes++;
		s->st.lane_bytes += sum;
		s->st.span_bytes += span;
		unsigned keep = 0;
		for (unsigned i = 0; i < nl; i++) {
			struct md5_svc_stream *st = lane[i];
			off[i] += l[i];
			struct md5_svc_chunk *c = st->head;
			if (off[i] == c->len) {
				st->head = c->next;
				if (!st->head)
					st->tail = NULL;
				c->next = NULL;
				*fin_tail = c;
				fin_tail = &c->next;
				s->st.chunks++;
				s->st.bytes += c->len;
				off[i] = 0;
				if (!st->head) {
					st->in_lane = false;   /* the owner's again after done */
					continue;
				}
			}
			lane[keep] = st;
			off[keep] = off[i];
			keep++;
		}
		nl = keep;
		if (fin) {
			pthread_mutex_unlock(&s->mu);
			/* In stream order: a stream's chunks finish one per
			 * pass, and passes are in order. */
			while (fin) {
				struct md5_svc_chunk *c = fin;
				fin = c->next;
				c->next = NULL;
				c->done(c);
			}
			pthread_mutex_lock(&s->mu);
		}
	}
	return NULL;
}

struct md5_svc *md5_svc_get(unsigned nthreads)
{
	pthread_mutex_lock(&g_mu);
	if (g_svc || g_tried) {
		struct md5_svc *s = g_svc;
		pthread_mutex_unlock(&g_mu);
		return s;
	}
	g_tried = true;
	unsigned lanes = md5_mb_lanes();
	if (lanes < 8) {
		pthread_mutex_unlock(&g_mu);
		return NULL;
	}
	if (!nthreads)
		nthreads = 1;
	if (nthreads > 16)
		nthreads = 16;
	struct md5_svc *s = calloc(1, sizeof(*s) + nthreads * sizeof(pthread_t));
	if (!s)
		goto fail;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* gather deadlines */
	pthread_cond_init(&s->gcv, &ca);
	pthread_condattr_destroy(&ca);
	s->lanes = lanes;
	for (unsigned i = 0; i < nthreads; i++) {
		int rc = pthread_create(&s->threads[i], NULL, hasher, s);
		if (rc) {
			LOG_WARN("md5 service threads not all started", "threads=%u started=%u err=%d",
				 nthreads, i, rc);
			break;
		}
		pthread_setname_np(s->threads[i], "iolake-md5");
		s->nthreads++;
	}
	if (!s->nthreads) {
		/* Nothing started: nobody references s; MD5 stays on OpenSSL. */
		pthread_cond_destroy(&s->cv);
		pthread_cond_destroy(&s->gcv);
		pthread_mutex_destroy(&s->mu);
		free(s);
		goto fail;
	}
	s->st.threads = s->nthreads;
	s->st.lanes = lanes;
	g_svc = s;
	pthread_mutex_unlock(&g_mu);
	return s;
fail:
	pthread_mutex_unlock(&g_mu);
	return NULL;
}

void md5_svc_stream_init(struct md5_svc_stream *st)
{
	memset(st, 0, sizeof(*st));
	md5_mb_init(&st->ctx);
}

void md5_svc_submit(struct md5_svc *s, struct md5_svc_stream *st, struct md5_svc_chunk *c)
{
	c->next = NULL;
	c->t_ns = now_ns();
	pthread_mutex_lock(&s->mu);
	if (st->tail)
		st->tail->next = c;
	else
		st->head = c;
	st->tail = c;
	if (!st->in_lane && !st->ready) {
		st->ready = true;
		st->next_ready = NULL;
		if (s->ready_tail)
			s->ready_tail->next_ready = st;
		else
			s->ready_head = st;
		s->ready_tail = st;
		s->nready++;
		if (s->gathering && s->nready <= s->lanes)
			pthread_cond_broadcast(&s->gcv);   /* a lane for a gathering thread */
		else if (s->idle && (!s->hashing || s->nready > s->lanes))
			pthread_cond_signal(&s->cv);
	} else if (c->urgent && st->in_lane && s->gathering) {
		pthread_cond_broadcast(&s->gcv);   /* its thread may be gathering */
	}
	pthread_mutex_unlock(&s->mu);
}

void md5_svc_stats(struct md5_svc *s, struct md5_svc_stats *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->st;
	pthread_mutex_unlock(&s->mu);
}

/* The running service's counters (zeros before it starts), for gauges. */
static struct md5_svc_stats peek(void)
{
	struct md5_svc_stats st = { 0 };
	pthread_mutex_lock(&g_mu);
	struct md5_svc *s = g_svc;
	pthread_mutex_unlock(&g_mu);
	if (s)
		md5_svc_stats(s, &st);
	return st;
}

static double g_lanes(void *arg)
{
	(void)arg;
	return peek().lanes;
}

static double g_bytes(void *arg)
{
	(void)arg;
	return (double)peek().bytes;
}

static double g_chunks(void *arg)
{
	(void)arg;
	return (double)peek().chunks;
}

static double g_passes(void *arg)
{
	(void)arg;
	return (double)peek().passes;
}

static double g_lane_bytes(void *arg)
{
	(void)arg;
	return (double)peek().lane_bytes;
}

static double g_span_bytes(void *arg)
{
	(void)arg;
	return (double)peek().span_bytes;
}

static double g_busy_avg(void *arg)
{
	(void)arg;
	struct md5_svc_stats st = peek();
	return st.span_bytes ? (double)st.lane_bytes / (double)st.span_bytes : 0;
}

void md5_svc_register_metrics(struct metrics_registry *reg)
{
	static const struct {
		const char *name, *help;
		metrics_gauge_fn fn;
	} g[] = {
		{ "iolake_md5_mb_lanes", "MD5 lanes per hashing thread (16 AVX-512, 8 AVX2; 0: not running)", g_lanes },
		{ "iolake_md5_mb_bytes", "bytes hashed by the multi-buffer MD5 service", g_bytes },
		{ "iolake_md5_mb_chunks", "chunks hashed by the multi-buffer MD5 service", g_chunks },
		{ "iolake_md5_mb_passes", "lane passes (kernel calls) of the MD5 service", g_passes },
		{ "iolake_md5_mb_lane_bytes", "sum over passes of every busy lane's bytes", g_lane_bytes },
		{ "iolake_md5_mb_span_bytes", "sum over passes of the longest lane's bytes", g_span_bytes },
		{ "iolake_md5_mb_lanes_busy_avg", "MD5 lanes busy on average since start (lane_bytes / span_bytes)", g_busy_avg },
	};
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		metrics_gauge_fn_new(reg, g[i].name, g[i].help, NULL, g[i].fn, NULL);
}
