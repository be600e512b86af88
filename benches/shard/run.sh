#!/usr/bin/env bash
# Sharded vs unsharded decision lab and size --limit on a ~4 M-request trace
# (gen.json exported to target/bench-shard/trace.csv, about 90 MB): wall time
# of the unsharded run and of each of 4 shards run one after another (each
# shard alone on the machine, as on 4 machines), then of the merge; checks
# that the merged folders equal the unsharded ones.
# Usage: benches/shard/run.sh [decision]  (decision: the decision lab only,
# without size --limit, whose unsharded run and merge take minutes)
set -euo pipefail
only="${1:-}"
cd "$(dirname "$0")/../.."
B=target/release/ratelab
D=target/bench-shard
mkdir -p "$D"
[ -f "$D/trace.csv" ] || $B export benches/shard/gen.json --out "$D/trace.csv"
t() { /usr/bin/time -f "%e s wall, %U s user, %M KB peak  ${*: -2}" "$@" > /dev/null; }
for s in per-key default; do
  name=shard-$s
  rm -rf "$D/whole" "$D/parts" "$D/merged"
  echo "== $name"
  t $B run benches/shard/$s.json --out "$D/whole" --no-progress
  for i in 0 1 2 3; do t $B run benches/shard/$s.json --out "$D/parts" --no-progress --shard $i/4; done
  t $B merge "$D"/parts/$name.shard-*-of-4.json --out "$D/merged"
  diff -r "$D/whole/$name" "$D/merged/$name" && echo "merged = unsharded"
done
[ "$only" = decision ] && exit 0
S=(size --trace "$D/trace.csv" --limit 100 --interval-ms 1000 --target 'compliant_denied_pct<=0.1' --estimate docs --seeds 5 --no-progress)
rm -rf "$D/size-whole" "$D/parts"
echo "== size --limit"
t $B "${S[@]}" --out "$D/size-whole"
for i in 0 1 2 3; do t $B "${S[@]}" --out "$D/parts" --shard $i/4; done
t $B merge "$D"/parts/size.shard-*-of-4.json --out "$D/size-merged"
diff -r "$D/size-whole" "$D/size-merged" && echo "merged = unsharded"
