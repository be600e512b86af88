//! The book's `MultiLimiter` (seeds/go-time-rate-token-bucket.zh.txt, the
//! "Concurrency in Go" rate-limiting section): several `x/time/rate`
//! limiters combined so that a caller waits on each in turn.
//!
//! What the Go code does, and this module reproduces:
//! * `RateLimiter` is an interface with `Wait(ctx) error` and
//!   `Limit() rate.Limit`; a `multiLimiter` implements it too, so multis nest
//!   (the disk-and-network example nests `apiLimit`, itself a multi, inside per-call multis).
//! * `MultiLimiter(limiters...)` sorts the slice with `sort.Slice` by
//!   `Limit()` ascending (most restrictive first). [`go_sort_slice`] is a
//!   port of Go's `sort.Slice` (`pdqsort_func`, Go 1.19+, from
//!   `sort/zsortfunc.go`): for at most 12 elements that is a plain insertion
//!   sort, which is stable, so equal limits keep their argument order; above
//!   12 the pattern-defeating quicksort is *not* stable and the port
//!   reproduces its exact permutation. (Go 1.8-1.18 used a quicksort whose
//!   gap-6 Shell pass made even 7-12 elements unstable; not modelled.)
//! * `Wait` calls each limiter's `Wait(ctx)` in sorted order and stops at the
//!   first error; tokens already taken from earlier limiters are *not*
//!   returned. Each inner `Wait` starts when the previous one returned, so
//!   with one context the time left before its deadline shrinks.
//! * `Limit()` is `limiters[0].Limit()`: an empty multi panics there (index
//!   out of range), so does sorting two or more limiters when one of them is
//!   an empty multi; the model returns [`MultiError::Empty`] instead.
//!
//! Limiters live in a [`LimiterPool`] (an arena) so that one limiter can be
//! shared by several multis, as `apiLimit` is in the disk-and-network example, and so that the
//! discrete-event engine (`crate::sim::des`) can walk a multi's inner waits
//! one at a time with other callers interleaving between them.

use super::x_time_rate::{Limit, TokenBucket, TokenBucketError};
use std::fmt;

/// A limiter in a [`LimiterPool`]: a token bucket or a multi.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// An `x/time/rate` limiter, by index.
    Bucket(usize),
    /// A `multiLimiter`, by index.
    Multi(usize),
}

/// Errors of this module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiError {
    /// `Limit()` of a multi without limiters (Go: index out of range panic).
    Empty,
    /// A node that is not in this pool.
    UnknownNode(Node),
    /// An inner `Wait` failed (the multi returns that error unchanged).
    Wait(TokenBucketError),
}

