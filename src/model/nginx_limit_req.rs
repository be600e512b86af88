//! A faithful model of nginx's `ngx_http_limit_req_module` (`limit_req_zone`
//! / `limit_req`): a leaky bucket per key kept in thousandths of a request,
//! on nginx's millisecond clock.
//!
//! Source read: nginx/nginx at `3f6f782` (release-1.31.4 plus four commits;
//! the module last changed in `179c79c`, 2021), file
//! `src/http/modules/ngx_http_limit_req_module.c`, and for the clock and the
//! node size `src/core/ngx_times.c`, `src/core/ngx_rbtree.h`,
//! `src/core/ngx_slab.c`. Line numbers below are that file's.
//!
//! # Configuration (`ngx_http_limit_req_zone`, 832-960; `ngx_http_limit_req`, 963-1064)
//! * `rate=Nr/s` or `rate=Nr/m` ([`NginxRate`]): `N` must be `> 0` ("invalid
//!   rate"), stored as `ctx->rate = rate * 1000 / scale` (scale 1 or 60), an
//!   **integer division**: `1r/m` is 16 thousandths per second (0.016 r/s,
//!   not 0.01667), `7r/m` is 116. Without `rate=` nginx uses 1r/s.
//! * `burst=N`: must be `> 0` ("invalid burst value"), stored `× 1000`;
//!   without it the burst is 0. [`NginxLimitReq::new`] takes `burst = 0`
//!   for "no `burst=`".
//! * `delay=N` (must be `> 0`, stored `× 1000`) and `nodelay` (`delay =
//!   NGX_MAX_INT_T_VALUE / 1000`, then `× 1000`) set the same field, so the
//!   **last one on the line wins** ([`NginxDelay`]). Without either, the
//!   delay threshold is 0: every request with excess is delayed.
//!
//! # A request (`ngx_http_limit_req_lookup`, 404-532, with one `limit_req`)
//! `now = ngx_current_msec`, which `ngx_monotonic_time` (`ngx_times.c`)
//! makes `sec * 1000 + nsec / 1000000` of `CLOCK_MONOTONIC`: whole
//! milliseconds, truncated. The model reads virtual `now / 1 ms`.
//! * Known key (441-480): the node moves to the head of the zone's LRU queue;
//!   `ms = (ngx_msec_int_t) (now - lr->last)`, then `ms < -60000 → 1`, `ms <
//!   0 → 0`; `excess = lr->excess - ctx->rate * ms / 1000 + 1000` (unsigned
//!   arithmetic read back as signed), clamped at 0. If `excess > burst` the
//!   request is **rejected and the node is not updated** (`NGX_BUSY`
//!   returns before the stores). Otherwise `lr->excess = excess` and, **only
//!   if `ms != 0`, `lr->last = now`**.
//! * Unknown key (486-531): a node is made with `excess = 0`, `last = now`,
//!   and the request passes with excess 0. **The first request of a key is
//!   free**: it does not add the 1000 a later request adds, so a fresh key
//!   gets `burst + 1` requests at once (the classic "burst=5 lets 6
//!   through").
//! * Truncation: `ctx->rate * ms / 1000` drops the remainder, and because
//!   `last` moves to `now` anyway, less than a thousandth of a request per
//!   accepted request is lost; two requests in the same millisecond see `ms
//!   = 0` and do not move `last`.
//!
//! # Delay (`ngx_http_limit_req_account`, 535-606; handler 288-328)
//! An accepted request whose excess is above the delay threshold is held:
//! `delay = (excess - limit->delay) * 1000 / ctx->rate` milliseconds
//! (integer division, i.e. the time for the bucket to leak back down to the
//! threshold), then `ngx_add_timer(r->connection->write, delay)`. Excess at or
//! below the threshold passes at once. The model reports that delay in
//! [`Decision::delay`]. (`limit_req_dry_run` is not modelled.)
//!
//! # The zone (`ngx_http_limit_req_expire`, 632-695; lookup 488-505)
//! Nodes live in a shared-memory rbtree plus an LRU queue. Before a new
//! node is allocated, `expire(ctx, 1)` looks at the *least recently used*
//! nodes and frees up to two whose `|now - last| >= 60000` ms and whose
//! `excess - rate * ms / 1000 <= 0`; if the slab allocation still fails
//! (zone full), `expire(ctx, 0)` frees the oldest node unconditionally
//! (plus up to two stale ones) and retries. A freed key starts again with a
//! free first request. [`NginxZone`] keeps that LRU exactly, with the zone's
//! capacity given in nodes ([`nginx_zone_nodes`] estimates it from the zone
//! size). [`NginxNode`] is one key's node without the zone (it never
//! expires), for [`crate::model::PerKey`] and [`crate::model::Global`].
//!
//! # Weights
//! nginx has no weights. A request of weight `w` is modelled as `w`
//! requests in the same millisecond, all or nothing: it passes iff the
//! `w`-th would (the excess only grows within a millisecond, so that is the
//! last one's check), its delay is the `w`-th's, and a refused one changes
//! nothing but the LRU order (a refused nginx request moves its node to the
//! head too); a refused weighted request of an unknown key makes no node.
//! Weight 0 is an error.
//!
//! # Not modelled
//! Several `limit_req` directives on one location (the `count` field and
//! `lr->last = 0` of not-yet-accounted nodes); the event loop's cached
//! clock (requests handled in one loop iteration share `ngx_current_msec`);
//! the 65535-byte key limit; `dry_run`.

