#!/usr/bin/env bash
# A registry beyond one machine, side by side with the SQLite registry, on 127.0.0.1 (issue 52):
#
# 1. Reads: `skillcat serve` of a SQLite file next to one `serve postgres://…` replica of the
#    same N skills; wrk with 64 connections on the index, a skill's page, a blob and the search
#    API: requests/s, p50, p99. Then three replicas loaded at once (a third of the connections
#    each, as a load balancer would spread them): requests/s summed. The search is one query
#    asked over and over (a replica answers it from the answers it keeps for its feed
#    position); a second search row asks a new query every request (the database's own cost).
# 2. Publishes: K new skills through `skillcat publish` to `serve --publish`, one process per
#    publish, in sequence, against the SQLite server and against one replica: ms each.
# 3. Propagation: P publishes through replica 1 (an HTTP PUT each); the time from each
#    acknowledgement until replicas 2 and 3 list the new version (`/api/v1/skills/NAME`, which
#    answers from the replica's memory): p50, p99, max.
#
# It prints the ratios next to the targets: reads through a PostgreSQL replica >= 0.8x the
# SQLite server's, a publish <= 2x the SQLite publish, propagation p99 <= 1 s.
#
# PostgreSQL is a throwaway cluster in the work folder (initdb/pg_ctl from PATH or
# /usr/lib/postgresql/*/bin; as root they run as `postgres` through runuser), with PostgreSQL's
# defaults for durability (fsync and synchronous commit on: SQLite syncs too). BLOBS=file keeps
# the PostgreSQL registry's blobs in a directory (`registry init --blobs file:///…`) instead of
# its database.
#
# Needs a release skillcat built with PostgreSQL support (cargo build --release; SKILLCAT_BIN to
# name another), PostgreSQL's server binaries, wrk and python3 (installed from Debian when
# missing and apt-get is there). Not run in CI; it loads both cores for minutes. N (skills,
# default 1000), K (default 50), P (default 100) and DURATION (per wrk run, default 10s) can be
# set.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(readlink -f "${SKILLCAT_BIN:-${CARGO_TARGET_DIR:-target}/release/skillcat}")
n=${N:-1000}
k=${K:-50}
p=${P:-100}
duration=${DURATION:-10s}
blobs=${BLOBS:-}
pg_bin=$(dirname "$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | tail -1)")
need=()
for tool in wrk python3; do command -v "$tool" >/dev/null || need+=("$tool"); done
[ -x "$pg_bin/initdb" ] || need+=(postgresql)
if ((${#need[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
    pg_bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | tail -1)")
fi
. benches/support/load.sh
make_work
chmod 755 "$work"

# ----- a throwaway PostgreSQL cluster ---------------------------------------------------------
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pg_dir=$work/pg
mkdir -p "$pg_dir"
[ "$(id -u)" -eq 0 ] && chown postgres "$pg_dir"
pg_port=$(free_port)
as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U postgres -A trust -N >"$pg_dir/initdb.log" 2>&1
as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w \
    -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
stop_pg() { as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true; }
trap 'stop_pg; cleanup_work' EXIT
pg_url="postgres://postgres@127.0.0.1:$pg_port/postgres"

# ----- the corpus: N skills, and K + P more to publish later ----------------------------------
python3 - "$work" "$n" "$k" "$p" <<'PY'
import os, sys
work, n, k, p = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
words = "parse fill merge report clean export invoice calendar chart deploy review archive".split()
def skill(root, name, i):
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "references"))
    a, b = words[i % len(words)], words[(i * 7) % len(words)]
    with open(os.path.join(d, "SKILL.md"), "w") as f:
        f.write(f"---\nname: {name}\ndescription: {a.title()} and {b} files for team {i}. Use when the user asks to {a} or {b} something.\n"
                f"metadata:\n  version: \"1.0.0\"\n---\n\n# {name}\n\n"
                + "".join(f"## Step {s}\n\nDo the {a} part carefully, then check the {b} output.\n\n" for s in range(1, 6)))
    with open(os.path.join(d, "references", "notes.md"), "w") as f:
        f.write(f"Reference notes for {name}.\n")
for i in range(1, n + 1):
    skill(os.path.join(work, "corpus"), f"skill-{i:05d}", i)
for i in range(1, k + p + 1):
    skill(os.path.join(work, "later"), f"later-{i:05d}", i)
