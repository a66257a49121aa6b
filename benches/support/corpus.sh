# Sourced by the shell benches: `write_corpus DIR N` writes N skills `DIR/skill-001`… of four
# files each (a document, an executable script, two references), 1–6 KB; skill i has version
# 1.0.i.
write_corpus() {
    local out=$1 n=$2 i d
    for i in $(seq -w 1 "$n"); do
        d="$out/skill-$i"
        mkdir -p "$d/scripts" "$d/references"
        {
            printf -- '---\nname: skill-%s\ndescription: Skill %s does one thing well when the user asks for it.\nmetadata:\n  version: "1.0.%s"\n---\n\n# Skill %s\n\n' "$i" "$i" "$((10#$i))" "$i"
            for _ in $(seq 1 20); do printf 'Step %s: read the input, check it, write the result and say what changed.\n' "$i"; done
        } >"$d/SKILL.md"
        printf '#!/bin/sh\n# skill %s\nset -eu\nprintf "%%s\\n" "$@"\n' "$i" >"$d/scripts/run.sh"
        chmod +x "$d/scripts/run.sh"
        for _ in $(seq 1 40); do printf 'Reference line for skill %s, with enough words to be a realistic note.\n' "$i"; done >"$d/references/guide.md"
        printf 'Field notes for skill %s.\n' "$i" >"$d/references/notes.md"
    done
}
