/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* source.c - open images from source strings (see source.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/feature.h"
#include "base/buf.h"
#include "net/failover.h"
#include "net/oci.h"
#include "base/fdio.h"
#include "format/format.h"
#include "image/delta.h"
#include "image/delta_source.h"
#include "image/index_cache.h"
#include "base/log.h"
#include "net/remote_file.h"
#include "image/source.h"
#include "net/storeconf.h"
#include "image/sidecar.h"
#include "store/blob.h"
#include "trust/trust.h"

/* An index downloaded whole; indexes list 40 bytes per chunk, so this is a
 * multi-terabyte image, and it bounds what a server can make us allocate. */
#define INDEX_DOWNLOAD_MAX ((size_t)1 << 30)

struct ca_image {
	char *name;
	struct ca_http_clock *clock; /* the open's (and a command's) progress deadline, http.h */
	enum ca_image_kind kind;
	const char *local; /* points into name, or NULL */
	int fd;            /* a local .catar */
	struct ca_remote_file *rf; /* a remote .catar */
	uint64_t size, index_flags;
	struct ca_index *idx;
	struct ca_chunksrc *src;
	struct ca_blob *blob;
	struct ca_remote_store **remotes; /* owned by src; for the stats */
	size_t n_remotes;
	char *cache_dir; /* the cache the chain writes to, or NULL */
	struct ca_location loc; /* name parsed, once */
	struct ca_sidecar *sidecar; /* the index's metadata sidecar, or NULL */
	struct ca_buf sidecar_bytes; /* what it was parsed from */
};

/* ---- settings ---- */

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

void ca_source_http_opts(struct ca_http_opts *o)
{
	unsigned long v;
	ca_http_opts_init(o);
	v = 0;
	env_uint("CAFS_HTTP_TIMEOUT", 1, 3600, &v);
	if (v) {
		o->connect_timeout_ms = (unsigned)v * 1000;
		o->stall_timeout_s = (unsigned)v;
	}
	v = o->total_timeout_s;
	env_uint("CAFS_HTTP_DEADLINE", 1, 86400, &v);
	o->total_timeout_s = (unsigned)v;
	v = o->low_speed_limit;
	env_uint("CAFS_HTTP_LOW_SPEED", 1, 1u << 30, &v);
	o->low_speed_limit = (unsigned)v;
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

char *ca_source_default_cache_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	char *r = NULL;
	/* XDG says a relative value is to be ignored */
	if (xdg && xdg[0] == '/')
		return asprintf(&r, "%s/cafs", xdg) < 0 ? NULL : r;
	if (geteuid() == 0)
		return strdup("/var/cache/cafs");
	const char *home = getenv("HOME");
	if (!home || home[0] != '/') {
		struct passwd *pw = getpwuid(geteuid());
		home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
	}
	/* no home: no shared fallback such as /var/tmp/cafs-cache, where
	 * another user could make the directory first */
	if (!home) {
		errno = ENOENT;
		return NULL;
	}
	return asprintf(&r, "%s/.cache/cafs", home) < 0 ? NULL : r;
}

/* The caller's HTTP settings, or the environment's (filled into *buf). */
static const struct ca_http_opts *http_opts_or_env(const struct ca_http_opts *given, struct ca_http_opts *buf)
{
	if (given)
		return given;
	ca_source_http_opts(buf);
	return buf;
}

/* The store settings file, read the first time something remote needs it
 * and then shared by every endpoint of the open (endpoint.h). */
static int settings(struct ca_storeconf **conf)
{
	return *conf ? 0 : ca_storeconf_load(CA_STORECONF_QUIET, conf); /* logs */
}

/* url resolved once (endpoint.h) with the open's settings; logs. */
static int endpoint(struct ca_endpoint *e, const char *url, const struct ca_http_opts *http,
                    struct ca_storeconf **conf)
{
	*e = (struct ca_endpoint){ 0 };
	int r = settings(conf);
	if (r == 0)
		r = ca_endpoint_init(e, url, http, *conf);
	return r < 0 ? ca_log_error_errno(r, "%s", url) : 0;
}

/* ---- indexes and stores ---- */

/* A whole file at an endpoint; does not log. */
static int get_file(const struct ca_endpoint *e, size_t cap, struct ca_buf *out)
{
	char validator[CA_HTTP_VALIDATOR_MAX];
	bool not_modified;
	return ca_remote_fetch(e, cap, NULL, out, &not_modified, validator);
}

static int open_remote_index(const struct ca_endpoint *e, struct ca_index **ret)
{
	struct ca_buf b = CA_BUF_INIT;
	const char *url = e->url;
	int r = get_file(e, INDEX_DOWNLOAD_MAX, &b);
	if (r == -ENOENT)
		return ca_log_error("%s: not found on the server", url), r;
	if (r < 0 && e->loc.oci && ca_oci_said(r))
		return r; /* oci.h said why */
	if (r < 0)
		return ca_log_error_errno(r, "%s", url);
	r = ca_index_adopt(b.data, b.size, ret); /* takes b.data */
	if (r == -EBADMSG)
		return ca_log_error_errno(r, "%s: not a valid casync index", url);
	if (r < 0)
		return ca_log_error_errno(r, "%s", url);
	return 0;
}

/* ---- signed indexes ---- */

/* The keys an index must be signed by: o's and the trusted key
 * directory's (malloc'd; none: nothing to check). */
static int trusted_keys(const struct ca_image_opts *o, struct ca_minisign_key **ret, size_t *ret_n)
{
	size_t n = o ? o->n_trusted_keys : 0;
	struct ca_minisign_key *k = n ? malloc(n * sizeof(*k)) : NULL;
	int r;
	if (n && !k)
		return ca_log_error_errno(ENOMEM, "trusted keys");
	if (n)
		memcpy(k, o->trusted_keys, n * sizeof(*k));
	r = ca_trust_load_system(&k, &n);
	if (r < 0) {
		free(k);
		return r;
	}
	*ret = k;
	*ret_n = n;
	return 0;
}

/* A file's bytes, from a server or the local file; does not log. */
static int fetch_whole(const struct ca_index_origin *from, size_t cap, struct ca_buf *out)
{
	if (from->ep)
		return get_file(from->ep, cap, out);
	return ca_buf_read_file(out, from->loc.path, 0, cap);
}

/* Read the index once, then its signature, check, and parse those very
 * bytes: a file changed in between fails the check instead of slipping
 * past it. No chunk is asked for before the check passes. */
static int open_signed_index(const struct ca_index_origin *from, struct ca_index **ret)
{
	struct ca_buf b = CA_BUF_INIT;
	const char *source = from->source;
	int r = fetch_whole(from, INDEX_DOWNLOAD_MAX, &b);
	if (r == -ENOENT && from->ep)
		ca_log_error("%s: not found on the server", source);
	else if (r == -EFBIG || r == -EINVAL) /* too large, or not a regular file */
		r = ca_log_error_errno(EBADMSG, "%s: not a valid casync index", source);
	else if (r < 0)
		ca_log_error_errno(r, "%s", source);
	if (r < 0)
		goto out;
	r = ca_index_cache_accept_signed(from, b.data, b.size);
	if (r < 0)
		goto out;
	r = ca_index_adopt(b.data, b.size, ret); /* takes b.data */
	b = (struct ca_buf)CA_BUF_INIT;
	if (r < 0)
		ca_log_error_errno(r, r == -EBADMSG ? "%s: not a valid casync index" : "%s", source);
out:
	ca_buf_release(&b);
	return r;
}

/* The cache an index URL is kept in (index_cache.h): the chunk cache's
 * directory, as add_cache picks it. NULL: none (or ENOMEM, said later). */
static char *index_cache_dir(const struct ca_image_opts *o)
{
	if (o->cache_mode == CA_CACHE_NONE)
		return NULL;
	if (o->cache_dir)
		return strdup(o->cache_dir);
	return o->cache_mode == CA_CACHE_AUTO ? ca_source_default_cache_dir() : NULL;
}

/* What opening an index and its sidecar share, worked out once: the
 * source parsed, the HTTP settings, a URL's endpoint (its section of the
 * settings file, an S3 bucket's credentials), the trusted keys (the key
 * directory is read once) and the cache a URL's copies are kept in; as
 * the origin index_cache.h takes. Filled in place, never copied (origin
 * points into it). */
struct index_src {
	struct ca_index_origin from;
	struct ca_http_opts buf;
	const struct ca_http_opts *http;
	struct ca_minisign_key *keys;
	size_t n_keys;
	char *cache;
	struct ca_trust_policy trust; /* with keys: what the index's signature must also say */
	char *record_dir;
	struct ca_endpoint ep;
	struct ca_storeconf *own_conf;
};

/* With trusted keys, where the rollback record is kept: the cache in use,
 * else the default cache, even with no chunk cache (--no-cache) and for a
 * local index: the record is a few bytes per index, and without it any
 * older signed index would do. */
static int record_dir(const struct ca_image_opts *o, char **ret)
{
	*ret = o && o->cache_dir ? strdup(o->cache_dir) : ca_source_default_cache_dir();
	if (!*ret && errno == ENOENT)
		return ca_log_error("trusted keys: no home directory to keep the record of signed indexes in: give "
		                    "a cache directory or set XDG_CACHE_HOME"),
		       -ENOENT;
	return *ret ? 0 : ca_log_error_errno(ENOMEM, "trusted keys");
}

/* The index at loc (parsed by the caller, once). conf: the open's
 * settings file, read here when needed and not yet read (NULL: c's own). */
static int index_src_init(const struct ca_location *loc, const struct ca_image_opts *o, struct ca_storeconf **conf,
                          struct index_src *c)
{
	const char *source = loc->s;
	*c = (struct index_src){ .from = { .source = source, .loc = *loc, .offline = o && o->offline } };
	bool remote = c->from.loc.kind == CA_LOCATION_HTTP;
	if (c->from.loc.kind == CA_LOCATION_OTHER)
		return ca_log_error_errno(-EPROTONOSUPPORT, "%s", source);
	if (remote)
		c->http = http_opts_or_env(o ? o->http : NULL, &c->buf);
	int r = trusted_keys(o, &c->keys, &c->n_keys);
	if (r == 0 && o && remote)
		c->cache = index_cache_dir(o);
	if (r == 0 && c->n_keys) {
		r = record_dir(o, &c->record_dir);
		c->trust = (struct ca_trust_policy){ .keys = c->keys, .n_keys = c->n_keys, .record_dir = c->record_dir };
		if (o) {
			c->trust.signed_name = o->signed_name;
			c->trust.allow_downgrade = o->allow_downgrade;
		}
		c->from.trust = &c->trust;
	}
	c->from.cache_dir = c->cache;
	if (r == 0 && c->cache) {
		/* A cache that will be refused is refused here, once, before
		 * anything is downloaded: each later use of it (the index's copy,
		 * its signature, the sidecar's, the chunk cache) would otherwise
		 * refuse it again, or warn that a copy cannot be kept. */
		r = ca_index_cache_check_dir(c->cache); /* logs */
	}
	/* offline with a cache, only the kept copies are read: no settings */
	if (r == 0 && remote && !(c->from.offline && c->cache)) {
		r = endpoint(&c->ep, source, c->http, conf ? conf : &c->own_conf);
		if (r == 0)
			c->from.ep = &c->ep;
	}
	return r;
}

static void index_src_release(struct index_src *c)
{
	ca_endpoint_clear(&c->ep);
	ca_storeconf_free(c->own_conf);
	free(c->keys);
	free(c->cache);
	free(c->record_dir);
}

static int open_index(const struct index_src *c, struct ca_index **ret)
{
	const char *path;
	int r;
	if (c->cache)
		return ca_index_cache_open(&c->from, ret);
	if (c->n_keys)
		return open_signed_index(&c->from, ret);
	if (c->from.ep)
		return open_remote_index(c->from.ep, ret);
	path = c->from.loc.path;
	r = ca_index_open(path, ret);
	if (r == -EBADMSG)
		return ca_log_error_errno(r, "%s: not a valid casync index", path);
	if (r < 0)
		return ca_log_error_errno(r, "%s", path);
	return 0;
}

int ca_source_open_index(const char *source, const struct ca_image_opts *o, struct ca_index **ret)
{
	struct index_src c;
	struct ca_location loc;
	ca_location_parse(source, &loc);
	int r = index_src_init(&loc, o, NULL, &c);
	if (r == 0)
		r = open_index(&c, ret);
	index_src_release(&c);
	return r;
}

int ca_source_open_sidecar(const char *source, const struct ca_index *idx, const struct ca_image_opts *o,
                           struct ca_sidecar **ret)
{
	struct index_src c;
	struct ca_location loc;
	ca_location_parse(source, &loc);
	int r = index_src_init(&loc, o, NULL, &c);
	*ret = NULL;
	if (r == 0)
		r = ca_index_cache_sidecar(&c.from, idx, ret, NULL);
	index_src_release(&c);
	return r;
}

int ca_source_open_profile_kept(const char *source, const struct ca_index *idx, const struct ca_image_opts *o,
                                struct ca_profile **ret, struct ca_buf *ret_bytes)
{
	struct index_src c;
	struct ca_location loc;
	ca_location_parse(source, &loc);
	int r = index_src_init(&loc, o, NULL, &c);
	*ret = NULL;
	if (ret_bytes)
		*ret_bytes = (struct ca_buf)CA_BUF_INIT;
	if (r == 0 && o->profile_data && o->profile_size)
		r = ca_index_cache_profile_kept(source, idx, o->profile_data, o->profile_size, c.n_keys > 0, ret);
	else if (r == 0 && !o->profile_data)
		r = ca_index_cache_profile(&c.from, idx, ret, ret_bytes);
	if (r == 0 && *ret && ret_bytes && o->profile_data)
		r = ca_buf_append(ret_bytes, o->profile_data, o->profile_size, o->profile_size);
	if (r == -ENOMEM)
		ca_log_error_errno(r, "%s", source);
	index_src_release(&c);
	if (r < 0 && ret_bytes)
		ca_buf_release(ret_bytes);
	return r;
}

int ca_source_open_profile(const char *source, const struct ca_index *idx, const struct ca_image_opts *o,
                           struct ca_profile **ret)
{
	return ca_source_open_profile_kept(source, idx, o, ret, NULL);
}

/* A .catar carries no signature of its own: with trusted keys, refused. */
static int check_archive_trust(const char *source, const struct ca_image_opts *o)
{
	struct ca_minisign_key *keys = NULL;
	size_t n_keys = 0;
	int r = trusted_keys(o, &keys, &n_keys);
	free(keys);
	if (r == 0 && n_keys) {
		ca_log_error("%s: cannot verify an archive, sign an index (trusted keys are configured)", source);
		r = -EKEYREJECTED;
	}
	return r;
}

/* A local store at a parsed location (-EPROTONOSUPPORT for a URL). Logs. */
static int open_local_store(const struct ca_location *at, struct ca_store **ret)
{
	if (!at->path)
		return ca_log_error_errno(-EPROTONOSUPPORT, "%s: not a local store", at->s);
	/* its section of the settings file may encrypt it */
	return ca_storeconf_open_store(NULL, at->path, ret); /* logs */
}

int ca_source_read_trusted_key(const char *path, struct ca_minisign_key *ret, char *why, size_t why_size)
{
	char w[CA_TRUST_WHY_MAX] = "";
	int r = ca_trust_read_key(AT_FDCWD, path, ret, w);
	if (r < 0 && why_size)
		snprintf(why, why_size, "%s", w);
	return r;
}

int ca_source_open_store(const char *store, struct ca_store **ret)
{
	struct ca_location at;
	ca_location_parse(store, &at);
	return open_local_store(&at, ret);
}

static int remote_presence(const char *store, const struct ca_index *idx, uint8_t *ret_have)
{
	size_t n = ca_index_n_chunks(idx);
	struct ca_http_opts o;
	struct ca_remote_store *rs = NULL;
	const uint8_t **ids = malloc((n ? n : 1) * sizeof(*ids));
	int r = ids ? 0 : -ENOMEM;
	bool logged = false;
	ca_source_http_opts(&o);
	if (r == 0) {
		r = ca_remote_store_new(store, &o, &rs); /* logs */
		logged = r < 0;
	}
	for (size_t i = 0; r == 0 && i < n; i++)
		ca_index_chunk(idx, i, NULL, NULL, &ids[i]);
	if (r == 0)
		r = ca_remote_store_probe(rs, ids, n, ret_have);
	if (r < 0 && !logged) {
		char *shown = ca_location_redact(store);
		ca_log_error_errno(r, "%s", shown ? shown : "remote store");
		free(shown);
	}
	ca_remote_store_free(rs);
	free(ids);
	return r < 0 ? r : 0;
}

/* A group's presence: its first member that answers (they are mirrors). */
static int group_presence(const char *store, const struct ca_index *idx, uint8_t *ret_have)
{
	char **members = NULL;
	size_t n = 0;
	int r = ca_failover_split(store, &members, &n);
	if (r < 0)
		return ca_log_error_errno(r, "%s", store);
	r = -ENOENT;
	for (size_t i = 0; r < 0 && i < n; i++)
		r = ca_source_store_presence(members[i], idx, ret_have); /* logs */
	ca_failover_strv_free(members);
	return r;
}

int ca_source_stores_presence(char *const *stores, size_t n_stores, const struct ca_index *idx,
                              uint8_t *ret_have)
{
	size_t n = ca_index_n_chunks(idx);
	uint8_t *one = n_stores > 1 ? malloc(n ? n : 1) : NULL;
	int r = n_stores > 1 && !one ? ca_log_error_errno(ENOMEM, "%s", stores[0]) : 0;
	memset(ret_have, 0, n);
	for (size_t s = 0; r == 0 && s < n_stores; s++) {
		r = ca_source_store_presence(stores[s], idx, one ? one : ret_have);
		for (size_t i = 0; r == 0 && one && i < n; i++)
			ret_have[i] |= one[i];
	}
	free(one);
	return r;
}

int ca_source_store_presence(const char *store, const struct ca_index *idx, uint8_t *ret_have)
{
	struct ca_location at;
	struct ca_store *st;
	if (ca_failover_is_group(store))
		return group_presence(store, idx, ret_have);
	ca_location_parse(store, &at);
	if (at.kind == CA_LOCATION_HTTP)
		return remote_presence(store, idx, ret_have);
	int r = open_local_store(&at, &st);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ca_index_n_chunks(idx); i++) {
		const uint8_t *id;
		ca_index_chunk(idx, i, NULL, NULL, &id);
		ret_have[i] = ca_store_has(st, id) > 0;
	}
	ca_store_free(st);
	return 0;
}

