//! `ratelab replay --algo token-bucket`: one `golang.org/x/time/rate`
//! `Limiter` call per row ([`crate::model::x_time_rate`]).
//!
//! ```text
//! ratelab replay --algo token-bucket --limit 2 --burst 1 [--go-version v0.13.0]
//!                --trace in.csv --out out.csv
//! ```
//!
//! # Input
//! Header `t_ns,n,op` followed by any of the optional columns `deadline_ns`
//! and `arg` (any order). One call per row by a separate caller at `t_ns`
//! (nanoseconds since a fixed epoch, read as Go's `time.Unix(0, t_ns)`;
//! non-decreasing; `--unsorted` accepts a clock that steps back). `n` is Go's `int` (any `int64`, negative included, as Go
//! accepts). `op`:
//! * `allow`: `AllowN(t, n)`.
//! * `reserve`: `ReserveN(t, n)`; the reservation is kept for `cancel`.
//! * `wait`: `WaitN(ctx, n)` called at `t`; `deadline_ns` (relative to `t`,
//!   0 or empty = no deadline, negative = already expired) is the
//!   context's deadline.
//! * extensions: `cancel` (`CancelAt(t)` of the reservation made by data
//!   row `arg`, 0-based), `set_limit` (`SetLimitAt(t, arg)`; `arg` as for
//!   `--limit`, or with `--float-bits` any float64 bit pattern, negative and
//!   NaN included), `set_burst` (`SetBurstAt(t, arg)`, any `int`), `tokens`
//!   (`TokensAt(t)`, shown with `--internals`).
//!
//! # Output
//! The input columns as given, then `ok` and `delay_ns`: `allow` -> 0;
//! `reserve` -> `DelayFrom(t)`, -1 when not OK; `wait` -> how long `Wait`
//! sleeps before returning nil (`InfDuration` = 9223372036854775807 when it
//! would sleep forever, e.g. a zero limit since v0.7.0), -1 when it returns
//! an error; `cancel` -> ok false if the row held no reservation; other
//! ops -> true, 0. `--internals` adds `tokens_bits` (TokensAt as float64
//! bits, `tokens` rows), `err` (Go's error text) and `state` (the
//! limiter's unexported fields `tokens_bits;burst;last;lastEvent`, times as
//! Unix `seconds.nanoseconds` or `zero`) — the format of
//! `tests/golden/pacers/tb_*.csv`, byte for byte.
//!
//! # Versions
//! `--go-version` picks the x/time behaviour (see
//! [`XTimeVersion`]): `v0.3.0`..`v0.6.0`, `v0.7.0`..`v0.9.0`,
//! `v0.10.0`..`v0.13.0`. The default is **the newest tag, v0.13.0**, which
//! the model was checked against (built from source with the harness); the
//! older behaviour is what Debian's 0.3.0-1 package ships.
//!
//! `--limit` is events per second: a non-negative decimal, or `inf` for
//! `rate.Inf` (= `math.MaxFloat64`, which skips the bucket). `--burst` is a
//! non-negative `int`.

use super::csvio::{parse_i64, OutputCsv, TraceReader};
use super::ReplayArgs;
use crate::error::{Error, Result};
use crate::model::x_time_rate::{
    fmt_time, CallExtras, Limit, StepExtras, TokenBucket, TokenBucketCall, TokenBucketOp,
    TokenBucketReplay, TokenBucketResult, XTimeVersion, INF,
};
use std::collections::HashMap;

