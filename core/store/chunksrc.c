/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* chunksrc.c - backend chain, in-flight table and memory LRU. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/chunksrc.h"
#include "base/clock.h"
#include "base/condwait.h"
#include "chunk/compress.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/workq.h"
#include "format/idset.h"

#define MAX_BACKENDS 16
#define HASH_BUCKETS 4096
#define RA_QUEUE_MAX 4096 /* read-ahead jobs waiting for a thread */

struct backend {
	const struct ca_chunk_backend_ops *ops;
	void *be;
};

/* A chunk the table knows: being fetched (!ready) or done and in the LRU. */
struct entry {
	struct ca_chunk chunk; /* first: callers get &entry->chunk */
	uint8_t id[CA_CHUNK_ID_SIZE];
	struct entry *hnext;
	struct entry *prev, *next; /* LRU list, most recent first; only when ready */
	unsigned refs;             /* callers holding chunk */
	bool in_table, ready;
	bool unread;               /* fetched ahead (CA_CHUNKSRC_AHEAD), no demand get took it yet */
	int err;                   /* when done without data */
	uint8_t *mem;
};

struct codec_slot {
	struct ca_codec *codec;
	struct codec_slot *next;
};

struct ra_job {
	uint8_t id[CA_CHUNK_ID_SIZE];
	uint64_t size;
};

/* A chunk fetched from a backend, on its way into the cache store. */
struct cache_job {
	uint8_t id[CA_CHUNK_ID_SIZE];
	struct ca_buf raw;  /* the chunk file's bytes, or the data when !compressed */
	bool compressed;    /* false: the writer compresses raw first */
	uint64_t queued_ns; /* when it was staged (CLOCK_MONOTONIC) */
};

struct ca_chunksrc {
	enum ca_digest_type digest;
	size_t lru_limit, lru_bytes;
	bool offline, touch_cache;
	size_t file_max; /* from the index's largest chunk; 0: not set */
	struct ca_store *cache;
	struct backend backends[MAX_BACKENDS];
	unsigned n_backends;

	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t done;  /* broadcast when any fetch finishes */
	struct entry *buckets[HASH_BUCKETS];
	struct entry *lru_head, *lru_tail;
	struct ca_chunksrc_stats stats;
	struct codec_slot *free_codecs; /* idle per-call codecs */
	size_t inflight;                /* bytes reserved by running fetches */
	pthread_cond_t room;            /* signalled when inflight drops */
	unsigned demand;                /* gets (not background) running a fetch; done on change */
	uint64_t demand_ns;             /* when a demand get last began or ended a wait for a chunk */

	/* chunks fetched ahead of readers (a fill, CA_CHUNKSRC_AHEAD): the
	 * decoded bytes of those in the LRU that no demand get took yet, and
	 * when a demand get last took one (CLOCK_MONOTONIC ns; 0: never) */
	uint64_t ahead_unread, ahead_taken_ns;
	pthread_cond_t ahead_room; /* broadcast when a demand get takes one */
	unsigned ahead_waiting;

	/* read-ahead (ca_chunksrc_readahead): a ring of jobs for ra threads */
	struct ra_job *ra_jobs;         /* RA_QUEUE_MAX, allocated with the threads */
	size_t ra_head, ra_n;           /* ring start and length */
	uint64_t ra_bytes;              /* decoded bytes queued or being decoded */
	pthread_cond_t ra_work;         /* signalled when a job is queued, or stop */
	bool ra_stop, ra_failed;        /* stopping; the threads could not start */
	pthread_t ra_threads[CA_CHUNKSRC_RA_THREADS];
	unsigned n_ra_threads, ra_live; /* started; not yet returned */
	pthread_cond_t ra_gone;         /* signalled when a thread returns */

	/* the cache writer (cw_*): a fetch hands its chunk over and goes on;
	 * a one-worker work queue compresses (when needed) and writes them, in
	 * order. Bounded by the queue: a fetch waits while CW_JOBS_MAX jobs or
	 * CW_BYTES_MAX bytes are queued. A queued chunk counts as cached
	 * (cache_has, cache_get_queued): cw_ids maps its id to its job from
	 * before the submit until the job's done. cw_lock guards cw_*; never
	 * held with src->lock taken after it, nor across a submit. */
	pthread_mutex_t cw_lock;
	pthread_cond_t cw_idle;  /* signalled when cw_submitting drops to 0 */
	struct ca_workq *cw_q;   /* started with the first queued chunk */
	struct ca_idset *cw_ids; /* queued chunks: id -> (uintptr_t)struct cache_job * */
	unsigned cw_submitting;  /* fetches between their id's entry and their submit's return */
	bool cw_async; /* set before the first fetch (ca_chunksrc_set_cache_async) */
	bool cw_failed, cw_stop; /* the queue could not start; stopping */
	_Atomic unsigned cw_n;   /* chunks queued (in cw_ids) */
	atomic_bool cw_defer;    /* ca_chunksrc_set_cache_defer */
};

/* readers follow a fill while one took a chunk it fetched this recently */
#define AHEAD_FOLLOWED_NS (UINT64_C(500) * 1000000)

