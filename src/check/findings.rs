//! The results of a check: one finding per compared value or expectation,
//! and the table they are printed in.

use serde_json::Value;
use std::fmt;

/// The outcome of one compared value or expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// An expectation that does not hold.
    Fail,
    /// Worse than the baseline (significantly, for values with a
    /// distribution), or a value without a direction that differs.
    Regressed,
    /// In the baseline, not in the new report.
    Missing,
    /// In the new report, not in the baseline.
    New,
    /// Better than the baseline.
    Improved,
    /// A configuration value differs, or a single-run value after the seed
    /// or run count changed (not comparable).
    Changed,
    /// Differs, but not significantly (or below the minimum effect).
    WithinNoise,
    /// Differs, within a tolerance the scenario declares.
    Within,
    /// Not compared (tolerance "ignore").
    Ignored,
    /// An expectation that holds.
    Holds,
    /// Identical to the baseline.
    Equal,
}

impl Verdict {
    /// Whether this fails a default check.
    pub fn failed(self) -> bool {
        matches!(
            self,
            Verdict::Fail | Verdict::Regressed | Verdict::Missing | Verdict::New
        )
    }

    /// Whether this fails a check with `--strict` (any difference).
    pub fn failed_strict(self) -> bool {
        self.failed()
            || matches!(
                self,
                Verdict::Improved | Verdict::Changed | Verdict::WithinNoise
            )
    }

    /// Whether this fails, given `--strict`.
    pub fn fails(self, strict: bool) -> bool {
        if strict {
            self.failed_strict()
        } else {
            self.failed()
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Equal => "ok",
            Verdict::Within => "ok (within)",
            Verdict::WithinNoise => "within noise",
            Verdict::Ignored => "ignored",
            Verdict::Holds => "ok",
            Verdict::Fail => "FAIL (expectation)",
            Verdict::Regressed => "regressed",
            Verdict::Missing => "regressed (missing now)",
            Verdict::New => "regressed (not in baseline)",
            Verdict::Improved => "improved",
            Verdict::Changed => "changed",
        })
    }
}

/// One line of the diff table.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Field path.
    pub path: String,
    /// Baseline value (empty when none).
    pub baseline: String,
    /// New value (empty when none).
    pub now: String,
    /// The tolerance or condition applied.
    pub rule: String,
    /// The outcome.
    pub verdict: Verdict,
}

/// A value as shown in the table (long values cut).
pub fn show(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > 48 {
        let cut: String = s.chars().take(45).collect();
        format!("{cut}...")
    } else {
        s
    }
}

/// The diff table: left-aligned columns.
pub fn render_table(rows: &[(String, Finding)]) -> String {
    let header = [
        "scenario",
        "field",
        "baseline",
        "now",
        "tolerance",
        "verdict",
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|(s, f)| {
            [
                s.clone(),
                f.path.clone(),
                f.baseline.clone(),
                f.now.clone(),
                f.rule.clone(),
                f.verdict.to_string(),
            ]
        })
        .collect();
    let mut width = header.map(|h| h.chars().count());
    for r in &cells {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |r: &[String]| {
        let parts: Vec<String> = r
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(&header.map(String::from));
    out.push_str(&line(&width.map(|w| "-".repeat(w))));
    for r in &cells {
        out.push_str(&line(r));
    }
    out
}
