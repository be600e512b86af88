#!/usr/bin/env bash
# The decision lab's own cost: `ratelab run --trace` with governor as the
# only candidate against a hand-written loop that reads the same CSV into
# the real governor crate on a fake clock (examples/governor_loop.rs), side
# by side in one run on a 2 M-request trace (decision-cdn-edge's workload,
# exported). Prints each CPU time (user + sys), the medians and their
# ratio; exits 1 when the ratio passes MAX_RATIO (default 1.4), so a
# change that makes the lab's hot path slower fails here, not in a user's
# hands. Timing is kept out of `cargo test` (a shared machine's noise).
# Usage: benches/one_candidate/run.sh [RUNS]   (RATELAB_BIN / LOOP_BIN: skip the build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
runs="${1:-5}"
max="${MAX_RATIO:-1.4}"
target="${CARGO_TARGET_DIR:-$root/target}"
if [ -z "${RATELAB_BIN:-}" ] || [ -z "${LOOP_BIN:-}" ]; then
  cargo build --release --bin ratelab --example governor_loop --manifest-path "$root/Cargo.toml"
fi
bin="${RATELAB_BIN:-$target/release/ratelab}"
hand="${LOOP_BIN:-$target/release/examples/governor_loop}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$bin" export "$root/scenarios/decision-cdn-edge.json" --out "$dir/trace.csv"
cat "$dir/trace.csv" > /dev/null # the page cache warm for both
cpu() { # CPU seconds (user + sys) of a command
  /usr/bin/time -f "%U %S" -o "$dir/time" "$@" > /dev/null
  read -r user sys < "$dir/time"
  echo "$user + $sys" | bc
}
echo "before: $(cut -d' ' -f1-3 /proc/loadavg)"
labs=()
loops=()
for _ in $(seq "$runs"); do
  # Alternated, so both see the same load.
  loops+=("$(cpu "$hand" "$dir/trace.csv" 100 1000)")
  labs+=("$(cpu "$bin" run --trace "$dir/trace.csv" --limit 100 --interval-ms 1000 \
    --candidates gcra_governor --out "$dir/out" --no-progress)")
done
echo "after: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
hl="$(median "${loops[@]}")"
ll="$(median "${labs[@]}")"
ratio="$(echo "scale=3; $ll / $hl" | bc)"
echo "hand loop over governor: ${loops[*]} s CPU, median $hl s"
echo "decision lab, one governor candidate: ${labs[*]} s CPU, median $ll s"
echo "ratio: $ratio (at most $max)"
if [ "$(echo "$ratio > $max" | bc)" = 1 ]; then
  echo "the one-candidate decision lab costs more than $max x the hand loop" >&2
  exit 1
fi
