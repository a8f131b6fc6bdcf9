/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thread.c - threads that inherit their creator's logger (see thread.h). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/thread.h"

struct start {
	void *(*fn)(void *);
	void *arg;
	struct ca_logger *logger;
};

static void *trampoline(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	ca_log_use(s.logger);
	return s.fn(s.arg);
}

int ca_thread_create(pthread_t *ret, void *(*fn)(void *), void *arg)
{
	struct start *s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct start){ fn, arg, ca_log_current() };
	/* signals belong to the program's main thread (or the thread it
	 * sigwaits in): ours start with every signal blocked, so a SIGTERM
	 * meant for a clean stop can never land in one of them */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(ret, NULL, trampoline, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		free(s);
		return -r;
	}
	return 0;
}

unsigned ca_thread_pool_run(unsigned n, void *(*fn)(void *), void *arg)
{
	pthread_t *tids = calloc(n ? n : 1, sizeof(*tids));
	unsigned started = 0;
	while (tids && started < n && ca_thread_create(&tids[started], fn, arg) == 0)
		started++;
	if (started == 0)
		fn(arg);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return started;
}
