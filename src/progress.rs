//! Progress bars for long runs: drawn on stderr when stdout is a terminal,
//! silent otherwise (CI logs and pipes stay clean). Progress is reporting
//! only; it never influences results.
//!
//! Every drawn bar belongs to one process-wide [`MultiProgress`], so the
//! bars of scenarios that `reproduce` runs at the same time stack one per
//! line instead of overwriting each other, and text printed through
//! [`suspend`] goes above them.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::OnceLock;

/// The bars being drawn (on stderr).
fn bars() -> &'static MultiProgress {
    static BARS: OnceLock<MultiProgress> = OnceLock::new();
    BARS.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

/// Runs `f` (which prints to stdout) with the bars cleared from the
/// terminal, then draws them again below what it printed.
pub fn suspend<R>(f: impl FnOnce() -> R) -> R {
    bars().suspend(f)
}

/// A progress handle shared by the threads of a sweep.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `len` steps labelled `label`; hidden unless stdout is a TTY.
    pub fn new(len: u64, label: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix:>18} [{bar:32}] {pos}/{len} {msg} ({elapsed}, eta {eta})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label.to_string());
        let bar = if std::io::stdout().is_terminal() {
            bars().add(bar)
        } else {
            bar
        };
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
        bars().remove(&self.bar);
    }
}