use crate::clock::{Nanos, MILLI};
use crate::error::{Error, Result};
use crate::model::{Admit, Decision, KeyState};

/// `NGX_MAX_INT_T_VALUE` on 64-bit platforms.
const NGX_MAX_INT_T_VALUE: u64 = i64::MAX as u64;

/// Bytes of one node: `offsetof(ngx_rbtree_node_t, color)` (key, left,
/// right, parent: 32) + `offsetof(ngx_http_limit_req_node_t, data)` (color,
/// dummy, len, padding, queue 16, last 8, excess 8, count 8: 48) + the key
/// (4 bytes for `$binary_remote_addr` over IPv4, 16 over IPv6): 84..96,
/// which the slab allocator rounds up to its 128-byte size class (sizes up
/// to half a page go to the next power of two). nginx's docs say the same:
/// "128 bytes on 64-bit platforms" for `$binary_remote_addr`.
pub const NGINX_NODE_BYTES: u64 = 128;

/// The zone's capacity in 128-byte nodes for a zone of `size_bytes` (the
/// `zone=name:size` parameter), an estimate: each 4096-byte page holds 32
/// nodes and costs one 24-byte `ngx_slab_page_t`; the pool header, the
/// `shctx` and the slot table are ignored. `10m` gives 81,440.
pub fn nginx_zone_nodes(size_bytes: u64) -> u64 {
    size_bytes / (4096 + 24) * (4096 / NGINX_NODE_BYTES)
}

/// `rate=` of `limit_req_zone`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NginxRate {
    /// `rate=Nr/s`.
    PerSecond(u64),
    /// `rate=Nr/m`.
    PerMinute(u64),
}

/// The `delay=` / `nodelay` parameter of `limit_req` (the last one given).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NginxDelay {
    /// Neither given: the threshold is 0, every request with excess waits.
    #[default]
    Default,
    /// `delay=N`: the first `N` excess requests pass at once.
    Delay(u64),
    /// `nodelay`: nothing waits.
    NoDelay,
}

/// A `limit_req_zone` + `limit_req` configuration, in nginx's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NginxLimitReq {
    /// `ctx->rate`: thousandths of a request per second.
    rate: u64,
    /// `limit->burst`: thousandths.
    burst: u64,
    /// `limit->delay`: thousandths.
    delay: u64,
}

/// One key's node: `last` (ms) and `excess` (thousandths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NginxState {
    /// `lr->last`: `ngx_current_msec` of the last accepted request that
    /// moved it.
    pub last: u64,
    /// `lr->excess`: requests over the rate, in thousandths.
    pub excess: u64,
}

/// What a request did to a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NginxOutcome {
    /// Accepted with this excess, held this many milliseconds.
    Accepted {
        /// The excess after the request (thousandths).
        excess: u64,
        /// `ngx_http_limit_req_account`'s delay, ms.
        delay_ms: u64,
    },
    /// `NGX_BUSY`: rejected (503 by default) with this excess.
    Rejected {
        /// The excess the request would have had.
        excess: u64,
    },
}

