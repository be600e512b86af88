//! The reference adapters' toolchains: find them, build an adapter into a
//! scratch folder (never the source tree), or say why the test is skipped.
//!
//! A missing toolchain skips the test with a printed notice, unless
//! `RATELAB_REQUIRE_ADAPTERS=1` (CI sets it after installing them), which
//! turns the notice into a failure so CI never skips silently.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch folder for built adapters, under cargo's target folder.
pub fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("adapters")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Prints why a test is skipped, or fails when adapters are required.
pub fn skip(test: &str, why: &str) {
    let msg = format!("{test}: skipped: {why}");
    if std::env::var("RATELAB_REQUIRE_ADAPTERS").is_ok_and(|v| v == "1") {
        panic!("{msg} (RATELAB_REQUIRE_ADAPTERS=1)");
    }
    eprintln!("{msg}");
    println!("{msg}");
}

/// Whether `prog --version`-like `args` runs.
pub fn runs(prog: &str, args: &[&str]) -> bool {
    Command::new(prog)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs a build command; panics with its output when it fails.
pub fn build(cmd: &mut Command, what: &str) {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        o.status.success(),
        "{what}: {}\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Debian's golang.org/x/time source (golang-golang-x-time-dev).
pub const GOPATH: &str = "/usr/share/gocode";

/// Builds `examples/limiters/x_time_rate` against the real
/// golang.org/x/time/rate offline (GOPATH mode), or says why not.
pub fn go_x_time_rate(test: &str) -> Option<PathBuf> {
    if !runs("go", &["version"]) {
        skip(test, "no Go toolchain (apt-get install golang-go)");
        return None;
    }
    if !Path::new(GOPATH)
        .join("src/golang.org/x/time/rate/rate.go")
        .exists()
    {
        skip(
            test,
            "no golang.org/x/time in /usr/share/gocode (apt-get install golang-golang-x-time-dev)",
        );
        return None;
    }
    let d = scratch("go");
    let exe = d.join("x_time_rate");
    build(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&exe)
            .arg("examples/limiters/x_time_rate/main.go")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("GO111MODULE", "off")
            .env("GOPATH", GOPATH)
            .env("GOCACHE", d.join("cache"))
            .env("GOFLAGS", ""),
        "go build x_time_rate",
    );
    Some(exe)
}

/// Debian's Guava (libguava-java).
pub const GUAVA_JAR: &str = "/usr/share/java/guava.jar";

/// Compiles `examples/limiters/guava/GuavaExec.java` against the real
/// Guava; returns the command line running it, or says why not.
pub fn java_guava(test: &str) -> Option<Vec<String>> {
    if !runs("javac", &["-version"]) || !runs("java", &["-version"]) {
        skip(test, "no JDK (apt-get install default-jdk-headless)");
        return None;
    }
    if !Path::new(GUAVA_JAR).exists() {
        skip(
            test,
            "no /usr/share/java/guava.jar (apt-get install libguava-java)",
        );
        return None;
    }
    let d = scratch("guava");
    build(
        Command::new("javac")
            .args(["-cp", GUAVA_JAR, "-d"])
            .arg(&d)
            .arg("examples/limiters/guava/GuavaExec.java")
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        "javac GuavaExec",
    );
    Some(vec![
        "java".into(),
        "-cp".into(),
        format!("{}:{GUAVA_JAR}", d.display()),
        "com.google.common.util.concurrent.GuavaExec".into(),
    ])
}

/// A `redis-server` of the test's own on a free loopback port, stopped
/// (killed and reaped) when dropped. Nothing is saved to disk.
pub struct Redis {
    child: std::process::Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Redis {
    /// Starts one, or says why the test is skipped.
    pub fn start(test: &str) -> Option<Redis> {
        if !runs("redis-server", &["--version"]) {
            skip(test, "no redis-server (apt-get install redis-server)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let dir = scratch("redis");
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .current_dir(&dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("redis-server: {e}"));
        let r = Redis { child, port };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < until,
                "redis-server did not listen on {port}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(r)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
