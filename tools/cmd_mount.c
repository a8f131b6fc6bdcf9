/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_mount.c - `cafs mount`: options, opening the image, the FUSE session and
 * the daemon start. `cafs stats`, which reads the mount's counters, is cmd_stats.c.
 *
 * Start-up without -f: fork first (the child will run threads: curl's,
 * libfuse's, and threads do not survive a fork), the child opens
 * everything, mounts and enters the loop; the first request (INIT) tells
 * the parent through a pipe that the mount answers, and the parent exits
 * 0. An error before that is printed by the child on the caller's stderr
 * and the parent exits with the child's status.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cmd.h"
#include "../fs/extras.h"
#include "../fs/fs.h"
#include "../fs/keeper.h"
#include "base/location.h"
#include "base/log.h"
#include "image/source.h"

#define DEFAULT_LRU_BYTES (UINT64_C(64) << 20)
/* Workers blocked on downloads must leave room for lookups and cached reads. */
#define DEFAULT_THREADS 64
#define MAX_THREADS 1024


/* what `cafs mount` is asked to do (and a keeper's server: its saved options) */
struct mount_args {
	struct cafs_request base;
	const char *source, *mountpoint;
	char **stores;
	size_t n_stores;
	const char *cache;
	bool no_cache, offline, foreground;
	bool overlay_xattrs; /* -o overlay_xattrs: serve trusted.overlay.* / user.overlay.* */
	char *fuse_opts; /* comma-separated, for libfuse */
	uint64_t lru_bytes;
	unsigned threads, readahead_chunks;
	const char *log_file; /* where messages go once detached (default: nowhere) */
	struct cafs_trusted_keys trusted; /* --trusted-key, -o trusted_key= */
	uint64_t rate_limit_bps; /* per HTTP transfer, 0 = none */
	/* -o uid=,gid=,mode= for the blob mount's file; -1: the default */
	long long blob_uid, blob_gid, blob_mode;
	const char *record_profile; /* written at unmount (profile.h) */
	const char *profile;        /* replayed at mount; "none": not even the one beside the index */
	bool fill;                  /* fetch the whole image into the cache in the background */
	const char *delta;          /* --delta: a delta pack from the cache's image (default: the one named for the kept index) */
	bool takeover;              /* --takeover MOUNTPOINT */
	/* the options again, as a keeper passes them to its servers: paths
	 * made absolute, -f and --takeover left out (NULL-terminated) */
	char **saved;
	size_t n_saved;
	bool hard;                  /* -o hard: reads wait for a failing store as long as it takes */
};

/* A keeper's server: its state, and how it leaves the caller's terminal. */
struct daemon {
	struct fs_keeper_server ks;
	const char *log_file; /* stderr once serving (a daemon's first server) */
	struct fs_keeper_kept kept; /* the bytes the image was opened from, for the keeper */
	struct ca_buf profile;        /* the profile's, kept there */
};

static int parse_count(const char *s, unsigned max, unsigned *ret)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > max)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

/* uid=/gid= take a number or a name; mode= an octal mode. -1 if bad. */
static long long parse_id(const char *s, size_t len, bool group)
{
	char buf[256], *end;
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	unsigned long v = strtoul(buf, &end, 10);
	if (!errno && !*end && buf[0] != '-' && v < UINT32_MAX)
		return (long long)v;
	if (group) {
		struct group *g = getgrnam(buf);
		return g ? (long long)g->gr_gid : -1;
	}
	struct passwd *pw = getpwnam(buf);
	return pw ? (long long)pw->pw_uid : -1;
}

static long long parse_mode(const char *s, size_t len)
{
	long long v = 0;
	if (len == 0 || len > 4)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '7')
			return -1;
		v = v * 8 + (s[i] - '0');
	}
	return v <= 0777 ? v : -1;
}

static int add_store(struct mount_args *a, const char *s)
{
	char **n = realloc(a->stores, (a->n_stores + 1) * sizeof(char *));
	if (!n)
		return -ENOMEM;
	a->stores = n;
	a->stores[a->n_stores++] = (char *)s;
	return 0;
}

/* Paths stay in use after the daemon's chdir("/"): make them absolute. */
static char *absolute(const char *p)
{
	if (p[0] == '/' || ca_location_is_url(p))
		return strdup(p);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	char *s = NULL;
	if (asprintf(&s, "%s/%s", cwd, p) < 0)
		return NULL;
	return s;
}

static char *absolute_stores(const char *s) { return fs_stores_map(s, absolute); }

/* Save an argument for the servers: name (may be NULL) followed by the
 * value, made absolute by fn when given. */
static int save(struct mount_args *a, const char *name, const char *value, char *(*fn)(const char *))
{
	char *v = NULL, *both = NULL;
	char **n = realloc(a->saved, (a->n_saved + 2) * sizeof(char *));
	if (!n)
		return -ENOMEM;
	a->saved = n;
	if (value && !(v = fn ? fn(value) : strdup(value)))
		return -ENOMEM;
	if (name && v) {
		int k = asprintf(&both, "%s=%s", name, v);
		free(v);
		if (k < 0)
			return -ENOMEM;
		v = both;
	} else if (name && !(v = strdup(name))) {
		return -ENOMEM;
	}
	a->saved[a->n_saved++] = v;
	a->saved[a->n_saved] = NULL;
	return 0;
}