impl NginxOutcome {
    /// As a lab decision.
    pub fn decision(self) -> Decision {
        match self {
            Self::Accepted { delay_ms, .. } => Decision {
                allowed: true,
                delay: delay_ms.saturating_mul(MILLI),
            },
            Self::Rejected { .. } => Decision::DENY,
        }
    }
}

impl NginxLimitReq {
    /// `limit_req_zone ... rate=<rate>; limit_req ... burst=<burst> <delay>;`
    /// with `burst = 0` meaning no `burst=` parameter.
    ///
    /// # Errors
    /// A rate of 0 ("invalid rate", as nginx), `NginxDelay::Delay(0)`
    /// ("invalid delay value", as nginx), or values whose `× 1000` does not
    /// fit nginx's `ngx_int_t`.
    ///
    /// # Examples
    /// nginx's documented example `rate=1r/s burst=5`: a new key's first
    /// request is free, the next five are delayed by 1 s, 2 s, … 5 s, the
    /// seventh is rejected.
    /// ```
    /// use ratelab::clock::SECOND;
    /// use ratelab::model::nginx_limit_req::{NginxDelay, NginxLimitReq, NginxNode, NginxRate};
    /// use ratelab::model::KeyState;
    /// let cfg = NginxLimitReq::new(NginxRate::PerSecond(1), 5, NginxDelay::Default)?;
    /// let mut node = NginxNode::new(cfg);
    /// let delays: Vec<_> = (0..7).map(|_| node.admit(1, 0).unwrap()).collect();
    /// assert_eq!(delays[0].delay, 0);
    /// assert_eq!(delays[5].delay, 5 * SECOND);
    /// assert!(!delays[6].allowed);
    /// assert!(NginxLimitReq::new(NginxRate::PerMinute(0), 5, NginxDelay::NoDelay).is_err());
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn new(rate: NginxRate, burst: u64, delay: NginxDelay) -> Result<Self> {
        let (n, scale, unit) = match rate {
            NginxRate::PerSecond(n) => (n, 1, "r/s"),
            NginxRate::PerMinute(n) => (n, 60, "r/m"),
        };
        let thousand = |v: u64, what: &str| {
            v.checked_mul(1000)
                .filter(|&x| x <= NGX_MAX_INT_T_VALUE)
                .ok_or_else(|| {
                    Error::input(format!(
                        "nginx: {what} {v}: too large (× 1000 must fit ngx_int_t)"
                    ))
                })
        };
        if n == 0 {
            return Err(Error::input(format!(
                "nginx: rate 0{unit}: invalid rate (must be > 0)"
            )));
        }
        let rate = thousand(n, "rate")? / scale;
        let burst = thousand(burst, "burst")?;
        let delay = match delay {
            NginxDelay::Default => 0,
            NginxDelay::Delay(0) => {
                return Err(Error::input(
                    "nginx: delay 0: invalid delay value (must be > 0; omit delay= instead)",
                ))
            }
            NginxDelay::Delay(d) => thousand(d, "delay")?,
            NginxDelay::NoDelay => NGX_MAX_INT_T_VALUE / 1000 * 1000,
        };
        Ok(Self { rate, burst, delay })
    }

    /// `ctx->rate` (thousandths of a request per second).
    pub fn rate_milli(&self) -> u64 {
        self.rate
    }

    /// `limit->burst` (thousandths).
    pub fn burst_milli(&self) -> u64 {
        self.burst
    }

    /// `limit->delay` (thousandths).
    pub fn delay_milli(&self) -> u64 {
        self.delay
    }

    /// `ngx_current_msec` at virtual time `now`.
    pub fn now_ms(now: Nanos) -> u64 {
        now / MILLI
    }

    /// The leaky-bucket update of a known node (lookup 445-458): the excess
    /// this request would have, and the clamped `ms`.
    fn leak(&self, st: &NginxState, now_ms: u64) -> (u64, i64) {
        let mut ms = now_ms.wrapping_sub(st.last) as i64;
        if ms < -60000 {
            ms = 1;
        } else if ms < 0 {
            ms = 0;
        }
        let drained = self.rate.wrapping_mul(ms as u64) / 1000;
        let excess = st.excess.wrapping_sub(drained).wrapping_add(1000) as i64;
        (excess.max(0) as u64, ms)
    }

