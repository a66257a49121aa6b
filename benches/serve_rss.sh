#!/usr/bin/env bash
# `skillcat serve`'s peak memory on a registry of N skills (default 2,000), and how long the
# registry took to publish. A registry of N skills (benches/support/corpus.sh: four files each,
# 1–6 KB) is published with one `registry publish`, served, asked for its home page, one skill's
# page, the v0.2.0 index and one archive; then the server's peak (VmHWM) and settled (VmRSS)
# resident memory are printed. BEFORE=path/to/an/older/skillcat prints the same for it first.
#
# Needs a release skillcat (cargo build --release; SKILLCAT_BIN to name another), curl and
# python3. Not run in CI. The targets (issue 51): at 2,000 skills, serve peaks at <= 300 MB (was
# 670–684) and the publish takes <= 5 s (was 39 s on a busy machine).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SKILLCAT_BIN:-${CARGO_TARGET_DIR:-target}/release/skillcat}
n=${N:-2000}
. benches/support/load.sh
. benches/support/corpus.sh
make_work

write_corpus "$work/corpus" "$n"
now() { date +%s.%N; }

# measure NAME BIN: publishes the corpus into a fresh registry with BIN, serves it, reads it,
# prints the publish time and the server's memory.
measure() {
    local who=$1 b=$2 db="$work/$1.db" start pid base page
    "$b" registry init "$db" >/dev/null
    start=$(now)
    "$b" registry publish "$db" "$work/corpus" >/dev/null
    printf '%-7s publish %s skills: %5.1f s\n' "$who" "$n" "$(python3 -c "print($(now) - $start)")"
    start=$(now)
    "$b" serve "$db" --addr 127.0.0.1:0 >"$work/$who.out" 2>"$work/$who.err" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 3000); do grep -q '^Serving' "$work/$who.out" 2>/dev/null && break; sleep 0.1; done
    base=$(sed -n 's/^Serving .* on \(http:\/\/[^ ]*\)\/$/\1/p' "$work/$who.out")
    printf '%-7s serve: ready in %.1f s\n' "$who" "$(python3 -c "print($(now) - $start)")"
    page=$(printf 'skill-%0*d' "${#n}" $((n / 2)))
    curl -fsS "$base/" >/dev/null
    curl -fsS "$base/skills/$page/" >/dev/null
    curl -fsS "$base/.well-known/agent-skills/index.json" -o "$work/$who.index.json"
    curl -fsS "$base$(python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['skills'][0]; print('/.well-known/agent-skills/'+e['url'])" "$work/$who.index.json")" >/dev/null
    printf '%-7s serve: peak %s, settled %s (load average %s; 2 cores is full)\n' "$who" \
        "$(awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' /proc/"$pid"/status)" \
        "$(awk '/VmRSS/ {printf "%.0f MB", $2 / 1024}' /proc/"$pid"/status)" \
        "$(cut -d' ' -f1 /proc/loadavg)"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

if [ -n "${BEFORE:-}" ]; then measure before "$BEFORE"; fi
measure after "$bin"
