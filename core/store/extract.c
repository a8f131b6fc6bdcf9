/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extract.c - parallel blob extraction. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/digest.h"
#include "format/feature.h"
#include "base/condwait.h"
#include "store/extract.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/workq.h"

#define MAX_WORKERS 64
#define PROGRESS_STEP (8u << 20)
/* Chunks asked for ahead of the workers, so remote stores keep several
 * transfers in flight whatever -j is (a no-op for local stores). */
#define PREFETCH_AHEAD 32
/* Chunks queued for the workers: no memory behind them (a job is an
 * index), and a deep queue wakes the submitting thread less often. */
#define QUEUE_JOBS 256

struct extract_job {
	struct ca_index *idx;
	struct ca_chunksrc *src;
	const struct ca_extract_opts *o;
	int fd;
	bool seq_out; /* not seekable: write in order */
	bool holes;   /* unwritten ranges read as zeros (a fresh regular file), so zeros need no write */
	bool regular; /* a regular file: chunks may be cloned into it */
	uint8_t zero_id[CA_CHUNK_ID_SIZE]; /* id of a max-size run of zeros */
	uint64_t zero_size;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* a chunk is done (for waiters > 0), or an error */
	unsigned waiters;    /* workers waiting in cond for another's chunk */
	size_t next_write;  /* sequential output: next chunk to write */
	uint64_t written, reported;
	int err;
	bool err_logged; /* the first error was a chunk's, and is reported */

	/* Repeated chunks are copied from where the output already holds them
	 * instead of being fetched again (as casync seeds from its own output).
	 * NULL when off (sequential output, or no memory). */
	uint32_t *first_slots; /* open addressing: 1 + index of a first occurrence, 0 = empty */
	size_t slot_mask;
	uint8_t *done;         /* per chunk, under lock: its bytes are in the output */
};

static size_t slot_of(const uint8_t *id, size_t mask)
{
	uint64_t h;
	memcpy(&h, id, sizeof(h)); /* ids are digests: already uniform */
	return (size_t)h & mask;
}

/* The first chunk with chunk i's id (i itself when it is the first). */
static size_t first_of(const struct extract_job *x, size_t i)
{
	uint64_t start, end;
	const uint8_t *id, *other;
	ca_index_chunk(x->idx, i, &start, &end, &id);
	for (size_t k = slot_of(id, x->slot_mask);; k = (k + 1) & x->slot_mask) {
		uint32_t v = x->first_slots[k];
		if (v == 0)
			return i;
		ca_index_chunk(x->idx, v - 1, &start, &end, &other);
		if (!memcmp(id, other, CA_CHUNK_ID_SIZE))
			return v - 1;
	}
}

static void dedup_setup(struct extract_job *x)
{
	size_t n = ca_index_n_chunks(x->idx), cap = 16;
	if (x->seq_out || n < 2 || n >= UINT32_MAX / 2)
		return;
	while (cap < 2 * n)
		cap *= 2;
	x->first_slots = calloc(cap, sizeof(uint32_t));
	x->done = calloc(n, 1);
	if (!x->first_slots || !x->done) {
		free(x->first_slots);
		free(x->done);
		x->first_slots = NULL;
		x->done = NULL;
		return;
	}
	x->slot_mask = cap - 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t start, end;
		const uint8_t *id, *other;
		ca_index_chunk(x->idx, i, &start, &end, &id);
		for (size_t k = slot_of(id, x->slot_mask);; k = (k + 1) & x->slot_mask) {
			uint32_t v = x->first_slots[k];
			if (v == 0) {
				x->first_slots[k] = (uint32_t)i + 1;
				break;
			}
			ca_index_chunk(x->idx, v - 1, &start, &end, &other);
			if (!memcmp(id, other, CA_CHUNK_ID_SIZE))
				break;
		}
	}
}

/* Under the lock: wait for another worker's chunk. The chunk may never
 * come once the cancel flag is set (the queue drops it unrun): look at
 * the flag now and then, and make it the error. */
static void wait_other_locked(struct extract_job *x)
{
	if (!x->o->cancel) {
		pthread_cond_wait(&x->cond, &x->lock);
		return;
	}
	ca_cond_wait_ms(&x->cond, &x->lock, 100);
	if (*x->o->cancel && !x->err)
		x->err = -ECANCELED;
}

/* Chunk i repeats chunk f: wait for f to be in the output and copy it.
 * 0 when done; anything else means "fetch it after all". */
