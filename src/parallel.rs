//! An ordered parallel map with bounded look-ahead, for decoding blocks in the order a consumer
//! needs them while other threads decode the next ones.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};

struct State<R> {
    next: usize,
    ready: HashMap<usize, R>,
    in_flight: usize,
    stop: bool,
}

/// Runs `f` over `items` on `threads` threads and hands the results to `consume` in item order.
/// At most `ahead` results are computed but not yet consumed at any time, so memory stays
/// bounded. If `consume` returns an error, the workers stop and the error is returned.
///
/// ```
/// let items: Vec<u32> = (0..100).collect();
/// let mut seen = Vec::new();
/// nc3pack::parallel::ordered_map(&items, 2, 4, |&x| x * 2, |i, r| {
///     seen.push((i, r));
///     Ok::<(), ()>(())
/// }).unwrap();
/// assert_eq!(seen, (0..100).map(|i| (i as usize, i * 2)).collect::<Vec<_>>());
/// ```
pub fn ordered_map<T: Sync, R: Send, E>(
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
    });
    let cv = Condvar::new();
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
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
                let r = f(&items[i]);
                lock().ready.insert(i, r);
                cv.notify_all();
            });
        }
        let mut result = Ok(());
        for i in 0..items.len() {
            let r = {
                let mut st = lock();
                loop {
                    if let Some(r) = st.ready.remove(&i) {
                        st.in_flight -= 1;
                        break r;
                    }
                    st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
                }
            };
            cv.notify_all();
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
                    Err("stop")
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Err("stop"));
        assert_eq!(n, 10);
    }
}