/* -o's list for the servers, with the paths in it made absolute */
static int save_o(struct mount_args *a, const char *arg)
{
	static const struct {
		const char *key;
		char *(*fn)(const char *);
	} paths[] = { { "store=", absolute_stores }, { "cache=", absolute }, { "log=", absolute }, { "trusted_key=", absolute } };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return -ENOMEM;
	for (const char *opt = arg; opt && *opt;) {
		const char *comma = strchr(opt, ',');
		size_t n = comma ? (size_t)(comma - opt) : strlen(opt);
		char *one = strndup(opt, n), *conv = NULL;
		for (size_t i = 0; one && i < sizeof(paths) / sizeof(paths[0]); i++)
			if (!strncmp(one, paths[i].key, strlen(paths[i].key)) && one[strlen(paths[i].key)])
				conv = paths[i].fn(one + strlen(paths[i].key));
		if (one)
			fprintf(f, "%s%.*s%s", ftell(f) > 0 ? "," : "", conv ? (int)strcspn(one, "=") + 1 : (int)n,
			        one, conv ? conv : "");
		free(conv);
		free(one);
		opt = comma ? comma + 1 : NULL;
	}
	if (fclose(f) != 0) {
		free(out);
		return -ENOMEM;
	}
	int r = save(a, "-o", NULL, NULL);
	if (r == 0) {
		char **n = realloc(a->saved, (a->n_saved + 2) * sizeof(char *));
		if (!n) {
			free(out);
			return -ENOMEM;
		}
		a->saved = n;
		a->saved[a->n_saved++] = out;
		a->saved[a->n_saved] = NULL;
		return 0;
	}
	free(out);
	return r;
}

static void saved_free(struct mount_args *a)
{
	for (size_t i = 0; i < a->n_saved; i++)
		free(a->saved[i]);
	free(a->saved);
	a->saved = NULL;
	a->n_saved = 0;
}

static int append_opt(char **opts, const char *opt, size_t len)
{
	size_t have = *opts ? strlen(*opts) : 0;
	char *n = realloc(*opts, have + 1 + len + 1);
	if (!n)
		return -ENOMEM;
	if (have)
		n[have++] = ',';
	memcpy(n + have, opt, len);
	n[have + len] = 0;
	*opts = n;
	return 0;
}

static bool opt_is(const char *opt, size_t len, const char *name)
{
	return strlen(name) == len && !memcmp(opt, name, len);
}

/* -o: our own keys (so fstab and mount -t fuse.cafs can pass them), the
 * ones mount(8) adds that mean nothing here, and the rest for libfuse.
 * The strings set from -o point into its argument, which lives as long as
 * the request. */
static int parse_o(const char *cmd, struct mount_args *a, char *arg)
{
	for (char *opt = arg; opt && *opt;) {
		char *comma = strchr(opt, ',');
		size_t len = comma ? (size_t)(comma - opt) : strlen(opt);
		char *next = comma ? comma + 1 : NULL;
		if (comma)
			*comma = 0;
		if (!strncmp(opt, "store=", 6)) {
			if (add_store(a, opt + 6) < 0)
				return ca_log_error_errno(ENOMEM, "%s", cmd), 1;
		} else if (!strncmp(opt, "cache=", 6)) {
			a->cache = opt + 6;
			a->no_cache = false;
		} else if (!strncmp(opt, "log=", 4)) {
			a->log_file = opt + 4;
		} else if (opt_is(opt, len, "allow_downgrade")) {
			cafs_trust_option(cmd, CAFS_OPT_ALLOW_DOWNGRADE, NULL, &a->trusted);
		} else if (!strncmp(opt, "signed_name=", 12)) {
			int e = cafs_trust_option(cmd, CAFS_OPT_SIGNED_NAME, opt + 12, &a->trusted);
			if (e)
				return e;
		} else if (!strncmp(opt, "trusted_key=", 12)) {
			int e = cafs_trust_option(cmd, CAFS_OPT_TRUSTED_KEY, opt + 12, &a->trusted);
			if (e)
				return e;
		} else if (opt_is(opt, len, "no_cache")) {
			a->cache = NULL;
			a->no_cache = true;
		} else if (opt_is(opt, len, "offline")) {
			a->offline = true;
		} else if (opt_is(opt, len, "overlay_xattrs")) {
			a->overlay_xattrs = true;
		} else if (!strncmp(opt, "record_profile=", 15)) {
			a->record_profile = opt + 15;
		} else if (!strncmp(opt, "profile=", 8)) {
			a->profile = opt + 8;
		} else if (opt_is(opt, len, "fill")) {
			a->fill = true;
		} else if (opt_is(opt, len, "hard")) {
			a->hard = true;
		} else if (opt_is(opt, len, "soft")) {
			a->hard = false;
		} else if (!strncmp(opt, "lru_size=", 9)) {
			if (cafs_parse_size(opt + 9, &a->lru_bytes) < 0)
				return cafs_usage_error(cmd, "invalid size '%s'", opt + 9);
		} else if (!strncmp(opt, "uid=", 4) || !strncmp(opt, "gid=", 4)) {
			long long v = parse_id(opt + 4, len - 4, opt[0] == 'g');
			if (v < 0)
				return cafs_usage_error(cmd, "invalid %.3s '%.*s'", opt, (int)len - 4, opt + 4);
			*(opt[0] == 'g' ? &a->blob_gid : &a->blob_uid) = v;
		} else if (!strncmp(opt, "mode=", 5)) {
			if ((a->blob_mode = parse_mode(opt + 5, len - 5)) < 0)
				return cafs_usage_error(cmd, "invalid mode '%.*s' (octal, at most 0777)", (int)len - 5,
				                        opt + 5);
		} else if (!strncmp(opt, "threads=", 8)) {
			if (parse_count(opt + 8, MAX_THREADS, &a->threads) < 0)
				return cafs_usage_error(cmd, "invalid thread count '%s'", opt + 8);
		} else if (opt_is(opt, len, "") || opt_is(opt, len, "defaults") || opt_is(opt, len, "rw") ||
		           opt_is(opt, len, "ro") || opt_is(opt, len, "auto") || opt_is(opt, len, "noauto") ||
		           opt_is(opt, len, "user") || opt_is(opt, len, "users") || opt_is(opt, len, "nouser") ||
		           opt_is(opt, len, "nofail") || opt_is(opt, len, "_netdev") || !strncmp(opt, "x-", 2) ||
		           !strncmp(opt, "comment=", 8)) {
			/* the mount is read-only whatever is asked; the rest is mount(8)'s */
		} else if (append_opt(&a->fuse_opts, opt, len) < 0) {
			return ca_log_error_errno(ENOMEM, "%s", cmd), 1;
		}
		opt = next;
	}
	return -1;
}

