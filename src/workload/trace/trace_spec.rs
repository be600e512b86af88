//! How to read a trace, defined once: the flags of every command that
//! reads one (`size`, `replay`, `recommend`, `run --trace`, flattened with
//! clap) and a scenario's `"trace"` object (serde) are the same
//! [`TraceSpec`], checked by one function ([`TraceSpec::resolve`]) into the
//! reader's options ([`InputOptions`]). A flag and its JSON field share a
//! name (`--sort-window-ms` is `sort_window_ms`) except `--trace`, which is
//! `path`, and `--time-unit`, which is `unit`; an error names the field as
//! the user wrote it ([`TraceSpec::flag_error`] turns a scenario's field
//! into its flag).

use super::log::{self, FormatRow, Xff};
use super::{Columns, LogSpec, Spread, TimeUnit, TraceFormat, TraceOptions};
use crate::error::{Error, FieldError, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::path::Path;

/// A trace's format: CSV (JSON Lines or Parquet by extension) or a row
/// of the access-log formats table ([`log::FORMATS`]), with its facts.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::Format;
/// let f: Format = "combined".parse().unwrap();
/// assert!(f.row().unwrap().whole_seconds);
/// assert_eq!("csv".parse::<Format>().unwrap(), Format::Csv);
/// assert!("yaml".parse::<Format>().is_err());
/// ```
#[derive(Clone, Copy)]
pub enum Format {
    /// A CSV trace (or JSON Lines, Parquet: told by the file's name).
    Csv,
    /// An access-log format.
    Log(&'static FormatRow),
}

impl Format {
    /// The name, as `--format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Log(r) => r.name,
        }
    }

    /// The access-log format's row (None for CSV).
    pub fn row(self) -> Option<&'static FormatRow> {
        match self {
            Format::Csv => None,
            Format::Log(r) => Some(r),
        }
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = super::ParseError;
    fn from_str(s: &str) -> std::result::Result<Format, super::ParseError> {
        match s {
            "csv" => Ok(Format::Csv),
            _ => log::row(s).map(Format::Log),
        }
    }
}

/// What a log's time field holds: the request's arrival (`start`, the
/// default) or its completion (`end`: arrival = time − `duration`, as
/// nginx's `$msec` of a delayed request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeIs {
    /// The arrival.
    #[default]
    Start,
    /// The completion.
    End,
}

impl std::fmt::Display for TimeIs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeIs::Start => "start",
            TimeIs::End => "end",
        })
    }
}

impl std::str::FromStr for TimeIs {
    type Err = super::ParseError;
    fn from_str(s: &str) -> std::result::Result<TimeIs, super::ParseError> {
        match s {
            "start" => Ok(TimeIs::Start),
            "end" => Ok(TimeIs::End),
            v => Err(super::ParseError::Option(format!(
                "value {v:?}: expected \"start\" (the default: the time is the request's arrival) or \"end\""
            ))),
        }
    }
}

/// Serde as the text the flag takes: written with `Display`, read with
/// `FromStr` (so a JSON value and its flag are checked by one parser and
/// fail with one message).
macro_rules! as_text {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}
as_text!(Format, TimeIs, Spread, TimeUnit, Columns);

impl Serialize for Xff {
    /// `"last"`, `"first"` or `{"trusted_hops": N}`.
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Xff::TrustedHops(n) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("trusted_hops", n)?;
                m.end()
            }
            x => s.serialize_str(&x.name()),
        }
    }
}

impl<'de> Deserialize<'de> for Xff {
    /// `"last"`, `"first"` or `{"trusted_hops": N}`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Xff::from_json(&v).map_err(serde::de::Error::custom)
    }
}

