# tests/lib-http.sh - a real nginx on 127.0.0.1 for the HTTP tests.
# Source it after tests/lib.sh:
#
#   . "$top_srcdir/tests/lib-http.sh"
#   nginx_start "$T/www"          # serve $T/www; sets NGINX_URL, NGINX_PORT, NGINX_PID
#   curl -s "$NGINX_URL/x.caibx"
#   nginx_log                     # the access log: "METHOD URI STATUS BYTES" per line
#   nginx_log_reset               # empty it
#   nginx_stop                    # kill it and wait (also done at exit)
#   nginx_start "$T/www" "$NGINX_PORT"   # again, on the same port
#   py_server_start "$T/x.port" python3 "$T/x.py" ARGS...   # a test's own server
#
# NGINX_EXTRA (optional) is pasted into the server block before starting,
# e.g. NGINX_EXTRA='location /slow/ { limit_rate 1k; }'.
# NGINX_HTTP_EXTRA (optional) is pasted into the http block (e.g. a
# proxy_cache_path). NGINX_CONF_DIR (default $T/nginx) may be set to
# another directory before nginx_start to run a second server; the caller
# then keeps its NGINX_PID and kills it (nginx_stop stops the last one).
# NGINX_SSL=1 (optional): https with HTTP/2 on a fresh self-signed
# certificate for 127.0.0.1; NGINX_URL is then https://..., NGINX_CA the
# certificate (CAFS_HTTP_CAINFO=$NGINX_CA makes cafs trust it), and each
# log line ends with the protocol (HTTP/1.1, HTTP/2.0) and the connection's
# serial number.
# The server is a single process (master_process off) run in the
# foreground in the background of this shell, so NGINX_PID is the server
# itself and stopping it leaves nothing behind.

NGINX_PID=
NGINX_PORT=
NGINX_URL=
NGINX_CA=
NGINX_CONF_DIR="${NGINX_CONF_DIR:-$T/nginx}"
_nginx_cleanup_set=

need nginx python3

# a proxy from the environment must not stand between the tests and 127.0.0.1
export no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"
export NO_PROXY=$no_proxy

_nginx_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# _nginx_wait_up PORT: up to ~5 s for the port to accept connections
_nginx_wait_up() {
	local i
	for ((i = 0; i < 100; i++)); do
		if ! kill -0 "$NGINX_PID" 2>/dev/null; then
			return 1
		fi
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# nginx_start ROOT [PORT]
nginx_start() {
	local root=$1 want=${2:-} port attempt
	mkdir -p "$NGINX_CONF_DIR/tmp" "$root"
	root=$(cd "$root" && pwd)
	if [ -z "$_nginx_cleanup_set" ]; then
		at_cleanup nginx_stop
		_nginx_cleanup_set=1
	fi
	local scheme=http listen_opts= ssl_conf= log_extra=
	if [ "${NGINX_SSL:-}" = 1 ]; then
		NGINX_CA=$NGINX_CONF_DIR/cert.pem
		[ -s "$NGINX_CA" ] || openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
			-addext subjectAltName=IP:127.0.0.1 -keyout "$NGINX_CONF_DIR/key.pem" -out "$NGINX_CA" \
			>/dev/null 2>&1 || { echo "openssl could not make a certificate" >&2; return 1; }
		scheme=https
		listen_opts=" ssl http2"
		ssl_conf="ssl_certificate $NGINX_CA; ssl_certificate_key $NGINX_CONF_DIR/key.pem;"
		log_extra=' $server_protocol $connection'
	fi
	for attempt in 1 2 3 4 5; do
		port=${want:-$(_nginx_free_port)}
		cat >"$NGINX_CONF_DIR/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $NGINX_CONF_DIR/nginx.pid;
error_log $NGINX_CONF_DIR/error.log warn;
events { worker_connections 512; }
http {
	log_format cafs '\$request_method \$request_uri \$status \$body_bytes_sent$log_extra';
	access_log $NGINX_CONF_DIR/access.log cafs;
	client_body_temp_path $NGINX_CONF_DIR/tmp/body;
	proxy_temp_path $NGINX_CONF_DIR/tmp/proxy;
	fastcgi_temp_path $NGINX_CONF_DIR/tmp/fastcgi;
	uwsgi_temp_path $NGINX_CONF_DIR/tmp/uwsgi;
	scgi_temp_path $NGINX_CONF_DIR/tmp/scgi;
	default_type application/octet-stream;
	keepalive_requests 100000;
	${NGINX_HTTP_EXTRA:-}
	server {
		listen 127.0.0.1:$port$listen_opts;
		$ssl_conf
		root $root;
		${NGINX_EXTRA:-}
	}
}
EOF
		nginx -c "$NGINX_CONF_DIR/nginx.conf" -p "$NGINX_CONF_DIR" </dev/null >>"$NGINX_CONF_DIR/stderr" 2>&1 &
		NGINX_PID=$!
		if _nginx_wait_up "$port"; then
			NGINX_PORT=$port
			NGINX_URL="$scheme://127.0.0.1:$port"
			return 0
		fi
		nginx_stop
		[ -n "$want" ] && break # the caller's port is taken: no point retrying
	done
	echo "nginx did not start:" >&2
	cat "$NGINX_CONF_DIR/error.log" "$NGINX_CONF_DIR/stderr" >&2 2>/dev/null
	return 1
}

nginx_stop() {
	local pid i
	if [ -n "$NGINX_PID" ]; then
		kill "$NGINX_PID" 2>/dev/null
		wait "$NGINX_PID" 2>/dev/null
		NGINX_PID=
	fi
	# a server started in a subshell (say inside `ok`) is not our child and
	# its PID never reached this shell: find it by its pid file, and make
	# sure it is ours (our config on its command line) before killing it
	pid=$(cat "$NGINX_CONF_DIR/nginx.pid" 2>/dev/null)
	if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$NGINX_CONF_DIR/nginx.conf"; then
		kill "$pid" 2>/dev/null
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
	fi
	rm -f "$NGINX_CONF_DIR/nginx.pid"
	return 0
}

nginx_log() { cat "$NGINX_CONF_DIR/access.log" 2>/dev/null; }
nginx_log_reset() { : >"$NGINX_CONF_DIR/access.log"; }

# py_server_start PORTFILE COMMAND...: a small server of the test's own (a
# python3 script that binds 127.0.0.1:0 and writes its port to PORTFILE
# through a rename) run in the background of this shell and stopped at
# exit; waits up to 10 s for its port. Sets PY_SERVER_PID, PY_SERVER_URL.
py_server_start() {
	local portfile=$1
	shift
	"$@" &
	PY_SERVER_PID=$!
	at_cleanup "kill $PY_SERVER_PID; wait $PY_SERVER_PID"
	wait_until 10 "$PY_SERVER_PID" test -s "$portfile" || return 1
	PY_SERVER_URL=http://127.0.0.1:$(cat "$portfile")
}

# lagproxy_start MS: bench/lagproxy.py in front of nginx_start's server,
# adding MS milliseconds to each round trip; killed at exit. Sets LAG_URL.
lagproxy_start() {
	local port i
	port=$(_nginx_free_port)
	python3 "$top_srcdir/bench/lagproxy.py" "$port" "$NGINX_PORT" "$1" >"$T/lagproxy.log" 2>&1 &
	local pid=$!
	at_cleanup "kill $pid; wait $pid"
	for ((i = 0; i < 100; i++)); do
		grep -q ready "$T/lagproxy.log" && break
		sleep 0.05
	done
	LAG_URL=http://127.0.0.1:$port
}
