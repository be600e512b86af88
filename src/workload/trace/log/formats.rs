//! The table of access-log formats: one row per format, what it is and
//! how to build its reader (adding a format is one row), and the lists
//! that messages and `--help` draw from it.

use super::*;

/// One log format: its name, what it is, a two-line example, and how to
/// build it.
pub struct FormatRow {
    /// Name for `--format` and `"trace": {"format": ...}`.
    pub name: &'static str,
    /// What it reads.
    pub about: &'static str,
    /// The key when none is given.
    pub default_key: &'static str,
    /// Builds the line format.
    pub build: fn(&LogSpec) -> Result<Box<dyn LogFormat>, ParseError>,
    /// Every line reads the same whatever came before it (no header that
    /// changes the fields): its lines may be parsed in parallel.
    pub lines_stand_alone: bool,
    /// Its default time field is whole seconds (`$time_local`, W3C's
    /// `date time`): requests sharing a second are spread within it
    /// (`spread`).
    pub whole_seconds: bool,
    /// The field a fleet's `from_trace` balancer reads each request's
    /// replica from when the deployment names none (nginx's
    /// `$upstream_addr`, Envoy's `%UPSTREAM_HOST%`).
    pub replica_field: &'static str,
    /// Its times may be bare numbers whose unit the user states
    /// (`--time-unit` / `trace.unit`); other formats' times carry theirs.
    pub takes_unit: bool,
}

fn no_log_format(s: &LogSpec) -> Result<(), ParseError> {
    match &s.log_format {
        Some(_) => Err(ParseError::Option(format!(
            "a log format string is for formats nginx, apache and envoy, not {}",
            s.format
        ))),
        None => Ok(()),
    }
}

/// Every access-log format (CSV and plain JSON Lines traces are read by the
/// trace reader itself).
pub const FORMATS: &[FormatRow] = &[
    FormatRow {
        name: "combined",
        about: "nginx's default log format / Apache combined",
        default_key: "ip",
        build: |s| {
            no_log_format(s)?;
            Ok(Box::new(nginx::Nginx::new("combined", nginx::COMBINED)?))
        },
        whole_seconds: true,
        takes_unit: false,
        replica_field: "upstream_addr",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "common",
        about: "Common Log Format (Apache common)",
        default_key: "ip",
        build: |s| {
            no_log_format(s)?;
            Ok(Box::new(nginx::Nginx::new("common", nginx::COMMON)?))
        },
        whole_seconds: true,
        takes_unit: false,
        replica_field: "upstream_addr",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "nginx",
        about: "any nginx log_format string (--log-format)",
        default_key: "ip",
        build: |s| {
            match &s.log_format {
            Some(f) => Ok(Box::new(nginx::Nginx::new("nginx", f)?)),
            None => Err(ParseError::Option("format nginx needs its log_format string (--log-format '$remote_addr ... [$time_local] ...')".into())),
        }
        },
        whole_seconds: true,
        takes_unit: false,
        replica_field: "upstream_addr",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "apache",
        about: "any Apache httpd LogFormat string (--log-format '%h %l %u %t \"%r\" %>s %b')",
        default_key: "ip",
        build: |s| {
            match &s.log_format {
            Some(f) => Ok(Box::new(apache::Apache::new(f)?)),
            None => Err(ParseError::Option(
                "format apache needs its LogFormat string (--log-format '%h %l %u %t \"%r\" %>s %b ...')".into(),
            )),
        }
        },
        whole_seconds: true,
        takes_unit: false,
        replica_field: "upstream_addr",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "envoy",
        about: "Envoy's default access-log format, or any Envoy format string (--log-format)",
        default_key: "ip",
        build: |s| {
            Ok(Box::new(envoy::Envoy::new(
                s.log_format.as_deref().unwrap_or(envoy::DEFAULT),
            )?))
        },
        whole_seconds: false,
        takes_unit: false,
        replica_field: "UPSTREAM_HOST",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "envoy-json",
        about: "Envoy JSON access logs (start_time, downstream_remote_address, path, bytes_sent)",
        default_key: "ip",
        build: |s| {
            no_log_format(s)?;
            Ok(Box::new(json::Json::new(
                "envoy-json",
                json::ENVOY_JSON,
                s.unit,
            )))
        },
        whole_seconds: false,
        takes_unit: true,
        replica_field: "upstream_addr",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "jsonl",
        about: "JSON Lines with any field names (--columns time=NAME,key=NAME)",
        default_key: "key",
        build: |s| {
            no_log_format(s)?;
            Ok(Box::new(json::Json::new("jsonl", json::PLAIN, s.unit)))
        },
        whole_seconds: false,
        takes_unit: true,
        replica_field: "replica",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "parquet",
        about: "Parquet files, each row read as a JSON object (--columns time=NAME,key=NAME)",
        default_key: "key",
        build: |s| {
            no_log_format(s)?;
            Ok(Box::new(json::Json::new("parquet", json::PLAIN, s.unit)))
        },
        whole_seconds: false,
        takes_unit: true,
        replica_field: "upstream_addr",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "alb",
        about: "AWS Application Load Balancer access logs",
        default_key: "ip",
        build: |s| {
            no_log_format(s)?;
            Ok(Box::new(alb::Alb::new()))
        },
        whole_seconds: false,
        takes_unit: false,
        replica_field: "upstream_addr",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "nlb",
        about: "AWS Network Load Balancer access logs (TLS listeners: one line a connection)",
        default_key: "ip",
        build: |s| {
            no_log_format(s)?;
            Ok(Box::new(alb::Nlb::new()))
        },
        whole_seconds: true,
        takes_unit: false,
        replica_field: "upstream_addr",
        lines_stand_alone: true,
    },
    FormatRow {
        name: "cloudfront",
        about: "AWS CloudFront standard logs (W3C, tab-separated, #Fields:)",
        default_key: "ip",
        build: |s| {
            no_log_format(s)?;
            Ok(Box::new(w3c::W3c::new()))
        },
        whole_seconds: true,
        takes_unit: false,
        replica_field: "upstream_addr",
        lines_stand_alone: false,
    },
];

/// The names of every format, for messages.
pub fn format_names() -> String {
    let mut v: Vec<&str> = vec!["csv"];
    v.extend(FORMATS.iter().map(|r| r.name));
    v.join(", ")
}

/// The names of the access-log formats (the table's rows), for messages.
pub fn log_format_names() -> String {
    let v: Vec<&str> = FORMATS.iter().map(|r| r.name).collect();
    v.join(", ")
}

/// The formats whose times are whole seconds, for messages: `combined,
/// common, ...`.
///
/// # Examples
///
/// ```
/// let w = ratelab::workload::trace::log::whole_second_formats();
/// assert!(w.starts_with("combined, common"), "{w}");
/// ```
pub fn whole_second_formats() -> String {
    let v: Vec<&str> = FORMATS
        .iter()
        .filter(|r| r.whole_seconds)
        .map(|r| r.name)
        .collect();
    v.join(", ")
}

/// Whether format `name`'s times may be bare numbers in a unit the user
/// states (`--time-unit`).
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::log::takes_unit;
/// assert!(takes_unit("jsonl") && !takes_unit("combined"));
/// ```
pub fn takes_unit(name: &str) -> bool {
    FORMATS.iter().any(|r| r.name == name && r.takes_unit)
}

/// The row of a format name.
pub fn row(name: &str) -> Result<&'static FormatRow, ParseError> {
    FORMATS.iter().find(|r| r.name == name).ok_or_else(|| {
        ParseError::Option(format!(
            "unknown format {name:?}: expected one of {}",
            format_names()
        ))
    })
}
