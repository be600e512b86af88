//! What a decision scenario is checked for before anything runs: its
//! fields against each other, the watched key, and the work and memory
//! budget.

use super::*;

/// How the lab reads a trace (every option checked before anything
/// runs): the reader's options and the access-log spec, if any. On top of
/// [`TraceSpec::resolve`], what the lab reads differently from `size`: a
/// CSV's columns by their own names, `spread` on access logs only, a
/// log's options checked by building its parser, and the validation
/// fields ([`validation::check`]).
pub(crate) fn trace_reading(
    t: &crate::workload::trace::TraceSpec,
    seed: u64,
) -> std::result::Result<
    (
        crate::workload::trace::TraceOptions,
        Option<crate::workload::trace::LogSpec>,
    ),
    FieldError,
> {
    if let Some(c) = &t.columns {
        return Err(FieldError::new(
            "trace.columns",
            format!("{c}: the decision lab reads a CSV trace's time column by its name (t_ns, t_ms, t_s, time or timestamp) and `key`; with trace.format jsonl or an access-log format, name fields with trace.time_field and trace.key"),
        ));
    }
    let o = t.resolve(seed)?;
    match &o.log {
        Some(spec) => {
            crate::workload::trace::log::LogParser::new(spec)
                .map_err(|m| FieldError::new("trace", m))?;
        }
        None if t.spread.is_some() => {
            return Err(FieldError::new(
                "trace.spread",
                format!(
                    "applies to access logs with whole-second times (trace.format {})",
                    crate::workload::trace::log::whole_second_formats()
                ),
            ))
        }
        None => {}
    }
    validation::check(t)?;
    Ok((o.trace_options(), o.log))
}

/// Checks every field before anything is built.
pub(super) fn validate(scenario: &Scenario, p: &Params, ctx: &RunContext) -> Result<()> {
    refuse_unused_defaults(scenario, p)?;
    if p.policy.limit == 0 || p.policy.limit > u64::from(u32::MAX) {
        return Err(scenario.field_error(
            "policy.limit",
            format!("value {}: expected 1..=4294967295", p.policy.limit),
        ));
    }
    if p.policy.interval_ms == 0 || p.policy.interval_ms > 86_400_000 {
        return Err(scenario.field_error(
            "policy.interval_ms",
            format!("value {}: expected 1..=86400000", p.policy.interval_ms),
        ));
    }
    if p.policy.interval_ms * MILLI / p.policy.limit == 0 {
        return Err(scenario.field_error(
            "policy",
            format!(
                "{} per {} ms is more than one per nanosecond",
                p.policy.limit, p.policy.interval_ms
            ),
        ));
    }
    if let Some(e) = &p.epoch {
        if p.trace.is_some() {
            return Err(scenario.field_error(
                "epoch",
                format!("value {e:?}: a trace's times are absolute (its first request is the time origin); epoch applies to workloads"),
            ));
        }
        parse_epoch(e).map_err(|m| scenario.field_error("epoch", m))?;
    }
    match (&p.workload, &p.trace) {
        (Some(w), None) => w.validate(&scenario.path, "workload")?,
        (None, Some(t)) => {
            if t.path.is_empty() {
                return Err(scenario.field_error(
                    "trace.path",
                    "empty: expected a trace file (relative to the scenario) or - for standard input",
                ));
            }
            trace_reading(t, ctx.seed).map_err(|e| scenario.field_error(e.field, e.message))?;
        }
        _ => {
            return Err(
                scenario.field_error("workload", "expected exactly one of `workload` and `trace`")
            )
        }
    }
    for (i, s) in p.shapes.iter().enumerate() {
        let mem = EstimatorConfig::new(s.hashes, s.slots)
            .memory_bytes()
            .saturating_mul(2);
        if s.hashes == 0 || s.slots == 0 || s.hashes > 64 || mem > ctx.max_memory {
            return Err(scenario.field_error(
                format!("shapes[{i}]"),
                format!(
                    "{}x{}: expected 1..=64 hashes, >= 1 slot, at most {} for both windows",
                    s.hashes,
                    s.slots,
                    bytes_human(ctx.max_memory)
                ),
            ));
        }
    }
    if let Some(w) = &p.watch {
        if !w.from_s.is_finite() || w.from_s < 0.0 {
            return Err(scenario.field_error(
                "watch.from_s",
                format!("value {}: expected a finite number >= 0", w.from_s),
            ));
        }
        if let Some(wl) = &p.workload
            && w.from_s > wl.duration_s()
        {
            return Err(watch_after_end(scenario, w.from_s, wl.duration_s()));
        }
    }
    Ok(())
}

/// A watched key whose abuse starts after the run's end: its onset would be
/// empty and every limiter "never over".
pub(super) fn watch_after_end(scenario: &Scenario, from_s: f64, end_s: f64) -> Error {
    scenario.field_error(
        "watch.from_s",
        format!(
            "value {}: after the run's end ({end_s} s): expected a time within the run",
            crate::fleet::seconds_text(from_s)
        ),
    )
}

