/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * make.c - the make pipeline (see make.h for the picture).
 *
 * One lock (m->lock) guards the segment queues and counters; it is held
 * only to move pointers, never across hashing, compression or file I/O.
 * The chunks go to a work queue (base/workq.h) with ordered completion:
 * its done calls, one at a time in stream order, append the index.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/feature.h"
#include "chunk/chunker.h"
#include "chunk/compress.h"
#include "base/fdio.h"
#include "format/index.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/workq.h"
#include "store/make.h"
#include "store/store.h"
#include "store/store_writer.h"

#define SEG_SIZE (4u << 20)
#define MAX_SEGS 4                    /* input buffered ahead of the chunker and digest */
#define MAX_JOB_BYTES (32u << 20)     /* chunk data waiting for workers */
#define JOBS_PER_WORKER 4             /* chunks waiting for workers, at most, per worker */
#define MAX_WORKERS 64
/* Chunks handed to a worker at once: their ids are hashed together in the
 * lanes of a multi-buffer SHA-512/256 (base/sha512mb.h), which wants
 * several times its lane count so that lanes refill as chunks end. */
#define BATCH_CHUNKS 32
#define BATCH_BYTES ((size_t)4 << 20)

struct segment {
	struct segment *next_c, *next_d; /* chunker queue, digest queue */
	unsigned refs;
	size_t size;
	/* known chunks (ca_maker_feed_known): no data; data holds known_n
	 * sizes (uint64_t) then known_n ids */
	bool known;
	size_t known_n;
	uint8_t data[];
};

/* A chunk; the queue's job is a batch of them, linked through next. */
struct job {
	struct job *next;
	uint64_t end;
	/* the chunk's bytes: in place in seg (a reference held) when the
	 * chunk lies in one segment, else copied into buf */
	const uint8_t *data;
	size_t size;
	struct segment *seg;
	struct ca_buf buf;
	bool held; /* seg or buf not given back yet */
	struct segment *known; /* a run of known chunks (end = where it starts): only indexed */
	uint8_t id[CA_CHUNK_ID_SIZE];
};

/* A worker's own: the codec (digest, zstd context) and its output buffer. */
struct worker {
	struct ca_codec *codec;
	struct ca_buf cbuf;
};

struct ca_maker {
	struct ca_make_opts o;
	struct ca_chunker chunker;
	struct ca_store_writer *store; /* o.store_writer, or our own local one */
	struct ca_index_writer *index;
	struct ca_digest *stream_digest;
	struct segment *cur; /* being filled by feed */
	uint64_t fed;

	pthread_mutex_t lock;
	/* one condition per kind of waiter, so a finished chunk does not wake everyone */
	pthread_cond_t feed_cond;    /* feeder: a segment was freed */
	pthread_cond_t chunker_cond; /* chunker: a segment arrived, or job memory was freed */
	pthread_cond_t digest_cond;  /* digest: a segment arrived */
	struct segment *cq_head, *cq_tail, *dq_head, *dq_tail;
	struct segment *spare_segs;  /* freed segments, reused so their pages stay mapped */
	unsigned live_segs;
	struct ca_workq *q;          /* the chunks: hashed, compressed, stored; index in order */
	struct ca_buf *spare_bufs; /* recycled chunk buffers, so big chunks don't fault in fresh pages */
	size_t n_spare, cap_spare;
	bool input_done;
	bool digest_partial; /* known chunks were fed: no stream digest */
	int err;
	const char *err_path; /* what err is about: o.store_path, o.index_path or NULL */
	struct ca_make_stats stats;

	pthread_t chunker_thread, digest_thread;
	bool chunker_started, digest_started;
};

static bool cancelled(const struct ca_maker *m)
{
	return m->o.cancel && *m->o.cancel;
}

static void wake_all(struct ca_maker *m)
{
	pthread_cond_broadcast(&m->feed_cond);
	pthread_cond_broadcast(&m->chunker_cond);
	pthread_cond_broadcast(&m->digest_cond);
}

