//! The exec harness cannot be fooled and leaves nothing running: each
//! misbehaving child is a tiny script in `tests/exec_children/`, run the way
//! a user's scenario runs it.

use crate::common;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A child script in `tests/exec_children/`, by absolute path.
fn child(name: &str) -> String {
    common::root()
        .join("tests/exec_children")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// A small decision scenario (about 600 requests on 30 Zipf keys, one
/// batch) with the given `limiters`.
fn scenario(limiters: Value) -> String {
    json!({
        "name": "harness", "kind": "decision_accuracy", "seed": 3,
        "policy": {"limit": 5, "interval_ms": 1000}, "shapes": [],
        "workload": {"type": "poisson", "keys": {"type": "zipf", "keys": 30, "s": 1.1},
                     "rate": 60.0, "duration_s": 10.0},
        "limiters": limiters
    })
    .to_string()
}

fn run(dir: &Path, limiters: Value) -> (Option<i32>, String, Option<Value>) {
    common::run_exec_scenario(dir, "harness", &scenario(limiters))
}

/// True while a process with this pid exists (and is not a zombie).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits up to 3 s for the process to go (init reaps an orphan a moment
/// after it is killed).
fn gone(pid: i32) -> bool {
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn pid_in(file: &Path) -> i32 {
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_child_that_exits_while_a_grandchild_holds_its_stdout_is_noticed_and_its_group_killed() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("sleeper.pid");
    let start = Instant::now();
    let (code, err, rep) = run(
        d.path(),
        json!([{"model": "exec", "name": "ours", "timeout_ms": 20000,
                "command": ["python3", child("forks_sleeper.py"), pidfile.to_str().unwrap()]}]),
    );
    let took = start.elapsed();
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the child exited (exit status: 1) before answering batch 1"),
        "{err}"
    );
    assert!(err.contains("fatal: lost the database"), "{err}");
    assert!(rep.is_none());
    // Noticed at its exit, not at the 20 s timeout.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let pid = pid_in(&pidfile);
    assert!(
        gone(pid),
        "the sleeper {pid} holding the child's stdout still runs"
    );
}

#[test]
fn a_background_process_started_at_end_is_killed_with_the_group() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("bg.pid");
    let (code, err, rep) = run(
        d.path(),
        json!([{"model": "exec", "name": "ours",
                "command": ["python3", child("background_at_end.py"), pidfile.to_str().unwrap()]}]),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(rep.is_some());
    let pid = pid_in(&pidfile);
    assert!(gone(pid), "the background process {pid} outlived the run");
}

#[test]
fn one_answer_line_too_many_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let (code, err, rep) = run(
        d.path(),
        json!([{"model": "exec", "name": "ours", "command": ["python3", child("extra_line.py")]}]),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("one line too many"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(rep.is_none());
    // replay: one batch a row, the extra line meets the next batch.
    let (_t, trace) = common::temp_file("t.csv", b"t_ns,key\n0,a\n5,b\n9,a\n");
    let o = common::ratelab(&[
        "replay",
        "--algo",
        "limiter",
        "--allow-exec",
        "--limit",
        "5",
        "--interval-ms",
        "1000",
        "--limiter",
        &json!({"model": "exec", "command": ["python3", child("extra_line.py")]}).to_string(),
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        trace.with_file_name("o.csv").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("one line too many"),
        "{}",
        common::stderr(&o)
    );
    assert!(!trace.with_file_name("o.csv").exists());
}

#[test]
fn a_line_after_end_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let (code, err, rep) = run(
        d.path(),
        json!([{"model": "exec", "name": "ours", "command": ["python3", child("after_end.py")]}]),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("came after the last answer"), "{err}");
    assert!(rep.is_none());
}

#[test]
fn the_last_meaningful_stderr_lines_are_quoted_not_a_trailing_banner() {
    let d = tempfile::tempdir().unwrap();
    let (code, err, _) = run(
        d.path(),
        json!([{"model": "exec", "name": "ours", "command": ["python3", child("banner.py")]}]),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("error: rate_per_s is missing"), "{err}");
    assert!(err.contains("loading config ours.toml"), "{err}");
    assert!(!err.contains("====="), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_relative_program_is_taken_from_the_scenario_folder_once() {
    let d = tempfile::tempdir().unwrap();
    let sc = d.path().join("sc");
    std::fs::create_dir(&sc).unwrap();
    std::fs::copy(child("ours.sh"), sc.join("ours.sh")).unwrap();
    std::fs::write(
        sc.join("s.json"),
        scenario(json!([{"model": "exec", "name": "ours", "command": ["./ours.sh"]}])),
    )
    .unwrap();
    // From the scenario folder's parent, with a relative scenario path:
    // `sc/sc/ours.sh` does not exist, `sc/ours.sh` does.
    let o = Command::new(env!("CARGO_BIN_EXE_ratelab"))
        .args([
            "run",
            "sc/s.json",
            "--out",
            "out",
            "--no-progress",
            "--allow-exec",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(d.path().join("out/harness/report.json").is_file());
}

/// The `batch` lines a recorder child was sent: (t, id, w) triples.
fn batches(record: &str) -> Vec<(u64, u64, u64)> {
    let mut reqs = Vec::new();
    for l in record.lines().filter(|l| l.starts_with("batch ")) {
        let w: Vec<u64> = l.split(' ').skip(1).map(|x| x.parse().unwrap()).collect();
        assert_eq!(w.len(), 2 + 3 * w[1] as usize, "{l}");
        reqs.extend(w[2..].chunks(3).map(|c| (c[0], c[1], c[2])));
    }
    reqs
}

/// Dense ids in order of first appearance and time from 0.
fn assert_dense_from_zero(reqs: &[(u64, u64, u64)]) {
    assert!(!reqs.is_empty());
    assert_eq!(reqs[0].0, 0, "time starts at 0");
    let mut next = 0;
    for &(_, k, _) in reqs {
        assert!(k <= next, "id {k} before id {next}");
        if k == next {
            next += 1;
        }
    }
    assert!(next > 5, "{next} keys");
}

#[test]
fn a_workload_reaches_the_child_as_dense_ids_from_time_zero_and_params_in_name_order() {
    let d = tempfile::tempdir().unwrap();
    let rec = d.path().join("rec.txt");
    let (code, err, _) = run(
        d.path(),
        json!([{"model": "exec", "name": "ours",
                "command": ["python3", child("recorder.py"), rec.to_str().unwrap()],
                "params": {"zeta": 1, "alpha": "a b", "mid": true}}]),
    );
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&rec).unwrap();
    let hello = text.lines().next().unwrap();
    assert!(
        hello.contains(" name=ours alpha=a%20b mid=true zeta=1 max_version=2"),
        "{hello}"
    );
    let reqs = batches(&text);
    assert_dense_from_zero(&reqs);
    // The workload's own key indices are Zipf ranks: the busiest, 0, is not
    // always first, but the child's first key is always 0.
    assert_eq!(reqs[0].1, 0);
    assert!(text.ends_with("end\n"), "{text}");
}

#[test]
fn a_trace_reaches_the_child_the_same_way_and_version_2_gets_each_key_string_once() {
    let d = tempfile::tempdir().unwrap();
    let trace = d.path().join("t.csv");
    let mut csv = String::from("t_ns,key\n");
    for i in 0..400u64 {
        let key = [
            "alice",
            "bob smith",
            "carol%",
            "dave",
            "erin",
            "frank",
            "gina",
        ][(i * 7 % 11 % 7) as usize];
        csv.push_str(&format!("{},{key}\n", 5_000_000_000 + i * 10_000_000));
    }
    std::fs::write(&trace, csv).unwrap();
    let rec = d.path().join("rec.txt");
    let sc = json!({
        "name": "harness", "kind": "decision_accuracy", "seed": 3,
        "policy": {"limit": 5, "interval_ms": 1000}, "shapes": [],
        "trace": {"path": "t.csv"},
        "limiters": [{"model": "exec", "name": "ours",
                      "command": ["python3", child("recorder.py"), rec.to_str().unwrap(), "2"]}]
    });
    let (code, err, _) = common::run_exec_scenario(d.path(), "harness", &sc.to_string());
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&rec).unwrap();
    let reqs = batches(&text);
    assert_dense_from_zero(&reqs);
    let keys: Vec<&str> = text.lines().filter(|l| l.starts_with("keys ")).collect();
    assert_eq!(keys.len(), 1, "one batch, one keys line: {keys:?}");
    assert_eq!(
        keys[0], "keys 7 0 alice 1 dave 2 gina 3 carol%25 4 frank 5 bob%20smith 6 erin",
        "{text}"
    );
    // replay sends the same lines, one request a batch.
    let out = d.path().join("o.csv");
    let o = common::ratelab(&[
        "replay", "--algo", "limiter", "--allow-exec", "--limit", "5", "--interval-ms", "1000",
        "--limiter", &json!({"model": "exec", "command": ["python3", child("recorder.py"), rec.to_str().unwrap(), "2"]}).to_string(),
        "--trace", trace.to_str().unwrap(), "--out", out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let replayed = std::fs::read_to_string(&rec).unwrap();
    assert_eq!(batches(&replayed), reqs);
    let names: Vec<String> = replayed
        .lines()
        .filter(|l| l.starts_with("keys "))
        .map(|l| l.split(' ').skip(3).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        names,
        [
            "alice",
            "dave",
            "gina",
            "carol%25",
            "frank",
            "bob%20smith",
            "erin"
        ]
    );
}

#[test]
fn two_exec_entries_with_one_name_are_refused_before_any_child_starts() {
    let d = tempfile::tempdir().unwrap();
    let m1: PathBuf = d.path().join("m1");
    let m2: PathBuf = d.path().join("m2");
    let (code, err, _) = run(
        d.path(),
        json!([
            {"model": "exec", "name": "ours", "command": ["/bin/sh", child("marks_start.sh"), m1.to_str().unwrap()]},
            {"model": "exec", "name": "ours", "command": ["/bin/sh", child("marks_start.sh"), m2.to_str().unwrap()]}
        ]),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("two candidates are named \"ours\""), "{err}");
    assert!(!m1.exists() && !m2.exists(), "a child started");
}

/// A failing `check --from` whose stdout and stderr go to a pipe closed
/// early: the exit code is check's (1), never a crash (SIGABRT) in the
/// panic hook.
#[test]
fn a_closed_output_pipe_keeps_the_documented_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("scenarios")).unwrap();
    std::fs::write(
        dir.join("scenarios/tiny.json"),
        r#"{"name": "tiny", "kind": "estimator_accuracy", "runs": 1,
            "workload": {"type": "harmonic", "keys": 300, "top": 1000, "min": 2},
            "configs": [{"hashes": 2, "slots": 64}]}"#,
    )
    .unwrap();
    let s = dir.join("scenarios").display().to_string();
    let r = dir.join("reports").display().to_string();
    let o = common::ratelab(&["reproduce", "--scenarios", &s, "--out", &r, "--no-progress"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let fresh = dir.join("fresh");
    let o = common::ratelab(&[
        "reproduce",
        "--scenarios",
        &s,
        "--out",
        fresh.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let rp = fresh.join("tiny/report.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&rp).unwrap()).unwrap();
    v["rows"][0]["faults"] = 99.into();
    std::fs::write(&rp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let bin = env!("CARGO_BIN_EXE_ratelab");
    let f = fresh.display().to_string();
    for reader in ["head -c 10 >/dev/null", "exec true"] {
        for _ in 0..5 {
            let rc = dir.join("rc");
            let o = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "(\"$0\" check --scenarios \"$1\" --reports \"$2\" --from \"$3\" 2>&1; echo $? > \"$4\") | {reader}"
                ))
                .args([bin, &s, &r, &f, rc.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(o.status.success());
            let code = std::fs::read_to_string(&rc).unwrap();
            assert_eq!(code.trim(), "1", "{reader}: exit {code}");
        }
    }
}
