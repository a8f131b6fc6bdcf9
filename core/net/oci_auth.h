/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * oci_auth.h - who cafs is to an OCI registry (oci.h), as registries and
 * their clients do it:
 *
 *  - anonymous: no Authorization until a 401 asks for one;
 *  - a 401 with "WWW-Authenticate: Bearer realm=R,service=S,scope=X":
 *    a token from GET R?service=S&scope=X (with the credentials as basic
 *    auth when there are some, anonymous otherwise); its "token" (or
 *    "access_token") goes out as "Authorization: Bearer ..." on the
 *    repository's requests until "expires_in" (default 60 s) runs out,
 *    cached per scope (pull, or pull and push);
 *  - a 401 with "WWW-Authenticate: Basic": the credentials as basic auth.
 *
 * Credentials, the first that has them: the settings file's section for
 * the store's URL (user, password: storeconf.h); CAFS_REGISTRY_USER and
 * CAFS_REGISTRY_PASSWORD; the auth file `podman login` / `skopeo login`
 * / `docker login` write: $REGISTRY_AUTH_FILE, then
 * $XDG_RUNTIME_DIR/containers/auth.json, then ~/.docker/config.json,
 * whose auths["HOST[:PORT]"].auth is base64("user:password"); an auth
 * file that another user owns or that group or others can write is
 * skipped with a warning (trusted_file.h: it would choose the
 * credentials sent).
 *
 * A hostile registry: a realm is an http(s) URL, never http:// when the
 * registry is https:// (credentials would travel in clear); the token
 * answer is bounded (64 KiB) and its request has the engine's deadline;
 * a token with a line break or a control character is refused.
 * Credentials and tokens are never logged nor in any message, kept in
 * memory that is wiped when freed (and when replaced).
 *
 * Thread-safe: many requests share one auth; one token request runs at
 * a time per auth (the others then find its token).
 */
#ifndef CA_OCI_AUTH_H
#define CA_OCI_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "net/http.h"

struct ca_oci_auth;

/* host is "HOST[:PORT]" as in the URL; user/password may be NULL (then
 * the environment and the auth files, above). https: the registry's
 * scheme. */
int ca_oci_auth_new(const char *host, bool https, const char *user, const char *password, struct ca_oci_auth **ret);
void ca_oci_auth_free(struct ca_oci_auth *a); /* accepts NULL; wipes */

/* The Authorization line for a request under scope ("repository:R:pull"
 * or "...:pull,push") into line (cap bytes), or "" when none is known
 * (anonymous until challenged). */
void ca_oci_auth_line(struct ca_oci_auth *a, const char *scope, char *line, size_t cap);

/* Answer a 401: challenge is its WWW-Authenticate. 0: ask again (a line
 * is known now); -EACCES: nothing more to try (logged: "HOST: access
 * denied", naming whether credentials were sent, never them); other
 * errno from the token request (logged). */
int ca_oci_auth_challenge(struct ca_oci_auth *a, struct ca_http *h, const char *challenge, const char *scope);

/* One parameter of a challenge's list after its scheme ('name="value"',
 * with backslash escapes, or 'name=value'; name compared without case)
 * into out (cap >= 1 bytes, cut to fit, NUL-terminated), or "". Hostile
 * input (a registry's header): fuzz-www-auth. */
void ca_oci_auth_param(const char *challenge, const char *name, char *out, size_t cap);

/* Whether credentials were found (for messages). */
bool ca_oci_auth_has_credentials(const struct ca_oci_auth *a);

#endif