static void fail_locked(struct ca_maker *m, int r)
{
	if (!m->err) /* atomic: the chunker peeks at err without the lock */
		__atomic_store_n(&m->err, r, __ATOMIC_RELAXED);
	wake_all(m);
}

static void seg_unref_locked(struct ca_maker *m, struct segment *s)
{
	if (--s->refs == 0) {
		s->next_c = m->spare_segs;
		m->spare_segs = s;
		m->live_segs--;
		pthread_cond_signal(&m->feed_cond);
	}
}

static void *digest_main(void *arg)
{
	struct ca_maker *m = arg;
	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (!m->dq_head && !m->input_done && !m->err)
			pthread_cond_wait(&m->digest_cond, &m->lock);
		struct segment *s = m->dq_head;
		if (!s || m->err)
			break;
		m->dq_head = s->next_d;
		if (!m->dq_head)
			m->dq_tail = NULL;
		pthread_mutex_unlock(&m->lock);
		int r = ca_digest_update(m->stream_digest, s->data, s->size);
		pthread_mutex_lock(&m->lock);
		if (r < 0)
			fail_locked(m, r);
		seg_unref_locked(m, s);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* A chunk is complete: its job, either in place (seg, data, size: the
 * segment gets one more reference) or as the bytes gathered in acc (seg
 * NULL). Called with the lock held; NULL when out of memory. */
static struct job *emit_locked(struct ca_maker *m, struct ca_buf *acc, struct segment *seg, const uint8_t *data,
                               size_t size, uint64_t end)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		fail_locked(m, -ENOMEM);
		return NULL;
	}
	j->end = end;
	j->held = true;
	if (seg) {
		seg->refs++;
		j->seg = seg;
		j->data = data;
		j->size = size;
	} else {
		j->buf = *acc;
		j->data = j->buf.data;
		j->size = j->buf.size;
		*acc = (struct ca_buf)CA_BUF_INIT;
		if (m->n_spare)
			*acc = m->spare_bufs[--m->n_spare];
		acc->size = 0;
	}
	m->stats.chunks++;
	return j;
}

/* Under the lock: give back what the job holds of the input (idempotent). */
static void job_release_locked(struct ca_maker *m, struct job *j)
{
	if (!j->held)
		return;
	j->held = false;
	if (j->seg)
		seg_unref_locked(m, j->seg);
	else if (m->n_spare < m->cap_spare)
		m->spare_bufs[m->n_spare++] = j->buf;
	else
		ca_buf_release(&j->buf);
	j->buf = (struct ca_buf)CA_BUF_INIT;
	j->seg = NULL;
}

/* The chunker's batch being gathered. */
struct batch {
	struct job *head, *tail;
	size_t n, bytes;
};

/* Hand the batch to the workers (lock not held): blocks while the queue
 * holds its bound; a refused batch (an error stopped the queue) is freed. */
static void submit(struct ca_maker *m, struct batch *b)
{
	struct job *j = b->head;
	int r = j ? ca_workq_submit(m->q, j, b->bytes) : 0;
	*b = (struct batch){ 0 };
	if (r < 0) {
		pthread_mutex_lock(&m->lock);
		fail_locked(m, r);
		for (struct job *k = j; k; k = k->next)
			job_release_locked(m, k);
		pthread_mutex_unlock(&m->lock);
		while (j) {
			struct job *next = j->next;
			free(j->known);
			free(j);
			j = next;
		}
	}
}

/* Add a chunk to the batch, handing it over when full. */
static void add(struct ca_maker *m, struct batch *b, struct job *j)
{
	if (b->tail)
		b->tail->next = j;
	else
		b->head = j;
	b->tail = j;
	b->n++;
	b->bytes += j->size;
	if (b->n >= BATCH_CHUNKS || b->bytes >= BATCH_BYTES)
		submit(m, b);
}