#define CW_JOBS_MAX 256
#define CW_BYTES_MAX ((size_t)32 << 20)
/* Readers first (ca_chunksrc_set_cache_defer, a mount's): the writer
 * holds a chunk back while readers wait for chunks (a demand get ran in
 * the last CW_QUIET_NS), for at most
 * CW_DEFER_NS from when it was staged, and not while the queue is half
 * full: on two cores, a cold container start spent a quarter of the
 * mount's CPU creating cache files (ext4 inode allocation, a directory
 * per chunk) beside the reads it waited for. A sustained reader (a tar)
 * fills the queue to half and the writer keeps its pace from there. */
#define CW_QUIET_NS (UINT64_C(50) * 1000000)
#define CW_DEFER_NS (UINT64_C(500) * 1000000)

static unsigned bucket_of(const uint8_t id[CA_CHUNK_ID_SIZE])
{
	unsigned v;
	memcpy(&v, id, sizeof(v)); /* ids are digests: already uniform */
	return v % HASH_BUCKETS;
}

static struct entry *lookup(struct ca_chunksrc *src, const uint8_t *id)
{
	for (struct entry *e = src->buckets[bucket_of(id)]; e; e = e->hnext)
		if (!memcmp(e->id, id, CA_CHUNK_ID_SIZE))
			return e;
	return NULL;
}