static int copy_repeat(struct extract_job *x, size_t f, uint64_t start, uint64_t len, struct ca_buf *buf)
{
	uint64_t fstart, fend;
	const uint8_t *id;
	ca_index_chunk(x->idx, f, &fstart, &fend, &id);
	pthread_mutex_lock(&x->lock);
	x->waiters++;
	while (!x->done[f] && !x->err)
		wait_other_locked(x);
	x->waiters--;
	bool ready = x->done[f] && !x->err;
	pthread_mutex_unlock(&x->lock);
	if (!ready)
		return -ECANCELED;
	int r = ca_buf_reserve(buf, len, SIZE_MAX);
	if (r < 0)
		return r;
	ssize_t k = ca_pread_full(x->fd, buf->data, len, fstart);
	if (k < 0 || (uint64_t)k != len)
		return -EIO;
	return x->holes ? ca_pwrite_sparse(x->fd, buf->data, len, start) : ca_pwrite_all(x->fd, buf->data, len, start);
}

static bool is_zero_chunk(const struct extract_job *x, uint64_t start, uint64_t end, const uint8_t *id)
{
	return !x->seq_out && end - start == x->zero_size && !memcmp(id, x->zero_id, CA_CHUNK_ID_SIZE);
}

static void prefetch(struct extract_job *x, size_t i)
{
	uint64_t start, end;
	const uint8_t *id;
	if (i >= ca_index_n_chunks(x->idx))
		return;
	ca_index_chunk(x->idx, i, &start, &end, &id);
	if (!is_zero_chunk(x, start, end, id) && (!x->first_slots || first_of(x, i) == i))
		ca_chunksrc_prefetch(x->src, id);
}

static int worker_init(void *qdata, void **ret)
{
	struct ca_buf *b = malloc(sizeof(*b)); /* where a repeat is copied through */
	(void)qdata;
	if (!b)
		return -ENOMEM;
	*b = (struct ca_buf)CA_BUF_INIT;
	*ret = b;
	return 0;
}

static void worker_fini(void *qdata, void *wdata)
{
	(void)qdata;
	ca_buf_release(wdata);
	free(wdata);
}

/* A worker: chunk i (the job) into the output. The chunks are taken in
 * order (the queue is FIFO), so a chunk this one waits for (the one it
 * repeats, the one written before it) is already some worker's. */
static int worker_run(void *qdata, void *wdata, void *job)
{
	struct extract_job *x = qdata;
	struct ca_buf *copy_buf = wdata;
	size_t i = (size_t)(uintptr_t)job;
	uint64_t start, end;
	const uint8_t *id;
	const struct ca_chunk *c = NULL;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	r = x->err;
	pthread_mutex_unlock(&x->lock);
	if (r < 0)
		return r;
	ca_index_chunk(x->idx, i, &start, &end, &id);
	bool zero = is_zero_chunk(x, start, end, id);
	if (!zero && x->first_slots) {
		size_t f = first_of(x, i);
		if (f != i && copy_repeat(x, f, start, end - start, copy_buf) == 0)
			zero = true; /* nothing left to do for it */
	}
	if (!zero && x->o->clone && x->regular && !x->seq_out) {
		r = x->o->clone(x->o->clone_userdata, id, end - start, x->fd, start);
		zero = r > 0; /* in place: nothing to fetch */
		if (r > 0)
			r = 0;
	}
	if (!zero && r == 0) {
		r = ca_chunksrc_get(x->src, id, end - start, &c);
		if (r < 0) {
			/* one line for the user: only the first failure is reported */
			pthread_mutex_lock(&x->lock);
			bool first = !x->err;
			if (first) {
				x->err = r;
				x->err_logged = true;
			}
			pthread_mutex_unlock(&x->lock);
			char hex[2 * CA_CHUNK_ID_SIZE + 1];
			ca_id_to_hex(id, hex);
			if (first && r == -ENOENT)
				ca_log_error("chunk %s: not found in any store", hex);
			else if (first)
				ca_log_error_errno(r, "chunk %s", hex);
		}
	}
	if (r == 0 && c && x->seq_out) {
		pthread_mutex_lock(&x->lock);
		x->waiters++;
		while (x->next_write != i && !x->err)
			wait_other_locked(x);
		x->waiters--;
		pthread_mutex_unlock(&x->lock);
		if (!x->err)
			r = ca_write_all(x->fd, c->data, c->size);
	} else if (r == 0 && c) {
		/* zero blocks of a fresh file stay holes, as casync punches them */
		r = x->holes ? ca_pwrite_sparse(x->fd, c->data, c->size, start)
		             : ca_pwrite_all(x->fd, c->data, c->size, start);
	}
	ca_chunksrc_put(x->src, c);

	pthread_mutex_lock(&x->lock);
	if (r < 0 && !x->err)
		x->err = r;
	if (r == 0 && x->done)
		x->done[i] = 1;
	x->next_write++;
	x->written += end - start;
	bool report = x->o->progress && x->written - x->reported >= PROGRESS_STEP;
	if (report)
		x->reported = x->written;
	uint64_t w = x->written;
	/* only workers waiting for a chunk care */
	if (x->waiters || r < 0)
		pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
	if (report)
		x->o->progress(x->o->progress_userdata, w);
	return r;
}

