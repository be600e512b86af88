use super::parse::Columns;
use super::*;
use crate::error::Result;
use proptest::prelude::*;
use std::path::Path;

proptest! {
    /// The split fast path reads every quote-free line exactly as the
    /// csv parser does: same event, or the same error message.
    #[test]
    fn plain_csv_lines_parse_like_the_csv_crate(
        fields in proptest::collection::vec("[0-9a-z .,:\\-]{0,6}", 0..5),
        time in 0usize..4,
        key in 0usize..4,
        weight in proptest::option::of(0usize..4),
        width in 1usize..5,
        unit in prop_oneof![Just(TimeUnit::Ns), Just(TimeUnit::Ms), Just(TimeUnit::S)],
    ) {
        let line = fields.join(",");
        let r = TraceReader::new(
            Path::new("t.csv"),
            TraceFormat::Csv,
            Box::new(std::io::Cursor::new(Vec::new())),
            TraceOptions::default(),
        );
        let c = Columns { time, unit, key, weight, width };
        let fast = r
            .parse_csv_plain(&line, c)
            .expect("a quote-free line is read by the split")
            .map_err(|e| e.to_string());
        let slow = r.parse_csv_quoted(&line, c).map_err(|e| e.to_string());
        // The csv crate reads an empty line as no record at all.
        if !line.is_empty() {
            prop_assert_eq!(fast, slow);
        }
    }
}

proptest! {
    /// A whole number of at most 19 digits (the fast path) and of 20 or
    /// more (the general one) reads as Rust's own parse of it times the
    /// unit, or fails when that overflows.
    #[test]
    fn whole_numbers_read_as_the_standard_parse(
        digits in "[0-9]{1,22}",
        scale in prop_oneof![Just(1u64), Just(1_000_000), Just(1_000_000_000)],
    ) {
        let want = digits.parse::<u64>().ok().and_then(|v| v.checked_mul(scale));
        prop_assert_eq!(parse_decimal_ns(&digits, scale).ok(), want);
    }
}

#[test]
fn quoted_and_carriage_return_lines_leave_the_split() {
    let r = TraceReader::new(
        Path::new("t.csv"),
        TraceFormat::Csv,
        Box::new(std::io::Cursor::new(Vec::new())),
        TraceOptions::default(),
    );
    let c = Columns {
        time: 0,
        unit: TimeUnit::Ns,
        key: 1,
        weight: None,
        width: 2,
    };
    assert!(r.parse_csv_plain("5,\"a,b\"", c).is_none());
    assert!(r.parse_csv_plain("5,a\r", c).is_none());
    let (t, k, w) = r.parse_csv("5,\"a,b\"", c).unwrap();
    assert_eq!((t, k.as_ref(), w), (5, "a,b", 1));
    let (t, k, w) = r.parse_csv_plain("7,é", c).unwrap().unwrap();
    assert_eq!((t, k.as_ref(), w), (7, "é", 1));
}

fn read(text: &str, format: TraceFormat, opts: TraceOptions) -> Vec<Result<TraceEvent>> {
    TraceReader::new(
        Path::new("t.csv"),
        format,
        Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        opts,
    )
    .collect()
}

fn ok(text: &str, format: TraceFormat, opts: TraceOptions) -> Vec<(u64, String, u64)> {
    read(text, format, opts)
        .into_iter()
        .map(|r| r.map(|e| (e.t_ns, e.key, e.weight)).unwrap())
        .collect()
}

#[test]
fn decimal_times_are_exact() {
    assert_eq!(parse_decimal_ns("1.5", 1_000_000_000), Ok(1_500_000_000));
    assert_eq!(parse_decimal_ns("0.000000001", 1_000_000_000), Ok(1));
    assert_eq!(parse_decimal_ns("12.250", 1_000_000), Ok(12_250_000));
    assert!(parse_decimal_ns("1.0000000001", 1_000_000_000).is_err());
    assert!(parse_decimal_ns("-1", 1).is_err());
    assert!(parse_decimal_ns("1e3", 1).is_err());
    assert!(parse_decimal_ns("18446744073709551616", 1).is_err());
    assert!(parse_decimal_ns("18446744074", 1_000_000_000).is_err());
}

