/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-workq.c - the work queue's contract (base/workq.h): ordered
 * completion under jobs that finish out of order, the submission bound
 * never exceeded (count and cost), cancel (by call and by flag), per-job
 * errors and stop_on_error, worker-local state, a failing init, many
 * small jobs. Under helgrind too:
 *   valgrind --tool=helgrind tests/unit/test-workq
 * (its only reports are the cancel flag, a volatile sig_atomic_t written
 * without a lock by design, as a signal handler writes it).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/workq.h"
#include "tap.h"

struct t {
	pthread_mutex_t lock;
	size_t n_done, live, max_live, inits, finis;
	uint64_t cost_live, max_cost_live;
	size_t *order; /* job numbers in done order */
	int *results;  /* per job number */
	int fail_every, fail_init;
	unsigned sleep_us;
	volatile sig_atomic_t *set_flag_at_job; /* set the flag when job 10 runs */
};

struct job {
	size_t n;
	uint64_t cost;
};

static void nap(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };
	nanosleep(&ts, NULL);
}

static int t_init(void *qdata, void **ret)
{
	struct t *t = qdata;
	pthread_mutex_lock(&t->lock);
	int fail = t->fail_init && t->inits == 0; /* the first worker's init fails */
	t->inits++;
	pthread_mutex_unlock(&t->lock);
	if (fail)
		return -ENOMEM;
	*ret = malloc(16); /* per-worker state: valgrind sees a leak if fini is missed */
	return *ret ? 0 : -ENOMEM;
}

static void t_fini(void *qdata, void *wdata)
{
	struct t *t = qdata;
	pthread_mutex_lock(&t->lock);
	t->finis++;
	pthread_mutex_unlock(&t->lock);
	free(wdata);
}

static int t_run(void *qdata, void *wdata, void *arg)
{
	struct t *t = qdata;
	struct job *j = arg;
	if (!wdata)
		return -EINVAL;
	/* later jobs finish first now and then: ordered completion must wait */
	if (t->sleep_us)
		nap((j->n % 3 == 0) ? t->sleep_us : 0);
	if (t->set_flag_at_job && j->n == 10) {
		*t->set_flag_at_job = 1;
		nap(20000); /* the submitter fills the queue meanwhile */
	}
	if (t->fail_every && j->n % t->fail_every == t->fail_every - 1)
		return -EIO;
	return 0;
}

static void t_done(void *qdata, void *arg, int r)
{
	struct t *t = qdata;
	struct job *j = arg;
	pthread_mutex_lock(&t->lock);
	t->order[t->n_done++] = j->n;
	t->results[j->n] = r;
	t->live--;
	t->cost_live -= j->cost;
	pthread_mutex_unlock(&t->lock);
}

static const struct ca_workq_ops ops = { .init = t_init, .fini = t_fini, .run = t_run, .done = t_done };

static void t_setup(struct t *t, size_t n)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->order = calloc(n, sizeof(*t->order));
	t->results = calloc(n, sizeof(*t->results));
}

static void t_teardown(struct t *t)
{
	free(t->order);
	free(t->results);
	pthread_mutex_destroy(&t->lock);
}

/* Submit n jobs (costs 1..7), counting what is live as submit returns. */
static int submit_all(struct ca_workq *q, struct t *t, struct job *jobs, size_t n, size_t *ret_taken)
{
	int r = 0;
	size_t k = 0;
	for (; k < n; k++) {
		jobs[k] = (struct job){ .n = k, .cost = 1 + k % 7 };
		pthread_mutex_lock(&t->lock);
		t->live++;
		t->cost_live += jobs[k].cost;
		pthread_mutex_unlock(&t->lock);
		r = ca_workq_submit(q, &jobs[k], jobs[k].cost);
		pthread_mutex_lock(&t->lock);
		if (r < 0) {
			t->live--;
			t->cost_live -= jobs[k].cost;
		}
		if (t->live > t->max_live)
			t->max_live = t->live;
		if (t->cost_live > t->max_cost_live)
			t->max_cost_live = t->cost_live;
		pthread_mutex_unlock(&t->lock);
		if (r < 0)
			break;
	}
	*ret_taken = k;
	return r;
}

