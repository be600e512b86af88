//! The peers' own unit tests, translated into replay traces
//! (`tests/peers/<peer>/<test>/`, table in `tests/peers/README.md`): each
//! case is replayed through the binary and its output checked against the
//! upstream test's assertions.
//!
//! A case folder holds `args` (the replay options, whitespace-separated,
//! without `--trace`/`--out`), `trace.csv`, and `expect.csv` and/or
//! `counts.txt`:
//! * `expect.csv`: a subset of the output's columns (by name), one row per
//!   output row; an empty cell is not checked, `lo..hi` is an inclusive
//!   numeric range, `v±tol` a numeric tolerance, anything else must match
//!   exactly.
//! * `counts.txt`: lines `<column> <op> <value> <min> <max>` (op `<` or
//!   `==`): the number of output rows whose column satisfies the test must
//!   be in `min..=max` (upstream's counting assertions).

use crate::common;

use crate::common::ratelab;
use std::path::{Path, PathBuf};

fn cases() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = common::root().join("tests/peers");
    for peer in std::fs::read_dir(&root).unwrap() {
        let peer = peer.unwrap().path();
        if !peer.is_dir() {
            continue;
        }
        for case in std::fs::read_dir(&peer).unwrap() {
            let case = case.unwrap().path();
            if case.join("args").exists() {
                out.push(case);
            }
        }
    }
    out.sort();
    out
}

fn read_csv(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(text.as_bytes());
    let header = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows = r
        .records()
        .map(|x| x.unwrap().iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

fn num(s: &str) -> f64 {
    s.trim()
        .parse::<f64>()
        .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

fn cell_ok(want: &str, got: &str) -> bool {
    if want.is_empty() {
        return true;
    }
    if let Some((lo, hi)) = want.split_once("..") {
        let g = num(got);
        return num(lo) <= g && g <= num(hi);
    }
    if let Some((v, tol)) = want.split_once('±') {
        return (num(got) - num(v)).abs() <= num(tol);
    }
    want == got
}

fn check(case: &Path) -> Result<(), String> {
    let args_text = std::fs::read_to_string(case.join("args")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let mut args: Vec<String> = vec!["replay".into()];
    args.extend(args_text.split_whitespace().map(str::to_string));
    args.push("--trace".into());
    args.push(case.join("trace.csv").display().to_string());
    args.push("--out".into());
    args.push(out.display().to_string());
    let o = ratelab(&args.iter().map(String::as_str).collect::<Vec<_>>());
    if !o.status.success() {
        return Err(format!(
            "replay failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let (header, rows) = read_csv(&std::fs::read_to_string(&out).unwrap());
    let col = |name: &str| -> Result<usize, String> {
        header
            .iter()
            .position(|h| h == name)
            .ok_or(format!("output has no column {name}"))
    };
    let mut checked = false;
    if let Ok(text) = std::fs::read_to_string(case.join("expect.csv")) {
        checked = true;
        let (eh, erows) = read_csv(&text);
        if erows.len() != rows.len() {
            return Err(format!(
                "{} output rows, expected {}",
                rows.len(),
                erows.len()
            ));
        }
        let idx: Vec<usize> = eh.iter().map(|h| col(h)).collect::<Result<_, _>>()?;
        for (i, (e, g)) in erows.iter().zip(&rows).enumerate() {
            for (j, &c) in idx.iter().enumerate() {
                let want = e.get(j).map(String::as_str).unwrap_or("");
                if !cell_ok(want, &g[c]) {
                    return Err(format!(
                        "data row {i}: {} = {:?}, expected {want:?} (row {:?})",
                        eh[j], g[c], g
                    ));
                }
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(case.join("counts.txt")) {
        checked = true;
        for line in text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            let p: Vec<&str> = line.split_whitespace().collect();
            let [name, op, value, min, max] = p[..] else {
                return Err(format!("bad counts line {line:?}"));
            };
            let c = col(name)?;
            let n = rows
                .iter()
                .filter(|r| match op {
                    "<" => num(&r[c]) < num(value),
                    "==" => r[c] == value,
                    _ => panic!("bad op {op}"),
                })
                .count();
            let (min, max): (usize, usize) = (min.parse().unwrap(), max.parse().unwrap());
            if n < min || n > max {
                return Err(format!("{line}: {n} rows"));
            }
        }
    }
    if !checked {
        return Err("no expect.csv or counts.txt".into());
    }
    Ok(())
}

#[test]
fn peers_own_tests_pass_against_the_models() {
    let cases = cases();
    assert!(cases.len() > 40, "only {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| check(c).err().map(|e| format!("{}: {e}", c.display())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
