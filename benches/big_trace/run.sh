#!/usr/bin/env bash
# The 10 GB trace measurement of the README ("Streaming a big trace"):
# export gen.json's workload as a 10.3 GB t_ns,key,weight trace, replay it
# through every decision-lab candidate under /usr/bin/time -v while sampling
# the resident memory and the bytes read every 20 s, then delete the trace.
# Needs ~11 GB free in DIR (default /tmp/ratelab-big-trace) and ~15 minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${1:-/tmp/ratelab-big-trace}"
mkdir -p "$dir"
cargo build --release --manifest-path "$root/Cargo.toml"
bin="$root/target/release/ratelab"
cp "$here/gen.json" "$here/replay.json" "$dir/"
cd "$dir"
trap 'rm -f "$dir/t.csv"' EXIT
/usr/bin/time -v "$bin" export gen.json --out t.csv 2> export.time
ls -l t.csv
/usr/bin/time -v "$bin" run replay.json --out out --no-progress > replay.out 2> replay.time &
sleep 1
pid=$(pgrep -n -x ratelab)
: > samples.txt
while kill -0 "$pid" 2>/dev/null; do
  echo "$(date +%s) rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null) read_bytes=$(awk '/rchar/ {print $2}' /proc/$pid/io 2>/dev/null)" >> samples.txt
  sleep 20
done
wait
cat replay.out samples.txt
grep -E "Elapsed|Maximum resident|User time" export.time replay.time
