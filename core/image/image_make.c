/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * image_make.c - make an image (.caibx, .caidx, .catar) from a file or a
 * directory: input checks, feature flags, the default store, and the
 * wiring of input -> (catar encoder) -> make pipeline or file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/buf.h"
#include "catar/catar_enc.h"
#include "catar/catar_ra.h"
#include "chunk/chunker.h"
#include "chunk/compress.h"
#include "base/digest_pipe.h"
#include "base/fdio.h"
#include "base/thread.h"
#include "format/feature.h"
#include "image/archive_reader.h"
#include "image/image_make.h"
#include "base/log.h"
#include "image/profile.h"
#include "image/sidecar.h"
#include "image/source.h"
#include "format/index.h"
#include "store/chunksrc.h"
#include "net/failover.h"
#include "net/oci.h"
#include "net/remote.h"
#include "net/s3.h"
#include "store/store_writer.h"
#include "trust/trust.h"

void ca_image_make_opts_init(struct ca_image_make_opts *o)
{
	*o = (struct ca_image_make_opts){
		.chunk_min = CA_CHUNK_SIZE_AVG_DEFAULT / 4,
		.chunk_avg = CA_CHUNK_SIZE_AVG_DEFAULT,
		.chunk_max = CA_CHUNK_SIZE_AVG_DEFAULT * 4,
		.digest = CA_DIGEST_SHA512_256,
		.exclude_nodump = true,
		.exclude_file = true,
	};
}

/* The feature flags make writes for an image of this kind (normalized):
 * for a blob only the digest and the exclusion bits casync always sets;
 * for an archive casync's rule: (--with, or every WITH bit) minus
 * --without, plus the exclusion and digest bits. */
static uint64_t image_flags(enum ca_image_kind kind, const struct ca_image_make_opts *o)
{
	uint64_t sha = o->digest == CA_DIGEST_SHA512_256 ? CA_FORMAT_SHA512_256 : 0;
	/* casync writes these two into every blob index, whatever was asked */
	if (kind == CA_IMAGE_BLOB_INDEX)
		return sha | CA_FORMAT_EXCLUDE_NODUMP | CA_FORMAT_EXCLUDE_FILE;
	uint64_t f = (o->with_set ? o->with : CA_FORMAT_WITH_MASK) & ~o->without & CA_FORMAT_WITH_MASK;
	if (o->exclude_nodump)
		f |= CA_FORMAT_EXCLUDE_NODUMP;
	if (o->exclude_submounts)
		f |= CA_FORMAT_EXCLUDE_SUBMOUNTS;
	if (o->exclude_file)
		f |= CA_FORMAT_EXCLUDE_FILE;
	return ca_feature_normalize(f | sha);
}

/* One make: what every path needs to report and clean up. */
struct make_ctx {
	const char *out, *in_name;
	const struct ca_image_make_opts *o;
	int in_fd;
	struct stat st;
	uint64_t flags;
	bool started, ended;
};

static void progress_end(struct make_ctx *c)
{
	if (c->started && !c->ended && c->o->progress_end)
		c->o->progress_end(c->o->progress_userdata);
	c->ended = true;
}

/* The one way a make fails: erase the progress first, then one line
 * (none for a cancel: the canceller knows). Returns r. */
static int make_fail(struct make_ctx *c, int r, const char *what)
{
	progress_end(c);
	if (r == -ECANCELED)
		return r;
	return ca_log_error_errno(r, "%s", what);
}

/* Sink for a .catar and for digests: optional fd, running digest. */
struct file_sink {
	int fd;
	struct ca_digest_pipe *dp; /* hashing overlaps reading the tree and writing the archive */
	const struct ca_image_make_opts *o; /* progress and cancel; NULL for none */
	uint64_t written;
	int err; /* first failure, to tell the sink's errors from the walk's */
	bool digest_failed;
};

