//! The event loop: validates the scripts, schedules arrivals and wake-ups,
//! and resumes agents in deterministic order.

use super::agent::{drive, AgentState};
use super::record::{AgentRecord, EventRecord, SimError, SimOutcome};
use super::script::{AgentScript, Step, World};
use crate::model::multi::MultiError;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Runs `agents` against `world` (which keeps the final limiter state).
pub fn run(world: &mut World, agents: &[AgentScript]) -> Result<SimOutcome, SimError> {
    let leaves_by_step = plan(world, agents)?;
    let mut records: Vec<AgentRecord> = agents
        .iter()
        .enumerate()
        .map(|(agent, s)| AgentRecord {
            agent,
            arrival_ns: s.arrival_ns,
            steps: Vec::with_capacity(s.steps.len()),
        })
        .collect();
    let mut states: Vec<AgentState> = agents.iter().map(|_| AgentState::new()).collect();

    let mut queue: BinaryHeap<Reverse<(i64, u64, usize)>> = BinaryHeap::new();
    let mut seq: u64 = 0;
    for (agent, s) in agents.iter().enumerate() {
        queue.push(Reverse((s.arrival_ns, seq, agent)));
        seq += 1;
    }

    let mut events = Vec::new();
    let mut now = i64::MIN;
    while let Some(Reverse((t, ev_seq, agent))) = queue.pop() {
        if t < now {
            return Err(SimError::TimeWentBackwards {
                now_ns: now,
                event_ns: t,
            });
        }
        now = t;
        events.push(EventRecord {
            t_ns: t,
            seq: ev_seq,
            agent,
        });
        let (Some(script), Some(state), Some(record), Some(leaves)) = (
            agents.get(agent),
            states.get_mut(agent),
            records.get_mut(agent),
            leaves_by_step.get(agent),
        ) else {
            continue;
        };
        if let Some(wake) = drive(world, script, leaves, state, record, now) {
            queue.push(Reverse((wake, seq, agent)));
            seq += 1;
        }
    }
    Ok(SimOutcome {
        agents: records,
        events,
    })
}

/// Validates every script up front, so a run never stops halfway on a bad
/// one, and lists each `Wait` step's inner buckets (per agent, per step; an
/// empty list for the other steps).
fn plan(world: &World, agents: &[AgentScript]) -> Result<Vec<Vec<Vec<usize>>>, SimError> {
    let mut leaves_by_step: Vec<Vec<Vec<usize>>> = Vec::with_capacity(agents.len());
    for (agent, script) in agents.iter().enumerate() {
        let mut per_step = Vec::with_capacity(script.steps.len());
        for step in &script.steps {
            let leaves = match *step {
                Step::Wait { limiter, .. } => match world.limiters.leaves(limiter) {
                    Ok(l) => l,
                    Err(MultiError::UnknownNode(_) | MultiError::Empty | MultiError::Wait(_)) => {
                        return Err(SimError::UnknownLimiter { agent, limiter })
                    }
                },
                Step::Take { pacer } => {
                    if pacer >= world.pacers.len() {
                        return Err(SimError::UnknownPacer { agent, pacer });
                    }
                    Vec::new()
                }
                Step::Sleep { .. } => Vec::new(),
            };
            per_step.push(leaves);
        }
        leaves_by_step.push(per_step);
    }
    Ok(leaves_by_step)
}
