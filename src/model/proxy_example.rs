//! The rate-limiting proxy of pingora's `docs/user_guide/rate_limiter.md`
//! (the 0.9 version of the page), reduced to its `request_filter` decision.
//!
//! What the example does, and the model keeps:
//!
//! * One global `static RATE_LIMITER: Lazy<Rate> = Lazy::new(|| Rate::new(1
//!   s))`. `Lazy` runs the constructor on first dereference, i.e. at the first
//!   request *that has an appid* (a request without one returns before
//!   touching it), so the Rate's `start` is that request's time.
//! * The key is the `appid` request header as a `String`; `HeaderValue::
//!   to_str` fails unless every byte is visible ASCII (32..=126) or a tab, and
//!   a failure counts as "no appid".
//! * No appid → `Ok(false)`: not counted, always passed to the upstream.
//! * `observe(&appid, 1) > MAX_REQ_PER_SEC` (1) → a 429 with
//!   `X-Rate-Limit-Limit: 1`, `X-Rate-Limit-Remaining: 0`,
//!   `X-Rate-Limit-Reset: 1` (hard-coded, whatever the window's real
//!   remaining time) and `session.set_keepalive(None)`, so the client sees
//!   `Connection: close`.
//! * Otherwise the request is proxied; the model assumes the upstream
//!   answers 200 and the connection stays keep-alive.
//!
//! The window is shared by all keys and flips at the first call of *any* key
//! after the interval (see `crate::model::rate`), which is why the example's appid 2
//! passes twice 150 ms apart.

use crate::clock::Nanos;
use crate::model::estimator::{Estimator, Fault, FrequencyEstimator};
use crate::model::rate::Rate;
use serde::Serialize;
use std::time::Duration;

/// `MAX_REQ_PER_SEC` of the example.
pub const MAX_REQ_PER_SEC: i64 = 1;

/// The `Connection` header the client sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Connection {
    /// The connection may be reused.
    KeepAlive,
    /// `set_keepalive(None)`: closed after this response.
    Close,
}

impl Connection {
    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Connection::KeepAlive => "keep-alive",
            Connection::Close => "close",
        }
    }
}

/// The response the client gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProxyResponse {
    /// 429 when limited, else the upstream's (assumed) 200.
    pub status: u16,
    /// The three `X-Rate-Limit-*` headers of a 429, in insertion order.
    pub headers: Vec<(&'static str, String)>,
    /// Keep-alive or close.
    pub connection: Connection,
    /// What `observe` returned, `None` when the request had no usable appid.
    pub observed: Option<i64>,
}

/// `get_request_appid`: the header's value if `to_str()` accepts it.
pub fn usable_appid(header: Option<&[u8]>) -> Option<&[u8]> {
    header.filter(|v| v.iter().all(|&b| b == b'\t' || (32..127).contains(&b)))
}

/// `request_filter` on an existing Rate: the pure decision at `now`.
pub fn proxy_request_filter<E: FrequencyEstimator>(
    rate: &mut Rate<E>,
    appid: &[u8],
    now: Nanos,
) -> Result<ProxyResponse, Fault> {
    let curr_window_requests = rate.observe(appid, 1, now)?;
    if curr_window_requests > MAX_REQ_PER_SEC {
        return Ok(ProxyResponse {
            status: 429,
            headers: vec![
                ("X-Rate-Limit-Limit", MAX_REQ_PER_SEC.to_string()),
                ("X-Rate-Limit-Remaining", "0".to_string()),
                ("X-Rate-Limit-Reset", "1".to_string()),
            ],
            connection: Connection::Close,
            observed: Some(curr_window_requests),
        });
    }
    Ok(passed(Some(curr_window_requests)))
}

fn passed(observed: Option<i64>) -> ProxyResponse {
    ProxyResponse {
        status: 200,
        headers: Vec::new(),
        connection: Connection::KeepAlive,
        observed,
    }
}

/// The whole example: the lazily created global Rate and the filter.
///
/// # Examples
///
/// The docs' filter allows one request per second per appid: the second
/// request within the window gets a 429 with the `X-Rate-Limit-*` headers.
///
/// ```
/// use ratelab::clock::MILLI;
/// use ratelab::model::proxy_example::ProxyExample;
///
/// let mut p = ProxyExample::new(1);
/// assert_eq!(p.request(Some(b"1"), 0).unwrap().status, 200);
/// let limited = p.request(Some(b"1"), 100 * MILLI).unwrap();
/// assert_eq!(limited.status, 429);
/// assert_eq!(limited.headers.len(), 3);
/// assert_eq!(p.request(None, 200 * MILLI).unwrap().observed, None); // no appid: not counted
/// ```
pub struct ProxyExample<E = Estimator> {
    rate: Option<Rate<E>>,
    make: Box<dyn FnMut(Nanos) -> Rate<E> + Send>,
}