static void *chunker_main(void *arg)
{
	struct ca_maker *m = arg;
	struct ca_buf acc = CA_BUF_INIT;
	struct batch batch = { 0 };
	uint64_t pos = 0; /* stream offset of the end of acc */
	int r;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (!m->cq_head && !m->input_done && !m->err)
			pthread_cond_wait(&m->chunker_cond, &m->lock);
		struct segment *s = m->cq_head;
		if (m->err || !s)
			break;
		m->cq_head = s->next_c;
		if (!m->cq_head)
			m->cq_tail = NULL;
		if (s->known) {
			/* the caller's claim that the bytes before end at a cut is
			 * checked here: a wrong one would shift every chunk after */
			struct job *j = NULL;
			if (ca_chunker_pending(&m->chunker) != 0 || acc.size != 0) {
				fail_locked(m, -EIO);
			} else if (!(j = calloc(1, sizeof(*j)))) {
				fail_locked(m, -ENOMEM);
			} else {
				*j = (struct job){ .end = pos, .known = s };
				const uint64_t *sizes = (const uint64_t *)s->data;
				for (size_t i = 0; i < s->known_n; i++)
					pos += sizes[i];
				m->stats.chunks += s->known_n;
				m->stats.chunks_known += s->known_n;
				m->stats.bytes_known += pos - j->end;
				s = NULL; /* the job's now */
			}
			free(s);
			pthread_mutex_unlock(&m->lock);
			/* a run goes alone, after the batch before it: done calls
			 * come in order, so the index stays in stream order */
			submit(m, &batch);
			if (j) {
				add(m, &batch, j);
				submit(m, &batch);
			}
			pthread_mutex_lock(&m->lock);
			continue;
		}
		pthread_mutex_unlock(&m->lock);

		/* a chunk that begins and ends in this segment is hashed and
		 * compressed where it lies; only one that spans segments is
		 * gathered (copied) in acc */
		size_t off = 0;
		while (off < s->size && !__atomic_load_n(&m->err, __ATOMIC_RELAXED)) {
			size_t k = ca_chunker_scan(&m->chunker, s->data + off, s->size - off);
			bool cut = k != CA_CHUNKER_NO_CUT, in_place = cut && acc.size == 0;
			if (!cut)
				k = s->size - off;
			r = in_place ? 0 : ca_buf_append(&acc, s->data + off, k, CA_CHUNK_SIZE_LIMIT_MAX);
			off += k;
			pos += k;
			if (cut || r < 0) {
				struct job *j = NULL;
				pthread_mutex_lock(&m->lock);
				if (r < 0)
					fail_locked(m, r);
				else if (in_place)
					j = emit_locked(m, NULL, s, s->data + off - k, k, pos);
				else
					j = emit_locked(m, &acc, NULL, NULL, 0, pos);
				pthread_mutex_unlock(&m->lock);
				if (j)
					add(m, &batch, j);
			}
		}
		/* not held while waiting for input: its chunks hold segments */
		submit(m, &batch);
		pthread_mutex_lock(&m->lock);
		seg_unref_locked(m, s);
	}
	struct job *last = !m->err && acc.size > 0 ? emit_locked(m, &acc, NULL, NULL, 0, pos) : NULL;
	pthread_mutex_unlock(&m->lock);
	if (last)
		add(m, &batch, last);
	submit(m, &batch);
	ca_buf_release(&acc);
	return NULL;
}

static int store_chunk(struct ca_maker *m, struct ca_codec *codec, struct ca_buf *cbuf, struct job *j, bool *ret_new)
{
	int r = ca_store_writer_has(m->store, j->id);
	*ret_new = false;
	if (r != 0)
		return r < 0 ? r : 0;
	r = ca_codec_compress(codec, j->data, j->size, cbuf);
	if (r < 0)
		return r;
	r = ca_store_writer_put(m->store, codec, j->id, cbuf->data, cbuf->size);
	if (r < 0)
		return r;
	*ret_new = r > 0;
	return 0;
}

