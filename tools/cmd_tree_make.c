/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_tree_make.c - making archives (.catar/.caidx) of directories, and
 * the digests `casync digest` prints for directories and archives.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "catar_enc.h"
#include "cmd.h"
#include "interrupt.h"
#include "digest.h"
#include "digest_pipe.h"
#include "fdio.h"
#include "feature.h"
#include "log.h"
#include "make.h"
#include "progress.h"

/* casync's rule: --with replaces the default (every WITH bit), --without
 * removes, the exclusion and digest options add their bits, then the set
 * is normalized. */
static uint64_t archive_flags(const struct cafs_make_args *a)
{
	uint64_t f = (a->with_set ? a->with : CA_FORMAT_WITH_MASK) & ~a->without & CA_FORMAT_WITH_MASK;
	if (a->exclude_nodump)
		f |= CA_FORMAT_EXCLUDE_NODUMP;
	if (a->exclude_submounts)
		f |= CA_FORMAT_EXCLUDE_SUBMOUNTS;
	if (a->exclude_file)
		f |= CA_FORMAT_EXCLUDE_FILE;
	if (a->ch.digest == CA_DIGEST_SHA512_256)
		f |= CA_FORMAT_SHA512_256;
	return ca_feature_normalize(f);
}

/* One fd per directory level is open during the walk. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int open_input_dir(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ca_log_error_errno(errno, "%s", path);
	if (fstat(fd, st) < 0) {
		int r = ca_log_error_errno(errno, "%s", path);
		close(fd);
		return r;
	}
	if (!S_ISDIR(st->st_mode)) {
		close(fd);
		return ca_log_error_errno(ENOTDIR, "%s", path);
	}
	return fd;
}

/* sink for .catar files and digests: optional fd, running digest */
struct file_sink {
	int fd;
	struct ca_digest_pipe *dp; /* hashing overlaps reading the tree and writing the archive */
	int err; /* first failure, to tell the sink's errors from the walk's */
	bool digest_failed;
};

static int file_sink_write(void *userdata, const void *p, size_t n)
{
	struct file_sink *s = userdata;
	if (*cafs_interrupt_flag()) {
		s->err = -ECANCELED;
		return -ECANCELED;
	}
	int r = ca_digest_pipe_push(s->dp, p, n);
	s->digest_failed = r < 0;
	if (r == 0 && s->fd >= 0)
		r = ca_write_all(s->fd, p, n);
	if (r < 0 && !s->err)
		s->err = r;
	return r;
}

struct maker_sink {
	struct ca_maker *m;
	int err;
};

static int maker_sink_write(void *userdata, const void *p, size_t n)
{
	struct maker_sink *s = userdata;
	int r = ca_maker_feed(s->m, p, n);
	if (r < 0 && !s->err)
		s->err = r;
	return r;
}

static int make_catar(const struct cafs_make_args *a, int in_fd, const struct stat *st, uint64_t flags)
{
	struct ca_atomic_file af = { .fd = -1 };
	struct file_sink s = { .fd = -1 };
	uint8_t d[CA_CHUNK_ID_SIZE];
	int r;

	r = ca_digest_pipe_new(ca_digest_type_from_flags(flags), &s.dp);
	if (r < 0)
		return ca_log_error_errno(r, "digest"), 1;
	/* casync gives the archive the input's read/write bits */
	r = ca_atomic_file_open(&af, a->out, st->st_mode & 0666);
	if (r < 0) {
		ca_log_error_errno(r, "%s", a->out);
		goto fail;
	}
	s.fd = af.fd;
	struct ca_catar_enc_opts o = {
		.feature_flags = flags, .write = file_sink_write, .userdata = &s, .root_name = a->input,
	};
	r = ca_catar_encode(in_fd, &o, NULL);
	if (r < 0) {
		if (s.err)
			ca_log_error_errno(s.err, "%s", s.digest_failed ? "digest" : a->out);
		goto fail;
	}
	r = ca_digest_pipe_finish(s.dp, d);
	s.dp = NULL;
	if (r < 0) {
		ca_log_error_errno(r, "digest");
		goto fail_nodigest;
	}
	r = ca_atomic_file_commit(&af);
	if (r < 0) {
		ca_log_error_errno(r, "%s", a->out);
		goto fail_nodigest;
	}
	cafs_print_digest(d);
	return 0;
fail:
	ca_digest_pipe_finish(s.dp, NULL);
fail_nodigest:
	ca_atomic_file_abort(&af);
	return 1;
}

