//! An ordered parallel map with bounded look-ahead, for decoding blocks in the order a consumer
//! needs them while other threads decode the next ones.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::thread::{Scope, ScopedJoinHandle};

/// The most threads nc3pack starts for one operation: the command line's `-j` accepts
/// `1..=MAX_THREADS`, and library functions treat a larger count as this one (and 0 as 1).
///
/// ```
/// assert_eq!(nc3pack::__private::bound_threads(usize::MAX), nc3pack::MAX_THREADS);
/// assert_eq!(nc3pack::__private::bound_threads(0), 1);
/// ```
pub const MAX_THREADS: usize = 1024;

/// `threads` bounded to `1..=`[`MAX_THREADS`].
///
/// ```
/// assert_eq!(nc3pack::__private::bound_threads(8), 8);
/// ```
pub fn bound_threads(threads: usize) -> usize {
    threads.clamp(1, MAX_THREADS)
}

/// A thread could not be started: the system's limit on threads, processes or memory was
/// reached. Functions that start threads return it (wrapped in [`crate::Error::Thread`]) instead
/// of panicking.
///
/// ```
/// let e = nc3pack::__private::SpawnError {
///     role: "block decoder",
///     source: std::io::Error::from(std::io::ErrorKind::WouldBlock),
/// };
/// assert!(e.to_string().starts_with("cannot start a thread (block decoder): "));
/// ```
#[derive(Debug, thiserror::Error)]
#[error("cannot start a thread ({role}): {source}")]
pub struct SpawnError {
    /// What the thread was for.
    pub role: &'static str,
    /// The operating system's error.
    pub source: std::io::Error,
}

/// Why [`ordered_map`] stopped on its own: a worker thread could not start, or one panicked
/// (a bug in what it ran, reported as an error instead of a hang or a panic).
///
/// ```
/// use nc3pack::__private::WorkerError;
/// assert_eq!(WorkerError::Panicked.to_string(), "a worker thread panicked");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// A worker thread could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// A worker thread panicked.
    #[error("a worker thread panicked")]
    Panicked,
}

/// Starts a scoped thread, returning an error instead of panicking when the system refuses.
pub(crate) fn spawn_scoped<'scope, 'env, T: Send + 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    role: &'static str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> Result<ScopedJoinHandle<'scope, T>, SpawnError> {
    std::thread::Builder::new()
        .spawn_scoped(scope, f)
        .map_err(|source| SpawnError { role, source })
}

struct State<R> {
    next: usize,
    ready: HashMap<usize, R>,
    in_flight: usize,
    stop: bool,
    /// A worker panicked: its item will never be ready.
    panicked: bool,
}

/// Runs `f` over `items` on `threads` threads (bounded by [`bound_threads`]) and hands the
/// results to `consume` in item order. At most `ahead` results are computed but not yet consumed
/// at any time, so memory stays bounded. If `consume` returns an error, the workers stop and the
/// error is returned. If `f` panics, the workers stop and the items before the one it panicked
/// on are still consumed in order.
///
/// # Errors
///
/// The first error `consume` returns; [`WorkerError::Spawn`] (converted into `E`) when a worker
/// thread cannot be started, and then `consume` is not called at all; [`WorkerError::Panicked`]
/// when `f` panicked.
///
/// ```
/// use nc3pack::__private::WorkerError;
/// let items: Vec<u32> = (0..100).collect();
/// let mut seen = Vec::new();
/// nc3pack::__private::ordered_map(&items, 2, 4, |&x| x * 2, |i, r| {
///     seen.push((i, r));
///     Ok::<(), WorkerError>(())
/// }).unwrap();
/// assert_eq!(seen, (0..100).map(|i| (i as usize, i * 2)).collect::<Vec<_>>());
/// ```
pub fn ordered_map<T: Sync, R: Send, E: From<WorkerError>>(
    items: &[T],
    threads: usize,
    ahead: usize,
    f: impl Fn(&T) -> R + Sync,
    mut consume: impl FnMut(usize, R) -> Result<(), E>,
) -> Result<(), E> {
    let ahead = ahead.max(1);
    let state = Mutex::new(State {
        next: 0,
        ready: HashMap::new(),
        in_flight: 0,
        stop: false,
        panicked: false,
    });
    let cv = Condvar::new();
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    std::thread::scope(|s| {
        for _ in 0..bound_threads(threads) {
            let started = spawn_scoped(s, "worker", || loop {
                let i = {
                    let mut st = lock();
                    while !st.stop && st.next < items.len() && st.in_flight >= ahead {
                        st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
                    }
                    if st.stop || st.next >= items.len() {
                        return;
                    }
                    st.next += 1;
                    st.in_flight += 1;
                    st.next - 1
                };
                // A panic is caught so that the consumer, waiting for this item, stops.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&items[i])));
                match r {
                    Ok(r) => {
                        lock().ready.insert(i, r);
                    }
                    Err(_) => {
                        let mut st = lock();
                        st.panicked = true;
                        st.stop = true;
                    }
                }
                cv.notify_all();
            });
            if let Err(e) = started {
                // The workers already started stop at their next item.
                lock().stop = true;
                cv.notify_all();
                return Err(WorkerError::Spawn(e).into());
            }
        }
        let mut result = Ok(());
        for i in 0..items.len() {
            let r = {
                let mut st = lock();
                loop {
                    if let Some(r) = st.ready.remove(&i) {
                        st.in_flight -= 1;
                        break Some(r);
                    }
                    if st.panicked {
                        break None;
                    }
                    st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
                }
            };
            cv.notify_all();
            let Some(r) = r else {
                result = Err(WorkerError::Panicked.into());
                break;
            };
            if let Err(e) = consume(i, r) {
                result = Err(e);
                break;
            }
        }
        lock().stop = true;
        cv.notify_all();
        result
    })
}

#[cfg(test)]
mod tests {
    #[derive(Debug, PartialEq)]
    enum Stop {
        Stop,
        Spawn,
    }

    impl From<super::WorkerError> for Stop {
        fn from(e: super::WorkerError) -> Self {
            match e {
                super::WorkerError::Spawn(_) => Stop::Spawn,
                super::WorkerError::Panicked => panic!("a worker panicked"),
            }
        }
    }

    #[test]
    fn a_panicking_worker_is_an_error_not_a_hang() {
        // Run in a thread of its own, so that a hang fails the test instead of stalling it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let items: Vec<u32> = (0..100).collect();
            let mut seen = 0;
            let r = super::ordered_map(
                &items,
                2,
                4,
                |&x| {
                    assert_ne!(x, 7, "deliberate panic in a worker");
                    x
                },
                |_, _| {
                    seen += 1;
                    Ok::<(), super::WorkerError>(())
                },
            );
            let _ = tx.send((r, seen));
        });
        let (r, seen) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("ordered_map hung after a worker panicked");
        assert!(matches!(r, Err(super::WorkerError::Panicked)), "{r:?}");
        assert_eq!(seen, 7, "items before the panic are consumed, none after");
    }

    #[test]
    fn stops_on_consumer_error() {
        let items: Vec<u32> = (0..1000).collect();
        let mut n = 0;
        let r = super::ordered_map(
            &items,
            2,
            3,
            |&x| x,
            |_, _| {
                n += 1;
                if n == 10 {
                    Err(Stop::Stop)
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Err(Stop::Stop));
        assert_eq!(n, 10);
    }
}
