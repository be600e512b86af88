//! Reading a trace whole for validation: arrival order, the deployed
//! limiter's answers, the groups of equal arrivals compared by count.

use super::*;
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
        let (t_log, key_at, w) = match parser
            .parse(line, &mut held)
            .map_err(|m| at(line_no, m.to_string()))?
        {
            Parsed::Header => {
                side.header(line).map_err(|m| at(line_no, m.to_string()))?;
                continue;
            }
            Parsed::Event(t, k, w) | Parsed::Elsewhere(t, k, w) => (t, k, w),
        };
        side.header(line).map_err(|m| at(line_no, m.to_string()))?;
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
        let split = side.split(line).map_err(|m| at(line_no, m.to_string()))?;
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
    let unit = t.unit.unwrap_or_default();
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
            Some(i) => {
                parse_weight(rec.get(i).unwrap_or_default()).map_err(|m| at(line, m.to_string()))?
            }
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