#[test]
fn csv_units_weights_and_rfc3339() {
    let csv = "t_ms,key,weight\n1.5,a,2\n3,\"b,c\",1\n";
    assert_eq!(
        ok(csv, TraceFormat::Csv, TraceOptions::default()),
        vec![(1_500_000, "a".into(), 2), (3_000_000, "b,c".into(), 1)]
    );
    let opts = TraceOptions {
        unit: TimeUnit::Rfc3339,
        ..Default::default()
    };
    let csv = "timestamp,key\n2026-11-29T18:51:38.5Z,k\n";
    assert_eq!(
        ok(csv, TraceFormat::Csv, opts)[0].0,
        1_795_978_298_500_000_000
    );
}

#[test]
fn json_lines() {
    let j = "{\"t_s\": 1.25, \"key\": \"x\"}\n\n{\"t_s\": \"2\", \"key\": 7, \"weight\": 3}\n";
    assert_eq!(
        ok(j, TraceFormat::JsonLines, TraceOptions::default()),
        vec![
            (1_250_000_000, "x".into(), 1),
            (2_000_000_000, "7".into(), 3)
        ]
    );
}

#[test]
fn errors_name_the_line_and_value() {
    let e = read(
        "t_ns,key\n5,a\n4,b\n",
        TraceFormat::Csv,
        TraceOptions::default(),
    );
    let msg = e[1].as_ref().unwrap_err().to_string();
    assert!(
        msg.starts_with("t.csv: line 3: time 4 ns is earlier than the previous line's 5 ns"),
        "{msg}"
    );
    assert_eq!(e.len(), 2, "reading stops at the first error");
    let cases = [
        (
            "t_ns,key\nabc,a\n",
            TraceFormat::Csv,
            "line 2: time \"abc\" is not a non-negative decimal number",
        ),
        (
            "when,who\n",
            TraceFormat::Csv,
            "line 1: header \"when,who\"",
        ),
        (
            "t_ns,key,weight\n1,a,0\n",
            TraceFormat::Csv,
            "weight \"0\": expected a whole number >= 1",
        ),
        (
            "{\"t_ns\": 1}\n",
            TraceFormat::JsonLines,
            "line 1: no key field",
        ),
    ];
    for (text, format, want) in cases {
        let e = read(text, format, TraceOptions::default());
        let msg = e[0].as_ref().unwrap_err().to_string();
        assert!(msg.contains(want), "{msg}");
    }
}

#[test]
fn sorting_within_a_window() {
    let opts = TraceOptions {
        disorder: Disorder::SortWithin(10),
        ..Default::default()
    };
    let got = ok(
        "t_ns,key\n5,a\n3,b\n12,c\n9,d\n30,e\n",
        TraceFormat::Csv,
        opts,
    );
    assert_eq!(
        got.iter().map(|e| e.0).collect::<Vec<_>>(),
        vec![3, 5, 9, 12, 30]
    );
    let e = read("t_ns,key\n5,a\n30,b\n2,c\n", TraceFormat::Csv, opts);
    assert!(e.iter().any(|r| r
        .as_ref()
        .is_err_and(|e| e.to_string().contains("more than the reorder window"))));
}

/// A step back larger than the window is late even before anything was
/// handed out (the first window): an error naming its line, or skipped
/// and counted with `skip_late`.
#[test]
fn a_step_back_past_the_window_is_late_in_the_first_window_too() {
    let s = 1_000_000_000u64;
    let text = format!(
        "t_ns,key\n{},a\n{},b\n{},c\n{},d\n",
        100 * s,
        100 * s + 1,
        95 * s,
        100 * s + 2
    );
    let window = TraceOptions {
        disorder: Disorder::SortWithin(s),
        ..Default::default()
    };
    let e = read(&text, TraceFormat::Csv, window);
    let err = e
        .iter()
        .find_map(|r| r.as_ref().err())
        .map(|e| e.to_string());
    let err = err.expect("a 5 s step back with a 1 s window is an error");
    assert!(
        err.contains("line 4") && err.contains("reorder window"),
        "{err}"
    );
    let skip = TraceOptions {
        skip_late: true,
        ..window
    };
    let mut r = TraceReader::new(
        Path::new("t.csv"),
        TraceFormat::Csv,
        Box::new(std::io::Cursor::new(text.into_bytes())),
        skip,
    );
    let keys: Vec<String> = (&mut r).map(|e| e.unwrap().key).collect();
    assert_eq!(keys, ["a", "b", "d"]);
    assert_eq!(r.late_skipped(), 1);
    // Within the window: sorted in.
    let text = format!("t_ns,key\n{},a\n{},b\n", 100 * s, 100 * s - s / 2);
    assert_eq!(ok(&text, TraceFormat::Csv, window).len(), 2);
}