static void table_remove(struct ca_chunksrc *src, struct entry *e)
{
	struct entry **pp = &src->buckets[bucket_of(e->id)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	e->in_table = false;
	if (e->unread) {
		e->unread = false;
		src->ahead_unread -= e->chunk.size;
	}
	if (e->ready) {
		if (e->prev)
			e->prev->next = e->next;
		else
			src->lru_head = e->next;
		if (e->next)
			e->next->prev = e->prev;
		else
			src->lru_tail = e->prev;
		src->lru_bytes -= e->chunk.size;
	}
}

static void entry_free(struct entry *e)
{
	free(e->mem);
	free(e);
}

static void lru_front(struct ca_chunksrc *src, struct entry *e)
{
	if (src->lru_head == e)
		return;
	e->prev->next = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		src->lru_tail = e->prev;
	e->prev = NULL;
	e->next = src->lru_head;
	src->lru_head->prev = e;
	src->lru_head = e;
}

static void lru_evict(struct ca_chunksrc *src)
{
	while (src->lru_bytes > src->lru_limit && src->lru_tail) {
		struct entry *e = src->lru_tail;
		table_remove(src, e);
		if (e->refs == 0)
			entry_free(e);
	}
}

/* ---- the cache writer ---- */

/* Write one job into the cache store; codec for an uncompressed one. */
static void cache_write(struct ca_chunksrc *src, struct ca_codec *codec, struct cache_job *j)
{
	struct ca_buf z = CA_BUF_INIT;
	int r;
	if (j->compressed)
		r = ca_store_put_raw(src->cache, j->id, j->raw.data, j->raw.size);
	else if (!codec)
		r = -ENOMEM;
	else if ((r = ca_codec_compress(codec, j->raw.data, j->raw.size, &z)) == 0)
		r = ca_store_put_raw(src->cache, j->id, z.data, z.size);
	if (r < 0) {
		char hex[2 * CA_CHUNK_ID_SIZE + 1];
		ca_id_to_hex(j->id, hex);
		ca_log_warning_errno(r, "cache: cannot store chunk %s", hex);
	}
	ca_buf_release(&z);
}

static void cache_job_free(struct cache_job *j)
{
	ca_buf_release(&j->raw);
	free(j);
}

/* The writer's codec, for bare chunks; without one they fail to cache,
 * with a warning (cache_write) */
static int cw_init(void *qdata, void **ret_wdata)
{
	struct ca_chunksrc *src = qdata;
	struct ca_codec *codec = NULL;
	*ret_wdata = ca_codec_new(src->digest, &codec) == 0 ? codec : NULL;
	return 0;
}

static void cw_fini(void *qdata, void *wdata)
{
	(void)qdata;
	ca_codec_free(wdata);
}

/* Hold j back while readers wait for chunks (CW_QUIET_NS above). */
static void cw_defer(struct ca_chunksrc *src, const struct cache_job *j)
{
	if (!atomic_load(&src->cw_defer))
		return;
	pthread_mutex_lock(&src->lock);
	for (;;) {
		uint64_t now = ca_now_ns();
		if (__atomic_load_n(&src->cw_stop, __ATOMIC_RELAXED) || atomic_load(&src->cw_n) >= CW_JOBS_MAX / 2 ||
		    now >= j->queued_ns + CW_DEFER_NS || (src->demand == 0 && now >= src->demand_ns + CW_QUIET_NS))
			break;
		ca_cond_wait_ms(&src->done, &src->lock, 5);
	}
	pthread_mutex_unlock(&src->lock);
}

static int cw_run(void *qdata, void *wdata, void *job)
{
	cw_defer(qdata, job);
	cache_write(qdata, wdata, job);
	return 0; /* a failed write was a warning: the queue goes on */
}

/* Written (or dropped): the chunk stops counting as queued. */
static void cw_done(void *qdata, void *job, int r)
{
	struct ca_chunksrc *src = qdata;
	struct cache_job *j = job;
	(void)r;
	pthread_mutex_lock(&src->cw_lock);
	ca_idset_remove(src->cw_ids, j->id);
	atomic_fetch_sub(&src->cw_n, 1);
	pthread_mutex_unlock(&src->cw_lock);
	cache_job_free(j);
}

static const struct ca_workq_ops cw_ops = { .init = cw_init, .fini = cw_fini, .run = cw_run, .done = cw_done };

/* Stage the chunk (raw's bytes, taken: raw is left empty) for the
 * cache. With the writer on, it counts as queued from now (cw_ids), and
 * *ret_staged is the job for cache_submit, once the chunk went to its
 * readers. Else (off, the writer could not start or is stopping) it is
 * written here and *ret_staged is NULL. Never waits for the queue. */
static void cache_stage(struct ca_chunksrc *src, struct ca_codec *codec, const uint8_t *id, struct ca_buf *raw,
                        bool compressed, struct cache_job **ret_staged)
{
	*ret_staged = NULL;
	struct cache_job *j = calloc(1, sizeof(*j));
	if (!j) {
		struct cache_job t = { .raw = *raw, .compressed = compressed };
		memcpy(t.id, id, CA_CHUNK_ID_SIZE);
		cache_write(src, codec, &t);
		return; /* raw stays the caller's */
	}
	memcpy(j->id, id, CA_CHUNK_ID_SIZE);
	j->raw = *raw;
	j->compressed = compressed;
	j->queued_ns = ca_now_ns();
	*raw = (struct ca_buf)CA_BUF_INIT;
	if (!src->cw_async)
		goto write_here;
	pthread_mutex_lock(&src->cw_lock);
	if (!src->cw_q && !src->cw_failed && !src->cw_stop) {
		/* one worker takes jobs first in, first out: ordered writes */
		struct ca_workq_opts o = { .workers = 1, .max_jobs = CW_JOBS_MAX, .max_cost = CW_BYTES_MAX };
		src->cw_failed = ca_idset_new(CW_JOBS_MAX, &src->cw_ids) < 0 ||
		                 ca_workq_new(&cw_ops, src, &o, &src->cw_q) < 0;
	}
	if (!src->cw_q || src->cw_stop) {
		pthread_mutex_unlock(&src->cw_lock);
		goto write_here;
	}
	int r = ca_idset_add(src->cw_ids, id, (uint64_t)(uintptr_t)j);
	if (r == 0) { /* queued already (two fetches of one chunk): written once */
		pthread_mutex_unlock(&src->cw_lock);
		cache_job_free(j);
		return;
	}
	if (r < 0) {
		pthread_mutex_unlock(&src->cw_lock);
		goto write_here;
	}
	src->cw_submitting++;
	atomic_fetch_add(&src->cw_n, 1);
	pthread_mutex_unlock(&src->cw_lock);
	*ret_staged = j;
	return;
write_here:
	cache_write(src, codec, j);
	cache_job_free(j);
}

/* Hand a staged job to the writer, waiting while the queue is full: a
 * background fetch (low) already at half of it, so that a reader's own
 * fetch finds the other half free and does not wait behind a fill. */
static void cache_submit(struct ca_chunksrc *src, struct ca_codec *codec, struct cache_job *j, bool low)
{
	/* not under cw_lock: a full queue waits for jobs whose done takes it */
	int r = low ? ca_workq_submit_low(src->cw_q, j, j->raw.size) : ca_workq_submit(src->cw_q, j, j->raw.size);
	pthread_mutex_lock(&src->cw_lock);
	if (r < 0) { /* never cancelled, but: not taken, so not queued */
		ca_idset_remove(src->cw_ids, j->id);
		atomic_fetch_sub(&src->cw_n, 1);
	}
	if (--src->cw_submitting == 0)
		pthread_cond_broadcast(&src->cw_idle);
	pthread_mutex_unlock(&src->cw_lock);
	if (r < 0) {
		cache_write(src, codec, j);
		cache_job_free(j);
	}
}

/* The queued job for id (cw_lock held), or NULL. */
static struct cache_job *cache_queued(struct ca_chunksrc *src, const uint8_t *id)
{
	uint64_t v;
	if (!src->cw_ids || ca_idset_get(src->cw_ids, id, &v) <= 0)
		return NULL;
	return (struct cache_job *)(uintptr_t)v;
}

/* 1 if the cache has id (on disk or on its way there), 0 if not. */
static int cache_has(struct ca_chunksrc *src, const uint8_t *id)
{
	if (!src->cache)
		return 0;
	pthread_mutex_lock(&src->cw_lock);
	bool queued = cache_queued(src, id) != NULL;
	pthread_mutex_unlock(&src->cw_lock);
	return queued ? 1 : ca_store_has(src->cache, id);
}

/* A queued chunk's bytes, copied into out: 0, or -ENOENT. */
static int cache_get_queued(struct ca_chunksrc *src, const uint8_t *id, struct ca_buf *out, bool *ret_compressed)
{
	int r = -ENOENT;
	pthread_mutex_lock(&src->cw_lock);
	struct cache_job *j = cache_queued(src, id);
	if (j) {
		out->size = 0;
		r = ca_buf_append(out, j->raw.data, j->raw.size, SIZE_MAX);
		if (r == 0)
			*ret_compressed = j->compressed;
	}
	pthread_mutex_unlock(&src->cw_lock);
	return r;
}

/* Write what is queued and end the writer: later chunks (a stuck
 * read-ahead thread's) are written by their fetching thread. */
static void cache_writer_stop(struct ca_chunksrc *src)
{
	pthread_mutex_lock(&src->cw_lock);
	src->cw_stop = true;
	while (src->cw_submitting > 0)
		pthread_cond_wait(&src->cw_idle, &src->cw_lock);
	pthread_mutex_unlock(&src->cw_lock);
	(void)ca_workq_free(src->cw_q); /* drains: every job is written first */
	pthread_mutex_lock(&src->cw_lock);
	src->cw_q = NULL;
	ca_idset_free(src->cw_ids);
	src->cw_ids = NULL;
	pthread_mutex_unlock(&src->cw_lock);
}

int ca_chunksrc_new(enum ca_digest_type digest, size_t lru_bytes, struct ca_chunksrc **ret)
{
	struct ca_chunksrc *src = calloc(1, sizeof(*src));
	if (!src)
		return -ENOMEM;
	src->digest = digest;
	src->lru_limit = lru_bytes;
	pthread_mutex_init(&src->lock, NULL);
	pthread_cond_init(&src->done, NULL);
	pthread_cond_init(&src->room, NULL);
	pthread_cond_init(&src->ahead_room, NULL);
	pthread_cond_init(&src->ra_work, NULL);
	pthread_cond_init(&src->ra_gone, NULL);
	pthread_mutex_init(&src->cw_lock, NULL);
	pthread_cond_init(&src->cw_idle, NULL);
	*ret = src;
	return 0;
}

void ca_chunksrc_free(struct ca_chunksrc *src)
{
	if (!src)
		return;
	/* queued read-ahead is dropped; a thread in a fetch finishes it first.
	 * One stuck on a server that never answers (an interrupted extract,
	 * an unmount) is not waited for past 2 s: it is left running with
	 * everything it uses, never freed (the process is about to exit), as
	 * ca_blob_stream_free does */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&src->lock);
	src->ra_stop = true;
	src->ra_n = 0;
	pthread_cond_broadcast(&src->ra_work);
	while (src->ra_live > 0 && pthread_cond_timedwait(&src->ra_gone, &src->lock, &until) == 0)
		;
	bool stuck = src->ra_live > 0;
	pthread_mutex_unlock(&src->lock);
	/* every chunk handed to the cache writer is on disk before we go (a
	 * stuck read-ahead thread's later one is written by that thread) */
	cache_writer_stop(src);
	if (stuck) {
		ca_log_debug("chunk source: a read-ahead thread is stuck in a fetch; leaving it");
		for (unsigned i = 0; i < src->n_ra_threads; i++)
			pthread_detach(src->ra_threads[i]);
		return;
	}
	for (unsigned i = 0; i < src->n_ra_threads; i++)
		pthread_join(src->ra_threads[i], NULL);
	free(src->ra_jobs);
	pthread_cond_destroy(&src->ra_work);
	pthread_cond_destroy(&src->ra_gone);
	for (unsigned i = 0; i < HASH_BUCKETS; i++)
		while (src->buckets[i]) {
			struct entry *e = src->buckets[i];
			table_remove(src, e);
			entry_free(e);
		}
	for (unsigned i = 0; i < src->n_backends; i++)
		if (src->backends[i].ops->free)
			src->backends[i].ops->free(src->backends[i].be);
	ca_store_free(src->cache);
	while (src->free_codecs) {
		struct codec_slot *s = src->free_codecs;
		src->free_codecs = s->next;
		ca_codec_free(s->codec);
		free(s);
	}
	pthread_cond_destroy(&src->done);
	pthread_cond_destroy(&src->room);
	pthread_cond_destroy(&src->ahead_room);
	pthread_mutex_destroy(&src->lock);
	pthread_cond_destroy(&src->cw_idle);
	pthread_mutex_destroy(&src->cw_lock);
	free(src);
}

