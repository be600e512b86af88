//! The limiter seam: [`Admit`] decides a request of weight `w` for key `k`
//! at virtual time `now`; [`KeyState`] is one key's state of a per-key
//! limiter, kept for every key by [`PerKey`] in a [`Keyed`] store, or shared
//! by all keys through [`Global`].
//!
//! The split follows governor (`gcra.rs` holds only the algorithm, a
//! `StateStore` holds one state per key): a model file implements the
//! upstream algorithm for one key, the store decides how keys map to state,
//! and the decision lab and `replay` see only `Box<dyn Admit + Send>` (candidates
//! run in parallel, each on its own thread at a time). A limiter of
//! your own plugs in by implementing [`Admit`] (or [`KeyState`] and wrapping
//! it in [`PerKey`]).

use crate::clock::Nanos;
use crate::error::Result;

/// What a limiter said to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Admitted (now or after `delay`).
    pub allowed: bool,
    /// How long an admitted request is held before it proceeds (0 for the
    /// limiters that admit or reject at once).
    pub delay: Nanos,
}

impl Decision {
    /// Admitted at once.
    pub const ALLOW: Decision = Decision {
        allowed: true,
        delay: 0,
    };
    /// Rejected.
    pub const DENY: Decision = Decision {
        allowed: false,
        delay: 0,
    };

    /// [`Decision::ALLOW`] or [`Decision::DENY`].
    ///
    /// # Examples
    /// ```
    /// use ratelab::model::Decision;
    /// assert_eq!(Decision::from_allowed(true), Decision::ALLOW);
    /// assert!(!Decision::from_allowed(false).allowed);
    /// ```
    pub fn from_allowed(allowed: bool) -> Self {
        if allowed {
            Self::ALLOW
        } else {
            Self::DENY
        }
    }
}

