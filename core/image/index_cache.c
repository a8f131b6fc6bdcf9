/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* index_cache.c - indexes kept by URL, and the sidecar beside an index (see index_cache.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/buf.h"
#include "base/digest.h"
#include "base/fdio.h"
#include "image/index_cache.h"
#include "base/location.h"
#include "base/log.h"
#include "net/remote.h"
#include "net/endpoint.h"
#include "net/oci.h"
#include "image/profile.h"
#include "store/store.h"
#include "trust/trust.h"

/* as source.c: an index is 40 bytes a chunk, so this is a huge image */
#define INDEX_MAX ((size_t)1 << 30)
/* CACHE/signed/<SHA-256 of the record key>: the rollback record */
#define RECORD_SUBDIR "signed"

static int sha256_hex(const void *data, size_t size, char hex[2 * CA_CHUNK_ID_SIZE + 1])
{
	struct ca_digest *d = NULL;
	uint8_t h[CA_CHUNK_ID_SIZE];
	int r = ca_digest_new(CA_DIGEST_SHA256, &d);
	if (r == 0)
		r = ca_digest_once(d, data, size, h);
	ca_digest_free(d);
	if (r == 0)
		ca_id_to_hex(h, hex);
	return r;
}

char *ca_index_cache_path(const char *cache_dir, const char *url, const char *suffix)
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1], *r = NULL;
	if (sha256_hex(url, strlen(url), hex) < 0)
		return NULL;
	return asprintf(&r, "%s/indexes/%s%s", cache_dir, hex, suffix) < 0 ? NULL : r;
}

static const char *index_suffix(const struct ca_index_origin *o)
{
	return o->loc.image == CA_IMAGE_BLOB_INDEX ? ".caibx" : ".caidx";
}

/* CACHE/sub, checked as the chunk cache is (store.h: the cache root
 * ours and private, else refused with one line), and made with create.
 * The copies are trusted no more than the cache that holds them. */
static int private_subdir(const char *cache_dir, const char *sub, bool create)
{
	struct ca_store *s = NULL;
	struct stat st;
	char *dir = NULL;
	int r = ca_store_open_private(cache_dir, create, &s); /* logs */
	ca_store_free(s);
	if (r < 0)
		return r;
	if (asprintf(&dir, "%s/%s", cache_dir, sub) < 0)
		return ca_log_error_errno(ENOMEM, "cache %s", cache_dir);
	if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
		r = ca_log_error_errno(errno, "cache %s", dir);
	else if (lstat(dir, &st) < 0)
		r = errno == ENOENT ? -ENOENT : ca_log_error_errno(errno, "cache %s", dir);
	else if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		r = ca_log_error_errno(EPERM, "cache %s: not a private directory of ours: refusing to use it", dir);
	free(dir);
	return r;
}

static int kept_dir(const char *cache_dir, bool create)
{
	return private_subdir(cache_dir, "indexes", create);
}

int ca_index_cache_check_dir(const char *cache_dir)
{
	int r = kept_dir(cache_dir, false);
	return r == -ENOENT ? 0 : r;
}

/* A kept copy (offline): -ENOENT when there is none. */
static int read_kept(const char *cache_dir, const char *url, const char *suffix, size_t cap, struct ca_buf *b)
{
	char *path = NULL;
	int r = cache_dir ? kept_dir(cache_dir, false) : -ENOENT;
	if (r == 0) {
		path = ca_index_cache_path(cache_dir, url, suffix);
		r = path ? ca_buf_read_file(b, path, O_NOFOLLOW, cap) : -ENOMEM;
	}
	free(path);
	return r;
}

static int read_validator(const char *cache_dir, const char *url, const char *suffix,
                          char out[CA_HTTP_VALIDATOR_MAX], char sha[2 * CA_CHUNK_ID_SIZE + 1]);

