/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_cache_fill.c - `cafs cache fill`: download every chunk the given
 * indexes need that the cache lacks, so extract and the mount then work
 * offline.
 *
 * A pool of workers calls ca_chunksrc_get on a chunk source whose cache is
 * the cache directory: the chunk source fetches, verifies and writes each
 * chunk atomically, so an interrupted fill loses at most the chunks in
 * flight and the next run skips what is there. Workers also announce the
 * chunks ahead of them (ca_chunksrc_prefetch), which lets a remote backend
 * keep many transfers in flight.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "chunksrc.h"
#include "cmd.h"
#include "digest.h"
#include "idset.h"
#include "index.h"
#include "log.h"
#include "progress.h"
#include "store.h"

#define FILL_THREADS_DEFAULT 8
#define PREFETCH_AHEAD 64
#define MAX_THREADS 64
#define MAX_REPORTED 20

enum { OPT_CACHE = 0x100, OPT_STORE, OPT_RATE };

struct want {
	uint8_t id[CA_CHUNK_ID_SIZE];
	uint64_t size;
};

/* one SOURCE: its index and the chunks to fetch for it */
struct source {
	const char *name;
	struct ca_index *idx;
	struct want *w;
	size_t n;
};

struct fill_job {
	struct ca_chunksrc *src;
	struct ca_store *cache; /* to check that what was fetched got stored */
	const struct source *s;
	struct cafs_progress *prog;
	uint64_t rate;          /* bytes per second, 0 = unlimited */
	uint64_t start_ns;

	pthread_mutex_t lock;
	size_t next, prefetched;
	uint64_t *done_bytes;   /* shared over all sources, for the bar */
	uint64_t *wire_bytes;   /* compressed bytes fetched in earlier sources */
	uint64_t fetched, failed;
	uint64_t *reported;     /* chunk errors logged, over all sources */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* sleep until the bytes fetched so far fit the rate */
static void throttle(struct fill_job *j)
{
	struct ca_chunksrc_stats st;
	ca_chunksrc_get_stats(j->src, &st);
	uint64_t bytes = *j->wire_bytes + st.fetched_bytes;
	uint64_t due = j->start_ns + (uint64_t)((double)bytes * 1e9 / (double)j->rate);
	uint64_t t = now_ns();
	if (due > t) {
		uint64_t d = due - t;
		struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
		nanosleep(&ts, NULL);
	}
}

/* One line per failed chunk, up to a point: a store that is gone entirely
 * would otherwise print one line per chunk of the image. */
static void report(struct fill_job *j, const uint8_t *id, int r, bool not_stored)
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	pthread_mutex_lock(&j->lock);
	bool quiet = (*j->reported)++ >= MAX_REPORTED;
	pthread_mutex_unlock(&j->lock);
	if (quiet)
		return;
	ca_id_to_hex(id, hex);
	if (r == -ENOENT)
		ca_log_error("chunk %s: not found in any store", hex);
	else if (not_stored)
		ca_log_error("chunk %s: cannot store it in %s", hex, ca_store_path(j->cache));
	else
		ca_log_error_errno(r, "chunk %s", hex);
}

static void *fill_worker(void *arg)
{
	struct fill_job *j = arg;
	for (;;) {
		pthread_mutex_lock(&j->lock);
		size_t i = j->next++;
		size_t from = j->prefetched, to = i + PREFETCH_AHEAD < j->s->n ? i + PREFETCH_AHEAD : j->s->n;
		if (to > from)
			j->prefetched = to;
		pthread_mutex_unlock(&j->lock);
		if (i >= j->s->n)
			break;
		for (size_t k = from; k < to; k++)
			ca_chunksrc_prefetch(j->src, j->s->w[k].id);

		const struct want *w = &j->s->w[i];
		const struct ca_chunk *c = NULL;
		bool not_stored = false;
		int r = ca_chunksrc_get(j->src, w->id, w->size, &c);
		ca_chunksrc_put(j->src, c);
		if (r == 0) {
			/* the chunk source only warns when the cache write fails */
			r = ca_store_has(j->cache, w->id);
			not_stored = r == 0;
			r = r > 0 ? 0 : r == 0 ? -EIO : r;
		}
		if (r < 0)
			report(j, w->id, r, not_stored);
		pthread_mutex_lock(&j->lock);
		if (r == 0) {
			j->fetched++;
			*j->done_bytes += w->size;
		} else {
			j->failed++;
		}
		uint64_t done = *j->done_bytes;
		pthread_mutex_unlock(&j->lock);
		cafs_progress_update(j->prog, done);
		if (j->rate)
			throttle(j);
	}
	return NULL;
}