#[test]
fn a_byte_order_mark_is_skipped_in_every_format() {
    use std::io::Read;
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), b"\xef\xbb\xbft_ns,key\n1,a\n").unwrap();
    let mut text = String::new();
    input::open(f.path())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "t_ns,key\n1,a\n");
    let csv = TraceReader::open(f.path(), TraceOptions::default()).unwrap();
    assert_eq!(csv.map(|e| e.unwrap().key).collect::<Vec<_>>(), ["a"]);
    // An access log, and a mark at a concatenated file's start.
    let line = r#"192.0.2.10 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "c""#;
    let log = format!(
        "\u{feff}{line}\n\u{feff}{}\n",
        line.replace("192.0.2.10", "192.0.2.11")
    );
    let spec = LogSpec {
        format: "combined".into(),
        ..LogSpec::default()
    };
    std::fs::write(f.path(), log).unwrap();
    let r = TraceReader::open_with(f.path(), TraceOptions::default(), Some(&spec)).unwrap();
    let keys: Vec<String> = r.map(|e| e.unwrap().key).collect();
    assert_eq!(keys, ["192.0.2.10", "192.0.2.11"]);
}

#[test]
fn spread_none_is_in_the_description_of_a_whole_second_log() {
    let line = r#"192.0.2.10 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "c""#;
    let spec = LogSpec {
        format: "combined".into(),
        ..LogSpec::default()
    };
    for (spread, want) in [
        (Some(Spread::None), ", spread none"),
        (Some(Spread::Even), ", spread even (seed 3)"),
        (None, ", spread uniform (seed 3)"),
    ] {
        let opts = TraceOptions {
            spread,
            spread_seed: 3,
            ..TraceOptions::default()
        };
        let mut r = TraceReader::new(
            Path::new("a.log"),
            TraceFormat::Csv,
            Box::new(std::io::Cursor::new(line.as_bytes().to_vec())),
            opts,
        );
        r.set_log(&spec).unwrap();
        r.next().unwrap().unwrap();
        let d = r.describe();
        assert!(d.ends_with(want), "{d}");
    }
}

#[test]
fn export_then_import_round_trips() {
    let events = vec![
        TraceEvent {
            t_ns: 1,
            key: "a,\"b\"".into(),
            weight: 2,
        },
        TraceEvent {
            t_ns: 7,
            key: "c".into(),
            weight: 1,
        },
    ];
    for format in [TraceFormat::Csv, TraceFormat::JsonLines] {
        let mut w = TraceWriter::new(Vec::new(), format);
        for e in &events {
            w.write(e).unwrap();
        }
        let bytes = w.finish().unwrap();
        let back: Vec<TraceEvent> = TraceReader::new(
            Path::new("x"),
            format,
            Box::new(std::io::Cursor::new(bytes)),
            TraceOptions::default(),
        )
        .map(|r| r.unwrap())
        .collect();
        assert_eq!(back, events);
    }
}

/// Every event or error `next_ref` hands out, as owned values.
fn read_ref(text: &str, format: TraceFormat, opts: TraceOptions) -> Vec<Result<TraceEvent>> {
    let mut r = TraceReader::new(
        Path::new("t.csv"),
        format,
        Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        opts,
    );
    let mut out = Vec::new();
    while let Some(e) = r.next_ref() {
        out.push(e.map(|(t_ns, key, weight)| TraceEvent {
            t_ns,
            key: key.to_string(),
            weight,
        }));
    }
    out
}

