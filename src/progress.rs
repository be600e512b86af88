//! Progress bars for long runs: drawn on stderr when stdout is a terminal,
//! silent otherwise (CI logs and pipes stay clean). Progress is reporting
//! only; it never influences results.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress handle shared by the threads of a sweep.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `len` steps labelled `label`; hidden unless stdout is a TTY.
    pub fn new(len: u64, label: &str) -> Self {
        let target = if std::io::stdout().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(len), target);
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix:>18} [{bar:32}] {pos}/{len} {msg} ({elapsed}, eta {eta})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label.to_string());
        Self { bar }
    }

    /// A handle that never draws.
    pub fn hidden() -> Self {
        Self {
            bar: ProgressBar::hidden(),
        }
    }

    /// One more step done.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    /// Changes the total.
    pub fn set_length(&self, len: u64) {
        self.bar.set_length(len);
    }

    /// A short message after the bar.
    pub fn set_message(&self, msg: impl Into<String>) {
        self.bar.set_message(msg.into());
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
