//! Running a handful of uneven jobs on the thread pool.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

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
    let workers = rayon::current_num_threads().clamp(1, n.max(1));
    rayon::scope(|s| {
        for _ in 0..workers {
            s.spawn(|_| loop {
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
