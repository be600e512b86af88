//! Unit tests of the model, pinned to the upstream source and its own tests.

use super::*;

const S: i64 = NANOS_PER_SEC;
const MS: i64 = 1_000_000;

#[test]
fn every_and_per_use_integer_duration_division() {
    assert_eq!(every(0), INF);
    assert_eq!(every(-5), INF);
    assert_eq!(every(S), 1.0);
    assert_eq!(per(2, S), Ok(2.0));
    assert_eq!(per(10, 60 * S), Ok(1.0 / 6.0));
    // 1s/3 = 333333333ns, so Per(3, 1s) is slightly above 3.
    let p3 = per(3, S).unwrap_or(0.0);
    assert_eq!(p3, 1.0 / 0.333333333);
    assert!(p3 > 3.0);
    assert_eq!(per(0, S), Err(TokenBucketError::DivideByZero));
}

#[test]
fn duration_seconds_matches_go_split_form() {
    assert_eq!(duration_seconds(1_500_000_000), 1.5);
    assert_eq!(duration_seconds(i64::MAX), 9_223_372_036.854_776);
    assert_eq!(duration_seconds(-1), -1e-9);
}

#[test]
fn float_to_duration_overflow_is_amd64_indefinite() {
    assert_eq!(go_f64_to_i64(1e19), i64::MIN);
    assert_eq!(go_f64_to_i64(-1e19), i64::MIN);
    assert_eq!(go_f64_to_i64(f64::NAN), i64::MIN);
    assert_eq!(go_f64_to_i64(1.9), 1);
    assert_eq!(go_f64_to_i64(-1.9), -1);
}

#[test]
fn go_time_zero_and_saturating_sub() {
    let t = GoTime::from_unix_nanos(0);
    assert!(!t.is_zero());
    assert!(GoTime::ZERO.is_zero());
    assert_eq!(t.sub_time(GoTime::ZERO), i64::MAX);
    assert_eq!(GoTime::ZERO.sub_time(t), i64::MIN);
    assert_eq!(t.add_dur(INF_DURATION).unix_nanos(), i64::MAX);
}

#[test]
fn first_call_sees_a_full_bucket() {
    let mut lim = TokenBucket::new(1.0, 5);
    assert_eq!(lim.tokens_at(0), 5.0);
    for _ in 0..5 {
        assert!(lim.allow_n(0, 1));
    }
    assert!(!lim.allow_n(0, 1));
    assert_eq!(lim.tokens_at(0), 0.0);
    assert_eq!(lim.tokens_at(S / 2), 0.5);
}

/// One per second: NewLimiter(1, 1), 20 callers at t=0 each Wait: one per second.
#[test]
fn one_per_second() {
    let mut lim = TokenBucket::new(1.0, 1);
    for i in 0..20 {
        assert_eq!(lim.wait_n(0, 1, None), Ok(i * S));
    }
}

/// Token-bucket picture 1: depth 5 (rate 1/s): five pass before the first second,
/// the sixth is blocked.
#[test]
fn depth_five_then_blocked() {
    let mut lim = TokenBucket::new(1.0, 5);
    let passed: Vec<bool> = (0..6).map(|i| lim.allow_n(i * 100 * MS, 1)).collect();
    // At 0.5s the bucket regained 0.5 token: still not a whole one.
    assert_eq!(passed, vec![true, true, true, true, true, false]);
}

/// Token-bucket picture 2: depth 1 at 1 token/s, a caller every 0.5s: one per
/// second passes.
#[test]
fn depth_one_one_per_second() {
    let mut lim = TokenBucket::new(1.0, 1);
    let passed: Vec<bool> = (0..8).map(|i| lim.allow_n(i * S / 2, 1)).collect();
    assert_eq!(
        passed,
        vec![true, false, true, false, true, false, true, false]
    );
}

/// Token-bucket picture 3: depth 5 at 0.5 token/s: five at once, then one every 2s.
#[test]
fn depth_five_half_rate() {
    let mut lim = TokenBucket::new(0.5, 5);
    let waits: Vec<i64> = (0..8)
        .map(|_| lim.wait_n(0, 1, None).unwrap_or(-1))
        .collect();
    assert_eq!(waits, vec![0, 0, 0, 0, 0, 2 * S, 4 * S, 6 * S]);
}