static char *absolute_profile(const char *p) { return strcmp(p, "none") ? absolute(p) : strdup(p); }

/* mount's options; .keep: how the keeper passes each on to its servers
 * (save_option) */
static const struct cafs_option mount_options[] = {
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "chunk store (repeatable, tried in order;\n"
	  "default: default.castr beside SOURCE);\n"
	  "'URL1|URL2': a failover group of mirrors",
	  .keep = CAFS_KEEP_STORES },
	{ "cache", 0, "DIR", CAFS_OPT_CACHE,
	  .help = "keep fetched chunks here (default when anything is\n"
	  "remote: $XDG_CACHE_HOME/cafs, ~/.cache/cafs;\n"
	  "/var/cache/cafs for root)",
	  .keep = CAFS_KEEP_PATH },
	{ "no-cache", 0, NULL, CAFS_OPT_NO_CACHE,
	  .help = "no chunk cache on disk",
	  .keep = CAFS_KEEP_AS_IS },
	{ "offline", 0, NULL, CAFS_OPT_OFFLINE,
	  .help = "only memory and cache; nothing is downloaded",
	  .keep = CAFS_KEEP_AS_IS },
	{ "lru-size", 0, "SIZE", CAFS_OPT_LRU_SIZE,
	  .help = "memory for decompressed chunks (default 64M)",
	  .keep = CAFS_KEEP_AS_IS },
	{ "threads", 0, "N", CAFS_OPT_THREADS,
	  .help = "FUSE worker threads (default 64)",
	  .keep = CAFS_KEEP_AS_IS },
	{ "readahead", 0, "N", CAFS_OPT_READAHEAD,
	  .help = "chunks fetched ahead of sequential reads (default 8)",
	  .keep = CAFS_KEEP_AS_IS },
	{ "foreground", 'f', NULL, CAFS_OPT_FOREGROUND,
	  .help = "stay in the foreground (else: return once mounted)" },
	{ "takeover", 0, NULL, CAFS_OPT_TAKEOVER,
	  .help = "with MOUNTPOINT alone: take a live mount over from\n"
	  "its keeper (an upgrade in place; its options kept)" },
	{ "log", 0, "FILE", CAFS_OPT_LOG,
	  .help = "once in the background, append messages to FILE\n"
	  "(default: they are dropped)",
	  .keep = CAFS_KEEP_PATH },
	{ "trusted-key", 0, "FILE", CAFS_OPT_TRUSTED_KEY,
	  .help = "only an index signed by this minisign key\n"
	  "(repeatable; see SECURITY in cafs(1))",
	  .keep = CAFS_KEEP_PATH },
	{ "allow-downgrade", 0, NULL, CAFS_OPT_ALLOW_DOWNGRADE,
	  .help = "accept an index signed before the newest accepted",
	  .keep = CAFS_KEEP_AS_IS },
	{ "signed-name", 0, "NAME", CAFS_OPT_SIGNED_NAME,
	  .help = "the file name its signature must give\n"
	  "(default: SOURCE's)",
	  .keep = CAFS_KEEP_AS_IS },
	{ "rate-limit-bps", 0, "SIZE", CAFS_OPT_RATE_LIMIT_BPS,
	  .help = "cap the download rate from each store",
	  .keep = CAFS_KEEP_AS_IS },
	{ "record-profile", 0, "FILE", CAFS_OPT_RECORD_PROFILE,
	  .help = "at unmount, write the order data was first read\n"
	  "(a prefetch profile; see FILES in cafs(1))",
	  .keep = CAFS_KEEP_PATH },
	{ "profile", 0, "FILE|none", CAFS_OPT_PROFILE,
	  .help = "replay this prefetch profile at mount (default: the\n"
	  "one beside the index, SOURCE.caprofile, if any)",
	  .keep = CAFS_KEEP_PROFILE },
	{ "fill", 0, NULL, CAFS_OPT_FILL,
	  .help = "fetch the whole image into the cache in the background\n"
	  "(progress: cafs stats)",
	  .keep = CAFS_KEEP_AS_IS },
	{ "delta", 0, "PACK|URL", CAFS_OPT_DELTA,
	  .help = "build chunks from the cache's with this delta pack\n"
	  "(default: SOURCE.cadelta-<digest of the index kept before>)",
	  .keep = CAFS_KEEP_PATH },
	{ "options", 'o', "OPT[,OPT...]", CAFS_OPT_OPTIONS,
	  .help = "FUSE mount options (allow_other, ...), and\n"
	  "store=, cache=, offline, no_cache, lru_size=, threads=,\n"
	  "log=, trusted_key=, allow_downgrade, signed_name=,\n"
	  "overlay_xattrs, record_profile=,\n"
	  "profile=, fill, hard (reads wait for a store that is\n"
	  "down as long as it takes), soft (the default: at most\n"
	  "CAFS_HTTP_DEADLINE), and for a .caibx\n"
	  "uid=, gid=, mode= (the file's owner and mode; default:\n"
	  "the index file's, read-only); defaults, rw, ro, auto,\n"
	  "noauto, user, users, nouser, nofail, _netdev, x-*,\n"
	  "comment= are ignored",
	  .keep = CAFS_KEEP_FUSE_OPTIONS },
	{ NULL },
};

