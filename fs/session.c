/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* session.c - serve an fs on a mountpoint with libfuse's session loop. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "warm.h"

/*
 * SIGINT, SIGTERM and SIGHUP end the loop: a clean unmount. Not with
 * libfuse's handlers: they set the session's exit flag in whichever
 * thread takes the signal, and the loop's main thread checks that flag
 * and then sleeps on a semaphore, so a signal landing between the two
 * was lost and the daemon ran on (seen under load in CI). The stop
 * signals (core/base/stop_signals.h) keep waking the loop's thread until the
 * loop has returned.
 */
struct stopper {
	struct fuse_session *se;
	struct fs *fs;
	bool keep_mounted; /* a keeper's server: the keeper said the line, and unmounts */
};

/* Reads waiting for a failing store (remote.h) end too: a worker busy in
 * one would keep the loop from returning. */
static void on_stop(void *userdata, int sig)
{
	struct stopper *st = userdata;
	const char *name = sigabbrev_np(sig);
	if (st->keep_mounted)
		ca_log_debug("server: SIG%s: stopping", name ? name : "?");
	else
		ca_log_info("mount: SIG%s: unmounting", name ? name : "?");
	fuse_session_exit(st->se);
	fs_stop_waits(st->fs);
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

/* mountinfo's escapes (\040 for a space, ...) undone in place */
static void unescape_octal(char *s)
{
	char *o = s;
	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = 0;
}

/* Raise the kernel readahead of the mount at path (canonical) to kb
 * through its backing device in sysfs: the INIT reply can only lower it
 * (the kernel keeps the smaller of the two; op_init sets no limit), so it
 * is done between the mount and that reply. Best effort: only root may,
 * and a kernel without the file keeps its default. The mount is found in
 * mountinfo, not with stat, which would wait for the INIT we have not
 * answered yet. */
static void raise_kernel_readahead(const char *path, unsigned kb)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], dev[32] = "", mp[4096];
	unsigned maj, min;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %u:%u %*s %4095s", &maj, &min, mp) == 3) {
			unescape_octal(mp);
			if (!strcmp(mp, path))
				snprintf(dev, sizeof(dev), "%u:%u", maj, min); /* the last one is on top */
		}
	fclose(f);
	if (!*dev)
		return;
	char sys[96];
	snprintf(sys, sizeof(sys), "/sys/class/bdi/%s/read_ahead_kb", dev);
	f = fopen(sys, "r+e");
	unsigned now = 0;
	if (f && fscanf(f, "%u", &now) == 1 && now < kb) {
		rewind(f);
		if (fprintf(f, "%u\n", kb) < 0 || fflush(f) != 0)
			ca_log_debug("mount: cannot raise the kernel readahead (%s)", sys);
	}
	if (f)
		fclose(f);
}

/* The first request on a new mount is INIT: read it here rather than in
 * the loop, to hand its bytes to o->serving (a server that later resumes
 * the connection feeds them to libfuse again), then process it. Before
 * INIT libfuse reads into memory, never by splice. 0, or a negative errno;
 * a stop before INIT is 0 with the session exited. */
static int take_init(struct fuse_session *se, struct fs *fs, const struct fs_serve_opts *o)
{
	struct fuse_buf buf = { .mem = NULL };
	int k;
	do
		k = fuse_session_receive_buf(se, &buf);
	while (k == -EINTR && !fuse_session_exited(se));
	if (k <= 0 || fuse_session_exited(se)) {
		free(buf.mem);
		return k < 0 && k != -EINTR && k != -ENODEV ? k : 0;
	}
	if (o->serving)
		o->serving(o->serving_userdata, fuse_session_fd(se), buf.mem, (size_t)k);
	int r = fs_session_init_with(se, fs, buf.mem, (size_t)k, true);
	free(buf.mem);
	return r;
}

/* A new server on a live connection: the kernel sends no INIT again, and
 * libfuse answers anything before INIT with an error, so the first
 * server's INIT goes through libfuse once more (fs/init.c), its reply
 * dropped: the kernel finished that request long ago. */
