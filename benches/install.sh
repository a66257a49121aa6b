#!/usr/bin/env bash
# `skillcat install --frozen` with nothing to change, on N installed skills (default 100),
# against `find .agents/skills -type f -exec sha256sum {} +` on the same files: both timed
# alternately, wall clock with process start, RUNS times each (default 21); prints the
# medians, the best of each and the ratio of the medians (the target is at most 2x).
# Then a cold `skillcat add` of the N skills from `skillcat serve` on 127.0.0.1, with an
# empty cache: its time and the requests it made (the target: one index request and one
# per archive).
#
# Needs a release skillcat (cargo build --release; SKILLCAT_BIN to name another), git and
# sha256sum. Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${SKILLCAT_BIN:-${CARGO_TARGET_DIR:-target}/release/skillcat}")
n=${N:-100}
runs=${RUNS:-21}
work=$(mktemp -d)
serve_pid=
cleanup() {
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The corpus: N skills of four files each (benches/support/corpus.sh).
. benches/support/corpus.sh
write_corpus "$work/corpus" "$n"

proj="$work/proj"
mkdir -p "$proj/.git" "$proj/.claude" "$work/home"
export HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache"
(cd "$proj" && "$bin" add ../corpus >/dev/null)
files=$(find "$proj/.agents/skills" -type f | wc -l)

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$work/ours"
: >"$work/sums"
for _ in $(seq 1 "$runs"); do
    t0=$(now)
    (cd "$proj" && "$bin" install --frozen >/dev/null)
    t1=$(now)
    (cd "$proj" && find .agents/skills -type f -exec sha256sum {} + >/dev/null)
    t2=$(now)
    echo $(((t1 - t0) / 1000)) >>"$work/ours"
    echo $(((t2 - t1) / 1000)) >>"$work/sums"
done
ours=$(median <"$work/ours")
sums=$(median <"$work/sums")
best_ours=$(sort -n "$work/ours" | head -1)
best_sums=$(sort -n "$work/sums" | head -1)
echo "install --frozen, nothing to change: $n skills, $files files, $runs runs each, load $(cut -d' ' -f1 /proc/loadavg)"
echo "  skillcat install --frozen          median ${ours} us  best ${best_ours} us"
echo "  find -exec sha256sum {} +          median ${sums} us  best ${best_sums} us"
awk -v a="$ours" -v b="$sums" 'BEGIN { printf "  ratio (medians)                    %.2fx (target <= 2x)\n", a / b }'

# A cold install from `skillcat serve`: an empty cache, an empty project.
"$bin" serve "$work/corpus" --addr 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
for _ in $(seq 1 600); do grep -q '^Serving' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^Serving .* on \(http:\/\/[^ ]*\)$/\1/p' "$work/serve.out")
cold="$work/cold"
mkdir -p "$cold/.git"
t0=$(now)
(cd "$cold" && "$bin" --cache "$work/cold-cache" add "$url" >/dev/null 2>"$work/cold.err")
t1=$(now)
echo "cold add of $n skills from skillcat serve on 127.0.0.1: $(((t1 - t0) / 1000000)) ms"
echo "  $(grep 'requests' "$work/cold.err")"
