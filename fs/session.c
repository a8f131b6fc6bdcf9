/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* session.c - serve an fs on a mountpoint with libfuse's session loop. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs.h"
#include "log.h"
#include "thread.h"

/*
 * SIGINT, SIGTERM and SIGHUP end the loop: a clean unmount. Not with
 * libfuse's handlers: they set the session's exit flag in whichever
 * thread takes the signal, and the loop's main thread checks that flag
 * and then sleeps on a semaphore, so a signal landing between the two
 * was lost and the daemon ran on (seen under load in CI). Here the
 * signals are blocked and one thread takes them with sigwait, sets the
 * flag, and keeps waking the main thread (SIGUSR1, a no-op handler
 * without SA_RESTART interrupts the semaphore wait) until the loop has
 * returned.
 */
struct stopper {
	struct fuse_session *se;
	pthread_t main, thread;
	sigset_t set; /* the stop signals, and SIGUSR2 to end the thread */
	atomic_bool loop_done;
};

static void on_wake(int sig)
{
	(void)sig;
}

static void *stopper_main(void *arg)
{
	struct stopper *st = arg;
	int sig = 0;
	while (sigwait(&st->set, &sig) != 0 || sig == SIGUSR2)
		if (atomic_load(&st->loop_done))
			return NULL;
	const char *name = sigabbrev_np(sig);
	ca_log_info("mount: SIG%s: unmounting", name ? name : "?");
	fuse_session_exit(st->se);
	const struct timespec tick = { 0, 50 * 1000 * 1000 };
	while (!atomic_load(&st->loop_done)) {
		pthread_kill(st->main, SIGUSR1);
		nanosleep(&tick, NULL);
	}
	return NULL;
}

/* Block the stop signals here (threads started from now on inherit that)
 * and start the thread that takes them. */
static int stopper_start(struct stopper *st, struct fuse_session *se)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_wake;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		return -errno;
	sa.sa_handler = SIG_IGN; /* a write to a closed pipe is an error, not death */
	sigaction(SIGPIPE, &sa, NULL);
	*st = (struct stopper){ .se = se, .main = pthread_self() };
	sigemptyset(&st->set);
	sigaddset(&st->set, SIGINT);
	sigaddset(&st->set, SIGTERM);
	sigaddset(&st->set, SIGHUP);
	sigaddset(&st->set, SIGUSR2);
	int r = pthread_sigmask(SIG_BLOCK, &st->set, NULL);
	if (r)
		return -r;
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	return ca_thread_create(&st->thread, stopper_main, st);
}

static void stopper_stop(struct stopper *st)
{
	atomic_store(&st->loop_done, true);
	pthread_kill(st->thread, SIGUSR2);
	pthread_join(st->thread, NULL);
}

/* fsname goes into the -o list: escape the separators */
static char *escape_opt(const char *s)
{
	char *out = malloc(2 * strlen(s) + 1), *o = out;
	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == ',' || *s == '\\')
			*o++ = '\\';
		*o++ = *s;
	}
	*o = 0;
	return out;
}

int cafs_fs_serve(struct cafs_fs *fs, const char *mountpoint, const struct cafs_serve_opts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	struct fuse_loop_config *cfg = NULL;
	char *fsname = escape_opt(o->fsname), *opts = NULL;
	int r = -ENOMEM;

	if (!fsname || asprintf(&opts, "ro,default_permissions,subtype=cafs,fsname=%s%s%s%s", fsname,
	                        o->allow_other ? ",allow_other" : "", o->fuse_opts ? "," : "",
	                        o->fuse_opts ? o->fuse_opts : "") < 0) {
		opts = NULL;
		ca_log_error_errno(r, "mount");
		goto out_args;
	}
	if (fuse_opt_add_arg(&args, "cafs") < 0 || fuse_opt_add_arg(&args, "-o") < 0 ||
	    fuse_opt_add_arg(&args, opts) < 0) {
		ca_log_error_errno(r, "mount");
		goto out_args;
	}
	r = -EINVAL;
	se = fuse_session_new(&args, &cafs_fs_ops, sizeof(cafs_fs_ops), fs);
	if (!se) {
		ca_log_error("mount: %s: invalid mount options", o->fuse_opts ? o->fuse_opts : opts);
		goto out_args;
	}
	struct stopper st;
	if ((r = stopper_start(&st, se)) < 0) {
		ca_log_error_errno(r, "mount: cannot set up signal handling");
		goto out_session;
	}
	if (fuse_session_mount(se, mountpoint) < 0) {
		ca_log_error("mount: %s: cannot mount", mountpoint);
		r = -EINVAL;
		goto out_signals;
	}
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		r = ca_log_error_errno(ENOMEM, "mount");
		goto out_mount;
	}
	fuse_loop_cfg_set_max_threads(cfg, o->max_threads);
	ca_log_info("%s mounted on %s", o->fsname, mountpoint);
	r = fuse_session_loop_mt(se, cfg);
	atomic_store(&st.loop_done, true); /* the stopper stops waking us */
	/* a positive value is the signal that ended the loop: a clean stop */
	if (r < 0)
		ca_log_error_errno(r, "mount: %s", mountpoint);
	r = r < 0 ? r : 0;
	fuse_loop_cfg_destroy(cfg);
out_mount:
	fuse_session_unmount(se);
out_signals:
	stopper_stop(&st);
out_session:
	fuse_session_destroy(se);
out_args:
	fuse_opt_free_args(&args);
	free(opts);
	free(fsname);
	return r;
}