static void test_ordered(void)
{
	enum { N = 300 };
	struct t t;
	struct job jobs[N];
	struct ca_workq *q = NULL;
	size_t taken;
	t_setup(&t, N);
	t.sleep_us = 300;
	struct ca_workq_opts o = { .workers = 4, .max_jobs = 8, .max_cost = 20, .ordered = true };
	check_int(ca_workq_new(&ops, &t, &o, &q), ==, 0);
	check_int(ca_workq_workers(q), ==, 4);
	check_int(submit_all(q, &t, jobs, N, &taken), ==, 0);
	check_int(ca_workq_drain(q), ==, 0);
	check_int(t.n_done, ==, N);
	bool in_order = true;
	for (size_t i = 0; i < N; i++)
		in_order = in_order && t.order[i] == i;
	check(in_order);
	/* the submitter's own count includes the job being submitted */
	check_int(t.max_live, <=, 8 + 1);
	check_int(t.max_cost_live, <=, 20 + 7);
	check_int(ca_workq_free(q), ==, 0);
	check_int(t.inits, ==, 4);
	check_int(t.finis, ==, 4);
	t_teardown(&t);
}

/* The bound holds: with the workers blocked, submit stops at max_jobs. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	size_t ran;
};

static int gate_run(void *qdata, void *wdata, void *job)
{
	struct gate *g = qdata;
	(void)wdata;
	(void)job;
	pthread_mutex_lock(&g->lock);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	g->ran++;
	pthread_mutex_unlock(&g->lock);
	return 0;
}

struct submitter {
	struct ca_workq *q;
	size_t n, submitted;
	pthread_mutex_t *lock;
	bool low;
};

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;
	for (size_t i = 0; i < s->n; i++) {
		if ((s->low ? ca_workq_submit_low(s->q, NULL, 1) : ca_workq_submit(s->q, NULL, 1)) < 0)
			break;
		pthread_mutex_lock(s->lock);
		s->submitted++;
		pthread_mutex_unlock(s->lock);
	}
	return NULL;
}

static void test_backpressure(void)
{
	struct gate g = { .open = false };
	struct ca_workq *q = NULL;
	const struct ca_workq_ops gops = { .run = gate_run };
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	struct ca_workq_opts o = { .workers = 2, .max_jobs = 5 };
	check_int(ca_workq_new(&gops, &g, &o, &q), ==, 0);
	struct submitter s = { .q = q, .n = 50, .lock = &g.lock };
	pthread_t th;
	pthread_create(&th, NULL, submit_thread, &s);
	nap(200000);
	pthread_mutex_lock(&g.lock);
	size_t held = s.submitted;
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	check_int(held, ==, 5); /* exactly the bound: blocked, not refused */
	pthread_join(th, NULL);
	check_int(ca_workq_free(q), ==, 0);
	check_int(s.submitted, ==, 50);
	check_int(g.ran, ==, 50);
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
}

/* Several submitters blocked on the bound at once: together they hold
 * exactly the bound, and every one of them resumes and finishes. */
static void test_backpressure_many(void)
{
	enum { SUBMITTERS = 4, EACH = 40 };
	struct gate g = { .open = false };
	struct ca_workq *q = NULL;
	const struct ca_workq_ops gops = { .run = gate_run };
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	struct ca_workq_opts o = { .workers = 1, .max_jobs = 6, .max_cost = 4 };
	check_int(ca_workq_new(&gops, &g, &o, &q), ==, 0);
	struct submitter s[SUBMITTERS];
	pthread_t th[SUBMITTERS];
	for (unsigned i = 0; i < SUBMITTERS; i++) {
		s[i] = (struct submitter){ .q = q, .n = EACH, .lock = &g.lock };
		pthread_create(&th[i], NULL, submit_thread, &s[i]);
	}
	nap(200000);
	pthread_mutex_lock(&g.lock);
	size_t held = 0;
	for (unsigned i = 0; i < SUBMITTERS; i++)
		held += s[i].submitted;
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	check_int(held, ==, 4); /* the cost bound (each job costs 1), below max_jobs */
	size_t all = 0;
	for (unsigned i = 0; i < SUBMITTERS; i++) {
		pthread_join(th[i], NULL);
		all += s[i].submitted;
	}
	check_int(ca_workq_free(q), ==, 0);
	check_int(all, ==, SUBMITTERS * EACH);
	check_int(g.ran, ==, SUBMITTERS * EACH);
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
}

