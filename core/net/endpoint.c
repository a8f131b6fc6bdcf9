/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* endpoint.c - remote locations resolved once (see endpoint.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/endpoint.h"

/* e->url parsed, of the section sec (may be NULL), o as the base
 * options; S3 credentials from given (NULL: the section's). */
static int resolve(struct ca_endpoint *e, const struct ca_http_opts *o, const struct ca_store_settings *sec,
                   const struct ca_s3_settings *given)
{
	int r;
	ca_location_parse(e->url, &e->loc);
	if (e->loc.kind != CA_LOCATION_HTTP)
		return -EINVAL;
	e->settings = sec;
	if (e->loc.s3) {
		/* never the file again: its section is this one (or none, the environment) */
		struct ca_s3_settings set = { 0 };
		if (sec)
			set = (struct ca_s3_settings){ sec->aws_access_key_id, sec->aws_secret_access_key,
			                               sec->aws_session_token, sec->aws_region };
		r = ca_s3_connect(e->url, given ? given : &set, o, &e->s3); /* logs */
		if (r < 0)
			return r;
		e->http = e->s3.http; /* its signing strings point into e->s3 */
		e->fetch_url = e->s3.http_url;
	} else {
		if (o)
			e->http = *o;
		else
			ca_http_opts_init(&e->http);
		e->fetch_url = e->url;
	}
	if (sec)
		ca_storeconf_apply(sec, &e->http);
	e->store_query = sec && sec->store_query == CA_SET_YES;
	return 0;
}

int ca_endpoint_init(struct ca_endpoint *e, const char *url, const struct ca_http_opts *o,
                     const struct ca_storeconf *conf)
{
	return ca_endpoint_init_s3(e, url, NULL, o, conf);
}

int ca_endpoint_init_s3(struct ca_endpoint *e, const char *url, const struct ca_s3_settings *set,
                        const struct ca_http_opts *o, const struct ca_storeconf *conf)
{
	int r = 0;
	*e = (struct ca_endpoint){ 0 };
	/* not a URL we fetch: said by the caller, before the settings file is read */
	if (ca_location_kind(url) != CA_LOCATION_HTTP)
		return -EINVAL;
	if (!conf) {
		r = ca_storeconf_load(CA_STORECONF_QUIET, &e->own_conf); /* logs */
		conf = e->own_conf;
	}
	if (r == 0 && !(e->url = strdup(url)))
		r = -ENOMEM;
	if (r == 0)
		r = resolve(e, o, ca_storeconf_lookup(conf, url), set);
	if (r < 0)
		ca_endpoint_clear(e);
	return r;
}

int ca_endpoint_beside(struct ca_endpoint *e, const struct ca_endpoint *of, const char *suffix)
{
	*e = (struct ca_endpoint){ 0 };
	e->url = ca_location_beside(of->url, suffix);
	int r = e->url ? 0 : -ENOMEM;
	/* of's options already carry its section (applying it again changes
	 * nothing); an S3 URL's signing is made again from the same section */
	struct ca_http_opts base = of->http;
	base.sigv4 = base.sigv4_key = base.sigv4_secret = base.sigv4_token = NULL;
	if (r == 0)
		r = resolve(e, &base, of->settings, NULL);
	if (r < 0)
		ca_endpoint_clear(e);
	return r;
}

void ca_endpoint_clear(struct ca_endpoint *e)
{
	ca_s3_conn_clear(&e->s3);
	free(e->url);
	ca_storeconf_free(e->own_conf);
	*e = (struct ca_endpoint){ 0 };
}
