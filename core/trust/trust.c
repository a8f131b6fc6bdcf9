/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trust.c - trusted minisign keys and the signature check (see trust.h). */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "base/atomic_file.h"
#include "base/fdio.h"
#include "base/location.h"
#include "base/log.h"
#include "trust/trust.h"
#include "base/trusted_file.h"

const char *ca_trust_dir(void)
{
	const char *d = getenv("CAFS_TRUSTED_KEYS_DIR");
	return d && *d ? d : CA_TRUST_DIR_DEFAULT;
}

int ca_trust_read_key(int dfd, const char *name, struct ca_minisign_key *ret, char why[CA_TRUST_WHY_MAX])
{
	struct ca_buf b = CA_BUF_INIT;
	struct stat st;
	/* O_NONBLOCK: a FIFO put there does not hang us (it is refused) */
	int r = 0, fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	why[0] = 0;
	if (fd < 0)
		r = -errno;
	else if (fstat(fd, &st) < 0)
		r = -errno;
	else
		r = ca_trusted_file_check(&st, S_IFREG, why);
	if (r == 0 && (uint64_t)st.st_size > CA_MINISIGN_KEY_FILE_MAX)
		r = -EFBIG;
	if (r == 0)
		r = ca_buf_read_fd(&b, fd, CA_MINISIGN_KEY_FILE_MAX);
	if (r == 0)
		r = ca_minisign_key_parse(b.data, b.size, ret);
	ca_buf_release(&b);
	if (fd >= 0)
		close(fd);
	if (r == -EBADMSG || r == -EFBIG) {
		snprintf(why, CA_TRUST_WHY_MAX, "not a minisign public key");
		r = -EBADMSG;
	} else if (r < 0 && !why[0]) {
		snprintf(why, CA_TRUST_WHY_MAX, "%s", strerror(-r));
	}
	return r;
}

int ca_trust_load_key(const char *path, struct ca_minisign_key *ret)
{
	char why[CA_TRUST_WHY_MAX];
	int r = ca_trust_read_key(AT_FDCWD, path, ret, why);
	return r < 0 ? (ca_log_error("%s: %s", path, why), r) : 0;
}

static bool is_pub(const char *name)
{
	size_t n = strlen(name);
	return name[0] != '.' && n > 4 && strcmp(name + n - 4, ".pub") == 0;
}

int ca_trust_load_dir(const char *dir, bool missing_ok, struct ca_minisign_key **keys, size_t *n)
{
	struct dirent *de;
	struct stat st;
	char *path = NULL, why[CA_TRUST_WHY_MAX];
	DIR *d = NULL;
	int r = 0, fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT && missing_ok ? 0 : ca_log_error_errno(errno, "trusted keys: %s", dir);
	/* whoever may add or replace a key here chooses what is trusted */
	if (fstat(fd, &st) < 0)
		r = ca_log_error_errno(errno, "trusted keys: %s", dir);
	else if ((r = ca_trusted_file_check(&st, S_IFDIR, why)) < 0)
		ca_log_error("trusted keys: %s: %s", dir, why);
	if (r == 0 && !(d = fdopendir(fd)))
		r = ca_log_error_errno(errno, "trusted keys: %s", dir);
	if (r < 0) {
		close(fd);
		return r;
	}
	while (r == 0 && (errno = 0, de = readdir(d))) {
		struct ca_minisign_key *nk;
		if (!is_pub(de->d_name))
			continue;
		free(path);
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
			path = NULL;
			r = ca_log_error_errno(ENOMEM, "trusted keys: %s", dir);
			break;
		}
		nk = realloc(*keys, (*n + 1) * sizeof(*nk));
		if (!nk) {
			r = ca_log_error_errno(ENOMEM, "trusted keys: %s", dir);
			break;
		}
		*keys = nk;
		r = ca_trust_read_key(dirfd(d), de->d_name, &nk[*n], why);
		if (r < 0)
			ca_log_error("%s: %s", path, why);
		else
			(*n)++;
	}
	if (r == 0 && errno)
		r = ca_log_error_errno(errno, "trusted keys: %s", dir);
	free(path);
	closedir(d); /* closes fd */
	return r;
}

int ca_trust_load_system(struct ca_minisign_key **keys, size_t *n)
{
	const char *dir = ca_trust_dir();
	return ca_trust_load_dir(dir, strcmp(dir, CA_TRUST_DIR_DEFAULT) == 0, keys, n);
}

char *ca_trust_signature_name(const char *source)
{
	return ca_location_beside(source, ".minisig");
}