/* Low jobs take the lower half of the bound: with them held there, the
 * others' jobs still find room, up to the whole bound; all finish. */
static void test_submit_low(void)
{
	struct gate g = { .open = false };
	struct ca_workq *q = NULL;
	const struct ca_workq_ops gops = { .run = gate_run };
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	struct ca_workq_opts o = { .workers = 1, .max_jobs = 8 };
	check_int(ca_workq_new(&gops, &g, &o, &q), ==, 0);
	struct submitter lo = { .q = q, .n = 30, .lock = &g.lock, .low = true };
	struct submitter hi = { .q = q, .n = 30, .lock = &g.lock };
	pthread_t tl, th;
	pthread_create(&tl, NULL, submit_thread, &lo);
	nap(100000);
	pthread_create(&th, NULL, submit_thread, &hi);
	nap(100000);
	pthread_mutex_lock(&g.lock);
	size_t held_lo = lo.submitted, held_hi = hi.submitted;
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	check_int(held_lo, ==, 4); /* half of max_jobs */
	check_int(held_hi, ==, 4); /* the other half, still free for it */
	pthread_join(tl, NULL);
	pthread_join(th, NULL);
	check_int(ca_workq_free(q), ==, 0);
	check_int(lo.submitted + hi.submitted, ==, 60);
	check_int(g.ran, ==, 60);
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
}

static void test_errors(void)
{
	enum { N = 100 };
	struct t t;
	struct job jobs[N];
	struct ca_workq *q = NULL;
	size_t taken;
	/* without stop_on_error: every job runs, each done gets its own result */
	t_setup(&t, N);
	t.fail_every = 10;
	struct ca_workq_opts o = { .workers = 3, .ordered = true };
	check_int(ca_workq_new(&ops, &t, &o, &q), ==, 0);
	check_int(submit_all(q, &t, jobs, N, &taken), ==, 0);
	check_int(ca_workq_free(q), ==, -EIO);
	check_int(t.n_done, ==, N);
	size_t eio = 0, ok = 0;
	for (size_t i = 0; i < N; i++) {
		eio += t.results[i] == -EIO && i % 10 == 9;
		ok += t.results[i] == 0 && i % 10 != 9;
	}
	check_int(eio, ==, 10);
	check_int(ok, ==, 90);
	t_teardown(&t);

	/* stop_on_error: the rest are dropped with -ECANCELED, submit refuses */
	t_setup(&t, N);
	t.fail_every = 10;
	o = (struct ca_workq_opts){ .workers = 1, .max_jobs = 2, .ordered = true, .stop_on_error = true };
	check_int(ca_workq_new(&ops, &t, &o, &q), ==, 0);
	check_int(submit_all(q, &t, jobs, N, &taken), ==, -ECANCELED);
	check_int(taken, <, N);
	check_int(ca_workq_error(q), ==, -EIO);
	check_int(ca_workq_free(q), ==, -EIO);
	check_int(t.n_done, ==, taken); /* one done for every accepted job */
	check_int(t.results[9], ==, -EIO);
	bool rest_cancelled = true;
	for (size_t i = 10; i < taken; i++)
		rest_cancelled = rest_cancelled && t.results[i] == -ECANCELED;
	check(rest_cancelled);
	t_teardown(&t);

	/* a failing init: its worker completes its share with the error */
	t_setup(&t, N);
	t.fail_init = 1;
	o = (struct ca_workq_opts){ .workers = 2 };
	check_int(ca_workq_new(&ops, &t, &o, &q), ==, 0);
	check_int(submit_all(q, &t, jobs, N, &taken), ==, 0);
	check_int(ca_workq_free(q), ==, -ENOMEM);
	check_int(t.n_done, ==, N);
	check_int(t.finis, ==, 1);
	t_teardown(&t);
}