int ca_chunksrc_add_backend(struct ca_chunksrc *src, const struct ca_chunk_backend_ops *ops, void *be)
{
	if (src->n_backends == MAX_BACKENDS) {
		if (ops->free)
			ops->free(be);
		return -E2BIG;
	}
	src->backends[src->n_backends++] = (struct backend){ ops, be };
	if (src->file_max && ops->set_file_max)
		ops->set_file_max(be, src->file_max);
	return 0;
}

int ca_chunksrc_add_backend_first(struct ca_chunksrc *src, const struct ca_chunk_backend_ops *ops, void *be)
{
	int r = ca_chunksrc_add_backend(src, ops, be);
	if (r == 0) {
		struct backend b = src->backends[src->n_backends - 1];
		memmove(&src->backends[1], &src->backends[0], (src->n_backends - 1) * sizeof(b));
		src->backends[0] = b;
	}
	return r;
}

void ca_chunksrc_set_chunk_size_max(struct ca_chunksrc *src, uint64_t chunk_size_max)
{
	src->file_max = ca_compress_file_max(chunk_size_max);
	for (unsigned i = 0; i < src->n_backends; i++)
		if (src->backends[i].ops->set_file_max)
			src->backends[i].ops->set_file_max(src->backends[i].be, src->file_max);
}

static int store_fetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out, bool *ret_compressed)
{
	return ca_store_get_raw(be, id, out, ret_compressed);
}

static int store_has(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	return ca_store_has(be, id);
}

static void store_free(void *be)
{
	ca_store_free(be);
}

static const struct ca_chunk_backend_ops store_ops = {
	.kind = "store",
	.fetch = store_fetch,
	.has = store_has,
	.free = store_free,
};

