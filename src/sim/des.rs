//! A discrete-event engine: callers ("agents") that block on limiters and
//! wake on the virtual clock.
//!
//! Why: the document's experiments are about *concurrent* callers (20
//! goroutines calling `Wait` or `Take` at once). Go's scheduler makes their
//! order nondeterministic; ratelab fixes one order and says which, so a run
//! is a pure function of its input.
//!
//! # Model
//! * Each agent runs a script: it arrives at `arrival_ns`, then runs its
//!   [`Step`]s in order. A step that must block schedules a wake-up on the
//!   virtual clock; nothing else happens for that agent until then.
//! * **Run to block**: an agent keeps running (without yielding to others)
//!   until a step makes it sleep, as a goroutine does when `Wait` returns
//!   without a delay.
//! * [`Step::Wait`] is `x/time/rate`'s `Wait` (`WaitN(ctx, n)`) on a bucket
//!   or on a `MultiLimiter`: a multi's inner `Wait`s are run one after the
//!   other, each at the virtual time the previous one returned, so other
//!   agents interleave between them (this is what makes C3/C4 come out as in
//!   the book). Each inner `Wait` reserves at the current time and the agent
//!   sleeps the reservation's delay. An optional timeout gives the context a
//!   deadline `timeout` after the step starts, shared by the inner `Wait`s.
//! * [`Step::Take`] is uber-go/ratelimit's `Take()`. Atomic variants: the
//!   agent sleeps after updating the state, so others are not held up. Mutex
//!   variant: the agent sleeps holding the lock; callers that arrive
//!   meanwhile queue **FIFO** (in the order they called) and each reads the
//!   clock when it gets the lock. The queue lives in
//!   [`LeakyBucket`](crate::model::leaky_bucket::LeakyBucket) itself, which
//!   tracks when its lock is free; since the engine calls `take` in event
//!   order, that is FIFO hand-off.
//! * [`Step::Sleep`] is plain work/think time (`time.Sleep`; a non-positive
//!   duration returns at once).
//!
//! # Deterministic order
//! Events are processed by (virtual time, then scheduling sequence, then
//! agent id). The sequence number grows each time an event is scheduled.
//! All arrivals are scheduled before the run, in agent-id order, so
//! simultaneous arrivals run in agent-id order, and an arrival at `T` runs
//! before a wake-up at `T` scheduled during the run. Time never moves
//! backwards: a violation is returned as [`SimError::TimeWentBackwards`]
//! (and checked by tests).

use crate::model::leaky_bucket::{LeakyBucket, Take};
use crate::model::multi::{LimiterPool, MultiError, Node};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

/// One thing an agent does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `WaitN(ctx, n)` on a pool limiter (bucket or multi; a multi passes
    /// `n` to each inner bucket, the book's multi uses `n = 1`).
    Wait {
        /// The limiter.
        limiter: Node,
        /// Tokens per inner `Wait`.
        n: i64,
        /// Context deadline relative to the step's start; `None` = no
        /// deadline.
        timeout_ns: Option<i64>,
    },
    /// `Take()` on uber-go pacer `pacer` (index into [`World::pacers`]).
    Take {
        /// The pacer.
        pacer: usize,
    },
    /// Sleep (work) for `ns`.
    Sleep {
        /// Duration.
        ns: i64,
    },
}

/// What an agent does and when it arrives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentScript {
    /// Arrival time (virtual ns).
    pub arrival_ns: i64,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// Everything the agents share.
#[derive(Clone, Debug, Default)]
pub struct World {
    /// `x/time/rate` limiters and multis.
    pub limiters: LimiterPool,
    /// uber-go/ratelimit pacers.
    pub pacers: Vec<LeakyBucket>,
}

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

