/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extract.c - parallel blob extraction: workers fetch, decompress and
 * verify chunks; their ordered completions are the one writer. */
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
#include "store/blob.h"
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

/* What a worker left for the writer at chunk i's turn. */
enum slot_kind {
	SLOT_NONE,   /* not run (cancelled), or failed */
	SLOT_SKIP,   /* nothing to write: zeros left as a hole, or cloned in place */
	SLOT_DATA,   /* c holds the chunk's bytes */
	SLOT_REPEAT, /* copy chunk f's bytes from the output, which holds them by then */
};

struct slot {
	enum slot_kind kind;
	const struct ca_chunk *c;
	size_t f;
};

/* Chunks gathered for one write: contiguous in the output. */
#define GATHER_CHUNKS 64
#define GATHER_BYTES ((uint64_t)2 << 20)

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

	/* A job (chunk i) keeps its result in slots[i % QUEUE_JOBS]: the queue
	 * completes in order and holds at most QUEUE_JOBS, so the live jobs are
	 * a run of consecutive chunks and never share a slot. */
	struct slot slots[QUEUE_JOBS];

	/* The writer: the ordered completions, one at a time, in chunk order.
	 * One thread at a time writes the file, in large pwritev calls of
	 * neighbouring chunks; writers racing on one file serialize on its
	 * inode lock in the kernel, spinning. Only the retiring worker
	 * touches these. */
	const struct ca_chunk *gather[GATHER_CHUNKS];
	size_t n_gather;
	uint64_t gather_off, gather_bytes;
	struct ca_buf copy_buf; /* where a repeat is copied through */

	pthread_mutex_t lock; /* err, written, reported */
	uint64_t written, reported;
	int err;
	bool err_logged; /* the first error was a chunk's, and is reported */

	/* Repeated chunks are copied from where the output already holds them
	 * instead of being fetched again (as casync seeds from its own output).
	 * NULL when off (sequential output, or no memory). */
	uint32_t *first_slots; /* open addressing: 1 + index of a first occurrence, 0 = empty */
	size_t slot_mask;
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
	if (!x->first_slots)
		return;
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

static void set_err(struct extract_job *x, int r)
{
	pthread_mutex_lock(&x->lock);
	if (!x->err)
		x->err = r;
	pthread_mutex_unlock(&x->lock);
}

static int get_err(struct extract_job *x)
{
	pthread_mutex_lock(&x->lock);
	int r = x->err;
	pthread_mutex_unlock(&x->lock);
	return r;
}

/* Fetch chunk i (decompressed, verified); the first failure is logged. */
static int fetch(struct extract_job *x, const uint8_t *id, uint64_t size, const struct ca_chunk **ret)
{
	int r = ca_chunksrc_get(x->src, id, size, ret);
	if (r < 0) {
		/* one line for the user: only the first failure is reported */
		pthread_mutex_lock(&x->lock);
		bool first = !x->err;
		if (first) {
			x->err = r;
			x->err_logged = true;
		}
		pthread_mutex_unlock(&x->lock);
		if (first)
			ca_blob_log_chunk_error(NULL, id, r);
	}
	return r;
}

/* A worker: chunk i (the job) made ready for the writer: fetched,
 * decompressed and verified, or found to need no fetch. */
static int worker_run(void *qdata, void *wdata, void *job)
{
	struct extract_job *x = qdata;
	size_t i = (size_t)(uintptr_t)job;
	struct slot *s = &x->slots[i % QUEUE_JOBS];
	uint64_t start, end;
	const uint8_t *id;
	int r = get_err(x);
	(void)wdata;

	if (r < 0)
		return r;
	ca_index_chunk(x->idx, i, &start, &end, &id);
	if (is_zero_chunk(x, start, end, id)) {
		s->kind = SLOT_SKIP;
		return 0;
	}
	if (x->first_slots) {
		size_t f = first_of(x, i);
		if (f != i) {
			s->kind = SLOT_REPEAT;
			s->f = f;
			return 0;
		}
	}
	if (x->o->clone && x->regular && !x->seq_out) {
		r = x->o->clone(x->o->clone_userdata, id, end - start, x->fd, start);
		if (r < 0)
			return r;
		if (r > 0) { /* in place: nothing to fetch */
			s->kind = SLOT_SKIP;
			return 0;
		}
	}
	r = fetch(x, id, end - start, &s->c);
	if (r == 0)
		s->kind = SLOT_DATA;
	return r;
}

