//! Validation against the deployed limiter: a trace that names the field
//! holding what the limiter in production answered (`"outcome"`) is read
//! whole, and every candidate's decisions are compared with those answers.
//!
//! What a value means ([`OutcomeReader`]), fixed by the field's first
//! value:
//! * an HTTP status (`$status`, `%RESPONSE_CODE%`): 429 and 503 are denied
//!   (`denied_values` replaces the list);
//! * nginx's `$limit_req_status`: `PASSED` and `DELAYED` admitted,
//!   `REJECTED` denied; `DELAYED_DRY_RUN` admitted and `REJECTED_DRY_RUN`
//!   **denied** — what nginx would have done. In `limit_req_dry_run on`
//!   mode nginx still runs the lookup (`ngx_http_limit_req_lookup`), which
//!   moves a key's excess exactly as it would without dry run and leaves a
//!   rejected request's node as it was, so the zone's state is the one a
//!   real limiter would have and the would-be decisions are comparable
//!   with the model's, request by request;
//! * Envoy's `%RESPONSE_FLAGS%`: denied when the flags hold `RL`;
//! * anything else with `denied_values`: denied when listed.
//!
//! `-` (an empty variable: no `limit_req` ran, no response flag) is
//! admitted. Any other value is an error naming the line and the value.
//!
//! Time: with `"time_is": "end"` and a `duration` field (nginx's
//! `$request_time`), a request arrived at `time − duration`. Such a log is
//! written in completion order, so the lines are sorted by arrival (stable:
//! log order among equal arrivals); requests of one key whose arrivals are
//! equal at the log's resolution cannot be ordered from the log, so each
//! such group is compared by how many it admitted, never by ordering its
//! requests by the outcome being validated. A log in processing order
//! (`time_is` `"start"`, the default) is compared request by request in
//! log order.
//!
//! Each disagreement is classified: **clock step** when the model's
//! decision sits at its own clock granularity
//! ([`crate::model::Admit::clock_step`]: nginx's excess within one
//! millisecond's leak of the burst), **follow-on** when an earlier request
//! of the same key disagreed (the model's state and the deployed one have
//! parted), else **unexplained**.

use super::TraceSpec;
use crate::clock::{Nanos, SECOND};
use crate::error::{Error, Result};
use crate::scenario::Scenario;
use crate::workload::trace::log::{LogParser, LogSpec, Parsed};
use crate::workload::trace::{parse_decimal_ns, KeyInterner};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::BufRead;

/// How the outcome field's values are read (fixed by its first value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeKind {
    /// An HTTP status; denied when in the denied list (429, 503).
    Status,
    /// nginx `$limit_req_status`.
    LimitReqStatus,
    /// Envoy `%RESPONSE_FLAGS%`: denied with `RL`.
    EnvoyFlags,
    /// Any value; denied when in `denied_values`.
    Listed,
}

impl OutcomeKind {
    /// What the report says the field held.
    pub fn describe(self) -> &'static str {
        match self {
            OutcomeKind::Status => "HTTP status",
            OutcomeKind::LimitReqStatus => "nginx $limit_req_status",
            OutcomeKind::EnvoyFlags => "Envoy %RESPONSE_FLAGS%",
            OutcomeKind::Listed => "values listed in denied_values",
        }
    }
}

const NGINX_WORDS: [&str; 5] = [
    "PASSED",
    "DELAYED",
    "REJECTED",
    "DELAYED_DRY_RUN",
    "REJECTED_DRY_RUN",
];

/// Reads an outcome field's values as admitted or denied.
///
/// # Examples
/// ```
/// use ratelab::lab::decision::validation::{OutcomeKind, OutcomeReader};
/// let mut nginx = OutcomeReader::new(None);
/// assert_eq!(nginx.admitted("PASSED"), Ok(true));
/// assert_eq!(nginx.admitted("REJECTED_DRY_RUN"), Ok(false));
/// assert_eq!(nginx.kind(), Some(OutcomeKind::LimitReqStatus));
/// assert!(nginx.admitted("200").is_err());
/// let mut status = OutcomeReader::new(None);
/// assert_eq!(status.admitted("503"), Ok(false));
/// assert_eq!(status.admitted("200"), Ok(true));
/// let mut envoy = OutcomeReader::new(None);
/// assert_eq!(envoy.admitted("UO,RL"), Ok(false));
/// assert_eq!(envoy.admitted("-"), Ok(true));
/// let mut listed = OutcomeReader::new(Some(vec!["deny".into()]));
/// assert_eq!(listed.admitted("deny"), Ok(false));
/// assert_eq!(listed.admitted("ok"), Ok(true));
/// ```
#[derive(Clone, Debug)]
pub struct OutcomeReader {
    denied: Option<Vec<String>>,
    kind: Option<OutcomeKind>,
}

impl OutcomeReader {
    /// A reader; `denied`: the values meaning denied (statuses, or any
    /// field's values), instead of the defaults.
    pub fn new(denied: Option<Vec<String>>) -> Self {
        Self { denied, kind: None }
    }

    /// How the values are read (None until a value other than `-`).
    pub fn kind(&self) -> Option<OutcomeKind> {
        self.kind
    }