/// Replays `args.trace` into `args.out`.
pub fn run(args: &ReplayArgs) -> Result<()> {
    super::reject_unused(
        args,
        "token-bucket",
        &[
            "--limit",
            "--burst",
            "--go-version",
            "--float-bits",
            "--internals",
            "--act",
            "--unsorted",
        ],
    )?;
    let (limit, burst, version) = bucket_config(args)?;

    let mut input = TraceReader::open(&args.trace)?;
    let cols = Columns::from_header(&input)?;
    let mut out = OutputCsv::create(&args.out)?;
    let mut header: Vec<String> = input.header().to_vec();
    header.extend(["ok".to_string(), "delay_ns".to_string()]);
    if args.internals {
        header.extend(["tokens_bits", "err", "state"].map(String::from));
    }
    if args.act {
        header.push("act_ns".to_string());
    }
    out.row(&header)?;
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut data_row = 0usize;

    let mut replay = TokenBucketReplay::new_version(limit, burst, version);
    let mut prev_t: Option<i64> = None;
    let mut fields: Vec<String> = Vec::with_capacity(header.len());
    loop {
        let (call, line, ext) = {
            let Some((line, rec)) = input.next_row()? else {
                break;
            };
            fields.clear();
            fields.extend(rec.iter().map(str::to_string));
            let ext = parse_extras(&input, line, &cols, &fields, &ids)?;
            let call = if ext.cancel_row.is_some() {
                let mut f = fields.clone();
                if let Some(a) = cols.arg {
                    f[a] = "0".to_string();
                }
                parse_row(&input, line, &cols, &f, args.float_bits)?
            } else {
                parse_row(&input, line, &cols, &fields, args.float_bits)?
            };
            (call, line, ext)
        };
        if let Some(i) = cols.id {
            let id = fields[i].clone();
            if !id.is_empty() && ids.insert(id.clone(), data_row).is_some() {
                return Err(input.error_at(line, format!("id value {id:?} appears twice")));
            }
        }
        data_row += 1;
        if let Some(p) = prev_t.filter(|_| !args.unsorted)
            && call.t_ns < p
        {
            return Err(input.error_at(
                line,
                format!(
                    "t_ns value {}: times must be non-decreasing (previous t_ns {p})",
                    call.t_ns
                ),
            ));
        }
        prev_t = Some(call.t_ns);
        let (r, more) = replay.step_with(&call, &ext);
        push_result(&mut fields, &r, &more, replay.limiter(), args);
        out.row(&fields)?;
    }
    out.commit()
}

/// `--limit`, `--burst` and `--go-version`: `NewLimiter`'s arguments and
/// the x/time version to model.
fn bucket_config(args: &ReplayArgs) -> Result<(Limit, i64, XTimeVersion)> {
    let limit = match &args.limit {
        Some(s) => parse_limit(s, args.float_bits)
            .map_err(|m| Error::input(format!("--limit {s}: {m}")))?,
        None => {
            return Err(Error::input(
                "--limit is required for --algo token-bucket (events per second, or inf)",
            ))
        }
    };
    let burst = match args.burst {
        Some(b) if b >= 0 => b,
        Some(b) => {
            return Err(Error::input(format!(
                "--burst {b}: expected a non-negative bucket depth"
            )))
        }
        None => return Err(Error::input("--burst is required for --algo token-bucket")),
    };
    let version = match &args.go_version {
        None => XTimeVersion::LATEST,
        Some(v) => XTimeVersion::parse(v).ok_or_else(|| {
            Error::input(format!(
                "--go-version {v}: expected a golang.org/x/time tag v0.3.0 ... v0.13.0 or latest"
            ))
        })?,
    };

    Ok((limit, burst, version))
}

/// Appends a call's result columns (`ok`, `delay_ns`, then `--internals`
/// and `--act` ones) to its row.
fn push_result(
    fields: &mut Vec<String>,
    r: &TokenBucketResult,
    more: &StepExtras,
    limiter: &TokenBucket,
    args: &ReplayArgs,
) {
    fields.push(r.ok.to_string());
    fields.push(r.delay_ns.to_string());
    if args.internals {
        fields.push(
            r.tokens
                .map(|t| format!("{:016x}", t.to_bits()))
                .unwrap_or_default(),
        );
        fields.push(r.error.as_ref().map(|e| e.to_string()).unwrap_or_default());
        fields.push(format!(
            "{:016x};{};{};{}",
            limiter.raw_tokens().to_bits(),
            limiter.burst(),
            fmt_time(limiter.last()),
            fmt_time(limiter.last_event())
        ));
    }
    if args.act {
        fields.push(
            more.act
                .map(|a| a.as_i128().to_string())
                .unwrap_or_default(),
        );
    }
}

