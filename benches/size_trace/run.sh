#!/bin/sh
# Sizing pingora Rate for a 100 per second limit on a 10 M-request,
# 200 k-key access log (README, "Sizing for a rate limit"): export the
# trace (210 MB, not committed), size it under /usr/bin/time, delete it.
# The default claim (99% of hash seeds, 95% confidence) verifies each
# mode's pick on 299 fresh seeds: about 7.7e10 units of work, over the
# default --max-work, hence the flag.
set -e
cd "$(dirname "$0")/../.."
cargo build --release
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${CARGO_TARGET_DIR:-target}/release/ratelab" export benches/size_trace/gen.json --out "$tmp/access.csv"
/usr/bin/time -v "${CARGO_TARGET_DIR:-target}/release/ratelab" size --trace "$tmp/access.csv" \
  --limit 100 --interval-ms 1000 --target 'compliant_denied_pct<=0.1' \
  --max-work 1e11 --out "$tmp/size" --no-progress
uptime
