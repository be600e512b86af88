#!/usr/bin/env bash
# The CI step of docs/book/src/ci.md, run as it is by GitHub Actions, GitLab CI and
# tests/it/ci_script.rs: reproduce every scenario into a scratch folder, check
# the fresh reports against the committed baselines and each scenario's
# expect (JUnit XML and a Markdown summary beside them), then build the
# design-review page. Exits with check's code: 0 ok, 1 check failed, 2 bad
# input, 3 internal error.
#
# Environment (all optional):
#   RATELAB            the binary (default: ratelab on PATH)
#   RATELAB_SCENARIOS  scenario folder (default: scenarios)
#   RATELAB_BASELINES  committed baselines (default: reports)
#   RATELAB_OUT        where fresh reports, junit.xml, summary.md and the
#                      page go (default: ratelab-out)
# Extra arguments go to `ratelab check` (e.g. --strict).
set -euo pipefail

ratelab="${RATELAB:-ratelab}"
scenarios="${RATELAB_SCENARIOS:-scenarios}"
baselines="${RATELAB_BASELINES:-reports}"
out="${RATELAB_OUT:-ratelab-out}"
mkdir -p "$out"

"$ratelab" reproduce --scenarios "$scenarios" --out "$out/reports" --no-progress > "$out/reproduce.log"

status=0
"$ratelab" check --scenarios "$scenarios" --reports "$baselines" --from "$out/reports" \
  --junit "$out/junit.xml" --summary-md "$out/summary.md" "$@" || status=$?

# The review page of the fresh reports, for the artifact (also on failure).
"$ratelab" report --out "$out/reports" > "$out/report.log" || status=$(( status == 0 ? 3 : status ))
exit "$status"