void ca_trust_parse_claim(const char *c, struct ca_trust_claim *ret)
{
	*ret = (struct ca_trust_claim){ 0 };
	while (*c) {
		size_t n = strcspn(c, "\t");
		if (!ret->has_timestamp && n > 10 && n <= 10 + 20 && !strncmp(c, "timestamp:", 10)) {
			uint64_t t = 0;
			size_t i;
			for (i = 10; i < n && c[i] >= '0' && c[i] <= '9'; i++) {
				if (t > (UINT64_MAX - (uint64_t)(c[i] - '0')) / 10)
					break;
				t = t * 10 + (uint64_t)(c[i] - '0');
			}
			if (i == n) {
				ret->has_timestamp = true;
				ret->timestamp = t;
			}
		} else if (!ret->has_file && n >= 5 && !strncmp(c, "file:", 5)) {
			ret->has_file = true;
			if (n - 5 <= NAME_MAX) {
				memcpy(ret->file, c + 5, n - 5);
				ret->file[n - 5] = 0;
			}
		}
		c += n;
		if (*c)
			c++;
	}
}

/* The file name source asks for: its last path component (a URL's
 * before ?/#, %XX decoded), into out. "" when it has none. */
static void requested_name(const char *source, char out[NAME_MAX + 1])
{
	bool url = ca_location_kind(source) == CA_LOCATION_HTTP;
	size_t n = url ? strcspn(source, "?#") : strlen(source), k = 0;
	const char *slash = memrchr(source, '/', n);
	const char *b = slash ? slash + 1 : source;
	n -= (size_t)(b - source);
	for (size_t i = 0; i < n && k < NAME_MAX; i++) {
		unsigned v;
		char hex[3] = { 0 };
		if (url && b[i] == '%' && i + 2 < n && isxdigit((unsigned char)b[i + 1]) &&
		    isxdigit((unsigned char)b[i + 2])) {
			hex[0] = b[i + 1];
			hex[1] = b[i + 2];
			v = (unsigned)strtoul(hex, NULL, 16);
			if (v != 0 && v != '/') {
				out[k++] = (char)v;
				i += 2;
				continue;
			}
		}
		out[k++] = b[i];
	}
	out[k] = 0;
}

int ca_trust_check_name(const char *source, const struct ca_trust_claim *claim, const char *signed_name)
{
	char want[NAME_MAX + 1], *real = NULL;
	int r = 0;
	if (!claim->has_file)
		return 0;
	if (signed_name) {
		snprintf(want, sizeof(want), "%s", signed_name);
	} else {
		requested_name(source, want);
		/* a link to a signed file is that file under its published name */
		if (strcmp(claim->file, want) && ca_location_kind(source) == CA_LOCATION_PATH &&
		    (real = realpath(ca_location_path(source), NULL))) {
			const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
			if (!strcmp(claim->file, base))
				goto out;
		}
	}
	if (strcmp(claim->file, want)) {
		ca_log_error("%s: refused: its signature is for the file %s%s%s, not %s (another image signed by the "
		             "same key; --signed-name=%s if it is the one meant)",
		             source, claim->file[0] ? "'" : "", claim->file[0] ? claim->file : "with a name too long",
		             claim->file[0] ? "'" : "", want, claim->file[0] ? claim->file : "NAME");
		r = -EKEYREJECTED;
	}
out:
	free(real);
	return r;
}

void ca_trust_warn_unbound(const char *source, const struct ca_trust_claim *claim)
{
	if (claim->has_timestamp && claim->has_file)
		return;
	ca_log_warning("%s: its signature's trusted comment names no %s: %s cannot be detected (sign with cafs sign, "
	               "or minisign's default comment)",
	               source,
	               !claim->has_timestamp && !claim->has_file ? "time and no file"
	               : !claim->has_timestamp                   ? "time"
	                                                         : "file",
	               !claim->has_timestamp && !claim->has_file ? "a rollback or another image signed by the key"
	               : !claim->has_timestamp                   ? "a rollback to an older index"
	                                                         : "another image signed by the key");
}

