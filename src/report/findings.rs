//! Findings: what a report shows, as sentences with numbers, written from
//! its `report.json` by rules per report kind. They open `table.md`, follow
//! the table in the terminal and lead each section of the review page.
//!
//! The rules say what a trade-off is rather than naming one end of it as
//! the winner: when no candidate is best on both harms (compliant requests
//! denied, and limited requests let through beyond the policy) the
//! sentence names the best on each and what it costs on the other; when a
//! swept parameter (`burst=25` … `burst=400`) moves a harm, the sentence
//! gives the range it moves over.

use crate::report::fmt::bytes_human;
use crate::report::jobs::{self, candidates, Cand};
use serde_json::Value;

/// The findings of a report (possibly none).
///
/// # Examples
///
/// ```
/// use ratelab::report::findings::findings;
/// let json = serde_json::json!({"kind": "decision_accuracy", "rows": [
///     {"algorithm": "a burst=10", "family": "a", "memory_bytes": 64,
///      "harm": {"compliant_denied": 0, "compliant_denied_pct": 0.0,
///               "limited_excess_pct": 1.0, "worst_window_ratio": 1.1}},
///     {"algorithm": "a burst=20", "family": "a", "memory_bytes": 64,
///      "harm": {"compliant_denied": 0, "compliant_denied_pct": 0.0,
///               "limited_excess_pct": 2.0, "worst_window_ratio": 1.2}},
///     {"algorithm": "a burst=40", "family": "a", "memory_bytes": 64,
///      "harm": {"compliant_denied": 0, "compliant_denied_pct": 0.0,
///               "limited_excess_pct": 4.0, "worst_window_ratio": 1.4}}]});
/// let f = findings(&json);
/// assert!(f[0].contains("from +1.00% to +4.00% as burst grows from 10 to 40"), "{f:?}");
/// ```
pub fn findings(json: &Value) -> Vec<String> {
    let kind = json.get("kind").and_then(Value::as_str).unwrap_or("");
    // A `size` scenario of a rate-limit sizing reads as one (the page does too).
    let limit = json.pointer("/size/schema").and_then(Value::as_str)
        == Some(crate::report::LIMIT_SIZE_SCHEMA);
    let kind = if kind == "size" && limit {
        "size_limit"
    } else {
        kind
    };
    let out = match kind {
        "decision_accuracy" => decision(json),
        "estimator_accuracy" => estimator(json),
        _ => Vec::new(),
    };
    if !out.is_empty() {
        return out;
    }
    let f = jobs::finding(kind, json);
    // The whole first sentence (the summary line cuts it short).
    let verdict = if f.verdict.ends_with('\u{2026}') {
        ["look_at", "description"]
            .iter()
            .filter_map(|k| json.get(*k).and_then(Value::as_str))
            .find(|s| !s.trim().is_empty())
            .map_or(f.verdict.clone(), |t| jobs::first_sentence(t, 600))
    } else {
        f.verdict.clone()
    };
    let mut s = verdict.trim_end_matches('.').to_string();
    if s.is_empty() {
        return Vec::new();
    }
    // A sentence: its first letter capital.
    if let Some(c) = s.chars().next() {
        s = c.to_uppercase().chain(s.chars().skip(1)).collect();
    }
    s.push('.');
    let mut out = vec![s];
    // The kind's key number, as a sentence of its own.
    if !f.key.is_empty() {
        let k: String = f
            .key
            .chars()
            .next()
            .into_iter()
            .flat_map(char::to_uppercase)
            .chain(f.key.chars().skip(1))
            .collect();
        out.push(format!("{}.", k.trim_end_matches('.')));
    }
    out
}

/// Adds a finished report's findings: first in `table.md`, after the
/// table in the terminal (a run and a merge of shards alike).
pub fn finish(out: &mut crate::report::Output) {
    let found = findings(&out.json);
    out.table_md = insert_markdown(&out.table_md, &found);
    let said = console(&found);
    for text in [&mut out.console, &mut out.console_wide] {
        if !text.is_empty() && !said.is_empty() {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&said);
        }
    }
}

/// `findings` as a Markdown list under a heading (empty: none).
pub fn markdown(findings: &[String]) -> String {
    if findings.is_empty() {
        return String::new();
    }
    let mut s = String::from("**Findings.**\n\n");
    for f in findings {
        s.push_str("- ");
        s.push_str(f);
        s.push('\n');
    }
    s.push('\n');
    s
}

