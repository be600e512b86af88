//! One agent's progress through its script: resuming it at a wake-up and
//! running it until it blocks again.

use super::record::{AgentRecord, StepRecord};
use super::script::{AgentScript, Step, World};
use crate::model::uber_ratelimit::Take;

/// Where an agent is inside its current step while asleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    /// Not inside a step (arriving, or between steps).
    Nothing,
    /// Sleeping out an inner `Wait`'s delay.
    WaitLeg,
    /// Sleeping inside `Take`.
    Take(Take),
    /// In a `Sleep` step.
    Sleep,
}

/// An agent's position in its script between events.
#[derive(Clone, Debug)]
pub(super) struct AgentState {
    step: usize,
    /// A Wait step has been set up (its start, leaves and deadline).
    in_step: bool,
    pending: Pending,
    started_ns: i64,
    leaves: Vec<usize>,
    leg: usize,
    deadline_ns: Option<i64>,
    legs_ns: Vec<i64>,
}

impl AgentState {
    /// An agent that has not arrived yet.
    pub(super) fn new() -> Self {
        Self {
            step: 0,
            in_step: false,
            pending: Pending::Nothing,
            started_ns: 0,
            leaves: Vec::new(),
            leg: 0,
            deadline_ns: None,
            legs_ns: Vec::new(),
        }
    }

    /// Closes the current step and moves to the next.
    fn finish(
        &mut self,
        record: &mut AgentRecord,
        now: i64,
        admitted_ns: Option<i64>,
        take: Option<Take>,
        error: Option<String>,
    ) {
        record.steps.push(StepRecord {
            started_ns: self.started_ns,
            admitted_ns,
            finished_ns: now,
            waited_ns: now.saturating_sub(self.started_ns),
            legs_ns: std::mem::take(&mut self.legs_ns),
            take,
            error,
        });
        self.step += 1;
        self.in_step = false;
        self.leg = 0;
        self.leaves.clear();
        self.deadline_ns = None;
    }
}

/// Resumes one agent at `now` and runs it until it blocks (returns the
/// wake-up time) or finishes its script (returns `None`).
pub(super) fn drive(
    world: &mut World,
    script: &AgentScript,
    leaves_by_step: &[Vec<usize>],
    st: &mut AgentState,
    record: &mut AgentRecord,
    now: i64,
) -> Option<i64> {
    // First finish whatever the agent was sleeping in.
    match st.pending {
        Pending::Nothing => {}
        Pending::WaitLeg => {
            st.legs_ns.push(now);
            st.leg += 1;
        }
        Pending::Take(take) => st.finish(record, now, Some(now), Some(take), None),
        Pending::Sleep => st.finish(record, now, Some(now), None, None),
    }
    st.pending = Pending::Nothing;

    loop {
        let step = *script.steps.get(st.step)?;
        let wake = match step {
            Step::Wait { n, timeout_ns, .. } => {
                let leaves = leaves_by_step.get(st.step);
                wait(world, leaves, st, record, now, n, timeout_ns)
            }
            Step::Take { pacer } => take(world, st, record, now, pacer),
            Step::Sleep { ns } => sleep(st, record, now, ns),
        };
        if wake.is_some() {
            return wake;
        }
    }
}

/// Runs a `Wait` step's inner `Wait`s from the current leg on: the wake-up
/// time if one must sleep, `None` once the step is over (admitted or failed).
fn wait(
    world: &mut World,
    leaves: Option<&Vec<usize>>,
    st: &mut AgentState,
    record: &mut AgentRecord,
    now: i64,
    n: i64,
    timeout_ns: Option<i64>,
) -> Option<i64> {
    if !st.in_step {
        st.in_step = true;
        st.started_ns = now;
        st.leaves = leaves.cloned().unwrap_or_default();
        st.deadline_ns = timeout_ns.map(|d| now.saturating_add(d));
    }
    let mut failed = None;
    while let Some(&leaf) = st.leaves.get(st.leg) {
        let result = world
            .limiters
            .bucket_mut(leaf)
            .map(|b| b.wait_n(now, n, st.deadline_ns));
        match result {
            None => {
                failed = Some(format!("unknown limiter bucket {leaf}"));
                break;
            }
            Some(Err(e)) => {
                failed = Some(e.to_string());
                break;
            }
            Some(Ok(0)) => {
                st.legs_ns.push(now);
                st.leg += 1;
            }
            Some(Ok(delay)) => {
                st.pending = Pending::WaitLeg;
                return Some(now.saturating_add(delay));
            }
        }
    }
    match failed {
        Some(msg) => st.finish(record, now, None, None, Some(msg)),
        None => st.finish(record, now, Some(now), None, None),
    }
    None
}

/// Runs a `Take` step: the wake-up time if the pacer makes the agent sleep.
fn take(
    world: &mut World,
    st: &mut AgentState,
    record: &mut AgentRecord,
    now: i64,
    pacer: usize,
) -> Option<i64> {
    st.started_ns = now;
    let Some(lim) = world.pacers.get_mut(pacer) else {
        let error = format!("unknown pacer {pacer}");
        st.finish(record, now, None, None, Some(error));
        return None;
    };
    let take = lim.take(now);
    if take.wake_ns > now {
        st.pending = Pending::Take(take);
        return Some(take.wake_ns);
    }
    st.finish(record, now, Some(now), Some(take), None);
    None
}

/// Runs a `Sleep` step: the wake-up time, or `None` for a non-positive one.
fn sleep(st: &mut AgentState, record: &mut AgentRecord, now: i64, ns: i64) -> Option<i64> {
    st.started_ns = now;
    if ns > 0 {
        st.pending = Pending::Sleep;
        return Some(now.saturating_add(ns));
    }
    st.finish(record, now, Some(now), None, None);
    None
}
