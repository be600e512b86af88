//! SIGINT, SIGTERM and SIGHUP stop a run cleanly: the exec child's whole
//! process group is killed (a grandchild too), no temporary file or staging
//! folder is left, and the exit code is 128 + the signal. What a SIGKILLed
//! run leaves is swept by the next run in the same folder.

use crate::common::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A decision scenario whose one exec candidate starts a grandchild and
/// hangs at its first batch (the run waits on it for a minute).
fn hanging_scenario(dir: &Path, pids: &Path) -> PathBuf {
    let child = root().join("tests/exec_children/hangs_with_grandchild.py");
    let sc = json!({
        "name": "hangs", "kind": "decision_accuracy", "seed": 3,
        "policy": {"limit": 5, "interval_ms": 1000}, "shapes": [],
        "workload": {"type": "poisson", "keys": {"type": "zipf", "keys": 30, "s": 1.1},
                     "rate": 60.0, "duration_s": 10.0},
        "limiters": [{"model": "exec", "name": "ours", "timeout_ms": 60000,
                      "command": ["python3", child.to_str().unwrap(), pids.to_str().unwrap()]}]
    });
    let path = dir.join("hangs.json");
    std::fs::write(&path, sc.to_string()).unwrap();
    path
}

/// Starts `ratelab run` on the hanging scenario, writing its decisions and
/// report into `dir`; returns it once the exec child and its grandchild
/// run, with their pids.
fn start_hanging_run(dir: &Path) -> (Child, i32, i32) {
    let pids = dir.join("pids");
    let sc = hanging_scenario(dir, &pids);
    let child = Command::new(env!("CARGO_BIN_EXE_ratelab"))
        .args(["run", sc.to_str().unwrap(), "--out"])
        .arg(dir.join("out"))
        .arg("--decisions")
        .arg(dir.join("decisions.csv"))
        .args(["--no-progress", "--allow-exec"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while !pids.exists() {
        assert!(Instant::now() < until, "the exec child never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(&pids).unwrap();
    let (a, b) = text.split_once(' ').unwrap();
    (child, a.parse().unwrap(), b.parse().unwrap())
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

fn gone(pid: i32) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// ratelab's temporaries in `dir` (hidden files and folders it names).
fn temporaries(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    out.sort();
    out
}

fn send(sig: &str, pid: u32) {
    let s = Command::new("kill")
        .args(["-s", sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(s.success());
}

#[test]
fn a_stop_signal_kills_the_exec_group_removes_temporaries_and_exits_128_plus_signal() {
    for (sig, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let d = tempfile::tempdir().unwrap();
        let (mut run, child, grandchild) = start_hanging_run(d.path());
        let temps = temporaries(d.path());
        assert!(
            temps.iter().any(|t| t.starts_with(".ratelab-decisions-")),
            "the decisions are being written to a temporary: {temps:?}"
        );
        send(sig, run.id());
        let until = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(s) = run.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < until, "SIG{sig} did not stop the run");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(code), "SIG{sig}: {err}");
        assert!(err.contains(&format!("stopped by SIG{sig}")), "{err}");
        assert!(gone(child), "SIG{sig}: the exec child {child} still runs");
        assert!(
            gone(grandchild),
            "SIG{sig}: the exec child's grandchild {grandchild} still runs"
        );
        assert_eq!(temporaries(d.path()), Vec::<String>::new(), "SIG{sig}");
        assert!(!d.path().join("decisions.csv").exists());
        assert!(!d.path().join("out").join("hangs").exists());
    }
}

#[test]
fn temporaries_of_a_killed_run_are_swept_by_the_next_run_in_the_folder() {
    let d = tempfile::tempdir().unwrap();
    let (mut run, child, grandchild) = start_hanging_run(d.path());
    run.kill().unwrap();
    run.wait().unwrap();
    // SIGKILL runs no handler: the child's group is left to the test.
    kill_group(child);
    assert!(gone(child) && gone(grandchild));
    let left = temporaries(d.path());
    assert!(
        left.iter().any(|t| t.starts_with(".ratelab-decisions-")),
        "{left:?}"
    );
    // A live process's temporary (this test's pid) is never touched.
    let live = format!(".ratelab-decisions-{}-aBc123", std::process::id());
    std::fs::write(d.path().join(&live), "in use").unwrap();
    // The next run writing in the same folder.
    let sc = r#"{"name": "quick", "kind": "decision_accuracy", "seed": 1,
        "policy": {"limit": 5, "interval_ms": 1000}, "shapes": [],
        "workload": {"type": "poisson", "keys": {"type": "uniform", "keys": 2},
                     "rate": 40.0, "duration_s": 2.0}}"#;
    std::fs::write(d.path().join("quick.json"), sc).unwrap();
    let o = ratelab(&[
        "run",
        d.path().join("quick.json").to_str().unwrap(),
        "--out",
        d.path().join("out").to_str().unwrap(),
        "--decisions",
        d.path().join("decisions.csv").to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(temporaries(d.path()), vec![live]);
}

fn kill_group(pgid: i32) {
    let s = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{pgid}")])
        .status()
        .unwrap();
    assert!(s.success());
}