static int file_sink_write(void *userdata, const void *p, size_t n)
{
	struct file_sink *s = userdata;
	/* the encoder has no cancel flag of its own: every block passes here */
	if (s->o && s->o->cancel && *s->o->cancel) {
		s->err = -ECANCELED;
		return -ECANCELED;
	}
	int r = ca_digest_pipe_push(s->dp, p, n);
	s->digest_failed = r < 0;
	if (r == 0 && s->fd >= 0)
		r = ca_write_all(s->fd, p, n);
	if (r < 0 && !s->err)
		s->err = r;
	s->written += n;
	if (r == 0 && s->o && s->o->progress)
		s->o->progress(s->o->progress_userdata, s->written);
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

static void maker_opts(const struct make_ctx *c, const char *store, struct ca_make_opts *ret)
{
	*ret = (struct ca_make_opts){
		.chunk_min = c->o->chunk_min, .chunk_avg = c->o->chunk_avg, .chunk_max = c->o->chunk_max,
		.feature_flags = c->flags,
		.store_path = store,
		.index_path = c->out,
		.threads = c->o->threads,
		.progress = c->o->progress,
		.progress_userdata = c->o->progress_userdata,
		.cancel = c->o->cancel,
		.compression = c->o->compression,
		.store_writer = c->o->store_writer,
	};
}

static int make_blob(struct make_ctx *c, const char *store, uint8_t ret_digest[CA_CHUNK_ID_SIZE],
                     struct ca_make_stats *ret_stats)
{
	struct ca_make_opts mo;
	struct ca_maker *m = NULL;
	int r;

	maker_opts(c, store, &mo);
	mo.index_mode = S_ISREG(c->st.st_mode) ? c->st.st_mode & 0666 : 0644;
	r = ca_maker_new(&mo, &m);
	if (r < 0) {
		make_fail(c, r, c->out);
		goto out;
	}
	r = ca_maker_feed_fd(m, c->in_fd);
	if (r < 0) {
		/* the pipeline's own errors (store, index) surface here too */
		const char *p = ca_maker_error_path(m);
		make_fail(c, r, p ? p : c->in_name);
		goto out;
	}
	r = ca_maker_finish(m, ret_digest, ret_stats);
	if (r < 0) {
		const char *p = ca_maker_error_path(m);
		make_fail(c, r, p ? p : c->out);
	}
out:
	ca_maker_free(m);
	return r;
}

/* The metadata sidecar beside a new .caidx (sidecar.h), built from the
 * encoder's calls as the archive is made (NULL sc: none wanted). Only an
 * optimization: failing to make it leaves a good image, said in one
 * warning. */
static void write_sidecar(struct make_ctx *c, struct ca_sidecar_stream *sc, uint64_t archive_size)
{
	if (sc && ca_sidecar_stream_write_local(sc, c->out, archive_size) < 0)
		ca_log_warning("%s: made without a metadata sidecar", c->out);
}

static int make_caidx(struct make_ctx *c, const char *store, uint8_t ret_digest[CA_CHUNK_ID_SIZE],
                      struct ca_make_stats *ret_stats)
{
	struct ca_make_opts mo;
	struct maker_sink s = { 0 };
	struct ca_sidecar_stream *sc = NULL;
	struct ca_catar_enc_observer obs;
	struct ca_make_stats stats;
	int r;

	maker_opts(c, store, &mo);
	mo.index_mode = c->st.st_mode & 0666;
	r = ca_maker_new(&mo, &s.m);
	/* no sidecar with a store writer: it says where chunks go, not
	 * where a sidecar could (an S3 bucket) */
	if (r == 0 && !c->o->no_sidecar && (!c->o->store_writer || c->o->writer_sidecar)) {
		r = ca_sidecar_stream_new(&sc);
		if (r == 0)
			ca_sidecar_stream_observer(sc, &obs);
	}
	if (r < 0) {
		make_fail(c, r, c->out);
		goto out;
	}
	struct ca_catar_enc_opts eo = {
		.feature_flags = c->flags, .write = maker_sink_write, .userdata = &s, .root_name = c->in_name,
		.uid_shift = c->o->uid_shift, .observer = sc ? &obs : NULL,
	};
	r = ca_catar_encode(c->in_fd, &eo, NULL);
	if (r < 0) {
		/* the walk's own errors are logged by the encoder */
		if (s.err)
			make_fail(c, s.err, ca_maker_error_path(s.m) ? ca_maker_error_path(s.m) : c->out);
		progress_end(c);
		goto out;
	}
	r = ca_maker_finish(s.m, ret_digest, &stats);
	if (r < 0) /* the store's failure names the store (an upload, a sync) */
		make_fail(c, r, ca_maker_error_path(s.m) ? ca_maker_error_path(s.m) : c->out);
	if (r == 0)
		write_sidecar(c, sc, stats.bytes);
	if (ret_stats)
		*ret_stats = stats;
out:
	ca_sidecar_stream_free(sc);
	ca_maker_free(s.m);
	return r;
}

/* Encode the directory at c->in_fd into fd (-1: nowhere), returning the
 * stream's digest. */
static int encode_to(struct make_ctx *c, int fd, uint8_t ret_digest[CA_CHUNK_ID_SIZE], uint64_t *ret_size)
{
	struct file_sink s = { .fd = fd, .o = c->o };
	int r = ca_digest_pipe_new(ca_digest_type_from_flags(c->flags), &s.dp);
	if (r < 0)
		return make_fail(c, r, "digest");
	struct ca_catar_enc_opts eo = {
		.feature_flags = c->flags, .write = file_sink_write, .userdata = &s, .root_name = c->in_name,
		.uid_shift = c->o->uid_shift,
	};
	r = ca_catar_encode(c->in_fd, &eo, ret_size);
	if (r < 0) {
		if (s.err)
			make_fail(c, s.err, s.digest_failed ? "digest" : c->out ? c->out : "digest");
		progress_end(c);
	}
	int k = ca_digest_pipe_finish(s.dp, r == 0 ? ret_digest : NULL);
	if (r == 0 && k < 0)
		r = make_fail(c, k, "digest");
	return r;
}

static int make_catar(struct make_ctx *c, uint8_t ret_digest[CA_CHUNK_ID_SIZE], struct ca_make_stats *ret_stats)
{
	struct ca_atomic_file af = { .fd = -1 };
	uint64_t size = 0;
	/* casync gives the archive the input's read/write bits */
	int r = ca_atomic_file_open(&af, c->out, c->st.st_mode & 0666);
	if (r < 0) {
		make_fail(c, r, c->out);
		goto out;
	}
	af.durable = true;
	r = encode_to(c, af.fd, ret_digest, &size);
	if (r < 0)
		goto out;
	r = ca_atomic_file_commit(&af);
	if (r < 0) {
		make_fail(c, r, c->out);
		goto out;
	}
	if (ret_stats)
		*ret_stats = (struct ca_make_stats){ .bytes = size };
out:
	ca_atomic_file_abort(&af); /* nothing left to undo once committed */
	return r;
}

/* fstat the input and check it suits the kind: a directory for an
 * archive, anything else for a blob. Sets c->st. */
static int check_input(struct make_ctx *c, bool want_dir)
{
	if (fstat(c->in_fd, &c->st) < 0)
		return make_fail(c, -errno, c->in_name);
	if (want_dir && !S_ISDIR(c->st.st_mode))
		return make_fail(c, -ENOTDIR, c->in_name);
	if (!want_dir && S_ISDIR(c->st.st_mode))
		return make_fail(c, -EISDIR, c->in_name);
	if (S_ISBLK(c->st.st_mode)) {
		/* a block device's size is not in st_size: for the progress total */
		uint64_t size;
		if (ioctl(c->in_fd, BLKGETSIZE64, &size) == 0)
			c->st.st_size = (off_t)size;
	}
	return 0;
}

static int bad_kind(const char *out)
{
	ca_log_error("%s: output must end in .caibx, .caidx or .catar", out);
	return -EINVAL;
}

/* ca_image_make from an open fd (not closed; read from its current position for a
 * blob). in_name names the input in messages and is the archive root's
 * name in them. */
static int make_fd(const char *out, int in_fd, const char *in_name, const struct ca_image_make_opts *o,
                   uint8_t ret_digest[CA_CHUNK_ID_SIZE], struct ca_make_stats *ret_stats)
{
	struct make_ctx c = { .out = out, .in_name = in_name, .o = o, .in_fd = in_fd };
	enum ca_image_kind kind = ca_location_image_kind(out);
	char *def = NULL;
	int r;

	if (kind == CA_IMAGE_UNKNOWN) {
		r = bad_kind(out);
		goto out;
	}
	/* raised before we began (a signal racing the start): touch nothing */
	if (o->cancel && *o->cancel) {
		r = -ECANCELED;
		goto out;
	}
	r = check_input(&c, kind != CA_IMAGE_BLOB_INDEX);
	if (r < 0)
		goto out;
	c.flags = image_flags(kind, o);
	const char *store = o->store;
	if (!store && kind != CA_IMAGE_ARCHIVE) {
		def = ca_location_default_store(out);
		if (!def) {
			r = make_fail(&c, -ENOMEM, "store");
			goto out;
		}
		store = def;
	}
	c.started = true;
	if (o->progress_start) {
		bool sized = kind == CA_IMAGE_BLOB_INDEX && (S_ISREG(c.st.st_mode) || S_ISBLK(c.st.st_mode));
		o->progress_start(o->progress_userdata, sized ? (uint64_t)c.st.st_size : 0);
	}
	switch (kind) {
	case CA_IMAGE_BLOB_INDEX:
		r = make_blob(&c, store, ret_digest, ret_stats);
		break;
	case CA_IMAGE_ARCHIVE_INDEX:
		r = make_caidx(&c, store, ret_digest, ret_stats);
		break;
	default:
		r = make_catar(&c, ret_digest, ret_stats);
		break;
	}
	progress_end(&c);
out:
	free(def);
	return r;
}

/* The input as make_fd wants it: "-" is stdin for a blob only
 * (an archive is made of a directory, which cannot come down a pipe). */
static int open_input(const char *input, bool blob, bool *ret_stdin)
{
	*ret_stdin = blob && !strcmp(input, "-");
	if (*ret_stdin)
		return STDIN_FILENO;
	int fd = open(input, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? ca_log_error_errno(errno, "%s", input) : fd;
}

/* ca_image_make once out and the store are local paths (and the store
 * maybe a writer) */
static int make_local(const char *out, const char *input, const struct ca_image_make_opts *o,
                      uint8_t ret_digest[CA_CHUNK_ID_SIZE], struct ca_make_stats *ret_stats)
{
	enum ca_image_kind kind = ca_location_image_kind(out);
	bool is_stdin;
	if (kind == CA_IMAGE_UNKNOWN)
		return bad_kind(out);
	int fd = open_input(input, kind == CA_IMAGE_BLOB_INDEX, &is_stdin);
	if (fd < 0)
		return fd;
	int r = make_fd(out, fd, input, o, ret_digest, ret_stats);
	if (!is_stdin)
		close(fd);
	return r;
}

/* the reason into msg, the caller's usage error */
#define refuse(msg, len, ...) (snprintf((msg), (len), __VA_ARGS__), -EINVAL)

int ca_image_make_sidecar_of(const char *in, char *const *stores, size_t n_stores, const char *out)
{
	char *def_out = NULL;
	struct ca_image *im = NULL;
	int r = 0;
	if (!out) {
		def_out = ca_sidecar_name_for(ca_location_path(in));
		if (!def_out) {
			r = ca_log_error_errno(-ENOMEM, "meta");
			goto out;
		}
		out = def_out;
	}
	struct ca_image_opts io = { .stores = stores, .n_stores = n_stores, .lru_bytes = CA_ARCHIVE_READER_LRU,
		                    .cache_mode = CA_CACHE_AUTO, .no_sidecar = true };
	r = ca_image_open(in, &io, &im); /* logs */
	if (r == 0)
		r = ca_image_make_sidecar(im, out); /* logs */
out:
	ca_image_free(im);
	free(def_out);
	return r;
}

/* minisign's longest password */
#define SIGN_PASSWORD_MAX 1024

static int sign_local(const char *path, const struct ca_image_sign_opts *o);

/* An index in a registry: fetched into a private temporary directory
 * under its tag's name, signed there, and the signature uploaded as the
 * tag NAME.minisig beside it (oci.h). */
static int sign_registry(const char *url, const struct ca_image_sign_opts *o)
{
	struct ca_buf b = CA_BUF_INIT;
	struct ca_http_opts ho;
	const char *t = getenv("TMPDIR");
	char *dir = NULL, *path = NULL, *sig = NULL, *sig_url = NULL;
	size_t n = strcspn(url, "?#");
	const char *slash = memrchr(url, '/', n);
	int r = 0, fd = -1;
	ca_source_http_opts(&ho);
	if (asprintf(&dir, "%s/cafs-sign-XXXXXX", t && *t ? t : "/tmp") < 0) {
		dir = NULL;
		r = -ENOMEM;
	} else if (!mkdtemp(dir)) {
		r = ca_log_error_errno(errno, "temporary directory");
		free(dir);
		dir = NULL;
	}
	if (r == 0 && (asprintf(&path, "%s/%.*s", dir, (int)(n - (size_t)(slash + 1 - url)), slash + 1) < 0 ||
	               asprintf(&sig, "%s.minisig", path) < 0 || !(sig_url = ca_location_beside(url, ".minisig"))))
		r = -ENOMEM;
	if (r == 0) {
		r = ca_remote_get_file(url, (size_t)1 << 30, &ho, &b);
		if (r < 0 && !ca_oci_said(r))
			ca_log_error_errno(r, "%s", url);
	}
	if (r == 0) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		r = fd < 0 ? -errno : ca_write_all(fd, b.data, b.size);
		if (fd >= 0 && close(fd) < 0 && r == 0)
			r = -errno;
		if (r < 0)
			ca_log_error_errno(r, "%s", path);
	}
	if (r == 0)
		r = sign_local(path, o); /* logs */
	ca_buf_release(&b);
	if (r == 0) {
		fd = open(sig, O_RDONLY | O_CLOEXEC);
		char chunk[4096];
		r = fd < 0 ? -errno : 0;
		for (ssize_t k; r == 0 && (k = read(fd, chunk, sizeof(chunk))) != 0;)
			r = k < 0 ? -errno : ca_buf_append(&b, chunk, (size_t)k, 1u << 20);
		if (fd >= 0)
			close(fd);
	}
	if (r == 0) {
		r = ca_oci_put_file(sig_url, &ho, b.data, b.size);
		if (r < 0 && !ca_oci_said(r))
			ca_log_error_errno(r, "%s", sig_url);
	}
	ca_buf_release(&b);
	if (sig)
		unlink(sig);
	if (path)
		unlink(path);
	if (dir)
		rmdir(dir);
	free(sig_url);
	free(sig);
	free(path);
	free(dir);
	return r;
}

int ca_image_sign(const char *path, const struct ca_image_sign_opts *o)
{
	return ca_location_is_oci(path) ? sign_registry(path, o) : sign_local(path, o);
}

static int sign_local(const char *path, const struct ca_image_sign_opts *o)
{
	struct ca_minisign_secret key;
	char password[SIGN_PASSWORD_MAX];
	int r = ca_trust_load_secret(o->secret_key, NULL, &key);
	if (r == -ENOKEY) {
		if (!o->password || o->password(password, sizeof(password), o->userdata) < 0) {
			ca_log_error("%s: no password given", o->secret_key);
			r = -EINVAL;
		} else {
			r = ca_trust_load_secret(o->secret_key, password, &key); /* logs */
		}
		explicit_bzero(password, sizeof(password));
	}
	if (r == 0)
		r = ca_trust_sign_file(path, &key, o->legacy, o->name, o->trusted_comment,
		                       o->untrusted_comment); /* logs */
	explicit_bzero(&key, sizeof(key));
	return r;
}

int ca_image_make_set_chunk_size(struct ca_image_make_opts *o, const char *s)
{
	return ca_chunk_size_parse(s, &o->chunk_min, &o->chunk_avg, &o->chunk_max);
}

int ca_image_make_set_feature(struct ca_image_make_opts *o, const char *name, bool with)
{
	uint64_t f;
	int r = ca_feature_parse_name(name, &f);
	if (r < 0)
		return r;
	if (with) {
		o->with |= f;
		o->with_set = true;
	} else {
		o->without |= f;
	}
	return 0;
}

int ca_image_make_set_compression(struct ca_image_make_opts *o, const char *name)
{
	struct ca_codec *codec = NULL;
	int r = ca_compression_parse(name, &o->compression);
	if (r < 0)
		return -EINVAL;
	/* a codec made now says whether this build has its library */
	r = ca_codec_new(CA_DIGEST_SHA512_256, &codec);
	if (r == 0)
		r = ca_codec_set_compression(codec, o->compression);
	ca_codec_free(codec);
	return r;
}

/* A bucket or a registry's repository (oci.h): written by uploads. */
static bool remote_out(const char *s)
{
	return ca_s3_is_url(s) || ca_location_is_oci(s);
}

int ca_image_make_check(const char *out, const struct ca_image_make_opts *o, char *msg, size_t len)
{
	bool s3_out = remote_out(out);
	*msg = 0;
	if (s3_out && ca_location_image_kind(out) == CA_IMAGE_ARCHIVE)
		return refuse(msg, len, "%s: a .catar cannot be written to a bucket: make an index", out);
	if (o->store && ca_failover_is_group(o->store)) {
		ca_log_error("%s: a failover group is read from, not written to: give one store", o->store);
		return -EINVAL;
	}
	const char *w[] = { out, o->store };
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		if (!w[i] || remote_out(w[i]))
			continue;
		if (!ca_location_path(w[i]) || ca_location_kind(w[i]) != CA_LOCATION_PATH)
			return refuse(msg, len, "%s: cannot write to a URL", w[i]);
	}
	/* named as the user would see it made: a file:// URL as its path */
	const char *shown = s3_out ? out : ca_location_path(out);
	enum ca_image_kind kind = ca_location_image_kind(shown);
	if (kind == CA_IMAGE_UNKNOWN)
		return refuse(msg, len, "%s: output must end in .caibx, .caidx or .catar", shown);
	if (o->profile && kind == CA_IMAGE_ARCHIVE)
		return refuse(msg, len, "--profile is for an index (.caidx or .caibx), not %s", shown);
	return 0;
}

