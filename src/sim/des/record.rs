//! What a run hands back: a record per agent and step, the processed events,
//! and the errors that stop a run before it starts.

use crate::model::multi::Node;
use crate::model::uber_ratelimit::Take;
use std::fmt;

/// What happened in one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepRecord {
    /// When the step started.
    pub started_ns: i64,
    /// When the step let the agent go (`None` if it failed).
    pub admitted_ns: Option<i64>,
    /// When the step ended (admitted or failed).
    pub finished_ns: i64,
    /// `finished - started`.
    pub waited_ns: i64,
    /// Wait: when each inner `Wait` returned, in order.
    pub legs_ns: Vec<i64>,
    /// Take: the limiter's answer.
    pub take: Option<Take>,
    /// The error a Wait returned (Go's message).
    pub error: Option<String>,
}

/// One agent's run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRecord {
    /// The agent's index in the input.
    pub agent: usize,
    /// Arrival time.
    pub arrival_ns: i64,
    /// One record per step.
    pub steps: Vec<StepRecord>,
}

/// One processed event, for inspection and the monotonic-time check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRecord {
    /// Virtual time.
    pub t_ns: i64,
    /// Scheduling sequence.
    pub seq: u64,
    /// The agent resumed.
    pub agent: usize,
}

/// The result of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimOutcome {
    /// Per agent, in input order.
    pub agents: Vec<AgentRecord>,
    /// Every event in processing order.
    pub events: Vec<EventRecord>,
}

/// Errors that stop a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// A script names a limiter that is not in the pool.
    UnknownLimiter {
        /// Agent.
        agent: usize,
        /// The node.
        limiter: Node,
    },
    /// A script names a pacer that does not exist.
    UnknownPacer {
        /// Agent.
        agent: usize,
        /// Pacer index.
        pacer: usize,
    },
    /// An event earlier than the current time (an engine bug).
    TimeWentBackwards {
        /// Current time.
        now_ns: i64,
        /// The event's time.
        event_ns: i64,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownLimiter { agent, limiter } => {
                write!(f, "agent {agent}: unknown limiter {limiter:?}")
            }
            Self::UnknownPacer { agent, pacer } => {
                write!(f, "agent {agent}: unknown pacer {pacer}")
            }
            Self::TimeWentBackwards { now_ns, event_ns } => {
                write!(f, "virtual time moved backwards: {event_ns} < {now_ns}")
            }
        }
    }
}

impl std::error::Error for SimError {}