#[test]
fn borrowed_keys_give_the_iterators_events_and_errors() {
    let sorted = TraceOptions {
        disorder: Disorder::SortWithin(10),
        ..Default::default()
    };
    let cases = [
        (
            "t_ms,key,weight\n1.5,a,2\n\n3,\"b,c\",1\n4,d,3\n",
            TraceFormat::Csv,
        ),
        ("key,t_ns\nx,5\ny,4\n", TraceFormat::Csv),
        ("t_ns,key\n5,a\nabc,b\n", TraceFormat::Csv),
        ("t_ns,key\n5,a\n9,\n12,é\n", TraceFormat::Csv),
        ("t_ns,key\n5,a\n30,b\n2,c\n7\n", TraceFormat::Csv),
        ("t_ns,key\n5,a\n3,b\n12,c\n9,d\n30,e\n", TraceFormat::Csv),
        (
            "{\"t_s\": 1.25, \"key\": \"x\"}\n\n{\"t_s\": \"2\", \"key\": 7, \"weight\": 3}\n",
            TraceFormat::JsonLines,
        ),
        ("{\"t_ns\": 1}\n", TraceFormat::JsonLines),
    ];
    let mut events = 0;
    for (text, format) in cases {
        for opts in [TraceOptions::default(), sorted] {
            let show = |v: Vec<Result<TraceEvent>>| {
                v.into_iter()
                    .map(|r| r.map_err(|e| e.to_string()))
                    .collect::<Vec<_>>()
            };
            let owned = show(read(text, format, opts));
            events += owned.iter().filter(|e| e.is_ok()).count();
            assert_eq!(show(read_ref(text, format, opts)), owned, "{text:?}");
        }
    }
    assert!(events > 20, "the cases hold events: {events}");
    // Invalid UTF-8 is the same error, and the reader stops there.
    let bad = b"t_ns,key\n1,a\n2,\xff\n3,c\n".to_vec();
    let mut r = TraceReader::new(
        Path::new("t.csv"),
        TraceFormat::Csv,
        Box::new(std::io::Cursor::new(bad)),
        TraceOptions::default(),
    );
    assert_eq!(r.next_ref().unwrap().unwrap(), (1, "a", 1));
    let msg = r.next_ref().unwrap().unwrap_err().to_string();
    assert!(msg.contains("line 3: not valid UTF-8 (byte 3)"), "{msg}");
    assert!(r.next_ref().is_none());
}

/// A combined log of `n` lines (many blocks: a test block is 4 KiB) with
/// blank lines and CRLF endings among them, over a few seconds.
fn combined_log(n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let ip = format!("10.0.{}.{}", i % 7, (i * 31) % 251);
        let sec = 10 + i / 97;
        out.push_str(&format!(
            "{ip} - - [01/Jan/2024:00:00:{sec:02} +0000] \"GET /u/{i} HTTP/1.1\" 200 {} \"-\" \"agent {}\"",
            i % 50,
            "x".repeat(i % 300)
        ));
        out.push_str(match i % 13 {
            0 => "\r\n",
            5 => "\n\n",
            _ => "\n",
        });
    }
    out
}

/// Events (time, key, weight) and the error that ended them.
type Read = (Vec<(u64, Option<String>, u64)>, Option<String>);

