//! Per-thread stripes of a shared figure: each thread writes its own copy, on cache
//! lines of its own, and a reader sums the copies.
//!
//! A counter every request adds to (the metrics' request table, the access log's buffer) is
//! one cache line that both worker threads of the 2-core machine write: every write takes the
//! line from the other core first (about a hundred nanoseconds on this machine's VM, and it
//! is not in any instruction count). With stripes a worker writes the line it already holds;
//! the reader (a `/metrics` scrape, the access log's flusher) takes the lines of every stripe
//! once.
//!
//! A thread is given a stripe on its first use, round robin over [`STRIPES`]: the first
//! threads to come (the runtime's workers) have one each. Threads past [`STRIPES`] share
//! stripes, which stays correct (a stripe's content is atomic or locked) and only costs what
//! one shared line costs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// How many stripes a figure has.
pub const STRIPES: usize = 16;

/// `T` on cache lines of its own (two lines: the adjacent-line prefetcher pairs them).
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct Padded<T>(pub T);

/// [`STRIPES`] copies of a `T`, each made on first use.
#[derive(Debug)]
pub struct Striped<T> {
    stripes: Box<[Padded<OnceLock<T>>]>,
}

impl<T> Default for Striped<T> {
    fn default() -> Self {
        Striped {
            stripes: (0..STRIPES).map(|_| Padded(OnceLock::new())).collect(),
        }
    }
}

impl<T> Striped<T> {
    /// The calling thread's copy, made by `make` if the stripe has none yet.
    pub fn mine(&self, make: impl FnOnce() -> T) -> &T {
        self.stripes[thread_stripe()].0.get_or_init(make)
    }

    /// The copies made so far.
    pub fn each(&self) -> impl Iterator<Item = &T> {
        self.stripes.iter().filter_map(|s| s.0.get())
    }
}

/// The calling thread's stripe.
pub fn thread_stripe() -> usize {
    // The metrics stripes' own numbering of threads (a stripe per thread, for any server).
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|s| *s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn sums_over_the_stripes_are_what_every_thread_added() {
        // more threads than stripes: some share a stripe, and nothing is lost
        let s: Striped<AtomicU64> = Striped::default();
        std::thread::scope(|scope| {
            for t in 0..(STRIPES as u64 + 5) {
                let s = &s;
                scope.spawn(move || {
                    for _ in 0..1000 {
                        s.mine(AtomicU64::default)
                            .fetch_add(t + 1, Ordering::Relaxed);
                    }
                });
            }
        });
        let total: u64 = s.each().map(|c| c.load(Ordering::Relaxed)).sum();
        let n = STRIPES as u64 + 5;
        assert_eq!(total, 1000 * n * (n + 1) / 2);
        assert_eq!(s.each().count(), STRIPES);
    }

    #[test]
    fn a_thread_keeps_its_stripe_and_copies_are_lines_apart() {
        let here = thread_stripe();
        assert!(here < STRIPES);
        assert_eq!(thread_stripe(), here);
        let other = std::thread::spawn(thread_stripe).join().unwrap();
        assert!(other < STRIPES);
        // two copies never share a line
        let s: Striped<u8> = Striped::default();
        let starts: Vec<usize> = s.stripes.iter().map(|p| p as *const _ as usize).collect();
        assert!(starts.iter().all(|a| a % 128 == 0), "{starts:?}");
        assert!(starts.windows(2).all(|w| w[1] - w[0] >= 128));
    }
}
