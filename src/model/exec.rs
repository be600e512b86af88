//! The `exec` model: a limiter in any language, run as a child process that
//! speaks a line-based text protocol on its stdin and stdout (see
//! `docs/book/src/protocol.md`).
//!
//! ratelab starts the command, sends a hello line carrying the policy and
//! the entry's parameters, and waits for the child's hello. Then every batch
//! of requests the lab hands the candidate ([`Admit::admit_batch`]) is one
//! line out and one line of decisions back. At the end ratelab sends `end`
//! and closes the child's stdin; a child that has not exited within the
//! timeout is killed.
//!
//! The child sees only virtual time (ns since the run's first event), dense
//! key ids and weights: nothing from ratelab's wall clock. A deterministic
//! child therefore gives byte-identical reports.
//!
//! Faults are errors with one line each (exit status 2), never a hang: the
//! command cannot start; the child exits or crashes (its last stderr line is
//! quoted); it answers garbage or the wrong number of decisions (the batch
//! and the child's stdout line are named); it does not answer a batch within
//! the timeout (the child is killed). The child's stderr is captured, not
//! passed through: ratelab keeps its last line for error messages.

use super::{Admit, Decision};
use crate::clock::Nanos;
use crate::error::{Error, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The protocol's name and version, the first words of both hellos.
pub const PROTOCOL: &str = "ratelab-exec 1";

/// The default per-batch timeout (an entry's `timeout_ms` overrides it).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How to run a child.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The candidate's label (errors name it).
    pub name: String,
    /// How long the child may take to answer one line.
    pub timeout: Duration,
    /// Its working directory (the scenario's folder); `None`: ratelab's.
    pub workdir: Option<PathBuf>,
    /// Its whole environment: nothing else is passed on.
    pub env: Vec<(String, String)>,
}

/// The program to start: a name without `/` is looked up in ratelab's
/// `PATH` (the child's environment is empty, so it cannot be looked up
/// there); a relative path is taken from the working directory.
fn resolve_program(prog: &str, workdir: Option<&Path>) -> Option<PathBuf> {
    let p = Path::new(prog);
    if prog.contains('/') {
        return Some(match workdir {
            Some(d) if p.is_relative() => d.join(p),
            _ => p.to_path_buf(),
        });
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|c| c.is_file())
}

/// Escapes a hello value: `%` → `%25`, space → `%20`, line breaks →
/// `%0A` / `%0D`, so a hello field is one `key=value` word.
pub fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '%' => s.push_str("%25"),
            ' ' => s.push_str("%20"),
            '\n' => s.push_str("%0A"),
            '\r' => s.push_str("%0D"),
            '\t' => s.push_str("%09"),
            c => s.push(c),
        }
    }
    s
}

/// A child process speaking the protocol: lines out through a writer
/// thread, lines in through a reader thread, each answer awaited with a
/// timeout (a child that neither reads nor writes cannot block ratelab).
pub struct Pipe {
    cfg: ExecConfig,
    child: Child,
    to_child: Option<Sender<Vec<u8>>>,
    writer: Option<JoinHandle<()>>,
    from_child: Receiver<std::io::Result<String>>,
    stderr_last: Arc<Mutex<String>>,
    stderr_thread: Option<JoinHandle<()>>,
    /// Lines read from the child's stdout so far.
    lines_read: u64,
    /// A fault already reported: every later call fails at once.
    failed: bool,
}