int ca_index_cache_kept_digest(const char *cache_dir, const char *url, uint8_t out[CA_CHUNK_ID_SIZE])
{
	struct ca_buf b = CA_BUF_INIT;
	struct ca_digest *d = NULL;
	const char *suffix = ca_location_image_kind(url) == CA_IMAGE_BLOB_INDEX ? ".caibx" : ".caidx";
	char validator[CA_HTTP_VALIDATOR_MAX], sha[2 * CA_CHUNK_ID_SIZE + 1];
	struct stat st;
	int r = cache_dir ? kept_dir(cache_dir, false) : -ENOENT; /* a refused cache: logged */
	/* the digest keep wrote beside a copy with a validator: a big index
	 * (48 MB: ~50 ms of SHA-256) is not read and hashed on a mount's
	 * start. Two keepers racing may pair it with the other's copy: then
	 * the pack named is for another FROM, a 404 or refused by its
	 * header's digest, never wrong data (every chunk is verified) */
	if (r == 0 && read_validator(cache_dir, url, suffix, validator, sha) == 0 && ca_id_from_hex(sha, out) == 0) {
		char *path = ca_index_cache_path(cache_dir, url, suffix);
		bool kept = path && lstat(path, &st) == 0 && S_ISREG(st.st_mode);
		free(path);
		if (kept)
			return 0;
	}
	if (r == 0 && read_kept(cache_dir, url, suffix, INDEX_MAX, &b) < 0)
		r = -ENOENT; /* none that can be read: no FROM, not an error */
	if (r == 0)
		r = ca_digest_new(CA_DIGEST_SHA256, &d);
	if (r == 0)
		r = ca_digest_once(d, b.data, b.size, out);
	ca_digest_free(d);
	ca_buf_release(&b);
	return r;
}

/* A kept copy's validator (http.h) lives beside it in <copy>.validator:
 * "<SHA-256 hex of the copy> <validator>". The digest ties the two: two
 * processes keeping the same URL at once cannot pair one's validator with
 * the other's bytes. */
#define VALIDATOR_SUFFIX ".validator"


static char *validator_path(const char *cache_dir, const char *url, const char *suffix)
{
	char *vs = NULL, *path;
	if (asprintf(&vs, "%s" VALIDATOR_SUFFIX, suffix) < 0)
		return NULL;
	path = ca_index_cache_path(cache_dir, url, vs);
	free(vs);
	return path;
}

/* The kept copy's validator into out, and its digest into sha: 0, or
 * -ENOENT when there is none that can be used. */
static int read_validator(const char *cache_dir, const char *url, const char *suffix,
                          char out[CA_HTTP_VALIDATOR_MAX], char sha[2 * CA_CHUNK_ID_SIZE + 1])
{
	struct ca_buf b = CA_BUF_INIT;
	char *path = validator_path(cache_dir, url, suffix);
	const size_t hexlen = 2 * CA_CHUNK_ID_SIZE;
	int r = path ? ca_buf_read_file(&b, path, O_NOFOLLOW, hexlen + CA_HTTP_VALIDATOR_MAX) : -ENOMEM;
	if (r == 0 && (b.size <= hexlen + 1 || b.size - hexlen - 1 >= CA_HTTP_VALIDATOR_MAX ||
	               ((const char *)b.data)[hexlen] != ' ' || memchr(b.data, 0, b.size) ||
	               memchr(b.data, '\n', b.size) || memchr(b.data, '\r', b.size)))
		r = -ENOENT;
	if (r == 0) {
		memcpy(sha, b.data, hexlen);
		sha[hexlen] = 0;
		memcpy(out, (const char *)b.data + hexlen + 1, b.size - hexlen - 1);
		out[b.size - hexlen - 1] = 0;
	}
	ca_buf_release(&b);
	free(path);
	return r < 0 ? -ENOENT : 0;
}

/* Keep a copy: CACHE/indexes/ (0700) gets the file (0600), atomically,
 * and with validator (may be NULL or "") the validator beside it. */