/* An index for a bucket is made in a private temporary directory, then
 * uploaded: *ret_out is the local name to make (malloc'd). */
static int bucket_make_out(const char *url, char **ret_dir, char **ret_out)
{
	const char *t = getenv("TMPDIR");
	char *dir = NULL, *name = ca_location_basename(url), *out = NULL;
	const char *suffix = ca_location_image_kind(url) == CA_IMAGE_BLOB_INDEX ? ".caibx" : ".caidx";
	if (!name || asprintf(&dir, "%s/cafs-make-XXXXXX", t && *t ? t : "/tmp") < 0)
		dir = NULL;
	if (!dir || !mkdtemp(dir) || asprintf(&out, "%s/%s%s", dir, name, suffix) < 0) {
		int e = dir ? errno : ENOMEM;
		free(name);
		free(dir);
		return ca_log_error_errno(e, "temporary directory");
	}
	free(name);
	*ret_dir = dir;
	*ret_out = out;
	return 0;
}

/* The index made locally at path, uploaded whole to the bucket's url. */
static int bucket_upload(const char *path, const char *url)
{
	struct ca_buf b = CA_BUF_INIT;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r = fd < 0 ? -errno : 0;
	char chunk[65536];
	for (ssize_t n; r == 0 && (n = read(fd, chunk, sizeof(chunk))) != 0;)
		r = n < 0 ? (errno == EINTR ? 0 : -errno) : ca_buf_append(&b, chunk, (size_t)n, (size_t)1 << 30);
	if (fd >= 0)
		close(fd);
	if (r == 0) {
		struct ca_http_opts ho;
		ca_source_http_opts(&ho);
		r = ca_location_is_oci(url) ? ca_oci_put_file(url, &ho, b.data, b.size)
		                            : ca_s3_put_file(url, NULL, &ho, b.data, b.size);
	}
	if (r < 0)
		ca_log_error_errno(r, "%s", url);
	ca_buf_release(&b);
	return r;
}

