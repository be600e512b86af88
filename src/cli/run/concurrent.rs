//! Runs a list of jobs concurrently on the rayon pool but hands their
//! results on in list order, so a caller that writes and prints each result
//! behaves, byte for byte, as if the jobs had run one after another.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Computes `compute(item)` for every item on the current rayon pool (each
/// job may use the pool for its own parallel work: it nests), and calls
/// `consume(item, result)` on the calling thread in list order, each as soon
/// as it and all the items before it are done.
///
/// Jobs start in the order of `start` (indices into `items`; the caller
/// puts the longest first so no core idles at the end); with a one-thread
/// pool they run one at a time in that order. The first error in list
/// order, from `compute` or `consume`, is returned: every item before it
/// was consumed, none after it; jobs not yet started are skipped and the
/// results of jobs still running are dropped. A panic in a job is a panic
/// here too, once the jobs already running have ended.
pub fn in_file_order<T, P, F, G>(
    items: &[T],
    start: &[usize],
    compute: F,
    mut consume: G,
) -> Result<()>
where
    T: Sync,
    P: Send,
    F: Fn(&T) -> Result<P> + Sync,
    G: FnMut(&T, P) -> Result<()>,
{
    let n = items.len();
    if start.len() != n || (0..n).any(|i| !start.contains(&i)) {
        return Err(Error::internal(
            "in_file_order: the start order is not a permutation of the items",
        ));
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<P>)>();
    std::thread::scope(|threads| {
        let (next, stop, compute) = (&next, &stop, &compute);
        threads.spawn(move || {
            rayon::scope(|jobs| {
                for _ in 0..n {
                    let tx = tx.clone();
                    // Each job takes the next index in start order when it
                    // starts, whatever order rayon starts the jobs in.
                    jobs.spawn(move |_| {
                        let i = start[next.fetch_add(1, Ordering::Relaxed)];
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let _ = tx.send((i, compute(&items[i])));
                    });
                }
            });
        });
        let mut ready: Vec<Option<Result<P>>> = (0..n).map(|_| None).collect();
        let mut outcome = Ok(());
        'items: for want in 0..n {
            while ready[want].is_none() {
                match rx.recv() {
                    Ok((i, result)) => ready[i] = Some(result),
                    // Every sender is gone without this result: a job
                    // panicked; the scope re-raises it.
                    Err(_) => break 'items,
                }
            }
            let result = ready[want].take().and_then(|r| match r {
                Ok(p) => consume(&items[want], p).err(),
                Err(e) => Some(e),
            });
            if let Some(e) = result {
                outcome = Err(e);
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        drop(rx);
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_list_order_whatever_the_start_order() {
        let items: Vec<u64> = (0..40).collect();
        let start: Vec<usize> = (0..40).rev().collect();
        let mut seen = Vec::new();
        in_file_order(
            &items,
            &start,
            |x| Ok(x * 10),
            |_, y| {
                seen.push(y);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, (0..40).map(|x| x * 10).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_error_in_list_order_wins_and_nothing_after_it_is_consumed() {
        let items: Vec<u64> = (0..20).collect();
        let start: Vec<usize> = (0..20).rev().collect();
        let mut seen = Vec::new();
        let err = in_file_order(
            &items,
            &start,
            |&x| {
                if x == 7 || x == 15 {
                    Err(Error::input(format!("item {x}")))
                } else {
                    Ok(x)
                }
            },
            |_, y| {
                seen.push(y);
                Ok(())
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("item 7"), "{err}");
        assert_eq!(seen, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn a_start_order_that_is_not_a_permutation_is_refused() {
        let r = in_file_order(&[1, 2], &[0, 0], |x| Ok(*x), |_, _| Ok(()));
        assert!(r.is_err());
    }
}