impl<E> std::fmt::Debug for ProxyExample<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyExample")
            .field("created", &self.rate.is_some())
            .finish()
    }
}

impl ProxyExample<Estimator> {
    /// The documented example: `Rate::new(1 s)` (4 × 1024 sketches seeded
    /// from `seed`), created at the first request with an appid.
    pub fn new(seed: u64) -> Self {
        Self::with_factory(move |now| Rate::new(Duration::from_secs(1), now, seed))
    }
}

impl<E: FrequencyEstimator> ProxyExample<E> {
    /// The example with another Rate, built at virtual time `now` on first
    /// use.
    pub fn with_factory(make: impl FnMut(Nanos) -> Rate<E> + Send + 'static) -> Self {
        ProxyExample {
            rate: None,
            make: Box::new(make),
        }
    }

    /// The global Rate, once created.
    pub fn rate(&self) -> Option<&Rate<E>> {
        self.rate.as_ref()
    }

    /// A request at `now` whose `appid` header has these raw bytes, if any.
    pub fn request(&mut self, appid: Option<&[u8]>, now: Nanos) -> Result<ProxyResponse, Fault> {
        let Some(appid) = usable_appid(appid) else {
            return Ok(passed(None));
        };
        let make = &mut self.make;
        let rate = self.rate.get_or_insert_with(|| make(now));
        proxy_request_filter(rate, appid, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::MILLI;
    use crate::model::estimator::ExactCounter;

    /// The rate-limited proxy example: the schedule of the pingora-limits write-up, times from the first request.
    #[test]
    fn schedule_is_exact() {
        let schedule: [(u64, Option<&[u8]>); 8] = [
            (0, Some(b"1")),
            (101, Some(b"1")),
            (201, Some(b"1")),
            (900, Some(b"2")),
            (1050, Some(b"2")),
            (1101, Some(b"1")),
            (1150, Some(b"1")),
            (1201, None),
        ];
        for seed in [0u64, 1, 2] {
            let mut proxy = ProxyExample::new(seed);
            let mut statuses = Vec::new();
            for (t, appid) in schedule {
                let r = proxy.request(appid, t * MILLI).unwrap();
                match r.status {
                    429 => {
                        assert_eq!(r.connection, Connection::Close);
                        assert_eq!(
                            r.headers,
                            vec![
                                ("X-Rate-Limit-Limit", "1".to_string()),
                                ("X-Rate-Limit-Remaining", "0".to_string()),
                                ("X-Rate-Limit-Reset", "1".to_string()),
                            ]
                        );
                    }
                    _ => {
                        assert_eq!(r.connection.as_str(), "keep-alive");
                        assert!(r.headers.is_empty());
                    }
                }
                statuses.push(r.status);
                if t == 1050 {
                    // appid 2's request flipped the shared window.
                    assert_eq!(proxy.rate().map(|r| r.last_reset_ms()), Some(1050));
                }
            }
            assert_eq!(statuses, vec![200, 429, 429, 200, 200, 200, 429, 200]);
        }
    }

    #[test]
    fn rate_is_created_lazily_at_the_first_appid_request() {
        let mut proxy = ProxyExample::with_factory(|now| {
            Rate::from_slots(
                Duration::from_secs(1),
                now,
                ExactCounter::new(),
                ExactCounter::new(),
            )
        });
        // No appid: not counted and the Lazy is not touched.
        let r = proxy.request(None, 10 * MILLI).unwrap();
        assert_eq!((r.status, r.observed), (200, None));
        assert!(proxy.rate().is_none());
        // Non-visible-ASCII header: to_str fails, treated as no appid.
        let r = proxy.request(Some(b"\xffid"), 20 * MILLI).unwrap();
        assert_eq!((r.status, r.observed), (200, None));
        assert!(proxy.rate().is_none());
        let r = proxy.request(Some(b"a b\t"), 500 * MILLI).unwrap();
        assert_eq!((r.status, r.observed), (200, Some(1)));
        assert_eq!(proxy.rate().map(|r| r.start()), Some(500 * MILLI));
        // 1400 ms is only 900 ms after creation: same window.
        let r = proxy.request(Some(b"a b\t"), 1400 * MILLI).unwrap();
        assert_eq!((r.status, r.observed), (429, Some(2)));
        assert_eq!(r.connection.as_str(), "close");
    }

    #[test]
    fn docs_claim_fails_for_a_single_key_only_when_alone() {
        // Alone, appid 2 at 900 and 1050 ms would still be in the first
        // window (created at 900): the second is limited.
        let mut proxy = ProxyExample::new(4);
        assert_eq!(proxy.request(Some(b"2"), 900 * MILLI).unwrap().status, 200);
        assert_eq!(proxy.request(Some(b"2"), 1050 * MILLI).unwrap().status, 429);
    }
}