/// What reading `text` line by line gives: each line's event (its key
/// None where `owns` does not want it), then the first error, at its line.
fn line_by_line(
    text: &[u8],
    spec: &LogSpec,
    owns: Option<&dyn Fn(&str) -> bool>,
    keep: bool,
) -> Read {
    let mut p = log::LogParser::new(spec).unwrap();
    let mut held = String::new();
    let mut out = Vec::new();
    for (i, raw) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        let err = |m: &dyn std::fmt::Display| Some(format!("t.log: line {}: {m}", i + 1));
        if raw.len() > MAX_LINE {
            return (out, err(&format!("longer than {MAX_LINE} bytes")));
        }
        let mut line = raw;
        while let [head @ .., b'\n' | b'\r'] = line {
            line = head;
        }
        let line = match std::str::from_utf8(line) {
            Ok(l) => l,
            Err(e) => {
                let at = e.valid_up_to() + 1;
                return (out, err(&format!("not valid UTF-8 (byte {at})")));
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let parsed = match owns {
            Some(f) => p.parse_owned(line, &mut held, f),
            None => p.parse(line, &mut held),
        };
        match parsed {
            Ok(log::Parsed::Header) => {}
            Ok(log::Parsed::Event(t, r, w)) => {
                let k = r.map_or(held.clone(), |r| line[r].to_string());
                out.push((t, Some(k), w));
            }
            Ok(log::Parsed::Elsewhere(t, r, w)) => {
                let k = r.map_or(held.clone(), |r| line[r].to_string());
                out.push((t, keep.then_some(k), w))
            }
            Err(m) => return (out, err(&m)),
        }
    }
    (out, None)
}

/// The block reader hands out what reading line by line gives, events and
/// first error alike, at 1 and 2 threads, with and without a key filter:
/// over block ends, blank and CRLF lines, and a line wrong at either end,
/// not UTF-8, or too long, anywhere in the log.
#[test]
fn blocks_read_as_lines_do_at_any_thread_count() {
    let good = combined_log(3000);
    let lines: Vec<&str> = good.split_inclusive('\n').collect();
    let mut cases: Vec<Vec<u8>> = vec![good.clone().into_bytes()];
    // Each bad line at the time of the line before it (in order).
    let time = |at: usize| {
        let prev = lines[..at].iter().rev().find(|l| l.contains('[')).unwrap();
        prev[prev.find('[').unwrap() + 1..prev.find(']').unwrap()].to_string()
    };
    for (at, bad) in [
        (
            1,
            "10.0.0.1 - - [01/Jan/2024:00:00:99 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"a\"\n"
                .to_string(),
        ),
        (
            777,
            format!(
                "10.0.0.1 - - [{}] \"GET / HTTP/1.1\" 200 1 \"-\" \"a\" trailing\n",
                time(777)
            ),
        ),
        (
            1500,
            format!(
                "10.0.0.2 - - [{}] \"GET / HTTP/1.1\" 200 1 \"-\n",
                time(1500)
            ),
        ),
        (2100, "garbage\n".to_string()),
        (
            2999,
            format!(
                "10.0.0.3 - - [{}] \"GET / HTTP/1.1\" 200 1 \"-\" \"{}\"\n",
                time(2999),
                "y".repeat(MAX_LINE)
            ),
        ),
    ] {
        let mut text = lines[..at].concat().into_bytes();
        text.extend_from_slice(bad.as_bytes());
        text.extend_from_slice(lines[at..].concat().as_bytes());
        cases.push(text);
    }
    // Not UTF-8 past the key, at line 1234 (its line number counts the
    // blank lines before it).
    let mut text = good.clone().into_bytes();
    let at = good.match_indices("agent").nth(1234).unwrap().0;
    text[at + 2] = 0xff;
    cases.push(text);
    // No line end at the end.
    cases.push(good.trim_end().as_bytes().to_vec());
    let spec = LogSpec {
        format: "combined".into(),
        ..LogSpec::default()
    };
    let owns: Owns = |k| crate::lab::shard::key_shard(k, 3) == 1;
    let mut errors = 0;
    for text in &cases {
        for (filtered, keep) in [(false, false), (true, false), (true, true)] {
            let filter: Option<&dyn Fn(&str) -> bool> = filtered.then_some(&owns);
            let want = line_by_line(text, &spec, filter, keep);
            errors += usize::from(want.1.is_some());
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let got = pool.install(|| {
                    let mut r = log_reader(text, &spec, filtered.then_some((owns, keep)));
                    let mut out = Vec::new();
                    while let Some(e) = r.next_key() {
                        match e {
                            Ok((t, k, w)) => out.push((t, k.map(str::to_string), w)),
                            Err(e) => return (out, Some(e.to_string())),
                        }
                    }
                    (out, None)
                });
                let at = got.0.iter().zip(&want.0).position(|(a, b)| a != b);
                let what =
                    format!("threads {threads}, filtered {filtered}, first difference at {at:?}");
                assert_eq!(got.0.len(), want.0.len(), "{what}");
                assert_eq!(at, None, "{what}");
                assert_eq!(got.1, want.1, "{what}");
            }
        }
    }
    // Every bad line failed somewhere; the one wrong past the key and time
    // (line 778) only where its key is wanted.
    // (bad time, garbage, too long and not UTF-8 in every mode; the two
    // wrong past the key at least unfiltered.)
    assert!(errors >= 4 * 3 + 2, "{errors}");
}

