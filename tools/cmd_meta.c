/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_meta.c - cafs meta make: the metadata sidecar (core/image/sidecar.h) of an
 * existing .caidx (made by casync, desync, or cafs make --no-meta), read
 * through its store.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "image/archive_reader.h"
#include "cmd.h"
#include "image/index_cache.h"
#include "base/location.h"
#include "base/log.h"
#include "image/sidecar.h"
#include "image/source.h"

static int meta_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	char **stores = NULL, *def_out = NULL;
	const char *out = NULL;
	size_t n_stores = 0;
	int c, r = 0, verbosity = 0;
	struct ca_image *im = NULL;

	while ((c = getopt_long(argc, argv, "s:o:vqh", opts, NULL)) >= 0) {
		switch (c) {
		case 's': {
			char **ns = realloc(stores, (n_stores + 1) * sizeof(char *));
			if (!ns) {
				free(stores);
				return ca_log_error_errno(ENOMEM, "meta"), 1;
			}
			stores = ns;
			stores[n_stores++] = optarg;
			break;
		}
		case 'o':
			out = optarg;
			break;
		default: {
			int e = cafs_common_option(&cafs_command_meta, c, &verbosity);
			if (e >= 0) {
				free(stores);
				return e;
			}
			break;
		}
		}
	}
	cafs_set_verbosity(verbosity);
	if (argc - optind != 2 || strcmp(argv[optind], "make")) {
		free(stores);
		return cafs_usage_error("meta", "expected make INDEX.caidx");
	}
	const char *in = argv[optind + 1];
	if (ca_location_image_kind(in) != CA_IMAGE_ARCHIVE_INDEX) {
		free(stores);
		return cafs_usage_error("meta", "%s: a metadata sidecar is for a .caidx", in);
	}
	if (!out && ca_location_is_remote(in)) {
		free(stores);
		return cafs_usage_error("meta", "%s: the index is remote: say where with --output", in);
	}
	if (!out) {
		def_out = ca_sidecar_name_for(ca_location_path(in));
		if (!def_out) {
			free(stores);
			return ca_log_error_errno(ENOMEM, "meta"), 1;
		}
		out = def_out;
	}
	/* the old sidecar is what is being replaced: do not load it */
	struct ca_image_opts io = { .stores = stores, .n_stores = n_stores, .lru_bytes = CA_ARCHIVE_READER_LRU,
		                    .cache_mode = CA_CACHE_AUTO, .no_sidecar = true };
	r = ca_image_open(in, &io, &im); /* logs */
	if (r == 0)
		r = ca_index_cache_make_sidecar(im, out); /* logs */
	ca_image_free(im);
	free(def_out);
	free(stores);
	return r < 0 ? 1 : 0;
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
	.main = meta_main,
};

