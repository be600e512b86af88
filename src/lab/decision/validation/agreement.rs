//! One candidate's agreement with the deployed limiter, classified
//! (clock step, follow-on, unexplained), and how the report shows it.

use super::*;
/// A disagreement as the report lists it.
#[derive(Debug, Clone)]
struct Disagreement {
    t: Nanos,
    line: u64,
    key: u32,
    model_admits: bool,
    class: &'static str,
    group: Option<u32>,
}

/// A tie group's decisions so far.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    seen: u32,
    model: u32,
    deployed: u32,
    step: bool,
    first: usize,
}

/// How many disagreements the report lists per candidate.
const FIRST: usize = 5;

/// One candidate's agreement with the deployed limiter.
#[derive(Debug, Clone, Default)]
pub(crate) struct Agreement {
    agree: u64,
    total: u64,
    /// [model admits, model denies] x [deployed admitted, deployed denied].
    confusion: [[u64; 2]; 2],
    clock_step: u64,
    follow_on: u64,
    unexplained: u64,
    /// The model answered [`crate::model::Admit::clock_step`].
    checked: bool,
    parted: Vec<bool>,
    pending: HashMap<u32, Pending>,
    first: Vec<Disagreement>,
}

impl Agreement {
    /// A candidate's tally; `checked`: it classifies clock steps.
    pub(crate) fn new(checked: bool) -> Self {
        Self {
            checked,
            ..Self::default()
        }
    }

    /// Event `i`'s decision by the model, and whether it sat at the model's
    /// clock granularity.
    pub(crate) fn record(&mut self, l: &Loaded, i: usize, model_admits: bool, step: bool) {
        let g = l.group[i];
        if g == NO_GROUP {
            self.judge(
                l,
                i,
                1,
                u32::from(model_admits),
                u32::from(l.admitted[i]),
                step,
                None,
            );
            return;
        }
        let p = self.pending.entry(g).or_insert(Pending {
            first: i,
            ..Pending::default()
        });
        p.seen += 1;
        p.model += u32::from(model_admits);
        p.deployed += u32::from(l.admitted[i]);
        p.step |= step;
        if p.seen == l.group_len[g as usize] {
            let p = *p;
            self.pending.remove(&g);
            self.judge(l, p.first, p.seen, p.model, p.deployed, p.step, Some(g));
        }
    }

    /// `n` requests (one, or a tie group starting at event `i`) of which
    /// the model admitted `model` and the deployed limiter `deployed`.
    #[allow(clippy::too_many_arguments)]
    fn judge(
        &mut self,
        l: &Loaded,
        i: usize,
        n: u32,
        model: u32,
        deployed: u32,
        step: bool,
        group: Option<u32>,
    ) {
        let (n, m, d) = (u64::from(n), u64::from(model), u64::from(deployed));
        self.total += n;
        self.confusion[0][0] += m.min(d);
        self.confusion[1][1] += (n - m).min(n - d);
        self.confusion[0][1] += m.saturating_sub(d);
        self.confusion[1][0] += d.saturating_sub(m);
        let wrong = m.abs_diff(d);
        self.agree += n - wrong;
        if wrong == 0 {
            return;
        }
        let key = l.events[i].1 as usize;
        if key >= self.parted.len() {
            self.parted.resize(key + 1, false);
        }
        let class = if step {
            self.clock_step += wrong;
            "clock step"
        } else if self.parted[key] {
            self.follow_on += wrong;
            "follow-on"
        } else {
            self.unexplained += wrong;
            "unexplained"
        };
        self.parted[key] = true;
        if self.first.len() < FIRST {
            self.first.push(Disagreement {
                t: l.events[i].0,
                line: l.lines[i],
                key: key as u32,
                model_admits: m > d,
                class,
                group,
            });
        }
    }

