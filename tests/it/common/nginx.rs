//! A real nginx for the end-to-end tests: started on a free loopback port
//! under a temp prefix, stopped by a Drop guard; a one-request client; the
//! clock-alignment shim (`tests/real/clock_shim.c`).

use super::adapters;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A real nginx of the test's own (one process: `master_process off`),
/// killed and reaped when dropped, also when the test fails.
pub struct Nginx {
    child: Child,
    /// The port it listens on.
    pub port: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    /// nginx on a free loopback port under the prefix `dir`, with `http`
    /// (log format, access log, zones: whatever the test needs) in its
    /// http block and `location` in its one `location /`, which answers
    /// with a 1x1 GIF; `shim` is LD_PRELOADed.
    pub fn start(bin: &str, dir: &Path, http: &str, location: &str, shim: Option<&Path>) -> Nginx {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let d = dir.display();
        let conf = format!(
            r#"master_process off;
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 512; }}
http {{
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    {http}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            {location}
            empty_gif;
        }}
    }}
}}
"#
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let mut cmd = Command::new(bin);
        cmd.arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(s) = shim {
            cmd.env("LD_PRELOAD", s);
        }
        let child = cmd.spawn().expect("nginx starts");
        let nginx = Nginx { child, port };
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "nginx did not listen on {port}: {}",
                std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }
}

/// One GET with key `key` on a fresh connection; the status.
pub fn get(port: u16, key: &str) -> u16 {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(
        format!("GET / HTTP/1.1\r\nHost: t\r\nX-Key: {key}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    let mut resp = Vec::new();
    c.read_to_end(&mut resp).unwrap();
    let text = String::from_utf8_lossy(&resp);
    text.get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"))
}

/// The shim compiled into `dir`, or None (and the notice) without cc.
pub fn shim(test: &str, dir: &Path) -> Option<PathBuf> {
    if !adapters::runs("cc", &["--version"]) {
        adapters::skip(test, "no C compiler (apt-get install gcc)");
        return None;
    }
    let so = dir.join("clock_shim.so");
    adapters::build(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&so)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real/clock_shim.c"))
            .arg("-ldl"),
        "cc clock_shim.c",
    );
    Some(so)
}

pub fn nginx_bin(test: &str) -> Option<String> {
    for bin in ["nginx", "/usr/sbin/nginx"] {
        if adapters::runs(bin, &["-v"]) {
            return Some(bin.to_string());
        }
    }
    adapters::skip(test, "no nginx (apt-get install nginx-light)");
    None
}
