//! `ratelab replay` for the pacers, end to end through the binary: every
//! golden file in tests/golden/pacers (outputs of the real Go libraries) is
//! replayed and compared byte for byte (with `--internals`, the golden
//! format) and value for value (the default output), plus bad input.

use crate::common;

use crate::common::{ratelab, stderr, temp_file};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn golden_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![common::root().join("tests/golden/pacers")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "csv") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn header_kv(line: &str) -> BTreeMap<String, String> {
    line.trim_start_matches('#')
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Runs the replay and returns the output text (asserting success).
fn replay(args: &[&str], input: &str) -> String {
    let (dir, trace) = temp_file("in.csv", input.as_bytes());
    let out = dir.path().join("out.csv");
    let mut all: Vec<&str> = vec!["replay"];
    all.extend_from_slice(args);
    let (t, o) = (trace.display().to_string(), out.display().to_string());
    all.extend_from_slice(&["--trace", &t, "--out", &o]);
    let r = ratelab(&all);
    assert!(r.status.success(), "{args:?}: {}", stderr(&r));
    std::fs::read_to_string(&out).unwrap()
}

fn check_tb(path: &Path, text: &str) -> usize {
    let mut lines = text.lines();
    let kv = header_kv(lines.next().unwrap());
    let version = kv.get("go_version").map_or("v0.3.0", String::as_str);
    let golden_body: Vec<&str> = lines.collect();
    let mut input = String::from("t_ns,n,op,deadline_ns,arg\n");
    for l in &golden_body[1..] {
        let f: Vec<&str> = l.split(',').collect();
        input.push_str(&f[..5].join(","));
        input.push('\n');
    }
    let limit = &kv["limit_bits"];
    let burst = &kv["burst"];
    let base = [
        "--algo",
        "token-bucket",
        "--float-bits",
        "--limit",
        limit,
        "--burst",
        burst,
        "--go-version",
        version,
    ];
    // Byte for byte in the golden format.
    let mut args = base.to_vec();
    args.push("--internals");
    let got = replay(&args, &input);
    let want = golden_body.join("\n") + "\n";
    assert_eq!(got, want, "{}", path.display());
    // Value for value in the default format: input columns + ok,delay_ns.
    let got = replay(&base, &input);
    let mut got_lines = got.lines();
    assert_eq!(
        got_lines.next(),
        Some("t_ns,n,op,deadline_ns,arg,ok,delay_ns")
    );
    let mut rows = 0;
    for (g, w) in got_lines.zip(&golden_body[1..]) {
        let w: Vec<&str> = w.split(',').collect();
        assert_eq!(g, w[..7].join(","), "{}", path.display());
        rows += 1;
    }
    assert_eq!(rows, golden_body.len() - 1, "{}", path.display());
    rows
}

fn check_lb(path: &Path, text: &str) -> usize {
    let mut lines = text.lines();
    let kv = header_kv(lines.next().unwrap());
    let golden_body: Vec<&str> = lines.collect();
    let mut input = String::from("t_ns\n");
    for l in &golden_body[1..] {
        input.push_str(l.split(',').next().unwrap());
        input.push('\n');
    }
    let variant = match kv["variant"].as_str() {
        "int64" => "atomic-int64",
        v => v,
    };
    let base = [
        "--algo",
        "leaky-bucket",
        "--rate",
        &kv["rate"],
        "--per-ns",
        &kv["per_ns"],
        "--slack",
        &kv["slack"],
        "--variant",
        variant,
        "--unix-origin-ns",
        &kv["unix_origin_ns"],
    ];
    let mut base = base.to_vec();
    let times: Vec<i64> = golden_body[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    if times.windows(2).any(|w| w[1] < w[0]) {
        // Slack-after-idle traces restart the clock after the idle burst.
        base.push("--unsorted");
    }
    let mut args = base.clone();
    args.push("--internals");
    assert_eq!(
        replay(&args, &input),
        golden_body.join("\n") + "\n",
        "{}",
        path.display()
    );
    let got = replay(&base, &input);
    let mut got_lines = got.lines();
    assert_eq!(got_lines.next(), Some("t_ns,return_ns"));
    let mut rows = 0;
    for (g, w) in got_lines.zip(&golden_body[1..]) {
        let w: Vec<&str> = w.split(',').collect();
        assert_eq!(g, w[..2].join(","), "{}", path.display());
        rows += 1;
    }
    assert_eq!(rows, golden_body.len() - 1);
    rows
}

#[test]
fn every_golden_file_replays_exactly() {
    let files = golden_files();
    let (mut tb, mut lb, mut calls) = (0, 0, 0);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("tb_") {
            calls += check_tb(f, &text);
            tb += 1;
        } else if name.starts_with("lb_") {
            calls += check_lb(f, &text);
            lb += 1;
        }
    }
    // 8 x/time traces for each of v0.3.0, v0.9.0, v0.13.0 and 6 uber-go ones.
    assert_eq!((tb, lb), (24, 6), "{files:?}");
    assert!(calls > 3000, "{calls}");
}

#[test]
fn default_version_is_the_newest() {
    // Zero limit: v0.3.0 decrements burst, v0.7.0+ spends pre-filled tokens
    // and then waits forever.
    let input = "t_ns,n,op\n0,2,allow\n0,1,reserve\n0,1,wait\n";
    let latest = replay(
        &["--algo", "token-bucket", "--limit", "0", "--burst", "2"],
        input,
    );
    assert_eq!(
        latest,
        "t_ns,n,op,ok,delay_ns\n0,2,allow,true,0\n0,1,reserve,true,9223372036854775807\n0,1,wait,true,9223372036854775807\n"
    );
    let old = replay(
        &[
            "--algo",
            "token-bucket",
            "--limit",
            "0",
            "--burst",
            "2",
            "--go-version",
            "v0.3.0",
        ],
        input,
    );
    assert_eq!(
        old,
        "t_ns,n,op,ok,delay_ns\n0,2,allow,true,0\n0,1,reserve,false,-1\n0,1,wait,false,-1\n"
    );
}

#[test]
fn token_bucket_c2_and_deadlines() {
    let mut input = String::from("t_ns,n,op,deadline_ns\n");
    for _ in 0..5 {
        input.push_str("0,1,wait,0\n");
    }
    input.push_str("0,1,wait,1000000000\n0,1,reserve,\n0,1,allow,0\n2000000000,1,allow,0\n");
    let got = replay(
        &["--algo", "token-bucket", "--limit", "1", "--burst", "1"],
        &input,
    );
    let want = "t_ns,n,op,deadline_ns,ok,delay_ns\n\
0,1,wait,0,true,0\n0,1,wait,0,true,1000000000\n0,1,wait,0,true,2000000000\n\
0,1,wait,0,true,3000000000\n0,1,wait,0,true,4000000000\n\
0,1,wait,1000000000,false,-1\n0,1,reserve,,true,5000000000\n0,1,allow,0,false,0\n\
2000000000,1,allow,0,false,0\n";
    assert_eq!(got, want);
    // inf skips the bucket.
    let got = replay(
        &["--algo", "token-bucket", "--limit", "inf", "--burst", "0"],
        "t_ns,n,op\n0,5,wait\n0,5,reserve\n",
    );
    assert_eq!(
        got,
        "t_ns,n,op,ok,delay_ns\n0,5,wait,true,0\n0,5,reserve,true,0\n"
    );
}

#[test]
fn leaky_bucket_default_origin_is_the_mock_epoch() {
    let input = "t_ns\n0\n0\n0\n1\n1\n1\n";
    let got = replay(&["--algo", "leaky-bucket", "--rate", "10"], input);
    // clock.NewMock() starts at the Unix epoch: the int64 implementation's
    // "never called" sentinel keeps every call at t=0 free, and the first
    // call at t=1 is a first call again.
    assert_eq!(
        got,
        "t_ns,return_ns\n0,0\n0,0\n0,0\n1,1\n1,100000001\n1,200000001\n"
    );
    let got = replay(
        &[
            "--algo",
            "leaky-bucket",
            "--rate",
            "10",
            "--unix-origin-ns",
            "1700000000000000000",
        ],
        input,
    );
    assert_eq!(
        got,
        "t_ns,return_ns\n0,0\n0,100000000\n0,200000000\n1,300000000\n1,400000000\n1,500000000\n"
    );
    // The cadence and slack-after-idle without slack, atomic.
    let got = replay(
        &[
            "--algo",
            "leaky-bucket",
            "--rate",
            "100",
            "--slack",
            "0",
            "--variant",
            "atomic",
        ],
        "t_ns\n0\n10000000\n10000000000\n10000000000\n10000000000\n",
    );
    assert_eq!(
        got,
        "t_ns,return_ns\n0,0\n10000000,10000000\n10000000000,10000000000\n10000000000,10010000000\n10000000000,10020000000\n"
    );
}

/// Runs a replay that must fail: exit 2, one line on stderr containing
/// every `needles`, and no output file (an existing one is left alone).
fn bad(args: &[&str], input: &str, needles: &[&str]) {
    let (dir, trace) = temp_file("in.csv", input.as_bytes());
    let out = dir.path().join("out.csv");
    std::fs::write(&out, "previous\n").unwrap();
    let (t, o) = (trace.display().to_string(), out.display().to_string());
    let mut all: Vec<&str> = vec!["replay"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--trace", &t, "--out", &o]);
    let r = ratelab(&all);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(2), "{args:?} {input:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?} {input:?}: {err:?} lacks {n:?}");
    }
    if !err.starts_with("error: invalid value") {
        assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous\n");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "temporary files left behind: {names:?}");
}

const TB: [&str; 6] = ["--algo", "token-bucket", "--limit", "1", "--burst", "1"];

#[test]
fn token_bucket_bad_input() {
    let ok = "t_ns,n,op\n0,1,allow\n";
    let tb = |limit: &'static str, burst: &'static str| -> Vec<&'static str> {
        vec!["--algo", "token-bucket", "--limit", limit, "--burst", burst]
    };
    bad(&tb("-1", "1"), ok, &["--limit -1", "negative"]);
    bad(&tb("NaN", "1"), ok, &["--limit NaN", "NaN"]);
    bad(&tb("abc", "1"), ok, &["--limit abc"]);
    bad(&tb("1", "-1"), ok, &["--burst -1"]);
    bad(&tb("1", "x"), ok, &["--burst"]);
    bad(
        &["--algo", "token-bucket", "--burst", "1"],
        ok,
        &["--limit"],
    );
    let mut v = TB.to_vec();
    v.extend(["--go-version", "v0.99.0"]);
    bad(&v, ok, &["--go-version v0.99.0"]);
    let mut v = TB.to_vec();
    v.extend(["--rate", "3"]);
    bad(&v, ok, &["--rate"]);
    bad(
        &TB,
        "t_ns,n,op\n5,1,allow\n4,1,allow\n",
        &["in.csv", "line 3", "t_ns value 4", "non-decreasing"],
    );
    bad(
        &TB,
        "t_ns,n,op\n0,1,take\n",
        &["in.csv", "line 2", "\"take\""],
    );
    bad(&TB, "t,n,op\n0,1,allow\n", &["in.csv", "line 1", "header"]);
    bad(
        &TB,
        "t_ns,n,op,color\n0,1,allow,red\n",
        &["line 1", "color"],
    );
    bad(
        &TB,
        "t_ns,n,op\nx,1,allow\n",
        &["in.csv", "line 2", "t_ns value \"x\""],
    );
    bad(
        &TB,
        "t_ns,n,op\n1.5,1,allow\n",
        &["line 2", "t_ns value \"1.5\""],
    );
    bad(
        &TB,
        "t_ns,n,op\n0,99999999999999999999,allow\n",
        &["line 2", "n value \"99999999999999999999\"", "out of range"],
    );
    bad(
        &TB,
        "t_ns,n,op,deadline_ns\n0,1,wait,soon\n",
        &["line 2", "deadline_ns value \"soon\""],
    );
    bad(&TB, "t_ns,n,op\n0,1\n", &["line 2", "2 fields"]);
    bad(&TB, "t_ns,n,op\n0,1,cancel\n", &["line 2", "arg"]);
    bad(&TB, "", &["in.csv", "header"]);
    bad(&TB, "t_ns,n,op\n\u{ff}\n", &["in.csv"]);
    let mut v = TB.to_vec();
    v.extend(["--internals"]);
    bad(
        &v,
        "t_ns,n,op,arg\n0,1,set_limit,-2\n",
        &["line 2", "arg value \"-2\""],
    );
    // A missing trace file.
    let r = ratelab(&[
        "replay",
        "--algo",
        "token-bucket",
        "--limit",
        "1",
        "--burst",
        "1",
        "--trace",
        "/nonexistent/in.csv",
        "--out",
        "/tmp/x.csv",
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("/nonexistent/in.csv"));
}

#[test]
fn leaky_bucket_bad_input() {
    let ok = "t_ns\n0\n";
    bad(
        &["--algo", "leaky-bucket", "--rate", "0"],
        ok,
        &["--rate 0"],
    );
    bad(
        &["--algo", "leaky-bucket", "--rate", "-5"],
        ok,
        &["--rate -5"],
    );
    bad(&["--algo", "leaky-bucket"], ok, &["--rate"]);
    bad(
        &["--algo", "leaky-bucket", "--rate", "1", "--per-ns", "0"],
        ok,
        &["--per-ns 0"],
    );
    bad(
        &["--algo", "leaky-bucket", "--rate", "1", "--per-ns", "-1"],
        ok,
        &["--per-ns -1"],
    );
    bad(
        &["--algo", "leaky-bucket", "--rate", "1", "--variant", "spin"],
        ok,
        &["--variant spin"],
    );
    bad(
        &["--algo", "leaky-bucket", "--rate", "1", "--burst", "2"],
        ok,
        &["--burst"],
    );
    let lb = ["--algo", "leaky-bucket", "--rate", "10"];
    bad(&lb, "t_ns\n5\n4\n", &["in.csv", "line 3", "t_ns value 4"]);
    bad(&lb, "time\n5\n", &["line 1", "header"]);
    bad(&lb, "t_ns,n\n5,1\n", &["line 1", "header"]);
    bad(&lb, "t_ns\nfive\n", &["line 2", "t_ns value \"five\""]);
    bad(
        &lb,
        "t_ns\n9223372036854775808\n",
        &["line 2", "out of range"],
    );
}
