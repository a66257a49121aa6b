#!/usr/bin/env bash
# A confined call of a one-line sh script, three ways, side by side with bubblewrap's whole
# process and a bare spawn of the same script, on the same machine in one run: median and p90
# wall time of N of each (interleaved, so a noisy moment hits all of them), the ratios to
# bubblewrap, and the targets of step 31 (issue 53) beside them.
#
#   benches/run_vs_bwrap.sh [N]        (default 100; builds the binaries first)
#
# The binaries are built with the profile one installs (`dist`: fat LTO; 8.5 minutes on a 2-core
# host after a release build, most of it two single-threaded links); PROFILE=release measures
# the release profile's (thin LTO) instead.
#
# - `skillcat run`: the whole process, started and waited for.
# - MCP call: one `tools/call` through a live `skillcat mcp` over stdio, started once and
#   initialised before; timed from the request written to the response read.
# - session call: one `Run::call` through the library's session (`examples/call_loop.rs`, started
#   once, the skill activated once); timed from the request line written to the answer read.
#
# Then the MCP server's state over the N calls (after the first): its open descriptors and
# resident memory, before and after, and the processes left below it once it has exited.
#
# bubblewrap runs as its documented hardened setup: the host read-only, its own /dev and /proc,
# every namespace unshared, dying with its parent. skillcat runs the bundled-style skill with
# its defaults: workspace, namespaces, cgroup (where the host has one), Landlock, seccomp.
# Needs bwrap (Debian: bubblewrap) and python3 (for the clock).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
command -v bwrap >/dev/null || { echo "run_vs_bwrap: needs bwrap (apt-get install bubblewrap)" >&2; exit 2; }
profile=${PROFILE:-dist}
cargo build --profile "$profile" --locked --quiet --bin skillcat --example call_loop
out="${CARGO_TARGET_DIR:-target}/$profile"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 0711 "$work"
mkdir -p "$work/skills/hello/scripts" "$work/home" "$work/tmp"
printf -- '---\nname: hello\ndescription: Says hello.\n---\nBody\n' >"$work/skills/hello/SKILL.md"
printf '#!/bin/sh\necho hi\n' >"$work/skills/hello/scripts/hi.sh"
chmod -R a+rX "$work/skills"
chmod 0755 "$work/skills/hello/scripts/hi.sh"
script="$work/skills/hello/scripts/hi.sh"

export BIN="$out/skillcat" LOOP="$out/examples/call_loop" SKILLS="$work/skills" \
    SCRIPT="$script" HOME_DIR="$work/home" TMP_DIR="$work/tmp" RUNS="$runs"
python3 - <<'PY'
import json, os, subprocess, time, statistics

env = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME_DIR"], "TMPDIR": os.environ["TMP_DIR"]}
skill = os.path.join(os.environ["SKILLS"], "hello")
whole = {
    "bare sh": ["/bin/sh", os.environ["SCRIPT"]],
    "bwrap": ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
              "--unshare-all", "--die-with-parent", "/bin/sh", os.environ["SCRIPT"]],
    "skillcat run": [os.environ["BIN"], "run", skill, "hello", "hi"],
}


class Mcp:
    """`skillcat mcp SKILLS` over stdio, initialised; `call()` is one tools/call."""

    def __init__(self):
        self.p = subprocess.Popen([os.environ["BIN"], "mcp", os.environ["SKILLS"]], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.id = 0
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "run_vs_bwrap", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def ask(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:  # notifications (a list changed) may come first
            answer = json.loads(self.p.stdout.readline())
            if answer.get("id") == self.id:
                return answer

    def call(self):
        r = self.ask("tools/call", {"name": "run_hello_hi", "arguments": {}})["result"]
        if r.get("isError") or r["content"][0]["text"] != "hi\n":
            raise SystemExit(f"MCP call failed: {r!r}")

    def state(self):
        """(open descriptors, resident KiB) of the server."""
        fds = len(os.listdir(f"/proc/{self.p.pid}/fd"))
        with open(f"/proc/{self.p.pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        return fds, rss

    def below(self):
        """The pids of every process below the server."""
        parent = {}
        for e in os.listdir("/proc"):
            if e.isdigit():
                try:
                    with open(f"/proc/{e}/stat") as f:
                        parent[int(e)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        found, more = set(), {self.p.pid}
        while more:
            more = {p for p, pp in parent.items() if pp in more and p not in found}
            found |= more
        return found

    def close(self):
        self.p.stdin.close()
        self.p.wait()


class Session:
    """`examples/call_loop.rs`: a line in, one `Run::call`, a line out."""

    def __init__(self):
        self.p = subprocess.Popen([os.environ["LOOP"], os.environ["SKILLS"], "hello",
                                   "run_hello_hi"], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def call(self):
        self.p.stdin.write(b"\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline()
        if not answer.startswith(b"ok hi"):
            raise SystemExit(f"session call failed: {answer!r}")

    def close(self):
        self.p.stdin.close()
        self.p.wait()


for name, cmd in whole.items():  # each must work, and warm the caches
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0 or "hi" not in out.stdout:
        raise SystemExit(f"{name} failed: {out.returncode} {out.stdout!r} {out.stderr!r}")
mcp, session = Mcp(), Session()
calls = {"MCP call": mcp.call, "session call": session.call}
for call in calls.values():  # the first call makes the skill's workspace, the second parks
    call()
    call()
time.sleep(0.2)
mcp_before = mcp.state()
times = {n: [] for n in [*whole, *calls]}
for _ in range(int(os.environ["RUNS"])):
    for name, cmd in whole.items():
        t = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[name].append((time.perf_counter() - t) * 1000)
    for name, call in calls.items():
        t = time.perf_counter()
        call()
        times[name].append((time.perf_counter() - t) * 1000)
time.sleep(0.2)
mcp_after = mcp.state()
kept = mcp.below()
mcp.close()
session.close()
time.sleep(0.2)


def alive(pid):
    """Whether `pid` still runs (a zombie has ended: only its reaping is left)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


left = [p for p in kept if alive(p)]

med = {n: statistics.median(v) for n, v in times.items()}
targets = {"skillcat run": "target <= 1.50x", "MCP call": "target <= 0.50x"}
for n, v in times.items():
    v.sort()
    ratio = "" if n in ("bare sh", "bwrap") else f"   {med[n] / med['bwrap']:5.2f}x bwrap"
    print(f"{n:14} median {med[n]:6.2f} ms   p90 {v[len(v) * 9 // 10]:6.2f} ms{ratio}"
          f"{'   ' + targets[n] if n in targets else ''}")
print(f"bwrap / bare: {med['bwrap'] / med['bare sh']:.2f}x   "
      f"skillcat run / bare: {med['skillcat run'] / med['bare sh']:.2f}x")
print(f"MCP server over {os.environ['RUNS']} calls: descriptors {mcp_before[0]} -> {mcp_after[0]}, "
      f"resident {mcp_before[1]} -> {mcp_after[1]} KiB; processes left after it exited: {len(left)}")
PY
