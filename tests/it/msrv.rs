//! `rust-version` in Cargo.toml is a promise: no dependency that
//! Cargo.lock resolves for this platform may need a newer Rust (cargo
//! reads each package's declared `rust-version`).

use crate::common::*;
use std::process::Command;

/// `1.88` or `1.88.0` as comparable numbers.
fn version(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap()).collect()
}

#[test]
fn rust_version_covers_every_resolved_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let host = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-vV")
        .output()
        .unwrap();
    let host = String::from_utf8(host.stdout).unwrap();
    let host = host
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap()
        .to_string();
    let o = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let packages = m["packages"].as_array().unwrap();
    let ours = packages
        .iter()
        .find(|p| p["name"] == "ratelab")
        .and_then(|p| p["rust_version"].as_str())
        .expect("Cargo.toml declares rust-version");
    let mut newest: Vec<(Vec<u64>, String)> = packages
        .iter()
        .filter_map(|p| {
            let v = p["rust_version"].as_str()?;
            Some((
                version(v),
                format!("{} {} needs {v}", p["name"], p["version"]),
            ))
        })
        .collect();
    newest.sort();
    let (need, who) = newest.last().unwrap();
    assert!(
        version(ours) >= *need,
        "rust-version {ours} in Cargo.toml, but {who}"
    );
}
