//! The examples run in `cargo test`: a limiter and a sketch of one's own,
//! measured through the library API and checked like a scenario's `expect`.

use std::process::Command;

/// A built example (cargo builds them for `cargo test`).
fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    dir.join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

fn run(name: &str) -> String {
    let o = Command::new(example(name))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{name}: {}\n{out}{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn custom_limiter_passes_its_expectations() {
    let out = run("custom_limiter");
    assert!(out.contains("ours"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
}

#[test]
fn custom_sketch_passes_its_expectations() {
    let out = run("custom_sketch");
    assert!(out.contains("\"ours\""), "{out}");
}
