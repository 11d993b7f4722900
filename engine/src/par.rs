//! The engine's parallelism, in one place: rayon's pool, or (under Miri) plain scoped
//! threads. rayon's work-stealing deques use integer-to-pointer casts that Miri rejects under
//! `-Zmiri-strict-provenance`; the engine's own unsafe code is what Miri must check, and it
//! runs the same under either, still on several threads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

#[cfg(not(miri))]
use rayon::prelude::*;

/// How many threads parallel work is split for.
pub(crate) fn threads() -> usize {
    #[cfg(not(miri))]
    return rayon::current_num_threads();
    #[cfg(miri)]
    return 2;
}

/// Runs both closures, in parallel where possible, and returns both results.
pub(crate) fn join<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    #[cfg(not(miri))]
    return rayon::join(a, b);
    #[cfg(miri)]
    return std::thread::scope(|s| {
        let a = s.spawn(a);
        let b = b();
        (a.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), b)
    });
}

/// `f` of every item, in the items' order, computed in parallel.
pub(crate) fn map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    #[cfg(not(miri))]
    return items.into_par_iter().map(&f).collect();
    #[cfg(miri)]
    return match heaviest_first(items, |_| 1, |t| Ok::<R, ()>(f(t))) {
        Ok(out) => out,
        Err(_) => unreachable!("jobs never fail"),
    };
}

/// Calls `f` on every item in parallel.
pub(crate) fn for_each<T: Send>(items: Vec<T>, f: impl Fn(T) + Sync) {
    #[cfg(not(miri))]
    items.into_par_iter().for_each(&f);
    #[cfg(miri)]
    map(items, f);
}

/// Runs `worker` on `n` threads at once and waits for all of them.
fn on_workers(n: usize, worker: &(impl Fn() + Sync)) {
    #[cfg(not(miri))]
    rayon::scope(|s| {
        for _ in 0..n {
            s.spawn(|_| worker());
        }
    });
    #[cfg(miri)]
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(worker);
        }
    });
}

/// Runs `jobs` on the thread pool, heaviest first by `weight`, each worker taking the next
/// job as soon as it is done with one (rayon's splitting of a list in halves could queue the
/// two heaviest jobs on one thread while another idles). Stops taking jobs after the first
/// error. Returns the results in the jobs' order, or the first error (in that order) of the
/// jobs that ran.
pub(crate) fn heaviest_first<J: Send, T: Send, E: Send>(
    jobs: Vec<J>,
    weight: impl Fn(&J) -> usize,
    run: impl Fn(J) -> Result<T, E> + Sync,
) -> Result<Vec<T>, Option<E>> {
    let n = jobs.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(weight(&jobs[i])));
    let queue: Vec<Mutex<Option<J>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let outs: Vec<Mutex<Option<Result<T, E>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let workers = threads().clamp(1, n.max(1));
    on_workers(workers, &|| loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        if k >= n || failed.load(Ordering::Relaxed) {
            break;
        }
        let i = order[k];
        let job = queue[i].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(job) = job {
            let out = run(job);
            if out.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            *outs[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
        }
    });
    let mut done = Vec::with_capacity(n);
    let mut missing = false;
    for o in outs {
        match o.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(t)) => done.push(t),
            Some(Err(e)) => return Err(Some(e)),
            None => missing = true,
        }
    }
    if missing {
        return Err(None);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_jobs_order_and_errors_stop_the_rest() {
        let out = heaviest_first((0..50).collect(), |&j: &i32| (j % 7) as usize, |j| Ok::<_, ()>(j * 2)).unwrap();
        assert_eq!(out, (0..50).map(|j| j * 2).collect::<Vec<_>>());
        let err = heaviest_first((0..50).collect(), |_: &i32| 1, |j| if j == 3 { Err(j) } else { Ok(j) });
        assert_eq!(err, Err(Some(3)));
        let none: Result<Vec<i32>, Option<()>> = heaviest_first(Vec::new(), |_: &i32| 0, Ok);
        assert_eq!(none, Ok(Vec::new()));
    }
}