    fn detect(&self, v: &str) -> Option<OutcomeKind> {
        if is_status(v) {
            return Some(OutcomeKind::Status);
        }
        if self.denied.is_some() {
            return Some(OutcomeKind::Listed);
        }
        if NGINX_WORDS.contains(&v) {
            return Some(OutcomeKind::LimitReqStatus);
        }
        if is_envoy_flags(v) {
            return Some(OutcomeKind::EnvoyFlags);
        }
        None
    }

    /// Whether the deployed limiter admitted a request whose field held
    /// `v`; Err: what is wrong with the value.
    pub fn admitted(&mut self, v: &str) -> std::result::Result<bool, String> {
        let v = v.trim();
        if v.is_empty() {
            return Err("empty: expected what the deployed limiter answered".into());
        }
        let kind = match self.kind {
            Some(k) => k,
            None if v == "-" && self.denied.is_none() => return Ok(true),
            None => {
                let k = self.detect(v).ok_or_else(|| {
                    format!("value {v:?}: expected an HTTP status, nginx $limit_req_status (PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN) or Envoy %RESPONSE_FLAGS% (RL = rate limited); give trace.denied_values to read any other field")
                })?;
                self.kind = Some(k);
                k
            }
        };
        match kind {
            OutcomeKind::Listed => Ok(!self.listed(v)),
            OutcomeKind::Status => {
                if !is_status(v) {
                    return Err(format!(
                        "value {v:?}: expected an HTTP status (the field's first value was one)"
                    ));
                }
                Ok(match &self.denied {
                    Some(_) => !self.listed(v),
                    None => v != "429" && v != "503",
                })
            }
            OutcomeKind::LimitReqStatus => match v {
                "-" | "PASSED" | "DELAYED" | "DELAYED_DRY_RUN" => Ok(true),
                "REJECTED" | "REJECTED_DRY_RUN" => Ok(false),
                _ => Err(format!("value {v:?}: expected nginx $limit_req_status: PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN or -")),
            },
            OutcomeKind::EnvoyFlags => {
                if v != "-" && !is_envoy_flags(v) {
                    return Err(format!(
                        "value {v:?}: expected Envoy %RESPONSE_FLAGS% (upper-case flags separated by commas, or -)"
                    ));
                }
                Ok(!v.split(',').any(|f| f == "RL"))
            }
        }
    }

    fn listed(&self, v: &str) -> bool {
        self.denied
            .as_ref()
            .is_some_and(|d| d.iter().any(|x| x == v))
    }
}

fn is_status(v: &str) -> bool {
    v.len() == 3
        && v.bytes().all(|b| b.is_ascii_digit())
        && (b'1'..=b'5').contains(&v.as_bytes()[0])
}

fn is_envoy_flags(v: &str) -> bool {
    !NGINX_WORDS.contains(&v)
        && v.split(',')
            .all(|f| (1..=6).contains(&f.len()) && f.bytes().all(|b| b.is_ascii_uppercase()))
}

/// A trace read whole for validation: its requests in arrival order, what
/// the deployed limiter answered to each, and the groups compared by count.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// (arrival, ns since the epoch; key id; weight), in arrival order.
    pub(crate) events: Vec<(Nanos, u32, u64)>,
    /// Per event: the deployed limiter admitted it.
    pub(crate) admitted: Vec<bool>,
    /// Per event: its line in the file.
    pub(crate) lines: Vec<u64>,
    /// Per event: its tie group (index into `group_len`), or `NO_GROUP`.
    pub(crate) group: Vec<u32>,
    /// Requests of each tie group.
    pub(crate) group_len: Vec<u32>,
    /// Keys, ids in order of first arrival.
    pub(crate) keys: KeyInterner,
    /// Per key id: the event it first appeared in.
    pub(crate) first_seen: Vec<u64>,
    /// How the outcome field was read (None: every value was `-`).
    pub(crate) kind: Option<OutcomeKind>,
    /// The outcome field, the duration field (time_is end).
    pub(crate) field: String,
    pub(crate) duration: Option<String>,
    /// How the log was read (format, key, time).
    pub(crate) read: String,
}

/// An event outside every tie group.
pub(crate) const NO_GROUP: u32 = u32::MAX;

impl Loaded {
    /// Requests in tie groups.
    pub(crate) fn tie_requests(&self) -> u64 {
        self.group_len.iter().map(|&n| u64::from(n)).sum()
    }
}

/// Whether a trace asks for validation (or for arrival times from
/// durations, which needs the log read whole too).
pub(crate) fn wanted(t: &TraceSpec) -> bool {
    t.outcome.is_some() || t.time_is.is_some() || t.duration.is_some()
}

/// Where an error about a validation field goes: the field as a scenario
/// names it (`trace.outcome`) and the message, to an error naming it as
/// the user gave it (the scenario's field, or a command-line flag).
pub(crate) type FieldError<'a> = &'a dyn Fn(&str, String) -> Error;

fn ferr(field_error: FieldError, field: impl AsRef<str>, m: impl Into<String>) -> Error {
    field_error(field.as_ref(), m.into())
}

/// Checks the validation fields of a trace in a scenario.
pub(crate) fn check(scenario: &Scenario, t: &TraceSpec) -> Result<()> {
    check_with(t, &|f, m| scenario.field_error(f, m))
}

