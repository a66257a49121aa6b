#!/usr/bin/env bash
# Pulling N skills (default 100) from the CNCF distribution registry on 127.0.0.1, one
# repository each, pushed by `skillcat push`:
# - cold: `skillcat list --config` over a catalog of the N `oci://` sources with an empty cache
#   (manifest, layer, verification, cache writes, parse), against `curl --parallel` fetching the
#   same manifests and layers into files (no verification) and against `skopeo copy` of each
#   artifact into an OCI layout; RUNS times each (default 5), medians and the ratios printed;
# - warm: the same `skillcat list` again, counting in the registry's access log the requests it
#   made (the target: one manifest request per skill and no blob transfer).
#
# Needs a release skillcat (cargo build --release; SKILLCAT_BIN to name another),
# docker-registry, skopeo and curl. Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${SKILLCAT_BIN:-${CARGO_TARGET_DIR:-target}/release/skillcat}")
n=${N:-100}
runs=${RUNS:-5}
work=$(mktemp -d)
reg_pid=
cleanup() {
    [ -n "$reg_pid" ] && kill "$reg_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
addr="127.0.0.1:$port"
cat >"$work/config.yml" <<YML
version: 0.1
log:
  level: error
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $work/storage
http:
  addr: $addr
YML
docker-registry serve "$work/config.yml" >"$work/registry.log" 2>&1 &
reg_pid=$!
for _ in $(seq 1 200); do curl -fs "http://$addr/v2/" >/dev/null && break; sleep 0.05; done

# The corpus: N skills of four files each (benches/support/corpus.sh), each pushed to its own
# repository and named in a catalog.
. benches/support/corpus.sh
write_corpus "$work/corpus" "$n"
for i in $(seq -w 1 "$n"); do
    "$bin" push "$work/corpus" "skill-$i" "oci://$addr/bench/skill-$i:1.0.$((10#$i))" >/dev/null
    printf '[[sources]]\npath = "oci://%s/bench/skill-%s:1.0.%s"\n' "$addr" "$i" "$((10#$i))" >>"$work/catalog.toml"
done

# The same blobs, by URL, for curl: each skill's manifest, then its layer.
: >"$work/urls.txt"
for i in $(seq -w 1 "$n"); do
    tag="1.0.$((10#$i))"
    m=$(curl -fs -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$addr/v2/bench/skill-$i/manifests/$tag")
    layer=$(printf '%s' "$m" | python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
    printf 'url = "http://%s/v2/bench/skill-%s/manifests/%s"\noutput = "%s/m-%s"\nheader = "Accept: application/vnd.oci.image.manifest.v1+json"\nurl = "http://%s/v2/bench/skill-%s/blobs/%s"\noutput = "%s/l-%s"\n' \
        "$addr" "$i" "$tag" "$work/curl" "$i" "$addr" "$i" "$layer" "$work/curl" "$i" >>"$work/urls.txt"
done

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
t_sc=() t_curl=() t_skopeo=()
for _ in $(seq 1 "$runs"); do
    rm -rf "$work/cache"
    s=$(now); XDG_CACHE_HOME="$work/cache" "$bin" list --config "$work/catalog.toml" >/dev/null; e=$(now)
    t_sc+=("$(echo "$e - $s" | bc)")
    rm -rf "$work/curl" && mkdir -p "$work/curl"
    s=$(now); curl -fsS --no-progress-meter --parallel --parallel-max 8 -K "$work/urls.txt"; e=$(now)
    t_curl+=("$(echo "$e - $s" | bc)")
    rm -rf "$work/oci-layout"
    s=$(now)
    for i in $(seq -w 1 "$n"); do
        skopeo copy -q --src-tls-verify=false "docker://$addr/bench/skill-$i:1.0.$((10#$i))" "oci:$work/oci-layout:skill-$i" >/dev/null
    done
    e=$(now)
    t_skopeo+=("$(echo "$e - $s" | bc)")
done
sc=$(printf '%s\n' "${t_sc[@]}" | median)
cu=$(printf '%s\n' "${t_curl[@]}" | median)
sk=$(printf '%s\n' "${t_skopeo[@]}" | median)
echo "cold pull of $n skills (median of $runs):"
printf '  skillcat list (verify, cache, parse): %.3f s\n' "$sc"
printf '  curl --parallel (manifests + layers): %.3f s   ratio skillcat/curl:   %.2f\n' "$cu" "$(echo "$sc / $cu" | bc -l)"
printf '  skopeo copy, one by one:              %.3f s   ratio skillcat/skopeo: %.2f\n' "$sk" "$(echo "$sc / $sk" | bc -l)"

# Warm: count what one run asks for.
before=$(grep -c '"GET /v2/\|"HEAD /v2/' "$work/registry.log" || true)
manifests_before=$(grep -c 'GET /v2/bench/[^ ]*/manifests/' "$work/registry.log" || true)
blobs_before=$(grep -c 'GET /v2/bench/[^ ]*/blobs/' "$work/registry.log" || true)
s=$(now); XDG_CACHE_HOME="$work/cache" "$bin" list --config "$work/catalog.toml" >/dev/null; e=$(now)
sleep 0.2
after=$(grep -c '"GET /v2/\|"HEAD /v2/' "$work/registry.log" || true)
manifests=$(($(grep -c 'GET /v2/bench/[^ ]*/manifests/' "$work/registry.log" || true) - manifests_before))
blobs=$(($(grep -c 'GET /v2/bench/[^ ]*/blobs/' "$work/registry.log" || true) - blobs_before))
printf 'warm: %.3f s, %s requests: %s manifest GETs, %s blob GETs (for %s skills)\n' \
    "$(echo "$e - $s" | bc)" "$((after - before))" "$manifests" "$blobs" "$n"
