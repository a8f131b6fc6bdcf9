/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * main.c - the cafs command: dispatch to subcommands.
 *
 * `cafs SOURCE MOUNTPOINT` (no subcommand) means `cafs mount SOURCE
 * MOUNTPOINT`; invoked as mount.cafs it takes mount(8)'s argument order;
 * invoked as casync, or with options before the command, casync's command
 * line (casync_cli.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "casync_cli.h"
#include "cmd.h"
#include "base/location.h"
#include "base/log.h"
#include "net/storeconf.h"

static const struct cafs_command commands[] = {
	{ "make", cafs_cmd_make, "make [OPTIONS] OUT.caibx|OUT.caidx|OUT.catar INPUT",
	  "  -s, --store=DIR|S3URL   chunk store, a directory or s3+http(s)://HOST/BUCKET/PREFIX\n"
	  "                          (default: default.castr beside OUT)\n"
	  "      --chunk-size=SPEC   AVG or MIN:AVG:MAX (default 16K:64K:256K)\n"
	  "      --digest=NAME       sha512-256 (default) or sha256\n"
	  "      --with=FLAG         archive only these features (repeatable)\n"
	  "      --without=FLAG      leave out a feature (repeatable)\n"
	  "      --exclude-nodump=no include files and directories marked chattr +d\n"
	  "      --exclude-submounts=yes  leave out other filesystems mounted below INPUT\n"
	  "      --exclude-file=no   ignore .caexclude files\n"
	  "      --meta=no           .caidx: no metadata sidecar OUT.cameta beside it\n"
	  "      --profile=FILE      an index: copy this prefetch profile beside it as\n"
	  "                          OUT.caprofile, naming the new index\n"
	  "      --uid-shift=UID     archives: store owners as their ids minus UID\n"
	  "      --uid-range=N       ... modulo N (default 65536; or yes/no), as casync\n"
	  "  -j, --threads=N         worker threads (default: number of CPUs)\n"
	  "      --compression=NAME  chunks in zstd (default), xz or gzip, as casync\n"
	  "Prints the digest of the whole stream, as casync make does.\n" },
	{ "extract", cafs_cmd_extract, "extract [OPTIONS] IN.caibx|IN.caidx|IN.catar OUT [PATH]",
	  "PATH: only that directory of an archive (found by random access; only its chunks are read)\n"
	  "  -s, --store=DIR|URL     chunk store (repeatable; default: default.castr beside IN)\n"
	  "  -j, --threads=N         blob: worker threads (default: number of CPUs); unused\n"
	  "                          for archives\n"
	  "      --seed=PATH         take chunks from this local file, device, .catar or index\n"
	  "                          first (repeatable)\n"
	  "      --cache=DIR         keep the chunks fetched in this chunk cache, and use it\n"
	  "      --delete=no         archives: keep what OUT has that the archive does not\n"
	  "      --trusted-key=FILE  only an index signed by this minisign key (repeatable;\n"
	  "                          see SECURITY in cafs(1))\n"
	  "      --allow-downgrade   accept an index signed before the newest accepted\n"
	  "      --signed-name=NAME  the file name its signature must give (default: IN's)\n"
	  "      --offline           only the --cache (and the index kept there for a URL)\n"
	  "      --overlay-xattrs    archives: apply trusted.overlay.* and user.overlay.* too\n"
	  "                          (overlayfs instructions; man cafs: SECURITY)\n"
	  "      --rate-limit-bps=SIZE  cap the download rate from each store (bytes/s)\n"
	  "      --uid-shift=UID     archives: owners on disk are those stored plus UID\n"
	  "      --uid-range=N       ... modulo N (default 65536; or yes/no), as casync\n"
	  "      --undo-immutable=yes  archives: replace and remove files of OUT that are\n"
	  "                          chattr +i (clearing the flag), as casync\n"
	  "      --punch-holes=no    write zero blocks too (default: left as holes)\n"
	  "      --reflink=no        blob: copy what seed files have (default: clone their\n"
	  "                          blocks where the file system can)\n"
	  "      --hardlink=yes      archive: a file a --seed directory holds identically\n"
	  "                          (contents and metadata) becomes a hard link to it\n" },
	{ "digest", cafs_cmd_digest, "digest [OPTIONS] FILE|DIR|INDEX|ARCHIVE [PATH]",
	  "  -s, --store=DIR|URL     chunk store for an index (repeatable; default: default.castr\n"
	  "                          beside it)\n"
	  "      --digest=NAME       for a plain file: sha512-256 (default) or sha256\n"
	  "      --trusted-key=FILE  only an index signed by this minisign key (repeatable;\n"
	  "                          see SECURITY in cafs(1))\n"
	  "      --allow-downgrade   accept an index signed before the newest accepted\n"
	  "      --signed-name=NAME  the file name its signature must give (default: IN's)\n"
	  "PATH: in an archive, that directory's stream or that file's contents.\n" },
	{ "info", cafs_cmd_info, "info [OPTIONS] INDEX",
	  "  -s, --store=DIR|URL     also report how much of the index this store holds\n"
	  "                          (repeatable: what any of them holds)\n"
	  "  -j, --threads=N         accepted, as for extract; has no effect\n"
	  "      --trusted-key=FILE  only an index signed by this minisign key (repeatable;\n"
	  "                          see SECURITY in cafs(1))\n"
	  "      --allow-downgrade   accept an index signed before the newest accepted\n"
	  "      --signed-name=NAME  the file name its signature must give (default: IN's)\n" },
	{ "mount", cafs_cmd_mount, "mount [OPTIONS] SOURCE.caidx|SOURCE.caibx|SOURCE.catar MOUNTPOINT",
	  "  -s, --store=DIR|URL  chunk store (repeatable, tried in order;\n"
	  "                       default: default.castr beside SOURCE);\n"
	  "                       'URL1|URL2': a failover group of mirrors\n"
	  "      --cache=DIR      keep fetched chunks here (default when anything is\n"
	  "                       remote: $XDG_CACHE_HOME/cafs, ~/.cache/cafs;\n"
	  "                       /var/cache/cafs for root)\n"
	  "      --no-cache       no chunk cache on disk\n"
	  "      --offline        only memory and cache; nothing is downloaded\n"
	  "      --lru-size=SIZE  memory for decompressed chunks (default 64M)\n"
	  "      --threads=N      FUSE worker threads (default 64)\n"
	  "      --readahead=N    chunks fetched ahead of sequential reads (default 8)\n"
	  "  -f, --foreground     stay in the foreground (else: return once mounted)\n"
	  "      --takeover       with MOUNTPOINT alone: take a live mount over from\n"
	  "                       its keeper (an upgrade in place; its options kept)\n"
	  "      --log=FILE       once in the background, append messages to FILE\n"
	  "                       (default: they are dropped)\n"
	  "      --trusted-key=FILE  only an index signed by this minisign key\n"
	  "                       (repeatable; see SECURITY in cafs(1))\n"
	  "      --allow-downgrade  accept an index signed before the newest accepted\n"
	  "      --signed-name=NAME  the file name its signature must give\n"
	  "                       (default: SOURCE's)\n"
	  "      --rate-limit-bps=SIZE  cap the download rate from each store\n"
	  "      --record-profile=FILE  at unmount, write the order data was first read\n"
	  "                       (a prefetch profile; see FILES in cafs(1))\n"
	  "      --profile=FILE|none  replay this prefetch profile at mount (default: the\n"
	  "                       one beside the index, SOURCE.caprofile, if any)\n"
	  "      --fill           fetch the whole image into the cache in the background\n"
	  "                       (progress: cafs stats)\n"
	  "  -o, --options=OPT[,OPT...]  FUSE mount options (allow_other, ...), and\n"
	  "                       store=, cache=, offline, no_cache, lru_size=, threads=,\n"
	  "                       log=, trusted_key=, allow_downgrade, signed_name=,\n"
	  "                       overlay_xattrs, record_profile=,\n"
	  "                       profile=, fill, hard (reads wait for a store that is\n"
	  "                       down as long as it takes), soft (the default: at most\n"
	  "                       CAFS_HTTP_DEADLINE), and for a .caibx\n"
	  "                       uid=, gid=, mode= (the file's owner and mode; default:\n"
	  "                       the index file's, read-only); defaults, rw, ro, auto,\n"
	  "                       noauto, user, users, nouser, nofail, _netdev, x-*,\n"
	  "                       comment= are ignored\n"
	  "A .caibx shows as one file named after it; .caidx and .catar show the tree.\n"
	  "Also: mount.cafs SOURCE DIR -o OPTS; mount -t fuse.cafs SOURCE DIR.\n"
	  "A keeper process holds the mount and restarts its server if it dies.\n" },
	{ "stats", cafs_cmd_stats, "stats MOUNTPOINT",
	  "Prints a mount's counters: chunks and bytes fetched, cache and LRU hits,\n"
	  "HTTP requests and retries, errors, and the progress of a profile replay\n"
	  "and of --fill.\n" },
	{ "cache", cafs_cmd_cache, "cache stat|fill|prune|verify|seed [OPTIONS] ...",
	  "  cache stat [SOURCE...]          chunks and bytes in the cache; how much of each index it holds\n"
	  "  cache fill SOURCE...            download every chunk the indexes need that the cache lacks\n"
	  "  cache prune --max-size=SIZE     evict least recently used chunks until the cache fits\n"
	  "  cache verify [--repair]         check every chunk against its name; --repair removes bad ones\n"
	  "  cache seed SOURCE SEED...       take SOURCE's chunks from local data: a file, device,\n"
	  "                                  .catar, index, or a directory for a .caidx\n"
	  "      --cache=DIR         the cache (default: $XDG_CACHE_HOME/cafs, ~/.cache/cafs;\n"
	  "                          /var/cache/cafs for root)\n"
	  "  -s, --store=DIR|URL     fill: where to download from (repeatable; default: beside each index)\n"
	  "  -j, --threads=N         fill: transfers in flight (default 8, at most 64);\n"
	  "                          verify: workers (default: CPUs, at most 16)\n"
	  "      --rate-limit-bps=N  fill: cap the download rate (bytes/s; K, M, G suffixes)\n"
	  "      --trusted-key=FILE  fill: only indexes signed by this minisign key (repeatable)\n"
	  "      --allow-downgrade   fill: accept an index signed before the newest accepted\n"
	  "      --signed-name=NAME  fill: the file name its signature must give\n"
	  "      --keep=INDEX        prune: never evict this index's chunks (repeatable)\n"
	  "      --min-age=SECONDS   prune: spare chunks used this recently (default 5)\n"
	  "                          (prune also deletes *.tmp files older than an hour)\n"
	  "  -n, --dry-run           prune: only say what would go\n"
	  "      --digest=NAME       verify: only accept this digest (default: either)\n"
	  "      --seed-store=DIR    seed: the store of index seeds (default: beside each)\n" },
	{ "gc", cafs_cmd_gc, "gc [OPTIONS] INDEX...",
	  "  -s, --store=DIR|S3URL   the store, a directory or an S3 bucket (default: default.castr beside the\n"
	  "                          first INDEX; required when that INDEX is a URL)\n"
	  "  -n, --dry-run           only list what would be removed\n"
	  "Removes every chunk none of the INDEXes references, as casync gc does.\n" },
	{ "sign", cafs_cmd_sign, "sign -s SECRETKEY [OPTIONS] INDEX",
	  "  -s, --secret-key=FILE   a minisign secret key (minisign -G; asks for its password\n"
	  "                          when encrypted, or reads it from standard input)\n"
	  "  -l, --legacy            the legacy signature (minisign -S -l) instead of the\n"
	  "                          prehashed one\n"
	  "  -n, --name=NAME         the file name it is published under (default: INDEX's);\n"
	  "                          signed with the time, which cafs checks\n"
	  "  -t, --trusted-comment=TEXT  more signed text, after the timestamp and name\n"
	  "  -c, --comment=TEXT      unsigned comment\n"
	  "Writes INDEX.minisig as minisign -S does; see SECURITY in cafs(1).\n" },
	{ "list", cafs_cmd_list, "list [OPTIONS] IN.catar|IN.caidx [PATH]",
	  "  -s, --store=DIR|URL     chunk store (repeatable; default: default.castr beside IN)\n"
	  "  -l, --long              owner, size and time too\n"
	  "      --recursive=no      only the top (IN's root or PATH) and its entries\n"
	  "      --trusted-key=FILE  only an index signed by this minisign key (repeatable;\n"
	  "                          see SECURITY in cafs(1))\n"
	  "      --allow-downgrade   accept an index signed before the newest accepted\n"
	  "      --signed-name=NAME  the file name its signature must give (default: IN's)\n"
	  "      --cache=DIR         keep fetched chunks and a URL's index here, and use them\n"
	  "      --offline           only the cache: nothing is downloaded\n"
	  "Prints 'MODE PATH' per entry, as casync list does. With PATH only that\n"
	  "subtree, found by random access (only the chunks on the way are read).\n" },
	{ "meta", cafs_cmd_meta, "meta make [OPTIONS] INDEX.caidx",
	  "  -s, --store=DIR|URL     chunk store (repeatable; default: default.castr beside INDEX)\n"
	  "  -o, --output=FILE       where to write it (default: INDEX.caidx.cameta; required\n"
	  "                          for a remote INDEX)\n"
	  "Writes the metadata sidecar of an existing archive index (one made by casync or\n"
	  "desync), read through its store: list, mtree and the mount then need no chunk\n"
	  "for metadata. cafs make writes one beside every .caidx.\n" },
	{ "mtree", cafs_cmd_mtree, "mtree [OPTIONS] IN.catar|IN.caidx [PATH]",
	  "  -s, --store=DIR|URL     chunk store (repeatable; default: default.castr beside IN)\n"
	  "      --long              accepted, as for list; has no effect (no short form here)\n"
	  "      --trusted-key=FILE  only an index signed by this minisign key (repeatable;\n"
	  "                          see SECURITY in cafs(1))\n"
	  "      --allow-downgrade   accept an index signed before the newest accepted\n"
	  "      --signed-name=NAME  the file name its signature must give (default: IN's)\n"
	  "      --cache=DIR         keep fetched chunks and a URL's index here, and use them\n"
	  "      --offline           only the cache: nothing is downloaded\n"
	  "      --digest=NAME       name the contents' digest field after NAME (sha256:\n"
	  "                          sha256digest), as casync does; the digest is the archive's\n"
	  "Prints the tree in BSD mtree(5) format, as casync mtree does.\n" },
};

static const char *program = "cafs";

const struct cafs_command *cafs_command_find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

void cafs_command_help(const struct cafs_command *c, FILE *f)
{
	fprintf(f, "Usage: %s %s\n\n%s", program, c->synopsis, c->help);
	fprintf(f, "  -v, --verbose           more messages (repeat for debug)\n"
	           "  -q, --quiet             errors only\n"
	           "  -h, --help              this help\n");
}

int cafs_usage_error(const char *cmd, const char *fmt, ...)
{
	char raw[512], msg[520];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	ca_location_redact_text(raw, msg, sizeof(msg)); /* a usage error may quote a URL */
	fprintf(stderr, "cafs: %s%s%s\nTry '%s %s%s--help'.\n", cmd ? cmd : "", cmd ? ": " : "", msg, program,
	        cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: %s COMMAND [OPTIONS] ...\n"
	           "       %s [mount] [OPTIONS] SOURCE MOUNTPOINT\n\n"
	           "Content-addressed images in casync's formats: make, mount lazily over HTTP, extract.\n\n"
	           "Commands:\n",
	        program, program);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %s\n", commands[i].synopsis);
	fprintf(f, "  help COMMAND\n\n"
	           "Options: -h, --help; --version. 'cafs help COMMAND' shows a command's options.\n"
	           "casync's options may come before a command; invoked as casync, cafs takes\n"
	           "casync's command line (man cafs: CASYNC COMPATIBILITY).\n");
}

/* fds 0-2 must be open before we open anything, or a chunk could land on stdout */
static void ensure_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", O_RDWR);
			if (n >= 0 && n != fd)
				close(n);
		}
}