/// Checks the validation fields of a trace (before anything runs).
pub(crate) fn check_with(t: &TraceSpec, field_error: FieldError) -> Result<()> {
    if !wanted(t) {
        if t.denied_values.is_some() {
            return Err(field_error(
                "trace.denied_values",
                "applies with trace.outcome (the field holding what the deployed limiter answered)"
                    .into(),
            ));
        }
        return Ok(());
    }
    let csv = matches!(t.format.as_deref(), None | Some("csv"));
    if csv
        && crate::workload::trace::TraceFormat::from_path(
            &crate::workload::trace::input::without_compression(std::path::Path::new(&t.path)),
        ) != crate::workload::trace::TraceFormat::Csv
    {
        let field = if t.outcome.is_some() {
            "trace.outcome"
        } else {
            "trace.time_is"
        };
        return Err(ferr(
            field_error,
            field,
            "a JSON Lines trace is compared as an access log: give \"format\": \"jsonl\" (time and key fields: time_field, key)",
        ));
    }
    match (t.time_is.as_deref(), &t.duration) {
        (None | Some("start"), None) | (Some("end"), Some(_)) => {}
        (Some("end"), None) => {
            return Err(ferr(
                field_error,
                "trace.time_is",
                "\"end\" needs trace.duration, the field holding how long each request took (nginx: request_time)",
            ))
        }
        (None | Some("start"), Some(_)) => {
            return Err(ferr(
                field_error,
                "trace.duration",
                "applies with \"time_is\": \"end\" (arrival = time - duration)",
            ))
        }
        (Some(v), _) => {
            return Err(ferr(
                field_error,
                "trace.time_is",
                format!("value {v:?}: expected \"start\" (the default: the time is the request's arrival) or \"end\""),
            ))
        }
    }
    for (given, field) in [
        (t.spread.is_some(), "trace.spread"),
        (t.skip_late, "trace.skip_late"),
    ] {
        if given {
            return Err(ferr(
                field_error,
                field,
                "not with trace.outcome or trace.time_is: a validated log is read whole, every line compared",
            ));
        }
    }
    if let Some(d) = &t.denied_values
        && (d.is_empty() || d.iter().any(|v| v.trim().is_empty()))
    {
        return Err(ferr(
            field_error,
            "trace.denied_values",
            "expected a non-empty list of non-empty values",
        ));
    }
    Ok(())
}

/// Reads the scenario's trace whole (it asked for validation): every
/// line's time, key, weight and outcome, sorted by arrival; at most
/// `max_keys` distinct keys.
pub(crate) fn load(
    scenario: &Scenario,
    t: &TraceSpec,
    spec: Option<&LogSpec>,
    max_keys: usize,
) -> Result<Loaded> {
    let path = if crate::workload::trace::input::is_stdin(std::path::Path::new(&t.path)) {
        std::path::PathBuf::from("-")
    } else {
        scenario.resolve(&t.path)
    };
    load_from(&path, t, spec, max_keys, &|f, m| scenario.field_error(f, m))
}

/// One line of a validated trace: its number, time, key, weight, and the
/// outcome and duration fields' text (when asked for).
type LineFn<'a> = dyn FnMut(u64, Nanos, &str, u64, Option<&str>, Option<&str>) -> Result<()> + 'a;

/// Reads an access log's lines into `each`; returns how it was read
/// (format, key, time field) and the time field's name.
fn log_lines(
    path: &std::path::Path,
    t: &TraceSpec,
    spec: &LogSpec,
    field_error: FieldError,
    each: &mut LineFn,
) -> Result<(String, String)> {
    let at = |line: u64, m: String| Error::input_at(path, format!("line {line}"), m);
    let mut parser = LogParser::new(spec).map_err(|m| ferr(field_error, "trace", m))?;
    let row = crate::workload::trace::log::row(&spec.format)
        .map_err(|m| ferr(field_error, "trace.format", m))?;
    let mut side = (row.build)(spec).map_err(|m| ferr(field_error, "trace", m))?;
    let mut input = crate::workload::trace::input::open(path)?;
    let mut text = String::new();
    let mut held = String::new();
    let mut fields: Option<(Option<usize>, Option<usize>)> = None;
    let mut line_no = 0u64;
    loop {
        text.clear();
        let n = input.read_line(&mut text).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let line = text.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        let (t_log, key_at, w) = match parser.parse(line, &mut held).map_err(|m| at(line_no, m))? {
            Parsed::Header => {
                side.header(line).map_err(|m| at(line_no, m))?;
                continue;
            }
            Parsed::Event(t, k, w) | Parsed::Elsewhere(t, k, w) => (t, k, w),
        };
        side.header(line).map_err(|m| at(line_no, m))?;
        if let Some((tf, true)) = parser.time_field() {
            return Err(ferr(
                field_error,
                "trace.time_field",
                format!("the time field {tf:?} is whole seconds: comparing decisions with the deployed limiter's needs the log's sub-second times (nginx: msec; set trace.time_field)"),
            ));
        }
        let (oi, di) = match fields {
            Some(f) => f,
            None => {
                let mut resolve = |name: &Option<String>, what: &str| -> Result<Option<usize>> {
                    match name {
                        None => Ok(None),
                        Some(n) => side
                            .field(n.strip_prefix('$').unwrap_or(n))
                            .map(Some)
                            .ok_or_else(|| {
                                ferr(
                                    field_error,
                                    format!("trace.{what}"),
                                    format!(
                                        "value {n:?}: the {} format has no such field (fields: {})",
                                        spec.format,
                                        side.names().join(" ")
                                    ),
                                )
                            }),
                    }
                };
                let f = (
                    resolve(&t.outcome, "outcome")?,
                    resolve(&t.duration, "duration")?,
                );
                fields = Some(f);
                f
            }
        };
        let key = match &key_at {
            Some(r) => line.get(r.clone()).unwrap_or_default(),
            None => held.as_str(),
        };
        let split = side.split(line).map_err(|m| at(line_no, m))?;
        each(
            line_no,
            t_log,
            key,
            w,
            oi.map(|i| split.get(i)),
            di.map(|i| split.get(i)),
        )?;
    }
    let tf = parser
        .time_field()
        .map(|(f, _)| f.to_string())
        .unwrap_or_default();
    Ok((
        format!("{}, key {}", parser.format_name(), parser.key_text()),
        tf,
    ))
}

