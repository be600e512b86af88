//! Trust: a scenario that names a program is code. `exec` entries run only
//! with `--allow-exec` or `RATELAB_ALLOW_EXEC=1`; otherwise `run`,
//! `reproduce`, `check` and `replay` refuse before any work, naming the
//! scenario and the command. `check --from` and `report` execute nothing.
//! The child gets only the entry's `env` and the scenario's folder as its
//! working directory.

use crate::common;

use serde_json::{json, Value};
use std::path::Path;

fn scenario(name: &str, limiters: Value) -> String {
    json!({
        "name": name, "kind": "decision_accuracy", "seed": 3,
        "policy": {"limit": 5, "interval_ms": 1000}, "shapes": [],
        "workload": {"type": "poisson", "keys": {"type": "uniform", "keys": 20}, "rate": 200.0, "duration_s": 5.0},
        "limiters": limiters
    })
    .to_string()
}

/// A child that admits everything if `cond` (Python) holds, else answers
/// garbage; it writes a marker file when it starts.
fn child(dir: &Path, file: &str, cond: &str) {
    let body = format!(
        r#"import os, sys
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "started"), "w").close()
sys.stdin.readline()
print("ratelab-exec 1 ok", flush=True)
ok = {cond}
for line in sys.stdin:
    p = line.split()
    if p[0] == "end":
        break
    n = int(p[2])
    print(" ".join(["1" if ok else "no"] * n), flush=True)
"#
    );
    std::fs::write(dir.join(file), body).unwrap();
}

fn ratelab_in(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let o = common::ratelab_env(args, env);
    (o.status.code(), common::stderr(&o))
}

#[test]
fn an_exec_scenario_is_refused_without_permission_before_any_work() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    child(p, "ours.py", "True");
    let sc = p.join("ours.json");
    std::fs::write(
        &sc,
        scenario(
            "ours",
            json!([{"model": "exec", "command": ["python3", "ours.py"], "name": "ours"}]),
        ),
    )
    .unwrap();
    let out = p.join("out");
    let (s, o) = (sc.to_str().unwrap(), out.to_str().unwrap());
    // The caller's environment must not leak a permission into the test.
    let deny = [("RATELAB_ALLOW_EXEC", "0")];
    let (code, err) = ratelab_in(&["run", s, "--out", o, "--no-progress"], &deny);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    for want in [
        "ours.json",
        "limiters[0]",
        "\"python3 ours.py\"",
        "--allow-exec",
        "RATELAB_ALLOW_EXEC=1",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    assert!(!p.join("started").exists(), "the child must not start");
    assert!(!out.exists(), "no report");

    // reproduce: a built-in scenario first, then the exec one: nothing runs.
    let folder = p.join("scenarios");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join("a.json"),
        scenario("a", json!([{"model": "gcra"}])),
    )
    .unwrap();
    std::fs::copy(&sc, folder.join("b.json")).unwrap();
    let f = folder.to_str().unwrap();
    let (code, err) = ratelab_in(
        &["reproduce", "--scenarios", f, "--out", o, "--no-progress"],
        &deny,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("b.json"), "{err}");
    assert!(!out.exists(), "reproduce ran nothing");

    // check reruns scenarios: refused too.
    let (code, err) = ratelab_in(&["check", "--scenarios", f, "--reports", o, "ours"], &deny);
    assert_eq!(code, Some(2), "{err}");

    // replay's --limiter entry.
    let (_t, trace) = common::temp_file("t.csv", b"t_ns,key\n0,a\n");
    let (code, err) = ratelab_in(
        &[
            "replay",
            "--algo",
            "limiter",
            "--limit",
            "2",
            "--interval-ms",
            "1000",
            "--limiter",
            r#"{"model": "exec", "command": ["python3", "x.py"]}"#,
            "--trace",
            trace.to_str().unwrap(),
            "--out",
            p.join("o.csv").to_str().unwrap(),
        ],
        &deny,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--limiter runs a command (\"python3 x.py\")"),
        "{err}"
    );

    // With permission (the variable, as CI gives it) the same run works.
    let (code, err) = ratelab_in(
        &["run", s, "--out", o, "--no-progress"],
        &[("RATELAB_ALLOW_EXEC", "1")],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(p.join("started").exists());
    assert!(out.join("ours").join("report.json").exists());
}

