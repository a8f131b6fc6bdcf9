/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * image.c - cafs_image and cafs_node (see cafs/image.h): the public face
 * of image/source (opening), catar/catar_ra (random access) and
 * image/tree_walk (walks). A public
 * node wraps a catar_ra node and holds a reference on its image, so that
 * the image (whose catar_ra the node's buffers are counted in) lives as
 * long as any node of it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "cafs/image.h"
#include "catar/catar_attr.h"
#include "catar/catar_ra.h"
#include "format/feature.h"
#include "image/tree_walk.h"
#include "image/source.h"

struct cafs_node {
	int refs;                  /* atomic */
	struct cafs_image *img;    /* a reference */
	struct ca_catar_ra_node *n; /* a reference */
};

static const struct ca_catar_node *cnode(const struct cafs_node *n)
{
	return ca_catar_ra_node_get(n->n);
}

/* A public node for n, taking over the caller's reference on n (dropped
 * on failure). */
static int node_wrap(struct cafs_image *img, struct ca_catar_ra_node *n, struct cafs_node **ret)
{
	struct cafs_node *node = malloc(sizeof(*node));
	if (!node) {
		ca_catar_ra_node_unref(n);
		return ca_log_error_errno(ENOMEM, "%s", ca_image_name(img->im));
	}
	*node = (struct cafs_node){ .refs = 1, .img = cafs_image_ref(img), .n = n };
	*ret = node;
	return 0;
}

/* What is not worth a message: answers, not failures. */
static bool quiet_error(int r)
{
	return r == -ENOENT || r == -ENOTDIR || r == -ENODATA || r == -ERANGE || r == -ECANCELED;
}

static int report(struct cafs_image *img, int r, const char *what)
{
	if (r < 0 && !quiet_error(r))
		ca_log_error_errno(r, "%s%s%s", ca_image_name(img->im), what && *what ? ": " : "", what ? what : "");
	return r;
}

int cafs_image_open(struct cafs_ctx *ctx, const char *source, const struct cafs_image_options *user_o,
                    struct cafs_image **ret)
{
	if (!ctx || !ret)
		return -EINVAL;
	struct ca_logger *old = api_enter(ctx);
	struct cafs_image *img = NULL;
	struct cafs_image_options o;
	struct ca_image_opts io = { .trusted_keys = ctx->trusted_keys, .n_trusted_keys = ctx->n_trusted_keys };
	int r = api_options(user_o, &o, sizeof(o));
	if (r == 0 && !source)
		r = api_refuse_arg("open", "no source given");
	if (r == 0 && o.n_stores && !o.stores)
		r = api_refuse_arg(source, "no list of stores");
	for (size_t i = 0; r == 0 && i < o.n_stores; i++)
		if (!o.stores[i] || !*o.stores[i])
			r = api_refuse_arg(source, "a store with no name");
	if (r < 0)
		goto out;
	img = calloc(1, sizeof(*img));
	r = img ? 0 : ca_log_error_errno(ENOMEM, "%s", source);
	if (r < 0)
		goto out;
	img->refs = 1;
	io.stores = (char *const *)o.stores;
	io.n_stores = o.n_stores;
	io.cache_mode = o.cache_mode == CAFS_CACHE_DIR    ? CA_CACHE_DIR
	                : o.cache_mode == CAFS_CACHE_AUTO ? CA_CACHE_AUTO
	                                                  : CA_CACHE_NONE;
	io.cache_dir = o.cache_dir;
	io.cache_touch = true;
	io.offline = o.offline;
	io.lru_bytes = o.memory_cache_bytes;
	img->ctx = cafs_ctx_ref(ctx);
	r = ctx->cancelled ? -ECANCELED : ca_image_open(source, &io, &img->im);
	if (r < 0)
		goto out;
	if (ca_image_kind(img->im) != CA_IMAGE_BLOB_INDEX) {
		struct ca_catar_source s;
		ca_image_archive_source(img->im, &s);
		r = ca_catar_ra_open(&s, &img->ra);
		if (r == -EBADMSG)
			ca_log_error_errno(r, "%s: not a valid archive", source);
		else
			report(img, r, NULL);
		if (r < 0)
			goto out;
	}
	*ret = img;
	img = NULL;
out:
	cafs_image_unref(img);
	api_leave(old);
	return r;
}

struct cafs_image *cafs_image_ref(struct cafs_image *img)
{
	if (img)
		__atomic_add_fetch(&img->refs, 1, __ATOMIC_RELAXED);
	return img;
}

struct cafs_image *cafs_image_unref(struct cafs_image *img)
{
	if (!img || __atomic_sub_fetch(&img->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return NULL;
	struct ca_logger *old = api_enter(img->ctx);
	ca_catar_ra_free(img->ra);
	ca_image_free(img->im);
	api_leave(old);
	cafs_ctx_unref(img->ctx);
	free(img);
	return NULL;
}

void cafs_image_free(struct cafs_image *img)
{
	cafs_image_unref(img);
}

enum cafs_image_kind cafs_image_get_kind(const struct cafs_image *img)
{
	switch (ca_image_kind(img->im)) {
	case CA_IMAGE_BLOB_INDEX:
		return CAFS_IMAGE_BLOB;
	case CA_IMAGE_ARCHIVE_INDEX:
		return CAFS_IMAGE_ARCHIVE_INDEX;
	default:
		return CAFS_IMAGE_ARCHIVE;
	}
}

uint64_t cafs_image_get_size(const struct cafs_image *img)
{
	return ca_image_size(img->im);
}

ssize_t cafs_image_pread(struct cafs_image *img, void *buf, size_t len, uint64_t off)
{
	struct ca_logger *old = api_enter(img->ctx);
	ssize_t k = img->ctx->cancelled ? -ECANCELED : ca_image_pread(img->im, buf, len, off);
	if (k < 0 && k != -ECANCELED)
		ca_image_log_read_error(img->im, (int)k, off, len);
	api_leave(old);
	return k;
}

int cafs_image_lookup(struct cafs_image *img, const char *path, struct cafs_node **ret)
{
	struct ca_catar_ra_node *n = NULL;
	if (!img || !ret)
		return -EINVAL;
	if (!img->ra)
		return -EMEDIUMTYPE;
	struct ca_logger *old = api_enter(img->ctx);
	int r = !path                ? api_refuse_arg(ca_image_name(img->im), "lookup: no path given")
	        : img->ctx->cancelled ? -ECANCELED
	                              : ca_catar_ra_lookup_path(img->ra, path, &n);
	if (path)
		report(img, r, path);
	if (r == 0)
		r = node_wrap(img, n, ret);
	api_leave(old);
	return r;
}

struct cafs_node *cafs_node_ref(struct cafs_node *node)
{
	if (node)
		__atomic_add_fetch(&node->refs, 1, __ATOMIC_RELAXED);
	return node;
}

struct cafs_node *cafs_node_unref(struct cafs_node *node)
{
	if (!node || __atomic_sub_fetch(&node->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return NULL;
	/* the catar_ra node first: its buffers are counted in the image's */
	ca_catar_ra_node_unref(node->n);
	cafs_image_unref(node->img);
	free(node);
	return NULL;
}

struct cafs_image *cafs_node_get_image(const struct cafs_node *node)
{
	return node->img;
}

const char *cafs_node_get_name(const struct cafs_node *node)
{
	return cnode(node)->name;
}

void cafs_node_get_stat(const struct cafs_node *node, struct stat *st)
{
	ca_catar_node_stat(cnode(node), st);
}

ssize_t cafs_node_readlink(const struct cafs_node *node, char *buf, size_t size)
{
	const struct ca_catar_node *n = cnode(node);
	if (!S_ISLNK(n->mode) || !n->symlink_target)
		return -EINVAL;
	size_t len = strlen(n->symlink_target);
	if (len > size)
		return -ERANGE;
	memcpy(buf, n->symlink_target, len);
	return (ssize_t)len;
}

ssize_t cafs_node_getxattr(const struct cafs_node *node, const char *name, void *buf, size_t size)
{
	size_t len = 0;
	int r = ca_catar_node_getxattr(cnode(node), NULL, name, buf, size, &len);
	return r < 0 ? r : (ssize_t)len;
}

ssize_t cafs_node_listxattr(const struct cafs_node *node, char *buf, size_t size)
{
	size_t len = 0;
	int r = ca_catar_node_listxattr(cnode(node), NULL, buf, size, &len);
	return r < 0 ? r : (ssize_t)len;
}

int cafs_image_readdir(struct cafs_image *img, const struct cafs_node *dir, cafs_readdir_fn fn, void *userdata)
{
	struct ca_catar_child *children = NULL;
	size_t n = 0;
	if (!img || !dir || !fn)
		return -EINVAL;
	if (!img->ra)
		return -EMEDIUMTYPE;
	if (dir->img != img)
		return -EINVAL;
	/* fn may drop the caller's reference: the walk keeps its own */
	cafs_image_ref(img);
	struct ca_logger *old = api_enter(img->ctx);
	int r = ca_catar_ra_list(img->ra, cnode(dir), &children, &n);
	if (r == 0)
		ca_catar_ra_prefetch_children(img->ra, children, n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct ca_catar_ra_node *c = NULL;
		struct cafs_node *child = NULL;
		r = img->ctx->cancelled ? -ECANCELED : ca_catar_ra_load_child(img->ra, &children[i], &c);
		if (r == 0)
			r = node_wrap(img, c, &child);
		if (r < 0)
			break;
		/* the caller's code runs with the caller's logger */
		api_leave(old);
		r = fn(userdata, child);
		api_enter(img->ctx);
		cafs_node_unref(child);
		if (r != 0)
			goto out; /* the caller's value, not ours to report */
	}
	report(img, r, cnode(dir)->name);
out:
	free(children);
	api_leave(old);
	cafs_image_unref(img);
	return r;
}

ssize_t cafs_image_read(struct cafs_image *img, const struct cafs_node *file, void *buf, size_t len, uint64_t off)
{
	if (!img->ra)
		return -EMEDIUMTYPE;
	if (file->img != img)
		return -EINVAL;
	struct ca_logger *old = api_enter(img->ctx);
	const struct ca_catar_node *n = cnode(file);
	ssize_t k = img->ctx->cancelled ? -ECANCELED : ca_catar_ra_read(img->ra, n, buf, len, off);
	if (k == -EBADMSG || k == -ENOMEM)
		report(img, (int)k, n->name);
	else if (k < 0 && k != -EISDIR && k != -EINVAL && k != -ECANCELED)
		ca_image_log_read_error(img->im, (int)k, n->payload_offset + off, len); /* names the chunk */
	api_leave(old);
	return k;
}

struct walk {
	struct cafs_image *img;
	struct ca_logger *old; /* the caller's logger, for the caller's code */
	cafs_walk_fn fn;
	void *userdata;
	int fn_r; /* fn's non-zero return: the caller's value, not ours to report */
};

static int walk_entry(void *userdata, const struct ca_tree_entry *e)
{
	struct walk *w = userdata;
	struct cafs_node *node = NULL;
	if (w->img->ctx->cancelled)
		return -ECANCELED;
	int r = node_wrap(w->img, ca_catar_ra_node_ref(e->ra_node), &node);
	if (r < 0)
		return r;
	api_leave(w->old);
	r = w->fn(w->userdata, e->path, node, e->digest);
	api_enter(w->img->ctx);
	cafs_node_unref(node);
	if (r != 0)
		w->fn_r = r;
	return r;
}

int cafs_image_walk(struct cafs_image *img, const struct cafs_walk_options *user_o, cafs_walk_fn fn, void *userdata)
{
	struct cafs_walk_options o;
	struct ca_catar_ra_node *top = NULL;
	if (!img || !fn)
		return -EINVAL;
	if (!img->ra)
		return -EMEDIUMTYPE;
	/* fn may drop the caller's reference: the walk keeps its own */
	cafs_image_ref(img);
	struct ca_logger *old = api_enter(img->ctx);
	struct walk w = { .img = img, .old = old, .fn = fn, .userdata = userdata };
	int r = api_options(user_o, &o, sizeof(o)); /* logs */
	bool logged = r < 0;
	const char *path = o.path ? o.path : "";
	if (r == 0)
		r = img->ctx->cancelled ? -ECANCELED : ca_catar_ra_lookup_path(img->ra, path, &top);
	if (r == 0) {
		struct ca_tree_walk_opts to = { .flat = o.flat, .digests = o.digests };
		enum ca_digest_type t = ca_digest_type_from_flags(ca_catar_ra_feature_flags(img->ra));
		r = ca_tree_walk_ra(img->ra, top, path, t, &to, walk_entry, &w);
	}
	if (!w.fn_r && !logged)
		report(img, r, path);
	ca_catar_ra_node_unref(top);
	api_leave(old);
	cafs_image_unref(img);
	return r;
}