/// Reads a CSV trace's rows into `each`: the time column (`t_ns`, `t_ms`,
/// `t_s`, or `time`/`timestamp` in `unit`), `key`, an optional `weight`,
/// and the outcome and duration columns; returns how it was read and the
/// time column's name.
fn csv_lines(
    path: &std::path::Path,
    t: &TraceSpec,
    field_error: FieldError,
    each: &mut LineFn,
) -> Result<(String, String)> {
    use crate::workload::trace::parse::{parse_time, parse_weight, time_column};
    let unit = match &t.unit {
        Some(u) => u
            .parse::<crate::workload::trace::TimeUnit>()
            .map_err(|m| ferr(field_error, "trace.unit", m))?,
        None => crate::workload::trace::TimeUnit::Ns,
    };
    let at = |line: u64, m: String| Error::input_at(path, format!("line {line}"), m);
    let input = crate::workload::trace::input::open(path)?;
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(input);
    let header: Vec<String> = r
        .headers()
        .map_err(|e| at(1, e.to_string()))?
        .iter()
        .map(str::to_string)
        .collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let (time, tunit) = header
        .iter()
        .enumerate()
        .find_map(|(i, h)| time_column(h, unit).map(|u| (i, u)))
        .ok_or_else(|| {
            at(
                1,
                format!(
                    "header {:?}: expected a time column (t_ns, t_ms, t_s, time or timestamp)",
                    header.join(",")
                ),
            )
        })?;
    let key = col("key").ok_or_else(|| {
        at(
            1,
            format!("header {:?}: expected a key column", header.join(",")),
        )
    })?;
    let weight = col("weight").or_else(|| col("n"));
    let named = |name: &Option<String>, what: &str| -> Result<Option<usize>> {
        match name {
            None => Ok(None),
            Some(n) => col(n).map(Some).ok_or_else(|| {
                ferr(
                    field_error,
                    format!("trace.{what}"),
                    format!(
                        "value {n:?}: the CSV header has no such column (columns: {})",
                        header.join(",")
                    ),
                )
            }),
        }
    };
    let (oi, di) = (
        named(&t.outcome, "outcome")?,
        named(&t.duration, "duration")?,
    );
    let mut rec = csv::StringRecord::new();
    loop {
        match r.read_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                return Err(at(line, e.to_string()));
            }
        }
        let line = rec.position().map_or(0, |p| p.line());
        if rec.len() != header.len() {
            return Err(at(
                line,
                format!("{} fields: the header has {}", rec.len(), header.len()),
            ));
        }
        let t_log = parse_time(rec.get(time).unwrap_or_default(), tunit)
            .map_err(|m| at(line, format!("{} {m}", header[time])))?;
        let w = match weight {
            Some(i) => parse_weight(rec.get(i).unwrap_or_default()).map_err(|m| at(line, m))?,
            None => 1,
        };
        each(
            line,
            t_log,
            rec.get(key).unwrap_or_default(),
            w,
            oi.and_then(|i| rec.get(i)),
            di.and_then(|i| rec.get(i)),
        )?;
    }
    Ok(("csv".to_string(), header[time].clone()))
}