/// Token-bucket picture 4: a burst of 2, then 4s later a burst of 5 (depth 5,
/// 1 token/s): all pass, since 3 + 4 refills to the cap of 5.
#[test]
fn burst_two_then_five() {
    let mut lim = TokenBucket::new(1.0, 5);
    assert!(lim.allow_n(0, 1) && lim.allow_n(0, 1));
    assert_eq!(lim.tokens_at(4 * S), 5.0);
    for _ in 0..5 {
        assert!(lim.allow_n(4 * S, 1));
    }
    assert!(!lim.allow_n(4 * S, 1));
}

#[test]
fn reserve_queues_callers_and_tokens_go_negative() {
    let mut lim = TokenBucket::new(2.0, 1);
    let a = lim.reserve_n(0, 1);
    let b = lim.reserve_n(0, 1);
    let c = lim.reserve_n(0, 1);
    assert_eq!(
        (a.delay_from(0), b.delay_from(0), c.delay_from(0)),
        (0, S / 2, S)
    );
    assert_eq!(lim.tokens_at(0), -2.0);
    assert_eq!(b.delay_from(S), 0);
    let too_many = lim.reserve_n(0, 2);
    assert!(!too_many.ok());
    assert_eq!(too_many.delay_from(0), INF_DURATION);
}

#[test]
fn wait_errors_carry_go_messages() {
    let mut lim = TokenBucket::new(1.0, 1);
    let e = lim.wait_n(0, 2, None);
    assert_eq!(e, Err(TokenBucketError::ExceedsBurst { n: 2, burst: 1 }));
    assert_eq!(
        e.err().map(|e| e.to_string()),
        Some("rate: Wait(n=2) exceeds limiter's burst 1".to_string())
    );
    assert_eq!(lim.wait_n(0, 1, Some(10)), Ok(0));
    let e = lim.wait_n(0, 1, Some(S / 2));
    assert_eq!(
        e.err().map(|e| e.to_string()),
        Some("rate: Wait(n=1) would exceed context deadline".to_string())
    );
    // The failed wait reserved nothing: a deadline of exactly 1s fits.
    assert_eq!(lim.wait_n(0, 1, Some(S)), Ok(S));
    assert_eq!(
        lim.wait_n(5, 1, Some(5)),
        Err(TokenBucketError::DeadlineExceeded)
    );
}

#[test]
fn inf_ignores_burst_and_state() {
    let mut lim = TokenBucket::new(INF, 0);
    assert!(lim.allow_n(0, 100));
    assert_eq!(lim.wait_n(0, 100, None), Ok(0));
    assert_eq!(lim.last(), GoTime::ZERO);
    // IEEE infinity is not Inf: burst applies.
    let mut inf = TokenBucket::new(f64::INFINITY, 0);
    assert!(!inf.allow_n(0, 1));
}

#[test]
fn zero_limit_spends_burst() {
    let mut lim = TokenBucket::new_version(0.0, 2, XTimeVersion::V0_3);
    assert!(lim.allow_n(0, 1));
    assert_eq!(lim.burst(), 1);
    let r = lim.reserve_n(0, 1);
    assert!(r.ok());
    assert_eq!(r.tokens(), 0);
    assert!(!lim.allow_n(100 * S, 1));
    assert_eq!(
        lim.wait_n(0, 1, None),
        Err(TokenBucketError::ExceedsBurst { n: 1, burst: 0 })
    );
}

#[test]
fn tiny_limit_overflows_to_negative_wait_and_is_granted() {
    // 1e-12 tokens/s: the first advance saturates at ~9.2e9 s, worth
    // ~0.009 token; the wait for the missing 0.99 token is ~9.9e20 ns,
    // beyond 2^63, which Go converts to MinInt64.
    let mut lim = TokenBucket::new_version(1e-12, 1, XTimeVersion::V0_3);
    let r = lim.reserve_n(0, 1);
    assert!(r.ok());
    assert_eq!(r.delay_from(0), 0);
    assert!(lim.allow_n(0, 1));
    // v0.7 pre-fills the bucket: the first token is there; the second
    // still overflows to MinInt64 and is granted.
    let mut lim = TokenBucket::new_version(1e-12, 1, XTimeVersion::V0_7);
    assert_eq!(lim.reserve_n(0, 1).delay_from(0), 0);
    assert!(lim.allow_n(0, 1));
    // v0.10 caps the overflow at InfDuration: refused.
    let mut lim = TokenBucket::new(1e-12, 1);
    assert!(lim.allow_n(0, 1));
    assert!(!lim.allow_n(0, 1));
    let r = lim.reserve_n(0, 1);
    assert!(r.ok());
    assert_eq!(r.delay_from(0), INF_DURATION);
}

