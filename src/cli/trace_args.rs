//! The options of how a `--trace` is read, defined once and flattened into
//! every command that reads one (`size`, `replay`), so each takes the same
//! flags with the same meaning as the decision lab's `"trace"` object.

use crate::error::{Error, Result};
use crate::sizing::input::{Columns, InputOptions};
use crate::workload::trace::log::{self, Xff};
use crate::workload::trace::{LogSpec, Spread, TimeUnit};

/// How to read `--trace` (flattened into `size` and `replay`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TraceArgs {
    /// Format of --trace (the list is [`format_help`]'s, drawn from the
    /// formats table).
    #[arg(long, requires = "trace", help = format_help(false), long_help = format_help(true))]
    pub format: Option<String>,
    /// An nginx log_format string (--format nginx) or Envoy format string (--format envoy), e.g. '$remote_addr - $remote_user [$time_local] "$request" $status'.
    #[arg(long, requires = "trace")]
    pub log_format: Option<String>,
    /// Key of an access log: a field, ip, ip/24, ip/24/64, header:NAME, route (ids collapsed), or several joined by + (ip+route).
    #[arg(long, requires = "trace")]
    pub key: Option<String>,
    /// Weight of an access log's request from a field (e.g. body_bytes_sent, or bytes: the format's bytes-sent field).
    #[arg(long, requires = "trace")]
    pub weight: Option<String>,
    /// Which X-Forwarded-For entry is the client when the key reads that header: last (default, as Envoy with xff_num_trusted_hops 0), first, or N trusted hops counted from the right (Envoy's xff_num_trusted_hops).
    #[arg(long, requires = "trace")]
    pub xff: Option<String>,
    /// Spread requests of whole-second logs within their second (the
    /// formats named are the table's: [`spread_help`]).
    #[arg(long, requires = "trace", help = spread_help())]
    pub spread: Option<String>,
    /// Skip (and count, in the report) lines older than the reorder window allows, instead of an error naming the first.
    #[arg(long, requires = "trace")]
    pub skip_late: bool,
    /// Rename --trace columns: ROLE=NAME pairs, roles time, key, weight, count (e.g. key=ip,count=hits); for JSON Lines, Parquet and access logs, the fields (time=start_time,key=x_forwarded_for; a dotted name reaches into nested objects).
    #[arg(long, requires = "trace")]
    pub columns: Option<String>,
    /// Unit of a `time`/`timestamp` column or of JSON number times: ns (default), ms, s or rfc3339.
    #[arg(long, requires = "trace")]
    pub time_unit: Option<String>,
    /// Sort --trace lines out of order by up to this many ms (default: an out-of-order line is an error; ALB logs need one: lines are written when the response is sent).
    #[arg(long, requires = "trace")]
    pub sort_window_ms: Option<u64>,
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

impl TraceArgs {
    /// The flags given, by name (for commands that check which apply).
    pub fn given(&self) -> Vec<&'static str> {
        [
            (self.format.is_some(), "--format"),
            (self.log_format.is_some(), "--log-format"),
            (self.key.is_some(), "--key"),
            (self.weight.is_some(), "--weight"),
            (self.xff.is_some(), "--xff"),
            (self.spread.is_some(), "--spread"),
            (self.skip_late, "--skip-late"),
            (self.columns.is_some(), "--columns"),
            (self.time_unit.is_some(), "--time-unit"),
            (self.sort_window_ms.is_some(), "--sort-window-ms"),
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

    /// How to read the trace: every option checked, alone and together
    /// (`seed` seeds the uniform spread).
    pub fn input_options(&self, seed: u64) -> Result<InputOptions> {
        let log = match self.format.as_deref() {
            None | Some("csv") => {
                for (given, flag) in [
                    (self.log_format.is_some(), "--log-format"),
                    (self.key.is_some(), "--key"),
                    (self.weight.is_some(), "--weight"),
                    (self.xff.is_some(), "--xff"),
                ] {
                    if given {
                        return Err(Error::input(format!(
                            "{flag}: applies to access-log formats (--format {}); a CSV trace's key and weight are its key and weight columns (rename with --columns)",
                            crate::workload::trace::log::format_names()
                        )));
                    }
                }
                None
            }
            Some(f) => {
                crate::workload::trace::log::row(f)
                    .map_err(|m| Error::input(format!("--format: {m}")))?;
                let xff = match self.xff.as_deref() {
                    Some(x) => {
                        Xff::parse_text(x).map_err(|m| Error::input(format!("--xff {m}")))?
                    }
                    None => Xff::default(),
                };
                Some(LogSpec {
                    format: f.to_string(),
                    log_format: self.log_format.clone(),
                    key: self.key.clone(),
                    weight: self.weight.clone(),
                    xff,
                    ..LogSpec::default()
                })
            }
        };
        Ok(InputOptions {
            columns: self.columns.as_deref().map(Columns::parse).transpose()?,
            unit: self
                .time_unit
                .as_deref()
                .map(|u| {
                    u.parse::<TimeUnit>()
                        .map_err(|m| Error::input(format!("--time-unit: {m}")))
                })
                .transpose()?,
            sort_window_ms: self.sort_window_ms,
            log,
            skip_late: self.skip_late,
            spread: Spread::parse_flag(self.spread.as_deref())?,
            seed,
        })
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
        read: TraceArgs,
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
    fn flattened_flags_become_input_options() {
        let c = Cmd::parse_from([
            "x",
            "--trace",
            "a.log",
            "--format",
            "alb",
            "--sort-window-ms",
            "5000",
        ]);
        let o = c.read.input_options(1).unwrap();
        assert_eq!(o.sort_window_ms, Some(5000));
        assert_eq!(o.log.unwrap().format, "alb");
    }
}
