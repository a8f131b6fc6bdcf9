/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_extract_int.h - what the three parts of the archive extractor
 * share (not part of the library's interface):
 *
 *   catar_extract.c       the walk: directories, entries, hidden new
 *                         directories, replacing and deleting in old ones
 *   catar_apply.c         an entry's metadata onto what was created
 *   catar_extract_pool.c  worker threads creating plain files, and
 *                         finishing directories, while the walk goes on
 *
 * struct ex is the state of one extract. The workers see only the pool,
 * their jobs and the tracks those point to, under pool.lock.
 */
#ifndef CA_CATAR_EXTRACT_INT_H
#define CA_CATAR_EXTRACT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "catar/catar_extract.h"
#include "catar/catar_node.h"
#include "catar/xattr_policy.h"

/* Worker threads create small plain files while the decoder goes on:
 * creating a file costs far more in the kernel than decoding it. */
#define POOL_THREADS_MAX 3u
#define JOB_SIZE_MAX (256u << 10) /* larger files the decoder thread writes itself */
#define QUEUE_LEN 128u
#define QUEUE_BYTES (16u << 20)
/* Finished jobs are kept for their buffers, by size class (4 KiB, 8 KiB,
 * ... JOB_SIZE_MAX): at most SPARE_PER_CLASS of each in the pool and as
 * many with the decoder, 4 MiB each at worst. */
#define JOB_CLASSES 7u
#define SPARE_PER_CLASS 8u
#define EX_SKIP_NAMES 4u /* distinct names the warning about skipped xattrs shows */

#define TIME_FLAGS                                                                                       \
	(CA_FORMAT_WITH_NSEC_TIME | CA_FORMAT_WITH_USEC_TIME | CA_FORMAT_WITH_SEC_TIME | CA_FORMAT_WITH_2SEC_TIME)
#define UID_FLAGS (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS)

struct names {
	char **v;
	size_t n, cap;
};

/* New directories are built out of sight: the outermost one under a
 * temporary name in its parent, renamed to its own when it is complete
 * (its whole subtree included). Everything inside it is then created
 * directly under its final name (one directory operation per entry, no
 * temporary name, no O_TMPFILE + link), yet no path under DEST ever shows
 * a partial file, and a new DEST appears complete or not at all. An
 * existing directory is updated in place: entries made there go through
 * a temporary name and a rename that replaces the old one. */
struct dir {
	int fd;
	bool fresh;         /* we created it: out of sight, nothing in it needs replacing or deleting */
	bool hidden_root;   /* fresh, in a directory that is not: under tmp in parent_fd until its end */
	int parent_fd;      /* hidden_root: the directory holding it (not ours to close) */
	char tmp[48];       /* hidden_root: its temporary name */
	bool plain;         /* no default ACL: files created here get their mode minus the umask */
	bool projinherit;   /* files created here may inherit a quota project id (FS_XFLAG_PROJINHERIT) */
	uid_t uid;          /* its owner when opened (we change it only at its end) */
	gid_t gid;
	gid_t child_gid;    /* the group a file created in it gets (setgid directories pass theirs on) */
	struct track *track; /* once a job for a file in it was queued */
	char *final_name;   /* hidden_root: its name (the node's, or DEST's last component) */
	struct names names; /* children the archive has, for --delete (not kept when fresh) */
};

/* The owner, mode and times a plain directory gets once it is complete. */
struct dir_meta {
	bool chown, times;
	uid_t uid;
	gid_t gid;
	mode_t mode;
	struct timespec ts[2];
};

/* A directory's queued files, shared by the decoder and the workers (under
 * pool.lock). The decoder does not wait at the end of a plain directory
 * whose files are still being written: it leaves the directory's fd and
 * metadata here, and the worker that finishes the last file applies them.
 * Waiting there would drain the queue at every directory end, leaving the
 * workers idle, and most directories of a real tree hold a few files. */
struct track {
	unsigned pending; /* jobs queued or running */
	bool left;        /* the decoder is done with it: fd and meta are the workers' */
	int fd;
	struct dir_meta meta;
	char *path; /* for messages */
};

/* One small regular file for a worker: everything apply_meta would do for
 * a file without xattrs, ACLs, fcaps or chattr flags. */
struct job {
	struct track *track;
	int dfd;
	mode_t create_mode, mode;
	bool chown, chmod, times;
	bool sparse; /* zero blocks as holes */
	uid_t uid;
	gid_t gid;
	struct timespec ts[2];
	size_t size;
	const char *name; /* in path's allocation */
	char *path;       /* for messages */
	unsigned cls;     /* data's room: 4 KiB << cls */
	struct job *next_spare;
	bool ran;         /* run by a worker, not dropped by the queue */
	int r;            /* what it ran to */
	uint8_t data[];
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t done; /* decoder: what it waits for came true (see worker_done) */
	struct ca_workq *q;  /* the workers (base/workq.h): QUEUE_LEN jobs, QUEUE_BYTES of buffers */
	bool abort;
	size_t outstanding;  /* jobs queued or running, directory metadata included */
	bool waiting;        /* the decoder waits in done: for wait_track, or a drain */
	bool wait_drain;
	struct track *wait_track;
	int err; /* a worker's first error (logged by it) */
	/* finished jobs, reused by the decoder (which takes the whole list at
	 * a submit): a fresh buffer per file cost a page fault per 4 KiB */
	struct job *spare[JOB_CLASSES];
	unsigned n_spare[JOB_CLASSES];
	bool started;
};

struct ex {
	struct ca_catar_dec *dec;
	const struct ca_catar_extract_opts *o;
	const char *dest;
	uint64_t flags;
	bool as_root;
	uid_t euid;
	gid_t egid;
	int umask; /* the process's, or -1 when unknown */
	bool warned_owner, warned_xattr, warned_acl, warned_chattr, warned_selinux, warned_projid;
	struct ca_xattr_policy policy; /* which of the archive's xattrs are applied */
	uint64_t xattr_skipped;        /* refused by it */
	char *skip_names[EX_SKIP_NAMES];
	bool skip_more;                /* and more names than those */
	struct dir *dirs;
	size_t depth, cap;
	uint8_t *buf;
	uint64_t done;
	bool read_failed;
	uint64_t uncreatable; /* entries that could not be made (device nodes as non-root): skipped */
	char tmp_base[17]; /* temporary names: ".#cafs" + this + a counter */
	unsigned tmp_n;
	int dest_parent_fd; /* a new DEST's parent, while DEST is hidden */
	unsigned n_threads; /* workers to start (0: none) */
	struct pool pool;
	struct job *spare[JOB_CLASSES]; /* the decoder's own spare jobs (taken from pool.spare) */
	int pool_err;      /* copy of pool.err, read by the decoder thread (atomic) */
};

/* catar_apply.c */
/* Log r for DEST/path (once, in the messages' format); returns r. */
int ca_ex_fail(struct ex *x, int r, const char *path);
void ca_ex_warn_once(bool *flag, int r, const char *what);
/* One warning for the xattrs the policy refused, if any. */
void ca_ex_report_skipped(struct ex *x);
void ca_ex_node_times(const struct ca_catar_node *n, struct timespec ts[2]);
/* Owner, mode, xattrs, ACLs, fcaps, times; the same order for every type
 * (chown clears setuid bits and capabilities, so it goes first). fd is the
 * node itself (files, directories) or -1 (use dfd + name). have_uid,
 * have_gid, have_mode: what the node has now (the chown and chmod are
 * skipped when they match); have_mode (mode_t)-1 when unknown. */
int ca_ex_apply_meta(struct ex *x, const struct ca_catar_node *n, int fd, int dfd, const char *name, bool fresh,
                     uid_t have_uid, gid_t have_gid, mode_t have_mode);
void ca_ex_apply_chattr(struct ex *x, const struct ca_catar_node *n, int fd, bool fresh);
/* The quota project id of a file or directory (before its chattr flags:
 * an immutable one takes no more changes). fresh_zero: it was just made
 * where nothing gives it a project id, so 0 needs no call. */
void ca_ex_apply_projid(struct ex *x, const struct ca_catar_node *n, int fd, bool fresh_zero);
/* The mode bits to give n, which is owned by the extracting user and gid:
 * as root n's own; else, as GNU tar, without the set-user-ID bit unless n
 * was this user's, and without set-group-ID unless n had that group (or
 * the archive records no owners): a setuid file the user now owns is a
 * hole the archive's owner never meant. */
mode_t ca_ex_keep_mode(const struct ex *x, const struct ca_catar_node *n, gid_t gid);
/* n (a device node, FIFO or socket) cannot be created here (r: why,
 * -EPERM as non-root): one line, counted, the extract goes on and fails at
 * its end. Returns 0. */
int ca_ex_skip_uncreatable(struct ex *x, const struct ca_catar_node *n, const char *path, int r);
/* Nothing to restore but owner, mode and times. */
bool ca_ex_plain_meta(const struct ex *x, const struct ca_catar_node *n);

/* catar_extract.c */
mode_t ca_ex_create_mode(const struct ex *x, const struct dir *p, uint64_t m);

/* catar_extract_pool.c */
bool ca_ex_job_eligible(const struct ex *x, const struct ca_catar_node *n, const struct dir *p);
int ca_ex_submit_job(struct ex *x, const struct ca_catar_node *n, struct dir *p, const char *path);
bool ca_ex_defer_dir(struct ex *x, const struct ca_catar_node *n, struct dir *d, const char *path);
int ca_ex_pool_wait_dir_locked(struct pool *p, struct dir *d);
int ca_ex_pool_drain(struct pool *p);
int ca_ex_pool_stop(struct ex *x, bool abort);

#endif
