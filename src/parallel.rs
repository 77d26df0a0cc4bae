//! An ordered parallel map with bounded look-ahead, for decoding blocks in the order a consumer
//! needs them while other threads decode the next ones; and the process's pool of reading
//! threads, started when a read first needs it, which readers share.

use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{Scope, ScopedJoinHandle};

/// The most threads nc3pack starts for one operation: the command line's `-j` accepts
/// `1..=MAX_THREADS`, and library functions treat a larger count as this one (and 0 as 1).
///
/// ```
/// assert_eq!(nc3pack::testing::bound_threads(usize::MAX), nc3pack::MAX_THREADS);
/// assert_eq!(nc3pack::testing::bound_threads(0), 1);
/// ```
pub const MAX_THREADS: usize = 1024;

/// `threads` bounded to `1..=`[`MAX_THREADS`].
///
/// ```
/// assert_eq!(nc3pack::testing::bound_threads(8), 8);
/// ```
pub fn bound_threads(threads: usize) -> usize {
    threads.clamp(1, MAX_THREADS)
}

/// A thread could not be started: the system's limit on threads, processes or memory was
/// reached. Functions that start threads return it (wrapped in [`crate::Error::Thread`]) instead
/// of panicking.
///
/// ```
/// let e = nc3pack::testing::SpawnError {
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
/// use nc3pack::testing::WorkerError;
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

/// The machine's cores (as [`std::thread::available_parallelism`] says, bounded by
/// [`bound_threads`]), looked up once per process: the lookup reads several files (cgroup
/// limits), too slow to repeat on every open.
pub(crate) fn default_threads() -> usize {
    static CORES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    match CORES.load(Ordering::Relaxed) {
        0 => {
            let n = bound_threads(std::thread::available_parallelism().map_or(1, |n| n.get()));
            CORES.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// The id of this process, as [`std::process::id`] says, without a system call each time:
/// looked up once, and again in a child of `fork()` (a handler registered with
/// `pthread_atfork` forgets it there). Readers ask on every read whether they are still in the
/// process that opened the archive; a system call per read was a third of nccopy's time on an
/// archive of many small records.
pub(crate) fn process_id() -> u32 {
    use std::sync::atomic::AtomicU32;
    static PID: AtomicU32 = AtomicU32::new(0);
    static ATFORK: std::sync::Once = std::sync::Once::new();
    extern "C" fn forget() {
        PID.store(0, Ordering::Relaxed);
    }
    match PID.load(Ordering::Relaxed) {
        0 => {
            // Registered before the id is kept, so that a fork after this call is seen. If it
            // cannot be registered, the id is not kept: asked for each time.
            ATFORK.call_once(|| {
                // SAFETY: `forget` only stores to an atomic, safe in a child of fork().
                if unsafe { libc::pthread_atfork(None, None, Some(forget)) } != 0 {
                    PID.store(u32::MAX, Ordering::Relaxed);
                }
            });
            let pid = std::process::id();
            if PID.load(Ordering::Relaxed) != u32::MAX {
                PID.store(pid, Ordering::Relaxed);
            }
            pid
        }
        u32::MAX => std::process::id(),
        pid => pid,
    }
}

/// A job for the [`pool`]'s threads.
enum Job {
    /// Help with a [`HelperWork`] run of work, if it is still open.
    Help(Arc<HelperWork>),
    /// Run this.
    Run(Box<dyn FnOnce() + Send>),
}

/// Work shared by a calling thread and the pool's helpers ([`with_helpers`]).
struct HelperWork {
    /// The work, borrowed from the calling thread's stack: a helper calls it only while
    /// `state.open`, registered in `state.running`, and the calling thread does not return
    /// (and so the borrow does not end) before it has closed `state` and `running` is 0.
    work: *const (dyn Fn() + Sync + 'static),
    state: Mutex<SharedState>,
    done: Condvar,
}

struct SharedState {
    open: bool,
    running: usize,
    panicked: bool,
}

// SAFETY: `work` points to a `Fn + Sync` that outlives every call made through it (see
// `HelperWork::work`); the rest is Send + Sync.
unsafe impl Send for HelperWork {}
// SAFETY: as for Send.
unsafe impl Sync for HelperWork {}

impl HelperWork {
    fn lock(&self) -> std::sync::MutexGuard<'_, SharedState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A helper's part: runs the work if the calling thread has not closed it yet.
    fn help(&self) {
        {
            let mut st = self.lock();
            if !st.open {
                return;
            }
            st.running += 1;
        }
        // SAFETY: open, and counted in `running`: the calling thread waits for this call.
        let work = unsafe { &*self.work };
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).is_ok();
        let mut st = self.lock();
        st.running -= 1;
        st.panicked |= !ok;
        drop(st);
        self.done.notify_all();
    }
}

/// The pool of one process: its job queue, and the process it was started in.
struct Pool {
    pid: u32,
    jobs: Mutex<std::collections::VecDeque<Job>>,
    ready: Condvar,
    /// Threads started (set once they are).
    threads: std::sync::atomic::AtomicUsize,
}

impl Pool {
    fn push(&self, job: Job) {
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(job);
        self.ready.notify_one();
    }

    /// A pool thread: runs jobs for ever.
    fn serve(&self) {
        loop {
            let job = {
                let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    match jobs.pop_front() {
                        Some(job) => break job,
                        None => jobs = self.ready.wait(jobs).unwrap_or_else(|p| p.into_inner()),
                    }
                }
            };
            match job {
                Job::Help(shared) => shared.help(),
                Job::Run(f) => {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                }
            }
        }
    }
}

/// The pool, once started: a pointer to a [`Pool`] that is never freed (its threads run for
/// the life of the process). No lock: a process forked while another thread held one would
/// never get it back.
static POOL: AtomicPtr<Pool> = AtomicPtr::new(std::ptr::null_mut());

/// The process's pool of reading threads (as many as the machine has cores), started on first
/// use; `None` when no thread can be started (then the caller does the work alone).
///
/// A child of `fork()` (a Python multiprocessing or dask worker) has none of its parent's
/// threads: it starts a pool of its own on first use and never touches the parent's.
fn pool() -> Option<&'static Pool> {
    let pid = process_id();
    let cur = POOL.load(Ordering::Acquire);
    // SAFETY: a non-null POOL points to a Pool leaked below, never freed.
    if let Some(p) = unsafe { cur.as_ref() } {
        if p.pid == pid {
            return (p.threads.load(Ordering::Acquire) > 0).then_some(p);
        }
    }
    let new: &'static mut Pool = Box::leak(Box::new(Pool {
        pid,
        jobs: Mutex::new(std::collections::VecDeque::new()),
        ready: Condvar::new(),
        threads: std::sync::atomic::AtomicUsize::new(0),
    }));
    let new_ptr: *mut Pool = new;
    if let Err(other) = POOL.compare_exchange(cur, new_ptr, Ordering::AcqRel, Ordering::Acquire) {
        // Another thread started one first: use it (this one, never published, stays unused).
        // SAFETY: as above.
        return unsafe { other.as_ref() }
            .filter(|p| p.pid == pid && p.threads.load(Ordering::Acquire) > 0);
    }
    // Published: start its threads. (The parent's pool, after a fork, is left alone.) Until
    // they are counted, other threads see none and work alone.
    // SAFETY: `new_ptr` is leaked, never freed.
    let p: &'static Pool = unsafe { &*new_ptr };
    let mut started = 0;
    for i in 0..default_threads() {
        let spawned = std::thread::Builder::new()
            .name(format!("nc3pack reader {i}"))
            .spawn(move || p.serve());
        if spawned.is_err() {
            break;
        }
        started += 1;
    }
    p.threads.store(started, Ordering::Release);
    (started > 0).then_some(p)
}

