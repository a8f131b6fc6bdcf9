/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * workq.c - the work queue (see workq.h for the contract).
 *
 * One lock guards the queue; it is held only to move items, never across
 * run or done. Items are preallocated (max_jobs of them): a job costs no
 * malloc. Ordered completion keeps a second list in submission order; a
 * worker that finishes the job at its head retires every finished job
 * from there on, one retirer at a time, so done calls never overlap.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/condwait.h"
#include "base/thread.h"
#include "base/workq.h"

#define WAIT_SLICE_MS 100

struct item {
	struct item *next;  /* run queue, or free list */
	struct item *onext; /* submission order (ordered only) */
	void *job;
	uint64_t cost;
	int r;
	bool finished;
};

struct ca_workq {
	struct ca_workq_ops ops;
	void *qdata;
	struct ca_workq_opts o;

	pthread_mutex_t lock;
	pthread_cond_t work; /* workers: a job arrived, or stop */
	pthread_cond_t room; /* the submitter: the queue drained to half */
	pthread_cond_t idle; /* drainers: nothing live */
	struct item *items, *free_items;
	struct item *run_head, *run_tail, *ord_head, *ord_tail;
	size_t live;
	uint64_t cost_live;
	unsigned idle_workers, room_waiting, drain_waiting;
	bool retiring, stop;
	int err, cancel_err;

	pthread_t *th;
	unsigned n_th;
};

static bool flag_set(const struct ca_workq *q)
{
	return q->o.cancel && *q->o.cancel;
}

static void cancel_locked(struct ca_workq *q, int err)
{
	if (!q->cancel_err)
		q->cancel_err = err;
	if (!q->err)
		q->err = err;
	pthread_cond_broadcast(&q->room);
}

static void fail_locked(struct ca_workq *q, int r)
{
	if (!q->err)
		q->err = r;
	if (q->o.stop_on_error)
		cancel_locked(q, -ECANCELED);
}

/* Under the lock: the item's done returned; give its room back. */
static void release_locked(struct ca_workq *q, struct item *it)
{
	q->live--;
	q->cost_live -= it->cost;
	it->job = NULL;
	it->next = q->free_items;
	q->free_items = it;
	/* wake the submitter at half, not for every job: else it and the
	 * workers take turns, a futex wake and a context switch per job */
	if (q->room_waiting && q->live <= q->o.max_jobs / 2 && (!q->o.max_cost || q->cost_live <= q->o.max_cost / 2)) {
		/* several submitters may wait (workq.h): each takes what room is left */
		if (q->room_waiting > 1)
			pthread_cond_broadcast(&q->room);
		else
			pthread_cond_signal(&q->room);
	}
	if (q->drain_waiting && q->live == 0)
		pthread_cond_broadcast(&q->idle);
}

/* Under the lock: it ran (or was dropped) with result r. */
static void complete_locked(struct ca_workq *q, struct item *it, int r)
{
	if (!q->o.ordered) {
		pthread_mutex_unlock(&q->lock);
		if (q->ops.done)
			q->ops.done(q->qdata, it->job, r);
		pthread_mutex_lock(&q->lock);
		release_locked(q, it);
		return;
	}
	it->r = r;
	it->finished = true;
	if (q->retiring)
		return; /* the retirer sees it when it comes to it */
	q->retiring = true;
	while (q->ord_head && q->ord_head->finished) {
		struct item *h = q->ord_head;
		q->ord_head = h->onext;
		if (!q->ord_head)
			q->ord_tail = NULL;
		pthread_mutex_unlock(&q->lock);
		if (q->ops.done)
			q->ops.done(q->qdata, h->job, h->r);
		pthread_mutex_lock(&q->lock);
		release_locked(q, h);
	}
	q->retiring = false;
}

static void *worker(void *arg)
{
	struct ca_workq *q = arg;
	void *wdata = NULL;
	/* a worker that cannot set up still takes its share, completing it
	 * with the error: no job is left without its done */
	int setup = q->ops.init ? q->ops.init(q->qdata, &wdata) : 0;

	pthread_mutex_lock(&q->lock);
	if (setup < 0)
		fail_locked(q, setup);
	for (;;) {
		while (!q->run_head && !q->stop) {
			q->idle_workers++;
			pthread_cond_wait(&q->work, &q->lock);
			q->idle_workers--;
		}
		struct item *it = q->run_head;
		if (!it)
			break;
		q->run_head = it->next;
		if (!q->run_head)
			q->run_tail = NULL;
		if (!q->cancel_err && flag_set(q))
			cancel_locked(q, -ECANCELED);
		int r = q->cancel_err ? q->cancel_err : setup;
		pthread_mutex_unlock(&q->lock);
		if (r == 0)
			r = q->ops.run(q->qdata, wdata, it->job);
		pthread_mutex_lock(&q->lock);
		if (r < 0 && r != q->cancel_err)
			fail_locked(q, r);
		complete_locked(q, it, r);
	}
	pthread_mutex_unlock(&q->lock);
	if (q->ops.fini && setup == 0)
		q->ops.fini(q->qdata, wdata);
	return NULL;
}

unsigned ca_workq_workers(const struct ca_workq *q)
{
	return q->n_th;
}