/* getopt reports bad options itself, prefixed with argv[0]: make that
 * "cafs: CMD" so that every message on stderr starts with "cafs: ".
 * optind = 0: a full restart of getopt, which the casync front end has
 * already used on its own argv. */
int cafs_command_run(const struct cafs_command *c, int argc, char **argv)
{
	char name[64];
	snprintf(name, sizeof(name), "cafs: %s", c->name);
	argv[0] = name;
	optind = 0;
	return c->run(argc, argv);
}

int main(int argc, char **argv)
{
	/* the command's messages go to stderr; every thread it starts
	 * inherits this logger, and -v/-q set its level */
	struct ca_logger logger = CA_LOGGER_STDERR(CA_LOG_WARNING);
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	ensure_std_fds();
	ca_log_use(&logger);
	/* a bad store settings file (storeconf.h) is one line before any
	 * work; help needs none */
	bool just_help = argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
	                 !strcmp(argv[1], "--help") || !strcmp(argv[1], "--version");
	if (!just_help && ca_storeconf_check() < 0)
		return 1;

	if (!strcmp(base, "mount.cafs")) {
		const struct cafs_command *m = cafs_command_find("mount");
		if (!m) {
			fprintf(stderr, "cafs: mount: not built into this cafs\n");
			return 1;
		}
		return cafs_command_run(m, argc, argv);
	}
	/* casync's command line, for scripts and updaters written for it */
	if (!strcmp(base, "casync"))
		return cafs_casync_main(argc, argv, CAFS_CASYNC_NAMED);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("cafs %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		const struct cafs_command *c = cafs_command_find(argv[2]);
		if (!c)
			return cafs_usage_error(NULL, "unknown command '%s'", argv[2]);
		cafs_command_help(c, stdout);
		return 0;
	}
	/* casync's remote end when $CASYNC_REMOTE_PATH names cafs itself:
	 * `cafs [--rate-limit-bps=N] pull|push - ARCHIVE INDEX STORE...` */
	int verb = strncmp(argv[1], "--rate-limit-bps=", 17) ? 1 : 2;
	if (verb < argc && (!strcmp(argv[verb], "pull") || !strcmp(argv[verb], "push")))
		return cafs_casync_main(argc, argv, CAFS_CASYNC_NAMED);
	/* casync's global options before the command: `cafs -v --store=S list X` */
	if (argv[1][0] == '-' && argv[1][1])
		return cafs_casync_main(argc, argv, CAFS_CASYNC_PREFIX);
	const struct cafs_command *c = cafs_command_find(argv[1]);
	if (c)
		return cafs_command_run(c, argc - 1, argv + 1);
	/* `cafs SOURCE MOUNTPOINT [OPTIONS]`: the mount is the default command */
	const struct cafs_command *m = cafs_command_find("mount");
	if (m && argv[1][0] != '-' && argc >= 3)
		return cafs_command_run(m, argc, argv);
	if (argv[1][0] == '-')
		return cafs_usage_error(NULL, "unknown option '%s'", argv[1]);
	return cafs_usage_error(NULL, "unknown command '%s'", argv[1]);
}