/* the chunks of s->idx that are neither in the cache nor queued by an earlier source */
static int plan_source(struct source *s, struct ca_store *cache, struct ca_idset *queued, uint64_t *ret_present,
                       uint64_t *ret_present_bytes)
{
	size_t n = ca_index_n_chunks(s->idx);
	s->w = malloc((n ? n : 1) * sizeof(*s->w));
	if (!s->w)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t a, b;
		const uint8_t *id;
		ca_index_chunk(s->idx, i, &a, &b, &id);
		int r = ca_idset_add(queued, id, 0);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		r = ca_store_has(cache, id);
		if (r < 0)
			return r;
		if (r > 0) {
			/* a fill is a use: keep what it needs away from prune */
			(void)ca_store_touch(cache, id);
			(*ret_present)++;
			*ret_present_bytes += b - a;
			continue;
		}
		memcpy(s->w[s->n].id, id, CA_CHUNK_ID_SIZE);
		s->w[s->n].size = b - a;
		s->n++;
	}
	return 0;
}

static int fill_source(const struct source *s, char **stores, size_t n_stores, const char *dir, unsigned threads,
                       uint64_t rate, struct cafs_progress *prog, uint64_t *done_bytes, uint64_t *wire_bytes,
                       uint64_t *reported, uint64_t *ret_fetched, uint64_t *ret_failed)
{
	struct ca_chunksrc *src = NULL;
	struct ca_store *cache = NULL, *check = NULL;
	struct ca_image_opts io = { .stores = stores, .n_stores = n_stores };
	int r = ca_source_open_chunksrc(s->name, s->idx, &io, &src);
	if (r < 0)
		return r;
	r = ca_store_open(dir, &cache);
	if (r == 0)
		r = ca_store_open(dir, &check);
	if (r < 0) {
		ca_log_error_errno(r, "%s", dir);
		goto out;
	}
	ca_chunksrc_set_cache(src, cache, false);
	cache = NULL;

	struct fill_job j = {
		.src = src, .cache = check, .s = s, .prog = prog, .rate = rate, .start_ns = now_ns(),
		.done_bytes = done_bytes, .wire_bytes = wire_bytes, .reported = reported,
	};
	pthread_mutex_init(&j.lock, NULL);
	pthread_t tids[MAX_THREADS];
	unsigned started = 0;
	if (threads > s->n)
		threads = s->n ? (unsigned)s->n : 1;
	for (; started < threads; started++)
		if (pthread_create(&tids[started], NULL, fill_worker, &j) != 0)
			break;
	if (started == 0)
		fill_worker(&j);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	pthread_mutex_destroy(&j.lock);
	struct ca_chunksrc_stats st;
	ca_chunksrc_get_stats(src, &st);
	*wire_bytes += st.fetched_bytes;
	*ret_fetched += j.fetched;
	*ret_failed += j.failed;
	r = 0;
out:
	ca_store_free(cache);
	ca_store_free(check);
	ca_chunksrc_free(src);
	return r;
}