static void destroy(struct ca_workq *q)
{
	pthread_cond_destroy(&q->idle);
	pthread_cond_destroy(&q->room);
	pthread_cond_destroy(&q->work);
	pthread_mutex_destroy(&q->lock);
	free(q->th);
	free(q->items);
	free(q);
}

int ca_workq_new(const struct ca_workq_ops *ops, void *qdata, const struct ca_workq_opts *o, struct ca_workq **ret)
{
	struct ca_workq *q = calloc(1, sizeof(*q));
	int r = -ENOMEM;
	if (!q)
		return r;
	q->ops = *ops;
	q->qdata = qdata;
	q->o = *o;
	if (q->o.workers == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		q->o.workers = c > 0 ? (unsigned)c : 1;
	}
	if (q->o.max_jobs == 0)
		q->o.max_jobs = 4 * (size_t)q->o.workers;
	if (q->o.grace_ms == 0)
		q->o.grace_ms = 2000;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->room, NULL);
	pthread_cond_init(&q->idle, NULL);
	q->items = calloc(q->o.max_jobs, sizeof(*q->items));
	q->th = calloc(q->o.workers, sizeof(*q->th));
	if (!q->items || !q->th)
		goto fail;
	for (size_t i = q->o.max_jobs; i-- > 0;) {
		q->items[i].next = q->free_items;
		q->free_items = &q->items[i];
	}
	while (q->n_th < q->o.workers && (r = ca_thread_create(&q->th[q->n_th], worker, q)) == 0)
		q->n_th++;
	if (q->n_th == 0)
		goto fail;
	*ret = q;
	return 0;
fail:
	destroy(q);
	return r;
}

static int submit(struct ca_workq *q, void *job, uint64_t cost, bool low)
{
	/* a low job leaves the upper half of both bounds to the others */
	size_t max_jobs = low && q->o.max_jobs > 1 ? q->o.max_jobs / 2 : q->o.max_jobs;
	uint64_t max_cost = low ? q->o.max_cost / 2 : q->o.max_cost;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		if (!q->cancel_err && flag_set(q))
			cancel_locked(q, -ECANCELED);
		if (q->cancel_err)
			break;
		if (q->live < max_jobs && (!q->o.max_cost || !q->live || q->cost_live + cost <= max_cost))
			break;
		q->room_waiting++;
		if (q->o.cancel) /* a flag no condition signals: look at it now and then */
			ca_cond_wait_ms(&q->room, &q->lock, WAIT_SLICE_MS);
		else
			pthread_cond_wait(&q->room, &q->lock);
		q->room_waiting--;
	}
	int r = q->cancel_err;
	if (r == 0) {
		struct item *it = q->free_items;
		q->free_items = it->next;
		*it = (struct item){ .job = job, .cost = cost };
		if (q->run_tail)
			q->run_tail->next = it;
		else
			q->run_head = it;
		q->run_tail = it;
		if (q->o.ordered) {
			if (q->ord_tail)
				q->ord_tail->onext = it;
			else
				q->ord_head = it;
			q->ord_tail = it;
		}
		q->live++;
		q->cost_live += cost;
		if (q->idle_workers)
			pthread_cond_signal(&q->work);
	}
	pthread_mutex_unlock(&q->lock);
	return r;
}

int ca_workq_submit(struct ca_workq *q, void *job, uint64_t cost)
{
	return submit(q, job, cost, false);
}

int ca_workq_submit_low(struct ca_workq *q, void *job, uint64_t cost)
{
	return submit(q, job, cost, true);
}

void ca_workq_cancel(struct ca_workq *q, int err)
{
	pthread_mutex_lock(&q->lock);
	cancel_locked(q, err < 0 ? err : -ECANCELED);
	pthread_mutex_unlock(&q->lock);
}

int ca_workq_error(struct ca_workq *q)
{
	pthread_mutex_lock(&q->lock);
	int r = q->err;
	pthread_mutex_unlock(&q->lock);
	return r;
}

int ca_workq_drain(struct ca_workq *q)
{
	unsigned grace = q->o.grace_ms / WAIT_SLICE_MS + 1;
	int r = 0;
	pthread_mutex_lock(&q->lock);
	while (q->live > 0) {
		q->drain_waiting++;
		if (q->o.cancel)
			ca_cond_wait_ms(&q->idle, &q->lock, WAIT_SLICE_MS);
		else
			pthread_cond_wait(&q->idle, &q->lock);
		q->drain_waiting--;
		if (q->live > 0 && flag_set(q)) {
			if (!q->cancel_err)
				cancel_locked(q, -ECANCELED);
			if (grace-- == 0) {
				r = -EBUSY;
				break;
			}
		}
	}
	if (r == 0)
		r = q->err;
	pthread_mutex_unlock(&q->lock);
	return r;
}

int ca_workq_free(struct ca_workq *q)
{
	if (!q)
		return 0;
	int r = ca_workq_drain(q);
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_broadcast(&q->work);
	pthread_mutex_unlock(&q->lock);
	if (r == -EBUSY) {
		/* a job is stuck where no flag reaches it: leave it, and the
		 * queue it returns into, to the exit that follows a cancel */
		for (unsigned i = 0; i < q->n_th; i++)
			pthread_detach(q->th[i]);
		return r;
	}
	for (unsigned i = 0; i < q->n_th; i++)
		pthread_join(q->th[i], NULL);
	destroy(q);
	return r;
}
