//! The bad-input corpus: every `tests/bad_inputs/<case>` that has a sibling
//! `<case>.expected` must make ratelab exit with code 2 and print exactly one
//! line on stderr containing the expected text, and write nothing.
//!
//! The command is `run <case> --out <tmp>` unless `<case>.args` gives another
//! (whitespace-separated; `{file}` is the case's path, `{out}` a fresh folder).

use crate::common::*;
use std::path::Path;

#[test]
fn every_bad_input_exits_2_with_its_one_line_error() {
    let dir = root().join("tests/bad_inputs");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| Path::new(&format!("{}.expected", p.display())).exists())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 50,
        "the corpus must hold at least 50 cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let expected = std::fs::read_to_string(format!("{}.expected", case.display())).unwrap();
        let expected = expected.trim_end_matches('\n');
        let out = tempfile::tempdir().unwrap();
        let out_dir = out.path().join("out");
        let args_file = format!("{}.args", case.display());
        let template =
            std::fs::read_to_string(&args_file).unwrap_or_else(|_| "run {file} --out {out}".into());
        let args: Vec<String> = template
            .split_whitespace()
            .map(|a| {
                a.replace("{file}", &case.display().to_string())
                    .replace("{out}", &out_dir.display().to_string())
            })
            .collect();
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let o = ratelab(&refs);
        let err = stderr(&o);
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        if o.status.code() != Some(2) {
            failures.push(format!(
                "{name}: exit code {:?} (want 2); stderr: {err}",
                o.status.code()
            ));
        } else if err.trim_end().lines().count() != 1 {
            failures.push(format!("{name}: stderr is not one line: {err}"));
        } else if !err.contains(expected) {
            failures.push(format!(
                "{name}: stderr {:?} lacks {expected:?}",
                err.trim_end()
            ));
        } else if out_dir.exists() && std::fs::read_dir(&out_dir).unwrap().next().is_some() {
            failures.push(format!("{name}: wrote output despite the error"));
        } else if out_dir.exists() {
            // An empty folder reads as a run's (empty) output.
            failures.push(format!("{name}: left an empty output folder"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The other side of the pacer checks: a zero `burst` (valid in x/time/rate:
/// nothing is allowed unless the limit is infinite) and a zero `ideal_burst`
/// stay accepted.
#[test]
fn zero_burst_and_zero_ideal_burst_stay_accepted() {
    let sc = r#"{"name": "zero-burst", "kind": "pacer_timeline", "cases": [{"label": "a",
        "buckets": [{"name": "b", "limit": "inf", "burst": 0}],
        "callers": [{"label": "c", "count": 2, "steps": [{"wait": "b"}]}],
        "ideal_per_s": 2, "ideal_burst": 0}]}"#;
    let (_d, path) = temp_file("zero-burst.json", sc.as_bytes());
    let out = tempfile::tempdir().unwrap();
    let o = ratelab(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A named pipe no process writes to: `open(2)` of it would block for
/// ever, so the trace (or shard file) is refused after the wait with one
/// line naming it, and nothing is written; a pipe whose writer comes late
/// is read as any file.
#[cfg(unix)]
#[test]
fn a_fifo_without_a_writer_is_refused_and_one_with_a_late_writer_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.csv");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = dir.path().join("out");
    let (f, o) = (fifo.to_str().unwrap(), out.to_str().unwrap());
    let args = [
        "run",
        "--trace",
        f,
        "--limit",
        "5",
        "--interval-ms",
        "1000",
        "--out",
        o,
        "--no-progress",
    ];
    let started = std::time::Instant::now();
    let r = ratelab(&args);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("a named pipe no process wrote to"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    assert!(!out.exists(), "nothing is written");
    // A writer that opens the pipe a second after ratelab did.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(1));
            std::fs::write(&fifo, "t_ms,key\n1000,a\n1200,b\n1300,a\n").unwrap();
        })
    };
    let r = ratelab(&args);
    writer.join().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(out.join("trace").join("report.json").exists());
}

/// A `--trace` path that is not UTF-8: `run --trace` (the path becomes a
/// scenario's JSON `trace.path`) and `size --shard` (the shard keeps its
/// arguments as text) refuse it in one line naming the flag, before any
/// work; `run --trace` reported the lossy name missing, and `size --shard`
/// panicked (exit 3) reading its own arguments. `size` without --shard
/// reads the file.
#[test]
fn a_trace_path_that_is_not_utf8_is_refused_by_the_commands_that_keep_it_as_text() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"access-\xff.csv");
    let trace = dir.path().join(name);
    let mut text = String::from("t_ns,key\n");
    for i in 0..200u64 {
        text.push_str(&format!("{},k{}\n", i * 7_000_000, i % 3));
    }
    std::fs::write(&trace, text).unwrap();
    let out = dir.path().join("out");
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ratelab"))
            .args(args)
            .output()
            .unwrap()
    };
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let common = [
        os("--limit"),
        os("10"),
        os("--interval-ms"),
        os("1000"),
        os("--out"),
        out.as_os_str(),
        os("--no-progress"),
    ];
    let size_target = [os("--target"), os("compliant_denied_pct<=1")];
    let cases: [(Vec<&std::ffi::OsStr>, &str); 2] = [
        (
            [
                &[os("run"), os("--trace"), trace.as_os_str()][..],
                &common[..],
            ]
            .concat(),
            "--trace",
        ),
        (
            [
                &[
                    os("size"),
                    os("--trace"),
                    trace.as_os_str(),
                    os("--shard"),
                    os("0/2"),
                ][..],
                &size_target[..],
                &common[..],
            ]
            .concat(),
            "--shard: argument",
        ),
    ];
    for (args, want) in cases {
        let o = run(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(e.contains(want) && e.contains("not valid UTF-8"), "{e}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    let o = run(&[
        &[os("size"), os("--trace"), trace.as_os_str()][..],
        &size_target[..],
        &common[..],
    ]
    .concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
