//! Quantities a user writes on the command line or in a scenario: memory
//! sizes (`512MiB`) and work budgets (`3e10`). Below the CLI, so a
//! scenario kind parses them the same way a flag does.

/// A size or work budget that does not parse; the text is the value as
/// given. Bad input (exit 2): the flag or field is the caller's to add.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a number with an optional unit.
    #[error("{0:?}: expected a size like 1GiB, 512MiB or 4096")]
    NotASize(String),
    /// A unit other than B, KiB, MiB, GiB, TiB.
    #[error("{text:?}: unknown unit {unit:?} (use B, KiB, MiB, GiB, TiB)")]
    UnknownUnit {
        /// The value.
        text: String,
        /// Its unit.
        unit: String,
    },
    /// More bytes than a u64 holds.
    #[error("{0:?}: too large")]
    TooLarge(String),
    /// Not a number of steps >= 1.
    #[error("{0:?}: expected a number of steps >= 1, like 1e10")]
    NotAWorkBudget(String),
}

impl From<UnitError> for crate::error::Error {
    /// Bad input (exit 2).
    fn from(e: UnitError) -> Self {
        crate::error::Error::input(e.to_string())
    }
}

/// Parses sizes such as `1GiB`, `512MiB`, `64KiB`, `1000` (bytes).
pub fn parse_size(s: &str) -> std::result::Result<u64, UnitError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| UnitError::NotASize(s.to_string()))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "k" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        "TiB" | "T" => 1 << 40,
        u => {
            return Err(UnitError::UnknownUnit {
                text: s.to_string(),
                unit: u.to_string(),
            })
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| UnitError::TooLarge(s.to_string()))
}

/// Parses `--max-work`: a positive number of steps such as 1e10 or 250000000.
pub fn parse_work(s: &str) -> std::result::Result<f64, UnitError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 1.0 => Ok(v),
        _ => Err(UnitError::NotAWorkBudget(s.to_string())),
    }
}

/// A number as a message shows it: as written for everyday magnitudes,
/// in exponent form when it would take more than 16 digits (`1e300`, not
/// three hundred of them; `1e-300`, not three hundred zeros).
pub(crate) fn shown(v: f64) -> String {
    if v.is_finite() && (v.abs() >= 1e16 || (v != 0.0 && v.abs() < 1e-6)) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}
