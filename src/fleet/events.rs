//! A deployment's `events` as written and checked: a scale or a restart
//! at a time, or an outage of the store or a replica between two times.

use super::deployment::{err, FieldError, MAX_REPLICAS};
use super::run::{Event, EventKind};
use crate::clock::{Nanos, SECOND};
use crate::scenario::Scenario;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// One `events` entry as written: `{at_s, scale_to | restart}` or
/// `{from_s, to_s, down}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventEntry {
    /// When a scale or restart happens, s.
    pub at_s: Option<f64>,
    /// The replica count from then on.
    pub scale_to: Option<u64>,
    /// The replica that loses its state.
    pub restart: Option<u64>,
    /// An outage's start, s.
    pub from_s: Option<f64>,
    /// An outage's end, s.
    pub to_s: Option<f64>,
    /// What is down: the store or a replica.
    pub down: Option<Down>,
}

/// What an outage takes down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Down {
    /// `"store"`.
    Store,
    /// A replica index.
    Replica(u64),
}

impl<'de> Deserialize<'de> for Down {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Down;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"store\" or a replica index")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Down, E> {
                if v == "store" {
                    Ok(Down::Store)
                } else {
                    Err(E::custom(format!(
                        "value {v:?}: expected \"store\" or a replica index"
                    )))
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Down, E> {
                Ok(Down::Replica(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// The largest `scale_to` of the events (0 when none).
pub(crate) fn scale_max(events: &[EventEntry]) -> u64 {
    events.iter().filter_map(|e| e.scale_to).max().unwrap_or(0)
}

/// The events checked; a replica index must be below `max_replicas`.
pub(crate) fn check(
    entries: &[EventEntry],
    max_replicas: u64,
) -> std::result::Result<Vec<Event>, FieldError> {
    let mut out = Vec::new();
    let secs = |x: f64| (x * SECOND as f64).round() as Nanos;
    let time = |f: &str, v: Option<f64>, missing: &str| -> std::result::Result<f64, FieldError> {
        match v {
            None => Err(err(f, missing.to_string())),
            Some(x) if x.is_finite() && (0.0..=1e9).contains(&x) => Ok(x),
            Some(x) => Err(err(
                f,
                format!(
                    "value {}: expected a number in 0..=1e9",
                    crate::units::shown(x)
                ),
            )),
        }
    };
    let replica = |f: String, r: u64| {
        if r < max_replicas {
            Ok(r as usize)
        } else {
            Err(err(
                f,
                format!("value {r}: expected a replica index below {max_replicas}"),
            ))
        }
    };
    for (i, e) in entries.iter().enumerate() {
        let f = format!("deployment.events[{i}]");
        if let Some(d) = e.down {
            if e.at_s.is_some() || e.scale_to.is_some() || e.restart.is_some() {
                return Err(err(
                    &f,
                    "expected {at_s, scale_to | restart} or {from_s, to_s, down}, not both",
                ));
            }
            let missing = "missing: an outage needs from_s and to_s";
            let from = time(&format!("{f}.from_s"), e.from_s, missing)?;
            let to = time(&format!("{f}.to_s"), e.to_s, missing)?;
            if to <= from {
                return Err(err(
                    format!("{f}.to_s"),
                    format!("value {to}: expected more than from_s ({from})"),
                ));
            }
            let (a, b) = match d {
                Down::Store => (EventKind::StoreDown(true), EventKind::StoreDown(false)),
                Down::Replica(r) => {
                    let r = replica(format!("{f}.down"), r)?;
                    (
                        EventKind::ReplicaDown(r, true),
                        EventKind::ReplicaDown(r, false),
                    )
                }
            };
            out.push(Event {
                at: secs(from),
                kind: a,
            });
            out.push(Event {
                at: secs(to),
                kind: b,
            });
            continue;
        }
        let at = time(
            &format!("{f}.at_s"),
            e.at_s,
            "missing: expected at_s with scale_to or restart, or from_s/to_s with down",
        )?;
        let kind = match (e.scale_to, e.restart) {
            (Some(n), None) if (1..=MAX_REPLICAS).contains(&n) => EventKind::ScaleTo(n as usize),
            (Some(n), None) => {
                return Err(err(
                    format!("{f}.scale_to"),
                    format!("value {n}: expected 1..={MAX_REPLICAS}"),
                ))
            }
            (None, Some(r)) => EventKind::Restart(replica(format!("{f}.restart"), r)?),
            _ => return Err(err(&f, "expected exactly one of scale_to and restart")),
        };
        out.push(Event { at: secs(at), kind });
    }
    Ok(out)
}

/// Refuses events that would do nothing or contradict each other, checked
/// against every fleet of the grid (`replicas`, the counts it starts
/// with) as the fleet replays them (in time order, ties in the order
/// written): a `scale_to` to the count every fleet already has then, two
/// scale events at one instant (the first would be undone at once), a
/// `restart` or `down` of a replica a fleet does not have then (the fleet
/// skips it without a word), and two outages of the same target that
/// overlap or touch (the first one's end would bring back what the second
/// takes down). Call after [`check`].
pub(crate) fn check_timeline(
    entries: &[EventEntry],
    replicas: &[usize],
) -> std::result::Result<(), FieldError> {
    let f = |i: usize, k: &str| format!("deployment.events[{i}].{k}");
    let start = |e: &EventEntry| e.at_s.or(e.from_s).unwrap_or(0.0);
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| start(&entries[a]).total_cmp(&start(&entries[b])));
    // Two scale events at one instant.
    let mut scales = order.iter().filter(|&&i| entries[i].scale_to.is_some());
    if let Some(mut prev) = scales.next().copied() {
        for &i in scales {
            if start(&entries[i]) == start(&entries[prev]) {
                let (a, b) = (prev.min(i), prev.max(i));
                return Err(err(
                    f(b, "at_s"),
                    format!(
                        "value {}: events[{a}] scales the fleet at the same instant: expected one scale_to a time",
                        seconds_text(start(&entries[b]))
                    ),
                ));
            }
            prev = i;
        }
    }
    // Every fleet replays the events; a scale that changes no fleet's count
    // is refused, and so is an index beyond a fleet's count at that time.
    let mut changes = vec![false; entries.len()];
    for &n in replicas {
        let mut cur = n as u64;
        for &i in &order {
            let e = &entries[i];
            let index = match (e.restart, e.down) {
                (Some(r), _) => Some(("restart", r)),
                (None, Some(Down::Replica(r))) => Some(("down", r)),
                _ => None,
            };
            if let Some((k, r)) = index
                && r >= cur
            {
                return Err(err(
                    f(i, k),
                    format!(
                        "value {r}: the fleet of {n} replicas has {cur} at {} s: expected a replica index below {cur}",
                        seconds_text(start(e))
                    ),
                ));
            }
            if let Some(m) = e.scale_to {
                changes[i] |= m != cur;
                cur = m;
            }
        }
    }
    if let Some(i) = (0..entries.len()).find(|&i| entries[i].scale_to.is_some() && !changes[i]) {
        let m = entries[i].scale_to.unwrap_or(0);
        return Err(err(
            f(i, "scale_to"),
            format!(
                "value {m}: every fleet already has {m} replicas at {} s: expected a different count",
                seconds_text(start(&entries[i]))
            ),
        ));
    }
    // Outages of one target: no overlap, no touching.
    let outages: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| entries[i].down.is_some())
        .collect();
    for (x, &i) in outages.iter().enumerate() {
        for &j in &outages[..x] {
            let (a, b) = (&entries[j], &entries[i]);
            if a.down == b.down && b.from_s.unwrap_or(0.0) <= a.to_s.unwrap_or(0.0) {
                return Err(err(
                    f(i, "from_s"),
                    format!(
                        "value {}: events[{j}] takes the same target down until {} s: expected outages of one target apart (write one outage)",
                        seconds_text(b.from_s.unwrap_or(0.0)),
                        seconds_text(a.to_s.unwrap_or(0.0))
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Refuses a deployment event that starts after the run's end (`end_s`
/// seconds): it would never happen, and its row of the converge table
/// would read "none" as if the fleet had not converged; and an outage that
/// ends after it (its end, and the convergence after it, never come).
/// Names the event's field.
pub fn check_event_times(
    scenario: &Scenario,
    events: &[EventEntry],
    end_s: f64,
) -> crate::error::Result<()> {
    for (i, e) in events.iter().enumerate() {
        for (k, t) in [("at_s", e.at_s), ("from_s", e.from_s), ("to_s", e.to_s)] {
            if let Some(t) = t
                && t > end_s
            {
                return Err(scenario.field_error(
                    format!("deployment.events[{i}].{k}"),
                    format!(
                        "value {}: after the run's end ({end_s} s): expected a time within the run",
                        seconds_text(t)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A time in seconds as a message shows it: huge values in exponent form.
///
/// # Examples
///
/// ```
/// use ratelab::fleet::seconds_text;
/// assert_eq!(seconds_text(60.0), "60");
/// assert_eq!(seconds_text(1e300), "1e300");
/// ```
pub fn seconds_text(t: f64) -> String {
    if t.abs() >= 1e15 {
        format!("{t:e}")
    } else {
        format!("{t}")
    }
}
