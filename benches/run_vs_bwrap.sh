#!/usr/bin/env bash
# The whole `skillcat run` process of a one-line sh script, side by side with bubblewrap and a
# bare spawn of the same script, on the same machine in one run: median and p90 wall time of
# N runs each (interleaved, so a noisy moment hits all three), and the ratios.
#
#   benches/run_vs_bwrap.sh [N]        (default 100; builds the release binary first)
#
# bubblewrap runs as its documented hardened setup: the host read-only, its own /dev and /proc,
# every namespace unshared, dying with its parent. skillcat runs the bundled-style skill with
# its defaults: workspace, namespaces, cgroup (where the host has one), Landlock, seccomp.
# Needs bwrap (Debian: bubblewrap) and python3 (for the clock).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
command -v bwrap >/dev/null || { echo "run_vs_bwrap: needs bwrap (apt-get install bubblewrap)" >&2; exit 2; }
cargo build --release --locked --quiet
bin="${CARGO_TARGET_DIR:-target}/release/skillcat"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 0711 "$work"
mkdir -p "$work/skills/hello/scripts" "$work/home" "$work/tmp"
printf -- '---\nname: hello\ndescription: Says hello.\n---\nBody\n' >"$work/skills/hello/SKILL.md"
printf '#!/bin/sh\necho hi\n' >"$work/skills/hello/scripts/hi.sh"
chmod -R a+rX "$work/skills"
chmod 0755 "$work/skills/hello/scripts/hi.sh"
script="$work/skills/hello/scripts/hi.sh"

export BIN="$bin" SKILL="$work/skills/hello" SCRIPT="$script" HOME_DIR="$work/home" TMP_DIR="$work/tmp" RUNS="$runs"
python3 - <<'PY'
import os, subprocess, time, statistics

env = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME_DIR"], "TMPDIR": os.environ["TMP_DIR"]}
cmds = {
    "bare sh": ["/bin/sh", os.environ["SCRIPT"]],
    "bwrap": ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
              "--unshare-all", "--die-with-parent", "/bin/sh", os.environ["SCRIPT"]],
    "skillcat run": [os.environ["BIN"], "run", os.environ["SKILL"], "hello", "hi"],
}
for name, cmd in cmds.items():  # each must work, and warm the caches
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0 or "hi" not in out.stdout:
        raise SystemExit(f"{name} failed: {out.returncode} {out.stdout!r} {out.stderr!r}")
times = {n: [] for n in cmds}
for _ in range(int(os.environ["RUNS"])):
    for name, cmd in cmds.items():
        t = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[name].append((time.perf_counter() - t) * 1000)
med = {n: statistics.median(v) for n, v in times.items()}
for n, v in times.items():
    v.sort()
    print(f"{n:14} median {med[n]:6.2f} ms   p90 {v[len(v) * 9 // 10]:6.2f} ms")
print(f"skillcat run / bwrap: {med['skillcat run'] / med['bwrap']:.2f}x   "
      f"bwrap / bare: {med['bwrap'] / med['bare sh']:.2f}x   "
      f"skillcat run / bare: {med['skillcat run'] / med['bare sh']:.2f}x")
PY