static void keep(const char *cache_dir, const char *url, const char *suffix, const void *data, size_t size,
                 const char *validator)
{
	char *path = ca_index_cache_path(cache_dir, url, suffix), *vpath = validator_path(cache_dir, url, suffix);
	char sha[2 * CA_CHUNK_ID_SIZE + 1], *line = NULL;
	int r = path && vpath ? 0 : -ENOMEM;
	if (r == 0)
		r = kept_dir(cache_dir, true);
	if (r == 0 && unlink(vpath) < 0 && errno != ENOENT)
		r = -errno;
	if (r == 0)
		r = ca_atomic_file_write(path, 0600, data, size);
	if (r == 0 && validator && validator[0]) {
		r = sha256_hex(data, size, sha);
		if (r == 0 && asprintf(&line, "%s %s", sha, validator) < 0) {
			line = NULL;
			r = -ENOMEM;
		}
		if (r == 0)
			r = ca_atomic_file_write(vpath, 0600, line, strlen(line));
	}
	if (r < 0)
		ca_log_warning_errno(r, "cache %s: cannot keep a copy of the index for offline use", cache_dir);
	free(line);
	free(vpath);
	free(path);
}

static void forget(const char *cache_dir, const char *url, const char *suffix)
{
	char *path = ca_index_cache_path(cache_dir, url, suffix), *vpath = validator_path(cache_dir, url, suffix);
	if (vpath)
		(void)unlink(vpath);
	if (path)
		(void)unlink(path);
	free(vpath);
	free(path);
}

/* at's bytes, for the copy kept in cache_dir (may be NULL) under
 * (url, suffix): with a kept validator, a conditional GET, whose "not
 * modified" is answered with the kept copy (then *ret_unchanged, and
 * there is nothing to keep again); otherwise, or when the copy is not the
 * one its validator names, a plain GET. validator gets the new version's,
 * for keep. Errors as ca_remote_get_file. */
static int fetch_kept(const char *cache_dir, const char *url, const char *suffix, const struct ca_endpoint *at,
                      size_t cap, struct ca_buf *out, char validator[CA_HTTP_VALIDATOR_MAX], bool *ret_unchanged)
{
	const char *fetch_url = at->url; /* as given, for messages */
	char old[CA_HTTP_VALIDATOR_MAX] = "", sha[2 * CA_CHUNK_ID_SIZE + 1], now[2 * CA_CHUNK_ID_SIZE + 1];
	bool not_modified = false;
	int r;
	*ret_unchanged = false;
	if (cache_dir && kept_dir(cache_dir, false) == 0)
		(void)read_validator(cache_dir, url, suffix, old, sha);
	r = ca_remote_fetch(at, cap, old[0] ? old : NULL, out, &not_modified, validator);
	if (r < 0 || !not_modified)
		return r;
	/* the copy is read only now, so a large index is not held twice */
	if (read_kept(cache_dir, url, suffix, cap, out) == 0 && sha256_hex(out->data, out->size, now) == 0 &&
	    !strcmp(now, sha)) {
		ca_log_debug("%s: not modified: the copy in cache %s", fetch_url, cache_dir);
		*ret_unchanged = true;
		return 0;
	}
	ca_buf_release(out);
	*out = (struct ca_buf)CA_BUF_INIT;
	return ca_remote_fetch(at, cap, NULL, out, &not_modified, validator);
}