impl fmt::Display for MultiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "runtime error: index out of range [0] with length 0"),
            Self::UnknownNode(n) => write!(f, "unknown limiter {n:?}"),
            Self::Wait(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for MultiError {}

impl From<TokenBucketError> for MultiError {
    fn from(e: TokenBucketError) -> Self {
        Self::Wait(e)
    }
}

/// The arena holding every limiter of a scenario. Multis can only refer to
/// nodes created before them, so the graph has no cycles.
///
/// # Examples
///
/// The book's `MultiLimiter(Per(2, 1s) b1, Per(10, 1min) b10)` waited on by one
/// caller twice.
///
/// ```
/// use ratelab::model::multi::LimiterPool;
/// use ratelab::model::x_time_rate::{per, TokenBucket};
///
/// let s = 1_000_000_000i64;
/// let mut pool = LimiterPool::new();
/// let second = pool.add_bucket(TokenBucket::new(per(2, s).unwrap(), 1));
/// let minute = pool.add_bucket(TokenBucket::new(per(10, 60 * s).unwrap(), 10));
/// let api = pool.multi_limiter(vec![second, minute]).unwrap();
/// assert_eq!(pool.wait(api, 0, None).unwrap(), 0);
/// assert_eq!(pool.wait(api, 0, None).unwrap(), s / 2); // the per-second bucket refills
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LimiterPool {
    buckets: Vec<TokenBucket>,
    /// Each multi's limiters, already in sorted (wait) order.
    multis: Vec<Vec<Node>>,
}

impl LimiterPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an `x/time/rate` limiter.
    pub fn add_bucket(&mut self, bucket: TokenBucket) -> Node {
        self.buckets.push(bucket);
        Node::Bucket(self.buckets.len() - 1)
    }

    /// The book's `MultiLimiter(limiters...)`: sorts by `Limit()` ascending
    /// with Go's `sort.Slice` and keeps that order.
    pub fn multi_limiter(&mut self, limiters: Vec<Node>) -> Result<Node, MultiError> {
        for &n in &limiters {
            self.check(n)?;
        }
        let mut keyed = Vec::with_capacity(limiters.len());
        if limiters.len() >= 2 {
            // Every element is compared at least once, so any Limit() panic
            // in Go is certain: report it.
            for &n in &limiters {
                keyed.push((self.limit(n)?, n));
            }
        } else {
            keyed.extend(limiters.iter().map(|&n| (0.0, n)));
        }
        go_sort_slice(&mut keyed, |a, b| a.0 < b.0);
        self.multis
            .push(keyed.into_iter().map(|(_, n)| n).collect());
        Ok(Node::Multi(self.multis.len() - 1))
    }

    fn check(&self, node: Node) -> Result<(), MultiError> {
        let ok = match node {
            Node::Bucket(i) => i < self.buckets.len(),
            Node::Multi(i) => i < self.multis.len(),
        };
        if ok {
            Ok(())
        } else {
            Err(MultiError::UnknownNode(node))
        }
    }

    /// The token bucket at `index`.
    pub fn bucket(&self, index: usize) -> Option<&TokenBucket> {
        self.buckets.get(index)
    }

    /// The token bucket at `index`, mutably.
    pub fn bucket_mut(&mut self, index: usize) -> Option<&mut TokenBucket> {
        self.buckets.get_mut(index)
    }

    /// A multi's limiters in wait order (a bucket has none).
    pub fn children(&self, node: Node) -> Result<&[Node], MultiError> {
        match node {
            Node::Bucket(i) => self
                .buckets
                .get(i)
                .map(|_| &[][..])
                .ok_or(MultiError::UnknownNode(node)),
            Node::Multi(i) => self
                .multis
                .get(i)
                .map(Vec::as_slice)
                .ok_or(MultiError::UnknownNode(node)),
        }
    }

    /// `RateLimiter.Limit()`: a bucket's limit, or a multi's first limiter's
    /// limit (recursively).
    pub fn limit(&self, node: Node) -> Result<Limit, MultiError> {
        let mut node = node;
        loop {
            match node {
                Node::Bucket(i) => {
                    return self
                        .buckets
                        .get(i)
                        .map(TokenBucket::limit)
                        .ok_or(MultiError::UnknownNode(node))
                }
                Node::Multi(_) => {
                    node = *self.children(node)?.first().ok_or(MultiError::Empty)?;
                }
            }
        }
    }

    /// The token buckets a `Wait` on `node` waits on, in order (a multi's
    /// `Wait` is exactly the sequence of its leaves' `Wait`s).
    pub fn leaves(&self, node: Node) -> Result<Vec<usize>, MultiError> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n {
                Node::Bucket(i) => {
                    self.check(n)?;
                    out.push(i);
                }
                Node::Multi(_) => stack.extend(self.children(n)?.iter().rev()),
            }
        }
        Ok(out)
    }

    /// `RateLimiter.Wait(ctx)` by a single caller starting at `now_ns`, with
    /// an optional absolute deadline: each inner `Wait` starts when the
    /// previous one returned. Returns the time the whole `Wait` returns.
    /// Use `crate::sim::des` when other callers interleave.
    pub fn wait(
        &mut self,
        node: Node,
        now_ns: i64,
        deadline_ns: Option<i64>,
    ) -> Result<i64, MultiError> {
        let mut t = now_ns;
        for leaf in self.leaves(node)? {
            let bucket = self
                .buckets
                .get_mut(leaf)
                .ok_or(MultiError::UnknownNode(Node::Bucket(leaf)))?;
            let delay = bucket.wait_n(t, 1, deadline_ns)?;
            t = t.saturating_add(delay);
        }
        Ok(t)
    }
}

/// The book's `RateLimiter` interface (`Wait(ctx) error`, `Limit()`), with
/// explicit virtual time: `wait` returns the time at which `Wait` returns.
pub trait RateLimiter {
    /// `Wait(ctx)` at `now_ns` with an optional absolute deadline.
    fn wait(&mut self, now_ns: i64, deadline_ns: Option<i64>) -> Result<i64, MultiError>;
    /// `Limit()`.
    fn limit(&self) -> Result<Limit, MultiError>;
}

impl RateLimiter for TokenBucket {
    fn wait(&mut self, now_ns: i64, deadline_ns: Option<i64>) -> Result<i64, MultiError> {
        let delay = self.wait_n(now_ns, 1, deadline_ns)?;
        Ok(now_ns.saturating_add(delay))
    }

