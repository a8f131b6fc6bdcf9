/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* common.c - what several subcommands share: naming rules, stores, indexes. */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunksrc.h"
#include "cmd.h"
#include "index.h"
#include "log.h"
#include "make.h"
#include "remote.h"
#include "store.h"

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

enum cafs_kind cafs_kind_from_name(const char *name)
{
	size_t n = strcspn(name, "?#"); /* URLs: ignore query and fragment */
	if (has_suffix(name, n, ".caibx"))
		return CAFS_KIND_BLOB_INDEX;
	if (has_suffix(name, n, ".caidx"))
		return CAFS_KIND_ARCHIVE_INDEX;
	if (has_suffix(name, n, ".catar"))
		return CAFS_KIND_ARCHIVE;
	return CAFS_KIND_UNKNOWN;
}

bool cafs_is_url(const char *s)
{
	const char *p = strstr(s, "://");
	if (!p || p == s || s[0] == '/' || !strncmp(s, "./", 2))
		return false;
	for (const char *q = s; q < p; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '+' ||
		      *q == '-' || *q == '.'))
			return false;
	return true;
}

char *cafs_default_store(const char *index)
{
	size_t n = strcspn(index, "?#");
	const char *slash = memrchr(index, '/', n);
	size_t dir = slash ? (size_t)(slash - index + 1) : 0;
	char *s = malloc(dir + sizeof("default.castr"));
	if (!s)
		return NULL;
	memcpy(s, index, dir);
	strcpy(s + dir, "default.castr");
	return s;
}

void cafs_chunking_init(struct cafs_chunking *c)
{
	c->avg = CA_CHUNK_SIZE_AVG_DEFAULT;
	c->min = c->avg / 4;
	c->max = c->avg * 4;
	c->digest = CA_DIGEST_SHA512_256;
}

void cafs_set_verbosity(int level)
{
	if (level < 0)
		ca_log_set_level(CA_LOG_ERROR);
	else if (level == 0)
		ca_log_set_level(CA_LOG_WARNING);
	else if (level == 1)
		ca_log_set_level(CA_LOG_INFO);
	else
		ca_log_set_level(CA_LOG_DEBUG);
}

int cafs_parse_threads(const char *s, unsigned *ret)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > 64)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

/* An environment variable holding a number in [min, max]; *ret unchanged when unset. */
static void env_uint(const char *name, unsigned long min, unsigned long max, unsigned long *ret)
{
	const char *v = getenv(name);
	char *end;
	if (!v || !*v)
		return;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (errno || *end || n < min || n > max) {
		ca_log_warning("ignoring %s=%s: expected a number from %lu to %lu", name, v, min, max);
		return;
	}
	*ret = n;
}

void cafs_http_opts(struct ca_http_opts *o)
{
	unsigned long v;
	ca_http_opts_init(o);
	v = 0;
	env_uint("CAFS_HTTP_TIMEOUT", 1, 3600, &v);
	if (v) {
		o->connect_timeout_ms = (unsigned)v * 1000;
		o->stall_timeout_s = (unsigned)v;
	}
	v = (unsigned long)o->retries;
	env_uint("CAFS_HTTP_RETRIES", 0, 20, &v);
	o->retries = (int)v;
	v = o->max_connections;
	env_uint("CAFS_HTTP_CONNECTIONS", 1, 256, &v);
	o->max_connections = o->max_transfers = (unsigned)v;
	const char *ca = getenv("CAFS_HTTP_CAINFO");
	if (ca && *ca)
		o->ca_file = ca;
}

/* An index downloaded whole; indexes list 40 bytes per chunk, so this is a
 * multi-terabyte image, and it bounds what a server can make us allocate. */
#define INDEX_DOWNLOAD_MAX ((size_t)1 << 30)

static int open_remote_index(const char *url, struct ca_index **ret)
{
	struct ca_http_opts o;
	struct ca_buf b = CA_BUF_INIT;
	int r;
	cafs_http_opts(&o);
	r = ca_remote_get_file(url, INDEX_DOWNLOAD_MAX, &o, &b);
	if (r == -ENOENT) {
		ca_log_error("%s: not found on the server", url);
		return r;
	}
	if (r < 0)
		return ca_log_error_errno(r, "%s", url);
	r = ca_index_adopt(b.data, b.size, ret); /* takes b.data */
	if (r == -EBADMSG)
		return ca_log_error_errno(r, "%s: not a valid casync index", url);
	if (r < 0)
		return ca_log_error_errno(r, "%s", url);
	return 0;
}

int cafs_open_index(const char *path, struct ca_index **ret)
{
	int r;
	if (ca_remote_is_http_url(path))
		return open_remote_index(path, ret);
	if (cafs_is_url(path) && strncmp(path, "file://", 7) != 0)
		return ca_log_error_errno(-EPROTONOSUPPORT, "%s", path);
	if (!strncmp(path, "file://", 7))
		path += 7;
	r = ca_index_open(path, ret);
	if (r == -EBADMSG)
		return ca_log_error_errno(r, "%s: not a valid casync index", path);
	if (r < 0)
		return ca_log_error_errno(r, "%s", path);
	return 0;
}

int cafs_chunksrc_open(char **stores, size_t n_stores, const char *index_path, enum ca_digest_type digest,
                       size_t lru_bytes, struct ca_chunksrc **ret)
{
	return cafs_chunksrc_open_remotes(stores, n_stores, index_path, digest, lru_bytes, ret, NULL, NULL);
}

