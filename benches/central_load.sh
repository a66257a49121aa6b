#!/usr/bin/env bash
# A central registry under load, on 127.0.0.1.
#
# 1. Publishing: the same N reproducible archives published into a fresh registry twice — once
#    with the local `skillcat registry publish`, once over HTTP with `skillcat publish` against
#    `skillcat serve --publish` — in sequence, one process per publish both times: seconds in
#    all, milliseconds per publish, and the ratio.
# 2. Reading: `skillcat serve REGISTRY --publish` next to nginx serving `skillcat export` of the
#    same registry; wrk with 64 connections on the v0.2.0 index and on one blob: requests/s,
#    p50, p99, errors; the server's RSS after the load.
#
# Needs a release skillcat (cargo build --release; SKILLCAT_BIN to name another), nginx, wrk
# and python3 (installed from Debian when missing and apt-get is there). Not run in CI.
# N (skills, default 1000) and DURATION (per wrk run, default 10s) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SKILLCAT_BIN:-${CARGO_TARGET_DIR:-target}/release/skillcat}
n=${N:-1000}
duration=${DURATION:-10s}
need=()
for tool in nginx wrk python3; do command -v "$tool" >/dev/null || need+=("$tool"); done
if ((${#need[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
. benches/support/load.sh
make_work

# N skills, each packed once: both publishes send the same archives.
mkdir -p "$work/archives"
for i in $(seq -w 1 "$n"); do
    d="$work/corpus/skill-$i"
    mkdir -p "$d/references"
    printf -- '---\nname: skill-%s\ndescription: Skill %s does one thing well when the user asks for it.\nmetadata:\n  version: "1.0.0"\n---\n\n# Skill %s\n\nSteps, notes and examples.\n' "$i" "$i" "$i" >"$d/SKILL.md"
    printf 'Reference notes for skill %s.\n' "$i" >"$d/references/notes.md"
    "$bin" pack "$d" -o "$work/archives/skill-$i.tar.gz" >/dev/null
done

now() { date +%s.%N; }

"$bin" registry init "$work/local.db" >/dev/null
start=$(now)
for f in "$work"/archives/*.tar.gz; do "$bin" registry publish "$work/local.db" "$f" >/dev/null 2>&1; done
local_s=$(python3 -c "print($(now) - $start)")

"$bin" registry init "$work/central.db" >/dev/null
"$bin" token create --tokens "$work/tokens.toml" --name bench --scope '*' >"$work/bench.token" 2>/dev/null
"$bin" serve "$work/central.db" --publish --tokens "$work/tokens.toml" --addr 127.0.0.1:0 \
    --writes-per-minute 1000000 >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 600); do grep -q '^Serving' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/^Serving .* on \(http:\/\/[^ ]*\)\/$/\1/p' "$work/serve.out")
start=$(now)
for f in "$work"/archives/*.tar.gz; do
    "$bin" publish "$base/" "$f" --token-file "$work/bench.token" >/dev/null
done
http_s=$(python3 -c "print($(now) - $start)")
python3 - "$n" "$local_s" "$http_s" <<'PY'
import sys
n, local, http = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"publish {n} in sequence: local {local:.1f}s ({1000*local/n:.1f} ms each), "
      f"over HTTP {http:.1f}s ({1000*http/n:.1f} ms each), ratio {http/local:.2f}")
PY

"$bin" export "$work/central.db" "$work/site" >/dev/null
start_nginx "$work" "$work/site"
pids+=("$nginx_master")
index=/.well-known/agent-skills/index.json
blob=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["skills"][0]["url"].replace("../..",""))' "$work/site$index")
echo "registry: $n skills; index $(stat -c %s "$work/site$index") bytes; blob $blob ($(stat -c %s "$work/site$blob") bytes)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (2 cores is full)"
for who in skillcat nginx; do
    if [ "$who" = skillcat ]; then b=$base; else b=$nginx_base; fi
    for what in index blob; do
        if [ "$what" = index ]; then path=$index; else path=$blob; fi
        wrk_row "$who" "$what" "$b$path" "$duration"
    done
done
printf 'skillcat RSS after load: %s\n' "$(grep VmRSS /proc/"$serve_pid"/status | awk '{print $2, $3}')"