/// Reads the trace at `path` whole, as [`load`] does (`spec`: an access
/// log's, None for CSV); errors about a field go through `field_error`.
pub(crate) fn load_from(
    path: &std::path::Path,
    t: &TraceSpec,
    spec: Option<&LogSpec>,
    max_keys: usize,
    field_error: FieldError,
) -> Result<Loaded> {
    let at = |line: u64, m: String| Error::input_at(path, format!("line {line}"), m);
    let mut outcome = OutcomeReader::new(t.denied_values.clone());
    let mut raw_keys = KeyInterner::new();
    // (arrival, raw key id, weight, admitted, line)
    let mut raw: Vec<(Nanos, u32, u64, bool, u64)> = Vec::new();
    let window = t.sort_window_ms.map(|ms| ms.saturating_mul(1_000_000));
    let mut newest: Nanos = 0;
    let oname = t.outcome.as_deref().unwrap_or_default();
    let dname = t.duration.as_deref().unwrap_or_default();
    let mut each = |line_no: u64,
                    t_log: Nanos,
                    key: &str,
                    w: u64,
                    out: Option<&str>,
                    dur: Option<&str>|
     -> Result<()> {
        let admitted = match out {
            Some(v) => outcome
                .admitted(v)
                .map_err(|m| at(line_no, format!("field {oname}: {m}")))?,
            None => true,
        };
        let arrival = match dur {
            Some(d) => {
                let ns = parse_decimal_ns(d.trim(), SECOND).map_err(|m| {
                    at(line_no, format!("field {dname}: value {d:?}: {m} (expected seconds, as nginx's $request_time)"))
                })?;
                t_log.checked_sub(ns).ok_or_else(|| {
                    at(
                        line_no,
                        format!("field {dname}: value {d:?}: longer than the time since the epoch"),
                    )
                })?
            }
            None => {
                if let Some(last) = raw.last().map(|r| r.0)
                    && t_log < last
                    && window.is_none_or(|w| t_log + w < newest)
                {
                    return Err(at(line_no, match window {
                            None => format!("time {t_log} ns is earlier than the previous line's {last} ns: a log in processing order must be sorted by time (allow reordering within a window: trace.sort_window_ms; a log written at completion: \"time_is\": \"end\" with trace.duration)"),
                            Some(w) => format!("time {t_log} ns is more than the reorder window ({w} ns) behind line times already read ({newest} ns)"),
                        }));
                }
                newest = newest.max(t_log);
                t_log
            }
        };
        let too_many = |n: usize| {
            at(
                line_no,
                format!("distinct key number {n}: more keys than --max-memory allows"),
            )
        };
        let id = raw_keys
            .intern(key)
            .ok_or_else(|| too_many(raw_keys.len() + 1))?;
        if raw_keys.len() > max_keys {
            return Err(too_many(raw_keys.len()));
        }
        raw.push((arrival, id, w, admitted, line_no));
        Ok(())
    };
    let (mut read, tf) = match spec {
        Some(spec) => log_lines(path, t, spec, field_error, &mut each)?,
        None => csv_lines(path, t, field_error, &mut each)?,
    };
    match &t.duration {
        Some(d) => read.push_str(&format!(", arrival = {tf} - {d} (time_is end)")),
        None => read.push_str(&format!(", time {tf}")),
    }
    if raw.is_empty() {
        return Err(Error::input_at(
            path,
            "file",
            "no requests: an empty trace (or only a header) has nothing to decide",
        ));
    }
    // Stable: equal arrivals keep the log's order.
    raw.sort_by_key(|r| r.0);
    let mut out = Loaded {
        kind: outcome.kind(),
        field: t.outcome.clone().unwrap_or_default(),
        duration: t.duration.clone(),
        ..Loaded::default()
    };
    let mut remap = vec![u32::MAX; raw_keys.len()];
    for (i, &(arr, k, w, adm, line)) in raw.iter().enumerate() {
        let id = &mut remap[k as usize];
        if *id == u32::MAX {
            *id = out
                .keys
                .intern(raw_keys.name(k).unwrap_or_default())
                .unwrap_or(u32::MAX);
            out.first_seen.push(i as u64);
        }
        out.events.push((arr, *id, w));
        out.admitted.push(adm);
        out.lines.push(line);
    }
    out.group = vec![NO_GROUP; out.events.len()];
    if t.duration.is_some() {
        // Requests of one key with equal arrivals: contiguous in time, so
        // each run of equal times is grouped by key.
        let mut i = 0;
        while i < out.events.len() {
            let mut j = i;
            while j < out.events.len() && out.events[j].0 == out.events[i].0 {
                j += 1;
            }
            if j - i > 1 {
                let mut by_key: HashMap<u32, Vec<usize>> = HashMap::new();
                let mut order = Vec::new();
                for e in i..j {
                    let k = out.events[e].1;
                    by_key
                        .entry(k)
                        .or_insert_with(|| {
                            order.push(k);
                            Vec::new()
                        })
                        .push(e);
                }
                for k in order {
                    let members = &by_key[&k];
                    if members.len() > 1 {
                        let g = out.group_len.len() as u32;
                        out.group_len.push(members.len() as u32);
                        for &e in members {
                            out.group[e] = g;
                        }
                    }
                }
            }
            i = j;
        }
    }
    out.read = read;
    Ok(out)
}

/// A disagreement as the report lists it.
#[derive(Debug, Clone)]
struct Disagreement {
    t: Nanos,
    line: u64,
    key: u32,
    model_admits: bool,
    class: &'static str,
    group: Option<u32>,
}

/// A tie group's decisions so far.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    seen: u32,
    model: u32,
    deployed: u32,
    step: bool,
    first: usize,
}

/// How many disagreements the report lists per candidate.
const FIRST: usize = 5;

/// One candidate's agreement with the deployed limiter.
#[derive(Debug, Clone, Default)]
pub(crate) struct Agreement {
    agree: u64,
    total: u64,
    /// [model admits, model denies] x [deployed admitted, deployed denied].
    confusion: [[u64; 2]; 2],
    clock_step: u64,
    follow_on: u64,
    unexplained: u64,
    /// The model answered [`crate::model::Admit::clock_step`].
    checked: bool,
    parted: Vec<bool>,
    pending: HashMap<u32, Pending>,
    first: Vec<Disagreement>,
}

impl Agreement {
    /// A candidate's tally; `checked`: it classifies clock steps.
    pub(crate) fn new(checked: bool) -> Self {
        Self {
            checked,
            ..Self::default()
        }
    }