int ca_chunksrc_add_store(struct ca_chunksrc *src, struct ca_store *store)
{
	return ca_chunksrc_add_backend(src, &store_ops, store);
}

int ca_chunksrc_set_cache(struct ca_chunksrc *src, struct ca_store *cache, bool touch)
{
	ca_store_free(src->cache);
	src->cache = cache;
	src->touch_cache = touch;
	return 0;
}

void ca_chunksrc_set_cache_defer(struct ca_chunksrc *src, bool defer)
{
	atomic_store(&src->cw_defer, defer);
}

void ca_chunksrc_set_cache_async(struct ca_chunksrc *src, bool async)
{
	src->cw_async = async;
}

void ca_chunksrc_set_offline(struct ca_chunksrc *src, bool offline)
{
	src->offline = offline;
}

static struct codec_slot *codec_take(struct ca_chunksrc *src)
{
	pthread_mutex_lock(&src->lock);
	struct codec_slot *s = src->free_codecs;
	if (s)
		src->free_codecs = s->next;
	pthread_mutex_unlock(&src->lock);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (s && ca_codec_new(src->digest, &s->codec) < 0) {
		free(s);
		s = NULL;
	}
	return s;
}

static void codec_give(struct ca_chunksrc *src, struct codec_slot *s)
{
	pthread_mutex_lock(&src->lock);
	s->next = src->free_codecs;
	src->free_codecs = s;
	pthread_mutex_unlock(&src->lock);
}

static void count(struct ca_chunksrc *src, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&src->lock);
	*field += n;
	pthread_mutex_unlock(&src->lock);
}

/* Turn a chunk file's bytes into verified data in out. */
static int decode(struct ca_codec *codec, struct ca_buf *raw, bool compressed, const uint8_t *id, uint64_t size,
                  struct ca_buf *out)
{
	/* padding cannot ride along: a file beyond what its content can
	 * compress to is refused before it is decoded (or cached) */
	if (size != UINT64_MAX && raw->size > ca_compress_file_max(size))
		return ca_log_debug_errno(-EBADMSG, "chunk file of %zu bytes for %llu bytes of content", raw->size,
		                          (unsigned long long)size);
	if (compressed)
		return ca_codec_decode_chunk(codec, raw->data, raw->size, id, size, out);
	/* a bare chunk is the data itself */
	uint8_t got[CA_CHUNK_ID_SIZE];
	if (size != UINT64_MAX && raw->size != size)
		return -EBADMSG;
	int r = ca_digest_once(ca_codec_digest(codec), raw->data, raw->size, got);
	if (r < 0)
		return r;
	if (memcmp(got, id, CA_CHUNK_ID_SIZE))
		return -EBADMSG;
	struct ca_buf t = *out;
	*out = *raw;
	*raw = t;
	return 0;
}

/* Fetch and decode id into out; a chunk from a backend is staged for
 * the cache (*ret_staged: see cache_stage). */
static int fetch_chain(struct ca_chunksrc *src, struct ca_codec *codec, const uint8_t *id, uint64_t size,
                       struct ca_buf *out, struct cache_job **ret_staged)
{
	struct ca_buf raw = CA_BUF_INIT;
	bool compressed = true;
	int r, result = -ENOENT;
	char hex[2 * CA_CHUNK_ID_SIZE + 1];

	if (src->cache) {
		r = cache_get_queued(src, id, &raw, &compressed);
		if (r == -ENOENT)
			r = ca_store_get_raw(src->cache, id, &raw, &compressed);
		if (r == 0) {
			r = decode(codec, &raw, compressed, id, size, out);
			if (r == 0) {
				count(src, &src->stats.cache_hits, 1);
				if (src->touch_cache)
					(void)ca_store_touch(src->cache, id);
				goto done;
			}
			/* a damaged cache entry must not shadow a good remote copy */
			ca_id_to_hex(id, hex);
			ca_log_warning("cache: chunk %s is corrupt, dropping it", hex);
			(void)ca_store_remove(src->cache, id);
			count(src, &src->stats.corrupt, 1);
		}
	}
	if (src->offline) {
		r = -ENOMEDIUM;
		goto done;
	}
	for (unsigned i = 0; i < src->n_backends; i++) {
		const struct backend *b = &src->backends[i];
		compressed = true;
		r = b->ops->fetch(b->be, id, &raw, &compressed);
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			if (result == -ENOENT)
				result = r;
			continue;
		}
		r = decode(codec, &raw, compressed, id, size, out);
		if (r == -EBADMSG) {
			count(src, &src->stats.corrupt, 1);
			result = -EBADMSG;
			continue;
		}
		if (r < 0) {
			result = r;
			continue;
		}
		count(src, b->ops->builds ? &src->stats.built_bytes : &src->stats.fetched_bytes, raw.size);
		count(src, b->ops->builds ? &src->stats.built_chunks : &src->stats.fetched_chunks, 1);
		/* off the reader's path: the writer thread compresses (a bare
		 * chunk) and writes it, while this chunk goes to its readers */
		if (src->cache && compressed) {
			cache_stage(src, codec, id, &raw, true, ret_staged);
		} else if (src->cache) {
			struct ca_buf copy = CA_BUF_INIT;
			if (ca_buf_append(&copy, out->data, out->size, SIZE_MAX) == 0)
				cache_stage(src, codec, id, &copy, false, ret_staged);
			ca_buf_release(&copy);
		}
		r = 0;
		goto done;
	}
	r = result;
