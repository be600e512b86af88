//! Checking a timed workload's parameters before anything is drawn: each
//! shape lists its rules in the order they are checked, and one runner turns
//! the first broken rule into an error naming the field.

use super::arrivals::{TimedWorkload, MAX_TIMED_EVENTS};
use super::KeyChoice;
use crate::error::{Error, Result};
use crate::units::shown;
use crate::workload::counts::MAX_KEYS;
use std::path::Path;

/// One check of one parameter, named by its field below the workload's.
enum Rule<'a> {
    /// The key distribution: `1..=MAX_KEYS` keys, a Zipf exponent finite
    /// and `>= 0`.
    Keys(&'a KeyChoice),
    /// A finite number `> 0`.
    Positive(&'static str, f64),
    /// A finite number `>= 0`.
    NonNegative(&'static str, f64),
    /// A key count in `1..=MAX_KEYS`.
    KeyCount(&'static str, u64),
    /// A condition that must hold, with the message when it does not.
    Holds(bool, &'static str, String),
    /// At most [`MAX_TIMED_EVENTS`] at this rate (per s) for this long (s),
    /// and a length that fits in nanoseconds.
    Volume(f64, f64),
}

impl TimedWorkload {
    /// Checks every parameter; `field` names this workload in the scenario.
    pub fn validate(&self, file: &Path, field: &str) -> Result<()> {
        let bad = |sub: &str, msg: String| {
            Err(Error::input_at(file, format!("field {field}.{sub}"), msg))
        };
        let TimedWorkload::Mix { parts } = self else {
            return self.rules().iter().try_for_each(|r| r.check(&bad));
        };
        if parts.is_empty() {
            return bad("parts", "empty: expected at least one workload".into());
        }
        for (i, p) in parts.iter().enumerate() {
            p.validate(file, &format!("{field}.parts[{i}]"))?;
        }
        if self.key_space() > MAX_KEYS {
            return bad(
                "parts",
                format!(
                    "{} keys in all: expected at most {}",
                    self.key_space(),
                    MAX_KEYS
                ),
            );
        }
        Ok(())
    }

    /// The rules of a shape that is not a mix, in the order they are checked.
    fn rules(&self) -> Vec<Rule<'_>> {
        use Rule::{Holds, KeyCount, Keys, NonNegative, Positive};
        let mut rules = match self {
            TimedWorkload::Poisson {
                keys,
                rate,
                duration_s,
            } => vec![
                Keys(keys),
                Positive("rate", *rate),
                Positive("duration_s", *duration_s),
            ],
            TimedWorkload::OnOff {
                keys,
                rate,
                mean_on_s,
                mean_off_s,
                duration_s,
            } => vec![
                Keys(keys),
                Positive("rate", *rate),
                Positive("mean_on_s", *mean_on_s),
                Positive("mean_off_s", *mean_off_s),
                Positive("duration_s", *duration_s),
            ],
            TimedWorkload::Mmpp {
                keys,
                rates,
                mean_dwell_s,
                duration_s,
            } => vec![
                Keys(keys),
                NonNegative("rates[0]", rates[0]),
                NonNegative("rates[1]", rates[1]),
                Holds(
                    rates[0] + rates[1] > 0.0,
                    "rates",
                    "both rates are 0: expected at least one > 0".into(),
                ),
                Positive("mean_dwell_s[0]", mean_dwell_s[0]),
                Positive("mean_dwell_s[1]", mean_dwell_s[1]),
                Positive("duration_s", *duration_s),
            ],
            TimedWorkload::Diurnal {
                keys,
                base_rate,
                peak_rate,
                period_s,
                duration_s,
            } => vec![
                Keys(keys),
                NonNegative("base_rate", *base_rate),
                Positive("peak_rate", *peak_rate),
                Holds(
                    base_rate <= peak_rate,
                    "base_rate",
                    format!(
                        "value {}: expected <= peak_rate {}",
                        shown(*base_rate),
                        shown(*peak_rate)
                    ),
                ),
                Positive("period_s", *period_s),
                Positive("duration_s", *duration_s),
            ],
            TimedWorkload::FlashCrowd {
                keys,
                rate,
                flash_rate,
                flash_start_s,
                flash_duration_s,
                duration_s,
            } => vec![
                Keys(keys),
                Positive("rate", *rate),
                Positive("flash_rate", *flash_rate),
                NonNegative("flash_start_s", *flash_start_s),
                Positive("flash_duration_s", *flash_duration_s),
                Positive("duration_s", *duration_s),
            ],
            TimedWorkload::CardinalityAttack {
                keys,
                rate,
                attack_keys,
                per_key,
                attack_rate,
                attack_start_s,
                duration_s,
            } => vec![
                Keys(keys),
                Positive("rate", *rate),
                KeyCount("attack_keys", *attack_keys),
                Holds(
                    *per_key != 0,
                    "per_key",
                    "value 0: expected at least 1".into(),
                ),
                Positive("attack_rate", *attack_rate),
                NonNegative("attack_start_s", *attack_start_s),
                Positive("duration_s", *duration_s),
            ],
            TimedWorkload::Mix { .. } => return Vec::new(),
        };
        let (rate, secs) = self.peak_rate_and_length();
        rules.push(Rule::Volume(rate, secs));
        rules
    }
}

impl Rule<'_> {
    /// `Ok` if the rule holds, else `bad(field, message)`.
    fn check(&self, bad: &impl Fn(&str, String) -> Result<()>) -> Result<()> {
        match *self {
            Rule::Keys(k) => {
                Rule::KeyCount("keys.keys", k.keys()).check(bad)?;
                match k {
                    KeyChoice::Zipf { s, .. }
                        if !(0.0..=crate::workload::counts::MAX_ZIPF_S).contains(s) =>
                    {
                        bad(
                            "keys.s",
                            format!(
                                "value {}: expected a finite exponent >= 0 and <= {}",
                                shown(*s),
                                crate::workload::counts::MAX_ZIPF_S
                            ),
                        )
                    }
                    _ => Ok(()),
                }
            }
            Rule::Positive(sub, v) if !v.is_finite() || v <= 0.0 => bad(
                sub,
                format!("value {}: expected a finite number > 0", shown(v)),
            ),
            Rule::NonNegative(sub, v) if !v.is_finite() || v < 0.0 => bad(
                sub,
                format!("value {}: expected a finite number >= 0", shown(v)),
            ),
            Rule::KeyCount(sub, n) if n == 0 || n > MAX_KEYS => {
                bad(sub, format!("value {n}: expected 1..={MAX_KEYS}"))
            }
            Rule::Holds(false, sub, ref msg) => bad(sub, msg.clone()),
            Rule::Volume(rate, secs) => {
                if rate * secs > MAX_TIMED_EVENTS {
                    return bad(
                        "rate",
                        format!(
                            "{}/s for {} s is more than {MAX_TIMED_EVENTS:e} events",
                            shown(rate),
                            shown(secs)
                        ),
                    );
                }
                if secs * 1e9 >= u64::MAX as f64 / 2.0 {
                    return bad(
                        "duration_s",
                        format!("value {}: too long for nanosecond time", shown(secs)),
                    );
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
