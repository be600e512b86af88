#!/usr/bin/env bash
# The grid measurement of the README ("Speed"): decision-cdn-edge (its 13
# default candidates and the two exact limiters) against grid40.json (40
# listed candidates, the same workload), 3 runs each at 1 and 2 threads;
# prints every wall time, the medians of wall and CPU (user + sys) time, and the load average before and
# after (the machine is shared: read the medians with the load).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# RATELAB_BIN=path skips the build and times that binary.
if [ -z "${RATELAB_BIN:-}" ]; then
  cargo build --release --manifest-path "$root/Cargo.toml"
fi
bin="${RATELAB_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/ratelab}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "before: $(cut -d' ' -f1-3 /proc/loadavg)"
for threads in 1 2; do
  for sc in "$root/scenarios/decision-cdn-edge.json" "$here/grid40.json"; do
    times=()
    cpus=()
    for _ in 1 2 3; do
      /usr/bin/time -f "%e %U %S" -o "$out/time" "$bin" run "$sc" --out "$out" --threads "$threads" --no-progress > /dev/null
      read -r wall user sys < "$out/time"
      times+=("$wall")
      cpus+=("$(echo "$user + $sys" | bc)")
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
    cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n 2p)
    printf '%-24s threads=%s  wall: %s  median %.2f s; CPU median %.2f s\n' "$(basename "$sc")" "$threads" "${times[*]}" "$median" "$cpu"
  done
done
echo "after: $(cut -d' ' -f1-3 /proc/loadavg)"
