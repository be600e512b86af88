#!/usr/bin/env bash
# Reading speed of every access-log format on one core, next to `wc -l`
# (and `zcat` / `zstdcat` for compressed logs) on the same file.
#
# For each format: generate about 1 GB of it with `examples/read_log.rs`
# (from the layout its software documents), read it once to warm the page
# cache, then time `wc -l` and the reader parsing it to (time, key), both
# pinned to core 0 (`taskset -c 0`: the reader then parses on the calling
# thread, no parsing thread), and delete it. MB/s is of the log's text (for
# a compressed file, of the text it holds). Prints a Markdown table.
#
# Usage: benches/access_logs/formats.sh [DIR] [SCALE]
#   DIR    where the logs are written, one at a time (default /tmp/ratelab-formats)
#   SCALE  percent of every line count (default 100: about 1 GB a format)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${1:-/tmp/ratelab-formats}"
scale="${2:-100}"
mkdir -p "$dir"
cargo build --release --example read_log --manifest-path "$root/Cargo.toml" >&2
ex="${CARGO_TARGET_DIR:-$root/target}/release/examples/read_log"
msec='$remote_addr [$msec] "$request" $status $body_bytes_sent $request_time "$http_user_agent"'
log="$dir/log"
trap 'rm -f "$log" "$log.gz" "$log.zst"' EXIT

# Seconds taken by a command (its output discarded).
secs() {
  local s e
  s=$(date +%s.%N)
  "$@" > /dev/null
  e=$(date +%s.%N)
  echo "$e - $s" | bc
}

# MB/s of BYTES in SECONDS.
rate() { echo "scale=0; $1 / $2 / 1000000" | bc; }

# The reader's seconds (from its own report) on FILE with its arguments.
read_secs() {
  taskset -c 0 "$ex" read "$@" | sed -E 's/.* bytes, ([0-9.]+) s,.*/\1/'
}

echo "(\$MSEC: $msec)"
echo
echo "| format | lines | text | read: one core | wc -l | decompress | command |"
echo "|---|---|---|---|---|---|---|"

# row NAME LINES GENERATE-FORMAT READ-ARGS...
row() {
  local name=$1 lines=$2 gen=$3
  shift 3
  lines=$((lines * scale / 100))
  "$ex" generate "$gen" "$lines" "$log"
  cat "$log" > /dev/null
  local bytes r w
  bytes=$(stat -c %s "$log")
  r=$(read_secs "$1" "$log" "${@:2}")
  w=$(secs taskset -c 0 wc -l "$log")
  local args="${*:2}"
  [ "$1" = nginx ] && args='--log-format "$MSEC"'
  printf '| %s | %s | %.2f GB | %.2f s, %s MB/s | %.2f s, %s MB/s | | `taskset -c 0 read_log read %s FILE %s` |\n' \
    "$name" "$lines" "$(echo "$bytes / 1000000000" | bc -l)" "$r" "$(rate "$bytes" "$r")" \
    "$w" "$(rate "$bytes" "$w")" "$1" "$args"
  rm -f "$log"
}

row combined 4500000 combined combined ip
row common 9000000 common common ip
row 'nginx `$msec`' 5000000 nginx-msec nginx --log-format "$msec"
row envoy 3000000 envoy envoy ip
row envoy-json 2500000 envoy-json envoy-json ip
row jsonl 7000000 jsonl jsonl ip
row alb 1700000 alb alb ip
row 'cloudfront (W3C)' 2500000 cloudfront cloudfront ip

# Parquet: its size is the compressed columns'; MB/s of the file.
lines=$((5000000 * scale / 100))
"$ex" generate parquet "$lines" "$log"
cat "$log" > /dev/null
bytes=$(stat -c %s "$log")
r=$(read_secs parquet "$log" --columns time=ts,key=ip)
printf '| parquet | %s | %.2f GB (file) | %.2f s, %s MB/s of file, %s k rows/s | | | `taskset -c 0 read_log read parquet FILE --columns time=ts,key=ip` |\n' \
  "$lines" "$(echo "$bytes / 1000000000" | bc -l)" "$r" "$(rate "$bytes" "$r")" \
  "$(echo "scale=0; $lines / $r / 1000" | bc)"
rm -f "$log"

# Compressed: the combined log through gzip (level 6, its default) and
# zstd (level 3, its default); MB/s of the text they hold.
lines=$((4500000 * scale / 100))
"$ex" generate combined "$lines" "$log"
text=$(stat -c %s "$log")
gzip -c "$log" > "$log.gz"
zstd -q -c "$log" > "$log.zst"
rm -f "$log"
for z in gz zst; do
  f="$log.$z"
  cat "$f" > /dev/null
  r=$(read_secs combined "$f" ip)
  if [ "$z" = gz ]; then d=$(secs taskset -c 0 zcat "$f"); tool=zcat; else d=$(secs taskset -c 0 zstdcat "$f"); tool=zstdcat; fi
  printf '| combined.%s | %s | %.2f GB (%.2f GB file) | %.2f s, %s MB/s | | %s: %.2f s, %s MB/s | `taskset -c 0 read_log read combined FILE.%s ip` |\n' \
    "$z" "$lines" "$(echo "$text / 1000000000" | bc -l)" "$(echo "$(stat -c %s "$f") / 1000000000" | bc -l)" \
    "$r" "$(rate "$text" "$r")" "$tool" "$d" "$(rate "$text" "$d")" "$z"
  rm -f "$f"
done