done:
	ca_buf_release(&raw);
	return r;
}

static __thread ca_chunk_cancelled_fn hook_fn;
static __thread void *hook_arg;
static __thread bool fetch_demand; /* this thread runs a demand get's fetch_chain */

bool ca_chunksrc_fetch_is_demand(void)
{
	return fetch_demand;
}

/* A reader joined a fetch under way (lock held): its download may be
 * queued behind read-ahead's, so the backends move it to the front. */
static void hurry_backends(struct ca_chunksrc *src, const uint8_t *id)
{
	if (src->offline)
		return;
	for (unsigned i = 0; i < src->n_backends; i++)
		if (src->backends[i].ops->hurry)
			src->backends[i].ops->hurry(src->backends[i].be, id);
}

void ca_chunksrc_wait_hook(ca_chunk_cancelled_fn fn, void *arg)
{
	hook_fn = fn;
	hook_arg = arg;
}

bool ca_chunksrc_wait_cancelled(void)
{
	return hook_fn && hook_fn(hook_arg);
}

/* Wait for another thread's fetch of e (lock held): 0 when it ended,
 * -EINTR when the caller's hook says to give up first. */
static int join_wait(struct ca_chunksrc *src, struct entry *e)
{
	while (!e->ready && e->err == 0) {
		if (!hook_fn) {
			pthread_cond_wait(&src->done, &src->lock);
			continue;
		}
		if (hook_fn(hook_arg))
			return -EINTR;
		ca_cond_wait_ms(&src->done, &src->lock, 100);
	}
	return 0;
}

/* Is a reader taking what the fill fetches ahead (lock held)? Then its
 * chunks enter the LRU hot: the reader comes for them next, while stale
 * chunks it read already are what the LRU should give up. */
static bool ahead_followed(struct ca_chunksrc *src, unsigned flags)
{
	return (flags & CA_CHUNKSRC_AHEAD) && src->ahead_taken_ns && ca_now_ns() - src->ahead_taken_ns < AHEAD_FOLLOWED_NS;
}

static int get_flags(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size, unsigned flags,
                     const struct ca_chunk **ret)
{
	struct entry *e;
	int r;
	/* background (a fill, a profile, read-ahead): not a demand read, and
	 * its failure is not counted (a reader asks again and counts its own) */
	bool background = flags & CA_CHUNKSRC_BACKGROUND;
	unsigned dm = background ? 0 : 1;

	pthread_mutex_lock(&src->lock);
	e = lookup(src, id);
	if (e) {
		e->refs++;
		if (e->ready && !background)
			src->stats.lru_hits++;
		/* a get joining a fetch under way is not counted as demand:
		 * background work starting now does not delay that fetch */
		if (!e->ready && e->err == 0 && !background) {
			uint64_t t0 = ca_now_us();
			hurry_backends(src, id);
			src->demand_ns = ca_now_ns();
			r = join_wait(src, e);
			src->demand_ns = ca_now_ns();
			src->stats.demand_joins++;
			src->stats.demand_join_wait_us += ca_now_us() - t0;
		} else {
			r = join_wait(src, e);
		}
		if (r == 0 && e->ready) {
			if (e->in_table)
				lru_front(src, e);
			if (e->unread && !background) {
				/* a reader took what a fill fetched ahead: the fill
				 * may go on (ca_chunksrc_ahead_wait) */
				e->unread = false;
				src->ahead_unread -= e->chunk.size;
				src->ahead_taken_ns = ca_now_ns();
				if (src->ahead_waiting)
					pthread_cond_broadcast(&src->ahead_room);
			}
			pthread_mutex_unlock(&src->lock);
			*ret = &e->chunk;
			return 0;
		}
		if (r == 0)
			r = e->err;
		if (--e->refs == 0 && !e->in_table)
			entry_free(e);
		pthread_mutex_unlock(&src->lock);
		return r;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&src->lock);
		return -ENOMEM;
	}
	memcpy(e->id, id, CA_CHUNK_ID_SIZE);
	e->refs = 1;
	e->in_table = true;
	unsigned b = bucket_of(id);
	e->hnext = src->buckets[b];
	src->buckets[b] = e;
	src->demand += dm;
	src->stats.demand_fetches += dm;
	if (dm)
		src->demand_ns = ca_now_ns();
	pthread_mutex_unlock(&src->lock);

	/* the file and the decoded chunk, for as long as the fetch runs */
	size_t csize = size < CA_CHUNK_SIZE_LIMIT_MAX ? (size_t)size : CA_CHUNK_SIZE_LIMIT_MAX;
	size_t need = csize + ca_compress_file_max(csize);
	pthread_mutex_lock(&src->lock);
	while (src->inflight > 0 && src->inflight + need > CA_CHUNKSRC_INFLIGHT_MAX)
		pthread_cond_wait(&src->room, &src->lock);
	src->inflight += need;
	pthread_mutex_unlock(&src->lock);

	struct ca_buf out = CA_BUF_INIT;
	struct cache_job *staged = NULL;
	struct codec_slot *cs = codec_take(src);
	fetch_demand = !background;
	uint64_t f0 = background ? 0 : ca_now_us();
	r = cs ? fetch_chain(src, cs->codec, id, size, &out, &staged) : -ENOMEM;
	fetch_demand = false;

	pthread_mutex_lock(&src->lock);
	if (!background) {
		src->stats.demand_fetch_us += ca_now_us() - f0;
		src->demand_ns = ca_now_ns();
	}
	src->inflight -= need;
	src->demand -= dm;
	pthread_cond_broadcast(&src->room);
	if (r < 0) {
		if (!background)
			src->stats.errors++;
		e->err = r;
		table_remove(src, e);
		ca_buf_release(&out);
	} else {
		e->mem = out.data;
		e->chunk.data = out.data;
		e->chunk.size = out.size;
		e->ready = true;
		if (src->lru_limit == 0 || out.size > src->lru_limit) {
			/* no LRU: waiters already hold references */
			struct entry **pp = &src->buckets[b];
			while (*pp != e)
				pp = &(*pp)->hnext;
			*pp = e->hnext;
			e->in_table = false;
		} else if ((flags & CA_CHUNKSRC_LRU_COLD) && src->lru_tail && !ahead_followed(src, flags)) {
			/* at the end that is evicted first: a read moves it up */
			e->prev = src->lru_tail;
			src->lru_tail->next = e;
			src->lru_tail = e;
			src->lru_bytes += out.size;
			lru_evict(src);
		} else {
			e->next = src->lru_head;
			if (src->lru_head)
				src->lru_head->prev = e;
			src->lru_head = e;
			if (!src->lru_tail)
				src->lru_tail = e;
			src->lru_bytes += out.size;
			lru_evict(src);
		}
		if ((flags & CA_CHUNKSRC_AHEAD) && e->in_table) {
			e->unread = true;
			src->ahead_unread += out.size;
		}
	}
	pthread_cond_broadcast(&src->done);
	if (r < 0 && --e->refs == 0)
		entry_free(e);
	pthread_mutex_unlock(&src->lock);
	/* the chunk is with its readers (who joined this fetch) and counts
	 * as cached: only now may a full cache queue hold this thread up */
	if (staged)
		cache_submit(src, cs->codec, staged, background);
	if (cs)
		codec_give(src, cs);
	if (r < 0)
		return r;
	*ret = &e->chunk;
	return 0;
}

