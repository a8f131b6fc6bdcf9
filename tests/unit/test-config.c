/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-config.c - the store settings file parser (core/net/storeconf.c):
 * every key, longest-prefix selection, userinfo never matching another
 * host, a later file replacing a section, hostile input (NUL bytes,
 * control characters, header injection, huge numbers, junk) refused with
 * file:line and never echoing a value, and the file checks (owner, mode);
 * an endpoint (core/net/endpoint.c) resolving a URL once against it, and
 * the files beside an index taking the index's section and bucket; the
 * encryption keys and local-path sections (encrypted stores, crypt.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "net/endpoint.h"
#include "net/storeconf.h"
#include "store/crypt.h"
#include "tap.h"

/* every message of the test's logger, one per line */
static char logged[16384];
static size_t logged_len;

static void on_log(void *userdata, enum ca_log_level level, const char *line)
{
	(void)userdata;
	(void)level;
	int n = snprintf(logged + logged_len, sizeof(logged) - logged_len, "%s\n", line);
	if (n > 0 && (size_t)n < sizeof(logged) - logged_len)
		logged_len += (size_t)n;
}

static void log_reset(void)
{
	logged_len = 0;
	logged[0] = 0;
}

/* Parse text into a fresh set: the result, and the set (freed by caller). */
static int parse(const char *text, size_t len, struct ca_storeconf **ret)
{
	int r = ca_storeconf_new(ret);
	if (r == 0)
		r = ca_storeconf_parse(*ret, "t.conf", text, len);
	return r;
}

/* text is refused with exactly one message that contains want, and holds
 * no "SECRET" (what every hostile value below contains). */
static void refused(const char *text, size_t len, const char *want)
{
	struct ca_storeconf *c = NULL;
	log_reset();
	int r = parse(text, len, &c);
	check_int(r, ==, -EINVAL);
	check(strstr(logged, want) != NULL);
	if (!strstr(logged, want))
		printf("# got: %s# want: %s\n", logged, want);
	check(strchr(logged, '\n') == logged + logged_len - 1); /* one line */
	check(strstr(logged, "SECRET") == NULL);
	ca_storeconf_free(c);
}

#define REFUSED(text, want) refused(text, sizeof(text) - 1, want)

static void test_keys(void)
{
	static const char text[] = "# settings\n"
	                           "  ; another comment\n"
	                           "\n"
	                           "[HTTPS://Cdn.Example.COM/images/]\r\n"
	                           "header = Authorization: Bearer tok1\n"
	                           "header=X-Other:  two words \n"
	                           "user = alice\n"
	                           "password = p=ss word\n"
	                           "netrc = /etc/cafs/netrc\n"
	                           "client-cert = /c.pem\n"
	                           "client-key = /k.pem\n"
	                           "client-key-password = kp\n"
	                           "ca-file = /ca.pem\n"
	                           "connect-timeout = 7\n"
	                           "low-speed-limit = 100\n"
	                           "low-speed-time = 9\n"
	                           "deadline = 300\n"
	                           "retries = 0\n"
	                           "connections = 2\n"
	                           "store-query = yes\n"
	                           "aws-access-key-id = AKID\n"
	                           "aws-secret-access-key = sk\n"
	                           "aws-session-token = st\n"
	                           "aws-region = eu-west-1\n"
	                           "[https://cdn.example.com]\n"
	                           "netrc = no\n";
	struct ca_storeconf *c;
	check_int(parse(text, sizeof(text) - 1, &c), ==, 0);
	const struct ca_store_settings *s = ca_storeconf_lookup(c, "https://cdn.example.com/images/a.caibx");
	check(s != NULL);
	if (!s) {
		ca_storeconf_free(c);
		return;
	}
	check_str(s->prefix, "https://cdn.example.com/images/");
	check_int(s->n_headers, ==, 2);
	check_str(s->headers[0], "Authorization: Bearer tok1");
	check_str(s->headers[1], "X-Other:  two words");
	check_str(s->user, "alice");
	check_str(s->password, "p=ss word");
	check_int(s->netrc, ==, CA_SET_YES);
	check_str(s->netrc_file, "/etc/cafs/netrc");
	check_str(s->client_cert, "/c.pem");
	check_str(s->client_key, "/k.pem");
	check_str(s->client_key_password, "kp");
	check_str(s->ca_file, "/ca.pem");
	check_int(s->connect_timeout_s, ==, 7);
	check_int(s->low_speed_limit, ==, 100);
	check_int(s->low_speed_time_s, ==, 9);
	check_int(s->deadline_s, ==, 300);
	check_int(s->retries, ==, 0);
	check_int(s->connections, ==, 2);
	check_int(s->store_query, ==, CA_SET_YES);
	check_str(s->aws_access_key_id, "AKID");
	check_str(s->aws_secret_access_key, "sk");
	check_str(s->aws_session_token, "st");
	check_str(s->aws_region, "eu-west-1");

	/* applied to the engine's options */
	struct ca_http_opts o;
	ca_http_opts_init(&o);
	ca_storeconf_apply(s, &o);
	check_int(o.n_headers, ==, 2);
	check_str(o.username, "alice");
	check_str(o.password, "p=ss word");
	check_str(o.netrc_file, "/etc/cafs/netrc");
	check_str(o.ssl_key_password, "kp");
	check_str(o.ca_file, "/ca.pem");
	check_int(o.connect_timeout_ms, ==, 7000);
	check_int(o.stall_timeout_s, ==, 9);
	check_int(o.total_timeout_s, ==, 300);
	check_int(o.retries, ==, 0);
	check_int(o.max_connections, ==, 2);

	/* the shorter prefix (a bare host: "/" added) for the rest of the host */
	s = ca_storeconf_lookup(c, "https://cdn.example.com/other/x.caibx");
	check(s && !strcmp(s->prefix, "https://cdn.example.com/") && s->netrc == CA_SET_NO && !s->n_headers);
	ca_http_opts_init(&o);
	if (s)
		ca_storeconf_apply(s, &o);
	check_int(o.netrc, <, 0);
	check_int(o.retries, ==, 3); /* not set: untouched */
	check(ca_storeconf_lookup(c, "https://cdn.example.com") != NULL);
	check(ca_storeconf_lookup(c, "https://cdn.example.com?x=1") != NULL);
	check(ca_storeconf_lookup(c, "HTTPS://CDN.example.com/images/b") &&
	      ca_storeconf_lookup(c, "HTTPS://CDN.example.com/images/b")->n_headers == 2);
	/* the path compares byte for byte */
	check(ca_storeconf_lookup(c, "https://cdn.example.com/IMAGES/b")->n_headers == 0);
	ca_storeconf_free(c);
}

/* A URL never gets another host's settings. */
static void test_hosts(void)
{
	static const char text[] = "[https://good.example/]\nheader = A: 1\n"
	                           "[http://127.0.0.1:8080/a/]\nheader = B: 2\n";
	struct ca_storeconf *c;
	check_int(parse(text, sizeof(text) - 1, &c), ==, 0);
	check(ca_storeconf_lookup(c, "https://good.example/x") != NULL);
	check(ca_storeconf_lookup(c, "https://good.example.evil/x") == NULL);
	check(ca_storeconf_lookup(c, "https://good.example@evil.example/x") == NULL);
	check(ca_storeconf_lookup(c, "https://good.example:443@evil.example/x") == NULL);
	check(ca_storeconf_lookup(c, "https://u:p@good.example/x") != NULL); /* userinfo is not the host */
	check(ca_storeconf_lookup(c, "http://good.example/x") == NULL);     /* nor is another scheme */
	check(ca_storeconf_lookup(c, "https://good.example:444/x") == NULL);
	check(ca_storeconf_lookup(c, "http://127.0.0.1:8080/a/i.caibx") != NULL);
	check(ca_storeconf_lookup(c, "http://127.0.0.1:8080/ab/i.caibx") == NULL);
	check(ca_storeconf_lookup(c, "http://127.0.0.1:808/a/i.caibx") == NULL);
	check(ca_storeconf_lookup(c, "/local/path") == NULL);
	check(ca_storeconf_lookup(c, "") == NULL);
	check(ca_storeconf_lookup(NULL, "https://good.example/x") == NULL);
	ca_storeconf_free(c);
}

/* A later file's section replaces the earlier one's whole; others stay. */
static void test_override(void)
{
	static const char a[] = "[https://h/]\nheader = A: 1\nuser = u\n[https://k/]\nretries = 1\n";
	static const char b[] = "[https://h/]\nretries = 5\n";
	struct ca_storeconf *c;
	check_int(parse(a, sizeof(a) - 1, &c), ==, 0);
	check_int(ca_storeconf_parse(c, "b.conf", b, sizeof(b) - 1), ==, 0);
	const struct ca_store_settings *s = ca_storeconf_lookup(c, "https://h/x");
	check(s && s->retries == 5 && !s->user && !s->n_headers);
	s = ca_storeconf_lookup(c, "https://k/x");
	check(s && s->retries == 1);
	/* a failed parse leaves the set as it was */
	static const char bad[] = "[https://h/]\nretries = 6\nbogus = 1\n";
	log_reset();
	check_int(ca_storeconf_parse(c, "c.conf", bad, sizeof(bad) - 1), ==, -EINVAL);
	s = ca_storeconf_lookup(c, "https://h/x");
	check(s && s->retries == 5);
	ca_storeconf_free(c);
}

static void test_hostile(void)
{
	REFUSED("retries = 1\n", "t.conf:1: a setting before any [URL] section");
	REFUSED("[https://h/]\nretrys = 1\n", "t.conf:2: unknown key 'retrys'");
	/* something that is not a key name is not repeated: it may be a secret */
	REFUSED("[https://h/]\nAuthorization: Bearer SECRET = x\n", "t.conf:2: malformed line");
	REFUSED("[https://h/]\nBearer SECRET\n", "t.conf:2: malformed line");
	REFUSED("[https://h/]\n= SECRET\n", "t.conf:2: malformed line");
	REFUSED("[https://h/]\npassword =\n", "t.conf:2: password: no value");
	REFUSED("[https://h/]\npassword = a\npassword = SECRET\n", "t.conf:3: password: given twice");
	REFUSED("[https://h/]\nretries = 1\nretries = 2\n", "t.conf:3: retries: given twice");
	REFUSED("[https://h/]\nretries = 21\n", "t.conf:2: retries: expected a number from 0 to 20");
	REFUSED("[https://h/]\nretries = -1\n", "t.conf:2: retries: expected a number");
	REFUSED("[https://h/]\nconnections = 0\n", "t.conf:2: connections: expected a number from 1 to 256");
	REFUSED("[https://h/]\ndeadline = 99999999999999999999999\n", "t.conf:2: deadline: expected a number");
	REFUSED("[https://h/]\nconnect-timeout = 5s\n", "t.conf:2: connect-timeout: expected a number");
	REFUSED("[https://h/]\nstore-query = maybe\n", "t.conf:2: store-query: expected yes or no");
	REFUSED("[https://h/]\nnetrc = relative\n", "t.conf:2: netrc: expected yes, no or an absolute");
	/* a header cannot smuggle a second one, nor be anything but Name: value */
	REFUSED("[https://h/]\nheader = A: SECRET\rX-Evil: 1\n", "t.conf:2: header: the value holds a control");
	REFUSED("[https://h/]\nheader = SECRET\n", "t.conf:2: header: expected 'Name: value'");
	REFUSED("[https://h/]\nheader = Bad Name: SECRET\n", "t.conf:2: header: expected 'Name: value'");
	REFUSED("[https://h/]\nheader = X-Empty:\n", "t.conf:2: header: expected 'Name: value'");
	REFUSED("[https://h/]\nheader = : SECRET\n", "t.conf:2: header: expected 'Name: value'");
	/* a name that runs to the end of the line (found by fuzz-storeconf) */
	REFUSED("[https://h/]\nheader = X-SECRET", "t.conf:2: header: expected 'Name: value'");
	REFUSED("[https://h/]\nheader = X-SECRET\n", "t.conf:2: header: expected 'Name: value'");
	REFUSED("[https://h/]\npassword = SECRET\x1b[2J\n", "t.conf:2: password: the value holds a control");
	REFUSED("[https://h/]\npassword = SECRET\x7f\n", "t.conf:2: password: the value holds a control");
	REFUSED("[https://h/]\npassword = SECRET\0more\n", "t.conf: holds a NUL byte");
	/* sections */
	REFUSED("[https://h/\nretries = 1\n", "t.conf:1: malformed section header");
	REFUSED("[]\n", "t.conf:1: malformed section header");
	REFUSED("[h/x]\n", "t.conf:1: expected [scheme://host/prefix]");
	REFUSED("[https:///x]\n", "t.conf:1: a section's URL names no host");
	REFUSED("[https://h /x]\n", "t.conf:1: expected [scheme://host/prefix]");
	REFUSED("[https://u:SECRET@h/]\n", "t.conf:1: a section's URL may not hold user:password");
	REFUSED("[https://h/]\n[https://H]\n", "t.conf:2: this section is given twice");
	REFUSED("[https://h/]\nretries = 1\n\n\n[", "t.conf:5: malformed section header");

	/* long lines, many sections, binary junk: an answer, never a crash */
	size_t n = 300000;
	char *big = malloc(n + 64);
	struct ca_storeconf *c = NULL;
	strcpy(big, "[https://h/]\nuser = ");
	size_t k = strlen(big);
	memset(big + k, 'a', n - k);
	big[n] = '\n';
	log_reset();
	check_int(parse(big, n + 1, &c), ==, 0);
	check(c && ca_storeconf_lookup(c, "https://h/") && strlen(ca_storeconf_lookup(c, "https://h/")->user) == n - k);
	ca_storeconf_free(c);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(1 + (i * 7919u) % 255);
	c = NULL;
	log_reset();
	check_int(parse(big, n, &c), ==, -EINVAL);
	ca_storeconf_free(c);
	k = 0;
	for (unsigned i = 0; i < 2000; i++)
		k += (size_t)snprintf(big + k, n + 64 - k, "[https://h%u/]\nretries=%u\n", i, i % 20);
	c = NULL;
	check_int(parse(big, k, &c), ==, 0);
	check(c && ca_storeconf_lookup(c, "https://h1999/x") && ca_storeconf_lookup(c, "https://h1999/x")->retries == 19);
	ca_storeconf_free(c);
	free(big);
}

/* The file checks: owner and mode, and the warning for readable secrets. */
static void test_files(void)
{
	char dir[] = "/tmp/test-config.XXXXXX";
	char path[64];
	struct ca_storeconf *c = NULL;
	check(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cafs.conf", dir);
	FILE *f = fopen(path, "w");
	fputs("[https://h/]\nheader = Authorization: Bearer SECRET\n", f);
	fclose(f);

	chmod(path, 0600);
	ca_storeconf_new(&c);
	log_reset();
	check_int(ca_storeconf_load_file(c, path, 0), ==, 0);
	check_int(logged_len, ==, 0);
	check(ca_storeconf_lookup(c, "https://h/x") != NULL);

	chmod(path, 0644);
	log_reset();
	check_int(ca_storeconf_load_file(c, path, 0), ==, 0);
	check(strstr(logged, "holds secrets and others may read it") != NULL);
	log_reset();
	check_int(ca_storeconf_load_file(c, path, CA_STORECONF_QUIET), ==, 0);
	check_int(logged_len, ==, 0);

	chmod(path, 0620);
	log_reset();
	check_int(ca_storeconf_load_file(c, path, 0), ==, -EPERM);
	check(strstr(logged, "refused: writable by group or others") != NULL);
	chmod(path, 0602);
	check_int(ca_storeconf_load_file(c, path, 0), ==, -EPERM);
	chmod(path, 0600);
	if (geteuid() == 0) { /* another owner: only root can make one */
		check_int(chown(path, 65534, 65534), ==, 0);
		log_reset();
		check_int(ca_storeconf_load_file(c, path, 0), ==, -EPERM);
		check(strstr(logged, "refused: owned by another user") != NULL);
	}
	check(strstr(logged, "SECRET") == NULL);
	log_reset();
	check_int(ca_storeconf_load_file(c, dir, 0), ==, -EINVAL); /* a directory */
	char missing[80];
	snprintf(missing, sizeof(missing), "%s/none.conf", dir);
	check_int(ca_storeconf_load_file(c, missing, 0), ==, -ENOENT);

	/* CAFS_CONFIG names the one file; empty: none */
	chmod(path, 0600);
	check_int(chown(path, geteuid(), getegid()), ==, 0);
	struct ca_storeconf *d = NULL;
	setenv("CAFS_CONFIG", path, 1);
	check_int(ca_storeconf_load(0, &d), ==, 0);
	check(d && ca_storeconf_lookup(d, "https://h/") != NULL);
	ca_storeconf_free(d);
	setenv("CAFS_CONFIG", "", 1);
	d = NULL;
	check_int(ca_storeconf_load(0, &d), ==, 0);
	check(d && ca_storeconf_lookup(d, "https://h/") == NULL);
	ca_storeconf_free(d);
	setenv("CAFS_CONFIG", missing, 1);
	check_int(ca_storeconf_load(0, &d), ==, -ENOENT);
	unsetenv("CAFS_CONFIG");

	ca_storeconf_free(c);
	unlink(path);
	rmdir(dir);
}

static void test_endpoint(void)
{
	static const char text[] = "[s3+http://h:9000/bkt/]\n"
	                           "aws-access-key-id = AKID\naws-secret-access-key = sk\naws-region = r9\n"
	                           "retries = 7\n"
	                           "[http://cdn.example/s/]\nstore-query = yes\nconnections = 3\n";
	struct ca_storeconf *c = NULL;
	struct ca_endpoint e, b;
	check_int(parse(text, sizeof(text) - 1, &c), ==, 0);
	/* an S3 index: its section's credentials sign, its bucket is translated once */
	check_int(ca_endpoint_init(&e, "s3+http://h:9000/bkt/pre/x.caidx?lookup=dns", NULL, c), ==, 0);
	check(e.loc.s3 && e.settings != NULL);
	check_str(e.fetch_url, "http://bkt.h:9000/pre/x.caidx");
	check_str(e.http.sigv4, "aws:amz:r9:s3");
	check_str(e.http.sigv4_key, "AKID");
	check_int(e.http.retries, ==, 7);
	/* beside it: the same section and bucket, the object's name only differs */
	check_int(ca_endpoint_beside(&b, &e, ".cameta.minisig"), ==, 0);
	check_str(b.url, "s3+http://h:9000/bkt/pre/x.caidx.cameta.minisig?lookup=dns");
	check_str(b.fetch_url, "http://bkt.h:9000/pre/x.caidx.cameta.minisig");
	check_str(b.http.sigv4_key, "AKID");
	check_int(b.http.retries, ==, 7);
	check(b.settings == e.settings);
	ca_endpoint_clear(&b);
	ca_endpoint_clear(&e);
	/* an http store: its section, its store-query, the URL fetched as given */
	check_int(ca_endpoint_init(&e, "http://cdn.example/s/default.castr?tok=1", NULL, c), ==, 0);
	check(!e.loc.s3 && e.store_query && e.http.max_connections == 3 && !e.http.sigv4);
	check_str(e.fetch_url, "http://cdn.example/s/default.castr?tok=1");
	ca_endpoint_clear(&e);
	/* no section: the caller's options as they are */
	struct ca_http_opts o;
	ca_http_opts_init(&o);
	o.retries = 1;
	check_int(ca_endpoint_init(&e, "https://other.example/x.caibx", &o, c), ==, 0);
	check(e.settings == NULL && e.http.retries == 1 && !e.store_query && e.loc.https);
	ca_endpoint_clear(&e);
	/* not a URL we fetch: refused before anything is read */
	check_int(ca_endpoint_init(&e, "/srv/x.caidx", NULL, c), ==, -EINVAL);
	check_int(ca_endpoint_init(&e, "ssh://h/x.caidx", NULL, c), ==, -EINVAL);
	ca_storeconf_free(c);
}

static void test_encryption(void)
{
	static const char text[] = "[/srv/enc]\nencryption = aes-256-gcm\n"
	                           "encryption-key = 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
	                           "[file:///srv/env/]\nencryption = xchacha20-poly1305\n"
	                           "[https://h/store]\nencryption = xchacha20-poly1305\nencryption-key-file = /nonexistent/k\n";
	struct ca_storeconf *c = NULL;
	struct ca_crypt *cr = NULL;
	check_int(parse(text, sizeof(text) - 1, &c), ==, 0);
	const struct ca_store_settings *s = ca_storeconf_lookup(c, "/srv/enc");
	check(s && s->encryption == CA_CRYPT_AES_256_GCM && s->encryption_key);
	check(ca_storeconf_lookup(c, "file:///srv/enc/") == s);      /* the same store */
	check(ca_storeconf_lookup(c, "/srv/enc/x/y.caidx") == s);    /* under it */
	check(ca_storeconf_lookup(c, "/srv/env") != NULL);           /* a section ending in '/' */
	check(ca_storeconf_lookup(c, "/srv/other") == NULL);
	check_int(ca_storeconf_crypt(c, "/srv/enc", &cr), ==, 0);
	check(cr && ca_crypt_get_alg(cr) == CA_CRYPT_AES_256_GCM);
	ca_crypt_unref(cr);
	check_int(ca_storeconf_crypt(c, "/srv/other", &cr), ==, 0);
	check(cr == NULL);
	/* no key in the section: the environment's, else an error */
	unsetenv("CAFS_ENCRYPTION_KEY");
	log_reset();
	check_int(ca_storeconf_crypt(c, "/srv/env", &cr), ==, -ENOKEY);
	check(strstr(logged, "but no key") != NULL);
	setenv("CAFS_ENCRYPTION_KEY", "SECRETnothex", 1);
	log_reset();
	check_int(ca_storeconf_crypt(c, "/srv/env", &cr), ==, -EINVAL);
	check(strstr(logged, "CAFS_ENCRYPTION_KEY: expected 64 hex digits") && !strstr(logged, "SECRET"));
	setenv("CAFS_ENCRYPTION_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", 1);
	check_int(ca_storeconf_crypt(c, "/srv/env", &cr), ==, 0);
	check(cr && ca_crypt_get_alg(cr) == CA_CRYPT_XCHACHA20_POLY1305);
	ca_crypt_unref(cr);
	unsetenv("CAFS_ENCRYPTION_KEY");
	log_reset();
	check_int(ca_storeconf_crypt(c, "https://h/store", &cr), ==, -ENOENT);
	check(strstr(logged, "encryption-key-file /nonexistent/k") != NULL);
	/* indexes never go where a section encrypts */
	log_reset();
	check_int(ca_storeconf_check_index(c, "/srv/enc/img.caidx"), ==, -EPERM);
	check(strstr(logged, "indexes are never encrypted") != NULL);
	check_int(ca_storeconf_check_index(c, "/srv/img.caidx"), ==, 0);
	ca_storeconf_free(c);
	REFUSED("[https://h/]\nencryption = rot13\n", "t.conf:2: encryption: expected xchacha20-poly1305 or aes-256-gcm");
	REFUSED("[https://h/]\nencryption-key = SECRET\n", "t.conf:2: encryption-key: expected 64 hex digits");
	REFUSED("[https://h/]\nencryption-key-file = SECRET/k\n", "t.conf:2: encryption-key-file: expected an absolute");
	REFUSED("[https://h/]\nencryption-key-file = /k\n"
	        "encryption-key = 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
	        "t.conf:3: encryption-key: give encryption-key or encryption-key-file, not both");
	REFUSED("[file://h/x]\n", "t.conf:1: a local store's section is its absolute path");
}

int main(void)
{
	struct ca_logger lg = { .fn = on_log, .level = CA_LOG_DEBUG };
	ca_log_use(&lg);
	test_keys();
	test_hosts();
	test_override();
	test_hostile();
	test_files();
	test_endpoint();
	test_encryption();
	ca_log_use(NULL);
	return tap_done();
}