#[test]
fn check_from_compares_exec_reports_without_running_anything() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    child(p, "ours.py", "True");
    let folder = p.join("scenarios");
    std::fs::create_dir(&folder).unwrap();
    let sc = folder.join("ours.json");
    std::fs::write(
        &sc,
        scenario("ours", json!([{"model": "exec", "command": ["python3", "../ours.py"], "name": "ours"}, {"model": "gcra"}])),
    )
    .unwrap();
    let (f, base, fresh) = (folder.to_str().unwrap(), p.join("reports"), p.join("fresh"));
    let allow = [("RATELAB_ALLOW_EXEC", "1")];
    // The baseline, then a fresh reproduce, then check --from: the three
    // commands of a CI job.
    let (code, err) = ratelab_in(
        &[
            "check",
            "--scenarios",
            f,
            "--reports",
            base.to_str().unwrap(),
            "--update",
        ],
        &allow,
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = ratelab_in(
        &[
            "reproduce",
            "--scenarios",
            f,
            "--out",
            fresh.to_str().unwrap(),
            "--no-progress",
        ],
        &allow,
    );
    assert_eq!(code, Some(0), "{err}");
    std::fs::remove_file(p.join("started")).unwrap();
    let (code, err) = ratelab_in(
        &[
            "check",
            "--scenarios",
            f,
            "--reports",
            base.to_str().unwrap(),
            "--from",
            fresh.to_str().unwrap(),
        ],
        &[("RATELAB_ALLOW_EXEC", "0")],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!p.join("started").exists(), "check --from ran the child");
    // The team's limiter regresses (it now denies every third request):
    // check fails as it would for a built-in model.
    let body = std::fs::read_to_string(p.join("ours.py")).unwrap().replace(
        "[\"1\" if ok else \"no\"] * n",
        "[\"0\" if i % 3 == 0 else \"1\" for i in range(n)]",
    );
    std::fs::write(p.join("ours.py"), body).unwrap();
    let o = common::ratelab_env(
        &[
            "check",
            "--scenarios",
            f,
            "--reports",
            base.to_str().unwrap(),
        ],
        &allow,
    );
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", common::stderr(&o));
    assert!(out.contains("ours"), "{out}");
}

#[test]
fn the_child_gets_only_its_env_and_the_scenario_folder() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let folder = p.join("team");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("data.txt"), "here").unwrap();
    // Relative paths (the script, the file it opens) are from the
    // scenario's folder; the environment is the entry's `env` and nothing
    // of ratelab's (not tested for equality: a `python3` that is a pyenv
    // shim, or Python's own locale coercion, add variables of their own).
    child(
        &folder,
        "ours.py",
        "os.environ.get('TEAM_MODE') == 'strict' and 'TEAM_SECRET' not in os.environ and 'HOME' not in os.environ and open('data.txt').read() == 'here'",
    );
    let sc = folder.join("ours.json");
    let entry = |env: Value| json!([{"model": "exec", "command": ["python3", "ours.py"], "name": "ours", "env": env}]);
    std::fs::write(&sc, scenario("ours", entry(json!({"TEAM_MODE": "strict"})))).unwrap();
    let out = p.join("out");
    let args = [
        "run",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
        "--allow-exec",
    ];
    let (code, err) = ratelab_in(&args, &[("TEAM_SECRET", "leaked?")]);
    assert_eq!(code, Some(0), "{err}");
    // Another environment: the child sees it, and answers garbage.
    std::fs::write(&sc, scenario("ours", entry(json!({"TEAM_MODE": "lax"})))).unwrap();
    let (code, err) = ratelab_in(&args, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("decision 1 \"no\""), "{err}");
}