int ca_index_cache_check_signature(const struct ca_index_origin *o, const char *name, const char *beside,
                                   const char *kept_suffix, const void *data, size_t size,
                                   struct ca_trust_claim *ret_claim)
{
	struct ca_buf sig = CA_BUF_INIT;
	struct ca_endpoint at = { 0 };
	char *sig_name = ca_trust_signature_name(name), *kept = NULL, *rel = NULL;
	const char *cache_dir = o->cache_dir, *url = o->source;
	bool remote = o->loc.kind == CA_LOCATION_HTTP, offline = o->offline, not_modified;
	char validator[CA_HTTP_VALIDATOR_MAX];
	int r = -ENOMEM;
	if (!sig_name || asprintf(&kept, "%s.minisig", kept_suffix) < 0 || asprintf(&rel, "%s.minisig", beside) < 0) {
		kept = rel = NULL;
		goto out;
	}
	if (!remote) {
		r = ca_buf_read_file(&sig, ca_location_path(sig_name), 0, CA_MINISIGN_SIG_FILE_MAX);
	} else if (offline) {
		r = read_kept(cache_dir, url, kept, CA_MINISIGN_SIG_FILE_MAX, &sig);
	} else {
		r = ca_endpoint_beside(&at, o->ep, rel);
		if (r == 0)
			r = ca_remote_fetch(&at, CA_MINISIGN_SIG_FILE_MAX, NULL, &sig, &not_modified, validator);
	}
	if (r == -ENOENT) {
		ca_log_error("%s: refused: not signed (no %s)", name, sig_name);
		r = -EKEYREJECTED;
	} else if (r == -EFBIG || r == -EINVAL || r == -EISDIR) {
		ca_log_error("%s: refused: its signature is not a minisign signature", name);
		r = -EKEYREJECTED;
	} else if (r < 0) {
		ca_log_error_errno(r, "%s", sig_name);
	}
	if (r == 0)
		r = ca_trust_check(name, data, size, sig.data, sig.size, o->trust->keys, o->trust->n_keys, ret_claim);
	if (r == 0 && !offline && cache_dir && remote)
		keep(cache_dir, url, kept, sig.data, sig.size, NULL);
out:
	if (r == -ENOMEM)
		ca_log_error_errno(r, "%s", name);
	ca_endpoint_clear(&at);
	ca_buf_release(&sig);
	free(sig_name);
	free(kept);
	free(rel);
	return r;
}

/* ---- the rollback record ---- */

/* Where source's record is known by: a URL as it is shown (no userinfo,
 * no query: a pre-signed URL's rotating query is the same index), a
 * path made absolute through its directory (not the file: a link to the
 * newest image is one index whatever it points to). malloc'd. */
static char *record_key(const struct ca_location *source)
{
	char *dir = NULL, *real = NULL, *r = NULL;
	if (source->kind == CA_LOCATION_HTTP) {
		r = ca_location_redact(source->s);
		if (r)
			r[strcspn(r, "?#")] = 0;
		return r;
	}
	const char *p = source->path, *slash = strrchr(p, '/');
	dir = slash ? strndup(p, slash == p ? 1 : (size_t)(slash - p)) : strdup(".");
	if (dir)
		real = realpath(dir, NULL);
	if (real && asprintf(&r, "%s%s%s", real, strcmp(real, "/") ? "/" : "", slash ? slash + 1 : p) < 0)
		r = NULL;
	else if (!real)
		r = strdup(p);
	free(real);
	free(dir);
	return r;
}