/// A limiter for many keys: decides each request as it arrives.
///
/// Keys are dense ids (`0, 1, 2, …` in order of first appearance), time is
/// virtual nanoseconds since the run's first event and never goes back.
/// A model never reads the wall clock.
///
/// # Examples
/// A limiter of your own: at most one request per key per second.
/// ```
/// use ratelab::clock::{Nanos, SECOND};
/// use ratelab::model::{Admit, Decision};
///
/// #[derive(Default)]
/// struct OnePerSecond { last: std::collections::HashMap<u32, Nanos> }
///
/// impl Admit for OnePerSecond {
///     fn admit(&mut self, key: u32, _w: u64, now: Nanos) -> ratelab::error::Result<Decision> {
///         let ok = self.last.get(&key).map_or(true, |&t| now - t >= SECOND);
///         if ok { self.last.insert(key, now); }
///         Ok(Decision::from_allowed(ok))
///     }
///     fn memory_bytes(&self, keys: u64) -> u64 { keys * 16 }
/// }
///
/// let mut l = OnePerSecond::default();
/// assert!(l.admit(7, 1, 0)?.allowed);
/// assert!(!l.admit(7, 1, SECOND / 2)?.allowed);
/// assert!(l.admit(7, 1, SECOND)?.allowed);
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub trait Admit {
    /// Decides a request of weight `w` (a weighted request is one decision)
    /// for `key` at `now`. An `Err` is a fault of the model (a reproduced
    /// panic, say) and stops the run.
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision>;

    /// Decides a batch of requests `(key, w, now)` in order, appending one
    /// decision per request to `out`: the same as calling [`Admit::admit`]
    /// on each (the default does exactly that). A model that pays per call
    /// (a child process behind a pipe, say) overrides it to decide the whole
    /// batch at once. The lab hands every candidate its requests this way.
    fn admit_batch(&mut self, reqs: &[(u32, u64, Nanos)], out: &mut Vec<Decision>) -> Result<()> {
        out.reserve(reqs.len());
        for &(key, w, now) in reqs {
            out.push(self.admit(key, w, now)?);
        }
        Ok(())
    }

    /// Memory the real library would hold after the run, in bytes, given
    /// the number of distinct keys seen (map overhead not counted).
    fn memory_bytes(&self, keys: u64) -> u64;

    /// Bytes the simulation itself spends on each key id below the largest
    /// it met, state or not: the slot of a vector indexed by key id
    /// ([`Keyed`]), 0 for a model that keeps no such vector (the default).
    /// A fleet's memory estimate charges it per replica over the key id
    /// range, which a few requests over a large key space reach.
    fn dense_slot_bytes(&self) -> u64 {
        0
    }

    /// True when a key's decisions depend only on that key's own requests
    /// (in their time order): no state, clock or capacity shared between
    /// keys. The decision lab then hands the limiter each batch grouped by
    /// key — each key's requests still in time order, but time going back
    /// from one key to the next — which walks per-key state in order instead
    /// of at random (several times faster on many keys). The default,
    /// `false`, always sees requests in time order; a sketch shared by all
    /// keys, a global clock (governor's) or an LRU over keys (nginx's zone)
    /// must keep it.
    ///
    /// # Examples
    /// ```
    /// use ratelab::model::x_time_rate::TokenBucket;
    /// use ratelab::model::{Admit, PerKey};
    /// let per_key = PerKey::new(|_| Ok(TokenBucket::new(10.0, 5)));
    /// assert!(per_key.keys_independent());
    /// ```
    fn keys_independent(&self) -> bool {
        false
    }

    /// True when the limiter wants each key's string (the trace's key, or
    /// a workload key's id in decimal) once, through [`Admit::name_keys`]:
    /// a child process that hashes keys as production does, say. The
    /// default, `false`, spares the caller building the strings.
    fn wants_key_names(&self) -> bool {
        false
    }

    /// The strings of the keys first seen in the requests the next
    /// [`Admit::admit_batch`] call brings, `(key id, string)`. Called only
    /// when [`Admit::wants_key_names`] said so; the default ignores them.
    fn name_keys(&mut self, _keys: &[(u32, String)]) -> Result<()> {
        Ok(())
    }

    /// True when the model answers [`Admit::clock_step`]: the decision lab
    /// then asks it before each request when it validates against a
    /// deployed limiter's log. The default, `false`.
    fn checks_clock_step(&self) -> bool {
        false
    }

    /// Whether this request's decision, on the state before it, sits at the
    /// model's clock granularity: it would change had the model's clock read
    /// one of its own ticks earlier or later. A deployed limiter whose clock
    /// ticks out of phase with the log's time stamps (nginx's
    /// `ngx_current_msec` against `$msec`) may decide such a request the
    /// other way, so a disagreement there is explained by the clocks, not
    /// by the model. `None`: the model has no such check (the default);
    /// see [`Admit::checks_clock_step`]. Called before
    /// [`admit`](Admit::admit) for the same request; changes nothing.
    ///
    /// # Examples
    /// ```
    /// use ratelab::clock::MILLI;
    /// use ratelab::model::nginx_limit_req::{NginxDelay, NginxLimitReq, NginxRate, NginxZone};
    /// use ratelab::model::Admit;
    /// // 1000r/s, no burst: one request a millisecond.
    /// let cfg = NginxLimitReq::new(NginxRate::PerSecond(1000), 0, NginxDelay::NoDelay)?;
    /// let mut zone = NginxZone::new(cfg, None)?;
    /// assert!(zone.checks_clock_step());
    /// assert_eq!(zone.clock_step(0, 1, 0), Some(false)); // a new key: no clock read
    /// zone.admit(0, 1, 0)?;
    /// // One ms later the excess is exactly 0: one ms earlier it would be 1000 > 0.
    /// assert_eq!(zone.clock_step(0, 1, MILLI), Some(true));
    /// // Ten ms later, one ms either way changes nothing.
    /// assert_eq!(zone.clock_step(0, 1, 10 * MILLI), Some(false));
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    fn clock_step(&self, _key: u32, _w: u64, _now: Nanos) -> Option<bool> {
        None
    }

    /// The run is over: a model that talks to something outside ratelab (a
    /// child process) checks that it ended cleanly, and reports a fault
    /// found only now (a line written after the last answer, say). The
    /// default has nothing to check.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// One key's state of a per-key limiter: the upstream algorithm for a
/// single key, with the size of the real library's per-key state.
///
/// # Examples
/// ```
/// use ratelab::clock::{Nanos, SECOND};
/// use ratelab::model::{Admit, Decision, KeyState, PerKey};
///
/// /// A fixed budget of `n` requests per key, never refilled.
/// struct Budget(u64);
/// impl KeyState for Budget {
///     const STATE_BYTES: u64 = 8;
///     fn admit(&mut self, w: u64, _now: Nanos) -> ratelab::error::Result<Decision> {
///         let ok = self.0 >= w;
///         if ok { self.0 -= w; }
///         Ok(Decision::from_allowed(ok))
///     }
/// }
///
/// let mut l = PerKey::new(|_now| Ok(Budget(2)));
/// assert!(l.admit(0, 2, 0)?.allowed);
/// assert!(!l.admit(0, 1, SECOND)?.allowed);
/// assert!(l.admit(1, 1, SECOND)?.allowed); // another key, its own budget
/// assert_eq!(l.memory_bytes(2), 16);
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub trait KeyState {
    /// Bytes of the real library's state for one key.
    const STATE_BYTES: u64;

    /// Decides a request of weight `w` at `now`.
    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision>;
}

/// Per-key state indexed by dense key id, created on a key's first request
/// (governor's `StateStore` idea, as a vector because ids are dense).
///
/// # Examples
/// ```
/// use ratelab::model::Keyed;
/// let mut k: Keyed<u32> = Keyed::default();
/// *k.get_or_try_insert_with(3, || Ok::<_, ()>(10)).unwrap() += 1;
/// assert_eq!(k.get(3), Some(&11));
/// assert_eq!(k.get(2), None);
/// assert_eq!(k.len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct Keyed<T> {
    slots: Vec<Option<T>>,
    len: usize,
}

