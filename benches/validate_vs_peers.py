#!/usr/bin/env python3
"""`skillcat validate DIR` against the fastest existing validator, side by side.

Usage:
    python3 benches/validate_vs_peers.py GEN_CORPUS_PY [--skills 2000] [--rounds 40]
    python3 benches/validate_vs_peers.py --corpus DIR [--rounds 40]

GEN_CORPUS_PY is the benchmark corpus generator the peers were timed with (`gen_corpus.py
OUTDIR N`, seed 42);
with --corpus, an already generated corpus (one skill folder per entry) is used as it is.

What is timed, each as a whole process, start-up included:
  - skillcat:      `skillcat validate CORPUS` (the release binary; built here unless
                   SKILLCAT=/path/to/skillcat is set), stdout to a pipe that is drained.
  - skills-ref-rs: one Python process that imports `skills_ref_rs` 0.3.3 (PyPI) and calls
                   `validate(folder)` for every folder of the corpus, in sorted order.
The two are run interleaved (one of each per round, in alternating order), so that the load
of the machine weighs on both alike. Before timing, both must find every skill valid.
The Python environment is made on first use in target/peers-venv (VENV=... to put it
elsewhere) with `python3 -m venv` and `pip install skills-ref-rs==0.3.3`.

Prints the median and minimum wall time of each, the load average before and after, and the
ratio skillcat / skills-ref-rs (the target is <= 0.5).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PEER = "skills-ref-rs==0.3.3"

PEER_SCRIPT = """
import os, sys
from skills_ref_rs import validate
root = sys.argv[1]
bad = 0
for name in sorted(os.listdir(root)):
    if validate(os.path.join(root, name)):
        bad += 1
print(bad)
"""


def venv_python() -> Path:
    venv = Path(os.environ.get("VENV", REPO / "target" / "peers-venv"))
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"making {venv} with {PEER}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PEER], check=True)
    return python


def skillcat_binary() -> Path:
    given = os.environ.get("SKILLCAT")
    if given:
        return Path(given)
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "--bin", "skillcat"], cwd=REPO, check=True
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "release" / "skillcat"


def wall(cmd: list) -> tuple:
    start = time.perf_counter()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    return elapsed, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gen_corpus", nargs="?", help="path to gen_corpus.py")
    ap.add_argument("--corpus", help="an already generated corpus directory")
    ap.add_argument("--skills", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    if not args.corpus and not args.gen_corpus:
        ap.error("give the corpus generator (gen_corpus.py) or --corpus DIR")

    python = venv_python()
    skillcat = skillcat_binary()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(args.corpus) if args.corpus else Path(tmp) / "corpus"
        if not args.corpus:
            subprocess.run(
                [sys.executable, args.gen_corpus, str(corpus), str(args.skills)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        peer = Path(tmp) / "peer.py"
        peer.write_text(PEER_SCRIPT)
        count = sum(1 for p in corpus.iterdir() if p.is_dir())

        ours = [str(skillcat), "validate", str(corpus)]
        theirs = [str(python), str(peer), str(corpus)]
        # Both must agree that every skill is valid before anything is timed.
        _, out = wall(ours)
        valid = out.stdout.decode().count("Valid skill: ")
        assert out.returncode == 0 and valid == count, (out.returncode, valid, count)
        _, out = wall(theirs)
        assert out.returncode == 0 and out.stdout.strip() == b"0", out

        for _ in range(3):  # warm the page cache and both programs
            wall(ours)
            wall(theirs)
        load_before = os.getloadavg()
        times = {"skillcat": [], "skills-ref-rs": []}
        for r in range(args.rounds):
            pair = [("skillcat", ours), ("skills-ref-rs", theirs)]
            if r % 2:
                pair.reverse()
            for name, cmd in pair:
                times[name].append(wall(cmd)[0])
        load_after = os.getloadavg()

    print(f"corpus: {count} skills; {args.rounds} interleaved rounds")
    print(
        "load average before/after: "
        f"{load_before[0]:.2f} / {load_after[0]:.2f} (1 min), {os.cpu_count()} cores"
    )
    for name, ts in times.items():
        print(
            f"{name:>14}: median {statistics.median(ts) * 1e3:6.1f} ms"
            f"   min {min(ts) * 1e3:6.1f} ms"
        )
    med = statistics.median(times["skillcat"]) / statistics.median(times["skills-ref-rs"])
    best = min(times["skillcat"]) / min(times["skills-ref-rs"])
    print(f"ratio skillcat / skills-ref-rs: median {med:.2f}x, min {best:.2f}x (target <= 0.5x)")


if __name__ == "__main__":
    main()
