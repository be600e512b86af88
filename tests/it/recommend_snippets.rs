//! The library snippets of `ratelab recommend` compiled and run against
//! the real libraries: the Rust ones (governor, pingora-limits) with the
//! crates ratelab itself builds with (their rlibs beside this test's
//! binary), x/time/rate's Go against Debian's golang.org/x/time
//! (golang-golang-x-time-dev) and Guava's Java against Debian's Guava
//! (libguava-java). Each snippet is pasted as written into a small program
//! that builds its limiter once and sends a burst of requests at one
//! instant; what the burst admits is the pick's (governor: its burst;
//! pingora: the limit; x/time/rate: `b`, through `AllowN` at a fixed
//! time), and Go's and Java's limiters report the pick's numbers.

use crate::common::adapters::{self, build, GOPATH, GUAVA_JAR};
use crate::common::stderr;
use crate::recommend::{log, recommend};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pick and the snippet of `family` on a fresh 120 s log.
fn pick(family: &str, file: &str) -> (tempfile::TempDir, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let trace = log(dir.path(), 120.0, 3);
    let out = dir.path().join("out");
    let o = recommend(&trace, family, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("recommend.json")).unwrap())
            .unwrap();
    assert_eq!(j["snippet"], file);
    let text = std::fs::read_to_string(out.join(file)).unwrap();
    (dir, j["pick"]["limiter"].clone(), text)
}

/// The rlib of `krate` beside this test binary (the one cargo built for
/// ratelab; the newest when several are there).
fn rlib(deps: &Path, krate: &str) -> PathBuf {
    let prefix = format!("lib{krate}-");
    std::fs::read_dir(deps)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.starts_with(&prefix) && n.ends_with(".rlib")
        })
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no {prefix}*.rlib in {}", deps.display()))
}

/// A Rust snippet as a program: its `use` lines at the top, the lines
/// before `// per request` building the limiter once in `main`, the lines
/// after it run for each of `n` requests of one key (they set
/// `allowed`); prints how many were admitted.
fn rust_program(snippet: &str, n: u32) -> String {
    let code: Vec<&str> = snippet.lines().collect();
    let uses: Vec<&str> = code
        .iter()
        .copied()
        .filter(|l| l.starts_with("use "))
        .collect();
    let body: Vec<&str> = code
        .iter()
        .copied()
        .filter(|l| !l.starts_with("use "))
        .collect();
    let at = body
        .iter()
        .position(|l| l.starts_with("// per request"))
        .expect("a `// per request` line");
    format!(
        "#![allow(unused_imports)]\n{}\nfn main() {{\n{}\n    let mut admitted = 0u32;\n    for _ in 0..{n} {{\n        let key = String::from(\"client\");\n{}\n        if allowed {{\n            admitted += 1;\n        }}\n    }}\n    println!(\"{{admitted}}\");\n}}\n",
        uses.join("\n"),
        body[..at].join("\n"),
        body[at..].join("\n")
    )
}

