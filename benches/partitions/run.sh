#!/usr/bin/env bash
# Partitioned shards vs the unsharded run on a ~2 M-request trace: exports
# gen.json to target/bench-partitions/trace.csv, partitions it by a hash of
# the key into 4 folders with DuckDB (`pip install duckdb`), then times (CPU:
# user + sys, under /usr/bin/time) the unsharded run over the one file and
# each of 4 shards over the partition folders, one after another, and the
# merge; checks that the merged folder equals the unsharded run over the
# folders. For comparison, the 4 shards of the one file (each reads all of
# it and keeps its keys).
# Usage: benches/partitions/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
B=target/release/ratelab
D=target/bench-partitions
mkdir -p "$D"
[ -f "$D/trace.csv" ] || $B export benches/partitions/gen.json --out "$D/trace.csv"
if [ ! -d "$D/parted" ]; then
  (cd "$D" && python3 -c "import duckdb; duckdb.sql('SET threads = 1'); duckdb.sql(\"COPY (SELECT *, hash(key) % 4 AS part FROM read_csv('trace.csv') ORDER BY t_ns) TO 'parted' (FORMAT csv, HEADER, PARTITION_BY (part))\")")
fi
t() { /usr/bin/time -f "%U user + %S sys s CPU, %e s wall, %M KB peak  ${*: -3}" "$@" > /dev/null; }
rm -rf "$D/whole" "$D/dir" "$D/parts" "$D/merged" "$D/fparts"
echo "== unsharded, the one file"
t $B run benches/partitions/whole.json --out "$D/whole" --no-progress
echo "== unsharded, the partition folders"
t $B run benches/partitions/per-key.json --out "$D/dir" --no-progress
echo "== 4 shards of the partition folders"
for i in 0 1 2 3; do t $B run benches/partitions/per-key.json --out "$D/parts" --no-progress --shard $i/4; done
t $B merge "$D"/parts/partitions-per-key.shard-*-of-4.json --out "$D/merged"
diff -r "$D/dir/partitions-per-key" "$D/merged/partitions-per-key" && echo "merged = unsharded"
echo "== 4 shards of the one file (each reads it all)"
for i in 0 1 2 3; do t $B run benches/partitions/whole.json --out "$D/fparts" --no-progress --shard $i/4; done