int ca_trust_check(const char *name, const void *data, size_t len, const void *sig_text, size_t sig_len,
                   const struct ca_minisign_key *keys, size_t n, struct ca_trust_claim *ret_claim)
{
	struct ca_minisign_sig *sig = malloc(sizeof(*sig));
	char hex[17];
	int r = sig ? 0 : -ENOMEM, best = -ENOKEY;
	if (r < 0)
		return ca_log_error_errno(r, "%s", name);
	r = ca_minisign_sig_parse(sig_text, sig_len, sig);
	if (r < 0) {
		ca_log_error("%s: refused: its signature is not a minisign signature", name);
		r = -EKEYREJECTED;
		goto out;
	}
	ca_minisign_key_id_hex(sig->key_id, hex);
	/* ids may repeat across files: any key with the id may have signed */
	for (size_t i = 0; i < n; i++) {
		r = ca_minisign_verify(&keys[i], sig, data, len);
		if (r == 0 || r == -ENOMEM || r == -EIO)
			break;
		if (r != -ENOKEY && (best == -ENOKEY || r == -EBADE))
			best = r;
	}
	if (r == 0 && ret_claim)
		ca_trust_parse_claim(sig->trusted_comment, ret_claim);
	if (r == 0)
		ca_log_info("%s: signed by key %s: %s", name, hex, sig->trusted_comment);
	else if (r == -ENOMEM || r == -EIO)
		ca_log_error_errno(r, "%s: checking its signature", name);
	else if (best == -ENOKEY)
		ca_log_error("%s: refused: signed by key %s, which is not trusted", name, hex);
	else if (best == -EBADE)
		ca_log_error("%s: refused: the signature's trusted comment was altered (key %s)", name, hex);
	else
		ca_log_error("%s: refused: bad signature (key %s)", name, hex);
	if (r < 0 && r != -ENOMEM && r != -EIO)
		r = -EKEYREJECTED;
out:
	free(sig);
	return r;
}

/* ---- signing ---- */

#define SIGN_FILE_MAX ((size_t)1 << 30) /* as an index download */

int ca_trust_load_secret(const char *path, const char *password, struct ca_minisign_secret *ret)
{
	struct ca_buf b = CA_BUF_INIT;
	int r = ca_buf_read_file(&b, path, 0, CA_MINISIGN_SECRET_FILE_MAX);
	if (r == 0)
		r = ca_minisign_secret_parse(b.data, b.size, password, ret);
	if (b.data)
		OPENSSL_cleanse(b.data, b.size);
	ca_buf_release(&b);
	if (r == -ENOKEY)
		return r;
	if (r == -EBADMSG || r == -EFBIG)
		return ca_log_error("%s: not a minisign secret key", path), -EBADMSG;
	if (r == -EKEYREJECTED)
		return ca_log_error("%s: wrong password", path), r;
	if (r == -E2BIG)
		return ca_log_error("%s: its scrypt parameters ask for more than 1 GiB", path), r;
	return r < 0 ? ca_log_error_errno(r, "%s", path) : 0;
}

int ca_trust_sign_file(const char *path, const struct ca_minisign_secret *key, bool legacy, const char *name,
                       const char *trusted_comment, const char *untrusted_comment)
{
	struct ca_atomic_file f = { .fd = -1 };
	struct ca_buf b = CA_BUF_INIT;
	char *def = NULL, *text = NULL, *sig_name = ca_trust_signature_name(path);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t len = 0;
	int r = sig_name ? ca_buf_read_file(&b, path, 0, SIGN_FILE_MAX) : -ENOMEM;
	if (r < 0) {
		ca_log_error_errno(r, "%s", path);
		goto out;
	}
	/* minisign's default comment, which binds the signature to a time and
	 * a name (what cafs checks: trust.h ca_trust_claim); the caller's
	 * text goes after it */
	if (asprintf(&def, "timestamp:%llu\tfile:%s%s%s%s", (unsigned long long)time(NULL), name ? name : base,
	             legacy ? "" : "\thashed", trusted_comment ? "\t" : "", trusted_comment ? trusted_comment : "") < 0) {
		def = NULL;
		r = ca_log_error_errno(ENOMEM, "%s", path);
		goto out;
	}
	trusted_comment = def;
	r = ca_minisign_sign(key, b.data, b.size, !legacy,
	                     untrusted_comment ? untrusted_comment : "signature from minisign secret key", trusted_comment,
	                     &text, &len);
	if (r == -EINVAL) {
		ca_log_error("%s: a comment must be one line (the trusted one, and the file name: printable UTF-8)", path);
		goto out;
	}
	if (r < 0) {
		ca_log_error_errno(r, "%s: signing", path);
		goto out;
	}
	r = ca_atomic_file_open(&f, sig_name, 0644);
	if (r == 0)
		r = ca_write_all(f.fd, text, len);
	if (r == 0)
		r = ca_atomic_file_commit(&f);
	if (r < 0)
		ca_log_error_errno(r, "%s", sig_name);
out:
	ca_atomic_file_abort(&f);
	ca_buf_release(&b);
	free(def);
	free(text);
	free(sig_name);
	return r;
}