static int worker_init(void *qdata, void **ret)
{
	struct ca_maker *m = qdata;
	struct worker *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cbuf = (struct ca_buf)CA_BUF_INIT;
	int r = ca_codec_new(ca_digest_type_from_flags(m->o.feature_flags), &w->codec);
	if (r == 0 && m->o.compression != CA_COMPRESSION_NONE)
		r = ca_codec_set_compression(w->codec, m->o.compression);
	if (r < 0) {
		ca_codec_free(w->codec);
		free(w);
		return r;
	}
	*ret = w;
	return 0;
}

static void worker_fini(void *qdata, void *wdata)
{
	struct worker *w = wdata;
	(void)qdata;
	ca_buf_release(&w->cbuf);
	ca_codec_free(w->codec);
	free(w);
}

/* A worker: hash the batch's chunks (together), and compress and store
 * each that is new. */
static int worker_run(void *qdata, void *wdata, void *arg)
{
	struct ca_maker *m = qdata;
	struct worker *w = wdata;
	struct ca_sha512mb_msg msgs[BATCH_CHUNKS];
	size_t n = 0;
	int r = 0;

	for (struct job *j = arg; j; j = j->next)
		if (!j->known)
			msgs[n++] = (struct ca_sha512mb_msg){ .data = j->data, .size = j->size, .out = j->id };
	r = cancelled(m) ? -ECANCELED : ca_digest_many(ca_codec_digest(w->codec), msgs, n);
	for (struct job *j = arg; j; j = j->next) {
		bool is_new = false;
		if (r == 0 && m->store && !j->known) /* a known run is stored already */
			r = store_chunk(m, w->codec, &w->cbuf, j, &is_new);
		pthread_mutex_lock(&m->lock);
		if (is_new) {
			m->stats.chunks_new++;
			m->stats.bytes_stored += w->cbuf.size;
		}
		/* the input back now, not when the index gets to it */
		job_release_locked(m, j);
		pthread_mutex_unlock(&m->lock);
	}
	if (r < 0) {
		pthread_mutex_lock(&m->lock);
		if (!m->err)
			m->err_path = m->o.store_path; /* hashing cannot fail but for ENOMEM */
		fail_locked(m, r);
		pthread_mutex_unlock(&m->lock);
	}
	return r;
}

/* In stream order, one at a time: the batch's index entries. */
static void worker_done(void *qdata, void *arg, int r)
{
	struct ca_maker *m = qdata;
	struct job *j = arg;
	pthread_mutex_lock(&m->lock);
	for (struct job *k = j; k; k = k->next)
		job_release_locked(m, k); /* a batch dropped unrun still holds its input */
	if (r < 0 && !m->err)
		m->err_path = m->o.store_path;
	if (r < 0)
		fail_locked(m, r);
	bool add = m->index && !m->err;
	pthread_mutex_unlock(&m->lock);
	/* the index writer is the done calls' alone: they never overlap */
	for (; j; ) {
		if (add && j->known) {
			const uint64_t *sizes = (const uint64_t *)j->known->data;
			const uint8_t(*ids)[CA_CHUNK_ID_SIZE] = (const void *)(sizes + j->known->known_n);
			uint64_t end = j->end;
			r = 0;
			for (size_t i = 0; r == 0 && i < j->known->known_n; i++) {
				end += sizes[i];
				r = ca_index_writer_add(m->index, end, ids[i]);
			}
		} else if (add) {
			r = ca_index_writer_add(m->index, j->end, j->id);
		}
		if (add && r < 0) {
			pthread_mutex_lock(&m->lock);
			if (!m->err)
				m->err_path = m->o.index_path;
			fail_locked(m, r);
			pthread_mutex_unlock(&m->lock);
			add = false;
		}
		struct job *next = j->next;
		free(j->known);
		free(j);
		j = next;
	}
}

static const struct ca_workq_ops worker_ops = {
	.init = worker_init, .fini = worker_fini, .run = worker_run, .done = worker_done,
};

