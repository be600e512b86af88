//! The Jupyter notebooks in notebooks/ execute headless (nbclient) against
//! the committed reports and against reports of kinds they have never seen
//! (a notebook without a report of its family must show a note, not fail).
//!
//! Python comes from $RATELAB_PYTHON, else `python3`. Without pandas,
//! matplotlib, nbclient, nbformat and ipykernel the test prints that it
//! skipped, except under CI=true, where .ci/run installs them.

use crate::common::*;
use std::path::Path;
use std::process::Command;

fn python() -> String {
    std::env::var("RATELAB_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn has_deps(py: &str) -> bool {
    Command::new(py)
        .args([
            "-c",
            "import pandas, matplotlib, nbclient, nbformat, ipykernel",
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run_notebooks(py: &str, reports: &Path) -> (bool, String) {
    let o = Command::new(py)
        .arg(root().join("notebooks/run_notebooks.py"))
        .arg("--reports")
        .arg(reports)
        .output()
        .expect("python runs");
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn notebooks_execute_on_any_reports() {
    let py = python();
    if !has_deps(&py) {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{py} lacks the notebook packages and CI=true requires them: pip install -r notebooks/requirements.txt (set RATELAB_PYTHON to that interpreter)");
        }
        eprintln!("SKIPPED notebooks_execute_on_any_reports: {py} lacks pandas/matplotlib/nbclient/nbformat/ipykernel (pip install -r notebooks/requirements.txt, or set RATELAB_PYTHON)");
        return;
    }
    let (ok, log) = run_notebooks(&py, &root().join("reports"));
    assert!(ok && log.contains("5 passed, 0 failed"), "{log}");

    // Kinds the notebooks have not seen, with shapes they must cope with (and
    // no estimator, decision or sizing report: those notebooks must show a
    // note, not fail).
    let other = tempfile::tempdir().unwrap();
    for (name, json) in [
        (
            "w",
            r#"{"schema":"ratelab.report.v1","scenario":"w","kind":"rate_timeline","description":"d","seed":1,
               "rows":[{"model":"a","err":1.5,"nested":{"x":1}}],
               "timeline":[{"t_ms":0,"estimate":1,"true_rate":1.5},{"t_ms":1000,"estimate":2,"true_rate":2}]}"#,
        ),
        (
            "p",
            r#"{"schema":"ratelab.report.v1","scenario":"p","kind":"pacer_take","description":"d","seed":1,
               "runs":{"atomic":[{"t_ns":0,"delay_ns":5},{"t_ns":10,"delay_ns":7}]},"values":[1,2,3]}"#,
        ),
        (
            "x",
            r#"{"schema":"ratelab.report.v1","scenario":"x","kind":"first_second_panic","description":"d","seed":1,"rows":[]}"#,
        ),
    ] {
        std::fs::create_dir(other.path().join(name)).unwrap();
        std::fs::write(other.path().join(name).join("report.json"), json).unwrap();
    }
    let (ok, log) = run_notebooks(&py, other.path());
    assert!(ok, "{log}");
}