    /// `ngx_http_limit_req_account`'s delay for one limit, ms.
    pub fn delay_ms(&self, excess: u64) -> u64 {
        if excess <= self.delay {
            0
        } else {
            (excess - self.delay).wrapping_mul(1000) / self.rate
        }
    }

    /// One request of weight `w` (see the module docs) on a known node
    /// (`Some`, updated in place) or an unknown key (`None`; on acceptance
    /// the new node is returned).
    pub fn request(
        &self,
        node: Option<&mut NginxState>,
        w: u64,
        now_ms: u64,
    ) -> (NginxOutcome, Option<NginxState>) {
        let extra = w.saturating_sub(1).saturating_mul(1000);
        match node {
            Some(st) => {
                let (first, ms) = self.leak(st, now_ms);
                let excess = first.saturating_add(extra);
                if first > self.burst || excess > self.burst {
                    return (NginxOutcome::Rejected { excess }, None);
                }
                st.excess = excess;
                if ms != 0 {
                    st.last = now_ms;
                }
                (self.accepted(excess), None)
            }
            None => {
                if extra > self.burst {
                    return (NginxOutcome::Rejected { excess: extra }, None);
                }
                let st = NginxState {
                    last: now_ms,
                    excess: extra,
                };
                (self.accepted(extra), Some(st))
            }
        }
    }

    fn accepted(&self, excess: u64) -> NginxOutcome {
        NginxOutcome::Accepted {
            excess,
            delay_ms: self.delay_ms(excess),
        }
    }

    /// Whether the decision on a known node at `now_ms` would change with
    /// `ngx_current_msec` one millisecond earlier or later: the request's
    /// excess is within one millisecond's leak (`rate / 1000`) of the burst.
    /// nginx reads `CLOCK_MONOTONIC` in whole ms while `$msec` is wall-clock
    /// time, so the two grids are out of phase and nginx's `ms` may be one
    /// more or less than the log's.
    pub fn at_clock_step(&self, st: &NginxState, w: u64, now_ms: u64) -> bool {
        let extra = w.saturating_sub(1).saturating_mul(1000);
        let rejects = |now: u64| {
            let (first, _) = self.leak(st, now);
            first > self.burst || first.saturating_add(extra) > self.burst
        };
        let here = rejects(now_ms);
        (now_ms > st.last && rejects(now_ms - 1) != here) || rejects(now_ms + 1) != here
    }

    /// `expire`'s test for a node at the LRU tail (672-683): stale enough to
    /// free.
    fn expirable(&self, st: &NginxState, now_ms: u64) -> bool {
        let ms = (now_ms.wrapping_sub(st.last) as i64).unsigned_abs();
        if ms < 60000 {
            return false;
        }
        let excess = st.excess.wrapping_sub(self.rate.wrapping_mul(ms) / 1000) as i64;
        excess <= 0
    }
}

fn check_weight(w: u64) -> Result<()> {
    if w == 0 {
        Err(Error::input(
            "nginx: weight 0: a request is weight >= 1 (nginx has no weights)",
        ))
    } else {
        Ok(())
    }
}

/// One key's node, never expired (no zone): for [`crate::model::PerKey`] and
/// [`crate::model::Global`].
///
/// # Examples
///
/// `limit_req_zone rate=1r/s; limit_req burst=5 nodelay;`: six requests at once
/// pass (excess 0 to 5), the seventh is rejected; a second later the excess
/// has drained by one.
///
/// ```
/// use ratelab::model::nginx_limit_req::{NginxDelay, NginxLimitReq, NginxNode, NginxOutcome, NginxRate};
///
/// let cfg = NginxLimitReq::new(NginxRate::PerSecond(1), 5, NginxDelay::NoDelay).unwrap();
/// let mut node = NginxNode::new(cfg);
/// let passed = (0..7)
///     .filter(|_| matches!(node.request(1, 0), NginxOutcome::Accepted { .. }))
///     .count();
/// assert_eq!(passed, 6);
/// assert!(matches!(node.request(1, 1_000_000_000), NginxOutcome::Accepted { excess: 5000, .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NginxNode {
    cfg: NginxLimitReq,
    state: Option<NginxState>,
}

impl NginxNode {
    /// A key with no node yet (its first request makes one).
    pub fn new(cfg: NginxLimitReq) -> Self {
        Self { cfg, state: None }
    }