    /// Event `i`'s decision by the model, and whether it sat at the model's
    /// clock granularity.
    pub(crate) fn record(&mut self, l: &Loaded, i: usize, model_admits: bool, step: bool) {
        let g = l.group[i];
        if g == NO_GROUP {
            self.judge(
                l,
                i,
                1,
                u32::from(model_admits),
                u32::from(l.admitted[i]),
                step,
                None,
            );
            return;
        }
        let p = self.pending.entry(g).or_insert(Pending {
            first: i,
            ..Pending::default()
        });
        p.seen += 1;
        p.model += u32::from(model_admits);
        p.deployed += u32::from(l.admitted[i]);
        p.step |= step;
        if p.seen == l.group_len[g as usize] {
            let p = *p;
            self.pending.remove(&g);
            self.judge(l, p.first, p.seen, p.model, p.deployed, p.step, Some(g));
        }
    }

    /// `n` requests (one, or a tie group starting at event `i`) of which
    /// the model admitted `model` and the deployed limiter `deployed`.
    #[allow(clippy::too_many_arguments)]
    fn judge(
        &mut self,
        l: &Loaded,
        i: usize,
        n: u32,
        model: u32,
        deployed: u32,
        step: bool,
        group: Option<u32>,
    ) {
        let (n, m, d) = (u64::from(n), u64::from(model), u64::from(deployed));
        self.total += n;
        self.confusion[0][0] += m.min(d);
        self.confusion[1][1] += (n - m).min(n - d);
        self.confusion[0][1] += m.saturating_sub(d);
        self.confusion[1][0] += d.saturating_sub(m);
        let wrong = m.abs_diff(d);
        self.agree += n - wrong;
        if wrong == 0 {
            return;
        }
        let key = l.events[i].1 as usize;
        if key >= self.parted.len() {
            self.parted.resize(key + 1, false);
        }
        let class = if step {
            self.clock_step += wrong;
            "clock step"
        } else if self.parted[key] {
            self.follow_on += wrong;
            "follow-on"
        } else {
            self.unexplained += wrong;
            "unexplained"
        };
        self.parted[key] = true;
        if self.first.len() < FIRST {
            self.first.push(Disagreement {
                t: l.events[i].0,
                line: l.lines[i],
                key: key as u32,
                model_admits: m > d,
                class,
                group,
            });
        }
    }

    /// Requests agreed with, of all.
    pub(crate) fn agree_pct(&self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            100.0 * self.agree as f64 / self.total as f64
        }
    }

    /// The candidate's entry of `validation` in report.json.
    pub(crate) fn json(&self, name: &str, l: &Loaded, t0: Nanos) -> Value {
        let first: Vec<Value> = self
            .first
            .iter()
            .map(|d| {
                json!({
                    "t_s": (d.t - t0) as f64 / SECOND as f64,
                    "t_ns": d.t,
                    "line": d.line,
                    "key": l.keys.name(d.key).unwrap_or_default(),
                    "model": if d.model_admits { "admits" } else { "denies" },
                    "deployed": if d.model_admits { "denied" } else { "admitted" },
                    "class": d.class,
                    "tie_group": d.group.map(|g| l.group_len[g as usize]),
                })
            })
            .collect();
        json!({
            "algorithm": name,
            "agree": self.agree,
            "total": self.total,
            "agree_pct": self.agree_pct(),
            "confusion": {
                "model_admits_deployed_admitted": self.confusion[0][0],
                "model_admits_deployed_denied": self.confusion[0][1],
                "model_denies_deployed_admitted": self.confusion[1][0],
                "model_denies_deployed_denied": self.confusion[1][1],
            },
            "disagree": self.total - self.agree,
            "clock_step": if self.checked { json!(self.clock_step) } else { Value::Null },
            "follow_on": self.follow_on,
            "unexplained": self.unexplained,
            "first_disagreements": first,
        })
    }

    /// The candidate's row of the validation table.
    pub(crate) fn cells(&self, name: &str, l: &Loaded, t0: Nanos) -> Vec<String> {
        let first = self
            .first
            .first()
            .map(|d| {
                format!(
                    "{:.3} s, line {}, key {} ({})",
                    (d.t - t0) as f64 / SECOND as f64,
                    d.line,
                    l.keys.name(d.key).unwrap_or_default(),
                    d.class
                )
            })
            .unwrap_or_else(|| "-".into());
        vec![
            name.to_string(),
            format!("{}/{}", self.agree, self.total),
            crate::report::fmt::pct_scaled(self.agree_pct()),
            self.confusion[0][0].to_string(),
            self.confusion[0][1].to_string(),
            self.confusion[1][0].to_string(),
            self.confusion[1][1].to_string(),
            if self.checked {
                self.clock_step.to_string()
            } else {
                "-".into()
            },
            self.follow_on.to_string(),
            self.unexplained.to_string(),
            first,
        ]
    }
}

/// The validation table's header.
pub(crate) const HEADER: [&str; 11] = [
    "algorithm",
    "agree",
    "agree %",
    "admits, deployed admitted",
    "admits, deployed denied",
    "denies, deployed admitted",
    "denies, deployed denied",
    "clock step",
    "follow-on",
    "unexplained",
    "first disagreement",
];