/// A limit column's value that does not read; the caller adds the line
/// and the value. Bad input (exit 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// `--float-bits`: not 16 hex digits.
    #[error("expected 16 hex digits of a float64 bit pattern (--float-bits)")]
    NotBits,
    /// Not a number nor `inf`.
    #[error("expected a number of events per second or inf")]
    NotANumber,
    /// `NaN`.
    #[error("NaN: expected a number of events per second or inf")]
    NaN,
    /// A decimal beyond the float64 range.
    #[error("out of the float64 range: expected a finite number or inf")]
    OutOfRange,
    /// Below zero.
    #[error("negative: expected a non-negative number of events per second")]
    Negative,
}

/// Parses a limit: a non-negative decimal or `inf` (= `rate.Inf`); with
/// `bits`, 16 hex digits of a float64 bit pattern (any value).
pub fn parse_limit(s: &str, bits: bool) -> std::result::Result<Limit, LimitError> {
    let t = s.trim();
    if bits {
        let hex = t.strip_prefix("0x").unwrap_or(t);
        if hex.len() != 16 {
            return Err(LimitError::NotBits);
        }
        return u64::from_str_radix(hex, 16)
            .map(f64::from_bits)
            .map_err(|_| LimitError::NotBits);
    }
    if matches!(
        t.to_ascii_lowercase().as_str(),
        "inf" | "+inf" | "infinity" | "+infinity"
    ) {
        return Ok(INF);
    }
    let v: f64 = t.parse().map_err(|_| LimitError::NotANumber)?;
    if v.is_nan() {
        return Err(LimitError::NaN);
    }
    if v.is_infinite() {
        return Err(LimitError::OutOfRange);
    }
    if v < 0.0 {
        return Err(LimitError::Negative);
    }
    Ok(v)
}

/// Where each column is.
struct Columns {
    deadline: Option<usize>,
    arg: Option<usize>,
    max_wait: Option<usize>,
    cancel: Option<usize>,
    id: Option<usize>,
}

impl Columns {
    fn from_header(r: &TraceReader) -> Result<Self> {
        let h = r.header();
        let expected =
            "expected t_ns,n,op then optionally deadline_ns, arg, max_wait_ns, cancel_ns, id";
        if h.len() < 3 || h[0] != "t_ns" || h[1] != "n" || h[2] != "op" {
            return Err(r.error_at(1, format!("header {:?}: {expected}", h.join(","))));
        }
        let mut cols = Columns {
            deadline: None,
            arg: None,
            max_wait: None,
            cancel: None,
            id: None,
        };
        for (i, name) in h.iter().enumerate().skip(3) {
            let slot = match name.as_str() {
                "deadline_ns" => &mut cols.deadline,
                "arg" => &mut cols.arg,
                "max_wait_ns" => &mut cols.max_wait,
                "cancel_ns" => &mut cols.cancel,
                "id" => &mut cols.id,
                _ => return Err(r.error_at(1, format!("header column {name:?}: {expected}"))),
            };
            if slot.is_some() {
                return Err(r.error_at(1, format!("header column {name:?} appears twice")));
            }
            *slot = Some(i);
        }
        Ok(cols)
    }
}

