# tests/lib-oci.sh - a real OCI registry for the tests: Debian's
# docker-registry (distribution 2.8) on 127.0.0.1, storage in $T, deletes
# enabled; optionally with htpasswd (bcrypt) basic auth. Killed by PID in
# the cleanup trap.
#
#   . "$top_srcdir/tests/lib-http.sh"   (free ports, no_proxy)
#   . "$top_srcdir/tests/lib-oci.sh"
#   registry_start NAME [USER PASS]   -> REGISTRY_PORT, REGISTRY_LOG
#   registry_requests METHOD REGEX    -> count of such requests in its log

REGISTRY_BIN=${REGISTRY_BIN:-$(command -v docker-registry || echo /usr/bin/docker-registry)}

registry_start() {
	local name=$1 user=${2:-} pass=${3:-} dir=$T/registry-$1 port i auth=""
	[ -x "$REGISTRY_BIN" ] || { echo "# no docker-registry"; return 1; }
	mkdir -p "$dir/data"
	port=$(_nginx_free_port)
	if [ -n "$user" ]; then
		htpasswd -Bbn "$user" "$pass" >"$dir/htpasswd" || return 1
		auth="auth:
  htpasswd:
    realm: cafs-test
    path: $dir/htpasswd"
	fi
	cat >"$dir/config.yml" <<EOC
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:$port
  secret: cafs-test-secret
$auth
EOC
	"$REGISTRY_BIN" serve "$dir/config.yml" >"$dir/log" 2>&1 &
	local pid=$!
	at_cleanup "kill $pid; wait $pid"
	for ((i = 0; i < 200; i++)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			REGISTRY_PORT=$port
			REGISTRY_LOG=$dir/log
			REGISTRY_PID=$pid
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "# docker-registry did not start:"; sed 's/^/# /' "$dir/log"
	return 1
}

# registry_requests LOG METHOD REGEX: requests the registry served
registry_requests() {
	grep -E "\"$2 [^\"]*$3" "$1" | grep -c 'response.status=2\|" 20[0-9] ' || true
}
