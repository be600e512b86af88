//! No std transcendental float method in `src/` outside the allow-list.
//!
//! The rule: `f64::ln`, `exp`, `powf`, `cos` and their kin call the
//! platform's libm, whose last bit differs between glibc, musl and macOS, so
//! any value that feeds a simulation *or is written into a report* (a JSON
//! number, a CSV cell, a table) computes them with the `libm` crate instead.
//! `sqrt` and `+ − × ÷` are correctly rounded by IEEE 754 and are allowed
//! everywhere. `powi` is banned too: Rust leaves its precision unspecified
//! (it is a loop of multiplications in compiler-rt today, but LLVM may fold
//! or reassociate it).
//!
//! Allowed: files whose float functions only place pixels, never a number
//! in a report: the chart renderer (log-scale axes and their tick labels,
//! `log10` and `10f64.powi(r)`). Chart bytes are outside the byte-identity
//! promise anyway (README, "What is identical where").

use std::path::{Path, PathBuf};

const ALLOWED: &[&str] = &["src/report/chart/"];

const BANNED: &[&str] = &[
    "ln", "ln_1p", "log", "log2", "log10", "exp", "exp2", "exp_m1", "powf", "powi", "sin", "cos",
    "tan", "sin_cos", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "cbrt", "hypot", "gamma", "ln_gamma", "erf", "erfc",
];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The banned calls in `line` (comments cut off): `.name(`, and `f64::name`
/// / `f32::name` as a call or a function value (`.map(f64::ln)`).
fn offences(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut found = Vec::new();
    for name in BANNED {
        for prefix in [".", "f64::", "f32::"] {
            let pat = format!("{prefix}{name}");
            let mut from = 0;
            while let Some(i) = code[from..].find(&pat) {
                let at = from + i;
                let end = at + pat.len();
                let next = code[end..].chars().next();
                let ends_name = !next.is_some_and(|c| c.is_alphanumeric() || c == '_');
                let hit = if prefix == "." {
                    next == Some('(') && !code[..at].ends_with("libm:")
                } else {
                    ends_name && !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                };
                if hit {
                    found.push(pat.clone());
                }
                from = end;
            }
        }
    }
    found
}

#[test]
fn src_calls_no_platform_libm() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rs_files(&root.join("src"), &mut files);
    files.sort();
    assert!(files.len() > 20);
    let mut bad = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if ALLOWED.iter().any(|a| rel.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            for o in offences(line) {
                bad.push(format!("{rel}:{}: {o}  ({})", n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "std transcendental float calls outside the allow-list (use the libm crate):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_detector_sees_what_it_must() {
    assert_eq!(offences("let y = x.ln();"), vec![".ln"]);
    assert_eq!(offences("let y = f64::exp(x);"), vec!["f64::exp"]);
    assert_eq!(offences("(a * b).powf(2.5)"), vec![".powf"]);
    assert_eq!(offences("v.map(f64::ln)"), vec!["f64::ln"]);
    assert!(offences("let y = libm::log(x);").is_empty());
    assert!(offences("let y = x.exp;").is_empty());
    assert!(offences("let y = f64::EPSILON.max(x.lnx(1));").is_empty());
    assert!(offences("let y = x.sqrt(); // x.ln() in a comment").is_empty());
}