/// Runs `work` on the calling thread and, at the same time, on up to `helpers` threads of the
/// process's pool of reading threads (started on first use), and returns once every run has
/// returned. `work` takes its items from a queue it shares with the other runs, so the result
/// does not depend on how many helpers take part: a helper that gets to it after the calling
/// thread has finished does not run it at all, and with `helpers` 0 or no pool the calling
/// thread does it all (and no pool is started). A panic in a run is caught; the result is
/// false if one happened.
pub(crate) fn with_helpers(helpers: usize, work: &(dyn Fn() + Sync)) -> bool {
    let run = || std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).is_ok();
    let pool = if helpers > 0 { pool() } else { None };
    let Some(pool) = pool else {
        return run();
    };
    // SAFETY: only the lifetime is erased; this function does not return before no helper
    // can call `work` any more (see `HelperWork::work`).
    let work: *const (dyn Fn() + Sync + 'static) = unsafe { std::mem::transmute(work) };
    let shared = Arc::new(HelperWork {
        work,
        state: Mutex::new(SharedState {
            open: true,
            running: 0,
            panicked: false,
        }),
        done: Condvar::new(),
    });
    for _ in 0..helpers.min(pool.threads.load(Ordering::Acquire)) {
        pool.push(Job::Help(Arc::clone(&shared)));
    }
    let ok = run();
    let mut st = shared.lock();
    st.open = false;
    while st.running > 0 {
        st = shared.done.wait(st).unwrap_or_else(|p| p.into_inner());
    }
    ok && !st.panicked
}

/// The threads of the process's pool (started if it was not): for tests that hold all of them.
#[cfg(test)]
pub(crate) fn pool_threads() -> usize {
    pool().map_or(0, |p| p.threads.load(Ordering::Acquire))
}

/// Runs `job` later on a thread of the process's pool of reading threads, catching its
/// panics; false (and `job` dropped, not run) when there is no pool.
pub(crate) fn spawn(job: impl FnOnce() + Send + 'static) -> bool {
    let Some(pool) = pool() else {
        return false;
    };
    pool.push(Job::Run(Box::new(job)));
    true
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
/// use nc3pack::testing::WorkerError;
/// let items: Vec<u32> = (0..100).collect();
/// let mut seen = Vec::new();
/// nc3pack::testing::ordered_map(&items, 2, 4, |&x| x * 2, |i, r| {
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
    /// The id kept by `process_id` is this process's, and a child of `fork()` gets its own
    /// (not the parent's, which would have it use the parent's pool of threads).
    #[test]
    fn a_forked_child_knows_its_own_id() {
        let parent = super::process_id();
        assert_eq!(parent, std::process::id());
        // SAFETY: the child only asks for its id, then leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let id = super::process_id();
            // SAFETY: getpid and _exit are safe in a child of fork().
            let ok = id != parent && id == unsafe { libc::getpid() } as u32;
            unsafe { libc::_exit(if ok { 0 } else { 3 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child saw its parent's id: status {status:#x}"
        );
    }

    #[derive(Debug, PartialEq)]
    enum TestStop {
        Asked,
        Spawn,
    }

    impl From<super::WorkerError> for TestStop {
        fn from(e: super::WorkerError) -> Self {
            match e {
                super::WorkerError::Spawn(_) => TestStop::Spawn,
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
                    Err(TestStop::Asked)
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Err(TestStop::Asked));
        assert_eq!(n, 10);
    }
}
