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

use crate::clock::{Nanos, SECOND};
use crate::error::{Error, Result};
use crate::lab::error::LabError;
use crate::scenario::Scenario;
use crate::workload::trace::log::{LogParser, LogSpec, Parsed};
use crate::workload::trace::{parse_decimal_ns, KeyInterner};
use crate::workload::trace::{TimeIs, TraceSpec};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::BufRead;

mod agreement;
mod load;
#[cfg(test)]
mod tests;

pub(crate) use agreement::{console_line, markdown_intro, source_json, Agreement, HEADER};
pub(crate) use load::{load, load_from};

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
    pub fn admitted(&mut self, v: &str) -> std::result::Result<bool, LabError> {
        let v = v.trim();
        if v.is_empty() {
            return Err(LabError::Outcome(
                "empty: expected what the deployed limiter answered".into(),
            ));
        }
        let kind = match self.kind {
            Some(k) => k,
            None if v == "-" && self.denied.is_none() => return Ok(true),
            None => {
                let k = self.detect(v).ok_or_else(|| {
                    LabError::Outcome(format!("value {v:?}: expected an HTTP status, nginx $limit_req_status (PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN) or Envoy %RESPONSE_FLAGS% (RL = rate limited); give trace.denied_values to read any other field"))
                })?;
                self.kind = Some(k);
                k
            }
        };
        match kind {
            OutcomeKind::Listed => Ok(!self.listed(v)),
            OutcomeKind::Status => {
                if !is_status(v) {
                    return Err(LabError::Outcome(format!(
                        "value {v:?}: expected an HTTP status (the field's first value was one)"
                    )));
                }
                Ok(match &self.denied {
                    Some(_) => !self.listed(v),
                    None => v != "429" && v != "503",
                })
            }
            OutcomeKind::LimitReqStatus => match v {
                "-" | "PASSED" | "DELAYED" | "DELAYED_DRY_RUN" => Ok(true),
                "REJECTED" | "REJECTED_DRY_RUN" => Ok(false),
                _ => Err(LabError::Outcome(format!("value {v:?}: expected nginx $limit_req_status: PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN or -"))),
            },
            OutcomeKind::EnvoyFlags => {
                if v != "-" && !is_envoy_flags(v) {
                    return Err(LabError::Outcome(format!(
                        "value {v:?}: expected Envoy %RESPONSE_FLAGS% (upper-case flags separated by commas, or -)"
                    )));
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

/// Where an error about a validation field goes while the log is read:
/// the field as a scenario names it (`trace.outcome`) and the message, to
/// an error naming it as the user gave it (the scenario's field, or a
/// command-line flag).
pub(crate) type FieldError<'a> = &'a dyn Fn(&str, String) -> Error;

fn ferr(field_error: FieldError, field: impl AsRef<str>, m: impl std::fmt::Display) -> Error {
    field_error(field.as_ref(), m.to_string())
}

/// Checks the validation fields of a trace (before anything runs).
pub(crate) fn check(t: &TraceSpec) -> std::result::Result<(), crate::error::FieldError> {
    use crate::error::FieldError as E;
    if !wanted(t) {
        if t.denied_values.is_some() {
            return Err(E::new(
                "trace.denied_values",
                "applies with trace.outcome (the field holding what the deployed limiter answered)",
            ));
        }
        return Ok(());
    }
    let csv = t.format.and_then(|f| f.row()).is_none();
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
        return Err(E::new(
            field,
            "a JSON Lines trace is compared as an access log: give \"format\": \"jsonl\" (time and key fields: time_field, key)",
        ));
    }
    match (t.time_is.unwrap_or_default(), &t.duration) {
        (TimeIs::Start, None) | (TimeIs::End, Some(_)) => {}
        (TimeIs::End, None) => {
            return Err(E::new(
                "trace.time_is",
                "\"end\" needs trace.duration, the field holding how long each request took (nginx: request_time)",
            ))
        }
        (TimeIs::Start, Some(_)) => {
            return Err(E::new(
                "trace.duration",
                "applies with \"time_is\": \"end\" (arrival = time - duration)",
            ))
        }
    }
    for (given, field) in [
        (t.spread.is_some(), "trace.spread"),
        (t.skip_late, "trace.skip_late"),
        (t.columns.is_some(), "trace.columns"),
    ] {
        if given {
            return Err(E::new(
                field,
                "not with trace.outcome or trace.time_is: a validated log is read whole, every line compared",
            ));
        }
    }
    if let Some(d) = &t.denied_values
        && (d.is_empty() || d.iter().any(|v| v.trim().is_empty()))
    {
        return Err(E::new(
            "trace.denied_values",
            "expected a non-empty list of non-empty values",
        ));
    }
    Ok(())
}