/// `findings` for the terminal (empty: none).
pub fn console(findings: &[String]) -> String {
    let mut s = String::new();
    if findings.is_empty() {
        return s;
    }
    s.push_str("Findings:\n");
    for f in findings {
        // Wrapped at a word within the terminal's 120 columns.
        let mut line = String::from("  -");
        for w in f.split_whitespace() {
            if line.chars().count() + 1 + w.chars().count() > CONSOLE_WIDTH && line.trim() != "-" {
                s.push_str(&line);
                s.push('\n');
                line = String::from("   ");
            }
            line.push(' ');
            line.push_str(w);
        }
        s.push_str(&line);
        s.push('\n');
    }
    s
}

/// The terminal's width for findings (columns).
const CONSOLE_WIDTH: usize = 118;

/// The items of `items` with the least and the most `key` (the first of
/// equal least, the last of equal most, as `min_by` and `max_by` pick
/// them); `None` when there are none.
fn extremes<T>(items: &[T], key: impl Fn(&T) -> f64) -> Option<(&T, &T)> {
    let lo = items.iter().min_by(|a, b| key(a).total_cmp(&key(b)))?;
    let hi = items.iter().max_by(|a, b| key(a).total_cmp(&key(b)))?;
    Some((lo, hi))
}

/// Inserts the findings under the report's first heading (`# name`).
pub fn insert_markdown(table_md: &str, findings: &[String]) -> String {
    let md = markdown(findings);
    if md.is_empty() {
        return table_md.to_string();
    }
    match table_md.find("\n\n") {
        Some(i) if table_md.starts_with("# ") => {
            format!("{}\n\n{md}{}", &table_md[..i], &table_md[i + 2..])
        }
        _ => format!("{md}{table_md}"),
    }
}

/// A percentage with a sign, to the digits that matter.
fn signed(v: f64) -> String {
    let s = pct(v.abs());
    if v > 0.0 {
        format!("+{s}")
    } else if v < 0.0 {
        format!("\u{2212}{s}")
    } else {
        s
    }
}

/// A percentage to the digits that matter: 0%, 0.0189%, 1.20%, 19.9%.
fn pct(v: f64) -> String {
    if v == 0.0 {
        "0%".into()
    } else if v.abs() >= 10.0 {
        format!("{v:.1}%")
    } else if v.abs() >= 0.1 {
        format!("{v:.2}%")
    } else {
        // three significant digits
        let digits = (2 - libm::floor(libm::log10(v.abs())) as i32).clamp(0, 9) as usize;
        format!("{v:.digits$}%")
    }
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

/// A numeric `param=value` in a candidate's name, with the name without it.
fn params(name: &str) -> Vec<(String, f64, String)> {
    let words: Vec<&str> = name.split_whitespace().collect();
    words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            let (k, val) = w.split_once('=')?;
            let x: f64 = val.parse().ok()?;
            let rest: Vec<&str> = words
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, w)| *w)
                .collect();
            Some((k.to_string(), x, rest.join(" ")))
        })
        .collect()
}

/// A swept parameter, the rest of the names, (value, candidate) by value.
type Sweep = (String, String, Vec<(f64, usize)>);