    /// The node, once made.
    pub fn state(&self) -> Option<NginxState> {
        self.state
    }

    /// One request of weight `w` at `now`.
    pub fn request(&mut self, w: u64, now: Nanos) -> NginxOutcome {
        let now_ms = NginxLimitReq::now_ms(now);
        let (out, made) = self.cfg.request(self.state.as_mut(), w, now_ms);
        if made.is_some() {
            self.state = made;
        }
        out
    }
}

impl KeyState for NginxNode {
    /// [`NGINX_NODE_BYTES`]: rbtree node head + `ngx_http_limit_req_node_t`
    /// + a 4..16-byte key, in the 128-byte slab class.
    const STATE_BYTES: u64 = NGINX_NODE_BYTES;

    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision> {
        check_weight(w)?;
        Ok(self.request(w, now).decision())
    }
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Slot {
    st: NginxState,
    /// Towards the head (more recent).
    prev: u32,
    /// Towards the tail (older).
    next: u32,
}

/// A whole `limit_req_zone`: every key's node, the LRU queue, expiry of
/// stale nodes on insertion and forced eviction when the zone is full.
#[derive(Clone, Debug)]
pub struct NginxZone {
    cfg: NginxLimitReq,
    max_nodes: Option<u64>,
    slots: Vec<Option<Slot>>,
    head: u32,
    tail: u32,
    len: u64,
}

impl NginxZone {
    /// A zone holding at most `max_nodes` nodes (`None`: never full; see
    /// [`nginx_zone_nodes`]).
    ///
    /// # Errors
    /// `max_nodes = Some(0)`: nginx refuses zones smaller than 8 pages.
    pub fn new(cfg: NginxLimitReq, max_nodes: Option<u64>) -> Result<Self> {
        if max_nodes == Some(0) {
            return Err(Error::input(
                "nginx: max_nodes 0: the zone must hold at least one node",
            ));
        }
        Ok(Self {
            cfg,
            max_nodes,
            slots: Vec::new(),
            head: NIL,
            tail: NIL,
            len: 0,
        })
    }

    /// Nodes in the zone.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The zone is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `key`'s node, if it has one.
    pub fn node(&self, key: u32) -> Option<NginxState> {
        self.slots.get(key as usize).and_then(|s| s.map(|s| s.st))
    }

    fn slot(&self, k: u32) -> Option<&Slot> {
        self.slots.get(k as usize).and_then(Option::as_ref)
    }

    fn slot_mut(&mut self, k: u32) -> Option<&mut Slot> {
        self.slots.get_mut(k as usize).and_then(Option::as_mut)
    }

    fn unlink(&mut self, k: u32) {
        let Some(&Slot { prev, next, .. }) = self.slot(k) else {
            return;
        };
        match self.slot_mut(prev) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.slot_mut(next) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
    }

    fn push_head(&mut self, k: u32) {
        let old = self.head;
        if let Some(s) = self.slot_mut(k) {
            s.prev = NIL;
            s.next = old;
        }
        match self.slot_mut(old) {
            Some(o) => o.prev = k,
            None => self.tail = k,
        }
        self.head = k;
    }

    /// `ngx_http_limit_req_expire(ctx, n)`.
    fn expire(&mut self, mut n: u32, now_ms: u64) {
        while n < 3 {
            let k = self.tail;
            let Some(&Slot { st, .. }) = self.slot(k) else {
                return;
            };
            let check = n != 0;
            n += 1;
            if check && !self.cfg.expirable(&st, now_ms) {
                return;
            }
            self.unlink(k);
            self.slots[k as usize] = None;
            self.len -= 1;
        }
    }

    /// One request of weight `w` for `key` at `now`.
    pub fn request(&mut self, key: u32, w: u64, now: Nanos) -> NginxOutcome {
        let now_ms = NginxLimitReq::now_ms(now);
        let cfg = self.cfg;
        if let Some(slot) = self.slot_mut(key) {
            let (out, _) = cfg.request(Some(&mut slot.st), w, now_ms);
            self.unlink(key);
            self.push_head(key);
            return out;
        }
        let (out, made) = cfg.request(None, w, now_ms);
        let Some(st) = made else {
            return out;
        };
        self.expire(1, now_ms);
        if self.max_nodes.is_some_and(|m| self.len >= m) {
            self.expire(0, now_ms);
        }
        let k = key as usize;
        if k >= self.slots.len() {
            self.slots.resize(k + 1, None);
        }
        self.slots[k] = Some(Slot {
            st,
            prev: NIL,
            next: NIL,
        });
        self.len += 1;
        self.push_head(key);
        out
    }
}

impl Admit for NginxZone {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision> {
        check_weight(w)?;
        Ok(self.request(key, w, now).decision())
    }

