# nginx_dav.sh — start and stop a throwaway nginx (Debian's, with its WebDAV
# module) that stores PUT bodies as files and serves GETs with sendfile:
# the real HTTP server iolake-s3-bench is tested and calibrated against.
# Sourced (not run: the runner only runs test_*) by test_s3bench_nginx.sh
# and bench/s3bench/nginx_ceiling.sh.
#
#   nginx_dav_start DIR   DIR: an empty work dir (root/, bad/, logs/, tmp/
#                         go there); sets NGINX_PORT. Returns non-zero with
#                         the error log printed when nginx does not come up.
#   nginx_dav_stop DIR    stop it by its pid file and wait for it to exit.
#
# Also served: /corrupt/... accepts PUTs and drops them, and GETs come from
# DIR/bad/corrupt/..., so a test can serve bodies other than those PUT.

# A free port in 10000-19999, as tests/integration/free_port.py draws
# (below the ephemeral range; this file is sourced from other directories
# by POSIX sh, which cannot name it).
nginx_free_port() {
	python3 -c 'import random, socket
for _ in range(1000):
    p = random.randrange(10000, 20000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break'
}

nginx_dav_start() {
	_d=$1
	_nginx=$(command -v nginx || echo /usr/sbin/nginx)
	[ -x "$_nginx" ] || { echo "nginx not installed: run scripts/deps.sh" >&2; return 1; }
	NGINX_PORT=$(nginx_free_port)
	mkdir -p "$_d/root" "$_d/tmp" "$_d/logs" "$_d/bad"
	cat >"$_d/nginx.conf" <<CONF
daemon on;
# workers as us, not www-data, so they can write under our 0700 work dir
user $(id -un) $(id -gn);
worker_processes 2;
pid $_d/nginx.pid;
error_log $_d/logs/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $_d/tmp;
	proxy_temp_path $_d/tmp;
	fastcgi_temp_path $_d/tmp;
	uwsgi_temp_path $_d/tmp;
	scgi_temp_path $_d/tmp;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	client_max_body_size 0;
	server {
		listen 127.0.0.1:$NGINX_PORT;
		root $_d/root;
		location /corrupt/ {
			if (\$request_method = PUT) { return 201; }
			root $_d/bad;
		}
		location / {
			dav_methods PUT DELETE;
			create_full_put_path on;
			dav_access user:rw;
		}
	}
}
CONF
	"$_nginx" -p "$_d" -c "$_d/nginx.conf" -e "$_d/logs/error.log" 2>/dev/null || {
		cat "$_d/logs/error.log" >&2; return 1; }
	_i=0
	until python3 -c "import socket; socket.create_connection(('127.0.0.1',$NGINX_PORT),1)" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -lt 50 ] || { echo "nginx did not start" >&2; cat "$_d/logs/error.log" >&2; return 1; }
		sleep 0.1
	done
}

nginx_dav_stop() {
	[ -s "$1/nginx.pid" ] || return 0
	_pid=$(cat "$1/nginx.pid")
	kill "$_pid" 2>/dev/null || true
	_i=0
	while kill -0 "$_pid" 2>/dev/null && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
}
