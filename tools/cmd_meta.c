/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_meta.c - cafs meta make: the metadata sidecar (core/image/sidecar.h) of an
 * existing .caidx (made by casync, desync, or cafs make --no-meta), read
 * through its store.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "image/image_make.h"
#include "base/location.h"
#include "base/log.h"

/* what `cafs meta make` is asked to do */
struct meta_request {
	struct cafs_request base;
	char **stores;
	size_t n_stores;
	const char *out; /* -o */
	const char *in;
};

static int meta_set(struct cafs_request *q, int id, const char *arg)
{
	struct meta_request *m = (struct meta_request *)q;
	if (id == CAFS_OPT_STORE) {
		char **ns = realloc(m->stores, (m->n_stores + 1) * sizeof(char *));
		if (!ns)
			return ca_log_error_errno(ENOMEM, "meta"), 1;
		m->stores = ns;
		m->stores[m->n_stores++] = (char *)arg;
	} else if (id == CAFS_OPT_OUTPUT) {
		m->out = arg;
	}
	return 0;
}

static int meta_operands(struct cafs_request *q, int n, char **arg)
{
	if (n != 2 || strcmp(arg[0], "make"))
		return cafs_usage_error("meta", "expected make INDEX.caidx");
	((struct meta_request *)q)->in = arg[1];
	return 0;
}

static void meta_release(struct cafs_request *q)
{
	free(((struct meta_request *)q)->stores);
}

static int meta_run(struct cafs_request *q)
{
	const struct meta_request *m = (const struct meta_request *)q;
	if (ca_location_image_kind(m->in) != CA_IMAGE_ARCHIVE_INDEX)
		return cafs_usage_error("meta", "%s: a metadata sidecar is for a .caidx", m->in);
	if (!m->out && ca_location_is_remote(m->in))
		return cafs_usage_error("meta", "%s: the index is remote: say where with --output", m->in);
	return ca_image_make_sidecar_of(m->in, m->stores, m->n_stores, m->out) < 0 ? 1 : 0; /* logs */
}

static const struct cafs_option meta_options[] = {
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "chunk store (repeatable; default: default.castr beside INDEX)" },
	{ "output", 'o', "FILE", CAFS_OPT_OUTPUT,
	  .help = "where to write it (default: INDEX.caidx.cameta; required\n"
	  "for a remote INDEX)" },
	{ NULL },
};

const struct cafs_command cafs_command_meta = {
	.name = "meta",
	.synopsis = "meta make [OPTIONS] INDEX.caidx",
	.options = meta_options,
	.help_column = 26,
	.help_tail = "Writes the metadata sidecar of an existing archive index (one made by casync or\n"
	  "desync), read through its store: list, mtree and the mount then need no chunk\n"
	  "for metadata. cafs make writes one beside every .caidx.\n",
	.request_size = sizeof(struct meta_request),
	.set = meta_set,
	.operands = meta_operands,
	.run = meta_run,
	.release = meta_release,
};