impl Pipe {
    /// Starts the command and exchanges hellos: sends `ratelab-exec 1
    /// <role> key=value…` and returns the words of the child's hello after
    /// `ratelab-exec 1 ok`.
    pub fn start(
        cfg: ExecConfig,
        role: &str,
        fields: &[(&str, String)],
    ) -> Result<(Self, Vec<String>)> {
        let Some((prog, args)) = cfg.command.split_first() else {
            return Err(Error::input(
                "exec: command is empty: expected a program and its arguments",
            ));
        };
        let cannot = |why: String| {
            Error::input(format!(
                "exec {:?}: cannot start {:?}: {why}",
                cfg.name,
                cfg.command.join(" ")
            ))
        };
        let exe = resolve_program(prog, cfg.workdir.as_deref())
            .ok_or_else(|| cannot(format!("{prog:?} is not in PATH")))?;
        let mut cmd = Command::new(&exe);
        cmd.args(args).env_clear().envs(cfg.env.iter().cloned());
        if let Some(d) = &cfg.workdir {
            cmd.current_dir(d);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| cannot(e.to_string()))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (to_child, writer_rx) = mpsc::channel::<Vec<u8>>();
        let writer = std::thread::spawn(move || write_lines(stdin, writer_rx));
        let (reader_tx, from_child) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, reader_tx));
        let stderr_last = Arc::new(Mutex::new(String::new()));
        let last = stderr_last.clone();
        let stderr_thread = std::thread::spawn(move || keep_last_line(stderr, last));
        let mut pipe = Pipe {
            cfg,
            child,
            to_child: Some(to_child),
            writer: Some(writer),
            from_child,
            stderr_last,
            stderr_thread: Some(stderr_thread),
            lines_read: 0,
            failed: false,
        };
        let mut hello = format!("{PROTOCOL} {role}");
        for (k, v) in fields {
            hello.push(' ');
            hello.push_str(k);
            hello.push('=');
            hello.push_str(&escape(v));
        }
        hello.push('\n');
        let answer = pipe.exchange(hello.into_bytes(), "the hello")?;
        let want = format!("{PROTOCOL} ok");
        let rest = match answer.strip_prefix(&want) {
            Some(r) if r.is_empty() || r.starts_with(' ') => r,
            _ => {
                return Err(pipe.fault(format!(
                    "answered the hello with {}: expected a line starting {want:?}",
                    excerpt(&answer)
                )))
            }
        };
        let words = rest.split_whitespace().map(str::to_string).collect();
        Ok((pipe, words))
    }

    /// The candidate's label.
    pub fn name(&self) -> &str {
        &self.cfg.name
    }

    /// The number of the child's stdout line last read (1-based).
    pub fn line_no(&self) -> u64 {
        self.lines_read
    }

    /// Sends one line and waits for one line back (without its line break).
    /// `what` names the exchange in errors ("batch 3").
    pub fn exchange(&mut self, line: Vec<u8>, what: &str) -> Result<String> {
        if self.failed {
            return Err(Error::input(format!(
                "exec {:?}: the child failed earlier",
                self.cfg.name
            )));
        }
        if let Some(tx) = &self.to_child {
            // A closed channel means the writer met a broken pipe: the child
            // is gone, and the read below says how.
            let _ = tx.send(line);
        }
        match self.from_child.recv_timeout(self.cfg.timeout) {
            Ok(Ok(l)) => {
                self.lines_read += 1;
                Ok(l)
            }
            Ok(Err(e)) => Err(self.fault(format!("reading its answer to {what}: {e}"))),
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                Err(self.fault(format!(
                    "no answer to {what} within {} ms (timeout_ms); the child was killed",
                    self.cfg.timeout.as_millis()
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.wait_briefly();
                Err(self.fault(format!(
                    "the child exited ({status}) before answering {what}"
                )))
            }
        }
    }

    /// Waits a moment for an exiting child; its status in words.
    fn wait_briefly(&mut self) -> String {
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return s.to_string(),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return "closed its stdout, killed".to_string();
                }
                Err(e) => return format!("status unknown: {e}"),
            }
        }
    }

    /// A one-line error naming the candidate, with the child's last stderr
    /// line; later calls fail at once.
    pub fn fault(&mut self, what: String) -> Error {
        self.failed = true;
        // Let the stderr reader catch up with an exited child.
        if let Some(h) = &self.stderr_thread {
            let until = Instant::now() + Duration::from_millis(500);
            while !h.is_finished() && Instant::now() < until {
                if matches!(self.child.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let last = self
            .stderr_last
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        let tail = if last.is_empty() {
            String::new()
        } else {
            format!("; its last stderr line: {}", excerpt(&last))
        };
        Error::input(format!(
            "exec {:?} ({}): {what}{tail}",
            self.cfg.name,
            self.cfg.command.join(" ")
        ))
    }
}

impl Drop for Pipe {
    /// Clean shutdown: `end`, stdin closed, the child given the timeout to
    /// exit, then killed.
    fn drop(&mut self) {
        if let Some(tx) = self.to_child.take() {
            if !self.failed {
                let _ = tx.send(b"end\n".to_vec());
            }
        }
        if let Some(w) = self.writer.take() {
            let until = Instant::now() + self.cfg.timeout.min(Duration::from_secs(2));
            while !w.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let until = Instant::now() + self.cfg.timeout.min(Duration::from_secs(5));
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(1)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
            }
        }
    }
}

fn write_lines(mut stdin: ChildStdin, rx: Receiver<Vec<u8>>) {
    for line in rx {
        if stdin.write_all(&line).and_then(|_| stdin.flush()).is_err() {
            return;
        }
    }
}

/// The longest answer line ratelab reads (a batch of 16,384 answers is
/// well under 1 MiB): a child that writes endlessly without a line break
/// is a fault, not a memory blow-up.
pub const MAX_LINE: u64 = 16 << 20;

/// The most of a stderr line kept for error messages.
const MAX_STDERR_LINE: usize = 4096;

fn read_lines(stdout: impl Read, tx: Sender<std::io::Result<String>>) {
    let mut r = BufReader::with_capacity(1 << 16, stdout);
    loop {
        let mut line = String::new();
        match r.by_ref().take(MAX_LINE + 1).read_line(&mut line) {
            Ok(0) => return,
            Ok(n) if n as u64 > MAX_LINE => {
                let _ = tx.send(Err(std::io::Error::other(format!(
                    "a line longer than {} MiB without a line break",
                    MAX_LINE >> 20
                ))));
                return;
            }
            Ok(_) => {
                while line.ends_with(['\n', '\r']) {
                    line.pop();
                }
                if tx.send(Ok(line)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

/// Reads the child's stderr to its end (so it never blocks on a full
/// pipe), keeping the start of its last non-empty line.
fn keep_last_line(stderr: impl Read, last: Arc<Mutex<String>>) {
    let mut r = BufReader::new(stderr);
    let mut cur: Vec<u8> = Vec::new();
    let keep = |cur: &[u8]| {
        let s = String::from_utf8_lossy(cur).trim().to_string();
        if !s.is_empty() {
            if let Ok(mut l) = last.lock() {
                *l = s;
            }
        }
    };
    loop {
        let buf = match r.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(b) => b,
        };
        let n = buf.len();
        for piece in buf.split_inclusive(|&b| b == b'\n') {
            let (text, ends) = match piece.split_last() {
                Some((b'\n', t)) => (t, true),
                _ => (piece, false),
            };
            let room = MAX_STDERR_LINE.saturating_sub(cur.len());
            cur.extend_from_slice(&text[..text.len().min(room)]);
            if ends {
                keep(&cur);
                cur.clear();
            }
        }
        r.consume(n);
    }
    keep(&cur);
}

/// A line as quoted in an error: at most 80 characters.
pub(crate) fn excerpt(s: &str) -> String {
    let mut e: String = s.chars().take(80).collect();
    if e.len() < s.len() {
        e.push('…');
    }
    format!("{e:?}")
}

/// Requests in one `batch` line of the protocol (docs/book/src/protocol.md).
pub const EXEC_BATCH: usize = 1 << 14;

/// A limiter in a child process (the `exec` model of the decision lab).
pub struct ExecLimiter {
    pipe: Pipe,
    batch: u64,
    state_bytes: u64,
}

impl ExecLimiter {
    /// Starts the child and exchanges hellos. `fields` are the hello's
    /// `key=value` words (the policy, then the entry's parameters).
    pub fn start(cfg: ExecConfig, fields: &[(&str, String)]) -> Result<Self> {
        let (mut pipe, words) = Pipe::start(cfg, "limiter", fields)?;
        let mut state_bytes = 0;
        for w in &words {
            if let Some(v) = w.strip_prefix("state_bytes=") {
                state_bytes = match v.parse() {
                    Ok(b) => b,
                    Err(_) => {
                        return Err(pipe.fault(format!(
                            "hello field {w:?}: expected state_bytes=<whole number>"
                        )))
                    }
                };
            }
        }
        Ok(Self {
            pipe,
            batch: 0,
            state_bytes,
        })
    }

    /// Parses one answer line into `out`.
    fn parse(&mut self, answer: &str, n: usize, out: &mut Vec<Decision>) -> Result<()> {
        let start = out.len();
        for (i, tok) in answer.split_ascii_whitespace().enumerate() {
            let d = match tok.as_bytes() {
                b"1" => Decision::ALLOW,
                b"0" => Decision::DENY,
                [b'd', rest @ ..] => match std::str::from_utf8(rest)
                    .ok()
                    .and_then(|r| r.parse::<Nanos>().ok())
                {
                    Some(delay) => Decision {
                        allowed: true,
                        delay,
                    },
                    None => return Err(self.bad(answer, format!("decision {} {tok:?}", i + 1))),
                },
                _ => return Err(self.bad(answer, format!("decision {} {tok:?}", i + 1))),
            };
            if i >= n {
                break;
            }
            out.push(d);
        }
        let got = answer.split_ascii_whitespace().count();
        if got != n {
            out.truncate(start);
            let (batch, line) = (self.batch, self.pipe.line_no());
            return Err(self.pipe.fault(format!(
                "batch {batch} (stdout line {line}): {got} decisions for {n} requests"
            )));
        }
        Ok(())
    }

    fn bad(&mut self, answer: &str, what: String) -> Error {
        let (batch, line) = (self.batch, self.pipe.line_no());
        self.pipe.fault(format!(
            "batch {batch} (stdout line {line}): {what} in {}: expected 1, 0 or d<delay_ns>",
            excerpt(answer)
        ))
    }

    /// Sends one `batch` line of at most [`EXEC_BATCH`] requests and reads
    /// its answer into `out`.
    fn exchange_batch(
        &mut self,
        reqs: &[(u32, u64, Nanos)],
        out: &mut Vec<Decision>,
    ) -> Result<()> {
        self.batch += 1;
        let mut line = Vec::with_capacity(24 + reqs.len() * 24);
        let _ = write!(line, "batch {} {}", self.batch, reqs.len());
        for &(k, w, t) in reqs {
            let _ = write!(line, " {t} {k} {w}");
        }
        line.push(b'\n');
        let what = format!("batch {}", self.batch);
        let answer = self.pipe.exchange(line, &what)?;
        self.parse(&answer, reqs.len(), out)
    }
}

impl Admit for ExecLimiter {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision> {
        let mut out = Vec::with_capacity(1);
        self.admit_batch(&[(key, w, now)], &mut out)?;
        Ok(out[0])
    }

    /// One protocol line per [`EXEC_BATCH`] requests, whatever batch the
    /// caller hands over (the protocol's batch size is part of the contract).
    fn admit_batch(&mut self, reqs: &[(u32, u64, Nanos)], out: &mut Vec<Decision>) -> Result<()> {
        for chunk in reqs.chunks(EXEC_BATCH) {
            self.exchange_batch(chunk, out)?;
        }
        Ok(())
    }

    fn memory_bytes(&self, keys: u64) -> u64 {
        keys.saturating_mul(self.state_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_values_are_one_word() {
        assert_eq!(escape("our limiter 100%"), "our%20limiter%20100%25");
    }
}
