# tests/lib-s3.sh - a real S3 server for the tests and benches: moto_server
# on 127.0.0.1, checking every SigV4 signature.
#
#   . "$top_srcdir/tests/lib-s3.sh"
#   s3_start || exit 1     # sets S3_URL (s3+http://127.0.0.1:PORT), S3_HTTP,
#                          # S3_KEY, S3_SECRET, S3_LOG; bucket "bkt" exists;
#                          # AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY exported
#   s3_requests METHOD     # requests of METHOD logged so far (moto logs each one)
#   s3_stop                # kills only the server it started
#
# moto_server lets the first INITIAL_NO_AUTH_ACTION_COUNT requests through
# unsigned, then verifies signatures: the four unsigned ones make an IAM
# user, its allow-all policy, its access key and the bucket, so from then on
# only that key's signatures are accepted. Needs lib.sh ($T, at_cleanup).

# Where moto_server is: on PATH, or in root's pyenv (CI runs as root on a
# machine like this one). Not finding it is a failure, not a skip: the S3
# stores are tested against it or not at all.
s3_find_moto() {
	local m
	m=$(command -v moto_server 2>/dev/null) || m=
	[ -z "$m" ] && [ -x /root/.pyenv/shims/moto_server ] && m=/root/.pyenv/shims/moto_server
	[ -n "$m" ] || return 1
	echo "$m"
}

_s3_pid=
s3_start() {
	local moto py port i
	if ! moto=$(s3_find_moto); then
		echo "Bail out! moto_server not found (on PATH or /root/.pyenv/shims): pip install 'moto[server]' boto3"
		return 1
	fi
	# the python that runs moto has boto3
	py=$(dirname "$moto")/python3
	[ -x "$py" ] || py=python3
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	S3_LOG=$T/moto.log
	INITIAL_NO_AUTH_ACTION_COUNT=4 "$moto" -H 127.0.0.1 -p "$port" >"$S3_LOG" 2>&1 &
	_s3_pid=$!
	at_cleanup 's3_stop'
	for ((i = 0; i < 200; i++)); do
		kill -0 "$_s3_pid" 2>/dev/null || break
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
		sleep 0.05
	done
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "Bail out! moto_server did not start:"
		sed 's/^/# /' "$S3_LOG"
		return 1
	fi
	S3_HTTP=http://127.0.0.1:$port
	S3_URL=s3+http://127.0.0.1:$port
	local keys
	keys=$("$py" - "$S3_HTTP" <<'EOF'
import json, sys
import boto3
kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="setup",
          aws_secret_access_key="setup")
iam = boto3.client("iam", **kw)
iam.create_user(UserName="cafs")
iam.put_user_policy(UserName="cafs", PolicyName="all", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
k = iam.create_access_key(UserName="cafs")["AccessKey"]
boto3.client("s3", **kw).create_bucket(Bucket="bkt")
print(k["AccessKeyId"], k["SecretAccessKey"])
EOF
	) || { echo "Bail out! could not set up moto_server"; sed 's/^/# /' "$S3_LOG"; return 1; }
	read -r S3_KEY S3_SECRET <<<"$keys"
	S3_PY=$py
	export AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET
	unset AWS_SESSION_TOKEN AWS_REGION S3_ACCESS_KEY S3_SECRET_KEY S3_SESSION_TOKEN S3_REGION 2>/dev/null
	export S3_PY S3_HTTP
}

s3_stop() {
	local i
	[ -n "$_s3_pid" ] || return 0
	kill "$_s3_pid" 2>/dev/null
	# a busy werkzeug may take a while over SIGTERM: bounded, then SIGKILL
	for ((i = 0; i < 100; i++)); do
		kill -0 "$_s3_pid" 2>/dev/null || break
		[ "$(awk '{ print $3 }' "/proc/$_s3_pid/stat" 2>/dev/null)" = Z ] && break # exited, not yet waited for
		sleep 0.05
	done
	kill -9 "$_s3_pid" 2>/dev/null
	wait "$_s3_pid" 2>/dev/null
	_s3_pid=
}

# s3_requests METHOD: how many METHOD requests the server has logged
s3_requests() { grep -c "\"$1 " "$S3_LOG"; }

# s3_curl [CURL ARGS...] PATH: a request signed with the test's key (the
# credentials from a curl config file, not argv), for the test's own look
# at the bucket: s3_curl -X DELETE bkt/store/..., s3_keys PREFIX
s3_curl() {
	local n=$#
	local path=${!n}
	[ -f "$T/s3-curl.conf" ] || printf 'user = "%s:%s"\n' "$S3_KEY" "$S3_SECRET" >"$T/s3-curl.conf"
	curl -sS -f -K "$T/s3-curl.conf" --aws-sigv4 aws:amz:us-east-1:s3 -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		"${@:1:n-1}" "$S3_HTTP/$path"
}

# s3_keys PREFIX: the keys under PREFIX in bucket bkt (one page: tests stay under 1000)
s3_keys() { s3_curl "bkt?list-type=2&prefix=$1" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g'; }