/* The files made beside the index at path (its profile, sidecar), each
 * uploaded as an artifact tagged with its name, then removed. */
static int registry_upload_beside(const char *path, const char *url)
{
	static const char *const suffixes[] = { CA_PROFILE_SUFFIX, CA_SIDECAR_SUFFIX };
	int r = 0;
	for (size_t i = 0; r == 0 && i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		char *lp = ca_location_beside(path, suffixes[i]), *ru = ca_location_beside(url, suffixes[i]);
		if (!lp || !ru)
			r = -ENOMEM;
		else if (access(lp, F_OK) == 0)
			r = bucket_upload(lp, ru);
		if (lp)
			unlink(lp);
		free(lp);
		free(ru);
	}
	return r;
}

int ca_image_make(const char *out, const char *input, const struct ca_image_make_opts *o,
                  uint8_t ret_digest[CA_CHUNK_ID_SIZE], struct ca_make_stats *ret_stats)
{
	struct ca_image_make_opts lo = *o;
	struct ca_profile *prof = NULL;
	struct ca_store_writer *sw = NULL;
	char *def_store = NULL, *tmp_dir = NULL, *tmp_out = NULL;
	const char *bucket_out = remote_out(out) ? out : NULL;
	char msg[512];
	int r = ca_image_make_check(out, o, msg, sizeof(msg));
	if (r < 0) {
		if (*msg)
			ca_log_error("%s", msg);
		return r;
	}
	if (!lo.store && bucket_out) {
		lo.store = def_store = ca_location_default_store(out);
		if (!def_store)
			return ca_log_error_errno(ENOMEM, "store");
	}
	if (lo.store && !remote_out(lo.store))
		lo.store = ca_location_path(lo.store);
	if (!bucket_out)
		out = ca_location_path(out);
	/* checked before the work: a profile that cannot be copied fails now */
	r = o->profile ? ca_profile_load(o->profile, &prof) : 0;
	if (r == -EBADMSG)
		ca_log_error("%s: not a valid prefetch profile", o->profile);
	else if (r < 0)
		ca_log_error_errno(r, "%s", o->profile);
	if (r == 0 && bucket_out) {
		r = bucket_make_out(out, &tmp_dir, &tmp_out);
		out = tmp_out;
	}
	if (r == 0 && !lo.store_writer && lo.store && remote_out(lo.store)) {
		struct ca_http_opts ho;
		ca_source_http_opts(&ho);
		r = ca_store_writer_open(lo.store, &ho, &sw); /* logs its errors */
		lo.store_writer = sw;
		/* a registry takes the sidecar beside the index, as a tag */
		lo.writer_sidecar = bucket_out && ca_location_is_oci(bucket_out);
	}
	if (r == 0)
		r = make_local(out, input, &lo, ret_digest, ret_stats); /* logs its errors */
	if (r == 0 && prof)
		r = ca_profile_write_beside(prof, out); /* logs */
	if (r == 0 && bucket_out)
		r = bucket_upload(out, bucket_out);
	if (r == 0 && bucket_out && ca_location_is_oci(bucket_out))
		r = registry_upload_beside(out, bucket_out);
	ca_profile_free(prof);
	ca_store_writer_free(sw);
	if (tmp_dir) {
		if (tmp_out)
			unlink(tmp_out);
		rmdir(tmp_dir);
	}
	free(tmp_out);
	free(tmp_dir);
	free(def_store);
	return r;
}

