#!/usr/bin/env bash
# The 10 GB trace measurement of the README ("Streaming a big trace"):
# export gen.json's workload as a 10.3 GB t_ns,key,weight trace, replay it
# through every decision-lab candidate under /usr/bin/time -v while sampling
# the resident memory and the bytes read every 20 s, then delete the trace.
# Needs ~11 GB free in DIR (default /tmp/ratelab-big-trace) and ~10 minutes.
# The binary is $CARGO_TARGET_DIR's (or the repo's target/) release build.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${1:-/tmp/ratelab-big-trace}"
mkdir -p "$dir"
cargo build --release --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release/ratelab"
cp "$here/gen.json" "$here/replay.json" "$dir/"
cd "$dir"
# KEEP_TRACE=1 keeps t.csv for another run (which then skips the export).
if [ -z "${KEEP_TRACE:-}" ]; then
  trap 'rm -f "$dir/t.csv"' EXIT
fi
if [ ! -s t.csv ]; then
  /usr/bin/time -v "$bin" export gen.json --out t.csv 2> export.time
fi
ls -l t.csv
uptime > load.txt
/usr/bin/time -v "$bin" run replay.json --out out --no-progress > replay.out 2> replay.time &
timer=$!
sleep 1
# The replay is the child of this script's `time`, not any other ratelab.
pid=$(pgrep -P "$timer" -x ratelab)
: > samples.txt
while kill -0 "$pid" 2>/dev/null; do
  echo "$(date +%s) rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null) read_bytes=$(awk '/rchar/ {print $2}' /proc/$pid/io 2>/dev/null)" >> samples.txt
  sleep 20
done
wait
uptime >> load.txt
cat replay.out samples.txt load.txt
grep -E "Elapsed|Maximum resident|User time|System time" export.time replay.time 2>/dev/null || true