    fn checks_clock_step(&self) -> bool {
        true
    }

    /// A known key's excess within one millisecond's leak of the burst
    /// ([`NginxLimitReq::at_clock_step`]); a new key's first request reads
    /// no elapsed time.
    fn clock_step(&self, key: u32, w: u64, now: Nanos) -> Option<bool> {
        Some(
            self.node(key)
                .is_some_and(|st| self.cfg.at_clock_step(&st, w, NginxLimitReq::now_ms(now))),
        )
    }

    /// The nodes alive at the end × [`NGINX_NODE_BYTES`] (the zone's
    /// configured size is what nginx reserves).
    fn memory_bytes(&self, _keys: u64) -> u64 {
        self.len * NGINX_NODE_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SECOND;

    const MS: Nanos = MILLI;

    fn cfg(rate: NginxRate, burst: u64, delay: NginxDelay) -> NginxLimitReq {
        match NginxLimitReq::new(rate, burst, delay) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    fn accepted(o: NginxOutcome) -> bool {
        matches!(o, NginxOutcome::Accepted { .. })
    }

    #[test]
    fn config_units_and_errors() {
        let c = cfg(NginxRate::PerSecond(10), 5, NginxDelay::Default);
        assert_eq!(
            (c.rate_milli(), c.burst_milli(), c.delay_milli()),
            (10_000, 5_000, 0)
        );
        // Integer division of r/m: 1r/m is 16, 7r/m is 116.
        assert_eq!(
            cfg(NginxRate::PerMinute(1), 0, NginxDelay::Default).rate_milli(),
            16
        );
        assert_eq!(
            cfg(NginxRate::PerMinute(7), 0, NginxDelay::Default).rate_milli(),
            116
        );
        assert_eq!(
            cfg(NginxRate::PerSecond(1), 9, NginxDelay::Delay(3)).delay_milli(),
            3000
        );
        assert_eq!(
            cfg(NginxRate::PerSecond(1), 9, NginxDelay::NoDelay).delay_milli(),
            9_223_372_036_854_775_000
        );
        let e = NginxLimitReq::new(NginxRate::PerSecond(0), 0, NginxDelay::Default).unwrap_err();
        assert!(e.message().contains("rate 0r/s"), "{e:?}");
        let e = NginxLimitReq::new(NginxRate::PerSecond(1), 0, NginxDelay::Delay(0)).unwrap_err();
        assert!(e.message().contains("delay 0"), "{e:?}");
        let e = NginxLimitReq::new(NginxRate::PerSecond(u64::MAX / 10), 0, NginxDelay::Default)
            .unwrap_err();
        assert!(e.message().contains("rate"), "{e:?}");
        assert!(
            NginxLimitReq::new(NginxRate::PerSecond(1), u64::MAX, NginxDelay::Default).is_err()
        );
        let mut n = NginxNode::new(c);
        assert!(n.admit(0, 0).is_err());
        assert!(NginxZone::new(c, Some(0)).is_err());
    }

    /// nginx's documentation (limit_req): "rate=1r/s ... burst=5": excess
    /// requests are delayed, beyond the burst they are rejected; the first
    /// request of a fresh key is free, so 6 pass and the 7th is rejected.
    #[test]
    fn documented_burst_delays_then_rejects() {
        let mut n = NginxNode::new(cfg(NginxRate::PerSecond(1), 5, NginxDelay::Default));
        let got: Vec<_> = (0..8).map(|_| n.request(1, 0)).collect();
        for (i, o) in got.iter().take(6).enumerate() {
            assert_eq!(
                *o,
                NginxOutcome::Accepted {
                    excess: 1000 * i as u64,
                    delay_ms: 1000 * i as u64
                }
            );
        }
        assert_eq!(got[6], NginxOutcome::Rejected { excess: 6000 });
        assert_eq!(got[7], NginxOutcome::Rejected { excess: 6000 });
        // Rejections did not touch the node.
        assert_eq!(
            n.state(),
            Some(NginxState {
                last: 0,
                excess: 5000
            })
        );
        // One second later one request's worth has leaked out.
        assert!(accepted(n.request(1, SECOND)));
        assert!(!accepted(n.request(1, SECOND)));
    }

    /// The docs' `nodelay`: the burst passes at once, then the rate.
    #[test]
    fn nodelay_passes_burst_at_once() {
        let mut n = NginxNode::new(cfg(NginxRate::PerSecond(1), 5, NginxDelay::NoDelay));
        let d: Vec<_> = (0..7).map(|_| n.admit(1, 0).unwrap()).collect();
        assert!(d[..6].iter().all(|d| d.allowed && d.delay == 0));
        assert!(!d[6].allowed);
    }

    /// The docs' two-stage example `burst=12 delay=8`: the first 8 excess
    /// requests pass at once, the next 4 are delayed, beyond is rejected.
    #[test]
    fn two_stage_delay() {
        let mut n = NginxNode::new(cfg(NginxRate::PerSecond(5), 12, NginxDelay::Delay(8)));
        let d: Vec<_> = (0..14).map(|_| n.admit(1, 0).unwrap()).collect();
        // Requests 0..=8 have excess 0..=8000 <= 8000: no delay.
        assert!(d[..9].iter().all(|d| d.allowed && d.delay == 0));
        // Excess 9000..12000: (excess - 8000) * 1000 / 5000 ms.
        let delays: Vec<_> = d[9..13].iter().map(|d| d.delay / MS).collect();
        assert_eq!(delays, [200, 400, 600, 800]);
        assert!(!d[13].allowed);
    }

    /// Without burst (0), requests closer than 1/rate are rejected; with
    /// 10r/s the 100 ms spacing passes.
    #[test]
    fn no_burst_spacing() {
        let mut n = NginxNode::new(cfg(NginxRate::PerSecond(10), 0, NginxDelay::Default));
        assert!(accepted(n.request(1, 0)));
        // The free first request left excess 0; the second at 0 is 1000 > 0.
        assert!(!accepted(n.request(1, 0)));
        assert!(!accepted(n.request(1, 99 * MS)));
        assert!(accepted(n.request(1, 100 * MS)));
        assert!(accepted(n.request(1, 200 * MS)));
        assert!(!accepted(n.request(1, 250 * MS)));
    }

    /// Millisecond clock: 0.9 ms later is the same ms, no leak, `last` kept.
    #[test]
    fn same_millisecond() {
        let mut n = NginxNode::new(cfg(NginxRate::PerSecond(1000), 1, NginxDelay::NoDelay));
        assert!(accepted(n.request(1, 0)));
        assert!(accepted(n.request(1, 900_000))); // excess 1000
        assert!(!accepted(n.request(1, 999_999))); // still ms 0
        assert!(accepted(n.request(1, MS))); // one ms leaks 1 request
        assert_eq!(
            n.state(),
            Some(NginxState {
                last: 1,
                excess: 1000
            })
        );
    }

    /// 1r/m is 16/1000 per second: after exactly 60 s a request with no
    /// burst is still rejected (60000 × 16 / 1000 = 960 < 1000); it takes
    /// 62.5 s.
    #[test]
    fn per_minute_truncation() {
        let mut n = NginxNode::new(cfg(NginxRate::PerMinute(1), 0, NginxDelay::Default));
        assert!(accepted(n.request(1, 0)));
        // The first request was free (excess 0): the second needs the
        // bucket to hold 0 after adding 1000, i.e. 62.5 s of leaking.
        assert_eq!(
            n.request(1, 60 * SECOND),
            NginxOutcome::Rejected { excess: 40 }
        );
        assert!(!accepted(n.request(1, 62_499 * MS)));
        assert!(accepted(n.request(1, 62_500 * MS)));
    }

    /// The remainder of `rate * ms / 1000` is lost when `last` moves:
    /// 1r/m requests every 10 ms each drain 0 (16 × 10 / 1000).
    #[test]
    fn remainder_lost_when_last_moves() {
        let c = cfg(NginxRate::PerMinute(1), 100, NginxDelay::NoDelay);
        let mut n = NginxNode::new(c);
        for i in 0..50 {
            assert!(accepted(n.request(1, i * 10 * MS)));
        }
        assert_eq!(n.state().map(|s| s.excess), Some(49_000));
        // One request after 490 ms would have drained 7 with an unmoved last.
        let mut m = NginxNode::new(c);
        m.request(1, 0);
        m.request(1, 0);
        assert_eq!(
            m.request(1, 490 * MS),
            NginxOutcome::Accepted {
                excess: 1993,
                delay_ms: 0
            }
        );
    }

    /// Weighted requests: all or nothing, as w requests in one ms.
    #[test]
    fn weights_all_or_nothing() {
        let c = cfg(NginxRate::PerSecond(1), 3, NginxDelay::NoDelay);
        let mut n = NginxNode::new(c);
        // A new key: w = 5 would need excess 4000 > 3000.
        assert!(!n.admit(5, 0).unwrap().allowed);
        assert_eq!(n.state(), None);
        assert!(n.admit(4, 0).unwrap().allowed); // excess 0 + 3000
        assert!(!n.admit(1, 0).unwrap().allowed);
        assert!(n.admit(2, 2 * SECOND).unwrap().allowed); // 3000 - 2000 + 2000
        assert_eq!(n.state().map(|s| s.excess), Some(3000));
    }

    /// Stale nodes at the LRU tail are freed when another key is inserted,
    /// and a freed key gets a free first request again.
    #[test]
    fn zone_expires_stale_nodes() {
        let c = cfg(NginxRate::PerMinute(1), 0, NginxDelay::Default);
        let mut z = NginxZone::new(c, None).unwrap();
        assert!(accepted(z.request(0, 1, 0)));
        // Without expiry key 0 would be rejected at 61 s (see above).
        let mut kept = NginxNode::new(c);
        kept.request(1, 0);
        assert!(!accepted(kept.request(1, 61 * SECOND)));
        // Key 1 arriving at 61 s frees key 0's node (|ms| >= 60000 and
        // 0 - 16 * 61000 / 1000 <= 0).
        assert!(accepted(z.request(1, 1, 61 * SECOND)));
        assert_eq!(z.node(0), None);
        assert_eq!(z.len(), 1);
        assert!(accepted(z.request(0, 1, 61 * SECOND)));
        // Key 2 at 120 s: the LRU tail (key 1) has been idle 59 s only, so
        // expire stops there and nothing is freed.
        assert!(accepted(z.request(2, 1, 120 * SECOND)));
        assert!(z.node(1).is_some());
        assert_eq!(z.len(), 3);
    }

    /// A full zone evicts the least recently used node by force.
    #[test]
    fn zone_full_evicts_lru() {
        let c = cfg(NginxRate::PerSecond(1), 0, NginxDelay::Default);
        let mut z = NginxZone::new(c, Some(2)).unwrap();
        assert!(accepted(z.request(0, 1, 0)));
        assert!(accepted(z.request(1, 1, 0)));
        // Key 0 used again: key 1 is now the LRU tail.
        assert!(!accepted(z.request(0, 1, 0)));
        assert!(accepted(z.request(2, 1, 0)));
        assert_eq!(z.len(), 2);
        assert!(z.node(1).is_none());
        assert!(z.node(0).is_some());
        // Evicted key 1 comes back with a free first request.
        assert!(accepted(z.request(1, 1, 0)));
        assert!(z.node(0).is_none());
        assert_eq!(z.memory_bytes(3), 2 * NGINX_NODE_BYTES);
    }

    #[test]
    fn zone_matches_nodes_without_pressure() {
        let c = cfg(NginxRate::PerSecond(2), 3, NginxDelay::Delay(1));
        let mut z = NginxZone::new(c, None).unwrap();
        let mut nodes = [NginxNode::new(c), NginxNode::new(c)];
        for i in 0..200u64 {
            let key = (i % 3 == 0) as u32;
            let t = i * 97 * MS;
            let a = z.admit(key, 1 + i % 2, t).unwrap();
            let b = nodes[key as usize].admit(1 + i % 2, t).unwrap();
            assert_eq!(a, b, "request {i}");
        }
    }

    #[test]
    fn zone_size_estimate() {
        assert_eq!(nginx_zone_nodes(10 << 20), 81_440);
        assert_eq!(nginx_zone_nodes(1 << 20), 8_128);
    }
}
