//! Accuracy guard: compare a freshly generated `report.json` with its
//! committed baseline and with the thresholds a scenario declares.
//!
//! The comparison walks any JSON shape generically:
//!
//! * objects by key (top-level `ratelab_version` and `description` are ignored);
//! * arrays of objects by a **key**: the first non-float scalar
//!   fields (strings, integers, booleans; fields that vary across elements)
//!   that together tell the baseline's elements apart, e.g. `rows[hashes=4,slots=8192]`.
//!   Arrays without such a key (scalars, or elements that do not differ) are
//!   compared by index, `values[1]`;
//! * leaves: integers, strings, booleans and null must be equal; floats may
//!   differ by a relative 1e-9 (reports are deterministic, so this only
//!   absorbs printing). A scenario may loosen this per field (`tolerance`).
//!
//! Paths in `expect` and `tolerance` use the same syntax as the printed
//! paths, plus wildcards:
//!
//! ```text
//! rows[hashes=4,slots=8192].exact_pct   element(s) whose fields equal these values
//! rows[2].mean                          element by index
//! rows[*].max   rows.*.max              any element (or, for `*`, any object key)
//! ```
//!
//! A selector needs not name every key field: `rows[hashes=4]` selects every
//! element with `hashes` 4. A tolerance pattern that matches a prefix of a path
//! applies to everything below it (`"rows[hashes=1]": "10%"`).
//!
//! Conditions (`expect` values): `">= 70"`, `"<= 250"`, `"< 1"`, `"> 0"`,
//! `"== 0"`, `"!= 0"`, `"== some text"`, `"~ 100 ± 5"` or `"~100+-5%"`
//! (absolute or relative band), or a bare JSON number/boolean/null for
//! equality. Every value the path selects must satisfy it, and it must select
//! at least one.
//!
//! Tolerances (`tolerance` values): a number is relative (`0.05` = 5%),
//! `"5%"` likewise, `"±3"` or `"+-3"` absolute, `"ignore"` skips the field. A
//! value passes if it is within any tolerance whose pattern matches it.

//!
//! ## Modules
//!
//! * `path`: path patterns, concrete paths and array keys;
//! * `criteria`: a scenario's `expect` and `tolerance`, parsed;
//! * `diff`: the baseline diff within tolerances;
//! * `expect`: the expectations on the new report;
//! * `findings`: verdicts, findings and the table they are printed in;
//! * [`baseline`]: reading and validating committed reports;
//! * [`run`](mod@run): a whole check, from the scenario names to its outcome;
//! * `determinism`: the single-threaded rerun of `run --check-determinism`.

pub mod baseline;
pub(crate) mod ci;
pub(crate) mod criteria;
pub(crate) mod determinism;
pub(crate) mod diff;
mod error;
pub(crate) mod expect;
pub(crate) mod findings;
pub(crate) mod path;
pub(crate) mod rules;
pub mod run;
mod values;

pub use baseline::{baseline_path, orphans, read_report, validate_report};
pub use criteria::Spec;
pub use diff::{compare, compare_reseeded, Tol};
pub use error::{PathError, RuleError, SpecError};
pub use expect::{evaluate, Expectation};
pub use findings::{render_table, show, Finding, Verdict};
pub use path::Pattern;
pub use run::{run, CheckOptions, CheckOutcome, ScenarioResult};

/// Relative tolerance for floats when the scenario declares none.
pub const DEFAULT_REL_TOL: f64 = 1e-9;

/// Top-level report fields never compared.
pub const IGNORED_FIELDS: [&str; 2] = ["ratelab_version", "description"];

#[cfg(test)]
mod tests;
