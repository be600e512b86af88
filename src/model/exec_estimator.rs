//! A frequency estimator (a sketch) in any language, run as a child process
//! speaking the `estimator` role of the exec protocol (`docs/book/src/protocol.md`):
//! batches of `incr` answered `ok`, batches of `get` answered with one
//! estimate per key.
//!
//! The pipe, its timeouts and its fault messages are the limiter's
//! ([`super::exec::Pipe`]); only the lines differ. Keys are the lab's dense
//! key ids; a child answering the hello with `ratelab-exec 2 ok
//! keys=strings` is also sent each key's string once, on a `keys` line
//! before the first `incr` batch naming it (as a limiter child is): a
//! sketch that hashes keys as production does collides on the strings. This is an adapter beside [`super::estimator::FrequencyEstimator`]
//! rather than an implementation of it: the trait decides one key at a time
//! and reads through `&self`, while a child answers whole batches.

use super::exec::{escape, excerpt, ExecConfig, Pipe};
use crate::error::{Error, Result};
use std::io::Write;

/// A sketch in a child process.
pub struct ExecEstimator {
    pipe: Pipe,
    seq: u64,
    /// The child asked for key strings (`keys=strings`, version 2).
    wants_strings: bool,
    /// Ids whose string the child has been sent.
    named: Vec<bool>,
}

impl ExecEstimator {
    /// Starts the child and exchanges hellos (`ratelab-exec 1 estimator
    /// key=value…` / `ratelab-exec 1 ok`).
    pub fn start(cfg: ExecConfig, fields: &[(&str, String)]) -> Result<Self> {
        let (mut pipe, words) = Pipe::start(cfg, "estimator", fields)?;
        let mut wants_strings = false;
        for w in &words {
            if let Some(v) = w.strip_prefix("keys=") {
                if pipe.version() < 2 || v != "strings" {
                    return Err(pipe.fault(format!(
                        "hello field {w:?}: expected keys=strings, and only in a version 2 hello (\"ratelab-exec 2 ok keys=strings\")"
                    )));
                }
                wants_strings = true;
            }
        }
        Ok(Self {
            pipe,
            seq: 0,
            wants_strings,
            named: Vec::new(),
        })
    }

    /// Sends `keys <n> <id> <string> …` for the ids of `items` the child
    /// has not been told yet, when it asked for strings; `name` gives an
    /// id's string.
    pub fn name_keys(&mut self, items: &[(u32, i64)], name: &dyn Fn(u32) -> String) -> Result<()> {
        if !self.wants_strings {
            return Ok(());
        }
        let mut new = Vec::new();
        for &(k, _) in items {
            let i = k as usize;
            if i >= self.named.len() {
                self.named.resize(i + 1, false);
            }
            if !self.named[i] {
                self.named[i] = true;
                new.push(k);
            }
        }
        if new.is_empty() {
            return Ok(());
        }
        let mut line = Vec::with_capacity(16 + new.len() * 16);
        let _ = write!(line, "keys {}", new.len());
        for k in new {
            let _ = write!(line, " {k} {}", escape(&name(k)));
        }
        line.push(b'\n');
        self.pipe.send(line)
    }

    /// `incr <seq> <n> <k1> <v1> …`: adds each value to its key, in order;
    /// the child answers `ok`.
    pub fn incr_batch(&mut self, items: &[(u32, i64)]) -> Result<()> {
        self.seq += 1;
        let mut line = Vec::with_capacity(24 + items.len() * 12);
        let _ = write!(line, "incr {} {}", self.seq, items.len());
        for &(k, v) in items {
            let _ = write!(line, " {k} {v}");
        }
        line.push(b'\n');
        let what = format!("incr batch {}", self.seq);
        let answer = self.pipe.exchange(line, &what)?;
        if answer.trim() != "ok" {
            let at = self.pipe.line_no();
            return Err(self.pipe.fault(format!(
                "{what} (stdout line {at}): answered {}: expected ok",
                excerpt(&answer)
            )));
        }
        Ok(())
    }

    /// `get <seq> <n> <k1> …`: the child answers one whole number (the
    /// estimate, possibly negative) per key, in order; appended to `out`.
    pub fn get_batch(&mut self, keys: &[u32], out: &mut Vec<i64>) -> Result<()> {
        self.seq += 1;
        let mut line = Vec::with_capacity(24 + keys.len() * 8);
        let _ = write!(line, "get {} {}", self.seq, keys.len());
        for k in keys {
            let _ = write!(line, " {k}");
        }
        line.push(b'\n');
        let what = format!("get batch {}", self.seq);
        let answer = self.pipe.exchange(line, &what)?;
        let start = out.len();
        for (i, tok) in answer.split_ascii_whitespace().enumerate() {
            match tok.parse::<i64>() {
                Ok(v) => out.push(v),
                Err(_) => {
                    out.truncate(start);
                    return Err(self.bad(&what, &answer, format!("estimate {} {tok:?}", i + 1)));
                }
            }
        }
        let got = out.len() - start;
        if got != keys.len() {
            out.truncate(start);
            let at = self.pipe.line_no();
            return Err(self.pipe.fault(format!(
                "{what} (stdout line {at}): {got} estimates for {} keys",
                keys.len()
            )));
        }
        Ok(())
    }

    /// `end`, then the child's exit: a line after the last answer or a
    /// failing exit status is a fault (see [`Pipe::finish`]).
    pub fn finish(&mut self) -> Result<()> {
        self.pipe.finish()
    }

    fn bad(&mut self, what: &str, answer: &str, tok: String) -> Error {
        let at = self.pipe.line_no();
        self.pipe.fault(format!(
            "{what} (stdout line {at}): {tok} in {}: expected a whole number",
            excerpt(answer)
        ))
    }
}
