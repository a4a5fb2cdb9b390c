/*
 * user_limit.c — token buckets of requests and bytes per user (contracts
 * in user_limit.h).
 */
#include "gateway/user_limit.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ent {
	char name[USER_LIMIT_NAME_MAX];
	bool used;
	uint64_t seen_ns;
	double req_tokens;
	double byte_tokens;      /* may be negative: debt */
	uint64_t at_ns;          /* when the tokens were last refilled */
};

struct user_limit {
	struct user_limit_cfg cfg;
	uint64_t seed;
	struct ent *tab;
	struct user_limit_stats st;
};

static uint64_t hash(const struct user_limit *l, const char *s)
{
	uint64_t h = l->seed ^ 0xcbf29ce484222325ull;
	for (size_t i = 0; s[i] && i < USER_LIMIT_NAME_MAX - 1; i++) {
		h ^= (uint8_t)s[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

struct user_limit *user_limit_new(const struct user_limit_cfg *cfg, uint64_t seed)
{
	if (!cfg->rate && !cfg->bytes_rate)
		return NULL;
	struct user_limit *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->tab = calloc(USER_LIMIT_SLOTS, sizeof(*l->tab));
	if (!l->tab) {
		free(l);
		return NULL;
	}
	l->cfg = *cfg;
	if (!l->cfg.burst)
		l->cfg.burst = 2 * cfg->rate;
	if (!l->cfg.bytes_burst)
		l->cfg.bytes_burst = 2 * cfg->bytes_rate;
	if (!seed) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec;
	}
	l->seed = seed;
	return l;
}

void user_limit_free(struct user_limit *l)
{
	if (!l)
		return;
	free(l->tab);
	free(l);
}

/* user's entry, made (full buckets) or refilled to now. */
static struct ent *find(struct user_limit *l, const char *user, uint64_t now_ns)
{
	uint64_t h = hash(l, user);
	struct ent *victim = NULL;
	for (unsigned i = 0; i < USER_LIMIT_PROBE; i++) {
		struct ent *e = &l->tab[(h + i) & (USER_LIMIT_SLOTS - 1)];
		if (e->used && strncmp(e->name, user, USER_LIMIT_NAME_MAX - 1) == 0) {
			double dt = (double)(now_ns - e->at_ns) / 1e9;
			e->at_ns = now_ns;
			e->seen_ns = now_ns;
			e->req_tokens += dt * l->cfg.rate;
			if (e->req_tokens > l->cfg.burst)
				e->req_tokens = l->cfg.burst;
			e->byte_tokens += dt * (double)l->cfg.bytes_rate;
			if (e->byte_tokens > (double)l->cfg.bytes_burst)
				e->byte_tokens = (double)l->cfg.bytes_burst;
			return e;
		}
		if (!victim || !e->used || (victim->used && e->seen_ns < victim->seen_ns))
			victim = e;
	}
	if (victim->used)
		l->st.evictions++;
	memset(victim, 0, sizeof(*victim));
	strncpy(victim->name, user, USER_LIMIT_NAME_MAX - 1);
	victim->used = true;
	victim->seen_ns = victim->at_ns = now_ns;
	victim->req_tokens = l->cfg.burst;
	victim->byte_tokens = (double)l->cfg.bytes_burst;
	return victim;
}

bool user_limit_admit(struct user_limit *l, const char *user, uint64_t body_bytes,
		      uint64_t now_ns)
{
	struct ent *e = find(l, user, now_ns);
	if (l->cfg.rate && e->req_tokens < 1) {
		l->st.refused_rate++;
		return false;
	}
	if (l->cfg.bytes_rate && e->byte_tokens < 0) {
		l->st.refused_bytes++;
		return false;
	}
	if (l->cfg.rate)
		e->req_tokens -= 1;
	if (l->cfg.bytes_rate)
		e->byte_tokens -= (double)body_bytes;
	return true;
}

void user_limit_charge(struct user_limit *l, const char *user, uint64_t bytes, uint64_t now_ns)
{
	if (!l->cfg.bytes_rate || !bytes)
		return;
	find(l, user, now_ns)->byte_tokens -= (double)bytes;
}

void user_limit_stats(const struct user_limit *l, struct user_limit_stats *out)
{
	*out = l->st;
}