static void format_time(uint64_t t, char out[64])
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (t > (uint64_t)INT64_MAX || !gmtime_r(&tt, &tm) || !strftime(out, 64, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(out, 64, "a time out of range");
}

int ca_index_cache_check_rollback(const char *cache_dir, const struct ca_location *loc,
                                  const struct ca_trust_claim *claim, bool allow_downgrade)
{
	const char *source = loc->s;
	struct ca_buf b = CA_BUF_INIT;
	char hex[2 * CA_CHUNK_ID_SIZE + 1], *key = record_key(loc), *dir = NULL, *path = NULL, *line = NULL;
	char was[64], now[64];
	uint64_t old = 0;
	bool have = false;
	int dfd = -1, r = key ? 0 : -ENOMEM;
	if (r == 0)
		r = sha256_hex(key, strlen(key), hex);
	if (r == 0 && (asprintf(&dir, "%s/" RECORD_SUBDIR, cache_dir) < 0 ||
	               asprintf(&path, "%s/%s", dir, hex) < 0))
		r = -ENOMEM;
	if (r < 0) {
		ca_log_error_errno(r, "%s", source);
		goto out;
	}
	r = private_subdir(cache_dir, RECORD_SUBDIR, true); /* logs */
	if (r < 0)
		goto out;
	/* one check-and-update at a time, so two processes cannot lower it */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || flock(dfd, LOCK_EX) < 0) {
		r = ca_log_error_errno(errno, "cache %s", dir);
		goto out;
	}
	r = ca_buf_read_file(&b, path, O_NOFOLLOW, 4096);
	if (r == 0) {
		char *end;
		errno = 0;
		old = strtoull(b.size ? (const char *)b.data : "x", &end, 10);
		have = !errno && end != (const char *)b.data && (*end == '\t' || *end == '\n');
		/* a damaged record: the newest is not known, so nothing is older */
		if (!have)
			ca_log_warning("cache %s: a damaged record: replaced", path);
	} else if (r != -ENOENT) {
		ca_log_error_errno(r, "cache %s", path);
		goto out;
	}
	r = 0;
	if (have && (!claim->has_timestamp || claim->timestamp < old) && !allow_downgrade) {
		format_time(old, was);
		if (claim->has_timestamp) {
			format_time(claim->timestamp, now);
			ca_log_error("%s: refused: signed at timestamp %llu (%s), older than the index accepted from it "
			             "before, signed at timestamp %llu (%s): a rollback? (--allow-downgrade accepts it)",
			             source, (unsigned long long)claim->timestamp, now, (unsigned long long)old, was);
		} else {
			ca_log_error("%s: refused: its signature names no time, and an index signed at timestamp %llu (%s) "
			             "was accepted from it before: a rollback? (--allow-downgrade accepts it)",
			             source, (unsigned long long)old, was);
		}
		r = -EKEYREJECTED;
		goto out;
	}
	if (have && claim->has_timestamp && claim->timestamp == old)
		goto out;
	if (have && claim->has_timestamp && claim->timestamp < old)
		ca_log_warning("%s: accepted a downgrade (--allow-downgrade): signed at timestamp %llu, before %llu",
		               source, (unsigned long long)claim->timestamp, (unsigned long long)old);
	if (!claim->has_timestamp) {
		/* nothing to record; a downgrade to it forgets the newer time */
		if (have && unlinkat(dfd, hex, 0) < 0 && errno != ENOENT)
			r = ca_log_error_errno(errno, "cache %s", path);
		goto out;
	}
	if (asprintf(&line, "%llu\t%s\n", (unsigned long long)claim->timestamp, key) < 0) {
		line = NULL;
		r = ca_log_error_errno(ENOMEM, "%s", source);
		goto out;
	}
	r = ca_atomic_file_write(path, 0600, line, strlen(line));
	if (r < 0)
		ca_log_error_errno(r, "cache %s", path);
out:
	if (dfd >= 0)
		close(dfd); /* drops the lock */
	ca_buf_release(&b);
	free(line);
	free(path);
	free(dir);
	free(key);
	return r;
}

int ca_index_cache_accept_signed(const struct ca_index_origin *o, const void *data, size_t size)
{
	struct ca_trust_claim claim;
	const struct ca_trust_policy *trust = o->trust;
	const char *source = o->source;
	int r = ca_index_cache_check_signature(o, source, "", index_suffix(o), data, size, &claim);
	if (r == 0)
		r = ca_trust_check_name(source, &claim, trust->signed_name);
	if (r == 0 && trust->record_dir)
		r = ca_index_cache_check_rollback(trust->record_dir, &o->loc, &claim, trust->allow_downgrade);
	if (r == 0)
		ca_trust_warn_unbound(source, &claim);
	return r;
}

