/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * workq.h - one work queue for every pool of worker threads in core/.
 *
 * A fixed set of workers (ca_thread_create: they log where the creator
 * logs, and have every signal blocked) takes jobs in submission order
 * (FIFO) and runs ops->run on each. The contract:
 *
 * - Bounded submission: at most max_jobs jobs, and at most max_cost of
 *   their summed costs (a caller-chosen unit, bytes say), are in the
 *   queue from ca_workq_submit until their completion returns. submit
 *   blocks while the bound is held (back-pressure), and, so the
 *   submitter and the workers do not take turns at every job, resumes
 *   only once the queue has drained to half of both bounds. A job bigger
 *   than max_cost alone is still taken when the queue is empty.
 * - Per-job completion: ops->done(qdata, job, r) is called exactly once
 *   for every job submit accepted, with run's result, or with the
 *   cancel error for a job that was dropped unrun. With ordered, the
 *   done calls come in submission order (one at a time, on whichever
 *   worker finished the job that unblocked them); without, right after
 *   run on the worker that ran it, concurrently. done is never called
 *   with the queue's lock held: it may take the caller's locks.
 * - Errors: the first negative result of a job (or of a worker's init)
 *   is kept; with stop_on_error it also cancels the queue (below) with
 *   -ECANCELED, the kept error staying the job's.
 *   ca_workq_drain and ca_workq_free return it.
 * - Cancellation: ca_workq_cancel(q, err) (from any thread, or the
 *   opts.cancel flag, which a signal handler may set and the workers
 *   look at before each job) makes queued jobs complete with err
 *   without running, and submit refuse new ones (-ECANCELED, or err;
 *   the job stays the caller's). Jobs already running finish.
 * - Worker-local state: ops->init makes a worker's state (a codec, a
 *   digest) before its first job, ops->fini frees it when it exits;
 *   run gets it as wdata. A failing init counts as a job error; that
 *   worker still takes its share of jobs, completing each with init's
 *   error unrun, so no job is left without its done.
 * - Shutdown: ca_workq_drain waits until every accepted job completed;
 *   ca_workq_free drains, stops and joins the workers. With a cancel
 *   flag set, drain waits at most grace_ms after noticing it for jobs
 *   stuck in a call no flag reaches (a FIFO in a store, a hung NFS
 *   server), then returns -EBUSY: ca_workq_free then detaches the
 *   workers and leaves the queue (and what its jobs point to) to the
 *   exit that follows a cancel.
 *
 * Threads: submit from any thread, several at once (each blocks on the
 * bound, and all resume when the queue drains to half; jobs queue in the
 * order their submits took the lock); cancel, error and drain from any. run and done must not call submit, drain or
 * free on their own queue.
 */
#ifndef CA_WORKQ_H
#define CA_WORKQ_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ca_workq;

struct ca_workq_ops {
	/* optional: the worker's own state, made on its thread; 0 or a negative errno */
	int (*init)(void *qdata, void **ret_wdata);
	void (*fini)(void *qdata, void *wdata); /* optional */
	/* the work: 0 or a negative errno (per job) */
	int (*run)(void *qdata, void *wdata, void *job);
	/* optional: the job is complete (r: run's result, or the cancel error) */
	void (*done)(void *qdata, void *job, int r);
};

struct ca_workq_opts {
	unsigned workers;   /* threads; 0: one per CPU */
	size_t max_jobs;    /* jobs in the queue at most; 0: 4 per worker */
	uint64_t max_cost;  /* summed job costs at most; 0: no bound */
	bool ordered;       /* done in submission order */
	bool stop_on_error; /* the first job error cancels the queue with it */
	const volatile sig_atomic_t *cancel; /* optional: set means cancel with -ECANCELED */
	unsigned grace_ms;  /* drain after the flag: how long to wait for running jobs; 0: 2000 */
};

/* Start the workers. 0 when at least one started (see ca_workq_workers),
 * or a negative errno. */
int ca_workq_new(const struct ca_workq_ops *ops, void *qdata, const struct ca_workq_opts *o, struct ca_workq **ret);
unsigned ca_workq_workers(const struct ca_workq *q);

/* Queue job (cost against max_cost), blocking while the queue is full.
 * 0 when taken (done will be called), or the cancel error when the queue
 * is cancelled (not taken). */
int ca_workq_submit(struct ca_workq *q, void *job, uint64_t cost);
/* As submit, for a job that may wait (background work): it is taken
 * only while the queue holds less than half of either bound, so that the
 * upper half stays free for submit's jobs (a reader's, that background
 * work must not make wait). The queue's bounds are unchanged. */
int ca_workq_submit_low(struct ca_workq *q, void *job, uint64_t cost);

/* Cancel: queued jobs complete with err (< 0) unrun; first one wins. */
void ca_workq_cancel(struct ca_workq *q, int err);

/* The first error so far (a job's, an init's or the cancel's), or 0. */
int ca_workq_error(struct ca_workq *q);

/* Wait until every accepted job completed; the first error, or -EBUSY
 * (see above). The queue stays usable unless cancelled. */
int ca_workq_drain(struct ca_workq *q);

/* Drain, stop and join; the first error (or -EBUSY: the workers are left
 * running, detached). Accepts NULL (returns 0). */
int ca_workq_free(struct ca_workq *q);

#endif