/* An option as the keeper passes it on to its servers (save()), by its
 * table's .keep: -f, --takeover and --help are this process's, not the
 * mount's. */
static int save_option(struct mount_args *a, int id, const char *arg)
{
	static char *(*const made_absolute[])(const char *) = {
		[CAFS_KEEP_PATH] = absolute, [CAFS_KEEP_STORES] = absolute_stores, [CAFS_KEEP_PROFILE] = absolute_profile,
	};
	const struct cafs_option *o = cafs_command_option(&cafs_command_mount, id);
	char name[64];
	if (id == 'v' || id == 'q')
		return save(a, id == 'v' ? "-v" : "-q", NULL, NULL);
	if (!o || o->keep == CAFS_KEEP_NO)
		return 0;
	if (o->keep == CAFS_KEEP_FUSE_OPTIONS)
		return save_o(a, arg);
	snprintf(name, sizeof(name), "--%s", o->name);
	return save(a, name, o->arg ? arg : NULL, o->keep == CAFS_KEEP_AS_IS ? NULL : made_absolute[o->keep]);
}

static void mount_init(struct cafs_request *q)
{
	struct mount_args *a = (struct mount_args *)q;
	a->lru_bytes = DEFAULT_LRU_BYTES;
	a->threads = DEFAULT_THREADS;
	a->blob_uid = a->blob_gid = a->blob_mode = -1;
}

static int mount_set(struct cafs_request *q, int id, const char *arg)
{
	struct mount_args *a = (struct mount_args *)q;
	const char *cmd = "mount";
	int r = save_option(a, id, arg);
	if (r < 0)
		return ca_log_error_errno(r, "%s", cmd), 1;
	switch (id) {
	case CAFS_OPT_STORE:
		if (add_store(a, arg) < 0)
			return ca_log_error_errno(ENOMEM, "%s", cmd), 1;
		return 0;
	case CAFS_OPT_CACHE: /* the last of --cache and --no-cache wins */
		a->cache = arg;
		a->no_cache = false;
		return 0;
	case CAFS_OPT_NO_CACHE:
		a->cache = NULL;
		a->no_cache = true;
		return 0;
	case CAFS_OPT_OFFLINE:
		a->offline = true;
		return 0;
	case CAFS_OPT_FOREGROUND:
		a->foreground = true;
		return 0;
	case CAFS_OPT_OPTIONS:
		r = parse_o(cmd, a, (char *)arg);
		return r >= 0 ? r : 0;
	case CAFS_OPT_LRU_SIZE:
		if (cafs_parse_size(arg, &a->lru_bytes) < 0)
			return cafs_usage_error(cmd, "invalid size '%s'", arg);
		return 0;
	case CAFS_OPT_THREADS:
		if (parse_count(arg, MAX_THREADS, &a->threads) < 0)
			return cafs_usage_error(cmd, "invalid thread count '%s'", arg);
		return 0;
	case CAFS_OPT_LOG:
		a->log_file = arg;
		return 0;
	case CAFS_TRUST_OPTION_IDS:
		return cafs_trust_option(cmd, id, arg, &a->trusted);
	case CAFS_OPT_RATE_LIMIT_BPS:
		if (cafs_parse_size(arg, &a->rate_limit_bps) < 0 || a->rate_limit_bps == 0)
			return cafs_usage_error(cmd, "invalid rate '%s'", arg);
		return 0;
	case CAFS_OPT_RECORD_PROFILE:
		a->record_profile = arg;
		return 0;
	case CAFS_OPT_PROFILE:
		a->profile = arg;
		return 0;
	case CAFS_OPT_FILL:
		a->fill = true;
		return 0;
	case CAFS_OPT_DELTA:
		a->delta = arg;
		return 0;
	case CAFS_OPT_TAKEOVER:
		a->takeover = true;
		return 0;
	case CAFS_OPT_READAHEAD:
		if (parse_count(arg, 1024, &a->readahead_chunks) < 0)
			return cafs_usage_error(cmd, "invalid chunk count '%s'", arg);
		return 0;
	default:
		return 0;
	}
}