    /// Requests agreed with, of all.
    pub(crate) fn agree_pct(&self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            100.0 * self.agree as f64 / self.total as f64
        }
    }

    /// The candidate's entry of `validation` in report.json.
    pub(crate) fn json(&self, name: &str, l: &Loaded, t0: Nanos) -> Value {
        let first: Vec<Value> = self
            .first
            .iter()
            .map(|d| {
                json!({
                    "t_s": (d.t - t0) as f64 / SECOND as f64,
                    "t_ns": d.t,
                    "line": d.line,
                    "key": l.keys.name(d.key).unwrap_or_default(),
                    "model": if d.model_admits { "admits" } else { "denies" },
                    "deployed": if d.model_admits { "denied" } else { "admitted" },
                    "class": d.class,
                    "tie_group": d.group.map(|g| l.group_len[g as usize]),
                })
            })
            .collect();
        json!({
            "algorithm": name,
            "agree": self.agree,
            "total": self.total,
            "agree_pct": self.agree_pct(),
            "confusion": {
                "model_admits_deployed_admitted": self.confusion[0][0],
                "model_admits_deployed_denied": self.confusion[0][1],
                "model_denies_deployed_admitted": self.confusion[1][0],
                "model_denies_deployed_denied": self.confusion[1][1],
            },
            "disagree": self.total - self.agree,
            "clock_step": if self.checked { json!(self.clock_step) } else { Value::Null },
            "follow_on": self.follow_on,
            "unexplained": self.unexplained,
            "first_disagreements": first,
        })
    }

    /// The candidate's row of the validation table.
    pub(crate) fn cells(&self, name: &str, l: &Loaded, t0: Nanos) -> Vec<String> {
        let first = self
            .first
            .first()
            .map(|d| {
                format!(
                    "{:.3} s, line {}, key {} ({})",
                    (d.t - t0) as f64 / SECOND as f64,
                    d.line,
                    l.keys.name(d.key).unwrap_or_default(),
                    d.class
                )
            })
            .unwrap_or_else(|| "-".into());
        vec![
            name.to_string(),
            format!("{}/{}", self.agree, self.total),
            crate::report::fmt::pct_scaled(self.agree_pct()),
            self.confusion[0][0].to_string(),
            self.confusion[0][1].to_string(),
            self.confusion[1][0].to_string(),
            self.confusion[1][1].to_string(),
            if self.checked {
                self.clock_step.to_string()
            } else {
                "-".into()
            },
            self.follow_on.to_string(),
            self.unexplained.to_string(),
            first,
        ]
    }
}

/// The validation table's header.
pub(crate) const HEADER: [&str; 11] = [
    "algorithm",
    "agree",
    "agree %",
    "admits, deployed admitted",
    "admits, deployed denied",
    "denies, deployed admitted",
    "denies, deployed denied",
    "clock step",
    "follow-on",
    "unexplained",
    "first disagreement",
];

/// What the report says about the validated log (`validation_source` in
/// report.json).
pub(crate) fn source_json(l: &Loaded) -> Value {
    let denied = l.events.len() as u64 - l.admitted.iter().filter(|&&a| a).count() as u64;
    json!({
        "outcome": l.field,
        "values": l.kind.map(OutcomeKind::describe),
        "deployed_denied": denied,
        "time_is": if l.duration.is_some() { "end" } else { "start" },
        "duration": l.duration,
        "tie_groups": l.group_len.len(),
        "tie_requests": l.tie_requests(),
        "compared": if l.duration.is_some() {
            "request by request in arrival order; requests of one key with equal arrivals (the log, written at completion, cannot order them) as a group, by how many it admitted"
        } else {
            "request by request in log order"
        },
    })
}

/// The paragraph table.md gives before the validation table.
pub(crate) fn markdown_intro(l: &Loaded) -> String {
    let denied = l.events.len() - l.admitted.iter().filter(|&&a| a).count();
    let mut s = format!(
        "## Agreement with the deployed limiter\n\nThe log's field `{}` ({}) says what the limiter in production answered: it denied {} of {} requests. Each candidate's decision is compared with it: `agree` = requests decided the same way; the four counts are the model's decision (admits/denies) against the deployed one. A disagreement is a `clock step` when the model's decision sits at its own clock granularity (nginx: the excess within one millisecond's leak of the burst; nginx reads CLOCK_MONOTONIC in whole ms, out of phase with the wall-clock `$msec` it logs), a `follow-on` when an earlier request of the same key disagreed, else `unexplained`; `-`: the model has no clock-step check.\n\n",
        l.field,
        l.kind.map_or("every value -", OutcomeKind::describe),
        denied,
        l.events.len(),
    );
    match &l.duration {
        Some(d) => s.push_str(&format!(
            "Arrival = time − `{d}`: the log was written as requests completed, sorted here by arrival. {} {} of one key with equal arrivals ({} requests) cannot be ordered from the log: each is compared by how many it admitted (never ordered by the outcome being validated).\n\n",
            l.group_len.len(),
            crate::report::fmt::noun(l.group_len.len() as u64, "group", "groups"),
            l.tie_requests(),
        )),
        None => s.push_str("The log is in processing order: compared request by request in log order.\n\n"),
    }
    s
}

/// The line `run` prints: the candidate agreeing best with the deployed
/// limiter (the first such in table order), and the unexplained
/// disagreements over all candidates.
pub(crate) fn console_line(
    l: &Loaded,
    cands: &[crate::lab::decision::Candidate],
    agreements: &[Agreement],
    more: &str,
) -> String {
    let mut best: Option<(&crate::lab::decision::Candidate, &Agreement)> = None;
    for (c, a) in cands.iter().zip(agreements) {
        if best.is_none_or(|(_, b)| a.agree > b.agree) {
            best = Some((c, a));
        }
    }
    let Some((c, a)) = best else {
        return String::new();
    };
    format!(
        "deployed limiter ({}): best agreement {} {}/{} ({}; {} clock step, {} follow-on, {} unexplained){more}\n",
        l.field,
        c.name,
        a.agree,
        a.total,
        crate::report::fmt::pct_scaled(a.agree_pct()),
        if a.checked { a.clock_step.to_string() } else { "-".into() },
        a.follow_on,
        a.unexplained,
    )
}
