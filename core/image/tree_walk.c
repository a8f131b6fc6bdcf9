/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tree_walk.c - an archive's entries handed to a callback (tree_walk.h):
 * the streaming decoder for whole archives, random access for subtrees and
 * single entries, the metadata sidecar when the image has one.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "catar/catar_dec.h"
#include "format/feature.h"
#include "image/sidecar.h"
#include "image/tree_walk.h"

#define BUF_SIZE ((size_t)1 << 20)

struct walk {
	ca_tree_walk_fn fn;
	void *userdata;
	int fn_r;                    /* the callback's non-zero return, which stopped the walk */
	bool flat, digests;
	struct ca_archive_reader *rd; /* NULL: nothing to report to */
	struct ca_catar_ra *ra;      /* random access walks */
	const struct ca_sidecar *sc; /* sidecar walks */
	struct ca_catar_source src;  /* sidecar walks read payloads here */
	struct ca_digest *digest;
	uint8_t *buf;
	char *path;
	size_t len, cap;
};

static int walk_init(struct walk *w, const struct ca_tree_walk_opts *o, enum ca_digest_type t, ca_tree_walk_fn fn,
                     void *userdata)
{
	*w = (struct walk){ .fn = fn, .userdata = userdata, .flat = o && o->flat, .digests = o && o->digests };
	if (!w->digests)
		return 0;
	w->buf = malloc(BUF_SIZE);
	if (!w->buf)
		return -ENOMEM;
	return ca_digest_new(t, &w->digest);
}

static void walk_done(struct walk *w)
{
	ca_digest_free(w->digest);
	free(w->buf);
	free(w->path);
}

/* r reported against the reader (for archive images), at path inside it */
static int fail(const struct walk *w, int r, const char *path)
{
	return w->rd && r < 0 ? ca_archive_reader_report(w->rd, r, path) : r;
}

static int hand(struct walk *w, const char *path, const struct ca_catar_node *n, struct ca_catar_ra_node *rn,
                const uint8_t *digest)
{
	struct ca_tree_entry e = { .path = path, .node = n, .digest = digest, .ra_node = rn };
	int r = w->fn(w->userdata, &e);
	if (r != 0)
		w->fn_r = r;
	return r;
}

static int path_push(struct walk *w, const char *name)
{
	size_t n = strlen(name), need = w->len + 1 + n + 1;
	if (need > w->cap) {
		size_t c = w->cap ? w->cap : 256;
		while (c < need)
			c *= 2;
		char *np = realloc(w->path, c);
		if (!np)
			return -ENOMEM;
		w->path = np;
		w->cap = c;
	}
	if (w->len)
		w->path[w->len++] = '/';
	memcpy(w->path + w->len, name, n + 1);
	w->len += n;
	return 0;
}

static void path_pop(struct walk *w, size_t saved)
{
	w->len = saved;
	w->path[w->len] = 0;
}

/* w->path = sub as casync prints it: components joined by single slashes */
static int path_set(struct walk *w, const char *sub)
{
	int r;
	for (const char *q = sub ? sub : ""; *q;) {
		q += strspn(q, "/");
		size_t l = strcspn(q, "/");
		if (l == 0)
			break;
		if (!(l == 1 && q[0] == '.')) {
			char comp[CA_FORMAT_NAME_MAX + 1];
			snprintf(comp, sizeof(comp), "%.*s", (int)l, q);
			r = path_push(w, comp);
			if (r < 0)
				return r;
		}
		q += l;
	}
	return w->path ? 0 : path_push(w, "");
}

/* ---- the whole stream: the decoder ---- */

