#!/bin/sh
# The fleet lab's speed: 16 replicas x 5 strategies on the ~2 million
# requests of the CDN edge, against the single-instance default set on the
# same workload. The goal is at most 4x the single-instance time.
#
#   sh benches/fleet.sh            (from the repository root)
set -eu
cargo build --release --quiet
bin=target/release/ratelab
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
now() { date +%s.%N; }
t0=$(now)
"$bin" run scenarios/decision-cdn-edge.json --out "$out" --no-progress >/dev/null
t1=$(now)
"$bin" run scenarios/fleet-cdn-edge.json --out "$out" --no-progress >/dev/null
t2=$(now)
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
  single = b - a; fleet = c - b;
  printf "single-instance default set: %.2f s\nfleet 16 replicas x 5 strategies: %.2f s\nratio: %.2fx (goal <= 4x)\n", single, fleet, fleet / single
}'
