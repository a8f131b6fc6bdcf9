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
 *   cafs_image_free(img);
 *   cafs_ctx_unref(ctx);
 *
 * Build with `pkg-config --cflags --libs cafs`. Every public name starts
 * with cafs_ (or CAFS_); the library exports nothing else.
 */
#ifndef CAFS_CAFS_H
#define CAFS_CAFS_H

#include <cafs/context.h>
#include <cafs/image.h>
#include <cafs/ops.h>
#include <cafs/store.h>

#endif