static int walk_dec(struct walk *w, const struct ca_catar_source *s)
{
	struct ca_catar_dec *d = NULL;
	int r = ca_catar_dec_new(s, &d);
	if (r < 0)
		return fail(w, r, NULL);
	for (;;) {
		const struct ca_catar_node *n;
		r = ca_catar_dec_next(d, &n);
		if (r < 0) {
			fail(w, r, ca_catar_dec_path(d));
			break;
		}
		if (r == CA_CATAR_DEC_DONE)
			break;
		if (r != CA_CATAR_DEC_NODE)
			continue;
		const char *path = ca_catar_dec_path(d);
		/* payloads are skipped anyway: below the top level, just go on */
		if (w->flat && strchr(path, '/'))
			continue;
		uint8_t out[CA_CHUNK_ID_SIZE];
		bool digest = w->digests && S_ISREG(n->mode);
		if (digest) {
			ssize_t k;
			while ((k = ca_catar_dec_read_payload(d, w->buf, BUF_SIZE)) > 0)
				ca_digest_update(w->digest, w->buf, (size_t)k);
			if (k < 0) {
				r = fail(w, (int)k, path);
				break;
			}
			ca_digest_final(w->digest, out);
		}
		r = hand(w, path, n, NULL, digest ? out : NULL);
		if (r != 0)
			break;
	}
	ca_catar_dec_free(d);
	return r;
}

int ca_tree_walk_stream(const struct ca_catar_source *s, enum ca_digest_type t, const struct ca_tree_walk_opts *o,
                        ca_tree_walk_fn fn, void *userdata)
{
	struct walk w;
	int r = walk_init(&w, o, t, fn, userdata);
	if (r == 0)
		r = walk_dec(&w, s);
	walk_done(&w);
	return r;
}

/* ---- subtrees: random access, or the sidecar ---- */

/* n's contents' digest into out */
static int payload_digest(struct walk *w, const struct ca_catar_node *n, uint8_t out[CA_CHUNK_ID_SIZE])
{
	uint64_t off = 0;
	while (off < n->payload_size) {
		ssize_t k;
		if (w->ra) {
			k = ca_catar_ra_read(w->ra, n, w->buf, BUF_SIZE, off);
		} else {
			size_t len = n->payload_size - off < BUF_SIZE ? (size_t)(n->payload_size - off) : BUF_SIZE;
			k = w->src.read(w->src.userdata, w->buf, len, n->payload_offset + off);
		}
		if (k <= 0)
			return k < 0 ? (int)k : -EBADMSG;
		ca_digest_update(w->digest, w->buf, (size_t)k);
		off += (uint64_t)k;
	}
	return ca_digest_final(w->digest, out);
}

static int hand_node(struct walk *w, const struct ca_catar_node *n, struct ca_catar_ra_node *rn)
{
	uint8_t out[CA_CHUNK_ID_SIZE];
	bool digest = w->digests && S_ISREG(n->mode);
	int r = digest ? payload_digest(w, n, out) : 0;
	return r < 0 ? r : hand(w, w->path, n, rn, digest ? out : NULL);
}

static int ra_walk_dir(struct walk *w, const struct ca_catar_node *dir, unsigned depth)
{
	struct ca_catar_child *c = NULL;
	size_t n = 0;
	int r;
	if (depth > CA_CATAR_DEPTH_MAX)
		return -EBADMSG;
	r = ca_catar_ra_list(w->ra, dir, &c, &n);
	if (r < 0)
		return r;
	ca_catar_ra_prefetch_children(w->ra, c, n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct ca_catar_ra_node *child;
		size_t saved = w->len;
		r = ca_catar_ra_load_child(w->ra, &c[i], &child);
		if (r < 0)
			break;
		const struct ca_catar_node *cn = ca_catar_ra_node_get(child);
		r = path_push(w, cn->name);
		if (r == 0)
			r = hand_node(w, cn, child);
		if (r == 0 && S_ISDIR(cn->mode) && !w->flat)
			r = ra_walk_dir(w, cn, depth + 1);
		ca_catar_ra_node_unref(child);
		path_pop(w, saved);
	}
	free(c);
	return r;
}

static int ra_walk(struct walk *w, struct ca_catar_ra_node *top)
{
	const struct ca_catar_node *n = ca_catar_ra_node_get(top);
	int r = hand_node(w, n, top);
	if (r == 0 && S_ISDIR(n->mode))
		r = ra_walk_dir(w, n, 0);
	return r;
}