int ca_maker_new(const struct ca_make_opts *o, struct ca_maker **ret)
{
	struct ca_maker *m = calloc(1, sizeof(*m));
	int r;
	if (!m)
		return -ENOMEM;
	m->o = *o;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->feed_cond, NULL);
	pthread_cond_init(&m->chunker_cond, NULL);
	pthread_cond_init(&m->digest_cond, NULL);
	r = ca_chunker_init(&m->chunker, o->chunk_min, o->chunk_avg, o->chunk_max);
	if (r < 0)
		goto fail;
	r = ca_digest_new(ca_digest_type_from_flags(o->feature_flags), &m->stream_digest);
	if (r < 0)
		goto fail;
	if (o->store_writer)
		m->store = o->store_writer;
	else if (o->store_path && o->store_crypt) {
		struct ca_store *st;
		r = ca_store_open(o->store_path, &st);
		if (r == 0 && (r = ca_store_set_crypt(st, o->store_crypt)) < 0)
			ca_store_free(st);
		if (r == 0)
			r = ca_store_writer_wrap_local(st, o->store_path, &m->store);
		if (r < 0)
			goto fail;
	} else if (o->store_path && (r = ca_store_writer_open_local(o->store_path, &m->store)) < 0)
		goto fail;
	if (o->index_path &&
	    (r = ca_index_writer_open(o->index_path, o->feature_flags, o->chunk_min, o->chunk_avg, o->chunk_max,
	                              o->index_mode, &m->index)) < 0)
		goto fail;

	unsigned n = o->threads;
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (unsigned)c : 1;
	}
	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	/* a few chunks queued per worker keep them busy; more only cost
	 * memory, and buffers beyond the spares would be allocated and grown
	 * afresh (page faults, reallocs) for every chunk */
	struct ca_workq_opts qo = {
		.workers = n, .max_jobs = JOBS_PER_WORKER * n, .max_cost = MAX_JOB_BYTES, .ordered = true,
		.stop_on_error = true,
	};
	m->cap_spare = qo.max_jobs + 1;
	m->spare_bufs = calloc(m->cap_spare, sizeof(*m->spare_bufs));
	if (!m->spare_bufs) {
		r = -ENOMEM;
		goto fail;
	}
	if ((r = ca_workq_new(&worker_ops, m, &qo, &m->q)) < 0)
		goto fail;
	if ((r = ca_thread_create(&m->digest_thread, digest_main, m)) < 0)
		goto fail;
	m->digest_started = true;
	if ((r = ca_thread_create(&m->chunker_thread, chunker_main, m)) < 0)
		goto fail;
	m->chunker_started = true;
	*ret = m;
	return 0;
fail:
	ca_maker_free(m);
	return r;
}

/* Queue s for the chunker and wake it (lock held): the one way in for
 * both kinds of segment, data (push_segment) and known chunks. */
static void cq_append_locked(struct ca_maker *m, struct segment *s)
{
	if (m->cq_tail)
		m->cq_tail->next_c = s;
	else
		m->cq_head = s;
	m->cq_tail = s;
	pthread_cond_signal(&m->chunker_cond);
}

static int push_segment(struct ca_maker *m)
{
	struct segment *s = m->cur;
	m->cur = NULL;
	s->refs = 2;
	pthread_mutex_lock(&m->lock);
	cq_append_locked(m, s);
	if (m->dq_tail)
		m->dq_tail->next_d = s;
	else
		m->dq_head = s;
	m->dq_tail = s;
	pthread_cond_signal(&m->digest_cond);
	int r = m->err;
	pthread_mutex_unlock(&m->lock);
	return r;
}

/* Make sure there is a segment with room to fill, waiting for the
 * pipeline to drain when it holds its bound. */