/// What the report says about the validated log (`validation_source` in
/// report.json).
pub(crate) fn source_json(l: &Loaded) -> Value {
    let denied = l.events.len() as u64 - l.admitted.iter().filter(|&&a| a).count() as u64;
    json!({
        "outcome": l.field,
        "values": l.kind.map(OutcomeKind::describe),
        "deployed_denied": denied,
        "time_is": if l.duration.is_some() { "end" } else { "start" },
        "duration": l.duration,
        "tie_groups": l.group_len.len(),
        "tie_requests": l.tie_requests(),
        "compared": if l.duration.is_some() {
            "request by request in arrival order; requests of one key with equal arrivals (the log, written at completion, cannot order them) as a group, by how many it admitted"
        } else {
            "request by request in log order"
        },
    })
}

/// The paragraph table.md gives before the validation table.
pub(crate) fn markdown_intro(l: &Loaded) -> String {
    let denied = l.events.len() - l.admitted.iter().filter(|&&a| a).count();
    let mut s = format!(
        "## Agreement with the deployed limiter\n\nThe log's field `{}` ({}) says what the limiter in production answered: it denied {} of {} requests. Each candidate's decision is compared with it: `agree` = requests decided the same way; the four counts are the model's decision (admits/denies) against the deployed one. A disagreement is a `clock step` when the model's decision sits at its own clock granularity (nginx: the excess within one millisecond's leak of the burst; nginx reads CLOCK_MONOTONIC in whole ms, out of phase with the wall-clock `$msec` it logs), a `follow-on` when an earlier request of the same key disagreed, else `unexplained`; `-`: the model has no clock-step check.\n\n",
        l.field,
        l.kind.map_or("every value -", OutcomeKind::describe),
        denied,
        l.events.len(),
    );
    match &l.duration {
        Some(d) => s.push_str(&format!(
            "Arrival = time − `{d}`: the log was written as requests completed, sorted here by arrival. {} {} of one key with equal arrivals ({} requests) cannot be ordered from the log: each is compared by how many it admitted (never ordered by the outcome being validated).\n\n",
            l.group_len.len(),
            crate::report::fmt::noun(l.group_len.len() as u64, "group", "groups"),
            l.tie_requests(),
        )),
        None => s.push_str("The log is in processing order: compared request by request in log order.\n\n"),
    }
    s
}