int ca_tree_walk_ra(struct ca_catar_ra *ra, struct ca_catar_ra_node *top, const char *top_path,
                    enum ca_digest_type t, const struct ca_tree_walk_opts *o, ca_tree_walk_fn fn, void *userdata)
{
	struct walk w;
	int r = walk_init(&w, o, t, fn, userdata);
	w.ra = ra;
	if (r == 0)
		r = path_set(&w, top_path);
	if (r == 0)
		r = ra_walk(&w, top);
	walk_done(&w);
	return r;
}

static int sc_walk_dir(struct walk *w, size_t dir, unsigned depth)
{
	int r = 0;
	if (depth > CA_CATAR_DEPTH_MAX)
		return -EBADMSG;
	for (size_t i = 0; r == 0 && i < ca_sidecar_n_children(w->sc, dir); i++) {
		size_t c = ca_sidecar_child(w->sc, dir, i), saved = w->len;
		struct ca_catar_node cn;
		ca_sidecar_node(w->sc, c, &cn);
		r = path_push(w, cn.name);
		if (r == 0)
			r = hand_node(w, &cn, NULL);
		if (r == 0 && S_ISDIR(cn.mode) && !w->flat)
			r = sc_walk_dir(w, c, depth + 1);
		path_pop(w, saved);
	}
	return r;
}

static int not_in_archive(struct ca_image *im, const char *path)
{
	ca_log_error("%s: %s: not in the archive", ca_image_name(im), path);
	return -ENOENT;
}

static int walk_sidecar(struct walk *w, struct ca_image *im, const char *sub)
{
	struct ca_catar_node n;
	size_t i;
	w->sc = ca_image_sidecar(im);
	ca_archive_reader_random(w->rd, &w->src);
	int r = ca_sidecar_lookup_path(w->sc, sub, &i);
	if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL)
		return not_in_archive(im, sub), r;
	r = path_set(w, sub);
	if (r == 0) {
		ca_sidecar_node(w->sc, i, &n);
		r = hand_node(w, &n, NULL);
	}
	if (r == 0 && S_ISDIR(n.mode))
		r = sc_walk_dir(w, i, 0);
	return w->fn_r ? r : fail(w, r, w->path);
}

static int walk_subtree(struct walk *w, struct ca_image *im, const char *sub)
{
	struct ca_catar_ra_node *node = NULL;
	struct ca_catar_source s;
	ca_archive_reader_random(w->rd, &s);
	int r = ca_catar_ra_open(&s, &w->ra);
	if (r < 0)
		return fail(w, r, NULL);
	r = ca_catar_ra_lookup_path(w->ra, sub, &node);
	if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL) {
		not_in_archive(im, sub);
	} else if (r < 0) {
		fail(w, r, sub);
	} else {
		r = path_set(w, sub);
		if (r == 0)
			r = ra_walk(w, node);
		if (!w->fn_r)
			fail(w, r, w->path);
	}
	ca_catar_ra_node_unref(node);
	ca_catar_ra_free(w->ra);
	w->ra = NULL;
	return r;
}

static int reader_new(struct ca_image *im, bool no_readahead, struct ca_archive_reader **ret)
{
	struct ca_archive_reader_opts ro = { .no_readahead = no_readahead };
	int r = ca_archive_reader_new(im, &ro, ret);
	if (r < 0)
		ca_log_error_errno(r, "%s", ca_image_name(im));
	return r;
}

/* The reader has no cancel flag: its free stops its threads (never -EBUSY). */
static void reader_free(struct ca_archive_reader *rd)
{
	(void)ca_archive_reader_free(rd);
}

