//! The `exec` model: a limiter in any language, run as a child process that
//! speaks a line-based text protocol on its stdin and stdout (see
//! `docs/book/src/protocol.md`).
//!
//! ratelab starts the command, sends a hello line carrying the policy and
//! the entry's parameters, and waits for the child's hello. Then every batch
//! of requests the lab hands the candidate ([`Admit::admit_batch`]) is one
//! line out and one line of decisions back. At the end
//! ([`Admit::finish`]) ratelab sends `end`, closes the child's stdin and
//! waits for it to exit; a line written after `end` is a fault, and a child
//! that has not exited within the timeout is killed.
//!
//! The child sees only virtual time (ns since the first request it is
//! sent), dense key ids (`0, 1, 2, …` in order of first appearance, for a
//! workload and a trace alike) and weights: nothing from ratelab's wall
//! clock. A deterministic child therefore gives byte-identical reports. A
//! child that answers the hello with version 2 and `keys=strings` is also
//! sent each new key's string once, before the batch that first names it.
//!
//! Each child runs in a process group of its own, and the whole group is
//! killed when ratelab is done with the child, whatever the path out (a
//! fault, a timeout, an error elsewhere in the run, or a clean `end`): a
//! grandchild that holds the child's stdout, or a background process
//! started at `end`, never outlives the run. ratelab notices the child's
//! exit itself, not only its stdout closing.
//!
//! Faults are errors with one line each (exit status 2), never a hang: the
//! command cannot start; the child exits or crashes (its last meaningful
//! stderr lines are quoted); it answers garbage, the wrong number of
//! decisions, or a line nobody asked for (the batch and the child's stdout
//! line are named); it does not answer a batch within the timeout (the
//! child is killed). The child's stderr is captured, not passed through.

use super::{Admit, Decision};
use crate::clock::Nanos;
use crate::error::{Error, Result};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The protocol's name and the version ratelab's hello carries. A child
/// answers `ratelab-exec 1 ok` or `ratelab-exec 2 ok` (see [`MAX_VERSION`]).
pub const PROTOCOL: &str = "ratelab-exec 1";

/// The newest protocol version ratelab speaks, offered in the hello as
/// `max_version=2`. Version 2 adds one thing: a child whose hello answer
/// carries `keys=strings` is sent each new key's string once (a `keys`
/// line before the batch that first names it).
pub const MAX_VERSION: u32 = 2;

/// The default per-batch timeout (an entry's `timeout_ms` overrides it).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long ratelab lets a child finish after `end` at most.
const END_GRACE: Duration = Duration::from_secs(5);

/// How often a waiting ratelab looks whether the child has exited.
const POLL: Duration = Duration::from_millis(20);

/// How long lines already written by an exited child may take to arrive.
const DRAIN: Duration = Duration::from_millis(200);

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

/// The program to start, as an absolute path: a name without `/` is looked
/// up in ratelab's `PATH` (the child's environment is empty, so it cannot
/// be looked up there); a relative path is taken from the working directory
/// (the scenario's folder) once, and made absolute before the child starts
/// in that folder, so the folder is never counted twice.
///
/// # Examples
/// ```
/// use ratelab::model::exec::resolve_program;
/// use std::path::Path;
/// let here = std::env::current_dir().unwrap();
/// let p = resolve_program("./ours.sh", Some(Path::new("sc"))).unwrap();
/// assert_eq!(p, here.join("sc").join("ours.sh"));
/// assert!(p.is_absolute());
/// assert_eq!(resolve_program("/bin/sh", Some(Path::new("sc"))).unwrap(), Path::new("/bin/sh"));
/// ```
pub fn resolve_program(prog: &str, workdir: Option<&Path>) -> Option<PathBuf> {
    let p = Path::new(prog);
    if prog.contains('/') {
        let joined = match workdir {
            Some(d) if p.is_relative() => d.join(p),
            _ => p.to_path_buf(),
        };
        // `absolute` does not resolve `..` or links: the path the user
        // wrote, from ratelab's working directory.
        return std::path::absolute(&joined).ok().map(|a| normal(&a));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|c| c.is_file())
        .and_then(|c| std::path::absolute(c).ok())
}