static const struct ca_workq_ops worker_ops = { .init = worker_init, .fini = worker_fini, .run = worker_run };

/* Hand every chunk to the workers, in order, hinting the chunk source
 * PREFETCH_AHEAD chunks ahead of each: before that chunk is handed out,
 * or it would be downloaded a second time. Then wait for them all. */
static int run_workers(struct extract_job *x, unsigned n)
{
	struct ca_workq *q = NULL;
	struct ca_workq_opts qo = {
		.workers = n, .max_jobs = QUEUE_JOBS, .stop_on_error = true, .cancel = x->o->cancel,
	};
	size_t n_chunks = ca_index_n_chunks(x->idx);
	int r = ca_workq_new(&worker_ops, x, &qo, &q);
	if (r < 0)
		return r;
	for (size_t i = 0; i < PREFETCH_AHEAD; i++)
		prefetch(x, i);
	for (size_t i = 0; i < n_chunks && r == 0; i++) {
		prefetch(x, i + PREFETCH_AHEAD);
		r = ca_workq_submit(q, (void *)(uintptr_t)i, 1);
	}
	if (r < 0) { /* a job's error stopped the queue, or a cancel: workers waiting for a chunk give up */
		pthread_mutex_lock(&x->lock);
		if (!x->err)
			x->err = r;
		pthread_cond_broadcast(&x->cond);
		pthread_mutex_unlock(&x->lock);
	}
	r = ca_workq_free(q);
	if (r == -ECANCELED || r == -EBUSY) {
		pthread_mutex_lock(&x->lock);
		if (!x->err)
			x->err = -ECANCELED;
		pthread_cond_broadcast(&x->cond);
		pthread_mutex_unlock(&x->lock);
	}
	return r == -EBUSY ? r : 0;
}

static int extract_fd(struct ca_index *idx, struct ca_chunksrc *src, int fd, bool seq, const struct ca_extract_opts *o,
                      bool *ret_logged)
{
	struct extract_job *x = calloc(1, sizeof(*x));
	unsigned n = o->threads;
	struct stat st;
	int r = 0;

	if (!x)
		return -ENOMEM;
	x->idx = idx;
	x->src = src;
	x->o = o;
	x->fd = fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		free(x);
		return r;
	}
	x->seq_out = seq || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode));
	x->holes = S_ISREG(st.st_mode) && !o->no_holes;
	x->regular = S_ISREG(st.st_mode);
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 2 ? (unsigned)c : 2;
	}
	if (n > MAX_WORKERS)
		n = MAX_WORKERS;

	/* runs of zeros cut at max size all share one id: skip those unread */
	x->zero_size = ca_index_chunk_size_max(idx);
	uint8_t *zeros = calloc(1, x->zero_size);
	struct ca_digest *d = NULL;
	if (!zeros) {
		free(x);
		return -ENOMEM;
	}
	r = ca_digest_new(ca_digest_type_from_flags(ca_index_feature_flags(idx)), &d);
	if (r == 0)
		r = ca_digest_once(d, zeros, x->zero_size, x->zero_id);
	ca_digest_free(d);
	free(zeros);
	if (r < 0) {
		free(x);
		return r;
	}
	/* only a fresh file of the right size is known to read zero where we skip */
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size != ca_index_blob_size(idx))
		x->zero_size = 0;
	if (S_ISBLK(st.st_mode) || o->no_holes)
		x->zero_size = 0;

	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	dedup_setup(x);
	r = run_workers(x, n);
	if (r == -EBUSY) {
		/* a worker is stuck in a call that no flag reaches (a FIFO in the
		 * store, a hung NFS server): the queue left it, and the job it
		 * points to, to the exit that follows a cancel. -EBUSY, as the
		 * archive path says it: the caller must not free src, which the
		 * stuck worker wakes up into when it is freed */
		*ret_logged = true;
		return -EBUSY;
	}
	if (r < 0) {
		pthread_mutex_lock(&x->lock);
		if (!x->err)
			x->err = r;
		pthread_mutex_unlock(&x->lock);
	}
	if (o->progress && !x->err)
		o->progress(o->progress_userdata, x->written);
	pthread_cond_destroy(&x->cond);
	pthread_mutex_destroy(&x->lock);
	free(x->first_slots);
	free(x->done);
	*ret_logged = x->err_logged;
	r = x->err;
	free(x);
	return r;
}