/// Whether a key is this shard's.
type Owns = fn(&str) -> bool;

/// A reader of `text` as the access log `spec`, unspread, with `filter`
/// (the key filter and whether other keys' events are kept) when given.
fn log_reader(text: &[u8], spec: &LogSpec, filter: Option<(Owns, bool)>) -> TraceReader {
    let mut r = TraceReader::new(
        Path::new("t.log"),
        TraceFormat::Csv,
        Box::new(std::io::Cursor::new(text.to_vec())),
        TraceOptions {
            spread: Some(Spread::None),
            ..TraceOptions::default()
        },
    );
    r.set_log(spec).unwrap();
    if let Some((owns, keep)) = filter {
        r.set_key_filter(std::sync::Arc::new(owns), keep);
    }
    r
}

/// Keys interned while the log is parsed get the ids a reader of the
/// events would give them (first appearance), at 1 and 2 threads, with
/// and without a filter; a key past the cap is an error at its own line.
#[test]
fn ids_interned_while_parsing_are_in_first_appearance_order() {
    let text = combined_log(3000).into_bytes();
    let spec = LogSpec {
        format: "combined".into(),
        ..LogSpec::default()
    };
    let owns: Owns = |k| crate::lab::shard::key_shard(k, 3) == 1;
    for (filtered, keep) in [(false, false), (true, false), (true, true)] {
        let filter: Option<&dyn Fn(&str) -> bool> = filtered.then_some(&owns);
        let (events, err) = line_by_line(&text, &spec, filter, keep);
        assert_eq!(err, None);
        // The reference: ids in order of first appearance, and the line of
        // the 41st distinct key (lines counted with the blank ones).
        let mut reference = KeyInterner::new();
        let want: Vec<(u64, Option<u32>, u64)> = events
            .iter()
            .map(|(t, k, w)| (*t, k.as_deref().and_then(|k| reference.intern(k)), *w))
            .collect();
        assert!(reference.len() > 40, "{}", reference.len());
        for cap in [usize::MAX, 40] {
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let (got, err, names) = pool.install(|| {
                    let mut r = log_reader(&text, &spec, filtered.then_some((owns, keep)));
                    r.intern_keys(block::KeyCap {
                        keys: cap,
                        bytes_per_key: 512,
                    });
                    let mut out = Vec::new();
                    let mut err = None;
                    while let Some(e) = r.next_id() {
                        match e {
                            Ok(e) => out.push(e),
                            Err(e) => {
                                err = Some(e.to_string());
                                break;
                            }
                        }
                    }
                    let names: Vec<String> = (0..reference.len().min(cap) as u32)
                        .map(|id| r.key_name(id).unwrap_or("?").to_string())
                        .collect();
                    (out, err, names)
                });
                let what =
                    format!("filtered {filtered}, keep {keep}, cap {cap}, threads {threads}");
                if cap == usize::MAX {
                    assert_eq!(err, None, "{what}");
                    assert_eq!(got, want, "{what}");
                } else {
                    // Every event before the 41st key's, then its error.
                    let at = want.iter().position(|e| e.1 == Some(40)).unwrap();
                    assert_eq!(got[..], want[..at], "{what}");
                    let e = err.unwrap();
                    assert!(e.contains("distinct key number 41"), "{what}: {e}");
                    let key = reference.name(40).unwrap();
                    assert!(e.contains(&format!("{key:?}")), "{what}: {e}");
                }
                for (id, name) in names.iter().enumerate() {
                    assert_eq!(Some(name.as_str()), reference.name(id as u32), "{what}");
                }
            }
        }
    }
}