static int seg_ensure(struct ca_maker *m)
{
	if (cancelled(m)) {
		pthread_mutex_lock(&m->lock);
		fail_locked(m, -ECANCELED);
		pthread_mutex_unlock(&m->lock);
	}
	if (m->cur)
		return __atomic_load_n(&m->err, __ATOMIC_RELAXED);
	pthread_mutex_lock(&m->lock);
	while (m->live_segs >= MAX_SEGS && !m->err)
		pthread_cond_wait(&m->feed_cond, &m->lock);
	int r = m->err;
	if (!r) {
		m->live_segs++;
		m->cur = m->spare_segs;
		if (m->cur)
			m->spare_segs = m->cur->next_c;
	}
	pthread_mutex_unlock(&m->lock);
	if (r)
		return r;
	if (!m->cur)
		m->cur = malloc(sizeof(struct segment) + SEG_SIZE);
	if (!m->cur) {
		pthread_mutex_lock(&m->lock);
		m->live_segs--;
		pthread_mutex_unlock(&m->lock);
		return -ENOMEM;
	}
	m->cur->next_c = m->cur->next_d = NULL;
	m->cur->size = 0;
	m->cur->known = false;
	return 0;
}

/* Account k bytes just placed in the current segment; ship it when full. */
static int seg_filled(struct ca_maker *m, size_t k)
{
	m->cur->size += k;
	m->fed += k;
	if (m->cur->size < SEG_SIZE)
		return 0;
	int r = push_segment(m);
	if (r == 0 && m->o.progress)
		m->o.progress(m->o.progress_userdata, m->fed);
	return r;
}

int ca_maker_feed(struct ca_maker *m, const void *p, size_t n)
{
	const uint8_t *q = p;
	while (n > 0) {
		int r = seg_ensure(m);
		if (r)
			return r;
		size_t k = SEG_SIZE - m->cur->size;
		if (k > n)
			k = n;
		memcpy(m->cur->data + m->cur->size, q, k);
		q += k;
		n -= k;
		r = seg_filled(m, k);
		if (r)
			return r;
	}
	return 0;
}

int ca_maker_feed_known(struct ca_maker *m, const uint8_t (*ids)[CA_CHUNK_ID_SIZE], const uint64_t *sizes, size_t n)
{
	int r = cancelled(m) ? -ECANCELED : 0;
	if (r == 0 && m->cur && m->cur->size > 0)
		r = push_segment(m); /* the bytes before go first */
	if (r || n == 0)
		return r;
	if (n > SIZE_MAX / 2 / (sizeof(uint64_t) + CA_CHUNK_ID_SIZE))
		return -ENOMEM;
	struct segment *s = malloc(sizeof(*s) + n * (sizeof(uint64_t) + CA_CHUNK_ID_SIZE));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->known = true;
	s->known_n = n;
	s->refs = 1;
	uint64_t size = 0;
	for (size_t i = 0; i < n; i++)
		size += sizes[i];
	memcpy(s->data, sizes, n * sizeof(uint64_t));
	memcpy(s->data + n * sizeof(uint64_t), ids, n * CA_CHUNK_ID_SIZE);
	pthread_mutex_lock(&m->lock);
	/* not a live segment (it holds no data): only the chunker sees it */
	cq_append_locked(m, s);
	m->digest_partial = true;
	r = m->err;
	pthread_mutex_unlock(&m->lock);
	m->fed += size;
	if (r == 0 && m->o.progress)
		m->o.progress(m->o.progress_userdata, m->fed);
	return r;
}

int ca_maker_has(struct ca_maker *m, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	return m->store ? ca_store_writer_has(m->store, id) : 0;
}

int ca_maker_feed_fd(struct ca_maker *m, int fd)
{
	for (;;) {
		/* read straight into the segment: no bounce buffer */
		int r = seg_ensure(m);
		if (r)
			return r;
		ssize_t k = read(fd, m->cur->data + m->cur->size, SEG_SIZE - m->cur->size);
		if (k < 0 && errno == EINTR)
			continue; /* seg_ensure looks at the cancel flag */
		if (k < 0)
			return -errno;
		if (k == 0)
			return 0;
		r = seg_filled(m, k);
		if (r)
			return r;
	}
}