/* ---- the chunk source chain ---- */

/* What an image's chunk source chain is built from, and what it gives
 * back besides itself: one struct handed down instead of the same
 * arguments passed through every step. */
struct chain {
	const struct ca_location *index;  /* places the default store */
	const struct ca_image_opts *o;
	const struct ca_http_opts *http;  /* o's or the environment's (no shared clock for a mount) */
	struct ca_storeconf **conf;       /* the open's settings file, read when first needed */
	bool want_remotes;
	struct ca_remote_store **remotes; /* the http(s) stores, with want_remotes */
	size_t n_remotes;
	char *cache_dir;                  /* the cache in use, or NULL (malloc'd) */
};

static int remember(struct chain *ch, struct ca_remote_store *rs)
{
	struct ca_remote_store **n;
	if (!ch->want_remotes)
		return 0;
	n = realloc(ch->remotes, (ch->n_remotes + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	ch->remotes = n;
	n[ch->n_remotes++] = rs;
	return 0;
}

/* The cache, if o asks for one; remote: anything of the image is. */
static int add_cache(struct ca_chunksrc *src, struct chain *ch, bool remote)
{
	const struct ca_image_opts *o = ch->o;
	char *dir = NULL;
	struct ca_store *cs;
	int r = 0;
	if (o->cache_mode == CA_CACHE_NONE)
		return 0;
	if (o->cache_dir)
		dir = strdup(o->cache_dir);
	else if (o->cache_mode == CA_CACHE_AUTO && remote)
		dir = ca_source_default_cache_dir();
	else if (o->cache_mode == CA_CACHE_AUTO)
		return 0; /* everything is local: a cache would only copy it */
	if (!dir && errno == ENOENT)
		return ca_log_error("cache: no home directory to keep it in: give a cache directory or set "
		                    "XDG_CACHE_HOME"),
		       -ENOENT;
	if (!dir)
		return ca_log_error_errno(ENOMEM, "cache");
	r = ca_store_open_private(dir, true, &cs);
	if (r < 0)
		goto out;
	r = ca_chunksrc_set_cache(src, cs, o->cache_touch);
	ca_chunksrc_set_cache_async(src, true);
	if (r < 0)
		ca_log_error_errno(r, "cache %s", dir);
	if (r == 0) {
		ch->cache_dir = dir;
		dir = NULL;
	}
out:
	free(dir);
	return r;
}

/* An http(s) store resolved once (endpoint.h) with http; logs a failure
 * (one line: the settings file's, S3's or the store's own). */
static int open_remote(struct chain *ch, const char *url, const struct ca_http_opts *http,
                       struct ca_remote_store **ret)
{
	struct ca_endpoint e = { 0 };
	int r = settings(ch->conf); /* logs */
	if (r == 0) {
		/* url is an http(s) one: only ENOMEM goes unsaid there */
		r = ca_endpoint_init(&e, url, http, *ch->conf);
		if (r == -ENOMEM)
			ca_log_error_errno(r, "remote store");
	}
	if (r == 0)
		r = ca_remote_store_open(&e, ret); /* logs */
	ca_endpoint_clear(&e);
	return r;
}

/* A failover group "STORE1|STORE2|..." (failover.h) as one store of the
 * chain; its http(s) members are also remembered. */
static int add_group(struct ca_chunksrc *src, struct chain *ch, const char *store)
{
	struct ca_failover *g = NULL;
	struct ca_http_opts mo = *ch->http;
	char **members = NULL;
	size_t n = 0;
	bool logged = false;
	int r = ca_failover_split(store, &members, &n);
	if (r == -EINVAL)
		return ca_log_error_errno(r, "%s: a failover group with an empty member", store);
	if (r == -E2BIG)
		return ca_log_error_errno(r, "%s: more than %d stores in a failover group", store,
		                          CA_FAILOVER_MAX_MEMBERS);
	if (r == 0)
		r = ca_failover_new(&g);
	if (r < 0)
		goto out;
	/* the next member is the retry (failover.h) */
	if (n > 1)
		mo.retries = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct ca_remote_store *rs = NULL;
		struct ca_location at;
		struct ca_store *s;
		ca_location_parse(members[i], &at);
		if (at.kind != CA_LOCATION_HTTP) {
			r = open_local_store(&at, &s);
			if (r < 0) {
				logged = true; /* it said which member */
				goto out;
			}
			r = ca_failover_add(g, members[i], ca_chunksrc_store_backend(), s);
			continue;
		}
		r = open_remote(ch, members[i], &mo, &rs);
		if (r < 0) {
			logged = true; /* it said which member */
			goto out;
		}
		r = ca_failover_add(g, members[i], &ca_remote_store_ops, rs);
		if (r == 0)
			r = remember(ch, rs);
	}
	if (r == 0) {
		r = ca_chunksrc_add_backend(src, &ca_failover_ops, g); /* frees g on failure */
		g = NULL;
	}
out:
	ca_failover_free(g);
	ca_failover_strv_free(members);
	if (r < 0 && !logged)
		ca_log_error_errno(r, "%s", store);
	return r < 0 ? r : 0;
}

/* One store of the chain, parsed once (at); an http(s) one gets o's
 * outage mode and is remembered. */
static int add_store(struct ca_chunksrc *src, struct chain *ch, const struct ca_location *at)
{
	struct ca_remote_store *rs = NULL;
	struct ca_store *s;
	int r;
	if (ca_failover_is_group(at->s))
		return add_group(src, ch, at->s);
	if (at->kind != CA_LOCATION_HTTP) {
		r = open_local_store(at, &s);
		if (r < 0)
			return r;
		r = ca_chunksrc_add_store(src, s);
		return r < 0 ? ca_log_error_errno(r, "%s", at->s) : 0;
	}
	r = open_remote(ch, at->s, ch->http, &rs);
	if (r < 0)
		return r; /* said */
	r = ca_chunksrc_add_backend(src, &ca_remote_store_ops, rs); /* frees rs on failure */
	if (r < 0)
		return ca_log_error_errno(r, "%s", at->s);
	ca_remote_store_set_outage(rs, ch->o->outage);
	r = remember(ch, rs);
	return r < 0 ? ca_log_error_errno(r, "%s", at->s) : 0;
}

static int open_chain(struct chain *ch, const struct ca_index *idx, struct ca_chunksrc **ret)
{
	const struct ca_image_opts *o = ch->o;
	struct ca_chunksrc *src = NULL;
	struct ca_http_opts buf;
	const struct ca_http_opts *http = http_opts_or_env(o->http, &buf);
	if (o->outage != CA_REMOTE_OUTAGE_FAIL && http->clock) {
		/* a mount's reads have deadlines of their own (remote.h): the
		 * shared one is for the open */
		if (http != &buf)
			buf = *http;
		buf.clock = NULL;
		http = &buf;
	}
	ch->http = http;
	char *def = NULL;
	char *const *stores = o->stores;
	size_t n_stores = o->n_stores;
	bool remote = ch->index->kind != CA_LOCATION_PATH;
	enum ca_digest_type digest = ca_digest_type_from_flags(ca_index_feature_flags(idx));
	int r = ca_chunksrc_new(digest, o->lru_bytes, &src);
	if (r < 0)
		return ca_log_error_errno(r, "chunk source");
	if (n_stores == 0) {
		/* the index's query too, if its settings say so */
		if (ch->index->url && strchr(ch->index->s, '?'))
			r = settings(ch->conf);
		def = r < 0 ? NULL : ca_storeconf_default_store(*ch->conf, ch->index->s);
		if (!def) {
			r = ca_log_error_errno(r < 0 ? r : -ENOMEM, "%s", ch->index->s);
			goto fail;
		}
		stores = &def;
		n_stores = 1;
	}
	for (size_t i = 0; i < n_stores; i++) {
		struct ca_location at;
		ca_location_parse(stores[i], &at);
		remote = remote || at.kind != CA_LOCATION_PATH;
		r = add_store(src, ch, &at);
		if (r < 0)
			goto fail;
	}
	r = add_cache(src, ch, remote);
	if (r < 0)
		goto fail;
	ca_chunksrc_set_offline(src, o->offline);
	ca_chunksrc_set_chunk_size_max(src, ca_index_chunk_size_max(idx));
	free(def);
	*ret = src;
	return 0;
fail:
	free(def);
	ca_chunksrc_free(src);
	return r;
}

int ca_source_open_chunksrc(const char *index_name, const struct ca_index *idx, const struct ca_image_opts *o,
                            struct ca_chunksrc **ret)
{
	struct ca_location index;
	struct ca_storeconf *conf = NULL;
	ca_location_parse(index_name, &index);
	struct chain ch = { .index = &index, .o = o, .conf = &conf };
	int r = open_chain(&ch, idx, ret);
	free(ch.cache_dir);
	ca_storeconf_free(conf);
	return r;
}

/* ---- images ---- */

/* A remote .catar: read by range requests through a block cache, which
 * takes the memory the chunk LRU would have. */
static int open_archive_url(struct ca_image *im, const struct ca_image_opts *o, struct ca_storeconf **conf)
{
	struct ca_http_opts buf;
	struct ca_endpoint e = { 0 };
	int r;
	if (o->offline)
		return ca_log_error_errno(ENOMEDIUM, "%s: a remote .catar cannot be read offline", im->name);
	const struct ca_http_opts *http = http_opts_or_env(o->http, &buf);
	if (o->outage != CA_REMOTE_OUTAGE_FAIL && http->clock) {
		if (http != &buf)
			buf = *http;
		buf.clock = NULL; /* the mount's reads go on after the open */
		http = &buf;
	}
	r = settings(conf);
	if (r == 0)
		r = ca_endpoint_init(&e, im->name, http, *conf);
	if (r < 0 && !im->loc.s3) /* s3.h said what is wrong with an s3+ URL */
		ca_log_error_errno(r, "%s", im->name);
	if (r == 0)
		r = ca_remote_file_open_at(&e, o->lru_bytes, o->sequential ? CA_REMOTE_FILE_SEQUENTIAL : 0,
		                           &im->rf); /* logs */
	ca_endpoint_clear(&e);
	if (r < 0)
		return r;
	im->size = ca_remote_file_size(im->rf);
	return 0;
}

/* A local .catar: no index, no chunks, just the file (or block device). */
static int open_archive_file(struct ca_image *im, const struct ca_image_opts *o, struct ca_storeconf **conf)
{
	struct stat st;
	if (!im->local)
		return open_archive_url(im, o, conf);
	im->fd = open(im->local, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (im->fd < 0)
		return ca_log_error_errno(errno, "%s", im->local);
	if (fstat(im->fd, &st) < 0)
		return ca_log_error_errno(errno, "%s", im->local);
	if (S_ISBLK(st.st_mode)) {
		uint64_t size;
		if (ioctl(im->fd, BLKGETSIZE64, &size) < 0)
			return ca_log_error_errno(errno, "%s", im->local);
		im->size = size;
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return ca_log_error_errno(S_ISDIR(st.st_mode) ? EISDIR : EINVAL, "%s: not a regular file", im->local);
	im->size = (uint64_t)st.st_size;
	return 0;
}

/* o->index_data: the bytes an earlier open checked, validated again */
static int adopt_index(const char *source, const struct ca_image_opts *o, struct ca_index **ret)
{
	void *copy = malloc(o->index_size ? o->index_size : 1);
	if (!copy)
		return ca_log_error_errno(ENOMEM, "%s", source);
	memcpy(copy, o->index_data, o->index_size);
	int r = ca_index_adopt(copy, o->index_size, ret); /* frees copy on failure */
	if (r == -EBADMSG)
		return ca_log_error_errno(r, "%s: not a valid casync index", source);
	if (r < 0)
		return ca_log_error_errno(r, "%s", source);
	return 0;
}

/* The delta pack before im's stores (source.h's delta options); from:
 * the kept index's digest, or NULL. Nothing when there is none to use. */
static int add_delta(struct ca_image *im, const struct ca_image_opts *o, const struct ca_storeconf *conf,
                     const uint8_t *from)
{
	struct ca_http_opts buf, http;
	char *name = NULL;
	void *be = NULL;
	int r = 0;
	if (o->offline || !im->src || !(o->delta || from))
		return 0;
	if (!im->cache_dir) {
		if (o->delta)
			ca_log_warning("%s: a delta pack builds from the chunk cache, and there is none; not used",
			               o->delta);
		return 0;
	}
	struct ca_delta_source_opts so = { .location = o->delta, .from_digest = from, .bulk = o->delta_bulk,
		                           .http = &http, .cache_dir = im->cache_dir,
		                           .conf = conf };
	/* the pack's reads outlive the open: not the open's deadline */
	http = *http_opts_or_env(o->http, &buf);
	http.clock = NULL;
	if (!o->delta) {
		/* whether this is the image the cache kept (nothing to update) is
		 * the loader's to tell: hashing a big index costs the start */
		so.none_if_from = true;
		name = ca_delta_pack_name(im->name, from);
		if (!name)
			return ca_log_error_errno(ENOMEM, "%s", im->name);
		so.location = name;
		so.quiet_missing = true;
	}
	r = ca_delta_source_new(&so, im->idx, &be); /* logs */
	if (r == 0 && be)
		r = ca_chunksrc_add_backend_first(im->src, &ca_delta_source_ops, be); /* frees be on failure */
	if (r < 0)
		ca_log_error_errno(r, "%s", im->name);
	free(name);
	return r;
}

static int open_indexed(struct ca_image *im, const struct ca_image_opts *o, struct ca_storeconf **conf)
{
	struct index_src c;
	/* the index the cache kept for the URL before this open replaces it:
	 * the FROM of an update, naming its delta pack */
	uint8_t from[CA_DELTA_DIGEST_SIZE];
	bool have_from = false;
	int r = index_src_init(&im->loc, o, conf, &c);
	if (r == 0 && o->delta_kept && !o->delta && !o->offline && c.cache) {
		r = ca_index_cache_kept_digest(c.cache, im->name, from);
		have_from = r == 0;
		if (r == -ENOENT)
			r = 0;
	}
	if (r == 0)
		r = o->index_data ? adopt_index(im->name, o, &im->idx) : open_index(&c, &im->idx);
	if (r == 0 && im->kind == CA_IMAGE_ARCHIVE_INDEX && !o->no_sidecar && o->sidecar_data) {
		if (o->sidecar_size)
			r = ca_index_cache_sidecar_kept(im->name, im->idx, o->sidecar_data, o->sidecar_size,
			                                &im->sidecar);
		if (r == 0 && im->sidecar)
			r = ca_buf_append(&im->sidecar_bytes, o->sidecar_data, o->sidecar_size, o->sidecar_size);
		if (r < 0)
			ca_log_error_errno(r, "%s", im->name);
	} else if (r == 0 && im->kind == CA_IMAGE_ARCHIVE_INDEX && !o->no_sidecar) {
		r = ca_index_cache_sidecar(&c.from, im->idx, &im->sidecar, &im->sidecar_bytes);
	}
	index_src_release(&c);
	if (r < 0)
		return r;
	im->index_flags = ca_index_feature_flags(im->idx);
	struct chain ch = { .index = &im->loc, .o = o, .conf = conf, .want_remotes = true };
	r = open_chain(&ch, im->idx, &im->src);
	im->remotes = ch.remotes;
	im->n_remotes = ch.n_remotes;
	im->cache_dir = ch.cache_dir;
	if (r == 0)
		r = add_delta(im, o, *conf, have_from ? from : NULL);
	if (r < 0)
		return r;
	r = ca_blob_new(im->idx, im->src, &im->blob);
	if (r < 0)
		return ca_log_error_errno(r, "%s", im->name);
	im->size = ca_blob_size(im->blob);
	return 0;
}

int ca_image_open(const char *source, const struct ca_image_opts *given, struct ca_image **ret)
{
	static const struct ca_image_opts none = { 0 };
	struct ca_image *im = calloc(1, sizeof(*im));
	struct ca_image_opts io;
	struct ca_http_opts ho;
	struct ca_storeconf *conf = NULL; /* read once, if anything is remote */
	const struct ca_image_opts *o = &io;
	int r;
	if (!im || !(im->name = strdup(source))) {
		free(im);
		return ca_log_error_errno(ENOMEM, "%s", source);
	}
	im->fd = -1;
	/* one progress deadline for everything the image asks servers for
	 * (http.h): the index, its signature and sidecar, chunks, ranges */
	io = given ? *given : none;
	ho = *http_opts_or_env(io.http, &ho);
	r = ca_http_clock_new(ho.total_timeout_s, &im->clock);
	if (r < 0) {
		ca_image_free(im);
		return ca_log_error_errno(r, "%s", source);
	}
	ho.clock = im->clock;
	io.http = &ho;
	im->fd = -1;
	im->index_flags = UINT64_MAX;
	/* the one classification of the source: everything below asks im->loc */
	ca_location_parse(im->name, &im->loc);
	im->kind = im->loc.image;
	switch (im->loc.kind) {
	case CA_LOCATION_PATH:
		im->local = im->loc.path;
		break;
	case CA_LOCATION_OTHER:
		r = ca_log_error_errno(EPROTONOSUPPORT, "%s", source);
		goto fail;
	case CA_LOCATION_HTTP:
		break;
	}
	switch (im->kind) {
	case CA_IMAGE_ARCHIVE:
		r = check_archive_trust(source, o);
		if (r == 0)
			r = open_archive_file(im, o, &conf);
		break;
	case CA_IMAGE_BLOB_INDEX:
	case CA_IMAGE_ARCHIVE_INDEX:
		r = open_indexed(im, o, &conf);
		break;
	default:
		r = ca_log_error_errno(EINVAL, "%s: not an image (.caibx, .caidx or .catar)", source);
		break;
	}
	/* every engine copied what it took from the settings */
	ca_storeconf_free(conf);
	if (r < 0)
		goto fail;
	*ret = im;
	return 0;
fail:
	ca_image_free(im);
	return r;
}

int ca_image_make_sidecar(struct ca_image *im, const char *out)
{
	struct ca_catar_source src;
	struct ca_buf b = CA_BUF_INIT;
	uint8_t digest[CA_CHUNK_ID_SIZE];
	size_t isize;
	const struct ca_index *idx = im->idx;
	if (!idx || im->kind != CA_IMAGE_ARCHIVE_INDEX)
		return ca_log_error_errno(EINVAL, "%s: a metadata sidecar is for a .caidx", im->name);
	const void *bytes = ca_index_data(idx, &isize);
	int r = ca_sidecar_index_digest(bytes, isize, digest);
	ca_image_archive_source(im, &src);
	if (r == 0)
		r = ca_sidecar_build(&src, digest, &b);
	if (r < 0) {
		if (r == -EBADMSG)
			ca_log_error("%s: not a valid archive", im->name);
		else
			ca_image_log_read_error(im, r, 0, 0);
		goto out;
	}
	r = ca_sidecar_write(out, b.data, b.size, 0644);
	if (r < 0)
		ca_log_error_errno(r, "%s", out);
out:
	ca_buf_release(&b);
	return r;
}

void ca_image_free(struct ca_image *im)
{
	if (!im)
		return;
	ca_blob_free(im->blob);
	ca_chunksrc_free(im->src);
	free(im->remotes);
	free(im->cache_dir);
	ca_sidecar_free(im->sidecar);
	ca_buf_release(&im->sidecar_bytes);
	ca_index_free(im->idx);
	ca_remote_file_free(im->rf);
	ca_http_clock_free(im->clock); /* after every engine that used it */
	if (im->fd >= 0)
		close(im->fd);
	free(im->name);
	free(im);
}

const char *ca_image_name(const struct ca_image *im) { return im->name; }
enum ca_image_kind ca_image_kind(const struct ca_image *im) { return im->kind; }
const char *ca_image_local_path(const struct ca_image *im) { return im->local; }
uint64_t ca_image_size(const struct ca_image *im) { return im->size; }
uint64_t ca_image_index_flags(const struct ca_image *im) { return im->index_flags; }
struct ca_index *ca_image_index(const struct ca_image *im) { return im->idx; }
struct ca_chunksrc *ca_image_chunksrc(const struct ca_image *im) { return im->src; }
struct ca_blob *ca_image_blob(const struct ca_image *im) { return im->blob; }
const struct ca_sidecar *ca_image_sidecar(const struct ca_image *im) { return im->sidecar; }
const char *ca_image_cache_dir(const struct ca_image *im) { return im->cache_dir; }

const void *ca_image_sidecar_data(const struct ca_image *im, size_t *ret_size)
{
	*ret_size = im->sidecar ? im->sidecar_bytes.size : 0;
	return im->sidecar ? im->sidecar_bytes.data : NULL;
}

uint64_t ca_image_feature_flags(struct ca_image *im)
{
	uint8_t e[sizeof(struct ca_format_entry)];
	if (im->index_flags != UINT64_MAX)
		return im->index_flags;
	if (ca_image_pread(im, e, sizeof(e), 0) != (ssize_t)sizeof(e))
		return CA_FORMAT_SHA512_256;
	return ca_le64_read(e + offsetof(struct ca_format_entry, feature_flags));
}

ssize_t ca_image_pread(struct ca_image *im, void *buf, size_t len, uint64_t off)
{
	if (im->blob)
		return ca_blob_read(im->blob, buf, len, off);
	if (off >= im->size)
		return 0;
	if (len > im->size - off)
		len = (size_t)(im->size - off);
	if (im->rf)
		return ca_remote_file_pread(im->rf, buf, len, off);
	return ca_pread_full(im->fd, buf, len, off);
}

void ca_image_readahead(struct ca_image *im, uint64_t off, uint64_t len)
{
	if (im->blob)
		ca_blob_readahead(im->blob, off, len);
	else if (im->rf)
		ca_remote_file_readahead(im->rf, off, len);
	else if (off <= INT64_MAX && len <= INT64_MAX)
		(void)posix_fadvise(im->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

static ssize_t source_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	return ca_image_pread(userdata, buf, len, off);
}

static void source_readahead(void *userdata, uint64_t off, uint64_t len)
{
	ca_image_readahead(userdata, off, len);
}

void ca_image_archive_source(struct ca_image *im, struct ca_catar_source *ret)
{
	*ret = (struct ca_catar_source){
		.read = source_read,
		.readahead = source_readahead,
		.userdata = im,
		.size = im->size,
		.index_flags = im->index_flags,
	};
}

bool ca_image_remote_stats(const struct ca_image *im, struct ca_remote_store_stats *ret)
{
	*ret = (struct ca_remote_store_stats){ 0 };
	if (im->rf)
		ca_remote_file_get_stats(im->rf, &ret->http);
	for (size_t i = 0; i < im->n_remotes; i++) {
		struct ca_remote_store_stats s;
		ca_remote_store_get_stats(im->remotes[i], &s);
		ret->http.requests += s.http.requests;
		ret->http.attempts += s.http.attempts;
		ret->http.retries += s.http.retries;
		ret->http.ok += s.http.ok;
		ret->http.missing += s.http.missing;
		ret->http.errors += s.http.errors;
		ret->http.bytes += s.http.bytes;
		ret->http.urgent += s.http.urgent;
		ret->prefetches += s.prefetches;
		ret->prefetch_hits += s.prefetch_hits;
		ret->prefetch_drops += s.prefetch_drops;
		ret->prefetch_skips += s.prefetch_skips;
	}
	return im->n_remotes > 0 || im->rf;
}

int ca_image_log_read_error(struct ca_image *im, int err, uint64_t off, size_t len)
{
	if (im->rf)
		return ca_remote_file_log_read_error(im->rf, err, off, len);
	if (!im->blob || off >= im->size)
		return ca_log_error_errno(err, "%s", im->name);
	for (size_t i = (size_t)ca_index_find(im->idx, off); i < ca_index_n_chunks(im->idx); i++) {
		uint64_t s, e;
		const uint8_t *id;
		const struct ca_chunk *c = NULL;
		ca_index_chunk(im->idx, i, &s, &e, &id);
		if (s >= off + len)
			break;
		/* the culprit is the first chunk of the range that fails again */
		int r = ca_chunksrc_get(im->src, id, e - s, &c);
		ca_chunksrc_put(im->src, c);
		if (r == 0)
			continue;
		ca_blob_log_chunk_error(im->name, id, r);
		return err;
	}
	return ca_log_error_errno(err, "%s", im->name);
}

struct ca_remote_store *ca_image_remote(const struct ca_image *im, size_t i)
{
	return i < im->n_remotes ? im->remotes[i] : NULL;
}

/* the delta pack's backend (delta_source.h), or NULL */
static void *delta_backend(const struct ca_image *im)
{
	size_t n = im->src ? ca_chunksrc_n_backends(im->src) : 0;
	for (size_t k = 0; k < n; k++) {
		const struct ca_chunk_backend_ops *ops;
		void *be = ca_chunksrc_backend(im->src, k, &ops);
		if (ops == &ca_delta_source_ops)
			return be;
	}
	return NULL;
}

void ca_image_abort_waits(struct ca_image *im)
{
	void *delta = delta_backend(im);
	for (size_t i = 0; i < im->n_remotes; i++)
		ca_remote_store_abort(im->remotes[i]);
	if (delta)
		ca_delta_source_stop(delta); /* a --fill's pack run: the unmount does not wait for it */
}

bool ca_image_delta_stats(const struct ca_image *im, struct ca_delta_source_stats *ret)
{
	void *delta = delta_backend(im);
	if (!delta)
		return false;
	ca_delta_source_get_stats(delta, ret);
	return true;
}

struct ca_failover *ca_image_failover(const struct ca_image *im, size_t i)
{
	size_t n = im->src ? ca_chunksrc_n_backends(im->src) : 0;
	for (size_t k = 0; k < n; k++) {
		const struct ca_chunk_backend_ops *ops;
		void *be = ca_chunksrc_backend(im->src, k, &ops);
		if (ops == &ca_failover_ops && i-- == 0)
			return be;
	}
	return NULL;
}