int ca_extract_blob_fd(struct ca_index *idx, struct ca_chunksrc *src, int fd, const struct ca_extract_opts *o)
{
	bool logged;
	return extract_fd(idx, src, fd, false, o, &logged);
}

/* A block device is written in place, as casync does, zeros included; it
 * must hold the image, and what lies beyond it is left alone. */
static int extract_device(struct ca_index *idx, struct ca_chunksrc *src, const char *path,
                          const struct ca_extract_opts *o)
{
	bool logged = false;
	uint64_t size = 0;
	int r = 0;
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY); /* read too: repeats are copied from the output */
	if (fd < 0)
		return ca_log_error_errno(errno, "%s", path);
	if (ioctl(fd, BLKGETSIZE64, &size) < 0)
		r = -errno;
	else if (size < ca_index_blob_size(idx)) {
		ca_log_error("%s: the device (%llu bytes) is smaller than the image (%llu bytes)", path,
		             (unsigned long long)size, (unsigned long long)ca_index_blob_size(idx));
		logged = true;
		r = -ENOSPC;
	}
	if (r == 0)
		r = extract_fd(idx, src, fd, false, o, &logged);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r < 0 && !logged)
		ca_log_error_errno(r, "%s", path);
	return r;
}

/* Standard output gets the blob where a sequential write would put it (as
 * casync's writes do): after what the shell or an earlier writer left,
 * appended under O_APPEND. Random-access writes, with holes for zeros, only
 * where they land at the same place: a block device or an empty regular file
 * at offset 0 (sized first, so skipped zeros read back as zeros); then the
 * offset is moved past the blob, for whoever writes next. */
static int extract_stdout(struct ca_index *idx, struct ca_chunksrc *src, const struct ca_extract_opts *o,
                          bool *ret_logged)
{
	uint64_t size = ca_index_blob_size(idx);
	int fd = STDOUT_FILENO, fl = fcntl(fd, F_GETFL);
	off_t pos = lseek(fd, 0, SEEK_CUR);
	struct stat st;
	bool in_place = fstat(fd, &st) == 0 && fl >= 0 && !(fl & O_APPEND) && pos == 0 &&
	                ((S_ISREG(st.st_mode) && st.st_size == 0) || S_ISBLK(st.st_mode));
	int r = 0;
	*ret_logged = false;
	if (in_place && S_ISREG(st.st_mode) && ftruncate(fd, (off_t)size) < 0)
		r = -errno;
	if (r == 0)
		r = extract_fd(idx, src, fd, !in_place, o, ret_logged);
	if (r == 0 && in_place && lseek(fd, (off_t)size, SEEK_SET) < 0)
		r = -errno;
	return r;
}

int ca_extract_blob(struct ca_index *idx, struct ca_chunksrc *src, const char *path, const struct ca_extract_opts *o)
{
	struct ca_atomic_file f;
	struct stat st;
	bool logged = false;
	int r;
	if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		return extract_device(idx, src, path, o);
	if (!strcmp(path, "-")) {
		r = extract_stdout(idx, src, o, &logged);
		if (r < 0 && !logged)
			ca_log_error_errno(r, "stdout");
		return r;
	}
	r = ca_atomic_file_open(&f, path, 0666);
	if (r < 0)
		return ca_log_error_errno(r, "%s", path);
	if (ftruncate(f.fd, (off_t)ca_index_blob_size(idx)) < 0)
		r = -errno;
	if (r == 0)
		r = extract_fd(idx, src, f.fd, false, o, &logged);
	if (r < 0) {
		ca_atomic_file_abort(&f);
		return logged ? r : ca_log_error_errno(r, "%s", path);
	}
	r = ca_atomic_file_commit(&f);
	if (r < 0)
		return ca_log_error_errno(r, "%s", path);
	return 0;
}