int cafs_cache_fill(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "store", required_argument, NULL, OPT_STORE },
		{ "rate-limit-bps", required_argument, NULL, OPT_RATE },
		{ "threads", required_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *cache_opt = NULL;
	char **stores = NULL, *dir = NULL;
	size_t n_stores = 0, n_sources = 0;
	struct source *sources = NULL;
	struct ca_idset *queued = NULL;
	struct ca_store *cache = NULL;
	unsigned threads = FILL_THREADS_DEFAULT;
	uint64_t rate = 0;
	int c, verbosity = 0, r = 1;

	while ((c = getopt_long(argc, argv, "s:j:vqh", opts, NULL)) >= 0) {
		switch (c) {
		case OPT_CACHE:
			cache_opt = optarg;
			break;
		case 's':
		case OPT_STORE: {
			char **n = realloc(stores, (n_stores + 1) * sizeof(char *));
			if (!n) {
				ca_log_error_errno(ENOMEM, "cache");
				goto out;
			}
			stores = n;
			stores[n_stores++] = optarg;
			break;
		}
		case OPT_RATE:
			if (cafs_parse_size(optarg, &rate) < 0 || rate == 0) {
				r = cafs_usage_error("cache", "invalid rate '%s'", optarg);
				goto out;
			}
			break;
		case 'j':
			if (cafs_parse_threads(optarg, &threads) < 0) {
				r = cafs_usage_error("cache", "invalid thread count '%s'", optarg);
				goto out;
			}
			if (threads == 0)
				threads = FILL_THREADS_DEFAULT;
			break;
		default:
			r = cafs_common_option("cache", c, &verbosity);
			if (r >= 0)
				goto out;
			break;
		}
	}
	cafs_set_verbosity(verbosity);
	if (optind == argc) {
		r = cafs_usage_error("cache", "fill needs at least one SOURCE index");
		goto out;
	}
	dir = cafs_cache_dir(cache_opt);
	if (!dir)
		goto out;
	int k = ca_source_mkdir_p(dir);
	if (k < 0) {
		ca_log_error_errno(k, "%s", dir);
		goto out;
	}
	n_sources = (size_t)(argc - optind);
	sources = calloc(n_sources, sizeof(*sources));
	if (!sources || ca_idset_new(4096, &queued) < 0 || ca_store_open(dir, &cache) < 0) {
		ca_log_error_errno(ENOMEM, "cache");
		goto out;
	}
	uint64_t present = 0, present_bytes = 0, total_bytes = 0;
	for (size_t i = 0; i < n_sources; i++) {
		sources[i].name = argv[optind + i];
		if (ca_source_open_index(sources[i].name, NULL, &sources[i].idx) < 0)
			goto out;
		k = plan_source(&sources[i], cache, queued, &present, &present_bytes);
		if (k < 0) {
			ca_log_error_errno(k, "%s", sources[i].name);
			goto out;
		}
		for (size_t m = 0; m < sources[i].n; m++)
			total_bytes += sources[i].w[m].size;
	}

	struct cafs_progress prog;
	uint64_t done_bytes = 0, wire_bytes = 0, fetched = 0, failed = 0, reported = 0, t0 = now_ns();
	bool broken = false;
	cafs_progress_init(&prog, "fill", total_bytes);
	for (size_t i = 0; i < n_sources; i++) {
		if (sources[i].n == 0)
			continue;
		/* a source whose stores cannot be opened fails alone; the rest still fill */
		if (fill_source(&sources[i], stores, n_stores, dir, threads, rate, &prog, &done_bytes, &wire_bytes,
		                &reported, &fetched, &failed) < 0)
			broken = true;
	}
	cafs_progress_done(&prog);
	if (reported > MAX_REPORTED)
		ca_log_error("%llu more chunks failed", (unsigned long long)(reported - MAX_REPORTED));
	double secs = (double)(now_ns() - t0) / 1e9;
	char h1[32], h2[32], h3[32];
	cafs_format_size(done_bytes, h1, sizeof(h1));
	cafs_format_size(wire_bytes, h2, sizeof(h2));
	cafs_format_size(secs > 0 ? (uint64_t)((double)wire_bytes / secs) : 0, h3, sizeof(h3));
	if (verbosity >= 0)
		printf("fetched %llu chunks (%s, %s transferred, %s/s), %llu already cached, %llu failed\n",
		       (unsigned long long)fetched, h1, h2, h3, (unsigned long long)present, (unsigned long long)failed);
	r = failed || broken ? 1 : 0;
out:
	for (size_t i = 0; sources && i < n_sources; i++) {
		free(sources[i].w);
		ca_index_free(sources[i].idx);
	}
	free(sources);
	ca_idset_free(queued);
	ca_store_free(cache);
	free(dir);
	free(stores);
	return r;
}
