/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stop_signals.c - stop signals taken by one thread (see stop_signals.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/stop_signals.h"
#include "base/thread.h"

struct ca_stop_signals {
	ca_stop_fn on_stop;
	void *userdata;
	bool second_kills;
	pthread_t target, thread;
	sigset_t set; /* the stop signals, and SIGUSR2 to end the thread */
	volatile sig_atomic_t flag;
	atomic_bool ending;
	atomic_int caught;
};

static void on_wake(int sig)
{
	(void)sig; /* only there so that blocking calls return EINTR */
}

static void *take_signals(void *arg)
{
	struct ca_stop_signals *s = arg;
	const struct timespec tick = { 0, 50 * 1000 * 1000 };
	while (!atomic_load(&s->ending)) {
		int sig = s->flag ? sigtimedwait(&s->set, NULL, &tick) : sigwaitinfo(&s->set, NULL);
		if (sig < 0) {
			if (errno == EAGAIN) /* a tick: wake the target again */
				pthread_kill(s->target, SIGUSR1);
			continue;
		}
		if (sig == SIGUSR2)
			continue; /* ca_stop_signals_end: the loop looks at ending */
		if (s->flag) {
			if (!s->second_kills)
				continue;
			signal(sig, SIG_DFL);
			pthread_sigmask(SIG_UNBLOCK, &(sigset_t){ 0 }, NULL);
			kill(getpid(), sig);
			_exit(128 + sig);
		}
		atomic_store(&s->caught, sig);
		s->flag = 1;
		if (s->on_stop)
			s->on_stop(s->userdata, sig);
		pthread_kill(s->target, SIGUSR1);
	}
	return NULL;
}

int ca_stop_signals_start(ca_stop_fn on_stop, void *userdata, bool second_kills, struct ca_stop_signals **ret)
{
	struct ca_stop_signals *s = calloc(1, sizeof(*s));
	struct sigaction sa;
	sigset_t usr1;
	int r;
	*ret = NULL;
	if (!s)
		return -ENOMEM;
	s->on_stop = on_stop;
	s->userdata = userdata;
	s->second_kills = second_kills;
	s->target = pthread_self();
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_wake; /* no SA_RESTART: that is the point */
	if (sigaction(SIGUSR1, &sa, NULL) < 0) {
		r = -errno;
		goto fail;
	}
	sigemptyset(&s->set);
	sigaddset(&s->set, SIGINT);
	sigaddset(&s->set, SIGTERM);
	sigaddset(&s->set, SIGHUP);
	sigaddset(&s->set, SIGUSR2);
	r = -pthread_sigmask(SIG_BLOCK, &s->set, NULL);
	if (r < 0)
		goto fail;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL); /* the target must take its wake-ups */
	r = ca_thread_create(&s->thread, take_signals, s);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	free(s);
	return r;
}

const volatile sig_atomic_t *ca_stop_signals_flag(const struct ca_stop_signals *s)
{
	return &s->flag;
}

int ca_stop_signals_end(struct ca_stop_signals *s)
{
	if (!s)
		return 0;
	atomic_store(&s->ending, true);
	pthread_kill(s->thread, SIGUSR2);
	pthread_join(s->thread, NULL);
	int sig = atomic_load(&s->caught);
	free(s);
	return sig;
}