int ca_chunksrc_get(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size,
                    const struct ca_chunk **ret)
{
	return get_flags(src, id, size, 0, ret);
}

void ca_chunksrc_put(struct ca_chunksrc *src, const struct ca_chunk *chunk)
{
	if (!chunk)
		return;
	struct entry *e = (struct entry *)chunk;
	pthread_mutex_lock(&src->lock);
	if (--e->refs == 0 && !e->in_table)
		entry_free(e);
	pthread_mutex_unlock(&src->lock);
}

int ca_chunksrc_is_local(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	pthread_mutex_lock(&src->lock);
	struct entry *e = lookup(src, id);
	bool hit = e && e->ready;
	pthread_mutex_unlock(&src->lock);
	if (hit)
		return 1;
	return cache_has(src, id);
}

void ca_chunksrc_prefetch(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	if (src->offline)
		return;
	/* Only a backend that can prefetch makes the checks below worth it: with
	 * local stores alone they were three syscalls a chunk, under the lock. */
	bool any = false;
	for (unsigned i = 0; i < src->n_backends; i++)
		any = any || src->backends[i].ops->prefetch;
	if (!any)
		return;
	/* Under the lock from the table lookup to the backend's prefetch: a get()
	 * of this id either registered itself before (we see it and stay out) or
	 * comes after and joins the download we start. Between the two, the cache
	 * is looked at again, for a get() that finished and left the table
	 * (no LRU) after writing the cache. Backend prefetches never block. */
	pthread_mutex_lock(&src->lock);
	bool known = lookup(src, id) != NULL;
	if (!known && !(cache_has(src, id) > 0)) {
		for (unsigned i = 0; i < src->n_backends; i++) {
			const struct backend *b = &src->backends[i];
			if (b->ops->has && b->ops->has(b->be, id) > 0)
				break; /* a local store has it: no need to go further */
			if (b->ops->prefetch) {
				b->ops->prefetch(b->be, id);
				break;
			}
		}
	}
	pthread_mutex_unlock(&src->lock);
}

void ca_chunksrc_hurry(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	if (src->offline)
		return;
	/* under the lock, as ca_chunksrc_prefetch: a get of id either
	 * registered first (its download is hurried) or joins the one
	 * started here */
	pthread_mutex_lock(&src->lock);
	struct entry *e = lookup(src, id);
	if (e && !e->ready && e->err == 0) {
		hurry_backends(src, id);
	} else if (!e && !(cache_has(src, id) > 0)) {
		bool was = fetch_demand;
		fetch_demand = true; /* the backend's prefetch starts it urgent */
		for (unsigned i = 0; i < src->n_backends; i++) {
			const struct backend *b = &src->backends[i];
			if (b->ops->has && b->ops->has(b->be, id) > 0)
				break;
			if (b->ops->hurry)
				b->ops->hurry(b->be, id); /* a prefetch of it queued already */
			if (b->ops->prefetch) {
				b->ops->prefetch(b->be, id);
				break;
			}
		}
		fetch_demand = was;
	}
	pthread_mutex_unlock(&src->lock);
}

