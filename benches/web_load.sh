#!/usr/bin/env bash
# The web catalog under load on 127.0.0.1: a registry of N skills (default 10,000) served by
# `skillcat serve`, next to nginx serving `skillcat export` of the same registry. For each:
# wrk with 64 connections on the home page and on one skill's page (requests/s, p50, p99),
# and, for skillcat alone, on the search API (live only: a static copy cannot search).
#
# Needs a release skillcat (cargo build --release; SKILLCAT_BIN to name another), nginx, wrk
# and python3. Not run in CI. N and DURATION (per wrk run, default 10s) can be set. The target
# (issue 30): p99 <= 20 ms for the home page and a skill page at 10,000 skills.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SKILLCAT_BIN:-${CARGO_TARGET_DIR:-target}/release/skillcat}
n=${N:-10000}
duration=${DURATION:-10s}
for tool in nginx wrk python3; do
    command -v "$tool" >/dev/null || { echo "web_load.sh: $tool is not installed" >&2; exit 2; }
done
. benches/support/load.sh
make_work

# N skills, each with a version, a body of some length, a reference and a script: what a
# registry page has to render.
python3 - "$work/corpus" "$n" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
words = "parse fill merge report clean export invoice calendar chart deploy review archive".split()
for i in range(1, n + 1):
    name = f"skill-{i:05d}"
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "references"))
    os.makedirs(os.path.join(d, "scripts"))
    a, b = words[i % len(words)], words[(i * 7) % len(words)]
    with open(os.path.join(d, "SKILL.md"), "w") as f:
        f.write(f"---\nname: {name}\ndescription: {a.title()} and {b} files for team {i}. Use when the user asks to {a} or {b} something.\n"
                f"metadata:\n  version: \"1.{i % 7}.0\"\n---\n\n# {name}\n\n"
                + "".join(f"## Step {k}\n\nDo the {a} part carefully, then check the {b} output with `scripts/run.sh`.\n\n" for k in range(1, 6))
                + "See [the notes](references/notes.md).\n")
    with open(os.path.join(d, "references", "notes.md"), "w") as f:
        f.write(f"Reference notes for {name}.\n")
    with open(os.path.join(d, "scripts", "run.sh"), "w") as f:
        f.write("#!/bin/sh\n# Run the check.\necho ok\n")
    os.chmod(os.path.join(d, "scripts", "run.sh"), 0o755)
PY
"$bin" registry init "$work/r.db" >/dev/null
start=$(date +%s.%N)
"$bin" registry publish "$work/r.db" "$work/corpus" >/dev/null
echo "published $n skills into a registry in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"

start=$(date +%s.%N)
"$bin" export "$work/r.db" "$work/site" >/dev/null
echo "export: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s, $(find "$work/site" -type f | wc -l) files, $(du -sh "$work/site" | cut -f1)"

start=$(date +%s.%N)
"$bin" serve "$work/r.db" --addr 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 3000); do grep -q '^Serving' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
echo "serve: ready in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s, RSS $(grep VmRSS /proc/"$serve_pid"/status | awk '{print $2, $3}')"
skillcat_base=$(sed -n 's/^Serving .* on \(http:\/\/[^ ]*\)\/$/\1/p' "$work/serve.out")

start_nginx "$work" "$work/site"
nginx_pid=$nginx_master
pids+=("$nginx_pid")

page=/skills/skill-$(printf '%05d' $((n / 2)))/
home_bytes=$(wc -c <"$work/site/index.html")
page_bytes=$(wc -c <"$work/site$page/index.html")
echo "catalog: $n skills; home page $home_bytes bytes (50 skills a page), skill page $page_bytes bytes"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (2 cores is full)"
for who in skillcat nginx; do
    if [ "$who" = skillcat ]; then base=$skillcat_base; else base=$nginx_base; fi
    wrk_row "$who" home "$base/" "$duration"
    wrk_row "$who" skill "$base$page" "$duration"
done
wrk_row skillcat search "$skillcat_base/api/v1/search?q=invoice+chart&limit=20" "$duration"
printf 'skillcat RSS after load: %s\n' "$(grep VmRSS /proc/"$serve_pid"/status | awk '{print $2, $3}')"