/// How to read a trace: where (`path`, the commands' `--trace`) and how.
/// Flattened into every command that reads a trace, and the decision
/// lab's `"trace"` object.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::{Format, TraceSpec};
/// let t: TraceSpec = serde_json::from_str(
///     r#"{"path": "a.log", "format": "alb", "sort_window_ms": 5000}"#,
/// ).unwrap();
/// assert_eq!(t.format.unwrap().name(), "alb");
/// let o = t.resolve(1).unwrap();
/// assert_eq!(o.log.unwrap().format, "alb");
/// assert!(serde_json::from_str::<TraceSpec>(r#"{"path": "a", "colour": 1}"#).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[command(next_help_heading = "How --trace is read")]
pub struct TraceSpec {
    /// The file (a scenario's: relative to the scenario's folder; `-` is
    /// standard input). Each command declares its own `--trace`.
    #[arg(skip)]
    pub path: String,
    /// Format of --trace (the list is [`format_help`]'s, drawn from the
    /// formats table).
    #[arg(long, requires = "trace", help = format_help(false), long_help = format_help(true))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    /// An nginx log_format string (--format nginx), Apache LogFormat string (--format apache) or Envoy format string (--format envoy), e.g. '$remote_addr - $remote_user [$time_local] "$request" $status'.
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_format: Option<String>,
    /// Key of an access log: a field, ip, ip/24, ip/24/64, header:NAME, route (ids collapsed), or several joined by + (ip+route).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Weight of an access log's request from a field (e.g. body_bytes_sent, or bytes: the format's bytes-sent field).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<String>,
    /// The access log's field holding the time (default: the format's; nginx: time_local, else time_iso8601, else msec).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_field: Option<String>,
    /// Which X-Forwarded-For entry is the client when the key reads that header: last (default, as Envoy with xff_num_trusted_hops 0), first, or N trusted hops counted from the right (Envoy's xff_num_trusted_hops; in JSON {"trusted_hops": N}).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xff: Option<Xff>,
    /// Spread requests of whole-second logs within their second (the
    /// formats named are the table's: [`spread_help`]).
    #[arg(long, requires = "trace", help = spread_help())]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
    /// Skip (and count, in the report) lines older than the reorder window allows, instead of an error naming the first.
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_late: bool,
    /// Rename --trace columns: ROLE=NAME pairs, roles time, key, weight, count (e.g. key=ip,count=hits); for JSON Lines, Parquet and access logs, the fields (time=start_time,key=x_forwarded_for; a dotted name reaches into nested objects).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Columns>,
    /// Unit of a `time`/`timestamp` column or of JSON number times: ns (default), ms, s or rfc3339 (in JSON: "unit").
    #[arg(
        long = "time-unit",
        id = "time_unit",
        value_name = "UNIT",
        requires = "trace"
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<TimeUnit>,
    /// Sort --trace lines out of order by up to this many ms (default: an out-of-order line is an error; ALB logs need one: lines are written when the response is sent).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_window_ms: Option<u64>,
    /// The access log's field holding what your deployed limiter answered (status, limit_req_status, an Envoy response-flags field, or any field with --denied-values): every candidate is compared with it, request by request (the decision lab and replay --algo limiter).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// With --outcome: the values meaning denied, comma-separated (default for statuses: 429,503).
    #[arg(long, requires = "outcome", value_delimiter = ',')]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_values: Option<Vec<String>>,
    /// What the log's time is: start (the arrival; default) or end (completion, as nginx's $msec of a delayed request: arrival = time - --duration).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_is: Option<TimeIs>,
    /// With --time-is end: the field holding each request's duration in seconds (nginx: request_time).
    #[arg(long, requires = "trace")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
}

/// The help of `--format`, drawn from [`FORMATS`](log::FORMATS) so that a
/// new format's row is all it takes to list it: the names (`-h`), or each
/// with what it reads (`--help`, `long`).
pub fn format_help(long: bool) -> String {
    let head = "Format of --trace: csv (default; .jsonl/.ndjson: JSON Lines; .parquet: its rows)";
    if !long {
        let names: Vec<&str> = log::FORMATS.iter().map(|r| r.name).collect();
        return format!("{head}, {}", names.join(", "));
    }
    let mut s = format!("{head}, or an access-log format:");
    for r in log::FORMATS {
        s.push_str(&format!("\n  {}: {}", r.name, r.about));
    }
    s
}

/// The help of `--spread`, naming the whole-second formats of the table.
pub fn spread_help() -> String {
    format!(
        "Spread requests of whole-second logs (--format {}) within their second: uniform (seeded by --seed; default), even or none",
        log::whole_second_formats()
    )
}

/// The flag of a scenario's trace field (`trace.unit` → `--time-unit`).
fn flag_of(field: &str) -> String {
    match field.strip_prefix("trace.").unwrap_or(field) {
        "trace" | "path" => "--trace".into(),
        "unit" => "--time-unit".into(),
        f => format!("--{}", f.replace('_', "-")),
    }
}