#[test]
fn zero_limit_since_v0_7_spends_prefilled_tokens() {
    let mut lim = TokenBucket::new(0.0, 2);
    assert!(lim.allow_n(0, 1));
    assert!(lim.allow_n(0, 1));
    assert_eq!(lim.burst(), 2);
    assert!(!lim.allow_n(100 * S, 1));
    assert_eq!(lim.wait_n(0, 1, None), Ok(INF_DURATION));
    assert_eq!(
        lim.wait_n(0, 1, Some(S)),
        Err(TokenBucketError::WouldExceedDeadline { n: 1 })
    );
}

#[test]
fn version_names() {
    assert_eq!(XTimeVersion::parse("v0.3.0"), Some(XTimeVersion::V0_3));
    assert_eq!(XTimeVersion::parse("0.6.0"), Some(XTimeVersion::V0_3));
    assert_eq!(XTimeVersion::parse("v0.7.0"), Some(XTimeVersion::V0_7));
    assert_eq!(XTimeVersion::parse("v0.9"), Some(XTimeVersion::V0_7));
    assert_eq!(XTimeVersion::parse("v0.13.0"), Some(XTimeVersion::V0_10));
    assert_eq!(XTimeVersion::parse("latest"), Some(XTimeVersion::LATEST));
    assert_eq!(XTimeVersion::parse("v0.2.0"), None);
    assert_eq!(XTimeVersion::parse("v0.14.0"), None);
    assert_eq!(XTimeVersion::parse("v1.3.0"), None);
    assert_eq!(XTimeVersion::parse("v0.x"), None);
}

#[test]
fn cancel_restores_tokens_and_last_event() {
    let mut lim = TokenBucket::new(1.0, 1);
    let a = lim.reserve_n(0, 1);
    let b = lim.reserve_n(0, 1);
    assert_eq!(b.delay_from(0), S);
    lim.cancel_at(&b, 0);
    assert_eq!(lim.tokens_at(0), 0.0);
    assert_eq!(lim.last_event(), GoTime::from_unix_nanos(0));
    // Cancelling a reservation whose time has passed does nothing.
    lim.cancel_at(&a, 1);
    assert_eq!(lim.tokens_at(0), 0.0);
    // A second reservation after `b` keeps `b`'s tokens when `b` cancels.
    let mut lim = TokenBucket::new(1.0, 1);
    let _ = lim.reserve_n(0, 1);
    let b = lim.reserve_n(0, 1);
    let _c = lim.reserve_n(0, 1);
    lim.cancel_at(&b, 0);
    assert_eq!(lim.tokens_at(0), -2.0);
}

#[test]
fn set_limit_and_burst_advance_first() {
    let mut lim = TokenBucket::new(1.0, 1);
    assert!(lim.allow_n(0, 1));
    lim.set_limit_at(S / 2, 10.0);
    assert_eq!(lim.tokens_at(S / 2), 0.5);
    assert_eq!(lim.tokens_at(S / 2 + 50 * MS), 1.0);
    lim.set_burst_at(S, 3);
    assert_eq!(lim.burst(), 3);
    assert_eq!(lim.tokens_at(S), 1.0);
    assert_eq!(lim.tokens_at(2 * S), 3.0);
}

#[test]
fn replay_rows() {
    let rows = [
        TokenBucketCall {
            t_ns: 0,
            n: 1,
            op: TokenBucketOp::Reserve,
            deadline_ns: 0,
        },
        TokenBucketCall {
            t_ns: 0,
            n: 1,
            op: TokenBucketOp::Reserve,
            deadline_ns: 0,
        },
        TokenBucketCall {
            t_ns: 0,
            n: 1,
            op: TokenBucketOp::Wait,
            deadline_ns: S,
        },
        TokenBucketCall {
            t_ns: 0,
            n: 1,
            op: TokenBucketOp::Cancel { row: 1 },
            deadline_ns: 0,
        },
        TokenBucketCall {
            t_ns: 0,
            n: 1,
            op: TokenBucketOp::Cancel { row: 2 },
            deadline_ns: 0,
        },
        TokenBucketCall {
            t_ns: 0,
            n: 1,
            op: TokenBucketOp::Allow,
            deadline_ns: 0,
        },
        TokenBucketCall {
            t_ns: 0,
            n: 0,
            op: TokenBucketOp::Tokens,
            deadline_ns: 0,
        },
    ];
    let out = replay_token_bucket(1.0, 1, &rows);
    let got: Vec<(bool, i64)> = out.iter().map(|r| (r.ok, r.delay_ns)).collect();
    assert_eq!(
        got,
        vec![
            (true, 0),
            (true, S),
            (false, -1),
            (true, 0),
            (false, 0),
            (false, 0),
            (true, 0)
        ]
    );
    assert_eq!(out[6].tokens, Some(0.0));
}