/* The chunker and the digest thread gone, every chunk completed. */
static void join_all(struct ca_maker *m)
{
	if (m->chunker_started)
		pthread_join(m->chunker_thread, NULL);
	if (m->digest_started)
		pthread_join(m->digest_thread, NULL);
	m->chunker_started = m->digest_started = false;
	if (m->q)
		(void)ca_workq_drain(m->q); /* errors reach m->err through the done calls */
}

int ca_maker_finish(struct ca_maker *m, uint8_t ret_digest[CA_CHUNK_ID_SIZE], struct ca_make_stats *ret_stats)
{
	int r = cancelled(m) ? -ECANCELED : 0;
	if (r == 0 && m->cur && m->cur->size > 0)
		r = push_segment(m);
	pthread_mutex_lock(&m->lock);
	if (r)
		fail_locked(m, r);
	m->input_done = true;
	wake_all(m);
	pthread_mutex_unlock(&m->lock);
	join_all(m);
	r = m->err;
	if (r == 0 && m->digest_partial)
		memset(ret_digest, 0, CA_CHUNK_ID_SIZE);
	else if (r == 0)
		r = ca_digest_final(m->stream_digest, ret_digest);
	m->stats.digest_partial = m->digest_partial;
	/* the chunks reach the disk before the index that names them: one
	 * syncfs for the store rather than an fsync per chunk */
	if (r == 0 && m->store && m->index) {
		uint64_t skipped = 0, skipped_bytes = 0;
		r = ca_store_writer_finish(m->store, &skipped, &skipped_bytes);
		if (r < 0)
			m->err_path = m->o.store_path;
		m->stats.chunks_new -= skipped < m->stats.chunks_new ? skipped : m->stats.chunks_new;
		m->stats.bytes_stored -= skipped_bytes < m->stats.bytes_stored ? skipped_bytes : m->stats.bytes_stored;
	}
	if (r == 0 && m->index) {
		r = ca_index_writer_commit(m->index);
		m->index = NULL;
		if (r < 0)
			m->err_path = m->o.index_path;
	}
	m->stats.bytes = m->fed;
	if (ret_stats)
		*ret_stats = m->stats;
	if (m->o.progress)
		m->o.progress(m->o.progress_userdata, m->fed);
	return r;
}

const char *ca_maker_error_path(struct ca_maker *m)
{
	pthread_mutex_lock(&m->lock);
	const char *p = m->err_path;
	pthread_mutex_unlock(&m->lock);
	return p;
}

void ca_maker_free(struct ca_maker *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	fail_locked(m, -ECANCELED);
	m->input_done = true;
	pthread_mutex_unlock(&m->lock);
	if (m->q)
		ca_workq_cancel(m->q, -ECANCELED); /* a chunker waiting in submit gives up */
	join_all(m);
	(void)ca_workq_free(m->q); /* every job completed: none left holding a segment */
	free(m->cur);
	while (m->cq_head) { /* segments nobody consumed */
		struct segment *s = m->cq_head;
		m->cq_head = s->next_c;
		if (--s->refs == 0)
			free(s);
	}
	while (m->dq_head) {
		struct segment *s = m->dq_head;
		m->dq_head = s->next_d;
		if (--s->refs == 0)
			free(s);
	}
	while (m->spare_segs) {
		struct segment *s = m->spare_segs;
		m->spare_segs = s->next_c;
		free(s);
	}
	for (size_t i = 0; i < m->n_spare; i++)
		ca_buf_release(&m->spare_bufs[i]);
	free(m->spare_bufs);
	ca_index_writer_abort(m->index);
	if (m->store != m->o.store_writer)
		ca_store_writer_free(m->store);
	ca_digest_free(m->stream_digest);
	pthread_cond_destroy(&m->feed_cond);
	pthread_cond_destroy(&m->chunker_cond);
	pthread_cond_destroy(&m->digest_cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