void ca_chunksrc_get_stats(struct ca_chunksrc *src, struct ca_chunksrc_stats *ret)
{
	pthread_mutex_lock(&src->lock);
	*ret = src->stats;
	ret->lru_bytes = src->lru_bytes;
	ret->lru_limit = src->lru_limit;
	pthread_mutex_unlock(&src->lock);
}

const struct ca_chunk_backend_ops *ca_chunksrc_store_backend(void)
{
	return &store_ops;
}

size_t ca_chunksrc_n_backends(const struct ca_chunksrc *src)
{
	return src->n_backends;
}

void *ca_chunksrc_backend(const struct ca_chunksrc *src, size_t i, const struct ca_chunk_backend_ops **ret_ops)
{
	if (ret_ops)
		*ret_ops = src->backends[i].ops;
	return src->backends[i].be;
}

int ca_chunksrc_get_background(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size,
                               unsigned flags, const struct ca_chunk **ret)
{
	return get_flags(src, id, size, flags | CA_CHUNKSRC_BACKGROUND, ret);
}

bool ca_chunksrc_ahead_wait(struct ca_chunksrc *src, const atomic_bool *stop)
{
	bool waited = false;
	pthread_mutex_lock(&src->lock);
	/* a quarter of the LRU: the reader's own reads, moved to the front as
	 * it takes them, and the fill's unread chunks both stay within it */
	while (src->lru_limit && src->ahead_unread > src->lru_limit / 4 && ahead_followed(src, CA_CHUNKSRC_AHEAD) &&
	       !atomic_load(stop)) {
		waited = true;
		src->ahead_waiting++;
		/* timed: a reader that stops taking them lets the fill go on */
		ca_cond_wait_ms(&src->ahead_room, &src->lock, 50);
		src->ahead_waiting--;
	}
	pthread_mutex_unlock(&src->lock);
	return waited;
}

bool ca_chunksrc_wait_no_demand(struct ca_chunksrc *src)
{
	pthread_mutex_lock(&src->lock);
	bool waited = src->demand > 0;
	while (src->demand > 0)
		pthread_cond_wait(&src->done, &src->lock);
	pthread_mutex_unlock(&src->lock);
	return waited;
}

static uint64_t ra_cost(uint64_t size)
{
	return size < CA_CHUNK_SIZE_LIMIT_MAX ? size : CA_CHUNK_SIZE_LIMIT_MAX;
}

static void *ra_thread(void *arg)
{
	struct ca_chunksrc *src = arg;
	pthread_mutex_lock(&src->lock);
	for (;;) {
		while (!src->ra_stop && src->ra_n == 0)
			pthread_cond_wait(&src->ra_work, &src->lock);
		if (src->ra_stop)
			break;
		struct ra_job job = src->ra_jobs[src->ra_head];
		src->ra_head = (src->ra_head + 1) % RA_QUEUE_MAX;
		src->ra_n--;
		pthread_mutex_unlock(&src->lock);
		const struct ca_chunk *c = NULL;
		int r = get_flags(src, job.id, job.size, CA_CHUNKSRC_BACKGROUND, &c);
		if (r == 0)
			ca_chunksrc_put(src, c); /* it stays in the LRU for the reader */
		pthread_mutex_lock(&src->lock);
		src->stats.ra_decoded += r == 0;
		src->ra_bytes -= ra_cost(job.size);
	}
	src->ra_live--;
	pthread_cond_broadcast(&src->ra_gone);
	pthread_mutex_unlock(&src->lock);
	return NULL;
}

/* The threads, on the first read-ahead (with the lock held). False when
 * none could start: read-ahead is then a plain prefetch. */
static bool ra_start(struct ca_chunksrc *src)
{
	if (src->n_ra_threads || src->ra_failed)
		return src->n_ra_threads > 0;
	src->ra_jobs = calloc(RA_QUEUE_MAX, sizeof(*src->ra_jobs));
	if (src->ra_jobs) {
		while (src->n_ra_threads < CA_CHUNKSRC_RA_THREADS &&
		       ca_thread_create(&src->ra_threads[src->n_ra_threads], ra_thread, src) == 0) {
			src->n_ra_threads++;
			src->ra_live++; /* under the lock: the thread's own decrement waits for it */
		}
	}
	if (src->n_ra_threads == 0) {
		src->ra_failed = true;
		free(src->ra_jobs);
		src->ra_jobs = NULL;
	}
	return src->n_ra_threads > 0;
}

void ca_chunksrc_readahead(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size)
{
	/* first the download, so that it runs while the job waits for a thread */
	ca_chunksrc_prefetch(src, id);
	pthread_mutex_lock(&src->lock);
	uint64_t cost = ra_cost(size);
	/* what the threads decode must still be in the LRU when the reader
	 * comes: never more queued than half of it */
	if (!src->ra_stop && src->lru_limit > 0 && src->ra_n < RA_QUEUE_MAX &&
	    src->ra_bytes + cost <= src->lru_limit / 2 && !lookup(src, id) && ra_start(src)) {
		struct ra_job *j = &src->ra_jobs[(src->ra_head + src->ra_n) % RA_QUEUE_MAX];
		memcpy(j->id, id, CA_CHUNK_ID_SIZE);
		j->size = size;
		src->ra_n++;
		src->ra_bytes += cost;
		pthread_cond_signal(&src->ra_work);
	}
	pthread_mutex_unlock(&src->lock);
}