int ca_index_cache_open(const struct ca_index_origin *o, struct ca_index **ret)
{
	struct ca_buf b = CA_BUF_INIT;
	char validator[CA_HTTP_VALIDATOR_MAX];
	const char *source = o->source, *cache_dir = o->cache_dir;
	bool unchanged = false;
	int r;
	if (!o->offline && !o->ep)
		return ca_log_error_errno(EINVAL, "%s: not a URL", source);
	if (o->offline) {
		r = read_kept(cache_dir, source, index_suffix(o), INDEX_MAX, &b);
		if (r == -ENOENT)
			return ca_log_error_errno(ENOMEDIUM, "%s: offline, and the cache %s has no copy of the index "
			                          "(run cafs cache fill first)", source, cache_dir);
		if (r < 0)
			return ca_log_error_errno(r, "%s: the cached copy of the index", source);
	} else {
		r = fetch_kept(cache_dir, source, index_suffix(o), o->ep, INDEX_MAX, &b, validator, &unchanged);
		if (r == -ENOENT)
			return ca_log_error("%s: not found on the server", source), r;
		if (r < 0 && o->ep->loc.oci && ca_oci_said(r))
			return r; /* oci.h said why */
		if (r < 0)
			return ca_log_error_errno(r, "%s", source);
	}
	/* the copy kept is one that verified, and is checked again when used */
	if (o->trust && o->trust->n_keys) {
		r = ca_index_cache_accept_signed(o, b.data, b.size);
		if (r < 0) {
			ca_buf_release(&b);
			return r;
		}
	}
	if (!o->offline && !unchanged)
		keep(cache_dir, source, index_suffix(o), b.data, b.size, validator);
	r = ca_index_adopt(b.data, b.size, ret); /* takes b.data */
	if (r == -EBADMSG)
		return ca_log_error_errno(r, "%s: not a valid casync index", source);
	if (r < 0)
		return ca_log_error_errno(r, "%s", source);
	return 0;
}

/* The sidecar's bytes: the local file beside the index, the URL (its copy
 * kept in the cache), or offline the cached copy. -ENOENT: there is none
 * (not an error). This is the one function that brings a sidecar's bytes
 * in: a signature check of X.cameta.minisig belongs right after it. */
static int sidecar_bytes(const struct ca_index_origin *o, struct ca_buf *ret, char **ret_name)
{
	struct ca_endpoint at;
	char validator[CA_HTTP_VALIDATOR_MAX];
	const char *source = o->source, *cache_dir = o->cache_dir;
	bool unchanged;
	int r;
	*ret_name = ca_sidecar_name_for(source);
	if (!*ret_name)
		return -ENOMEM;
	if (o->loc.kind != CA_LOCATION_HTTP) {
		const char *path = ca_location_path(*ret_name);
		r = ca_buf_read_file(ret, path, O_NOFOLLOW, CA_SIDECAR_FILE_MAX);
		if (r < 0 && r != -ENOENT)
			ca_log_warning_errno(r, "%s: ignoring the metadata sidecar", path);
		return r;
	}
	if (o->offline) {
		return read_kept(cache_dir, source, ".caidx" CA_SIDECAR_SUFFIX, CA_SIDECAR_FILE_MAX, ret);
	}
	r = ca_endpoint_beside(&at, o->ep, CA_SIDECAR_SUFFIX);
	if (r < 0)
		return r;
	r = fetch_kept(cache_dir, source, ".caidx" CA_SIDECAR_SUFFIX, &at, CA_SIDECAR_FILE_MAX, ret, validator,
	               &unchanged);
	ca_endpoint_clear(&at);
	if (r == -ENOENT) {
		if (cache_dir) /* the server has none now: neither do we */
			forget(cache_dir, source, ".caidx" CA_SIDECAR_SUFFIX);
		return r;
	}
	/* the command's progress deadline ran out (http.h): nothing else will
	 * come from this server either, so the command ends here, in one line */
	if (r == -ETIMEDOUT)
		return ca_log_error_errno(r, "%s", *ret_name);
	if (r < 0) {
		ca_log_warning_errno(r, "%s: ignoring the metadata sidecar", *ret_name);
		return -ENOENT;
	}
	if (cache_dir && !unchanged)
		keep(cache_dir, source, ".caidx" CA_SIDECAR_SUFFIX, ret->data, ret->size, validator);
	return 0;
}