int ca_tree_walk(struct ca_image *im, const struct ca_tree_walk_opts *o, ca_tree_walk_fn fn, void *userdata)
{
	struct walk w;
	const char *sub = o ? o->path : NULL;
	/* casync hashes contents with the archive's digest */
	enum ca_digest_type t = o && o->digests ? ca_digest_type_from_flags(ca_image_feature_flags(im)) : CA_DIGEST_SHA512_256;
	int r = walk_init(&w, o, t, fn, userdata);
	if (r < 0) {
		ca_log_error_errno(r, "%s", ca_image_name(im));
		goto out;
	}
	/* payloads that will be skipped are not fetched ahead */
	r = reader_new(im, !w.digests, &w.rd);
	if (r < 0)
		goto out;
	if (ca_image_sidecar(im))
		r = walk_sidecar(&w, im, sub ? sub : "");
	else if (sub)
		r = walk_subtree(&w, im, sub);
	else {
		struct ca_catar_source s;
		ca_archive_reader_stream(w.rd, &s);
		r = walk_dec(&w, &s);
	}
out:
	reader_free(w.rd);
	walk_done(&w);
	return r;
}

/* ---- one entry: stat, and the digest of a file ---- */

/* casync's "hardlink digest" of a non-directory: its serialization from
 * ENTRY through the PAYLOAD/SYMLINK/DEVICE header, then its contents (what
 * two hardlinked copies share); the contents alone are the payload digest. */
static int stat_digests(struct walk *w, const struct ca_catar_source *s, const struct ca_catar_node *n,
                        uint8_t payload[CA_CHUNK_ID_SIZE], uint8_t hl[CA_CHUNK_ID_SIZE])
{
	enum ca_digest_type t = ca_digest_type_from_flags(n->feature_flags);
	struct ca_digest *dp = NULL, *dh = NULL;
	uint64_t off = 0;
	int r;
	w->buf = malloc(BUF_SIZE);
	r = w->buf ? 0 : -ENOMEM;
	if (r == 0)
		r = ca_digest_new(t, &dp);
	if (r == 0)
		r = ca_digest_new(t, &dh);
	while (r == 0 && off < n->meta_size) {
		size_t want = n->meta_size - off < BUF_SIZE ? (size_t)(n->meta_size - off) : BUF_SIZE;
		ssize_t k = s->read(s->userdata, w->buf, want, n->entry_offset + off);
		if (k <= 0)
			r = k < 0 ? (int)k : -EBADMSG;
		else if ((r = ca_digest_update(dh, w->buf, (size_t)k)) == 0)
			off += (uint64_t)k;
	}
	for (off = 0; r == 0 && S_ISREG(n->mode) && off < n->payload_size;) {
		ssize_t k = ca_catar_ra_read(w->ra, n, w->buf, BUF_SIZE, off);
		if (k <= 0)
			r = k < 0 ? (int)k : -EBADMSG;
		else if ((r = ca_digest_update(dp, w->buf, (size_t)k)) == 0 &&
		         (r = ca_digest_update(dh, w->buf, (size_t)k)) == 0)
			off += (uint64_t)k;
	}
	if (r == 0)
		r = ca_digest_final(dp, payload);
	if (r == 0)
		r = ca_digest_final(dh, hl);
	ca_digest_free(dp);
	ca_digest_free(dh);
	return r;
}

/* The entry at sub by random access into *ret_node (w->ra opened, w->path
 * set): 0, or reported (-ENOENT: "not in the archive"). */
static int lookup_one(struct walk *w, struct ca_image *im, const char *sub, struct ca_catar_source *s,
                      struct ca_catar_ra_node **ret_node)
{
	ca_archive_reader_random(w->rd, s);
	int r = ca_catar_ra_open(s, &w->ra);
	if (r < 0)
		return fail(w, r, NULL);
	r = path_set(w, sub);
	if (r == 0)
		r = ca_catar_ra_lookup_path(w->ra, w->path, ret_node);
	if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL)
		return not_in_archive(im, w->path ? w->path : sub);
	return fail(w, r, w->path);
}