fn int(s: &str) -> i64 {
    s.parse().unwrap_or_else(|e| panic!("bad int {s:?}: {e}"))
}

fn float_bits(s: &str) -> f64 {
    f64::from_bits(u64::from_str_radix(s, 16).unwrap_or_else(|e| panic!("bad bits {s:?}: {e}")))
}

/// Replays one golden file (expected values produced by the real
/// x/time/rate v0.3.0, see tests/golden/pacers/README.md) and checks
/// every column, including the limiter's internal state after each row.
fn check_golden(name: &str, text: &str) {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let mut limit = None;
    let mut burst = None;
    for kv in header.trim_start_matches('#').split_whitespace() {
        match kv.split_once('=') {
            Some(("limit_bits", v)) => limit = Some(float_bits(v)),
            Some(("burst", v)) => burst = Some(int(v)),
            _ => {}
        }
    }
    let (Some(limit), Some(burst)) = (limit, burst) else {
        panic!("{name}: bad header {header:?}");
    };
    let _columns = lines.next();
    let mut replay = TokenBucketReplay::new_version(limit, burst, XTimeVersion::V0_3);
    let mut rows = 0;
    for (i, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 10, "{name} row {i}: {line}");
        let op = match f[2] {
            "allow" => TokenBucketOp::Allow,
            "reserve" => TokenBucketOp::Reserve,
            "wait" => TokenBucketOp::Wait,
            "cancel" => TokenBucketOp::Cancel {
                row: usize::try_from(int(f[4])).unwrap_or(usize::MAX),
            },
            "set_limit" => TokenBucketOp::SetLimit(float_bits(f[4])),
            "set_burst" => TokenBucketOp::SetBurst(int(f[4])),
            "tokens" => TokenBucketOp::Tokens,
            other => panic!("{name} row {i}: op {other}"),
        };
        let call = TokenBucketCall {
            t_ns: int(f[0]),
            n: int(f[1]),
            op,
            deadline_ns: int(f[3]),
        };
        let got = replay.step(&call);
        let tokens = got
            .tokens
            .map(|t| format!("{:016x}", t.to_bits()))
            .unwrap_or_default();
        let err = got
            .error
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let lim = replay.limiter();
        let state = format!(
            "{:016x};{};{};{}",
            lim.raw_tokens().to_bits(),
            lim.burst(),
            fmt_time(lim.last()),
            fmt_time(lim.last_event())
        );
        let got_cols = [
            got.ok.to_string(),
            got.delay_ns.to_string(),
            tokens,
            err,
            state,
        ];
        assert_eq!(got_cols.as_slice(), &f[5..], "{name} row {i}: {line}");
        rows += 1;
    }
    assert!(rows > 0, "{name}: no rows");
}

#[test]
fn golden_traces_from_real_x_time_rate() {
    for (name, text) in [
        (
            "tb_c2_then_mixed",
            include_str!("../../../tests/golden/pacers/tb_c2_then_mixed.csv"),
        ),
        (
            "tb_per3_burst3_random",
            include_str!("../../../tests/golden/pacers/tb_per3_burst3_random.csv"),
        ),
        (
            "tb_reserve_cancel_heavy",
            include_str!("../../../tests/golden/pacers/tb_reserve_cancel_heavy.csv"),
        ),
        (
            "tb_inf_zero_setlimit",
            include_str!("../../../tests/golden/pacers/tb_inf_zero_setlimit.csv"),
        ),
        (
            "tb_zero_limit",
            include_str!("../../../tests/golden/pacers/tb_zero_limit.csv"),
        ),
        (
            "tb_tiny_limit_overflow",
            include_str!("../../../tests/golden/pacers/tb_tiny_limit_overflow.csv"),
        ),
        (
            "tb_random_mix",
            include_str!("../../../tests/golden/pacers/tb_random_mix.csv"),
        ),
    ] {
        check_golden(name, text);
    }
}