/* The checks a sidecar's bytes pass once they are in (fetched or kept):
 * the index's digest, the archive's size and feature flags. Warns and
 * returns -ENOENT when it cannot be used; -ENOMEM. */
static int sidecar_check(const char *name, const struct ca_index *idx, const void *data, size_t size,
                         struct ca_sidecar **ret)
{
	uint8_t digest[CA_CHUNK_ID_SIZE];
	size_t isize;
	const void *ibytes = ca_index_data(idx, &isize);
	int r = ca_sidecar_index_digest(ibytes, isize, digest);
	if (r == 0)
		r = ca_sidecar_parse(data, size, digest, ca_index_blob_size(idx), ret);
	if (r == 0 && ca_sidecar_feature_flags(*ret) != ca_index_feature_flags(idx)) {
		ca_sidecar_free(*ret);
		*ret = NULL;
		r = -ESTALE;
	}
	if (r == -ESTALE)
		ca_log_warning("%s: belongs to another index: ignored (walking the archive instead)", name);
	else if (r == -EBADMSG)
		ca_log_warning("%s: not a valid metadata sidecar: ignored (walking the archive instead)", name);
	return r == 0 || r == -ENOMEM ? r : -ENOENT;
}

int ca_index_cache_sidecar(const struct ca_index_origin *o, const struct ca_index *idx, struct ca_sidecar **ret,
                           struct ca_buf *ret_bytes)
{
	struct ca_buf b = CA_BUF_INIT;
	const char *source = o->source;
	char *name = NULL;
	*ret = NULL;
	int r = sidecar_bytes(o, &b, &name);
	/* trusted like the index: a sidecar that does not verify is not used
	 * (the archive, covered by the index's signature, is walked instead) */
	if (r == 0 && o->trust && o->trust->n_keys &&
	    ca_index_cache_check_signature(o, name, CA_SIDECAR_SUFFIX, ".caidx" CA_SIDECAR_SUFFIX, b.data, b.size,
	                                   NULL) < 0) {
		ca_log_warning("%s: not used (walking the archive instead)", name);
		r = -ENOENT;
	}
	if (r == 0)
		r = sidecar_check(name, idx, b.data, b.size, ret);
	if (r == 0 && ret_bytes) {
		*ret_bytes = b;
		b = (struct ca_buf)CA_BUF_INIT;
	}
	ca_buf_release(&b);
	free(name);
	if (r == -ETIMEDOUT)
		return r; /* said */
	return r == -ENOMEM ? ca_log_error_errno(r, "%s", source) : 0;
}

int ca_index_cache_sidecar_kept(const char *source, const struct ca_index *idx, const void *data, size_t size,
                                struct ca_sidecar **ret)
{
	char *name = ca_sidecar_name_for(source);
	*ret = NULL;
	int r = name ? sidecar_check(name, idx, data, size, ret) : -ENOMEM;
	free(name);
	return r == -ENOMEM ? ca_log_error_errno(r, "%s", source) : 0;
}

/* ---- prefetch profiles (profile.h) ---- */

/* The profile's bytes, as sidecar_bytes finds a sidecar's: beside a local
 * index, the URL (kept in the cache), or offline the kept copy. -ENOENT:
 * none (not an error); other errors said once. */