int cafs_chunksrc_open_remotes(char **stores, size_t n_stores, const char *index_path, enum ca_digest_type digest,
                               size_t lru_bytes, struct ca_chunksrc **ret, struct ca_remote_store ***ret_remotes,
                               size_t *ret_n_remotes)
{
	struct ca_chunksrc *src = NULL;
	struct ca_remote_store **remotes = NULL;
	size_t n_remotes = 0;
	char *def = NULL;
	int r = ca_chunksrc_new(digest, lru_bytes, &src);
	if (r < 0)
		return ca_log_error_errno(r, "chunk source");
	if (n_stores == 0) {
		def = cafs_default_store(index_path);
		if (!def) {
			r = -ENOMEM;
			goto fail;
		}
		stores = &def;
		n_stores = 1;
	}
	for (size_t i = 0; i < n_stores; i++) {
		const char *p = stores[i];
		struct ca_store *s;
		if (ca_remote_is_http_url(p)) {
			struct ca_http_opts o;
			cafs_http_opts(&o);
			struct ca_remote_store *rs = NULL, **n;
			r = ca_chunksrc_add_remote(src, p, &o, &rs);
			if (r < 0) {
				ca_log_error_errno(r, "%s", p);
				goto fail;
			}
			if (ret_remotes) {
				n = realloc(remotes, (n_remotes + 1) * sizeof(*n));
				if (!n) {
					r = ca_log_error_errno(-ENOMEM, "%s", p);
					goto fail;
				}
				remotes = n;
				remotes[n_remotes++] = rs;
			}
			continue;
		}
		if (cafs_is_url(p) && strncmp(p, "file://", 7) != 0) {
			r = ca_log_error_errno(-EPROTONOSUPPORT, "%s", p);
			goto fail;
		}
		if (!strncmp(p, "file://", 7))
			p += 7;
		r = ca_store_open(p, &s);
		if (r < 0) {
			ca_log_error_errno(r, "%s", p);
			goto fail;
		}
		r = ca_chunksrc_add_store(src, s);
		if (r < 0) {
			ca_log_error_errno(r, "%s", p);
			goto fail;
		}
	}
	free(def);
	*ret = src;
	if (ret_remotes) {
		*ret_remotes = remotes;
		*ret_n_remotes = n_remotes;
	}
	return 0;
fail:
	free(remotes);
	free(def);
	ca_chunksrc_free(src);
	return r;
}

int cafs_store_presence(const char *store, struct ca_index *idx, uint8_t *ret_have)
{
	size_t n = ca_index_n_chunks(idx);
	uint64_t s, e;
	int r;
	if (ca_remote_is_http_url(store)) {
		struct ca_http_opts o;
		struct ca_remote_store *rs = NULL;
		const uint8_t **ids = malloc((n ? n : 1) * sizeof(*ids));
		cafs_http_opts(&o);
		r = ids ? ca_remote_store_new(store, &o, &rs) : -ENOMEM;
		for (size_t i = 0; r == 0 && i < n; i++)
			ca_index_chunk(idx, i, &s, &e, &ids[i]);
		if (r == 0)
			r = ca_remote_store_probe(rs, ids, n, ret_have);
		ca_remote_store_free(rs);
		free(ids);
		return r < 0 ? ca_log_error_errno(r, "%s", store) : 0;
	}
	if (cafs_is_url(store) && strncmp(store, "file://", 7) != 0)
		return ca_log_error_errno(-EPROTONOSUPPORT, "%s", store);
	if (!strncmp(store, "file://", 7))
		store += 7;
	struct ca_store *st;
	r = ca_store_open(store, &st);
	if (r < 0)
		return ca_log_error_errno(r, "%s", store);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *id;
		ca_index_chunk(idx, i, &s, &e, &id);
		ret_have[i] = ca_store_has(st, id) > 0;
	}
	ca_store_free(st);
	return 0;
}

char *cafs_default_cache_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	char *r = NULL;
	/* XDG says a relative value is to be ignored */
	if (xdg && xdg[0] == '/') {
		if (asprintf(&r, "%s/cafs", xdg) < 0)
			return NULL;
		return r;
	}
	if (geteuid() == 0)
		return strdup("/var/cache/cafs");
	const char *home = getenv("HOME");
	if (!home || home[0] != '/') {
		struct passwd *pw = getpwuid(geteuid());
		home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
	}
	if (!home)
		return strdup("/var/tmp/cafs-cache"); /* no home: still somewhere sane */
	if (asprintf(&r, "%s/.cache/cafs", home) < 0)
		return NULL;
	return r;
}

int cafs_common_option(const char *cmd, int c, int *verbosity)
{
	switch (c) {
	case 'v':
		(*verbosity)++;
		return -1;
	case 'q':
		*verbosity = -1;
		return -1;
	case 'h':
		cafs_command_help(cafs_command_find(cmd), stdout);
		return 0;
	default:
		return cafs_usage_error(cmd, "bad option");
	}
}

void cafs_print_digest(const uint8_t d[CA_CHUNK_ID_SIZE])
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	ca_id_to_hex(d, hex);
	printf("%s\n", hex);
}

void cafs_log_make_stats(const struct ca_make_stats *stats)
{
	ca_log_info("%llu bytes, %llu chunks, %llu new (%llu bytes stored)", (unsigned long long)stats->bytes,
	            (unsigned long long)stats->chunks, (unsigned long long)stats->chunks_new,
	            (unsigned long long)stats->bytes_stored);
}