/// Compiles `program` with rustc against the crates beside this test and
/// runs it: its standard output.
fn run_rust(test: &str, program: &str, crates: &[&str]) -> Option<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if !adapters::runs(&rustc, &["--version"]) {
        adapters::skip(test, "no rustc on PATH");
        return None;
    }
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("snippet.rs");
    std::fs::write(&src, program).unwrap();
    let bin = dir.path().join("snippet");
    let mut cmd = Command::new(rustc);
    cmd.args(["--edition", "2021", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg("-L")
        .arg(format!("dependency={}", deps.display()));
    for c in crates {
        cmd.arg("--extern")
            .arg(format!("{c}={}", rlib(deps, c).display()));
    }
    build(&mut cmd, &format!("rustc {test}:\n{program}"));
    let o = Command::new(&bin).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(String::from_utf8(o.stdout).unwrap().trim().to_string())
}

#[test]
fn the_governor_snippet_compiles_and_admits_the_picks_burst() {
    let (_d, l, text) = pick("governor", "governor.rs");
    let burst = l["burst"].as_u64().unwrap();
    let p = rust_program(&text, (3 * burst + 5) as u32);
    let Some(out) = run_rust("governor snippet", &p, &["governor"]) else {
        return;
    };
    // A fresh keyed limiter: the burst at once, then nothing for 1 / rate.
    assert_eq!(out, burst.to_string(), "{p}");
}

#[test]
fn the_pingora_snippet_compiles_and_admits_the_limit() {
    let (_d, l, text) = pick("pingora", "pingora_rate.rs");
    assert_eq!(l["model"], "pingora_rate");
    assert!(
        text.contains(&format!(
            "Rate::new_with_estimator_config(Duration::from_millis(1000), {}, {})",
            l["hashes"], l["slots"]
        )) || l["counters"] == "exact",
        "{text}"
    );
    let p = rust_program(&text, 35);
    let Some(out) = run_rust("pingora snippet", &p, &["pingora_limits"]) else {
        return;
    };
    // One key alone in a fresh sketch: no collision, so the limit of 10
    // within the first interval, in either pattern.
    assert_eq!(out, "10", "{p}");
    // The other pattern compiles and decides the same on one key.
    let other = if text.contains("rate_with") {
        "// per request\nlet allowed = rate.observe(&key, 1) <= LIMIT;\n"
    } else {
        "// per request\nlet estimate = rate.rate_with(&key, |c: RateComponents| {\n    c.prev_samples as f64 * (1.0 - c.current_interval_fraction) + c.curr_samples as f64\n});\nlet allowed = estimate < LIMIT as f64;\nif allowed {\n    rate.observe(&key, 1);\n}\n"
    };
    let cut = text.find("// per request").unwrap();
    let swapped = format!("{}{other}", &text[..cut]);
    let p = rust_program(&swapped, 35);
    assert_eq!(
        run_rust("pingora snippet", &p, &["pingora_limits"]).unwrap(),
        "10",
        "{p}"
    );
}

#[test]
fn a_rust_snippet_that_does_not_type_check_fails_the_check() {
    // The check can fail: a burst of the wrong type is refused by rustc.
    let bad = "use governor::{Quota, RateLimiter};\nuse std::num::NonZeroU32;\n\nlet limiter = RateLimiter::keyed(Quota::per_second(NonZeroU32::new(5).unwrap()).allow_burst(3));\n// per request\nlet allowed = limiter.check_key(&key).is_ok();\n";
    let p = rust_program(bad, 3);
    let r = std::panic::catch_unwind(|| run_rust("bad snippet", &p, &["governor"]));
    assert!(r.is_err(), "rustc accepted allow_burst(3)");
}

#[test]
fn the_x_time_rate_snippet_compiles_against_debians_x_time() {
    let test = "x-time-rate snippet";
    if !adapters::runs("go", &["version"])
        || !Path::new(GOPATH)
            .join("src/golang.org/x/time/rate/rate.go")
            .exists()
    {
        adapters::skip(
            test,
            "no Go toolchain or golang.org/x/time (apt-get install golang-go golang-golang-x-time-dev)",
        );
        return;
    }
    let (d, l, text) = pick("x-time-rate", "x_time_rate.go");
    let burst = l["burst"].as_u64().unwrap();
    let main = format!(
        "package main\n\nimport (\n\t\"fmt\"\n\t\"time\"\n)\n\n{text}\nfunc main() {{\n\tl := newLimiter()\n\tt := time.Unix(1767225600, 0)\n\tn := 0\n\tfor i := 0; i < {}; i++ {{\n\t\tif l.AllowN(t, 1) {{\n\t\t\tn++\n\t\t}}\n\t}}\n\tfmt.Println(n, float64(l.Limit()), l.Burst())\n}}\n",
        3 * burst + 5
    );
    let src = d.path().join("main.go");
    std::fs::write(&src, &main).unwrap();
    let o = Command::new("go")
        .arg("run")
        .arg(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", GOPATH)
        .env("GOCACHE", d.path().join("gocache"))
        .env("GOFLAGS", "")
        .env("GOPROXY", "off")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "go run:\n{main}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    let f: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(f[0], burst.to_string(), "{out}");
    assert_eq!(
        f[1].parse::<f64>().unwrap(),
        l["rate_per_s"].as_f64().unwrap()
    );
    assert_eq!(f[2], burst.to_string());
}

#[test]
fn the_guava_snippet_compiles_against_debians_guava() {
    let test = "guava snippet";
    if !adapters::runs("javac", &["-version"]) || !Path::new(GUAVA_JAR).exists() {
        adapters::skip(
            test,
            "no JDK or Guava (apt-get install default-jdk-headless libguava-java)",
        );
        return;
    }
    let (d, l, text) = pick("guava", "RateLimiterConfig.java");
    let imports: Vec<&str> = text.lines().filter(|l| l.starts_with("import ")).collect();
    let body: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("import ") && !l.starts_with("// "))
        .collect();
    let java = format!(
        "{}\n\npublic class Check {{\n  public static void main(String[] args) {{\n{}\n    System.out.println(limiter.getRate() + \" \" + limiter.tryAcquire());\n  }}\n}}\n",
        imports.join("\n"),
        body.join("\n")
    );
    std::fs::write(d.path().join("Check.java"), &java).unwrap();
    build(
        Command::new("javac")
            .args(["-cp", GUAVA_JAR, "-d"])
            .arg(d.path())
            .arg(d.path().join("Check.java")),
        &format!("javac:\n{java}"),
    );
    let o = Command::new("java")
        .arg("-cp")
        .arg(format!("{}:{GUAVA_JAR}", d.path().display()))
        .arg("Check")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let f: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(
        f[0].parse::<f64>().unwrap(),
        l["permits_per_s"].as_f64().unwrap(),
        "{out}"
    );
    // A fresh SmoothBursty limiter admits its first request.
    assert_eq!(f[1], "true", "{out}");
}