#[derive(Clone, Debug)]
struct AgentState {
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

/// Runs `agents` against `world` (which keeps the final limiter state).
pub fn run(world: &mut World, agents: &[AgentScript]) -> Result<SimOutcome, SimError> {
    // Validate up front so a run never stops halfway on a bad script, and
    // precompute each Wait's inner buckets.
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

    let mut records: Vec<AgentRecord> = agents
        .iter()
        .enumerate()
        .map(|(agent, s)| AgentRecord {
            agent,
            arrival_ns: s.arrival_ns,
            steps: Vec::with_capacity(s.steps.len()),
        })
        .collect();
    let mut states: Vec<AgentState> = agents
        .iter()
        .map(|_| AgentState {
            step: 0,
            in_step: false,
            pending: Pending::Nothing,
            started_ns: 0,
            leaves: Vec::new(),
            leg: 0,
            deadline_ns: None,
            legs_ns: Vec::new(),
        })
        .collect();

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

/// Resumes one agent at `now` and runs it until it blocks (returns the
/// wake-up time) or finishes its script (returns `None`).
fn drive(
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
        Pending::Take(take) => {
            finish(st, record, now, Some(now), Some(take), None);
        }
        Pending::Sleep => {
            finish(st, record, now, Some(now), None, None);
        }
    }
    st.pending = Pending::Nothing;

    loop {
        let step = *script.steps.get(st.step)?;
        match step {
            Step::Wait { n, timeout_ns, .. } => {
                if !st.in_step {
                    st.in_step = true;
                    st.started_ns = now;
                    st.leaves = leaves_by_step.get(st.step).cloned().unwrap_or_default();
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
                    Some(msg) => finish(st, record, now, None, None, Some(msg)),
                    None => finish(st, record, now, Some(now), None, None),
                }
            }
            Step::Take { pacer } => {
                st.started_ns = now;
                let Some(lim) = world.pacers.get_mut(pacer) else {
                    finish(
                        st,
                        record,
                        now,
                        None,
                        None,
                        Some(format!("unknown pacer {pacer}")),
                    );
                    continue;
                };
                let take = lim.take(now);
                if take.wake_ns > now {
                    st.pending = Pending::Take(take);
                    return Some(take.wake_ns);
                }
                finish(st, record, now, Some(now), Some(take), None);
            }
            Step::Sleep { ns } => {
                st.started_ns = now;
                if ns > 0 {
                    st.pending = Pending::Sleep;
                    return Some(now.saturating_add(ns));
                }
                finish(st, record, now, Some(now), None, None);
            }
        }
    }
}

/// Closes the current step and moves to the next.
fn finish(
    st: &mut AgentState,
    record: &mut AgentRecord,
    now: i64,
    admitted_ns: Option<i64>,
    take: Option<Take>,
    error: Option<String>,
) {
    record.steps.push(StepRecord {
        started_ns: st.started_ns,
        admitted_ns,
        finished_ns: now,
        waited_ns: now.saturating_sub(st.started_ns),
        legs_ns: std::mem::take(&mut st.legs_ns),
        take,
        error,
    });
    st.step += 1;
    st.in_step = false;
    st.leg = 0;
    st.leaves.clear();
    st.deadline_ns = None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::leaky_bucket::{LeakyBucketConfig, LeakyVariant};
    use crate::model::token_bucket::{per, Limit, TokenBucket, TokenBucketError};

    const S: i64 = 1_000_000_000;
    const MS: i64 = 1_000_000;
    const ORIGIN: i64 = 1_700_000_000 * S;

    fn lim(r: Result<Limit, TokenBucketError>) -> Limit {
        r.unwrap_or(f64::NAN)
    }

    fn wait(limiter: Node) -> Step {
        Step::Wait {
            limiter,
            n: 1,
            timeout_ns: None,
        }
    }

    fn admitted(out: &SimOutcome) -> Vec<Option<i64>> {
        out.agents
            .iter()
            .map(|a| a.steps.last().and_then(|s| s.admitted_ns))
            .collect()
    }

    fn assert_monotonic(out: &SimOutcome) {
        assert!(out
            .events
            .windows(2)
            .all(|w| (w[0].t_ns, w[0].seq) < (w[1].t_ns, w[1].seq)));
    }

    fn go(world: &mut World, agents: &[AgentScript]) -> SimOutcome {
        match run(world, agents) {
            Ok(o) => o,
            Err(e) => panic!("run failed: {e}"),
        }
    }

    /// C2: NewLimiter(1, 1), 20 concurrent callers: 0, 1, ..., 19 s.
    #[test]
    fn c2_twenty_callers_one_per_second() {
        let mut world = World::default();
        let b = world.limiters.add_bucket(TokenBucket::new(1.0, 1));
        let agents: Vec<AgentScript> = (0..20)
            .map(|_| AgentScript {
                arrival_ns: 0,
                steps: vec![wait(b)],
            })
            .collect();
        let out = go(&mut world, &agents);
        let want: Vec<Option<i64>> = (0..20).map(|i| Some(i * S)).collect();
        assert_eq!(admitted(&out), want);
        assert_monotonic(&out);
    }

    /// C3: MultiLimiter(Per(2,1s) b1, Per(10,1min) b10), 20 callers:
    /// 0, 0.5, ..., 4.5 s, then #11 at 6 s and every 6 s, the last at 60 s.
    #[test]
    fn c3_multi_limiter() {
        let mut world = World::default();
        let second = world
            .limiters
            .add_bucket(TokenBucket::new(lim(per(2, S)), 1));
        let minute = world
            .limiters
            .add_bucket(TokenBucket::new(lim(per(10, 60 * S)), 10));
        let m = world.limiters.multi_limiter(vec![second, minute]);
        let m = m.unwrap_or(second);
        let agents: Vec<AgentScript> = (0..20)
            .map(|_| AgentScript {
                arrival_ns: 0,
                steps: vec![wait(m)],
            })
            .collect();
        let out = go(&mut world, &agents);
        let mut want: Vec<Option<i64>> = (0..10).map(|i| Some(i * S / 2)).collect();
        want.extend((1..=10).map(|i| Some(i * 6 * S)));
        assert_eq!(admitted(&out), want);
        // #11 waited 6 s on the minute limiter, then passed the second one.
        assert_eq!(out.agents[10].steps[0].legs_ns, vec![6 * S, 6 * S]);
        assert_monotonic(&out);
    }

    /// C4: api = Multi(Per(2,1s) b2, Per(10,1min) b10), disk = Multi(1/s b1),
    /// network = Multi(Per(3,1s) b3); ReadFile waits Multi(api, disk),
    /// ResolveAddress Multi(api, network). Fixed order: agents 0-9 are the
    /// ten ReadFile goroutines (spawned first, as in the book), 10-19 the
    /// ResolveAddress ones, all at t=0. ReadFile passes at 0, 1, ..., 9 s
    /// (the disk's 1/s paces them after the api's second-limiter), each
    /// ResolveAddress at 6, 12, ..., 60 s (the minute bucket is empty):
    /// the run spans 60 s, as the book's does.
    #[test]
    fn c4_api_disk_network() {
        let mut world = World::default();
        let p = &mut world.limiters;
        let api_s = p.add_bucket(TokenBucket::new(lim(per(2, S)), 2));
        let api_m = p.add_bucket(TokenBucket::new(lim(per(10, 60 * S)), 10));
        let disk_b = p.add_bucket(TokenBucket::new(1.0, 1));
        let net_b = p.add_bucket(TokenBucket::new(lim(per(3, S)), 3));
        let api = p.multi_limiter(vec![api_s, api_m]).unwrap_or(api_s);
        let disk = p.multi_limiter(vec![disk_b]).unwrap_or(disk_b);
        let network = p.multi_limiter(vec![net_b]).unwrap_or(net_b);
        let read = p.multi_limiter(vec![api, disk]).unwrap_or(api);
        let resolve = p.multi_limiter(vec![api, network]).unwrap_or(api);
        assert_eq!(p.leaves(read), Ok(vec![1, 0, 2]));
        assert_eq!(p.leaves(resolve), Ok(vec![1, 0, 3]));
        let agents: Vec<AgentScript> = (0..20)
            .map(|i| AgentScript {
                arrival_ns: 0,
                steps: vec![wait(if i < 10 { read } else { resolve })],
            })
            .collect();
        let out = go(&mut world, &agents);
        let mut want: Vec<Option<i64>> = (0..10).map(|i| Some(i * S)).collect();
        want.extend((1..=10).map(|i| Some(i * 6 * S)));
        assert_eq!(admitted(&out), want);
        // ReadFile #2 passed the api at 0.5 s, then waited for the disk.
        assert_eq!(out.agents[2].steps[0].legs_ns, vec![0, S / 2, 2 * S]);
        assert_monotonic(&out);
    }

    #[test]
    fn deadline_errors_are_recorded_and_agent_continues() {
        let mut world = World::default();
        let b = world.limiters.add_bucket(TokenBucket::new(1.0, 1));
        let agents = vec![
            AgentScript {
                arrival_ns: 0,
                steps: vec![wait(b)],
            },
            AgentScript {
                arrival_ns: 0,
                steps: vec![
                    Step::Wait {
                        limiter: b,
                        n: 1,
                        timeout_ns: Some(S / 2),
                    },
                    Step::Wait {
                        limiter: b,
                        n: 2,
                        timeout_ns: None,
                    },
                    wait(b),
                ],
            },
        ];
        let out = go(&mut world, &agents);
        let steps = &out.agents[1].steps;
        assert_eq!(
            steps[0].error.as_deref(),
            Some("rate: Wait(n=1) would exceed context deadline")
        );
        assert_eq!(
            steps[1].error.as_deref(),
            Some("rate: Wait(n=2) exceeds limiter's burst 1")
        );
        assert_eq!(steps[2].admitted_ns, Some(S));
    }

    /// B1 as one goroutine calling Take in a loop, for every variant.
    #[test]
    fn b1_take_loop() {
        for v in [
            LeakyVariant::Atomic,
            LeakyVariant::AtomicInt64,
            LeakyVariant::Mutex,
        ] {
            let cfg = LeakyBucketConfig::new(100).variant(v).unix_origin(ORIGIN);
            let mut world = World::default();
            world
                .pacers
                .push(LeakyBucket::new(cfg).unwrap_or_else(|e| panic!("{e}")));
            let agents = vec![AgentScript {
                arrival_ns: 0,
                steps: vec![Step::Take { pacer: 0 }; 10],
            }];
            let out = go(&mut world, &agents);
            let got: Vec<Option<i64>> = out.agents[0].steps.iter().map(|s| s.admitted_ns).collect();
            let want: Vec<Option<i64>> = (0..10).map(|i| Some(i * 10 * MS)).collect();
            assert_eq!(got, want, "{v:?}");
        }
        // The default variant on a clock at the Unix epoch (clock.NewMock()):
        // the sentinel state 0 lets every call at t=0 through.
        let mut world = World::default();
        world
            .pacers
            .push(LeakyBucket::new(LeakyBucketConfig::new(100)).unwrap_or_else(|e| panic!("{e}")));
        let agents = vec![AgentScript {
            arrival_ns: 0,
            steps: vec![Step::Take { pacer: 0 }; 5],
        }];
        let out = go(&mut world, &agents);
        assert!(out.agents[0].steps.iter().all(|s| s.admitted_ns == Some(0)));
    }

    /// Mutex variant: callers queue on the lock while one sleeps; atomic
    /// callers sleep in parallel. New(10), WithoutSlack; A and B at 0, C at
    /// 50 ms, D at 120 ms with 500 ms of work first.
    #[test]
    fn mutex_serializes_atomic_does_not() {
        let mut results = Vec::new();
        for v in [LeakyVariant::Atomic, LeakyVariant::Mutex] {
            let cfg = LeakyBucketConfig::new(10)
                .without_slack()
                .variant(v)
                .unix_origin(ORIGIN);
            let mut world = World::default();
            world
                .pacers
                .push(LeakyBucket::new(cfg).unwrap_or_else(|e| panic!("{e}")));
            let take = Step::Take { pacer: 0 };
            let agents = vec![
                AgentScript {
                    arrival_ns: 0,
                    steps: vec![take],
                },
                AgentScript {
                    arrival_ns: 0,
                    steps: vec![take],
                },
                AgentScript {
                    arrival_ns: 50 * MS,
                    steps: vec![take],
                },
            ];
            let out = go(&mut world, &agents);
            assert_monotonic(&out);
            let reads: Vec<i64> = out
                .agents
                .iter()
                .map(|a| a.steps[0].take.map_or(-1, |t| t.now_ns))
                .collect();
            results.push((admitted(&out), reads));
        }
        // Same admission times, but the mutex caller C read the clock only
        // when B released the lock at 100 ms.
        assert_eq!(results[0].0, vec![Some(0), Some(100 * MS), Some(200 * MS)]);
        assert_eq!(results[1].0, results[0].0);
        assert_eq!(results[0].1, vec![0, 0, 50 * MS]);
        assert_eq!(results[1].1, vec![0, 0, 100 * MS]);
    }

    #[test]
    fn ties_run_in_agent_order_and_time_is_monotonic() {
        // Pseudo-random scripts mixing every step kind.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m) as i64
        };
        for _ in 0..50 {
            let mut world = World::default();
            let a = world.limiters.add_bucket(TokenBucket::new(3.0, 2));
            let b = world.limiters.add_bucket(TokenBucket::new(0.5, 1));
            let m = world.limiters.multi_limiter(vec![a, b]).unwrap_or(a);
            for v in [LeakyVariant::Mutex, LeakyVariant::AtomicInt64] {
                let cfg = LeakyBucketConfig::new(5).variant(v).unix_origin(ORIGIN);
                world
                    .pacers
                    .push(LeakyBucket::new(cfg).unwrap_or_else(|e| panic!("{e}")));
            }
            let agents: Vec<AgentScript> = (0..12)
                .map(|_| AgentScript {
                    arrival_ns: next(3) * S,
                    steps: (0..4)
                        .map(|_| match next(5) {
                            0 => wait(a),
                            1 => Step::Wait {
                                limiter: m,
                                n: 1,
                                timeout_ns: Some(next(4) * S),
                            },
                            2 => Step::Take { pacer: 0 },
                            3 => Step::Take { pacer: 1 },
                            _ => Step::Sleep {
                                ns: next(2 * S as u64),
                            },
                        })
                        .collect(),
                })
                .collect();
            let out = go(&mut world, &agents);
            assert_monotonic(&out);
            for (rec, script) in out.agents.iter().zip(&agents) {
                assert_eq!(rec.steps.len(), script.steps.len());
                let mut t = script.arrival_ns;
                for s in &rec.steps {
                    assert!(s.started_ns >= t && s.finished_ns >= s.started_ns);
                    t = s.finished_ns;
                }
            }
        }
        // Two callers at the same instant: agent 0 reserves first.
        let mut world = World::default();
        let b = world.limiters.add_bucket(TokenBucket::new(1.0, 1));
        let agents = vec![
            AgentScript {
                arrival_ns: 0,
                steps: vec![wait(b)],
            };
            2
        ];
        let out = go(&mut world, &agents);
        assert_eq!(admitted(&out), vec![Some(0), Some(S)]);
    }

    #[test]
    fn bad_scripts_are_errors() {
        let mut world = World::default();
        let agents = vec![AgentScript {
            arrival_ns: 0,
            steps: vec![Step::Take { pacer: 3 }],
        }];
        assert_eq!(
            run(&mut world, &agents),
            Err(SimError::UnknownPacer { agent: 0, pacer: 3 })
        );
        let agents = vec![AgentScript {
            arrival_ns: 0,
            steps: vec![wait(Node::Multi(0))],
        }];
        assert!(matches!(
            run(&mut world, &agents),
            Err(SimError::UnknownLimiter { .. })
        ));
    }
}