PY
for d in "$work"/later/*/; do
    "$bin" pack "$d" -o "$work/later/$(basename "$d").tar.gz" >/dev/null
done

now() { date +%s.%N; }
"$bin" registry init "$work/r.db" >/dev/null
"$bin" registry publish "$work/r.db" "$work/corpus" >/dev/null
if [ "$blobs" = file ]; then
    mkdir -p "$work/blobs"
    "$bin" registry init "$pg_url" --blobs "file://$work/blobs" >/dev/null
else
    "$bin" registry init "$pg_url" >/dev/null
fi
start=$(now)
"$bin" registry publish "$pg_url" "$work/corpus" >/dev/null
echo "published $n skills into PostgreSQL in $(python3 -c "print(round($(now) - $start, 1))") s (blobs: ${blobs:-in the database})"
"$bin" token create --tokens "$work/tokens.toml" --name bench --scope '*' --can publish,yank >"$work/bench.token" 2>/dev/null

# serve_one NAME LOCATION: `serve LOCATION --publish` on a free port; sets base_NAME.
serve_one() {
    local name=$1 location=$2
    "$bin" serve "$location" --publish --tokens "$work/tokens.toml" --addr 127.0.0.1:0 \
        --writes-per-minute 1000000 --bytes-per-minute 1GiB >"$work/$name.out" 2>"$work/$name.err" &
    pids+=("$!")
    for _ in $(seq 1 600); do grep -q '^Serving' "$work/$name.out" 2>/dev/null && break; sleep 0.1; done
    printf -v "base_$name" '%s' "$(sed -n 's/^Serving .* on \(http:\/\/[^ ]*\)\/$/\1/p' "$work/$name.out")"
    eval "[ -n \"\$base_$name\" ]" || { echo "serve $name did not start:" >&2; cat "$work/$name.err" >&2; exit 1; }
}
serve_one sqlite "$work/r.db"
serve_one pg1 "$pg_url"
serve_one pg2 "$pg_url"
serve_one pg3 "$pg_url"

index=/.well-known/agent-skills/index.json
blob=$(python3 -c 'import json,sys,urllib.request; print(json.load(urllib.request.urlopen(sys.argv[1]))["skills"][0]["url"].replace("../..",""))' "$base_sqlite$index")
page=/skills/skill-$(printf '%05d' $((n / 2)))/
search="/api/v1/search?q=invoice+chart&limit=20"
echo "registry: $n skills; load average $(cut -d' ' -f1-3 /proc/loadavg) (2 cores is full)"

# ----- 1. reads -------------------------------------------------------------------------------
rps() { awk '/Requests\/sec/ {print $2}'; }
declare -A read_rps
for what in index page blob search; do
    case $what in index) path=$index ;; page) path=$page ;; blob) path=$blob ;; search) path=$search ;; esac
    for who in sqlite pg1; do
        eval "b=\$base_$who"
        row=$(wrk_row "$who" "$what" "$b$path" "$duration")
        echo "$row"
        read_rps[$who.$what]=$(awk '{print $5}' <<<"$row")
    done
    # Three replicas at once, a third of the connections each.
    total=0
    loaders=()
    for who in pg1 pg2 pg3; do
        eval "b=\$base_$who"
        wrk -t1 -c21 -d"$duration" "$b$path" >"$work/wrk.$who" &
        loaders+=("$!")
    done
    for j in "${loaders[@]}"; do wait "$j"; done
    for who in pg1 pg2 pg3; do total=$(python3 -c "print($total + $(rps <"$work/wrk.$who"))"); done
    read_rps[pg3x.$what]=$total
    printf '%-8s %-6s 3 replicas x 21 connections: %10.0f requests/s in all\n' pg "$what" "$total"
done

# Search with a query never asked before on every request: what a replica cannot answer from
# the answers it keeps for its feed position, so the database's own cost.
cat >"$work/distinct.lua" <<'LUA'
local threads = 0
function setup(thread)
    thread:set("base", threads * 100000000)
    threads = threads + 1
end
function init(args)
    n = wrk.thread:get("base")
end
function request()
    n = n + 1
    return wrk.format(nil, "/api/v1/search?q=team+" .. n .. "&limit=20")
end
LUA
for who in sqlite pg1; do
    eval "b=\$base_$who"
    out=$(wrk -t2 -c64 -d"$duration" --latency -s "$work/distinct.lua" "$b")
    read_rps[$who.distinct]=$(rps <<<"$out")
    printf '%-8s %-6s 64 connections: %10s requests/s, p50 %8s, p99 %8s (every query new)\n' "$who" \
        search "${read_rps[$who.distinct]}" "$(awk '$1 == "50%" {print $2}' <<<"$out")" \
        "$(awk '$1 == "99%" {print $2}' <<<"$out")"
done

# ----- 2. publishes ---------------------------------------------------------------------------
publish_all() { # BASE FIRST LAST: seconds for `skillcat publish` of later-FIRST..LAST
    local start i
    start=$(now)
    for i in $(seq -f '%05g' "$2" "$3"); do
        "$bin" publish "$1/" "$work/later/later-$i.tar.gz" --token-file "$work/bench.token" >/dev/null
    done
    python3 -c "print($(now) - $start)"
}
sqlite_s=$(publish_all "$base_sqlite" 1 "$k")
pg_s=$(publish_all "$base_pg1" 1 "$k")

# ----- 3. propagation -------------------------------------------------------------------------
python3 - "$work" "$base_pg1" "$base_pg2" "$base_pg3" "$((k + 1))" "$((k + p))" >"$work/propagation" <<'PY'
import http.client, sys, threading, time, urllib.parse
work, one, others, first, last = sys.argv[1], sys.argv[2], sys.argv[3:5], int(sys.argv[5]), int(sys.argv[6])
token = open(f"{work}/bench.token").read().strip()
def conn(base):
    u = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=30)
samples = []
def watch(base, name, acked, out):
    c = conn(base)
    while True:
        c.request("GET", f"/api/v1/skills/{name}")
        r = c.getresponse(); r.read()
        if r.status == 200:
            seen = time.monotonic()
            break
        time.sleep(0.002)
    acked.wait()
    out.append(seen - acked.at)
pub = conn(one)
for i in range(first, last + 1):
    name = f"later-{i:05d}"
    body = open(f"{work}/later/{name}.tar.gz", "rb").read()
    acked = threading.Event()
    got = []
    watchers = [threading.Thread(target=watch, args=(b, name, acked, got)) for b in others]
    for w in watchers: w.start()
    pub.request("PUT", f"/api/v1/skills/{name}/1.0.0", body=body,
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"})
    r = pub.getresponse(); r.read()
    acked.at = time.monotonic(); acked.set()
    if r.status not in (200, 201):
        sys.exit(f"publish {name}: {r.status}")
    for w in watchers: w.join()
    # A replica may list it before the publisher's answer arrives: that is no delay.
    samples += [max(0.0, s) for s in got]
samples.sort()
q = lambda f: samples[min(len(samples) - 1, int(f * len(samples)))]
print(f"{q(0.5)} {q(0.99)} {samples[-1]} {len(samples)}")
PY
read -r prop_p50 prop_p99 prop_max prop_n <"$work/propagation"

# ----- the ratios -----------------------------------------------------------------------------
python3 - "$k" "$sqlite_s" "$pg_s" "$prop_p50" "$prop_p99" "$prop_max" "$prop_n" \
    "${read_rps[sqlite.index]}" "${read_rps[pg1.index]}" "${read_rps[pg3x.index]}" \
    "${read_rps[sqlite.page]}" "${read_rps[pg1.page]}" "${read_rps[pg3x.page]}" \
    "${read_rps[sqlite.blob]}" "${read_rps[pg1.blob]}" "${read_rps[pg3x.blob]}" \
    "${read_rps[sqlite.search]}" "${read_rps[pg1.search]}" "${read_rps[pg3x.search]}" \
    "${read_rps[sqlite.distinct]}" "${read_rps[pg1.distinct]}" <<'PY'
import sys
a = sys.argv[1:]
k, sqlite_s, pg_s = int(a[0]), float(a[1]), float(a[2])
p50, p99, pmax, pn = float(a[3]), float(a[4]), float(a[5]), int(a[6])
reads = [float(x) for x in a[7:19]]
distinct = [float(x) for x in a[19:21]]
def verdict(ok): return "meets the target" if ok else "MISSES the target"
print()
for i, what in enumerate(["index", "page", "blob", "search"]):
    s, one, three = reads[3 * i: 3 * i + 3]
    r = one / s if s else 0
    print(f"reads {what:6}: one PostgreSQL replica {one:9.0f}/s vs SQLite {s:9.0f}/s = {r:.2f}x "
          f"(target >= 0.8x: {verdict(r >= 0.8)}); three replicas {three:9.0f}/s")
s, one = distinct
r = one / s if s else 0
print(f"search, every query new (no answer kept): one PostgreSQL replica {one:9.0f}/s vs SQLite "
      f"{s:9.0f}/s = {r:.2f}x: the database's own cost (not the target's repeated reads)")
r = pg_s / sqlite_s if sqlite_s else 0
print(f"publish: PostgreSQL {1000 * pg_s / k:.1f} ms vs SQLite {1000 * sqlite_s / k:.1f} ms each "
      f"= {r:.2f}x (target <= 2x: {verdict(r <= 2)})")
print(f"propagation to the other replicas ({pn} samples): p50 {1000 * p50:.0f} ms, p99 {1000 * p99:.0f} ms, "
      f"max {1000 * pmax:.0f} ms (target p99 <= 1 s: {verdict(p99 <= 1)})")
PY
