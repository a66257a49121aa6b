#!/usr/bin/env bash
# Does the YAML fast path matter end to end? `skillcat validate DIR` on N generated skills
# (default 2000, benches/support/corpus.sh) as they are — every frontmatter in the fast path's
# subset — against the same corpus with a comment line at the top of each frontmatter, which
# the fast path declines, so every document goes through the saphyr-parser event builder.
# Both timed alternately, wall clock with process start, RUNS times each (default 21); prints
# the medians, the best of each and the ratio (benches/yaml.rs times the parse alone).
#
# Needs a release skillcat (cargo build --release; SKILLCAT_BIN to name another). Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${SKILLCAT_BIN:-${CARGO_TARGET_DIR:-target}/release/skillcat}")
n=${N:-2000}
runs=${RUNS:-21}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. benches/support/corpus.sh
write_corpus "$work/fast" "$n"
cp -r "$work/fast" "$work/slow"
for doc in "$work"/slow/*/SKILL.md; do
    { printf -- '---\n# a comment the fast path declines\n'; tail -n +2 "$doc"; } >"$doc.new"
    mv "$doc.new" "$doc"
done
# Both must be valid, and say so for every skill.
for c in fast slow; do
    valid=$("$bin" validate "$work/$c" | grep -c '^Valid skill: ')
    [ "$valid" -eq "$n" ] || { echo "$c: $valid of $n valid" >&2; exit 1; }
done

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
best() { sort -n | head -1; }
: >"$work/t-fast"
: >"$work/t-slow"
for i in $(seq 1 "$runs"); do
    order="fast slow"
    [ $((i % 2)) -eq 0 ] && order="slow fast"
    for c in $order; do
        t0=$(now)
        "$bin" validate "$work/$c" >/dev/null
        echo $((($(now) - t0) / 1000)) >>"$work/t-$c"
    done
done
mf=$(median <"$work/t-fast")
ms=$(median <"$work/t-slow")
printf 'validate %s skills, %s runs each (load %s)\n' "$n" "$runs" "$(cut -d' ' -f1 /proc/loadavg)"
printf '  fast path:    median %6.1f ms  best %6.1f ms\n' "$(echo "$mf/1000" | bc -l)" "$(echo "$(best <"$work/t-fast")/1000" | bc -l)"
printf '  saphyr only:  median %6.1f ms  best %6.1f ms\n' "$(echo "$ms/1000" | bc -l)" "$(echo "$(best <"$work/t-slow")/1000" | bc -l)"
printf '  ratio fast/saphyr: %.2f\n' "$(echo "$mf/$ms" | bc -l)"