int ca_tree_stat(struct ca_image *im, const char *path, ca_tree_walk_fn fn, void *userdata)
{
	struct walk w;
	struct ca_catar_ra_node *node = NULL;
	struct ca_catar_source s;
	uint8_t digest[CA_CHUNK_ID_SIZE], hl[CA_CHUNK_ID_SIZE];
	int r = walk_init(&w, NULL, CA_DIGEST_SHA512_256, fn, userdata);
	if (r == 0)
		r = reader_new(im, true, &w.rd);
	if (r == 0)
		r = lookup_one(&w, im, path, &s, &node);
	if (r < 0)
		goto out;
	const struct ca_catar_node *n = ca_catar_ra_node_get(node);
	bool dir = S_ISDIR(n->mode);
	if (!dir && (r = stat_digests(&w, &s, n, digest, hl)) < 0) {
		fail(&w, r, w.path);
		goto out;
	}
	/* casync has a payload digest for regular files only */
	struct ca_tree_entry e = { .path = w.path, .node = n, .ra_node = node,
		                   .digest = S_ISREG(n->mode) ? digest : NULL, .hl_digest = dir ? NULL : hl };
	r = fn(userdata, &e);
out:
	ca_catar_ra_node_unref(node);
	ca_catar_ra_free(w.ra);
	reader_free(w.rd);
	walk_done(&w);
	return r;
}

/* digest IN PATH of a file: its contents' digest (1: a directory, whose
 * stream the caller digests) */
static int digest_one(struct walk *w, struct ca_image *im, const char *sub, uint8_t ret[CA_CHUNK_ID_SIZE])
{
	struct ca_catar_ra_node *node = NULL;
	struct ca_catar_source s;
	uint8_t hl[CA_CHUNK_ID_SIZE];
	int r = lookup_one(w, im, sub, &s, &node);
	if (r < 0)
		goto out;
	const struct ca_catar_node *n = ca_catar_ra_node_get(node);
	if (S_ISDIR(n->mode))
		r = 1;
	else if (!S_ISREG(n->mode))
		r = ca_log_error_errno(ENOTTY, "%s: %s: not a file or directory", ca_image_name(im), w->path);
	else if ((r = stat_digests(w, &s, n, ret, hl)) < 0)
		fail(w, r, w->path);
out:
	ca_catar_ra_node_unref(node);
	ca_catar_ra_free(w->ra);
	w->ra = NULL;
	return r;
}

int ca_tree_digest(struct ca_image *im, const char *path, uint8_t ret[CA_CHUNK_ID_SIZE])
{
	struct walk w;
	struct ca_catar_dec *d = NULL;
	struct ca_catar_source s;
	int r = walk_init(&w, NULL, CA_DIGEST_SHA512_256, NULL, NULL);
	if (r == 0)
		r = reader_new(im, false, &w.rd);
	if (r < 0)
		goto out;
	if (path && *path) {
		/* casync: a file's contents, or the stream of a directory */
		r = digest_one(&w, im, path, ret);
		if (r <= 0)
			goto out;
		r = ca_archive_reader_subtree(w.rd, path, &s); /* logs */
		if (r < 0)
			goto out;
	} else {
		ca_archive_reader_stream(w.rd, &s);
	}
	r = ca_archive_reader_digest_start(w.rd, ca_digest_type_from_flags(ca_image_feature_flags(im)));
	if (r < 0) {
		fail(&w, r, NULL);
		goto out;
	}
	free(w.buf);
	w.buf = malloc(BUF_SIZE);
	if (!w.buf || (r = ca_catar_dec_new(&s, &d)) < 0) {
		r = fail(&w, w.buf ? r : -ENOMEM, NULL);
		goto out;
	}
	for (;;) {
		r = ca_catar_dec_next(d, NULL);
		if (r <= 0)
			break;
		ssize_t k;
		while ((k = ca_catar_dec_read_payload(d, w.buf, BUF_SIZE)) > 0)
			;
		if (k < 0 && k != -EINVAL) { /* -EINVAL: not a regular file */
			r = (int)k;
			break;
		}
	}
	/* the stream skipped no byte (-EIO if it did) */
	if (r == 0)
		r = ca_archive_reader_digest_finish(w.rd, ret);
	if (r < 0)
		fail(&w, r, ca_catar_dec_path(d));
out:
	ca_catar_dec_free(d);
	reader_free(w.rd);
	walk_done(&w);
	return r;
}