    fn limit(&self) -> Result<Limit, MultiError> {
        Ok(TokenBucket::limit(self))
    }
}

/// A node of a pool seen through the [`RateLimiter`] interface.
#[derive(Debug)]
pub struct PoolLimiter<'a> {
    /// The pool holding the node.
    pub pool: &'a mut LimiterPool,
    /// The limiter.
    pub node: Node,
}

impl RateLimiter for PoolLimiter<'_> {
    fn wait(&mut self, now_ns: i64, deadline_ns: Option<i64>) -> Result<i64, MultiError> {
        self.pool.wait(self.node, now_ns, deadline_ns)
    }

    fn limit(&self) -> Result<Limit, MultiError> {
        self.pool.limit(self.node)
    }
}

/// Go's `sort.Slice(x, less)` (Go 1.19+, `pdqsort_func` in
/// `sort/zsortfunc.go`), ported so that the resulting permutation is the
/// same for any `less`, including ties and NaN limits.
pub fn go_sort_slice<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    let limit = (usize::BITS - n.leading_zeros()) as usize;
    let mut s = GoSorter { data, less: &less };
    s.pdqsort(0, n, limit);
}

struct GoSorter<'a, T, F: Fn(&T, &T) -> bool> {
    data: &'a mut [T],
    less: &'a F,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