/// The extension columns of a row: `max_wait_ns` (reserve), `cancel_ns`
/// (wait) and a `cancel` whose `arg` names an `id`.
fn parse_extras(
    r: &TraceReader,
    line: u64,
    cols: &Columns,
    f: &[String],
    ids: &HashMap<String, usize>,
) -> Result<CallExtras> {
    let get = |i: Option<usize>| i.and_then(|i| f.get(i)).map(String::as_str).unwrap_or("");
    let op = get(Some(2));
    let mut ext = CallExtras::default();
    let max_wait = get(cols.max_wait);
    if !max_wait.is_empty() {
        if op != "reserve" {
            return Err(r.error_at(line, format!("max_wait_ns is for reserve rows, not {op}")));
        }
        ext.max_wait_ns = Some(parse_i64(r, line, "max_wait_ns", max_wait)?);
    }
    let cancel = get(cols.cancel);
    if !cancel.is_empty() {
        if op != "wait" {
            return Err(r.error_at(line, format!("cancel_ns is for wait rows, not {op}")));
        }
        ext.cancel_ns = Some(parse_i64(r, line, "cancel_ns", cancel)?);
    }
    let arg = get(cols.arg);
    if (op == "cancel" || op == "cancel_at") && cols.id.is_some() && !arg.is_empty() {
        match ids.get(arg) {
            Some(&row) => ext.cancel_row = Some(row),
            None if arg.parse::<usize>().is_ok() => {}
            None => {
                return Err(r.error_at(
                    line,
                    format!("arg value {arg:?}: no earlier row has this id"),
                ))
            }
        }
    }
    Ok(ext)
}

fn parse_row(
    r: &TraceReader,
    line: u64,
    cols: &Columns,
    f: &[String],
    float_bits: bool,
) -> Result<TokenBucketCall> {
    let get = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
    let t_ns = parse_i64(r, line, "t_ns", get(0))?;
    let n = parse_i64(r, line, "n", get(1))?;
    let deadline_ns = match cols.deadline.map(get) {
        None | Some("") => 0,
        Some(v) => parse_i64(r, line, "deadline_ns", v)?,
    };
    let arg = cols.arg.map(get).unwrap_or("");
    let need_arg = |what: &str| -> Result<()> {
        if cols.arg.is_none() || arg.is_empty() {
            return Err(r.error_at(
                line,
                format!("op {}: needs an arg column with {what}", get(2)),
            ));
        }
        Ok(())
    };
    let op = match get(2) {
        "allow" => TokenBucketOp::Allow,
        "reserve" => TokenBucketOp::Reserve,
        "wait" => TokenBucketOp::Wait,
        "tokens" => TokenBucketOp::Tokens,
        "cancel" | "cancel_at" => {
            need_arg("the 0-based data row of the reservation")?;
            let row = arg.parse::<usize>().map_err(|_| {
                r.error_at(
                    line,
                    format!("arg value {arg:?}: expected the 0-based data row of a reservation"),
                )
            })?;
            TokenBucketOp::Cancel { row }
        }
        "set_limit" => {
            need_arg("the new limit")?;
            let l = parse_limit(arg, float_bits)
                .map_err(|m| r.error_at(line, format!("arg value {arg:?}: {m}")))?;
            TokenBucketOp::SetLimit(l)
        }
        "set_burst" => {
            need_arg("the new burst")?;
            TokenBucketOp::SetBurst(parse_i64(r, line, "arg", arg)?)
        }
        other => {
            return Err(r.error_at(
                line,
                format!(
                    "op value {other:?}: expected allow, reserve, wait, cancel, set_limit, set_burst or tokens"
                ),
            ))
        }
    };
    Ok(TokenBucketCall {
        t_ns,
        n,
        op,
        deadline_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::x_time_rate::GoTime;

    #[test]
    fn limits() {
        assert_eq!(parse_limit("2", false), Ok(2.0));
        assert_eq!(parse_limit("inf", false), Ok(INF));
        assert_eq!(parse_limit("Inf", false), Ok(INF));
        assert!(parse_limit("-1", false).is_err());
        assert!(parse_limit("NaN", false).is_err());
        assert!(parse_limit("1e400", false).is_err());
        assert!(parse_limit("x", false).is_err());
        assert_eq!(parse_limit("bff0000000000000", true), Ok(-1.0));
        assert_eq!(parse_limit("0x3ff0000000000000", true), Ok(1.0));
        assert!(parse_limit("3ff", true).is_err());
    }

    #[test]
    fn go_time_format() {
        assert_eq!(fmt_time(GoTime::ZERO), "zero");
        assert_eq!(
            fmt_time(GoTime::from_unix_nanos(1_500_000_000)),
            "1.500000000"
        );
        assert_eq!(fmt_time(GoTime::from_unix_nanos(-1)), "-1.999999999");
    }
}