static int mount_operands(struct cafs_request *q, int n, char **arg)
{
	struct mount_args *a = (struct mount_args *)q;
	const char *cmd = "mount";
	if (a->takeover) {
		if (n != 1)
			return cafs_usage_error(cmd, "--takeover: expected MOUNTPOINT alone");
		a->mountpoint = arg[0];
		return 0;
	}
	if (n != 2)
		return cafs_usage_error(cmd, "expected SOURCE and MOUNTPOINT");
	a->source = arg[0];
	a->mountpoint = arg[1];
	return 0;
}

static void mount_release(struct cafs_request *q)
{
	struct mount_args *a = (struct mount_args *)q;
	free(a->fuse_opts);
	free(a->stores);
	cafs_trusted_keys_release(&a->trusted);
	saved_free(a);
}

/* A daemon's first server leaves the caller's terminal and directory
 * once it serves: the caller waits for EOF on the output it gave us (e.g.
 * $(cafs mount ...)). Later servers inherit the keeper's, already
 * detached. */
static void detach(const char *log_file)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int log = log_file ? open(log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640) : -1;
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(log >= 0 ? log : null, STDERR_FILENO);
		close(null);
	}
	if (log >= 0)
		close(log);
	(void)!chdir("/");
}

/* The server answers: its keeper learns the connection and the state a
 * later server needs (keeper.h). */
static void on_serving(void *userdata, int fuse_fd, const void *init, size_t init_size)
{
	struct daemon *d = userdata;
	(void)fs_keeper_server_serving(d->ks.chan, fuse_fd, init, init_size, &d->kept);
	if (d->ks.detach)
		detach(d->log_file);
}

/* Parent side of the start-up: wait for "ready" or for the child to fail. */
static int wait_ready(pid_t child, int fd)
{
	char c;
	ssize_t k;
	do
		k = read(fd, &c, 1);
	while (k < 0 && errno == EINTR);
	close(fd);
	if (k == 1)
		return 0;
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return ca_log_error_errno(errno, "mount"), 1;
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		ca_log_error("mount: the daemon died of signal %d", WTERMSIG(status));
	else
		ca_log_error("mount: the daemon exited before the mount was ready");
	return 1;
}

struct image {
	struct ca_image *im;
	struct fs *fs;
	struct fs_extras x; /* profiles, prefetch */
};

static void image_release(struct image *im)
{
	/* a fill waiting for a failing store or a delta pack's run ends now */
	if (im->im)
		ca_image_abort_waits(im->im);
	fs_extras_stop(&im->x); /* first: its workers read through the image */
	fs_free(im->fs);
	ca_image_free(im->im);
	fs_extras_release(&im->x);
}

/* A restarted server says, once, what it serves: the kept index, whatever
 * the URL holds now (keeper.h). */
static void log_kept(const struct mount_args *a, const struct daemon *d)
{
	char hex[FS_SHA256_HEX_SIZE];
	char *shown = ca_location_redact(a->source);
	fs_index_sha256(d->ks.index, d->ks.index_size, hex);
	ca_log_info("%s: serving the index kept since the mount (sha256 %s)%s", shown ? shown : "mount", hex,
	            d->ks.sidecar ? ", its sidecar and profile: nothing fetched" : "; its sidecar and profile fetched");
	free(shown);
}

/* Everything up to a ready fs. Logs its errors. */
static int image_open(const struct mount_args *a, struct daemon *d, struct image *im)
{
	struct ca_http_opts http;
	struct ca_image_opts io = {
		.stores = a->stores,
		.n_stores = a->n_stores,
		.cache_mode = a->no_cache ? CA_CACHE_NONE : CA_CACHE_AUTO,
		.cache_dir = a->cache,
		.cache_touch = true,
		.offline = a->offline,
		.lru_bytes = a->lru_bytes,
		.http = &http,
		.outage = a->hard ? CA_REMOTE_OUTAGE_HARD : CA_REMOTE_OUTAGE_SOFT,
		.delta = a->delta,
		.delta_kept = true,
		.delta_bulk = a->fill,
	};
	cafs_trusted_keys_apply(&a->trusted, &io);
	io.index_data = d->ks.index; /* a restarted server: the image served before */
	io.index_size = d->ks.index_size;
	io.sidecar_data = d->ks.sidecar; /* ... its sidecar and profile: no network */
	io.sidecar_size = d->ks.sidecar_size;
	io.profile_data = d->ks.profile;
	io.profile_size = d->ks.profile_size;
	struct fs_options o = {
		.readahead_chunks = a->readahead_chunks,
		.overlay_xattrs = a->overlay_xattrs,
		.mountpoint = a->mountpoint,
	};
	char *name = NULL;
	ca_source_http_opts(&http);
	http.max_recv_speed = a->rate_limit_bps;
	int r = ca_image_open(a->source, &io, &im->im);
	if (r < 0)
		return r;
	if (d->ks.index)
		log_kept(a, d);
	bool blob = ca_image_kind(im->im) == CA_IMAGE_BLOB_INDEX;
	if (!blob && (a->blob_uid >= 0 || a->blob_gid >= 0 || a->blob_mode >= 0))
		return ca_log_error("%s: uid=, gid= and mode= are for blob mounts (a .caibx)", a->source), -EINVAL;
	if (blob) {
		/* the one file looks like the index it came from: its owner, its
		 * mode without the write bits, its times; an index by URL has no
		 * file mode, so the file is the mounting user's and private */
		const char *p = ca_image_local_path(im->im);
		struct stat st;
		if (!p || stat(p, &st) < 0) {
			memset(&st, 0, sizeof(st));
			st.st_mtim.tv_sec = time(NULL);
			st.st_atim = st.st_ctim = st.st_mtim;
			st.st_uid = getuid();
			st.st_gid = getgid();
			st.st_mode = 0400;
		}
		st.st_mode &= 0555;
		if (a->blob_uid >= 0)
			st.st_uid = (uid_t)a->blob_uid;
		if (a->blob_gid >= 0)
			st.st_gid = (gid_t)a->blob_gid;
		if (a->blob_mode >= 0)
			st.st_mode = (mode_t)a->blob_mode & 0555;
		name = ca_location_basename(a->source);
		if (!name)
			return ca_log_error_errno(ENOMEM, "mount");
		o.blob_name = name;
		o.blob_st = st;
	}
	if (ca_image_kind(im->im) == CA_IMAGE_ARCHIVE &&
	    (a->fill || a->record_profile || (a->profile && strcmp(a->profile, "none"))))
		return ca_log_error("%s: --fill and prefetch profiles need an index (.caidx or .caibx)", a->source),
		       -EINVAL;
	if (a->fill && !ca_image_cache_dir(im->im))
		return ca_log_error("%s: --fill needs a chunk cache (--cache=DIR)", a->source), -EINVAL;
	if (a->record_profile && (r = fs_extras_record(&im->x)) < 0)
		return r;
	o.record = im->x.rec;
	r = fs_extras_prefetch(&im->x, im->im, a->source, a->profile, a->fill, &io, &d->profile);
	if (r < 0)
		return r;
	o.prefetch = im->x.pf;
	o.warm = im->x.warm;
	r = fs_new(im->im, &o, &im->fs);
	if (r == -EBADMSG)
		ca_log_error_errno(r, "%s: not a valid archive", a->source);
	else if (r < 0)
		ca_log_error_errno(r, "%s", a->source);
	free(name);
	return r;
}