int ca_image_digest_dir(const char *dir, enum ca_digest_type digest, const volatile sig_atomic_t *cancel,
                        uint8_t ret_digest[CA_CHUNK_ID_SIZE])
{
	struct ca_image_make_opts o;
	ca_image_make_opts_init(&o);
	o.cancel = cancel;
	/* the digest type is a feature flag: it changes the stream, not only its hash */
	uint64_t flags = digest == CA_DIGEST_SHA256 ? CA_FORMAT_DEFAULT & ~CA_FORMAT_SHA512_256 : CA_FORMAT_DEFAULT;
	struct make_ctx c = { .in_name = dir, .o = &o, .flags = flags };
	bool is_stdin;
	c.in_fd = open_input(dir, false, &is_stdin);
	if (c.in_fd < 0)
		return c.in_fd;
	int r = check_input(&c, true);
	if (r == 0)
		r = encode_to(&c, -1, ret_digest, NULL);
	close(c.in_fd);
	return r;
}

int ca_image_digest_blob(const char *path, const struct ca_image_opts *io, uint8_t ret_digest[CA_CHUNK_ID_SIZE])
{
	struct ca_image *im = NULL;
	struct ca_digest *d = NULL;
	int r = ca_image_open(path, io, &im); /* logs */
	if (r < 0)
		return r;
	struct ca_index *idx = ca_image_index(im);
	struct ca_chunksrc *src = ca_image_chunksrc(im);
	r = ca_digest_new(ca_digest_type_from_flags(ca_index_feature_flags(idx)), &d);
	for (size_t i = 0; r == 0 && i < ca_index_n_chunks(idx); i++) {
		uint64_t s, e;
		const uint8_t *id;
		const struct ca_chunk *c;
		ca_index_chunk(idx, i, &s, &e, &id);
		r = ca_chunksrc_get(src, id, e - s, &c);
		if (r < 0) {
			char hex[2 * CA_CHUNK_ID_SIZE + 1];
			ca_id_to_hex(id, hex);
			ca_log_error_errno(r, "chunk %s", hex);
			break;
		}
		r = ca_digest_update(d, c->data, c->size);
		ca_chunksrc_put(src, c);
	}
	if (r == 0)
		r = ca_digest_final(d, ret_digest);
	ca_digest_free(d);
	ca_image_free(im);
	return r;
}