/// `a/./b` → `a/b` (the `.` components `absolute` keeps).
fn normal(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
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
    /// The child's process group (its pid).
    pgid: i32,
    /// The child has been waited for (its pid may be reused: the group
    /// is not signalled any more).
    reaped: bool,
    to_child: Option<Sender<Vec<u8>>>,
    writer: Option<JoinHandle<()>>,
    from_child: Receiver<std::io::Result<String>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<JoinHandle<()>>,
    /// Lines read from the child's stdout so far.
    lines_read: u64,
    /// The protocol version the child answered (1 or 2).
    version: u32,
    /// A fault already reported: every later call fails at once.
    failed: bool,
    /// `end` sent and the child gone.
    finished: bool,
}

impl Pipe {
    /// Starts the command and exchanges hellos: sends `ratelab-exec 1
    /// <role> key=value… max_version=2` and returns the words of the
    /// child's hello after `ratelab-exec 1 ok` (or `ratelab-exec 2 ok`).
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
        // A group of its own: everything the child starts is killed with it.
        cmd.process_group(0);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| cannot(e.to_string()))?;
        let pgid = i32::try_from(child.id()).unwrap_or(0);
        // A stop signal (Ctrl-C, SIGTERM, SIGHUP) kills the group too.
        crate::report::signals::child_started(pgid);
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (to_child, writer_rx) = mpsc::channel::<Vec<u8>>();
        let writer = std::thread::spawn(move || write_lines(stdin, writer_rx));
        let (reader_tx, from_child) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, reader_tx));
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        let stderr_thread = std::thread::spawn(move || keep_last_lines(stderr, tail));
        let mut pipe = Pipe {
            cfg,
            child,
            pgid,
            reaped: false,
            to_child: Some(to_child),
            writer: Some(writer),
            from_child,
            stderr_tail,
            stderr_thread: Some(stderr_thread),
            lines_read: 0,
            version: 1,
            failed: false,
            finished: false,
        };
        let mut hello = format!("{PROTOCOL} {role}");
        for (k, v) in fields {
            hello.push(' ');
            hello.push_str(k);
            hello.push('=');
            hello.push_str(&escape(v));
        }
        hello.push_str(&format!(" max_version={MAX_VERSION}\n"));
        let answer = pipe.exchange(hello.into_bytes(), "the hello")?;
        let mut rest = None;
        for v in 1..=MAX_VERSION {
            match answer.strip_prefix(&format!("ratelab-exec {v} ok")) {
                Some(r) if r.is_empty() || r.starts_with(' ') => {
                    pipe.version = v;
                    rest = Some(r);
                }
                _ => {}
            }
        }
        let Some(rest) = rest else {
            return Err(pipe.fault(format!(
                "answered the hello with {}: expected a line starting \"{PROTOCOL} ok\" (or \"ratelab-exec {MAX_VERSION} ok\")",
                excerpt(&answer)
            )));
        };
        let words = rest.split_whitespace().map(str::to_string).collect();
        Ok((pipe, words))
    }

    /// The candidate's label.
    pub fn name(&self) -> &str {
        &self.cfg.name
    }

    /// The protocol version the child answered the hello with.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The number of the child's stdout line last read (1-based).
    pub fn line_no(&self) -> u64 {
        self.lines_read
    }

    /// Sends one line that needs no answer.
    pub fn send(&mut self, line: Vec<u8>) -> Result<()> {
        if self.failed {
            return Err(self.failed_earlier());
        }
        if let Some(tx) = &self.to_child {
            let _ = tx.send(line);
        }
        Ok(())
    }

    fn failed_earlier(&self) -> Error {
        Error::input(format!(
            "exec {:?}: the child failed earlier",
            self.cfg.name
        ))
    }

    /// Sends one line and waits for one line back (without its line break).
    /// `what` names the exchange in errors ("batch 3"). A line the child
    /// wrote before this one was sent is a fault: nobody asked for it.
    pub fn exchange(&mut self, line: Vec<u8>, what: &str) -> Result<String> {
        if self.failed {
            return Err(self.failed_earlier());
        }
        match self.from_child.try_recv() {
            Ok(Ok(extra)) => {
                self.lines_read += 1;
                let at = self.lines_read;
                return Err(self.fault(format!(
                    "stdout line {at} {} came before {what} was sent: one line too many for the one before",
                    excerpt(&extra)
                )));
            }
            Ok(Err(e)) => return Err(self.fault(format!("reading its stdout before {what}: {e}"))),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
        }
        if let Some(tx) = &self.to_child {
            // A closed channel means the writer met a broken pipe: the child
            // is gone, and the read below says how.
            let _ = tx.send(line);
        }
        let deadline = Instant::now() + self.cfg.timeout;
        loop {
            let now = Instant::now();
            let slice = POLL.min(deadline.saturating_duration_since(now));
            match self.from_child.recv_timeout(slice) {
                Ok(Ok(l)) => {
                    self.lines_read += 1;
                    return Ok(l);
                }
                Ok(Err(e)) => return Err(self.fault(format!("reading its answer to {what}: {e}"))),
                Err(RecvTimeoutError::Timeout) => {
                    if self.exited() {
                        // Lines written before the exit may still be on
                        // their way through the reader thread.
                        if let Ok(Ok(l)) = self.from_child.recv_timeout(DRAIN) {
                            self.lines_read += 1;
                            return Ok(l);
                        }
                        let status = self.stop();
                        return Err(self.fault(format!(
                            "the child exited ({status}) before answering {what}"
                        )));
                    }
                    if Instant::now() >= deadline {
                        self.stop();
                        return Err(self.fault(format!(
                            "no answer to {what} within {} ms (timeout_ms); the child was killed",
                            self.cfg.timeout.as_millis()
                        )));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.wait_briefly();
                    return Err(self.fault(format!(
                        "the child exited ({status}) before answering {what}"
                    )));
                }
            }
        }
    }

    /// True once the child has exited (it is not reaped: its process
    /// group stays safe to signal).
    fn exited(&self) -> bool {
        if self.reaped {
            return true;
        }
        // SAFETY: waitid with WNOWAIT only looks at the child's state; the
        // siginfo it fills is ours and zeroed.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                self.pgid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            r == 0 && info.si_pid() != 0
        }
    }

    /// Kills the child's whole process group (the child, and whatever it
    /// started that still runs), then reaps the child; its status in words.
    fn stop(&mut self) -> String {
        if self.reaped {
            return "exited".to_string();
        }
        self.kill_group();
        self.reaped = true;
        crate::report::signals::child_reaped(self.pgid);
        match self.child.wait() {
            Ok(s) => s.to_string(),
            Err(e) => format!("status unknown: {e}"),
        }
    }

    fn kill_group(&mut self) {
        if !self.reaped && self.pgid > 0 {
            // SAFETY: a plain signal to the group we created; the child is
            // not reaped yet, so the group id cannot have been reused.
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
        }
    }

    /// Waits a moment for a child that closed its stdout to exit, then
    /// stops its group; its status in words.
    fn wait_briefly(&mut self) -> String {
        let until = Instant::now() + Duration::from_secs(2);
        while !self.exited() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let closed_only = !self.exited();
        let status = self.stop();
        if closed_only {
            "closed its stdout, killed".to_string()
        } else {
            status
        }
    }

    /// Ends the exchange: sends `end`, closes the child's stdin and waits
    /// (at most the timeout, at most 5 s) for the child to exit. A line the
    /// child writes after `end`, or an exit status other than 0, is a
    /// fault; a child still running is killed. The child's process group is
    /// killed in every case (a background process it started is not left
    /// running).
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if self.failed {
            self.stop();
            return Ok(());
        }
        if let Some(tx) = self.to_child.take() {
            let _ = tx.send(b"end\n".to_vec());
        }
        let until = Instant::now() + self.cfg.timeout.min(END_GRACE);
        let mut extra: Option<String> = None;
        let mut eof = false;
        while extra.is_none() && Instant::now() < until {
            if eof {
                if self.exited() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            match self.from_child.recv_timeout(POLL) {
                Ok(Ok(l)) => extra = Some(l),
                Ok(Err(_)) => eof = true,
                Err(RecvTimeoutError::Disconnected) => eof = true,
                Err(RecvTimeoutError::Timeout) => {
                    if self.exited() {
                        match self.from_child.recv_timeout(DRAIN) {
                            Ok(Ok(l)) => extra = Some(l),
                            _ => break,
                        }
                    }
                }
            }
        }
        let exited = self.exited();
        let status = if exited {
            // Reap without killing first? No: the group may hold a
            // background process started at `end`.
            self.kill_group();
            self.reaped = true;
            crate::report::signals::child_reaped(self.pgid);
            self.child.wait().ok()
        } else {
            self.stop();
            None
        };
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        if let Some(l) = extra {
            self.lines_read += 1;
            let at = self.lines_read;
            return Err(self.fault(format!(
                "stdout line {at} {} came after the last answer (after `end`, or one line too many for the last batch)",
                excerpt(&l)
            )));
        }
        match status {
            Some(s) if !s.success() => Err(self.fault(format!(
                "the child exited ({s}) after `end`: expected status 0"
            ))),
            _ => Ok(()),
        }
    }

    /// A one-line error naming the candidate, with the child's last
    /// meaningful stderr lines; later calls fail at once.
    pub fn fault(&mut self, what: String) -> Error {
        self.failed = true;
        // Let the stderr reader catch up with an exited child.
        if let Some(h) = &self.stderr_thread {
            let until = Instant::now() + Duration::from_millis(500);
            while !h.is_finished() && Instant::now() < until {
                if !self.exited() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let lines: Vec<String> = self
            .stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        let tail = match lines.len() {
            0 => String::new(),
            1 => format!("; its last stderr line: {}", excerpt(&lines[0])),
            _ => format!(
                "; its last stderr lines: {}",
                lines
                    .iter()
                    .map(|l| excerpt(l))
                    .collect::<Vec<_>>()
                    .join(" / ")
            ),
        };
        Error::input(format!(
            "exec {:?} ({}): {what}{tail}",
            self.cfg.name,
            self.cfg.command.join(" ")
        ))
    }
}

impl Drop for Pipe {
    /// A pipe dropped without [`Pipe::finish`] (an error elsewhere in the
    /// run, or a caller that never finished): the same clean shutdown when
    /// nothing failed, and the child's process group killed in any case.
    fn drop(&mut self) {
        if !self.finished && !self.failed && !std::thread::panicking() {
            let _ = self.finish();
        }
        self.stop();
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

/// How many of the child's last meaningful stderr lines a fault quotes.
const STDERR_LINES: usize = 3;

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

/// True for a stderr line worth quoting: it says something in words or
/// numbers (not a rule of `=` or `-`, not a blank line).
fn meaningful(line: &str) -> bool {
    line.chars().any(char::is_alphanumeric)
}

/// Reads the child's stderr to its end (so it never blocks on a full
/// pipe), keeping the start of its last [`STDERR_LINES`] meaningful lines.
fn keep_last_lines(stderr: impl Read, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut r = BufReader::new(stderr);
    let mut cur: Vec<u8> = Vec::new();
    let keep = |cur: &[u8]| {
        let s = String::from_utf8_lossy(cur).trim().to_string();
        if meaningful(&s)
            && let Ok(mut t) = tail.lock()
        {
            if t.len() == STDERR_LINES {
                t.pop_front();
            }
            t.push_back(s);
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

/// The child, before and after its start.
enum State {
    /// Not started yet: the child starts at the first request, once the
    /// whole scenario has been checked and every candidate built.
    Pending(ExecConfig, Vec<(String, String)>),
    Running(Box<Pipe>),
    /// Its start failed (the error was returned then).
    Broken,
}

/// A limiter in a child process (the `exec` model of the decision lab).
///
/// What the child is sent is the protocol's, whoever calls: key ids are
/// renumbered `0, 1, 2, …` in order of first appearance and times are
/// counted from the first request the child is sent, so a workload's
/// indices, a trace's interned ids and `replay`'s rows all reach the child
/// the same way.
pub struct ExecLimiter {
    state: State,
    batch: u64,
    state_bytes: u64,
    /// The child's id of each lab id (`u32::MAX`: not seen yet).
    ids: Vec<u32>,
    next_id: u32,
    /// The first request's time: the child's time origin.
    t0: Option<Nanos>,
    /// The child asked for key strings (`keys=strings`, version 2).
    wants_strings: bool,
    /// Strings of lab ids not yet sent to the child.
    names: std::collections::HashMap<u32, String>,
}

impl ExecLimiter {
    /// A limiter whose child starts at the first request (or at
    /// [`ExecLimiter::ensure_started`]). `fields` are the hello's
    /// `key=value` words (the policy, then the entry's parameters).
    pub fn new(cfg: ExecConfig, fields: &[(&str, String)]) -> Self {
        Self {
            state: State::Pending(
                cfg,
                fields
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            ),
            batch: 0,
            state_bytes: 0,
            ids: Vec::new(),
            next_id: 0,
            t0: None,
            wants_strings: false,
            names: std::collections::HashMap::new(),
        }
    }

    /// Starts the child and exchanges hellos at once.
    pub fn start(cfg: ExecConfig, fields: &[(&str, String)]) -> Result<Self> {
        let mut l = Self::new(cfg, fields);
        l.ensure_started()?;
        Ok(l)
    }

    /// Starts the child if it has not started yet.
    pub fn ensure_started(&mut self) -> Result<()> {
        let (cfg, fields) = match std::mem::replace(&mut self.state, State::Broken) {
            State::Pending(cfg, fields) => (cfg, fields),
            State::Running(p) => {
                self.state = State::Running(p);
                return Ok(());
            }
            State::Broken => {
                return Err(Error::input("exec: the child failed to start earlier"));
            }
        };
        let fields: Vec<(&str, String)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let (mut pipe, words) = Pipe::start(cfg, "limiter", &fields)?;
        for w in &words {
            if let Some(v) = w.strip_prefix("state_bytes=") {
                self.state_bytes = match v.parse() {
                    Ok(b) => b,
                    Err(_) => {
                        return Err(pipe.fault(format!(
                            "hello field {w:?}: expected state_bytes=<whole number>"
                        )))
                    }
                };
            } else if let Some(v) = w.strip_prefix("keys=") {
                if pipe.version() < 2 || v != "strings" {
                    return Err(pipe.fault(format!(
                        "hello field {w:?}: expected keys=strings, and only in a version 2 hello (\"ratelab-exec 2 ok keys=strings\")"
                    )));
                }
                self.wants_strings = true;
            }
        }
        if !self.wants_strings {
            self.names = std::collections::HashMap::new();
        }
        self.state = State::Running(Box::new(pipe));
        Ok(())
    }

    fn pipe(&mut self) -> Result<&mut Pipe> {
        self.ensure_started()?;
        match &mut self.state {
            State::Running(p) => Ok(p),
            _ => Err(Error::internal("exec: no child after its start")),
        }
    }

    /// The child's id of a lab id, a fresh one at its first appearance
    /// (pushed to `new` with its string when the child wants strings).
    fn child_id(&mut self, k: u32, new: &mut Vec<(u32, String)>) -> u32 {
        let i = k as usize;
        if i >= self.ids.len() {
            self.ids.resize(i + 1, u32::MAX);
        }
        if self.ids[i] == u32::MAX {
            self.ids[i] = self.next_id;
            self.next_id += 1;
            if self.wants_strings {
                let s = self.names.remove(&k).unwrap_or_else(|| k.to_string());
                new.push((self.ids[i], s));
            }
        }
        self.ids[i]
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
            let batch = self.batch;
            let pipe = self.pipe()?;
            let line = pipe.line_no();
            return Err(pipe.fault(format!(
                "batch {batch} (stdout line {line}): {got} decisions for {n} requests"
            )));
        }
        Ok(())
    }

    fn bad(&mut self, answer: &str, what: String) -> Error {
        let batch = self.batch;
        match self.pipe() {
            Ok(pipe) => {
                let line = pipe.line_no();
                pipe.fault(format!(
                    "batch {batch} (stdout line {line}): {what} in {}: expected 1, 0 or d<delay_ns>",
                    excerpt(answer)
                ))
            }
            Err(e) => e,
        }
    }

    /// Sends one `batch` line of at most [`EXEC_BATCH`] requests (after a
    /// `keys` line naming its new keys, when the child asked for them) and
    /// reads its answer into `out`.
    fn exchange_batch(
        &mut self,
        reqs: &[(u32, u64, Nanos)],
        out: &mut Vec<Decision>,
    ) -> Result<()> {
        self.ensure_started()?;
        self.batch += 1;
        let t0 = *self
            .t0
            .get_or_insert_with(|| reqs.first().map_or(0, |r| r.2));
        let mut new = Vec::new();
        let mut line = Vec::with_capacity(24 + reqs.len() * 24);
        let _ = write!(line, "batch {} {}", self.batch, reqs.len());
        for &(k, w, t) in reqs {
            let id = self.child_id(k, &mut new);
            let _ = write!(line, " {} {id} {w}", t.saturating_sub(t0));
        }
        line.push(b'\n');
        let what = format!("batch {}", self.batch);
        let pipe = self.pipe()?;
        if !new.is_empty() {
            let mut keys = Vec::with_capacity(16 + new.len() * 16);
            let _ = write!(keys, "keys {}", new.len());
            for (id, s) in &new {
                let _ = write!(keys, " {id} {}", escape(s));
            }
            keys.push(b'\n');
            pipe.send(keys)?;
        }
        let answer = pipe.exchange(line, &what)?;
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

    fn wants_key_names(&self) -> bool {
        // Before the hello ratelab cannot know: keep every name until then.
        !matches!(self.state, State::Running(_)) || self.wants_strings
    }

    fn name_keys(&mut self, keys: &[(u32, String)]) -> Result<()> {
        if self.wants_key_names() {
            for (k, s) in keys {
                self.names.insert(*k, s.clone());
            }
        }
        Ok(())
    }

    /// `end`, then the child's exit: a line after `end` or a failing exit
    /// status is a fault.
    fn finish(&mut self) -> Result<()> {
        match &mut self.state {
            State::Running(p) => p.finish(),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_values_are_one_word() {
        assert_eq!(escape("our limiter 100%"), "our%20limiter%20100%25");
    }

    #[test]
    fn a_relative_program_is_made_absolute_from_the_scenario_folder_once() {
        let here = std::env::current_dir().unwrap();
        let p = resolve_program("./x/../ours.sh", Some(Path::new("sc"))).unwrap();
        assert_eq!(p, here.join("sc/x/../ours.sh"));
        assert_eq!(
            resolve_program("ours.py", Some(Path::new("sc"))).is_none(),
            std::env::var_os("PATH").is_none()
                || !std::env::split_paths(&std::env::var_os("PATH").unwrap())
                    .any(|d| d.join("ours.py").is_file())
        );
    }

    #[test]
    fn only_lines_with_words_are_meaningful() {
        assert!(meaningful("ZeroDivisionError: boom"));
        assert!(!meaningful("========"));
        assert!(!meaningful("   "));
    }
}