impl<T, F: Fn(&T, &T) -> bool> GoSorter<'_, T, F> {
    fn less(&self, i: usize, j: usize) -> bool {
        (self.less)(&self.data[i], &self.data[j])
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.data.swap(i, j);
    }

    fn insertion_sort(&mut self, a: usize, b: usize) {
        for i in a + 1..b {
            let mut j = i;
            while j > a && self.less(j, j - 1) {
                self.swap(j, j - 1);
                j -= 1;
            }
        }
    }

    fn sift_down(&mut self, lo: usize, hi: usize, first: usize) {
        let mut root = lo;
        loop {
            let mut child = 2 * root + 1;
            if child >= hi {
                break;
            }
            if child + 1 < hi && self.less(first + child, first + child + 1) {
                child += 1;
            }
            if !self.less(first + root, first + child) {
                return;
            }
            self.swap(first + root, first + child);
            root = child;
        }
    }

    fn heap_sort(&mut self, a: usize, b: usize) {
        let first = a;
        let hi = b - a;
        if hi == 0 {
            return;
        }
        for i in (0..=(hi - 1) / 2).rev() {
            self.sift_down(i, hi, first);
        }
        for i in (0..hi).rev() {
            self.swap(first, first + i);
            self.sift_down(0, i, first);
        }
    }

    fn pdqsort(&mut self, mut a: usize, mut b: usize, mut limit: usize) {
        const MAX_INSERTION: usize = 12;
        let mut was_balanced = true;
        let mut was_partitioned = true;
        loop {
            let length = b - a;
            if length <= MAX_INSERTION {
                self.insertion_sort(a, b);
                return;
            }
            if limit == 0 {
                self.heap_sort(a, b);
                return;
            }
            if !was_balanced {
                self.break_patterns(a, b);
                limit -= 1;
            }
            let (mut pivot, mut hint) = self.choose_pivot(a, b);
            if hint == Hint::Decreasing {
                self.reverse_range(a, b);
                pivot = (b - 1) - (pivot - a);
                hint = Hint::Increasing;
            }
            if was_balanced
                && was_partitioned
                && hint == Hint::Increasing
                && self.partial_insertion_sort(a, b)
            {
                return;
            }
            if a > 0 && !self.less(a - 1, pivot) {
                a = self.partition_equal(a, b, pivot);
                continue;
            }
            let (mid, already) = self.partition(a, b, pivot);
            was_partitioned = already;
            let (left_len, right_len) = (mid - a, b - mid);
            let balance_threshold = length / 8;
            if left_len < right_len {
                was_balanced = left_len >= balance_threshold;
                self.pdqsort(a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right_len >= balance_threshold;
                self.pdqsort(mid + 1, b, limit);
                b = mid;
            }
        }
    }

    fn partition(&mut self, a: usize, b: usize, pivot: usize) -> (usize, bool) {
        self.swap(a, pivot);
        // i, j inclusive; j may step below i (to a) — use isize.
        let (mut i, mut j) = (a as isize + 1, b as isize - 1);
        while i <= j && self.less(i as usize, a) {
            i += 1;
        }
        while i <= j && !self.less(j as usize, a) {
            j -= 1;
        }
        if i > j {
            self.swap(j as usize, a);
            return (j as usize, true);
        }
        self.swap(i as usize, j as usize);
        i += 1;
        j -= 1;
        loop {
            while i <= j && self.less(i as usize, a) {
                i += 1;
            }
            while i <= j && !self.less(j as usize, a) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i as usize, j as usize);
            i += 1;
            j -= 1;
        }
        self.swap(j as usize, a);
        (j as usize, false)
    }

    fn partition_equal(&mut self, a: usize, b: usize, pivot: usize) -> usize {
        self.swap(a, pivot);
        let (mut i, mut j) = (a as isize + 1, b as isize - 1);
        loop {
            while i <= j && !self.less(a, i as usize) {
                i += 1;
            }
            while i <= j && self.less(a, j as usize) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i as usize, j as usize);
            i += 1;
            j -= 1;
        }
        i as usize
    }

    fn partial_insertion_sort(&mut self, a: usize, b: usize) -> bool {
        const MAX_STEPS: usize = 5;
        const SHORTEST_SHIFTING: usize = 50;
        let mut i = a + 1;
        for _ in 0..MAX_STEPS {
            while i < b && !self.less(i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            self.swap(i, i - 1);
            if i - a >= 2 {
                let mut j = i - 1;
                while j >= 1 {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                    j -= 1;
                }
            }
            if b - i >= 2 {
                for j in i + 1..b {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                }
            }
        }
        false
    }

    fn break_patterns(&mut self, a: usize, b: usize) {
        let length = b - a;
        if length >= 8 {
            let mut random = length as u64;
            let modulus = 1u64 << (u64::BITS - (length as u64).leading_zeros());
            let start = a + (length / 4) * 2 - 1;
            for idx in start..=start + 2 {
                random ^= random << 13;
                random ^= random >> 17;
                random ^= random << 5;
                let mut other = (random & (modulus - 1)) as usize;
                if other >= length {
                    other -= length;
                }
                self.swap(idx, a + other);
            }
        }
    }

    fn choose_pivot(&mut self, a: usize, b: usize) -> (usize, Hint) {
        const SHORTEST_NINTHER: usize = 50;
        const MAX_SWAPS: usize = 4 * 3;
        let l = b - a;
        let mut swaps = 0;
        let mut i = a + l / 4;
        let mut j = a + l / 4 * 2;
        let mut k = a + l / 4 * 3;
        if l >= 8 {
            if l >= SHORTEST_NINTHER {
                i = self.median(i - 1, i, i + 1, &mut swaps);
                j = self.median(j - 1, j, j + 1, &mut swaps);
                k = self.median(k - 1, k, k + 1, &mut swaps);
            }
            j = self.median(i, j, k, &mut swaps);
        }
        match swaps {
            0 => (j, Hint::Increasing),
            MAX_SWAPS => (j, Hint::Decreasing),
            _ => (j, Hint::Unknown),
        }
    }

    fn order2(&self, a: usize, b: usize, swaps: &mut usize) -> (usize, usize) {
        if self.less(b, a) {
            *swaps += 1;
            (b, a)
        } else {
            (a, b)
        }
    }

    fn median(&self, a: usize, b: usize, c: usize, swaps: &mut usize) -> usize {
        let (a, b) = self.order2(a, b, swaps);
        let (b, _c) = self.order2(b, c, swaps);
        let (_a, b) = self.order2(a, b, swaps);
        b
    }

    fn reverse_range(&mut self, a: usize, b: usize) {
        let (mut i, mut j) = (a, b - 1);
        while i < j {
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::x_time_rate::{per, TokenBucket};

    const S: i64 = 1_000_000_000;

    fn bucket(pool: &mut LimiterPool, limit: Result<Limit, TokenBucketError>, burst: i64) -> Node {
        pool.add_bucket(TokenBucket::new(limit.unwrap_or(f64::NAN), burst))
    }

    #[test]
    fn sorts_ascending_and_limit_is_the_first() {
        let mut pool = LimiterPool::new();
        let second = bucket(&mut pool, per(2, S), 1);
        let minute = bucket(&mut pool, per(10, 60 * S), 10);
        let m = pool.multi_limiter(vec![second, minute]);
        assert!(m.is_ok());
        let m = m.unwrap_or(second);
        assert_eq!(pool.children(m).ok(), Some(&[minute, second][..]));
        assert_eq!(pool.limit(m), Ok(1.0 / 6.0));
        assert_eq!(pool.leaves(m), Ok(vec![1, 0]));
    }

    #[test]
    fn empty_multi_limit_errors_but_wait_passes() {
        let mut pool = LimiterPool::new();
        let empty = pool.multi_limiter(vec![]).unwrap_or(Node::Multi(99));
        assert_eq!(pool.limit(empty), Err(MultiError::Empty));
        assert_eq!(pool.wait(empty, 5, None), Ok(5));
        let b = bucket(&mut pool, Ok(1.0), 1);
        assert_eq!(pool.multi_limiter(vec![b, empty]), Err(MultiError::Empty));
        // One element: no comparison, so no panic in Go either.
        let single = pool.multi_limiter(vec![empty]);
        assert!(single.is_ok());
        assert_eq!(
            pool.multi_limiter(vec![Node::Bucket(7)]),
            Err(MultiError::UnknownNode(Node::Bucket(7)))
        );
    }

    /// The MultiLimiter API example: MultiLimiter(Per(2,1s) b1, Per(10,1min) b10), 20 callers at t=0,
    /// each waiting in turn with nobody interleaving inside a Wait (the
    /// interleaved version is in `sim::des`): 0, 0.5, ..., 4.5 s, then 6 s,
    /// 12 s, ..., 60 s.
    #[test]
    fn sequential_callers() {
        let mut pool = LimiterPool::new();
        let second = bucket(&mut pool, per(2, S), 1);
        let minute = bucket(&mut pool, per(10, 60 * S), 10);
        let m = pool.multi_limiter(vec![second, minute]).unwrap_or(second);
        let got: Vec<i64> = (0..20)
            .map(|_| pool.wait(m, 0, None).unwrap_or(-1))
            .collect();
        let mut want: Vec<i64> = (0..10).map(|i| i * S / 2).collect();
        want.extend((1..=10).map(|i| i * 6 * S));
        assert_eq!(got, want);
    }

    #[test]
    fn wait_stops_at_first_error_keeping_tokens_taken() {
        let mut pool = LimiterPool::new();
        let slow = bucket(&mut pool, Ok(1.0), 1);
        let fast = bucket(&mut pool, Ok(10.0), 1);
        let m = pool.multi_limiter(vec![fast, slow]).unwrap_or(slow);
        assert_eq!(pool.wait(m, 0, None), Ok(0));
        // The slow bucket needs 1 s; the deadline is 0.5 s away.
        let e = pool.wait(m, 0, Some(S / 2));
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("rate: Wait(n=1) would exceed context deadline".to_string())
        );
        // The fast bucket was not touched (the slow one failed first).
        assert_eq!(pool.bucket(1).map(|b| b.tokens_at(0)), Some(0.0));
    }

    #[test]
    fn nested_multis_wait_on_leaves_in_order() {
        let mut pool = LimiterPool::new();
        let a = bucket(&mut pool, per(2, S), 2);
        let b = bucket(&mut pool, per(10, 60 * S), 10);
        let api = pool.multi_limiter(vec![a, b]).unwrap_or(a);
        let disk = bucket(&mut pool, Ok(1.0), 1);
        let disk_multi = pool.multi_limiter(vec![disk]).unwrap_or(disk);
        let read = pool.multi_limiter(vec![api, disk_multi]).unwrap_or(a);
        assert_eq!(pool.leaves(read), Ok(vec![1, 0, 2]));
        let mut as_trait = PoolLimiter {
            pool: &mut pool,
            node: read,
        };
        assert_eq!(as_trait.limit(), Ok(1.0 / 6.0));
        assert_eq!(as_trait.wait(0, None), Ok(0));
        assert_eq!(as_trait.wait(0, None), Ok(S));
    }

    #[test]
    fn go_sort_is_stable_up_to_twelve() {
        let mut v: Vec<(i32, usize)> = [3, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3]
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i))
            .collect();
        go_sort_slice(&mut v, |a, b| a.0 < b.0);
        let idx: Vec<usize> = v.iter().map(|p| p.1).collect();
        assert_eq!(idx, vec![1, 4, 7, 10, 3, 6, 9, 0, 2, 5, 8, 11]);
    }

    #[test]
    fn go_sort_sorts_large_inputs() {
        let mut x: u64 = 88172645463325252;
        for n in [13usize, 50, 51, 100, 1000] {
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % 37
                })
                .collect();
            go_sort_slice(&mut v, |a, b| a < b);
            assert!(v.windows(2).all(|w| w[0] <= w[1]), "n={n}");
            let mut d: Vec<u64> = (0..n as u64).rev().collect();
            go_sort_slice(&mut d, |a, b| a < b);
            assert!(d.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