static int replay_init(struct fuse_session *se, struct fs *fs, const struct fs_serve_opts *o)
{
	void *copy = malloc(o->init_size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, o->init, o->init_size);
	int r = fs_session_init_with(se, fs, copy, o->init_size, false);
	free(copy);
	if (r < 0)
		return r;
	if (o->serving)
		o->serving(o->serving_userdata, fuse_session_fd(se), NULL, 0);
	return 0;
}

int fs_serve(struct fs *fs, const char *mountpoint, const struct fs_serve_opts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	struct fuse_loop_config *cfg = NULL;
	char *fsname = escape_opt(o->fsname), *opts = NULL;
	int r = -ENOMEM;
	bool resume = o->resume_fd >= 0, handed = false;
	/* canonical, as mountinfo shows it; before the mount, which would make
	 * realpath wait for the INIT reply */
	char *canon = (o->kernel_readahead_kb || o->warm) && !resume ? realpath(mountpoint, NULL) : NULL;
	char devfd[32];

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
	se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), fs);
	if (!se) {
		ca_log_error("mount: %s: invalid mount options", o->fuse_opts ? o->fuse_opts : opts);
		goto out_args;
	}
	struct ca_stop_signals *stop = NULL;
	struct stopper st = { .se = se, .fs = fs, .keep_mounted = o->keep_mounted };
	signal(SIGPIPE, SIG_IGN); /* a write to a closed pipe is an error, not death */
	if ((r = ca_stop_signals_start(on_stop, &st, false, &stop)) < 0) {
		ca_log_error_errno(r, "mount: cannot set up signal handling");
		goto out_session;
	}
	/* libfuse takes "/dev/fd/N" as an open connection: no mount, and no
	 * mountpoint kept, so fuse_session_unmount does nothing for it */
	snprintf(devfd, sizeof(devfd), "/dev/fd/%d", o->resume_fd);
	if (fuse_session_mount(se, resume ? devfd : mountpoint) < 0) {
		ca_log_error("mount: %s: cannot mount", mountpoint);
		r = -EINVAL;
		goto out_signals;
	}
	if (canon && o->kernel_readahead_kb)
		raise_kernel_readahead(canon, o->kernel_readahead_kb);
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		r = ca_log_error_errno(ENOMEM, "mount");
		goto out_mount;
	}
	fuse_loop_cfg_set_max_threads(cfg, o->max_threads);
	fuse_loop_cfg_set_clone_fd(cfg, 0); /* a cloned fd's requests die with it; see keeper.h */
	r = resume ? replay_init(se, fs, o) : take_init(se, fs, o);
	handed = r == 0;
	if (r < 0) {
		ca_log_error_errno(r, "mount: %s", mountpoint);
		goto out_cfg;
	}
	if (!fuse_session_exited(se)) {
		if (resume)
			ca_log_info("%s: serving %s again", o->fsname, mountpoint);
		else
			ca_log_info("%s mounted on %s", o->fsname, mountpoint);
		if (canon && o->warm)
			fs_warm_start(o->warm, canon); /* its requests wait for the loop below */
		r = fuse_session_loop_mt(se, cfg);
	}
	ca_stop_signals_end(stop); /* it stops waking us; a later signal stays pending */
	stop = NULL;
	uint64_t left = fs_unanswered(fs);
	if (left && o->keep_mounted)
		ca_log_info("server: stopping: %" PRIu64 " requests not answered: the keeper has them resent to the "
		            "next server (or unmounts)", left);
	else if (left)
		ca_log_info("mount: stopping: %" PRIu64 " requests not answered: the unmount ends them", left);
	/* a positive value is the signal that ended the loop: a clean stop */
	if (r < 0)
		ca_log_error_errno(r, "mount: %s", mountpoint);
	r = r < 0 ? r : 0;
out_cfg:
	fuse_loop_cfg_destroy(cfg);
out_mount:
	/* a keeper unmounts once it has the connection; before that (a first
	 * server that failed before INIT) nobody else can */
	if (!o->keep_mounted || !handed)
		fuse_session_unmount(se);
out_signals:
	ca_stop_signals_end(stop);
out_session:
	fuse_session_destroy(se);
out_args:
	free(canon);
	fuse_opt_free_args(&args);
	free(opts);
	free(fsname);
	return r;
}
