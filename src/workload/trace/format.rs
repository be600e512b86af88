//! The vocabulary of traces: an event, the file formats, time units, and the
//! reader's options.

use crate::clock::Nanos;
use std::path::Path;

/// One event of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// Nanoseconds since the Unix epoch.
    pub t_ns: Nanos,
    /// The key (e.g. a client id or an API key).
    pub key: String,
    /// How many events this line stands for (>= 1).
    pub weight: u64,
}

/// Unit of a `time`/`timestamp` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeUnit {
    /// Integer nanoseconds.
    #[default]
    Ns,
    /// Milliseconds (decimals allowed).
    Ms,
    /// Seconds (decimals allowed).
    S,
    /// RFC 3339 date-time strings.
    Rfc3339,
}

impl std::str::FromStr for TimeUnit {
    type Err = super::error::ParseError;
    fn from_str(s: &str) -> std::result::Result<Self, super::error::ParseError> {
        match s {
            "ns" => Ok(Self::Ns),
            "ms" => Ok(Self::Ms),
            "s" => Ok(Self::S),
            "rfc3339" => Ok(Self::Rfc3339),
            other => Err(super::error::ParseError::Option(format!(
                "unknown time unit {other:?}: expected ns, ms, s or rfc3339"
            ))),
        }
    }
}

impl std::fmt::Display for TimeUnit {
    /// As `--time-unit` takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Ns => "ns",
            Self::Ms => "ms",
            Self::S => "s",
            Self::Rfc3339 => "rfc3339",
        })
    }
}

/// File format of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// CSV with a header.
    Csv,
    /// JSON Lines.
    JsonLines,
}

impl TraceFormat {
    /// `.jsonl`/`.ndjson` are JSON Lines, and so is Parquet (`.parquet`,
    /// or a file starting with Parquet's magic bytes: its rows are read as
    /// JSON objects, see [`parquet`](super::parquet)); everything else is
    /// CSV.
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl") | Some("ndjson") | Some("parquet") => Self::JsonLines,
            _ if super::parquet::is_parquet(path) => Self::JsonLines,
            _ => Self::Csv,
        }
    }
}

/// What to do with a time earlier than the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Disorder {
    /// An error naming the line (default).
    #[default]
    Reject,
    /// Sort events within a window of this many nanoseconds; an event older
    /// than what was already emitted is still an error.
    SortWithin(Nanos),
}

/// Options of a trace reader.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceOptions {
    /// Unit of a `time`/`timestamp` column.
    pub unit: TimeUnit,
    /// The unit was stated (not the default): a header whose time column
    /// names another unit (`t_ms` with `s`) is then a contradiction, an
    /// error, not a silent choice.
    pub unit_given: bool,
    /// Out-of-order handling.
    pub disorder: Disorder,
    /// Most events held for sorting (bounds memory; default 1,000,000).
    pub max_buffered: Option<usize>,
    /// Skip (and count) a line older than the reorder window allows,
    /// instead of stopping with an error naming it.
    pub skip_late: bool,
    /// How requests logged with whole-second times are spread within their
    /// second (None: `uniform` for whole-second logs, nothing otherwise).
    pub spread: Option<Spread>,
    /// Seed of the `uniform` spread ([`spread_seed`] of the run's seed).
    pub spread_seed: u64,
}

impl TraceOptions {
    /// The reader's options as every front end states them (`size`'s and
    /// `replay`'s flags, the decision lab's `trace` object): the unit, a
    /// reorder window in ms (None: an out-of-order line is an error),
    /// whether late lines are skipped, the spread, and the run's seed (the
    /// spread's is derived from it, [`spread_seed`]).
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::{Disorder, TimeUnit, TraceOptions};
    /// let o = TraceOptions::of(Some(TimeUnit::Ms), Some(5), false, None, 1);
    /// assert_eq!(o.disorder, Disorder::SortWithin(5_000_000));
    /// assert_eq!((o.unit, o.unit_given), (TimeUnit::Ms, true));
    /// assert_eq!(o.max_buffered, None);
    /// ```
    pub fn of(
        unit: Option<TimeUnit>,
        sort_window_ms: Option<u64>,
        skip_late: bool,
        spread: Option<Spread>,
        seed: u64,
    ) -> Self {
        TraceOptions {
            unit: unit.unwrap_or_default(),
            unit_given: unit.is_some(),
            disorder: match sort_window_ms {
                Some(ms) => Disorder::SortWithin(ms.saturating_mul(crate::clock::MILLI)),
                None => Disorder::Reject,
            },
            max_buffered: None,
            skip_late,
            spread,
            spread_seed: spread_seed(seed),
        }
    }
}

/// The `uniform` spread's seed for a run seeded `seed`: derived the same
/// way by every command that reads a trace (`size`, the decision lab,
/// `replay`), so one seed spreads one log the same way everywhere.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::spread_seed;
/// assert_eq!(spread_seed(1), spread_seed(1));
/// assert_ne!(spread_seed(1), 1);
/// ```
pub fn spread_seed(seed: u64) -> u64 {
    crate::rng::derive_seed(seed, &[crate::rng::stream::WORKLOAD])
}

/// How requests that share a whole-second time are spread within it (see
/// [`spread`](super::spread)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// Keep the logged second: every request of a second at one instant.
    None,
    /// The `n` requests of a second at `i * 1 s / n`, in line order.
    Even,
    /// `n` seeded uniform offsets within the second, sorted, given to the
    /// requests in line order.
    Uniform,
}

impl Spread {
    /// The `--spread` flag of `size` and `replay`: absent is the reader's
    /// default, a bad name is a one-line error naming the flag.
    ///
    /// ```
    /// use ratelab::workload::trace::Spread;
    /// assert_eq!(Spread::parse_flag(Some("even")).unwrap(), Some(Spread::Even));
    /// assert_eq!(Spread::parse_flag(None).unwrap(), None);
    /// assert!(Spread::parse_flag(Some("later")).unwrap_err().to_string().starts_with("--spread: "));
    /// ```
    pub fn parse_flag(flag: Option<&str>) -> crate::error::Result<Option<Spread>> {
        flag.map(|s| {
            s.parse::<Spread>()
                .map_err(|m| crate::error::Error::input(format!("--spread: {m}")))
        })
        .transpose()
    }

    /// The name as the options write it.
    pub fn name(self) -> &'static str {
        match self {
            Spread::None => "none",
            Spread::Even => "even",
            Spread::Uniform => "uniform",
        }
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Spread {
    type Err = super::error::ParseError;
    fn from_str(s: &str) -> std::result::Result<Self, super::error::ParseError> {
        match s {
            "none" => Ok(Spread::None),
            "even" => Ok(Spread::Even),
            "uniform" => Ok(Spread::Uniform),
            other => Err(super::error::ParseError::Option(format!(
                "unknown spread {other:?}: expected uniform, even or none"
            ))),
        }
    }
}

/// Longest line accepted (a guard against a binary file read as a trace).
pub const MAX_LINE: usize = 1 << 20;
