#!/usr/bin/env bash
# Access-log reading speed (one core): generate an nginx `combined` log of N
# lines (default 2,000,000, about 420 MB), then time `wc -l`, the reader
# parsing it to (time, key) with the key `ip` and `ip/24`, the same through
# gzip (`zcat` timed beside it), and `ratelab size` on it end to end.
# Usage: benches/access_logs/run.sh [N] [DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
n="${1:-2000000}"
dir="${2:-/tmp/ratelab-access-logs}"
mkdir -p "$dir"
trap 'rm -f "$dir/access.log" "$dir/access.log.gz"' EXIT
cargo build --release --example read_log --manifest-path "$root/Cargo.toml"
ex="${CARGO_TARGET_DIR:-$root/target}/release/examples/read_log"
"$ex" generate combined "$n" "$dir/access.log"
ls -l "$dir/access.log"
cat "$dir/access.log" > /dev/null # warm the page cache
t() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); echo "$(echo "$e - $s" | bc) s: $*"; }
t wc -l "$dir/access.log"
taskset -c 0 "$ex" read combined "$dir/access.log" ip
taskset -c 0 "$ex" read combined "$dir/access.log" ip/24
gzip -1 -c "$dir/access.log" > "$dir/access.log.gz"
t zcat "$dir/access.log.gz"
# MB/s here is of the compressed bytes.
taskset -c 0 "$ex" read combined "$dir/access.log.gz" ip