static void test_cancel(void)
{
	enum { N = 200 };
	struct t t;
	struct job jobs[N];
	struct ca_workq *q = NULL;
	size_t taken;
	/* by flag, set from inside a job (as a signal handler would) */
	volatile sig_atomic_t flag = 0;
	t_setup(&t, N);
	t.set_flag_at_job = &flag;
	struct ca_workq_opts o = { .workers = 1, .max_jobs = 4, .ordered = true, .cancel = &flag };
	check_int(ca_workq_new(&ops, &t, &o, &q), ==, 0);
	check_int(submit_all(q, &t, jobs, N, &taken), ==, -ECANCELED);
	check_int(taken, <, 20);
	check_int(ca_workq_free(q), ==, -ECANCELED);
	check_int(t.n_done, ==, taken);
	/* one worker: the jobs up to the one that set the flag ran, none after */
	bool split = taken > 10;
	for (size_t i = 0; i < taken; i++)
		split = split && t.results[i] == (i <= 10 ? 0 : -ECANCELED);
	check(split);
	t_teardown(&t);

	/* by call, with its own error */
	t_setup(&t, N);
	o = (struct ca_workq_opts){ .workers = 2 };
	check_int(ca_workq_new(&ops, &t, &o, &q), ==, 0);
	check_int(submit_all(q, &t, jobs, 50, &taken), ==, 0);
	ca_workq_cancel(q, -EPIPE);
	check_int(ca_workq_submit(q, &jobs[60], 1), ==, -EPIPE);
	check_int(ca_workq_free(q), ==, -EPIPE);
	check_int(t.n_done, ==, 50);
	t_teardown(&t);
}

/* A job stuck where no flag reaches: drain gives up after the grace. */
static void test_stuck(void)
{
	struct gate g = { .open = false };
	struct ca_workq *q = NULL;
	const struct ca_workq_ops gops = { .run = gate_run };
	volatile sig_atomic_t flag = 0;
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	struct ca_workq_opts o = { .workers = 1, .cancel = &flag, .grace_ms = 200 };
	check_int(ca_workq_new(&gops, &g, &o, &q), ==, 0);
	check_int(ca_workq_submit(q, NULL, 1), ==, 0);
	nap(50000); /* running, not queued: a queued one would be dropped unrun */
	flag = 1;
	check_int(ca_workq_drain(q), ==, -EBUSY);
	/* let it go and finish properly, so nothing leaks under valgrind */
	pthread_mutex_lock(&g.lock);
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	check_int(ca_workq_free(q), ==, -ECANCELED);
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
}

static void test_many(void)
{
	enum { N = 100000 };
	struct t t;
	struct job *jobs = calloc(N, sizeof(*jobs));
	struct ca_workq *q = NULL;
	size_t taken;
	t_setup(&t, N);
	struct ca_workq_opts o = { .workers = 4, .max_jobs = 64 };
	check_int(ca_workq_new(&ops, &t, &o, &q), ==, 0);
	check_int(submit_all(q, &t, jobs, N, &taken), ==, 0);
	check_int(ca_workq_free(q), ==, 0);
	check_int(t.n_done, ==, N);
	check_int(t.max_live, <=, 64 + 1);
	t_teardown(&t);
	free(jobs);
}

int main(void)
{
	test_ordered();
	test_backpressure();
	test_backpressure_many();
	test_submit_low();
	test_errors();
	test_cancel();
	test_stuck();
	test_many();
	return tap_done();
}
