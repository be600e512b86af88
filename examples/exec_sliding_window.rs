//! A compiled limiter for ratelab's `exec` model (docs/book/src/protocol.md): the
//! same exact sliding log as `examples/limiters/sliding_window.py`, with
//! hand-rolled parsing so the pipe, not the adapter, is the cost.
//!
//! ```text
//! cargo build --release --example exec_sliding_window
//! # scenario: {"model": "exec", "command": ["target/release/examples/exec_sliding_window"]}
//! ```
//!
//! Standard library only: copy it as the skeleton of an adapter around a
//! limiter of your own.

use std::collections::VecDeque;
use std::io::{BufRead, Write};

const PROTOCOL: &str = "ratelab-exec 1";

/// One key's log of admitted (time, weight) and their sum.
#[derive(Default)]
struct Log {
    entries: VecDeque<(u64, u64)>,
    sum: u64,
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("exec_sliding_window: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let stdin = std::io::stdin();
    let mut inp = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut line = String::new();
    inp.read_line(&mut line).map_err(|e| e.to_string())?;
    let hello: Vec<&str> = line.split_whitespace().collect();
    if hello.len() < 3 || hello[..2].join(" ") != PROTOCOL || hello[2] != "limiter" {
        return Err(format!("not a limiter hello: {line:?}"));
    }
    let field = |name: &str| -> Result<u64, String> {
        hello[3..]
            .iter()
            .find_map(|f| f.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
            .ok_or(format!("hello without {name}"))?
            .parse()
            .map_err(|e| format!("{name}: {e}"))
    };
    let limit = field("limit")?;
    let interval = field("interval_ns")?;
    writeln!(out, "{PROTOCOL} ok state_bytes=16").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    let mut logs: Vec<Log> = Vec::new();
    let mut buf = Vec::new();
    let mut answer = Vec::new();
    loop {
        buf.clear();
        if inp.read_until(b'\n', &mut buf).map_err(|e| e.to_string())? == 0 {
            return Ok(());
        }
        let mut nums = Numbers { b: &buf, i: 0 };
        if buf.starts_with(b"end") {
            return Ok(());
        }
        if !buf.starts_with(b"batch ") {
            return Err(format!(
                "unexpected line {:?}",
                String::from_utf8_lossy(&buf[..buf.len().min(40)])
            ));
        }
        nums.i = 6;
        let _seq = nums.next();
        let n = nums.next().ok_or("batch without a count")?;
        answer.clear();
        for _ in 0..n {
            let (Some(t), Some(k), Some(w)) = (nums.next(), nums.next(), nums.next()) else {
                return Err("short batch".into());
            };
            let k = k as usize;
            if k >= logs.len() {
                logs.resize_with(k + 1, Log::default);
            }
            let log = &mut logs[k];
            while let Some(&(t0, w0)) = log.entries.front() {
                if t0 + interval <= t {
                    log.entries.pop_front();
                    log.sum -= w0;
                } else {
                    break;
                }
            }
            let ok = log.sum + w <= limit;
            if ok {
                log.entries.push_back((t, w));
                log.sum += w;
            }
            answer.extend_from_slice(if ok { b"1 " } else { b"0 " });
        }
        answer.pop();
        answer.push(b'\n');
        out.write_all(&answer).map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
}

/// Whole numbers separated by spaces.
struct Numbers<'a> {
    b: &'a [u8],
    i: usize,
}

impl Iterator for Numbers<'_> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        while self.i < self.b.len() && self.b[self.i] == b' ' {
            self.i += 1;
        }
        let start = self.i;
        let mut v: u64 = 0;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            v = v * 10 + u64::from(self.b[self.i] - b'0');
            self.i += 1;
        }
        (self.i > start).then_some(v)
    }
}
