use super::*;
use crate::model::multi::Node;
use crate::model::uber_ratelimit::{LeakyBucket, LeakyBucketConfig, LeakyVariant};
use crate::model::x_time_rate::{per, Limit, TokenBucket, TokenBucketError};

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

/// `n` agents arriving at 0 that each wait once on `limiter`.
fn callers(n: usize, limiter: Node) -> Vec<AgentScript> {
    let one = AgentScript {
        arrival_ns: 0,
        steps: vec![wait(limiter)],
    };
    vec![one; n]
}

/// A world with one uber-go pacer built from `cfg`.
fn world_with_pacer(cfg: LeakyBucketConfig) -> World {
    let mut world = World::default();
    world
        .pacers
        .push(LeakyBucket::new(cfg).unwrap_or_else(|e| panic!("{e}")));
    world
}

fn go(world: &mut World, agents: &[AgentScript]) -> SimOutcome {
    match run(world, agents) {
        Ok(o) => o,
        Err(e) => panic!("run failed: {e}"),
    }
}

/// `NewLimiter(1, 1)`, 20 concurrent callers: 0, 1, ..., 19 s.
#[test]
fn twenty_callers_one_per_second() {
    let mut world = World::default();
    let b = world.limiters.add_bucket(TokenBucket::new(1.0, 1));
    let agents = callers(20, b);
    let out = go(&mut world, &agents);
    let want: Vec<Option<i64>> = (0..20).map(|i| Some(i * S)).collect();
    assert_eq!(admitted(&out), want);
    assert_monotonic(&out);
}

/// MultiLimiter(Per(2,1s) b1, Per(10,1min) b10), 20 callers:
/// 0, 0.5, ..., 4.5 s, then the 11th at 6 s and every 6 s, the last at 60 s.
#[test]
fn multi_limiter_second_and_minute() {
    let mut world = World::default();
    let second = world
        .limiters
        .add_bucket(TokenBucket::new(lim(per(2, S)), 1));
    let minute = world
        .limiters
        .add_bucket(TokenBucket::new(lim(per(10, 60 * S)), 10));
    let m = world.limiters.multi_limiter(vec![second, minute]);
    let m = m.unwrap_or(second);
    let agents = callers(20, m);
    let out = go(&mut world, &agents);
    let mut want: Vec<Option<i64>> = (0..10).map(|i| Some(i * S / 2)).collect();
    want.extend((1..=10).map(|i| Some(i * 6 * S)));
    assert_eq!(admitted(&out), want);
    // The 11th waited 6 s on the minute limiter, then passed the second one.
    assert_eq!(out.agents[10].steps[0].legs_ns, vec![6 * S, 6 * S]);
    assert_monotonic(&out);
}

/// api = Multi(Per(2,1s) b2, Per(10,1min) b10), disk = Multi(1/s b1),
/// network = Multi(Per(3,1s) b3); ReadFile waits Multi(api, disk),
/// ResolveAddress Multi(api, network). Fixed order: agents 0-9 are the
/// ten ReadFile goroutines (spawned first), 10-19 the
/// ResolveAddress ones, all at t=0. ReadFile passes at 0, 1, ..., 9 s
/// (the disk's 1/s paces them after the api's second-limiter), each
/// ResolveAddress at 6, 12, ..., 60 s (the minute bucket is empty):
/// the run spans 60 s.
#[test]
fn api_disk_network_multis() {
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
    // ReadFile agent 2 passed the api at 0.5 s, then waited for the disk.
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

/// One goroutine calling Take in a loop, for every variant.
#[test]
fn take_loop_is_paced() {
    for v in [
        LeakyVariant::Atomic,
        LeakyVariant::AtomicInt64,
        LeakyVariant::Mutex,
    ] {
        let cfg = LeakyBucketConfig::new(100).variant(v).unix_origin(ORIGIN);
        let mut world = world_with_pacer(cfg);
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
    let mut world = world_with_pacer(LeakyBucketConfig::new(100));
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
        let mut world = world_with_pacer(cfg);
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
    let agents = callers(2, b);
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