/// The scenario fields a message may name, longest first (so that
/// `trace.time_field` is not read as `trace.time` + `_field`).
const FIELDS: [&str; 16] = [
    "trace.sort_window_ms",
    "trace.denied_values",
    "trace.time_field",
    "trace.log_format",
    "trace.skip_late",
    "trace.duration",
    "trace.columns",
    "trace.outcome",
    "trace.time_is",
    "trace.weight",
    "trace.format",
    "trace.spread",
    "trace.unit",
    "trace.path",
    "trace.xff",
    "trace.key",
];

impl TraceSpec {
    /// The error of a field as a command-line user meets it: the
    /// scenario's field names (`trace.unit`) turned into the flags that
    /// set them (`--time-unit`), in the field and in the message.
    ///
    /// # Examples
    /// ```
    /// use ratelab::error::FieldError;
    /// use ratelab::workload::trace::TraceSpec;
    /// let e = TraceSpec::flag_error(FieldError::new("trace.unit", "not with trace.format alb"));
    /// assert_eq!(e.to_string(), "--time-unit: not with --format alb");
    /// ```
    pub fn flag_error(e: FieldError) -> Error {
        let mut m = e.message;
        for f in FIELDS {
            m = m.replace(f, &flag_of(f));
        }
        Error::input(format!("{}: {m}", flag_of(&e.field)))
    }

    /// The options given, as flags (for commands that check which apply).
    pub fn given(&self) -> Vec<&'static str> {
        [
            (self.format.is_some(), "--format"),
            (self.log_format.is_some(), "--log-format"),
            (self.key.is_some(), "--key"),
            (self.weight.is_some(), "--weight"),
            (self.time_field.is_some(), "--time-field"),
            (self.xff.is_some(), "--xff"),
            (self.spread.is_some(), "--spread"),
            (self.skip_late, "--skip-late"),
            (self.columns.is_some(), "--columns"),
            (self.unit.is_some(), "--time-unit"),
            (self.sort_window_ms.is_some(), "--sort-window-ms"),
            (self.outcome.is_some(), "--outcome"),
            (self.denied_values.is_some(), "--denied-values"),
            (self.time_is.is_some(), "--time-is"),
            (self.duration.is_some(), "--duration"),
        ]
        .into_iter()
        .filter_map(|(g, f)| g.then_some(f))
        .collect()
    }

    /// Refuses trace options given without a trace (clap's `requires` is
    /// not checked when `--trace` is in conflict with another flag given,
    /// such as `--keys`): one line naming the first.
    pub fn refuse_without_trace(&self) -> Result<()> {
        match self.given().first() {
            Some(flag) => Err(Error::input(format!(
                "{flag}: says how to read --trace, and no --trace is given"
            ))),
            None => Ok(()),
        }
    }

    /// Whether the deployed limiter's answers are read (`outcome`), or
    /// arrivals computed from durations: the log is then read whole and
    /// compared line by line (the decision lab's validation).
    pub fn validates(&self) -> bool {
        self.outcome.is_some()
            || self.denied_values.is_some()
            || self.time_is.is_some()
            || self.duration.is_some()
    }

    /// Refuses the options only a validation reads (`outcome`,
    /// `denied_values`, `time_is`, `duration`), for a command (`what`)
    /// that reads arrivals only.
    pub fn refuse_validation(&self, what: &str) -> std::result::Result<(), FieldError> {
        for (given, field) in [
            (self.outcome.is_some(), "trace.outcome"),
            (self.denied_values.is_some(), "trace.denied_values"),
            (self.time_is.is_some(), "trace.time_is"),
            (self.duration.is_some(), "trace.duration"),
        ] {
            if given {
                return Err(FieldError::new(
                    field,
                    format!("{what} reads the arrivals only; comparing with what your deployed limiter answered is the decision lab's (run --trace) and replay --algo limiter's"),
                ));
            }
        }
        Ok(())
    }

    /// The reader's options of a command (`what`, e.g. `size`) that reads
    /// arrivals only, from its flags: [`resolve`](Self::resolve) after
    /// [`refuse_validation`](Self::refuse_validation), an error naming the
    /// flag.
    pub fn arrival_options(&self, what: &str, seed: u64) -> Result<InputOptions> {
        self.refuse_validation(what)
            .and_then(|()| self.resolve(seed))
            .map_err(Self::flag_error)
    }

    /// Every option checked, alone and together, into the reader's options
    /// (`seed`: the run's; the uniform spread's seed is derived from it).
    /// An error names the scenario's field (`trace.unit`; see
    /// [`flag_error`](Self::flag_error) for a flag).
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::TraceSpec;
    /// let csv = TraceSpec { key: Some("ip".into()), ..TraceSpec::default() };
    /// let e = csv.resolve(1).unwrap_err();
    /// assert_eq!(e.field, "trace.key");
    /// ```
    pub fn resolve(&self, seed: u64) -> std::result::Result<InputOptions, FieldError> {
        let log = match self.format.and_then(Format::row) {
            None => {
                for (given, field) in [
                    (self.log_format.is_some(), "log_format"),
                    (self.key.is_some(), "key"),
                    (self.weight.is_some(), "weight"),
                    (self.time_field.is_some(), "time_field"),
                    (self.xff.is_some(), "xff"),
                ] {
                    if given {
                        return Err(FieldError::new(
                            format!("trace.{field}"),
                            format!(
                                "applies to access-log formats (trace.format {}); a CSV trace's time, key and weight are its columns (rename with trace.columns)",
                                log::log_format_names()
                            ),
                        ));
                    }
                }
                None
            }
            Some(row) => {
                if self.unit.is_some() && !row.takes_unit {
                    return Err(FieldError::new(
                        "trace.unit",
                        format!(
                            "the {} format's times carry their own unit (it applies to CSV time/timestamp columns and JSON numbers)",
                            row.name
                        ),
                    ));
                }
                Some(LogSpec {
                    format: row.name.to_string(),
                    log_format: self.log_format.clone(),
                    key: self.key.clone(),
                    weight: self.weight.clone(),
                    time: self.time_field.clone(),
                    unit: self.unit.unwrap_or_default(),
                    xff: self.xff,
                })
            }
        };
        Ok(InputOptions {
            columns: self.columns.clone(),
            unit: self.unit,
            sort_window_ms: self.sort_window_ms,
            log,
            skip_late: self.skip_late,
            spread: self.spread,
            seed,
        })
    }
}