/// Refuses a workload over the work or memory budget; `limiters` counts the
/// candidates and the two exact limiters each request goes through.
pub(super) fn check_budget(
    scenario: &Scenario,
    p: &Params,
    ctx: &RunContext,
    limiters: usize,
) -> Result<()> {
    if let Some(w) = &p.workload {
        // Every request goes through each candidate and the two exact
        // limiters; per-key state lives in dense vectors indexed by key id.
        let events = w.max_events();
        ctx.check_work(
            scenario,
            "workload",
            events * limiters as f64,
            6.0,
            &format!("up to {events:.0} requests x {limiters} limiters"),
        )?;
        // The dense vectors grow to the largest key id drawn, not to the
        // number of distinct keys: a few requests over a large key space
        // (uniform, or a flat Zipf) reach ids near its end.
        let keys = w.key_space() as f64;
        ctx.check_memory(
            scenario,
            "workload",
            keys * PER_KEY_BYTES as f64,
            &format!("{keys:.0} keys of per-key limiter state"),
            "fewer keys",
        )?;
    } else if let Some(t) = &p.trace
        && let Some(lines) = lines_in_file(&super::source::trace_path(scenario, t))
    {
        // A trace's requests are known once it is read; a plain file's
        // are estimated from its size and its first lines, before any
        // request is replayed.
        ctx.check_work(
            scenario,
            "trace",
            lines * limiters as f64,
            6.0,
            &format!("about {lines:.0} requests (the file's size over its first lines' length) x {limiters} limiters"),
        )?;
    }
    Ok(())
}

/// About how many lines a plain (uncompressed, non-Parquet) regular file
/// holds: its size over the mean length of the lines in its first 64 KiB.
/// None where that cannot be known before reading it all: a pipe, stdin,
/// a folder of parts, a compressed or Parquet file, a failed read (the
/// reader says why).
fn lines_in_file(path: &std::path::Path) -> Option<f64> {
    use std::io::Read;
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    let mut head = Vec::with_capacity(1 << 16);
    std::fs::File::open(path)
        .ok()?
        .take(1 << 16)
        .read_to_end(&mut head)
        .ok()?;
    if head.is_empty() || !crate::workload::trace::input::is_plain_text(&head) {
        return None;
    }
    let newlines = memchr::memchr_iter(b'\n', &head).count().max(1);
    Some(meta.len() as f64 * newlines as f64 / head.len() as f64)
}

/// The error of a watched key no request has.
pub(super) fn unseen_watch(scenario: &Scenario, w: &Watch) -> Error {
    scenario.field_error(
        "watch.key",
        format!(
            "value {:?}: no request of the workload or trace has this key",
            w.key
        ),
    )
}

/// Whether a `model` field anywhere in `v` names `model` (a string, or a
/// list of them: a grid axis).
fn names_model(v: &serde_json::Value, model: &str) -> bool {
    use serde_json::Value;
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| {
            (k == "model"
                && (x.as_str() == Some(model)
                    || x.as_array()
                        .is_some_and(|a| a.iter().any(|y| y.as_str() == Some(model)))))
                || names_model(x, model)
        }),
        Value::Array(a) => a.iter().any(|x| names_model(x, model)),
        _ => false,
    }
}

/// `shapes` and `uber_slack` set the default candidates (and the entries of
/// their model): beside `limiters` or a `deployment` without such an
/// entry they would be ignored without a word, so they are refused.
fn refuse_unused_defaults(scenario: &Scenario, p: &Params) -> Result<()> {
    let (given, field) = match (&p.limiters, &p.deployment) {
        (Some(_), _) => (scenario.params.get("limiters"), "limiters"),
        (None, Some(_)) => (scenario.params.get("deployment"), "deployment.strategies"),
        (None, None) => return Ok(()),
    };
    let Some(given) = given else {
        return Ok(());
    };
    let shapes = scenario.params.get("shapes");
    if shapes
        .and_then(|s| s.as_array())
        .is_some_and(|a| !a.is_empty())
        && !names_model(given, "pingora_rate")
    {
        return Err(scenario.field_error(
            "shapes",
            format!(
                "{} shape(s) given, but {field} has no pingora_rate entry for them to shape (the default candidates are not run): expected \"shapes\": [] or no shapes",
                p.shapes.len()
            ),
        ));
    }
    if scenario.params.get("uber_slack").is_some() && !names_model(given, "uber_go") {
        return Err(scenario.field_error(
            "uber_slack",
            format!(
                "value {}: {field} has no uber_go entry to take it (the default candidates are not run); give its slack in the entry",
                p.uber_slack
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_files_lines_are_estimated_within_twice_and_others_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        // Lines whose length drifts along the file (short keys first,
        // long ones after the first 64 KiB): the estimate is still within
        // a factor of 2 of the count.
        let plain = dir.path().join("t.csv");
        let mut text = String::from("t_ms,key\n");
        for i in 0..40_000u64 {
            let key = if i < 8_000 {
                format!("k{i}")
            } else {
                format!("10.{}.{}.{}", i % 7, i % 251, i % 13)
            };
            text.push_str(&format!("{},{key}\n", 1_000 + i));
        }
        std::fs::write(&plain, &text).unwrap();
        let lines = text.lines().count() as f64;
        let est = lines_in_file(&plain).unwrap();
        assert!(est > lines / 2.0 && est < lines * 2.0, "{est} for {lines}");
        // A compressed file, a folder, a missing file: not estimated.
        let gz = dir.path().join("t.csv.gz");
        std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
        assert_eq!(lines_in_file(&gz), None);
        assert_eq!(lines_in_file(dir.path()), None);
        assert_eq!(lines_in_file(&dir.path().join("none")), None);
    }
}
