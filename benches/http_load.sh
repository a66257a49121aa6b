#!/usr/bin/env bash
# Server load on 127.0.0.1: `skillcat serve` next to nginx serving `skillcat export` of the same
# catalog. For each: wrk with 64 connections on the v0.2.0 index and on one blob (requests/s,
# p99), then benches/http_idle.py (2,000 idle or dripping connections from 127.0.0.2 and .3
# while 300 requests from 127.0.0.1 are timed: median, p99, max, failures, descriptors).
#
# Needs a release skillcat (cargo build --release; SKILLCAT_BIN to name another), nginx, wrk
# and python3. Not run in CI. N (skills, default 1000) and DURATION (per wrk run, default 10s)
# can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SKILLCAT_BIN:-${CARGO_TARGET_DIR:-target}/release/skillcat}
n=${N:-1000}
duration=${DURATION:-10s}
for tool in nginx wrk python3; do
    command -v "$tool" >/dev/null || { echo "http_load.sh: $tool is not installed" >&2; exit 2; }
done
. benches/support/load.sh
make_work

for i in $(seq -w 1 "$n"); do
    mkdir -p "$work/corpus/skill-$i/references"
    printf -- '---\nname: skill-%s\ndescription: Skill %s does one thing well when the user asks for it.\n---\n\n# Skill %s\n\nSteps, notes and examples.\n' "$i" "$i" "$i" >"$work/corpus/skill-$i/SKILL.md"
    printf 'Reference notes for skill %s.\n' "$i" >"$work/corpus/skill-$i/references/notes.md"
done
"$bin" export "$work/corpus" "$work/site" >/dev/null

"$bin" serve "$work/corpus" --addr 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 600); do grep -q '^Serving' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
skillcat_base=$(sed -n 's/^Serving .* on \(http:\/\/[^ ]*\)\/$/\1/p' "$work/serve.out")

start_nginx "$work" "$work/site"
nginx_pid=$nginx_master
pids+=("$nginx_pid")

index=/.well-known/agent-skills/index.json
blob=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["skills"][0]["url"].replace("../..",""))' "$work/site$index")

echo "catalog: $n skills; index $(stat -c %s "$work/site$index") bytes; blob $blob ($(stat -c %s "$work/site$blob") bytes)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (2 cores is full)"
for who in skillcat nginx; do
    if [ "$who" = skillcat ]; then base=$skillcat_base; pid=$serve_pid; else base=$nginx_base; pid=$(cat "$work/nginx.pid"); fi
    for what in index blob; do
        if [ "$what" = index ]; then path=$index; else path=$blob; fi
        wrk_row "$who" "$what" "$base$path" "$duration"
    done
    if [ "$who" = skillcat ]; then
        printf '%-8s RSS after load: %s\n' "$who" "$(grep VmRSS /proc/"$pid"/status | awk '{print $2, $3}')"
    fi
    printf '%-8s ' "$who"
    # nginx's workers hold the connections: count the descriptors of one of them.
    if [ "$who" = nginx ]; then pid=$(pgrep -P "$pid" | head -1); fi
    python3 benches/http_idle.py "$base$index" "$pid"
done