/// A sweep: candidates equal but for one numeric parameter (3 or more
/// values), sorted by it. Returns (parameter, the rest of the name, the
/// candidates' indices by value).
fn sweeps(c: &[Cand]) -> Vec<Sweep> {
    let mut out: Vec<Sweep> = Vec::new();
    for (i, cand) in c.iter().enumerate() {
        for (k, x, rest) in params(&cand.name) {
            match out.iter_mut().find(|s| s.0 == k && s.1 == rest) {
                Some(s) => s.2.push((x, i)),
                None => out.push((k, rest, vec![(x, i)])),
            }
        }
    }
    out.retain(|s| s.2.len() >= 3);
    for s in &mut out {
        s.2.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn value(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [a] => (*a).to_string(),
        [a, b] => format!("{a} and {b}"),
        _ => format!(
            "{} and {}",
            names[..names.len() - 1].join(", "),
            names[names.len() - 1]
        ),
    }
}

/// The decision lab (single limiters and fleets).
pub(crate) fn decision(v: &Value) -> Vec<String> {
    let c = candidates(v);
    if c.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Sweeps: how a harm moves with a swept parameter, families with the
    // same movement said once.
    let mut said: Vec<usize> = Vec::new();
    let sw = sweeps(&c);
    type Group = (String, Vec<f64>, Vec<String>, Vec<f64>, Vec<f64>, Vec<f64>);
    let mut groups: Vec<Group> = Vec::new();
    for (k, rest, pts) in &sw {
        let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
        let ex: Vec<f64> = pts.iter().map(|p| c[p.1].excess_pct).collect();
        let de: Vec<f64> = pts.iter().map(|p| c[p.1].denied_pct).collect();
        // What the parameter buys: a fleet's store operations, else its
        // messages between replicas.
        let ops_of = |f: fn(&Cand) -> Option<f64>| -> Vec<f64> {
            pts.iter().filter_map(|p| f(&c[p.1])).collect()
        };
        let store = ops_of(|x| x.store_ops_s);
        let ops = if store.first() != store.last() {
            store
        } else {
            ops_of(|x| x.msgs_s)
        };
        said.extend(pts.iter().map(|p| p.1));
        match groups
            .iter_mut()
            .find(|g| &g.0 == k && g.1 == xs && g.3 == ex && g.4 == de && g.5 == ops)
        {
            Some(g) => g.2.push(rest.clone()),
            None => groups.push((k.clone(), xs, vec![rest.clone()], ex, de, ops)),
        }
    }
    for (k, xs, who, ex, de, ops) in &groups {
        let (x0, x1) = (xs[0], xs[xs.len() - 1]);
        let who = list(&who.iter().map(String::as_str).collect::<Vec<_>>());
        let (e0, e1) = (ex[0], ex[ex.len() - 1]);
        let moves = if (e1 - e0).abs() < 0.005 {
            format!("stays at {}", signed(e0))
        } else {
            format!(
                "{} from {} to {}",
                if e1 > e0 { "grows" } else { "falls" },
                signed(e0),
                signed(e1)
            )
        };
        let mut s = format!(
            "{who}: the limited keys' excess beyond the policy {moves} as {k} grows from {} to {}",
            value(x0),
            value(x1)
        );
        let (d0, d1) = (de[0], de[de.len() - 1]);
        let cost = match (ops.first(), ops.last()) {
            (Some(a), Some(b)) if ops.len() == xs.len() && (a - b).abs() >= 1.0 => Some(format!(
                "the fleet's store operations or messages go from {a:.0}/s to {b:.0}/s"
            )),
            _ => None,
        };
        if let (Some(cost), true) = (&cost, de.iter().all(|d| *d == 0.0)) {
            s.push_str(&format!(
                ", with no compliant request denied at any value, while {cost}: the trade-off is excess against that cost"
            ));
        } else if de.iter().all(|d| *d == 0.0) {
            // What the other end buys (room for compliant bursts, fewer
            // messages) does not show on this traffic: said, not judged.
            s.push_str(", with no compliant request denied at any value on this traffic");
        } else {
            s.push_str(&format!(
                ", while compliant requests denied go from {} to {}: the trade-off is between the two",
                pct(d0),
                pct(d1)
            ));
        }
        s.push('.');
        out.push(s);
    }
    // Compliant denied: who denies well-behaved clients, and how much.
    let deniers: Vec<&Cand> = c.iter().filter(|x| x.denied > 0.0).collect();
    if deniers.is_empty() {
        out.push(format!(
            "None of the {} candidates denies a compliant request.",
            c.len()
        ));
    } else if deniers.len() <= 3 {
        let names: Vec<String> = deniers
            .iter()
            .map(|d| format!("{} ({})", d.name, pct(d.denied_pct)))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        out.push(format!(
            "Only {} of {} candidates deny compliant requests: {}.",
            deniers.len(),
            c.len(),
            list(&names)
        ));
    } else {
        let worst = deniers
            .iter()
            .max_by(|a, b| a.denied_pct.total_cmp(&b.denied_pct))
            .map(|d| format!("{} ({})", d.name, pct(d.denied_pct)))
            .unwrap_or_default();
        out.push(format!(
            "{} of {} candidates deny compliant requests, most {worst}.",
            deniers.len(),
            c.len()
        ));
    }
    // The two harms against each other.
    let min_denied = c.iter().map(|x| x.denied).fold(f64::INFINITY, f64::min);
    let near = |x: &Cand| x.excess_pct.abs();
    // Nearest the policy; among equals, the one denying fewest.
    let best_excess = c
        .iter()
        .min_by(|a, b| {
            near(a)
                .total_cmp(&near(b))
                .then(a.denied.total_cmp(&b.denied))
        })
        .expect("not empty");
    let fewest: Vec<&Cand> = c.iter().filter(|x| x.denied == min_denied).collect();
    let best_of_fewest = fewest
        .iter()
        .min_by(|a, b| near(a).total_cmp(&near(b)))
        .expect("not empty");
    let unswept = !said.contains(
        &c.iter()
            .position(|x| x.name == best_excess.name)
            .unwrap_or(0),
    );
    if best_excess.denied == min_denied {
        if unswept || groups.is_empty() {
            let memory = best_excess
                .memory
                .filter(|m| *m > 0)
                .map(|m| format!(", at {}", bytes_human(m)))
                .unwrap_or_default();
            out.push(format!(
                "{} is best on both harms: {} compliant denied and the excess nearest the policy ({}{memory}); the others let the limited keys through {} to {}.",
                best_excess.name,
                pct(best_excess.denied_pct),
                signed(best_excess.excess_pct),
                signed(c.iter().map(|x| x.excess_pct).fold(f64::INFINITY, f64::min)),
                signed(c.iter().map(|x| x.excess_pct).fold(f64::NEG_INFINITY, f64::max)),
            ));
        }
    } else {
        out.push(format!(
            "No candidate is best on both harms: {} denies the fewest compliant requests ({}) but lets the limited keys through {} beyond the policy; {} keeps the excess nearest the policy ({}) but denies {} of compliant requests.",
            best_of_fewest.name,
            pct(best_of_fewest.denied_pct),
            signed(best_of_fewest.excess_pct),
            best_excess.name,
            signed(best_excess.excess_pct),
            pct(best_excess.denied_pct),
        ));
    }
    // Burst leakage.
    let ww: Vec<f64> = c.iter().filter_map(|x| x.worst_window).collect();
    if ww.len() > 1 {
        let (lo, hi) = ww
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &w| {
                (a.min(w), b.max(w))
            });
        if hi > lo {
            out.push(format!(
                "The most admitted for one key in one interval ranges from {lo:.2}x to {hi:.2}x the limit."
            ));
        }
    }
    // A fleet's cost.
    let ops: Vec<(&Cand, f64)> = c
        .iter()
        .filter_map(|x| x.store_ops_s.map(|o| (x, o)))
        .collect();
    if !ops.is_empty() {
        let (lo, hi) = extremes(&ops, |o| o.1).expect("not empty");
        let lat: Vec<f64> = c.iter().filter_map(|x| x.latency_ms).collect();
        let (l0, l1) = lat
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &w| {
                (a.min(w), b.max(w))
            });
        let mut s = if hi.1 > lo.1 {
            format!(
                "What the fleet costs: {:.0} store operations/s ({}) to {:.0} ({})",
                lo.1, lo.0.name, hi.1, hi.0.name
            )
        } else {
            format!(
                "What the fleet costs: {:.0} store operations/s for every candidate",
                lo.1
            )
        };
        if l1 > 0.0 {
            s.push_str(&format!(", {l0:.3}–{l1:.3} ms added per request"));
        }
        s.push('.');
        out.push(s);
    } else {
        let mem: Vec<(&Cand, u64)> = c.iter().filter_map(|x| x.memory.map(|m| (x, m))).collect();
        if let (Some(lo), Some(hi)) = (
            mem.iter().min_by_key(|m| m.1),
            mem.iter().max_by_key(|m| m.1),
        ) && hi.1 > lo.1
        {
            out.push(format!(
                "Memory ranges from {} ({}) to {} ({}).",
                bytes_human(lo.1),
                lo.0.name,
                bytes_human(hi.1),
                hi.0.name
            ));
        }
    }
    out
}