/* Write the gathered chunks in one go and let them go. */
static int flush(struct extract_job *x)
{
	struct iovec iov[GATHER_CHUNKS];
	int r = x->n_gather ? get_err(x) : 0;
	for (size_t k = 0; k < x->n_gather; k++)
		iov[k] = (struct iovec){ .iov_base = (void *)x->gather[k]->data, .iov_len = x->gather[k]->size };
	if (r < 0) {
		/* failed already: only let them go */
	} else if (x->seq_out) {
		for (size_t k = 0; k < x->n_gather && r == 0; k++)
			r = ca_write_all(x->fd, iov[k].iov_base, iov[k].iov_len);
	} else {
		/* zero blocks of a fresh file stay holes, as casync punches them */
		r = ca_pwritev_sparse(x->fd, iov, x->n_gather, x->gather_off, x->holes);
	}
	for (size_t k = 0; k < x->n_gather; k++)
		ca_chunksrc_put(x->src, x->gather[k]);
	x->n_gather = 0;
	x->gather_bytes = 0;
	return r;
}

/* Chunk i repeats chunk f, which is in the output by now (written in
 * order, gathered ones flushed first): copy it. A read that fails or
 * comes short means "fetch it after all". */
static int copy_repeat(struct extract_job *x, size_t f, uint64_t start, uint64_t len, const uint8_t *id)
{
	uint64_t fstart, fend;
	const uint8_t *fid;
	const struct ca_chunk *c = NULL;
	ca_index_chunk(x->idx, f, &fstart, &fend, &fid);
	int r = ca_buf_reserve(&x->copy_buf, len, SIZE_MAX);
	if (r < 0)
		return r;
	ssize_t k = ca_pread_full(x->fd, x->copy_buf.data, len, fstart);
	if (k >= 0 && (uint64_t)k == len)
		return x->holes ? ca_pwrite_sparse(x->fd, x->copy_buf.data, len, start)
		                : ca_pwrite_all(x->fd, x->copy_buf.data, len, start);
	r = fetch(x, id, len, &c);
	if (r == 0)
		r = x->holes ? ca_pwrite_sparse(x->fd, c->data, c->size, start) : ca_pwrite_all(x->fd, c->data, c->size, start);
	ca_chunksrc_put(x->src, c);
	return r;
}

/* The writer, called for chunk i after every chunk before it: put it out
 * (or gather it for one write with its neighbours). */
static void writer_done(void *qdata, void *job, int r)
{
	struct extract_job *x = qdata;
	size_t i = (size_t)(uintptr_t)job;
	struct slot *s = &x->slots[i % QUEUE_JOBS];
	uint64_t start, end;
	const uint8_t *id;

	ca_index_chunk(x->idx, i, &start, &end, &id);
	if (r == 0)
		r = get_err(x);
	if (r == 0 && s->kind == SLOT_DATA) {
		if (x->n_gather && (x->n_gather == GATHER_CHUNKS || x->gather_bytes >= GATHER_BYTES ||
		                    x->gather_off + x->gather_bytes != start))
			r = flush(x);
		if (!x->n_gather)
			x->gather_off = start;
		x->gather[x->n_gather++] = s->c;
		x->gather_bytes += s->c->size;
		s->c = NULL;
	} else if (r == 0 && s->kind == SLOT_REPEAT) {
		r = flush(x);
		if (r == 0)
			r = copy_repeat(x, s->f, start, end - start, id);
	}
	ca_chunksrc_put(x->src, s->c); /* a chunk not handed on: an error */
	*s = (struct slot){ 0 };

	pthread_mutex_lock(&x->lock);
	if (r < 0 && !x->err)
		x->err = r;
	x->written += end - start;
	bool report = x->o->progress && x->written - x->reported >= PROGRESS_STEP;
	if (report)
		x->reported = x->written;
	uint64_t w = x->written;
	pthread_mutex_unlock(&x->lock);
	if (report)
		x->o->progress(x->o->progress_userdata, w);
}

static const struct ca_workq_ops worker_ops = { .run = worker_run, .done = writer_done };

/* Hand every chunk to the workers, in order, hinting the chunk source
 * PREFETCH_AHEAD chunks ahead of each: before that chunk is handed out,
 * or it would be downloaded a second time. Then wait for them all. */
static int run_workers(struct extract_job *x, unsigned n)
{
	struct ca_workq *q = NULL;
	struct ca_workq_opts qo = {
		.workers = n, .max_jobs = QUEUE_JOBS, .ordered = true, .stop_on_error = true, .cancel = x->o->cancel,
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
	if (r < 0) /* a job's error stopped the queue, or a cancel */
		set_err(x, r);
	r = ca_workq_free(q);
	if (r == -EBUSY)
		return r; /* the gathered chunks stay with the stuck queue's exit */
	if (r == -ECANCELED)
		set_err(x, -ECANCELED);
	r = flush(x); /* the last chunks, or (after an error) just let go */
	if (r < 0)
		set_err(x, r);
	return 0;
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
	x->copy_buf = (struct ca_buf)CA_BUF_INIT;
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
	pthread_mutex_destroy(&x->lock);
	ca_buf_release(&x->copy_buf);
	free(x->first_slots);
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
