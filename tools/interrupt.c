/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* interrupt.c - turn termination signals into a polled stop flag. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "interrupt.h"
#include "log.h"
#include "thread.h"

/* Signal state is process-wide by nature; this is the command's (main's)
 * side of it, never touched by core/ except through the flag pointer. */
static volatile sig_atomic_t stop_flag;
static int caught;
static pthread_t watcher, main_thread;
static bool running;

const volatile sig_atomic_t *cafs_interrupt_flag(void)
{
	return &stop_flag;
}

static void on_poke(int sig)
{
	(void)sig; /* only there so blocking calls in the main thread return EINTR */
}

static void *watch(void *arg)
{
	sigset_t *set = arg;
	/* once stopping, the main thread is poked again every 50 ms: a poke
	 * landing between its look at the flag and a blocking call is lost,
	 * and the call then blocks on (seen: make reading a stalled FIFO) */
	const struct timespec tick = { 0, 50 * 1000 * 1000 };
	for (;;) {
		int sig = stop_flag ? sigtimedwait(set, NULL, &tick) : sigwaitinfo(set, NULL);
		if (sig < 0) {
			if (errno == EAGAIN)
				pthread_kill(main_thread, SIGUSR1);
			continue;
		}
		if (sig == SIGUSR2)
			return NULL; /* cafs_interrupt_stop */
		if (stop_flag) {
			/* second signal: the user insists */
			signal(sig, SIG_DFL);
			pthread_sigmask(SIG_UNBLOCK, &(sigset_t){ 0 }, NULL);
			kill(getpid(), sig);
			_exit(128 + sig);
		}
		caught = sig;
		/* what fails from here on fails because we asked it to: one line
		 * at exit says so instead */
		ca_log_set_level(CA_LOG_SILENT);
		stop_flag = 1;
		pthread_kill(main_thread, SIGUSR1);
	}
}

int cafs_interrupt_start(void)
{
	static sigset_t set;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_poke; /* no SA_RESTART: that is the point */
	sigaction(SIGUSR1, &sa, NULL);

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR2);
	main_thread = pthread_self();
	int r = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (r)
		return -r;
	/* workers must not take the poke either: block it for them, unblock after */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	r = ca_thread_create(&watcher, watch, &set);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	if (r < 0)
		return r;
	running = true;
	return 0;
}

int cafs_interrupt_stop(void)
{
	if (running) {
		pthread_kill(watcher, SIGUSR2);
		pthread_join(watcher, NULL);
		running = false;
	}
	return caught;
}

int cafs_interrupt_exit_code(int rc)
{
	int sig = cafs_interrupt_stop();
	if (!sig)
		return rc;
	fprintf(stderr, "cafs: interrupted by %s\n", strsignal(sig));
	return 128 + sig;
}