int ca_image_digest_file(const char *path, enum ca_digest_type t, uint8_t ret_digest[CA_CHUNK_ID_SIZE])
{
	struct ca_digest *d = NULL;
	static const size_t bufsize = 1 << 20;
	uint8_t *buf = malloc(bufsize);
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) : STDIN_FILENO;
	int r = fd < 0 ? -errno : 0;
	if (!buf)
		r = -ENOMEM;
	if (r == 0)
		r = ca_digest_new(t, &d);
	while (r == 0) {
		ssize_t k = read(fd, buf, bufsize);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			r = -errno;
		else if (k == 0)
			break;
		else
			r = ca_digest_update(d, buf, k);
	}
	if (r == 0)
		r = ca_digest_final(d, ret_digest);
	if (r < 0)
		ca_log_error_errno(r, "%s", path);
	ca_digest_free(d);
	free(buf);
	if (fd > STDIN_FILENO)
		close(fd);
	return r;
}

/* The stream into an fd, nothing else (ca_image_encode_dir). */
struct fd_sink {
	int fd;
	const volatile sig_atomic_t *cancel;
	int err;
};

static int fd_sink_write(void *userdata, const void *p, size_t n)
{
	struct fd_sink *s = userdata;
	int r = s->cancel && *s->cancel ? -ECANCELED : ca_write_all(s->fd, p, n);
	/* the reader stopped early (it had what it wanted) and said so first */
	if (r < 0 && s->cancel && *s->cancel)
		r = -ECANCELED;
	if (r < 0 && !s->err)
		s->err = r;
	return r;
}