/* Open, mount, serve until unmounted or signalled. Returns an exit code. */
static int run(const struct mount_args *a, struct daemon *d)
{
	struct image im = { 0 };
	/* /proc/mounts is world-readable: never a password or token there */
	char *fsname = ca_location_redact(a->source);
	struct fs_serve_opts so = {
		.fsname = fsname,
		.fuse_opts = a->fuse_opts,
		.allow_other = geteuid() == 0,
		.max_threads = a->threads,
		.keep_mounted = true,
		.resume_fd = d->ks.fuse_fd,
		.init = d->ks.init,
		.init_size = d->ks.init_size,
		.serving = on_serving,
		.serving_userdata = d,
	};
	int r = fsname ? image_open(a, d, &im) : ca_log_error_errno(ENOMEM, "mount");
	if (r == 0 && ca_image_index(im.im)) {
		d->kept.index = ca_index_data(ca_image_index(im.im), &d->kept.index_size);
		d->kept.sidecar = ca_image_sidecar_data(im.im, &d->kept.sidecar_size);
		d->kept.profile = d->profile.data;
		d->kept.profile_size = d->profile.size;
	}
	/* a blob is read in bulk (dd, a loop device): larger kernel reads;
	 * a tree's files keep the default, so a partial read stays partial */
	if (r == 0 && ca_image_kind(im.im) == CA_IMAGE_BLOB_INDEX)
		so.kernel_readahead_kb = FS_BLOB_KERNEL_READAHEAD_KB;
	so.warm = im.x.warm;
	if (r == 0)
		r = fs_serve(im.fs, a->mountpoint, &so);
	if (r == 0 && im.x.rec)
		(void)fs_extras_write_profile(&im.x, im.im, a->record_profile); /* logs */
	image_release(&im);
	free(fsname);
	return r < 0 ? 1 : 0;
}

/* The mountpoint as the keeper and --takeover name it: its directory's
 * real path and its own name, without looking at the mount itself (which
 * may not answer). malloc'd; NULL when the directory cannot be resolved. */