/// `next_id` of a CSV trace (its lines read straight from the input's
/// buffer while they are plain) hands out what the iterator does, the
/// same events with keys numbered in order of first appearance and the
/// same error at the same line, whatever the buffer's size (lines cut at
/// its end, the odd line left to the line-at-a-time path).
#[test]
fn next_id_reads_csv_as_the_iterator_at_any_buffer_size() {
    let mut long = String::from("t_ns,key,weight\n");
    for i in 0..400u64 {
        let line = match i % 37 {
            5 => String::new(),
            9 => format!("{},\"q,{}\",2", 1000 + i, i % 7),
            13 => format!("{},k{}é,1\r", 1000 + i, i % 11),
            21 => "   ".to_string(),
            _ => format!("{},k{},{}", 1000 + i, (i * 7) % 23, 1 + i % 3),
        };
        long.push_str(&line);
        long.push('\n');
    }
    let mut cases: Vec<(Vec<u8>, TraceOptions)> = [
        "t_ms,key,weight\n1.5,a,2\n\n3,\"b,c\",1\n4,d,3\n",
        "key,t_ns\nx,5\ny,4\n",
        "t_ns,key\n5,a\nabc,b\n",
        "t_ns,key\n5,a\n9,\n12,é\n",
        "t_ns,key\n5,a\n30,b\n2,c\n7\n",
        "t_ns,key,weight\n5,a,1\n6,b,0\n",
        "t_ns,key\n5,a,x\n",
        "t_ns,key\n5,a\n6,b",
        &long,
    ]
    .iter()
    .map(|t| (t.as_bytes().to_vec(), TraceOptions::default()))
    .collect();
    cases.push((
        b"t_ns,key\n1,a\n2,\xff\n3,c\n".to_vec(),
        TraceOptions::default(),
    ));
    let skip = TraceOptions {
        skip_late: true,
        ..Default::default()
    };
    cases.push((b"t_ns,key\n5,a\n3,b\n7,c\n6,a\n9,b\n".to_vec(), skip));
    let mut events = 0;
    for (text, opts) in &cases {
        let reader = |cap: usize| {
            TraceReader::new(
                Path::new("t.csv"),
                TraceFormat::Csv,
                Box::new(std::io::BufReader::with_capacity(
                    cap,
                    std::io::Cursor::new(text.clone()),
                )),
                *opts,
            )
        };
        let mut want: Vec<std::result::Result<(u64, String, u64), String>> = reader(1 << 16)
            .map(|e| {
                e.map(|e| (e.t_ns, e.key, e.weight))
                    .map_err(|e| e.to_string())
            })
            .collect();
        // Up to the first error: `next_id`'s caller stops there.
        if let Some(at) = want.iter().position(|e| e.is_err()) {
            want.truncate(at + 1);
        }
        events += want.iter().filter(|e| e.is_ok()).count();
        for cap in [1, 5, 16, 64, 1 << 16] {
            let mut r = reader(cap);
            r.intern_keys(block::KeyCap {
                keys: usize::MAX,
                bytes_per_key: 512,
            });
            let mut got = Vec::new();
            let mut ids = std::collections::HashMap::new();
            while let Some(e) = r.next_id() {
                got.push(match e {
                    Ok((t, Some(id), w)) => {
                        let key = r.key_name(id).unwrap().to_string();
                        let next = ids.len() as u32;
                        assert_eq!(*ids.entry(key.clone()).or_insert(next), id, "{key}");
                        Ok((t, key, w))
                    }
                    Ok((_, None, _)) => panic!("no filter, yet a key without an id"),
                    Err(e) => Err(e.to_string()),
                });
                if got.last().is_some_and(|e| e.is_err()) {
                    break;
                }
            }
            assert_eq!(
                got,
                want,
                "{:?} at a {cap}-byte buffer",
                String::from_utf8_lossy(text)
            );
        }
    }
    assert!(events > 350, "the cases hold events: {events}");
}