static int profile_bytes(const struct ca_index_origin *o, const char *name, const char *suffix, struct ca_buf *ret)
{
	struct ca_endpoint at;
	char validator[CA_HTTP_VALIDATOR_MAX];
	const char *source = o->source, *cache_dir = o->cache_dir;
	bool unchanged;
	int r;
	if (o->loc.kind != CA_LOCATION_HTTP) {
		r = ca_buf_read_file(ret, ca_location_path(name), O_NOFOLLOW, CA_PROFILE_FILE_MAX);
		if (r < 0 && r != -ENOENT)
			ca_log_warning_errno(r, "%s: ignoring the prefetch profile", ca_location_path(name));
		return r < 0 ? -ENOENT : 0;
	}
	if (o->offline)
		return read_kept(cache_dir, source, suffix, CA_PROFILE_FILE_MAX, ret) < 0 ? -ENOENT : 0;
	r = ca_endpoint_beside(&at, o->ep, CA_PROFILE_SUFFIX);
	if (r < 0)
		return r;
	r = fetch_kept(cache_dir, source, suffix, &at, CA_PROFILE_FILE_MAX, ret, validator, &unchanged);
	ca_endpoint_clear(&at);
	if (r == -ENOENT) {
		if (cache_dir)
			forget(cache_dir, source, suffix);
		return r;
	}
	if (r < 0) {
		ca_log_warning_errno(r, "%s: ignoring the prefetch profile", name);
		return -ENOENT;
	}
	if (cache_dir && !unchanged)
		keep(cache_dir, source, suffix, ret->data, ret->size, validator);
	return 0;
}

/* The checks a profile's bytes pass once they are in (fetched or kept):
 * it parses, and with trusted keys it names this index. Warns and returns
 * -ENOENT when it cannot be used; -ENOMEM. */
static int profile_check(const char *name, const struct ca_index *idx, const void *data, size_t size, bool keys,
                         struct ca_profile **ret)
{
	uint8_t digest[CA_CHUNK_ID_SIZE];
	size_t isize;
	const void *ibytes = ca_index_data(idx, &isize);
	int r = ca_profile_parse(data, size, ret);
	if (r == 0 && keys) {
		const uint8_t *want = ca_profile_index_digest(*ret);
		r = ca_sidecar_index_digest(ibytes, isize, digest);
		if (r == 0 && (!want || memcmp(want, digest, CA_CHUNK_ID_SIZE))) {
			ca_profile_free(*ret);
			*ret = NULL;
			r = -ESTALE;
		}
	}
	if (r == -ESTALE)
		ca_log_warning("%s: belongs to another index: prefetch profile ignored", name);
	else if (r == -EBADMSG)
		ca_log_warning("%s: not a valid prefetch profile: ignored", name);
	return r == 0 || r == -ENOMEM ? r : -ENOENT;
}

int ca_index_cache_profile(const struct ca_index_origin *o, const struct ca_index *idx, struct ca_profile **ret,
                           struct ca_buf *ret_bytes)
{
	struct ca_buf b = CA_BUF_INIT;
	const char *source = o->source;
	size_t n_keys = o->trust ? o->trust->n_keys : 0;
	char suffix[32];
	char *name = ca_profile_name_for(source);
	*ret = NULL;
	snprintf(suffix, sizeof(suffix), "%s" CA_PROFILE_SUFFIX, index_suffix(o));
	int r = name ? profile_bytes(o, name, suffix, &b) : -ENOMEM;
	/* trusted like the sidecar: signed like the index, and naming it */
	if (r == 0 && n_keys &&
	    ca_index_cache_check_signature(o, name, CA_PROFILE_SUFFIX, suffix, b.data, b.size, NULL) < 0) {
		ca_log_warning("%s: prefetch profile not used", name);
		r = -ENOENT;
	}
	if (r == 0)
		r = profile_check(name, idx, b.data, b.size, n_keys > 0, ret);
	if (r == 0 && ret_bytes) {
		*ret_bytes = b;
		b = (struct ca_buf)CA_BUF_INIT;
	}
	ca_buf_release(&b);
	free(name);
	return r == -ENOMEM ? ca_log_error_errno(r, "%s", source) : 0;
}

int ca_index_cache_profile_kept(const char *source, const struct ca_index *idx, const void *data, size_t size,
                                bool keys, struct ca_profile **ret)
{
	char *name = ca_profile_name_for(source);
	*ret = NULL;
	int r = name ? profile_check(name, idx, data, size, keys, ret) : -ENOMEM;
	free(name);
	return r == -ENOMEM ? ca_log_error_errno(r, "%s", source) : 0;
}