/// How to read a trace, every option checked ([`TraceSpec::resolve`]).
#[derive(Debug, Clone, Default)]
pub struct InputOptions {
    /// Renamed columns (for an access-log format: the fields playing the
    /// time, key and weight roles).
    pub columns: Option<Columns>,
    /// Unit of a `time`/`timestamp` column (None: ns, and not given).
    pub unit: Option<TimeUnit>,
    /// Sort lines out of order by up to this many ms (default: reject).
    pub sort_window_ms: Option<u64>,
    /// An access-log format (None: CSV or JSON Lines by extension).
    pub log: Option<LogSpec>,
    /// Skip and count lines older than the reorder window allows.
    pub skip_late: bool,
    /// Spread of whole-second times (None: the default).
    pub spread: Option<Spread>,
    /// The run's seed (the uniform spread's is derived from it).
    pub seed: u64,
}

impl InputOptions {
    /// The trace reader's options.
    pub fn trace_options(&self) -> TraceOptions {
        TraceOptions::of(
            self.unit,
            self.sort_window_ms,
            self.skip_late,
            self.spread,
            self.seed,
        )
    }

    /// The access-log spec, with `--columns` roles folded in; a plain
    /// JSON Lines file with `--columns` is read as format `jsonl`.
    pub fn log_spec(&self, path: &Path) -> Result<Option<LogSpec>> {
        let json = TraceFormat::from_path(&super::input::without_compression(path))
            == TraceFormat::JsonLines;
        let mut spec = match (&self.log, &self.columns) {
            (Some(l), _) => l.clone(),
            (None, Some(_)) if json => LogSpec {
                format: "jsonl".into(),
                ..LogSpec::default()
            },
            (None, _) => return Ok(None),
        };
        spec.unit = self.unit.unwrap_or_default();
        if let Some(c) = &self.columns {
            if let Some(n) = c.get("count") {
                return Err(Error::input(format!(
                    "--columns count={n}: a {} log is time-stamped, not a key,count table",
                    spec.format
                )));
            }
            let set = |slot: &mut Option<String>, role: &str, flag: &str| -> Result<()> {
                if let Some(n) = c.get(role) {
                    if slot.is_some() {
                        return Err(Error::input(format!(
                            "--columns {role}={n} and {flag} both name the {role}: give one"
                        )));
                    }
                    *slot = Some(n.to_string());
                }
                Ok(())
            };
            set(&mut spec.time, "time", "--time-field")?;
            set(&mut spec.key, "key", "--key")?;
            set(&mut spec.weight, "weight", "--weight")?;
        }
        Ok(Some(spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cmd {
        #[arg(long)]
        trace: Option<std::path::PathBuf>,
        #[command(flatten)]
        read: TraceSpec,
    }

    #[test]
    fn the_help_lists_every_format_of_the_table() {
        let cmd = Cmd::command();
        let arg = |id: &str| cmd.get_arguments().find(|a| a.get_id() == id).unwrap();
        let short = arg("format").get_help().unwrap().to_string();
        let long = arg("format").get_long_help().unwrap().to_string();
        let spread = arg("spread").get_help().unwrap().to_string();
        for row in log::FORMATS {
            assert!(
                short.split(", ").any(|n| n == row.name),
                "{}: {short}",
                row.name
            );
            let line = format!("\n  {}: {}", row.name, row.about);
            assert!(long.contains(&line), "{}: {long}", row.name);
            assert_eq!(spread.contains(row.name), row.whole_seconds, "{}", row.name);
        }
    }

    #[test]
    fn flags_and_json_are_one_type() {
        let c = Cmd::parse_from([
            "x",
            "--trace",
            "a.log",
            "--format",
            "envoy",
            "--sort-window-ms",
            "5000",
            "--time-unit",
            "ms",
            "--xff",
            "2",
            "--spread",
            "even",
            "--outcome",
            "status",
            "--denied-values",
            "429,503",
            "--time-is",
            "end",
            "--duration",
            "d",
        ]);
        let mut flags = c.read;
        flags.path = "a.log".into();
        let json = serde_json::to_string(&flags).unwrap();
        let back: TraceSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, flags);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["unit"], "ms");
        assert_eq!(v["xff"]["trusted_hops"], 2);
        assert_eq!(v["time_is"], "end");
        assert_eq!(v.as_object().unwrap().len(), 10, "{json}");
        assert_eq!(flags.given().len(), 9);
    }

    #[test]
    fn a_bad_value_fails_alike_as_flag_and_json() {
        let flag = Cmd::try_parse_from(["x", "--trace", "a", "--spread", "later"])
            .err()
            .unwrap()
            .to_string();
        let json = serde_json::from_str::<TraceSpec>(r#"{"path": "a", "spread": "later"}"#)
            .unwrap_err()
            .to_string();
        let msg = "unknown spread \"later\": expected uniform, even or none";
        assert!(flag.contains(msg), "{flag}");
        assert!(json.contains(msg), "{json}");
        assert!(serde_json::from_str::<TraceSpec>(r#"{"format": "csv"}"#).is_err());
    }

    #[test]
    fn resolve_refuses_log_options_on_csv_and_a_unit_on_a_log_that_carries_its_own() {
        let t = |json: &str| serde_json::from_str::<TraceSpec>(json).unwrap();
        let e = t(r#"{"path": "a", "time_field": "msec"}"#)
            .resolve(1)
            .unwrap_err();
        assert_eq!(e.field, "trace.time_field");
        let e = t(r#"{"path": "a", "format": "combined", "unit": "ms"}"#)
            .resolve(1)
            .unwrap_err();
        assert_eq!(e.field, "trace.unit");
        let flag = TraceSpec::flag_error(e).to_string();
        assert!(
            flag.starts_with("--time-unit: the combined format's"),
            "{flag}"
        );
        let o = t(r#"{"path": "a", "format": "jsonl", "unit": "ms", "time_field": "ts"}"#)
            .resolve(7)
            .unwrap();
        let log = o.log.unwrap();
        assert_eq!((log.unit, log.time.as_deref()), (TimeUnit::Ms, Some("ts")));
        assert_eq!(o.seed, 7);
    }

    #[test]
    fn every_field_has_its_flag() {
        let cmd = Cmd::command();
        let longs: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        for f in FIELDS {
            assert!(longs.contains(&flag_of(f)), "{f} -> {}", flag_of(f));
        }
    }
}
