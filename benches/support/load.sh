# Shared by benches/http_load.sh and benches/central_load.sh (sourced, not run).

# make_work: a temporary folder in $work and a list $pids of processes started; on exit the
# processes are killed and the folder removed.
make_work() {
    work=$(mktemp -d)
    pids=()
    trap cleanup_work EXIT
}

cleanup_work() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

# start_nginx WORK SITE: nginx (2 workers, no access log) on a free 127.0.0.1 port serving the
# exported SITE, immutable blobs as `serve` marks them. Sets nginx_base and nginx_master; the
# caller kills nginx_master when done.
start_nginx() {
    local work=$1 site=$2 port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    cat >"$work/nginx.conf" <<CONF
user root;
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 4096; }
http {
    access_log off;
    # No html type: only the catalog's own pages (each folder's index.html) are HTML; a
    # skill's files keep their names under .well-known/ and are never served as pages.
    types { application/json json; text/markdown md; text/css css; text/plain txt; }
    default_type application/octet-stream;
    index index.html;
    server {
        listen 127.0.0.1:$port;
        root $site;
        location ^~ /blobs/ { add_header Cache-Control "public, max-age=31536000, immutable"; }
        location ^~ /.well-known/ { }
        location ~ /index\.html\$ { default_type "text/html; charset=utf-8"; }
    }
}
CONF
    nginx -c "$work/nginx.conf" -g 'daemon off;' &
    nginx_master=$!
    sleep 1
    nginx_base="http://127.0.0.1:$port"
}

# wrk_row WHO WHAT URL DURATION: wrk with 64 connections on URL; one line with requests/s, p50,
# p99 and the errors wrk counted.
wrk_row() {
    local out rps p50 p99 errors
    out=$(wrk -t2 -c64 -d"$4" --latency "$3")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
    errors=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ' || true)
    printf '%-8s %-5s 64 connections: %10s requests/s, p50 %8s, p99 %8s, errors: %s\n' \
        "$1" "$2" "$rps" "$p50" "$p99" "${errors:-none}"
}