impl<T> Default for Keyed<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Keyed<T> {
    /// `key`'s state, made by `make` on its first use.
    pub fn get_or_try_insert_with<E>(
        &mut self,
        key: u32,
        make: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<&mut T, E> {
        let k = key as usize;
        if k >= self.slots.len() {
            self.slots.resize_with(k + 1, || None);
        }
        let slot = &mut self.slots[k];
        if slot.is_none() {
            *slot = Some(make()?);
            self.len += 1;
        }
        match slot {
            Some(state) => Ok(state),
            None => unreachable!("the slot was filled above"),
        }
    }

    /// `key`'s state, if it has one.
    pub fn get(&self, key: u32) -> Option<&T> {
        self.slots.get(key as usize).and_then(Option::as_ref)
    }

    /// Keys with state.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No key has state yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Makes a key's state on its first request, at that request's time.
pub type MakeState<T> = Box<dyn Fn(Nanos) -> Result<T> + Send>;

/// A per-key limiter: one [`KeyState`] per key, in a [`Keyed`] store.
/// Memory is keys × [`KeyState::STATE_BYTES`].
pub struct PerKey<T> {
    store: Keyed<T>,
    make: MakeState<T>,
}

impl<T: KeyState> PerKey<T> {
    /// A limiter whose keys start as `make(now)` on their first request.
    pub fn new(make: impl Fn(Nanos) -> Result<T> + Send + 'static) -> Self {
        Self {
            store: Keyed::default(),
            make: Box::new(make),
        }
    }
}

impl<T: KeyState> Admit for PerKey<T> {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision> {
        let make = &self.make;
        self.store
            .get_or_try_insert_with(key, || make(now))?
            .admit(w, now)
    }

    fn memory_bytes(&self, keys: u64) -> u64 {
        keys * T::STATE_BYTES
    }

    fn dense_slot_bytes(&self) -> u64 {
        std::mem::size_of::<Option<T>>() as u64
    }

    /// One [`KeyState`] per key, made from the key's own first request:
    /// nothing is shared.
    fn keys_independent(&self) -> bool {
        true
    }
}

/// One instance for all keys (how tower's `RateLimit` is used): every
/// request, whatever its key, goes to the same state.
///
/// # Examples
/// ```
/// use ratelab::clock::Nanos;
/// use ratelab::model::{Admit, Decision, Global, KeyState};
/// struct Budget(u64);
/// impl KeyState for Budget {
///     const STATE_BYTES: u64 = 8;
///     fn admit(&mut self, w: u64, _now: Nanos) -> ratelab::error::Result<Decision> {
///         let ok = self.0 >= w;
///         if ok { self.0 -= w; }
///         Ok(Decision::from_allowed(ok))
///     }
/// }
/// let mut g = Global(Budget(1));
/// assert!(g.admit(0, 1, 0)?.allowed);
/// assert!(!g.admit(1, 1, 0)?.allowed); // key 1 shares key 0's budget
/// assert_eq!(g.memory_bytes(1000), 8);
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub struct Global<T>(pub T);

impl<T: KeyState> Admit for Global<T> {
    fn admit(&mut self, _key: u32, w: u64, now: Nanos) -> Result<Decision> {
        self.0.admit(w, now)
    }

    fn memory_bytes(&self, _keys: u64) -> u64 {
        T::STATE_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(u64);
    impl KeyState for Count {
        const STATE_BYTES: u64 = 8;
        fn admit(&mut self, w: u64, _now: Nanos) -> Result<Decision> {
            self.0 += w;
            Ok(Decision::from_allowed(self.0 <= 3))
        }
    }

    #[test]
    fn per_key_keeps_keys_apart_and_makes_state_once() {
        let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let m = made.clone();
        let mut l = PerKey::new(move |_| {
            m.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Count(0))
        });
        for _ in 0..3 {
            assert!(l.admit(5, 1, 0).unwrap().allowed);
        }
        assert!(!l.admit(5, 1, 0).unwrap().allowed);
        assert!(l.admit(0, 3, 0).unwrap().allowed);
        assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 2);
        assert_eq!(l.store.len(), 2);
    }

    #[test]
    fn a_failing_constructor_leaves_no_state() {
        let mut k: Keyed<u8> = Keyed::default();
        assert!(k.get_or_try_insert_with(4, || Err("no")).is_err());
        assert!(k.is_empty());
        assert_eq!(k.get(4), None);
    }
}