/// The line `run` prints: the candidate agreeing best with the deployed
/// limiter (the first such in table order), and the unexplained
/// disagreements over all candidates.
pub(crate) fn console_line(
    l: &Loaded,
    cands: &[super::Candidate],
    agreements: &[Agreement],
    more: &str,
) -> String {
    let mut best: Option<(&super::Candidate, &Agreement)> = None;
    for (c, a) in cands.iter().zip(agreements) {
        if best.is_none_or(|(_, b)| a.agree > b.agree) {
            best = Some((c, a));
        }
    }
    let Some((c, a)) = best else {
        return String::new();
    };
    format!(
        "deployed limiter ({}): best agreement {} {}/{} ({}; {} clock step, {} follow-on, {} unexplained){more}\n",
        l.field,
        c.name,
        a.agree,
        a.total,
        crate::report::fmt::pct_scaled(a.agree_pct()),
        if a.checked { a.clock_step.to_string() } else { "-".into() },
        a.follow_on,
        a.unexplained,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::RunContext;

    const FORMAT: &str = "$msec $request_time $limit_req_status $status $remote_addr";

    /// Runs the decision lab on `log` (lines of FORMAT) with `trace` fields
    /// added and the given limiters.
    fn run(log: &str, trace: Value, limiters: Value) -> Result<crate::report::Output> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("access.log"), log).unwrap();
        let mut t = json!({"path": "access.log", "format": "nginx", "log_format": FORMAT});
        for (k, v) in trace.as_object().unwrap() {
            t[k] = v.clone();
        }
        let s = json!({"name": "v", "kind": "decision_accuracy", "seed": 1,
            "policy": {"limit": 10, "interval_ms": 1000}, "shapes": [],
            "trace": t, "limiters": limiters});
        let path = dir.path().join("v.json");
        let scenario = Scenario::parse(&path, &s.to_string())?;
        crate::kinds::run(&scenario, &RunContext::for_scenario(&scenario))
    }

    fn nodelay() -> Value {
        json!([{"model": "nginx_limit_req", "burst": 0, "nodelay": true, "rate_r_s": 10}])
    }

    #[test]
    fn agreement_confusion_and_classes_on_a_nodelay_log() {
        // 10r/s, no burst: one request per 100 ms. The log says line 3
        // (80 ms after line 1) was passed; the model rejects it (excess
        // 1000 - 800 + 1000 > 0): a disagreement 20 ms from the limit, not
        // a clock step. Line 4 then disagrees too: a follow-on.
        let log = "\
1700000000.000 0.000 PASSED 200 10.0.0.1
1700000000.050 0.000 REJECTED 503 10.0.0.1
1700000000.080 0.000 PASSED 200 10.0.0.1
1700000000.170 0.000 REJECTED 503 10.0.0.1
1700000000.500 0.000 PASSED 200 10.0.0.2
";
        let out = run(log, json!({"outcome": "limit_req_status"}), nodelay()).unwrap();
        let v = &out.json["validation"][0];
        assert_eq!(v["agree"], 3);
        assert_eq!(v["total"], 5);
        assert_eq!(v["confusion"]["model_denies_deployed_admitted"], 1);
        assert_eq!(v["confusion"]["model_admits_deployed_denied"], 1);
        assert_eq!(v["clock_step"], 0);
        assert_eq!(v["follow_on"], 1);
        assert_eq!(v["unexplained"], 1);
        assert_eq!(v["first_disagreements"][0]["line"], 3);
        assert_eq!(v["first_disagreements"][1]["class"], "follow-on");
        assert_eq!(out.json["validation_source"]["time_is"], "start");
    }

    #[test]
    fn a_disagreement_one_millisecond_from_the_limit_is_a_clock_step() {
        // 10r/s: 100 ms after an admitted request the excess is exactly 0
        // (admitted); 99 ms after it would be 10 thousandths (rejected).
        // nginx's clock, out of phase with $msec, may have read 99 ms.
        let log = "\
1700000000.000 0.000 PASSED 200 10.0.0.1
1700000000.100 0.000 REJECTED 503 10.0.0.1
";
        let out = run(log, json!({"outcome": "status"}), nodelay()).unwrap();
        let v = &out.json["validation"][0];
        assert_eq!(
            (v["agree"].as_u64(), v["clock_step"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(v["unexplained"], 0);
        assert_eq!(out.json["validation_source"]["values"], "HTTP status");
    }

    #[test]
    fn completion_ordered_ties_are_compared_by_count_not_order() {
        // Four requests of key a arrive at the same ms (end - request_time)
        // and are logged as they complete: the model (burst 2, delay
        // mode) admits 3 of them, so does the log, whichever it rejected.
        let log = "\
1700000000.010 0.000 REJECTED 503 10.0.0.1
1700000000.010 0.000 PASSED 200 10.0.0.1
1700000000.110 0.100 DELAYED 200 10.0.0.1
1700000000.210 0.200 DELAYED 200 10.0.0.1
";
        let limiters = json!([{"model": "nginx_limit_req", "burst": 2, "rate_r_s": 10}]);
        let out = run(
            log,
            json!({"outcome": "limit_req_status", "time_is": "end", "duration": "request_time"}),
            limiters.clone(),
        )
        .unwrap();
        let v = &out.json["validation"][0];
        assert_eq!(
            (v["agree"].as_u64(), v["total"].as_u64()),
            (Some(4), Some(4))
        );
        assert_eq!(out.json["validation_source"]["tie_groups"], 1);
        assert_eq!(out.json["validation_source"]["tie_requests"], 4);
        // Fed as if the times were arrivals, the delayed requests look 100
        // ms apart: the model admits all four, and one disagrees.
        let raw = run(log, json!({"outcome": "limit_req_status"}), limiters).unwrap();
        assert_eq!(raw.json["validation"][0]["agree"], 3);
        assert_eq!(raw.json["validation_source"]["tie_groups"], 0);
    }

    #[test]
    fn an_unknown_outcome_value_is_an_error_naming_line_and_value() {
        let log = "\
1700000000.000 0.000 PASSED 200 10.0.0.1
1700000000.100 0.000 MAYBE 200 10.0.0.1
";
        let e = run(log, json!({"outcome": "limit_req_status"}), nodelay())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("line 2") && e.contains("\"MAYBE\""), "{e}");
        assert_eq!(e.lines().count(), 1);
        let e = run(log, json!({"outcome": "nope"}), nodelay())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("trace.outcome") && e.contains("nope"), "{e}");
        let e = run(log, json!({"time_is": "end"}), nodelay())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("trace.duration"), "{e}");
    }

    #[test]
    fn a_csv_trace_names_its_outcome_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.csv"),
            "t_ms,key,code\n0,a,200\n50,a,429\n100,a,200\n120,b,200\n",
        )
        .unwrap();
        let s = json!({"name": "v", "kind": "decision_accuracy", "seed": 1,
            "policy": {"limit": 10, "interval_ms": 1000}, "shapes": [],
            "trace": {"path": "t.csv", "outcome": "code", "denied_values": ["429"]},
            "limiters": [{"model": "nginx_limit_req", "burst": 0, "nodelay": true, "rate_r_s": 10}]});
        let scenario = Scenario::parse(&dir.path().join("v.json"), &s.to_string()).unwrap();
        let out = crate::kinds::run(&scenario, &RunContext::for_scenario(&scenario)).unwrap();
        let v = &out.json["validation"][0];
        assert_eq!(
            (v["agree"].as_u64(), v["total"].as_u64()),
            (Some(4), Some(4))
        );
        assert_eq!(out.json["validation_source"]["deployed_denied"], 1);
        // A column the header lacks is named.
        let mut s = s;
        s["trace"]["outcome"] = json!("nope");
        let scenario = Scenario::parse(&dir.path().join("v.json"), &s.to_string()).unwrap();
        let e = crate::kinds::run(&scenario, &RunContext::for_scenario(&scenario))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("trace.outcome") && e.contains("nope"), "{e}");
    }

    #[test]
    fn denied_values_read_any_field() {
        let mut r = OutcomeReader::new(Some(vec!["429".into()]));
        assert_eq!(r.admitted("503"), Ok(true));
        assert_eq!(r.admitted("429"), Ok(false));
        assert!(r.admitted("x").is_err());
        let mut r = OutcomeReader::new(None);
        assert_eq!(r.admitted("-"), Ok(true));
        assert_eq!(r.kind(), None);
        assert_eq!(r.admitted("DELAYED_DRY_RUN"), Ok(true));
        assert!(r.admitted("RL").is_err());
    }
}