static int make_caidx(const struct cafs_make_args *a, int in_fd, const struct stat *st, uint64_t flags)
{
	struct ca_make_opts o = {
		.chunk_min = a->ch.min, .chunk_avg = a->ch.avg, .chunk_max = a->ch.max,
		.feature_flags = flags,
		.index_path = a->out,
		.index_mode = st->st_mode & 0666,
		.threads = a->threads,
		.cancel = cafs_interrupt_flag(),
	};
	struct maker_sink s = { 0 };
	struct cafs_progress prog;
	struct ca_make_stats stats;
	uint8_t d[CA_CHUNK_ID_SIZE];
	char *def = NULL;
	int r;

	if (a->store) {
		o.store_path = a->store;
	} else {
		def = ca_location_default_store(a->out);
		if (!def)
			return ca_log_error_errno(ENOMEM, "store"), 1;
		o.store_path = def;
	}
	cafs_progress_init(&prog, "make", 0);
	o.progress = cafs_progress_update;
	o.progress_userdata = &prog;
	r = ca_maker_new(&o, &s.m);
	if (r < 0) {
		cafs_progress_done(&prog);
		ca_log_error_errno(r, "%s", a->out);
		goto fail;
	}
	struct ca_catar_enc_opts eo = {
		.feature_flags = flags, .write = maker_sink_write, .userdata = &s, .root_name = a->input,
	};
	r = ca_catar_encode(in_fd, &eo, NULL);
	if (r < 0) {
		cafs_progress_done(&prog);
		if (s.err)
			ca_log_error_errno(s.err, "%s", a->out);
		goto fail;
	}
	r = ca_maker_finish(s.m, d, &stats);
	cafs_progress_done(&prog);
	if (r < 0) {
		ca_log_error_errno(r, "%s", a->out);
		goto fail;
	}
	ca_maker_free(s.m);
	free(def);
	cafs_print_digest(d);
	cafs_log_make_stats(&stats);
	return 0;
fail:
	ca_maker_free(s.m);
	free(def);
	return 1;
}

int cafs_make_archive(const struct cafs_make_args *a)
{
	uint64_t flags = archive_flags(a);
	struct stat st;
	int fd, r;

	fd = open_input_dir(a->input, &st);
	if (fd < 0)
		return 1;
	raise_fd_limit();
	if (ca_location_image_kind(a->out) == CA_IMAGE_ARCHIVE)
		r = make_catar(a, fd, &st, flags);
	else
		r = make_caidx(a, fd, &st, flags);
	close(fd);
	return r;
}

/* ---- digests ---- */

static int digest_dir(const char *path)
{
	struct file_sink s = { .fd = -1 };
	uint8_t d[CA_CHUNK_ID_SIZE];
	struct stat st;
	int fd, r;

	fd = open_input_dir(path, &st);
	if (fd < 0)
		return 1;
	raise_fd_limit();
	r = ca_digest_pipe_new(ca_digest_type_from_flags(CA_FORMAT_DEFAULT), &s.dp);
	if (r < 0) {
		close(fd);
		return ca_log_error_errno(r, "digest"), 1;
	}
	struct ca_catar_enc_opts o = {
		.feature_flags = CA_FORMAT_DEFAULT, .write = file_sink_write, .userdata = &s, .root_name = path,
	};
	r = ca_catar_encode(fd, &o, NULL);
	if (r < 0 && s.err)
		ca_log_error_errno(s.err, "digest");
	int k = ca_digest_pipe_finish(s.dp, r == 0 ? d : NULL);
	if (r == 0 && k < 0)
		r = ca_log_error_errno(k, "digest");
	if (r == 0)
		cafs_print_digest(d);
	close(fd);
	return r < 0 ? 1 : 0;
}

int cafs_digest_tree(const char *path, char **stores, size_t n_stores)
{
	switch (ca_location_image_kind(path)) {
	case CA_IMAGE_ARCHIVE:
	case CA_IMAGE_ARCHIVE_INDEX:
		/* decoded and validated on the way (cmd_tree_read.c) */
		return cafs_digest_archive(path, stores, n_stores);
	default:
		return digest_dir(path);
	}
}