int ca_image_encode_dir(const char *dir, const struct ca_image_make_opts *o, int fd)
{
	struct make_ctx c = { .in_name = dir, .o = o };
	bool is_stdin;
	c.in_fd = open_input(dir, false, &is_stdin);
	if (c.in_fd < 0)
		return c.in_fd;
	int r = check_input(&c, true);
	if (r == 0) {
		struct fd_sink s = { .fd = fd, .cancel = o->cancel };
		struct ca_catar_enc_opts eo = {
			.feature_flags = image_flags(CA_IMAGE_ARCHIVE, o), .write = fd_sink_write, .userdata = &s,
			.root_name = dir, .uid_shift = o->uid_shift,
		};
		r = ca_catar_encode(c.in_fd, &eo, NULL);
		if (r < 0 && s.err)
			make_fail(&c, s.err, "archive stream");
	}
	close(c.in_fd);
	return r;
}

/* ---- a directory's archive stream, unwritten ---- */

/* The read end of the encoder's pipe, as a source for the streaming
 * decoder: it reads forward only (what it skips is read and dropped). */
struct pipe_source {
	int fd;
	uint64_t pos;
	uint8_t scratch[64 << 10];
};

static ssize_t pipe_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	struct pipe_source *ps = userdata;
	if (off < ps->pos)
		return -ESPIPE; /* the decoder reads forward (catar_dec.h) */
	while (ps->pos < off) {
		size_t n = off - ps->pos < sizeof(ps->scratch) ? (size_t)(off - ps->pos) : sizeof(ps->scratch);
		ssize_t k = ca_read_full(ps->fd, ps->scratch, n);
		if (k <= 0)
			return k;
		ps->pos += (uint64_t)k;
	}
	ssize_t k = ca_read_full(ps->fd, buf, len);
	if (k > 0)
		ps->pos += (uint64_t)k;
	return k;
}

