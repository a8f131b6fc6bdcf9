/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cafs/cafs.h - libcafs: casync-compatible images, opened locally or over
 * HTTP, read lazily chunk by chunk.
 *
 *   struct cafs_ctx *ctx;            cafs/context.h: messages, cancellation,
 *   cafs_ctx_new(&ctx);                              the errnos that matter
 *   struct cafs_image *img;          cafs/image.h:   open, read a blob, walk
 *   cafs_image_open(ctx, "https://host/x.caidx", NULL, &img);   an archive
 *   ...                              cafs/ops.h:     make, extract, fill a cache
 *                                    cafs/store.h:   gc, prune, verify, stat a store
 *   cafs_image_unref(img);
 *   cafs_ctx_unref(ctx);
 *
 * Build with `pkg-config --cflags --libs cafs`. Every public name starts
 * with cafs_ (or CAFS_); the library exports nothing else, each name under
 * the symbol version LIBCAFS_1. cafs/version.h says which version these
 * headers are (CAFS_VERSION_CHECK); cafs_version() which library runs.
 *
 * The ABI: options structs carry their size (cafs/context.h), objects are
 * opaque and reference-counted, and a struct or enum that is public only
 * ever grows at its end (tests/abi/layout.txt records each member).
 */
#ifndef CAFS_CAFS_H
#define CAFS_CAFS_H

#include <cafs/version.h>
#include <cafs/context.h>
#include <cafs/image.h>
#include <cafs/ops.h>
#include <cafs/store.h>

#endif
