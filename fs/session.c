/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* session.c - serve an fs on a mountpoint with libfuse's session loop. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "log.h"
#include "stop_signals.h"

/*
 * SIGINT, SIGTERM and SIGHUP end the loop: a clean unmount. Not with
 * libfuse's handlers: they set the session's exit flag in whichever
 * thread takes the signal, and the loop's main thread checks that flag
 * and then sleeps on a semaphore, so a signal landing between the two
 * was lost and the daemon ran on (seen under load in CI). The stop
 * signals (core/stop_signals.h) keep waking the loop's thread until the
 * loop has returned.
 */
static void on_stop(void *userdata, int sig)
{
	const char *name = sigabbrev_np(sig);
	ca_log_info("mount: SIG%s: unmounting", name ? name : "?");
	fuse_session_exit(userdata);
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
	struct ca_stop_signals *stop = NULL;
	signal(SIGPIPE, SIG_IGN); /* a write to a closed pipe is an error, not death */
	if ((r = ca_stop_signals_start(on_stop, se, false, &stop)) < 0) {
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
	ca_stop_signals_end(stop); /* it stops waking us; a later signal stays pending */
	stop = NULL;
	/* a positive value is the signal that ended the loop: a clean stop */
	if (r < 0)
		ca_log_error_errno(r, "mount: %s", mountpoint);
	r = r < 0 ? r : 0;
	fuse_loop_cfg_destroy(cfg);
out_mount:
	fuse_session_unmount(se);
out_signals:
	ca_stop_signals_end(stop);
out_session:
	fuse_session_destroy(se);
out_args:
	fuse_opt_free_args(&args);
	free(opts);
	free(fsname);
	return r;
}