struct encoder {
	const char *dir;
	const struct ca_image_make_opts *o;
	int fd;
	int r;
};

static void *encode_thread(void *arg)
{
	struct encoder *e = arg;
	e->r = ca_image_encode_dir(e->dir, e->o, e->fd); /* logs */
	close(e->fd); /* the decoder sees the end */
	return NULL;
}

struct ca_image_dir_stream {
	struct pipe_source ps;
	struct encoder e;
	struct ca_image_make_opts o;
	volatile sig_atomic_t stop;
	pthread_t t;
	char *dir;
};

int ca_image_dir_stream_open(const char *dir, const struct ca_image_make_opts *mo, struct ca_image_dir_stream **ret,
                             struct ca_catar_source *ret_src)
{
	struct ca_image_dir_stream *ds = calloc(1, sizeof(*ds));
	int fds[2] = { -1, -1 };
	int r = ds ? 0 : -ENOMEM;
	if (r == 0) {
		ds->o = *mo;
		ds->o.cancel = &ds->stop; /* raised when the reader stops before the end (stat) */
		ds->o.progress_start = NULL;
		ds->o.progress = NULL;
		ds->o.progress_end = NULL;
		ds->dir = strdup(dir);
		if (!ds->dir)
			r = -ENOMEM;
	}
	if (r == 0 && pipe2(fds, O_CLOEXEC) < 0)
		r = -errno;
	if (r == 0) {
		ds->ps.fd = fds[0];
		ds->e = (struct encoder){ .dir = ds->dir, .o = &ds->o, .fd = fds[1] };
		r = ca_thread_create(&ds->t, encode_thread, &ds->e);
	}
	if (r < 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		if (ds)
			free(ds->dir);
		free(ds);
		return ca_log_error_errno(r, "%s", dir);
	}
	*ret_src = (struct ca_catar_source){ .read = pipe_read, .userdata = &ds->ps, .size = UINT64_MAX,
		                             .index_flags = UINT64_MAX };
	*ret = ds;
	return 0;
}

int ca_image_dir_stream_close(struct ca_image_dir_stream *ds, int r)
{
	/* stopped early, or failed: the encoder's writes fail from here on,
	 * quietly (it is cancelled) */
	ds->stop = 1;
	close(ds->ps.fd);
	pthread_join(ds->t, NULL);
	/* the encoder's failure, which it logged, explains the stream's
	 * early end; else the decoder's is said here */
	if (ds->e.r < 0 && ds->e.r != -ECANCELED)
		r = ds->e.r;
	else if (r < 0 && r != -ECANCELED)
		ca_log_error_errno(r, "%s: its archive stream", ds->dir);
	free(ds->dir);
	free(ds);
	return r;
}

