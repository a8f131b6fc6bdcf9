/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* catar_extract_pool.c - extract's worker threads: plain files and directory ends. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catar/catar_extract_int.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/workq.h"

/* What a worker does: make_leaf_direct for a plain file with the payload
 * in memory. Returns 0 or a negative errno (not logged: only the first error is). */
static int run_job(struct job *j)
{
	int fd = openat(j->dfd, j->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, j->create_mode);
	if (fd < 0)
		return -errno;
	int r = j->sparse ? ca_write_sparse(fd, j->data, j->size, 0) : ca_write_all(fd, j->data, j->size);
	/* only a file ending in a hole needs its size set: one syscall per file saved */
	if (r == 0 && j->sparse && ca_sparse_ends_in_hole(j->data, j->size, 0) && ftruncate(fd, (off_t)j->size) < 0)
		r = -errno;
	if (r == 0 && j->chown && fchown(fd, j->uid, j->gid) < 0)
		r = -errno;
	if (r == 0 && j->chmod && fchmod(fd, j->mode) < 0)
		r = -errno;
	if (r == 0 && j->times && futimens(fd, j->ts) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int apply_dir_meta(int fd, const struct dir_meta *m)
{
	if (m->chown && fchown(fd, m->uid, m->gid) < 0)
		return -errno;
	if (fchmod(fd, m->mode) < 0)
		return -errno;
	if (m->times && futimens(fd, m->ts) < 0)
		return -errno;
	return 0;
}

/* Under the lock: a job for t is finished. Returns t when it was the
 * directory's last one and the decoder has left it: the caller then
 * applies its metadata and frees it, outside the lock. */
static struct track *worker_done(struct track *t)
{
	t->pending--;
	return t->pending == 0 && t->left ? t : NULL;
}

/* after an error or an interrupt, queued files are dropped: nothing of
 * them exists yet. Without the pool lock (atomic copies): taking it twice
 * per file made the workers and the decoder queue on it. */
static bool skipping(struct ex *x)
{
	return __atomic_load_n(&x->pool.abort, __ATOMIC_ACQUIRE) || __atomic_load_n(&x->pool_err, __ATOMIC_ACQUIRE) ||
	       (x->o->cancel && *x->o->cancel);
}

static int job_run(void *qdata, void *wdata, void *arg)
{
	struct job *j = arg;
	(void)wdata;
	if (skipping(qdata))
		return 0;
	j->ran = true;
	j->r = run_job(j);
	return 0; /* the pool's first error is p->err, logged once */
}

/* Every job ends here, run or dropped: its directory's count, the
 * directory's metadata when it was the last, the decoder's waits. */
static void job_done(void *qdata, void *arg, int dropped)
{
	struct ex *x = qdata;
	struct pool *p = &x->pool;
	struct job *j = arg;
	bool skip = !j->ran;
	int r = j->ran ? j->r : 0;
	const char *path = j->path;
	(void)dropped;
	pthread_mutex_lock(&p->lock);
	struct track *t = worker_done(j->track);
	if (t) {
		pthread_mutex_unlock(&p->lock);
		skip = skip || r < 0 || skipping(x);
		int k = skip ? 0 : apply_dir_meta(t->fd, &t->meta);
		close(t->fd);
		pthread_mutex_lock(&p->lock);
		if (k < 0 && r == 0) {
			r = k;
			path = t->path;
		}
	}
	if (r < 0 && !p->err && !p->abort) {
		p->err = ca_ex_fail(x, r, path);
		__atomic_store_n(&x->pool_err, p->err, __ATOMIC_RELEASE);
	}
	if (t) {
		free(t->path);
		free(t);
	}
	p->outstanding--;
	/* wake the decoder only when it can go on for a while: waking it
	 * for every finished job costs more than the jobs themselves (room
	 * in the queue is the queue's, woken at half) */
	if (p->waiting && (p->wait_drain ? p->outstanding == 0 : p->wait_track && p->wait_track->pending == 0))
		pthread_cond_signal(&p->done);
	free(j->path);
	j->path = NULL;
	if (p->n_spare[j->cls] < SPARE_PER_CLASS) {
		j->next_spare = p->spare[j->cls];
		p->spare[j->cls] = j;
		p->n_spare[j->cls]++;
	} else {
		free(j);
	}
	pthread_mutex_unlock(&p->lock);
}

static void free_jobs(struct job *j)
{
	while (j) {
		struct job *next = j->next_spare;
		free(j);
		j = next;
	}
}

static unsigned job_class(size_t size)
{
	unsigned c = 0;
	while (c + 1 < JOB_CLASSES && ((size_t)4096 << c) < size)
		c++;
	return c;
}

/* A job with room for size bytes (<= JOB_SIZE_MAX): a spare one of its class, else a new one. */
static struct job *job_take(struct ex *x, size_t size)
{
	unsigned c = job_class(size);
	struct job *j = x->spare[c];
	if (j) {
		x->spare[c] = j->next_spare;
		return j;
	}
	j = malloc(sizeof(*j) + ((size_t)4096 << c));
	if (j)
		j->cls = c;
	return j;
}

static void job_drop(struct ex *x, struct job *j)
{
	free(j->path);
	j->path = NULL;
	j->next_spare = x->spare[j->cls];
	x->spare[j->cls] = j;
}

static bool pool_start(struct ex *x)
{
	static const struct ca_workq_ops ops = { .run = job_run, .done = job_done };
	struct pool *p = &x->pool;
	struct ca_workq_opts qo = { .workers = x->n_threads, .max_jobs = QUEUE_LEN, .max_cost = QUEUE_BYTES };
	if (p->started)
		return p->q != NULL;
	p->started = true;
	if (pthread_mutex_init(&p->lock, NULL) != 0)
		return false;
	if (pthread_cond_init(&p->done, NULL) != 0) {
		pthread_mutex_destroy(&p->lock);
		return false;
	}
	if (ca_workq_new(&ops, x, &qo, &p->q) < 0) {
		p->q = NULL;
		pthread_cond_destroy(&p->done);
		pthread_mutex_destroy(&p->lock);
		return false;
	}
	return true;
}

/* Finish (or, with abort, drop) every queued job and join the workers:
 * before any directory fd closes. Returns the workers' first error. */
int ca_ex_pool_stop(struct ex *x, bool abort)
{
	struct pool *p = &x->pool;
	if (!p->q)
		return 0;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->abort, abort, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->lock);
	(void)ca_workq_free(p->q); /* every job done (dropped ones too), workers joined */
	p->q = NULL;
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	for (unsigned c = 0; c < JOB_CLASSES; c++) {
		free_jobs(p->spare[c]);
		free_jobs(x->spare[c]);
		p->spare[c] = x->spare[c] = NULL;
	}
	return p->err;
}

/* Under the lock: the workers' first error, after the jobs for files
 * in d (if any) are done. d's track is then the caller's to free. */
int ca_ex_pool_wait_dir_locked(struct pool *p, struct dir *d)
{
	while (d->track && d->track->pending) {
		p->waiting = true;
		p->wait_track = d->track;
		pthread_cond_wait(&p->done, &p->lock);
		p->wait_track = NULL;
		p->waiting = false;
	}
	return p->err;
}

/* Every queued file and directory finished: the workers' first error. */
int ca_ex_pool_drain(struct pool *p)
{
	if (!p->q)
		return 0;
	pthread_mutex_lock(&p->lock);
	while (p->outstanding) {
		p->waiting = p->wait_drain = true;
		pthread_cond_wait(&p->done, &p->lock);
		p->waiting = p->wait_drain = false;
	}
	int r = p->err;
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* A file a worker can make: small, plain, in a directory we created. */
bool ca_ex_job_eligible(const struct ex *x, const struct ca_catar_node *n, const struct dir *p)
{
	if (!x->n_threads || !p->fresh || p->projinherit || !S_ISREG(n->mode) || n->payload_size > JOB_SIZE_MAX)
		return false;
	return ca_ex_plain_meta(x, n);
}

/* Read the payload into a job and queue it. Returns 0, 1 when there is
 * no pool (the caller does the file itself), or a negative errno. */
int ca_ex_submit_job(struct ex *x, const struct ca_catar_node *n, struct dir *p, const char *path)
{
	struct pool *pl = &x->pool;
	if (!pool_start(x))
		return 1;
	size_t size = (size_t)n->payload_size, got = 0, nl = strlen(n->name), pl_len = strlen(path);
	if (!p->track) { /* the workers reach it through their jobs only */
		p->track = calloc(1, sizeof(*p->track));
		if (!p->track)
			return ca_ex_fail(x, -ENOMEM, path);
		p->track->fd = -1;
	}
	struct job *j = job_take(x, size);
	if (!j)
		return ca_ex_fail(x, -ENOMEM, path);
	*j = (struct job){ .track = p->track, .dfd = p->fd, .size = size, .sparse = !x->o->no_holes, .cls = j->cls };
	j->path = malloc(pl_len + 1 + nl + 1); /* path, then name */
	if (!j->path) {
		job_drop(x, j);
		return ca_ex_fail(x, -ENOMEM, path);
	}
	memcpy(j->path, path, pl_len + 1);
	memcpy(j->path + pl_len + 1, n->name, nl + 1);
	j->name = j->path + pl_len + 1;
	j->create_mode = ca_ex_create_mode(x, p, n->mode);
	j->mode = ca_ex_keep_mode(x, n, p->child_gid);
	j->chmod = j->mode != j->create_mode || (n->mode & 07000);
	if (x->flags & UID_FLAGS) {
		j->uid = (uid_t)n->uid;
		j->gid = (gid_t)n->gid;
		if (x->as_root)
			j->chown = n->uid != (uint64_t)x->euid || n->gid != (uint64_t)p->child_gid;
		else if (n->uid != (uint64_t)x->euid || n->gid != (uint64_t)x->egid)
			ca_ex_warn_once(&x->warned_owner, 0, "file owners (not running as root)");
	}
	j->times = x->flags & TIME_FLAGS;
	if (j->times)
		ca_ex_node_times(n, j->ts);
	int r = 0;
	for (;;) {
		if (x->o->cancel && *x->o->cancel) {
			r = -ECANCELED;
			break;
		}
		ssize_t k = ca_catar_dec_read_payload(x->dec, j->data + got, size - got);
		if (k < 0) {
			x->read_failed = true;
			r = (int)k;
			if (r == -EBADMSG)
				ca_log_error_errno(r, "%s: not a valid archive, at %s",
				                   x->o->archive_name ? x->o->archive_name : "archive", path);
			break;
		}
		if (k == 0)
			break;
		got += (size_t)k;
		x->done += (uint64_t)k;
		if (x->o->progress)
			x->o->progress(x->o->progress_userdata, x->done);
	}
	if (r == 0 && got != size) /* the decoder ends a payload only at its size */
		r = ca_log_error_errno(EBADMSG, "%s: not a valid archive, at %s",
		                       x->o->archive_name ? x->o->archive_name : "archive", path);
	if (r < 0) {
		job_drop(x, j);
		return r;
	}
	pthread_mutex_lock(&pl->lock);
	for (unsigned c = 0; c < JOB_CLASSES; c++)
		if (!x->spare[c] && pl->spare[c]) { /* the workers' finished jobs, for the next submits */
			x->spare[c] = pl->spare[c];
			pl->spare[c] = NULL;
			pl->n_spare[c] = 0;
		}
	pl->outstanding++;
	p->track->pending++;
	pthread_mutex_unlock(&pl->lock);
	/* blocks while the queue is full; the memory budget counts the buffers */
	r = ca_workq_submit(pl->q, j, (size_t)4096 << j->cls);
	return r; /* never refused: the queue is not cancelled while the decoder submits */
}

/* Hand a plain fresh directory whose files are still being written to
 * the workers (see struct track). Under the lock. Returns false when it
 * has to be finished here after all. */
bool ca_ex_defer_dir(struct ex *x, const struct ca_catar_node *n, struct dir *d, const char *path)
{
	struct track *t = d->track;
	if (!t || !t->pending || !d->fresh || !d->plain || d->projinherit || !ca_ex_plain_meta(x, n))
		return false;
	t->path = strdup(path);
	if (!t->path)
		return false;
	t->meta = (struct dir_meta){ .mode = ca_ex_keep_mode(x, n, d->gid), .times = x->flags & TIME_FLAGS };
	if (x->flags & UID_FLAGS) {
		t->meta.uid = (uid_t)n->uid;
		t->meta.gid = (gid_t)n->gid;
		if (x->as_root)
			t->meta.chown = n->uid != (uint64_t)d->uid || n->gid != (uint64_t)d->gid;
		else if (n->uid != (uint64_t)x->euid || n->gid != (uint64_t)x->egid)
			ca_ex_warn_once(&x->warned_owner, 0, "file owners (not running as root)");
	}
	if (t->meta.times)
		ca_ex_node_times(n, t->meta.ts);
	t->fd = d->fd;
	t->left = true;
	return true;
}