/// Count-min accuracy: how exact each shape is at its memory.
fn estimator(v: &Value) -> Vec<String> {
    let all = v
        .get("rows")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let variant = |r: &Value| {
        r.get("variant")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    // Several variants (count-min, conservative update): the name says which.
    let several = all
        .iter()
        .any(|r| variant(r) != all.first().map(variant).unwrap_or_default());
    let rows: Vec<(String, u64, f64, f64)> = all
        .iter()
        .filter_map(|r| {
            let shape = format!(
                "{}x{}",
                r.get("hashes")?.as_u64()?,
                r.get("slots")?.as_u64()?
            );
            Some((
                if several {
                    format!("{} {shape}", variant(r))
                } else {
                    shape
                },
                r.get("memory_bytes")?.as_u64()?,
                num(r, &["exact_pct"])?,
                num(r, &["mean"])?,
            ))
        })
        .collect();
    if rows.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let (lo, hi) = extremes(&rows, |r| r.2).expect("rows");
    out.push(format!(
        "Keys counted exactly range from {} ({}, {}) to {} ({}, {}).",
        pct(lo.2),
        lo.0,
        bytes_human(lo.1),
        pct(hi.2),
        hi.0,
        bytes_human(hi.1)
    ));
    let (mlo, mhi) = extremes(&rows, |r| r.3).expect("rows");
    out.push(format!(
        "The mean overcount ranges from {:.2} ({}) to {:.1} ({}).",
        mlo.3, mlo.0, mhi.3, mhi.0
    ));
    // At equal memory, which split is best.
    let mut mems: Vec<u64> = rows.iter().map(|r| r.1).collect();
    mems.sort_unstable();
    mems.dedup();
    for m in mems {
        let same: Vec<&(String, u64, f64, f64)> = rows.iter().filter(|r| r.1 == m).collect();
        if same.len() >= 2 {
            let (w, b) = extremes(&same, |r| r.2).expect("same");
            if b.2 > w.2 {
                out.push(format!(
                    "At {} the split matters: {} counts {} of keys exactly, {} only {}.",
                    bytes_human(m),
                    b.0,
                    pct(b.2),
                    w.0,
                    pct(w.2)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(name: &str, denied_pct: f64, excess: f64) -> Value {
        json!({"algorithm": name, "family": name.split(' ').next().unwrap(),
               "memory_bytes": 100,
               "harm": {"compliant_denied": if denied_pct > 0.0 { 5 } else { 0 },
                        "compliant_denied_pct": denied_pct,
                        "limited_excess_pct": excess, "worst_window_ratio": 1.5}})
    }

    /// A trade-off is said as one: neither end is called the winner.
    #[test]
    fn a_trade_off_names_both_ends_and_their_costs() {
        let v = json!({"kind": "decision_accuracy", "rows": [
            row("store failure=open", 0.0, 52.78),
            row("store failure=closed", 8.3, -9.18),
        ]});
        let f = findings(&v).join("\n");
        assert!(f.contains("No candidate is best on both harms"), "{f}");
        assert!(f.contains("failure=open denies the fewest compliant requests (0%) but lets the limited keys through +52.8%"), "{f}");
        assert!(f.contains("failure=closed keeps the excess nearest the policy (\u{2212}9.18%) but denies 8.30%"), "{f}");
        assert!(!f.contains("Least harm"), "{f}");
    }

    #[test]
    fn families_sweeping_alike_are_said_once() {
        let mut rows = Vec::new();
        for fam in ["x", "g"] {
            for (b, e) in [(25, 1.2), (100, 4.95), (400, 19.95)] {
                rows.push(row(&format!("{fam} per key burst={b}"), 0.0, e));
            }
        }
        rows.push(row("uber", 0.0189, 3.0));
        let f = findings(&json!({"kind": "decision_accuracy", "rows": rows}));
        assert!(f[0].starts_with("x per key and g per key: the limited keys' excess beyond the policy grows from +1.20% to +19.9% as burst grows from 25 to 400"), "{f:?}");
        assert!(
            f[0].contains("no compliant request denied at any value"),
            "{f:?}"
        );
        assert!(
            f[1].contains("Only 1 of 7 candidates deny compliant requests: uber (0.0189%)"),
            "{f:?}"
        );
    }

    #[test]
    fn every_kind_gets_a_sentence_and_numbers_read_right() {
        assert_eq!(pct(0.018_934), "0.0189%");
        assert_eq!(pct(19.95), "19.9%");
        assert_eq!(signed(-9.176), "\u{2212}9.18%");
        let v = json!({"kind": "a_kind_from_the_future", "look_at": "It goes up. Then down."});
        assert_eq!(findings(&v), vec!["It goes up.".to_string()]);
        let long = vec!["word ".repeat(60)];
        let text = console(&long);
        assert!(
            text.lines().count() > 2 && text.lines().all(|l| l.chars().count() <= 120),
            "{text}"
        );
        let md = insert_markdown("# s\n\nBody.\n", &findings(&v));
        assert_eq!(md, "# s\n\n**Findings.**\n\n- It goes up.\n\nBody.\n");
    }
}