static char *canonical_mountpoint(const char *mp)
{
	char *copy = strdup(mp), *slash, *dir = NULL, *out = NULL;
	size_t len = copy ? strlen(copy) : 0;
	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = 0;
	if (!copy)
		return NULL;
	slash = strrchr(copy, '/');
	const char *base = slash ? slash + 1 : copy;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		out = realpath(copy, NULL);
	} else {
		if (slash == copy)
			dir = strdup("/");
		else if (slash) {
			*slash = 0;
			dir = realpath(copy, NULL);
		} else {
			dir = realpath(".", NULL);
		}
		if (dir && asprintf(&out, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", base) < 0)
			out = NULL;
	}
	free(dir);
	free(copy);
	return out;
}

/* Run the keeper: here with -f, else as a daemon whose parent returns
 * once the mount serves (or with the first server's error). */
static int start_keeper(struct fs_keeper_conf *c, bool foreground, const char *log_file, const char *cmd)
{
	if (foreground) {
		int r = fs_keeper_run(c); /* it closed the descriptors */
		c->fuse_fd = c->init_fd = c->index_fd = c->sidecar_fd = c->profile_fd = c->old_keeper_fd = -1;
		return r;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return ca_log_error_errno(errno, "%s", cmd), 1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		ca_log_error_errno(errno, "%s", cmd);
		close(p[0]);
		close(p[1]);
		return 1;
	}
	if (pid > 0) {
		close(p[1]);
		return wait_ready(pid, p[0]);
	}
	close(p[0]);
	c->ready_fd = p[1];
	if (log_file) {
		c->log_fd = open(log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
		if (c->log_fd < 0) {
			ca_log_error_errno(errno, "%s", log_file);
			_exit(1);
		}
	}
	setsid();
	_exit(fs_keeper_run(c));
}

/* The check below says what goes wrong only at debug level: it is advice,
 * and the takeover does not depend on it. */
static void demoted(void *userdata, enum ca_log_level level, const char *line)
{
	const struct ca_logger *prev = userdata;
	(void)level;
	if (prev && prev->level >= CA_LOG_DEBUG)
		fprintf(stderr, "cafs: takeover: index check: %s\n", line);
}

/* size bytes from fd's start into buf: 0, or -1 (errno set; EIO: short) */
static int pread_all(int fd, void *buf, size_t size)
{
	for (size_t done = 0; done < size;) {
		ssize_t k = pread(fd, (char *)buf + done, size - done, (off_t)done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return errno = k < 0 ? errno : EIO, -1;
		done += (size_t)k;
	}
	return 0;
}

/* --takeover: has the index at the mount's source changed since it was
 * mounted? Fetched as a mount would (the cache's copy and a conditional
 * GET, trusted keys, the usual deadline; not offline); the new server
 * serves the kept one regardless (keeper.h), and this says so in one
 * line. A failure to fetch is a debug line, never an error. */
static void check_index_changed(const char *mp, const struct mount_args *b, int index_fd)
{
	struct ca_http_opts http;
	struct ca_image_opts io = {
		.cache_mode = b->no_cache ? CA_CACHE_NONE : CA_CACHE_AUTO,
		.cache_dir = b->cache,
		.http = &http,
	};
	struct ca_index *now = NULL;
	struct stat st;
	char kept_hex[FS_SHA256_HEX_SIZE], now_hex[FS_SHA256_HEX_SIZE];
	void *kept = NULL;
	size_t size, now_size;
	if (b->offline || fstat(index_fd, &st) < 0 || !(kept = malloc((size = (size_t)st.st_size) ? size : 1)) ||
	    pread_all(index_fd, kept, size) < 0)
		goto out;
	cafs_trusted_keys_apply(&b->trusted, &io);
	ca_source_http_opts(&http);
	http.max_recv_speed = b->rate_limit_bps;
	struct ca_logger *prev = ca_log_current();
	struct ca_logger quiet = { .fn = demoted, .userdata = prev, .level = CA_LOG_DEBUG };
	ca_log_use(&quiet);
	int r = ca_source_open_index(b->source, &io, &now);
	ca_log_use(prev);
	if (r < 0)
		goto out;
	const void *bytes = ca_index_data(now, &now_size);
	if (now_size == size && !memcmp(bytes, kept, size)) {
		ca_log_debug("takeover: %s: the index at the source is the one mounted", mp);
		goto out;
	}
	char *shown = ca_location_redact(b->source);
	fs_index_sha256(kept, size, kept_hex);
	fs_index_sha256(bytes, now_size, now_hex);
	ca_log_warning("%s: the index at %s changed since it was mounted; still serving the mounted one (sha256 %s, "
	               "now %s); remount to switch",
	               mp, shown ? shown : "its source", kept_hex, now_hex);
	free(shown);
out:
	ca_index_free(now);
	free(kept);
}

/* --takeover: the running keeper's state and options, then a keeper of
 * this binary. */
static int takeover(const char *cmd, const struct mount_args *a)
{
	struct fs_keeper_conf c = {
		.ready_fd = -1, .log_fd = -1, .fuse_fd = -1, .init_fd = -1, .index_fd = -1, .sidecar_fd = -1,
		.profile_fd = -1, .old_keeper_fd = -1,
	};
	char **args = NULL;
	char *mp = canonical_mountpoint(a->mountpoint);
	struct mount_args b = { 0 };
	int r = 1;
	if (!mp) {
		ca_log_error_errno(errno, "%s", a->mountpoint);
		return 1;
	}
	if (fs_keeper_takeover(mp, &c, &args) != 0)
		goto out;
	/* this binary must understand the mount's options (and names the log) */
	size_t n = 0;
	while (args[n])
		n++;
	char **argv = calloc(n + 2, sizeof(char *));
	if (!argv) {
		ca_log_error_errno(ENOMEM, "%s", cmd);
		goto out;
	}
	argv[0] = "mount";
	memcpy(argv + 1, args, n * sizeof(char *));
	char **copy = calloc(n + 2, sizeof(char *)); /* getopt permutes */
	if (copy)
		memcpy(copy, argv, (n + 1) * sizeof(char *));
	mount_init(&b.base);
	r = copy ? cafs_command_parse(&cafs_command_mount, &b.base, (int)n + 1, copy) : 1;
	cafs_set_verbosity(a->base.verbosity); /* this process's, not the mount's */
	free(copy);
	if (r >= 0) {
		ca_log_error("takeover: %s: this binary does not take the mount's options", mp);
		r = 1;
	} else {
		c.server_args = args;
		c.mountpoint = mp;
		if (c.index_fd >= 0)
			check_index_changed(mp, &b, c.index_fd);
		r = start_keeper(&c, a->foreground, b.log_file, cmd);
	}
	free(argv);
out:
	if (c.fuse_fd >= 0)
		close(c.fuse_fd);
	if (c.init_fd >= 0)
		close(c.init_fd);
	int kept[] = { c.index_fd, c.sidecar_fd, c.profile_fd };
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (kept[i] >= 0)
			close(kept[i]);
	if (c.old_keeper_fd >= 0)
		close(c.old_keeper_fd);
	mount_release(&b.base); /* b.stores[] point into args */
	free(args);
	free(mp);
	return r;
}

static int mount_run(struct cafs_request *q)
{
	const char *cmd = "mount";
	struct mount_args a = *(struct mount_args *)q; /* the stores made absolute here are this copy's */
	struct daemon d = { .ks = { .chan = -1, .fuse_fd = -1 } };
	char *source = NULL, *mountpoint = NULL, *record_profile = NULL, *profile = NULL;
	size_t n_abs = 0; /* a.stores[0..n_abs) are ours to free */
	int r;
	struct stat st;
	int server;

	r = 1;
	server = fs_keeper_server_env(&d.ks);
	if (server < 0)
		goto out;
	if (a.takeover) {
		for (size_t i = 0; i < a.n_saved; i++)
			if (strcmp(a.saved[i], "-v") && strcmp(a.saved[i], "-q")) {
				r = cafs_usage_error(cmd, "--takeover: the mount keeps its own options (%s)", a.saved[i]);
				goto out;
			}
		r = server ? 1 : takeover(cmd, &a);
		goto out;
	}
	if (a.fill && a.no_cache) {
		r = cafs_usage_error(cmd, "--fill needs a chunk cache: not with --no-cache");
		goto out;
	}
	switch (ca_location_image_kind(a.source)) {
	case CA_IMAGE_BLOB_INDEX:
	case CA_IMAGE_ARCHIVE_INDEX:
	case CA_IMAGE_ARCHIVE:
		break;
	default:
		r = cafs_usage_error(cmd, "%s: SOURCE must end in .caibx, .caidx or .catar", a.source);
		goto out;
	}
	/* (a server's keeper looked; a restarted server's stat would wait on itself) */
	if (!server && stat(a.mountpoint, &st) < 0) {
		ca_log_error_errno(errno, "%s", a.mountpoint);
		goto out;
	}
	if (!server && !S_ISDIR(st.st_mode)) {
		ca_log_error_errno(ENOTDIR, "%s", a.mountpoint);
		goto out;
	}
	source = absolute(a.source);
	mountpoint = server ? strdup(a.mountpoint) : canonical_mountpoint(a.mountpoint);
	if (!source || !mountpoint) {
		ca_log_error_errno(errno == ENOENT ? ENOENT : ENOMEM, "%s", cmd);
		goto out;
	}
	a.source = source;
	a.mountpoint = mountpoint;
	if (a.record_profile && !(record_profile = absolute(a.record_profile))) {
		ca_log_error_errno(ENOMEM, "%s", cmd);
		goto out;
	}
	if (a.profile && strcmp(a.profile, "none") && !(profile = absolute(a.profile))) {
		ca_log_error_errno(ENOMEM, "%s", cmd);
		goto out;
	}
	if (record_profile)
		a.record_profile = record_profile;
	if (profile)
		a.profile = profile;
	for (size_t i = 0; i < a.n_stores; i++) {
		char *s = fs_stores_map(a.stores[i], absolute); /* each member of a group */
		if (!s) {
			ca_log_error_errno(ENOMEM, "%s", cmd);
			goto out;
		}
		a.stores[i] = s;
		n_abs = i + 1;
	}

	if (server) {
		d.log_file = a.log_file;
		r = run(&a, &d);
		goto out;
	}
	/* the keeper: the servers get the options and then SOURCE MOUNTPOINT */
	if (save(&a, a.source, NULL, NULL) < 0 || save(&a, a.mountpoint, NULL, NULL) < 0) {
		ca_log_error_errno(ENOMEM, "%s", cmd);
		goto out;
	}
	struct fs_keeper_conf c = {
		.server_args = a.saved, .mountpoint = a.mountpoint, .ready_fd = -1, .log_fd = -1,
		.fuse_fd = -1, .init_fd = -1, .index_fd = -1, .sidecar_fd = -1, .profile_fd = -1, .old_keeper_fd = -1,
	};
	char *log_file = a.log_file ? absolute(a.log_file) : NULL;
	r = start_keeper(&c, a.foreground, log_file, cmd);
	free(log_file);
out:
	fs_keeper_server_release(&d.ks);
	ca_buf_release(&d.profile);
	for (size_t i = 0; i < n_abs; i++)
		free(a.stores[i]);
	/* save() may have grown the list: the request frees it */
	((struct mount_args *)q)->saved = a.saved;
	((struct mount_args *)q)->n_saved = a.n_saved;
	free(source);
	free(mountpoint);
	free(record_profile);
	free(profile);
	return r;
}

const struct cafs_command cafs_command_mount = {
	.name = "mount",
	.synopsis = "mount [OPTIONS] SOURCE.caidx|SOURCE.caibx|SOURCE.catar MOUNTPOINT",
	.options = mount_options,
	.help_column = 23,
	.help_tail = "A .caibx shows as one file named after it; .caidx and .catar show the tree.\n"
	             "Also: mount.cafs SOURCE DIR -o OPTS; mount -t fuse.cafs SOURCE DIR.\n"
	             "A keeper process holds the mount and restarts its server if it dies.\n",
	.request_size = sizeof(struct mount_args),
	.init = mount_init,
	.set = mount_set,
	.operands = mount_operands,
	.run = mount_run,
	.release = mount_release,
};
