//! rho's own clock for calls on tokio: one thread that wakes sleeps at
//! their deadlines.
//!
//! Why not tokio's timer: it is driven by a worker that has nothing else
//! to do, so while every worker is held by a tool that never yields, no
//! deadline is seen, even by a loop that runs on a thread of its own; and
//! it counts in whole milliseconds, rounding each deadline up. This clock
//! is one thread for the process, started with the first executor, that
//! sleeps until the earliest deadline and wakes its sleep: a call's
//! deadline reaches its loop whatever the runtime's workers are doing, a
//! fraction of a millisecond late. A sleep is an entry in one ordered map,
//! so a waiting call's clock costs no allocation of its own.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::call_contained;

/// The process's clock. Its thread is started by [`start`].
static CLOCK: Clock = Clock {
    timers: Mutex::new(Timers {
        next_id: 0,
        pending: BTreeMap::new(),
        thread: Thread::Awake,
    }),
    earlier: Condvar::new(),
};

/// Whether the clock's thread is running (set once, by the first
/// executor).
static RUNNING: OnceLock<bool> = OnceLock::new();

struct Clock {
    timers: Mutex<Timers>,
    /// Signalled when a sleep became the earliest, so the thread waits
    /// for that one instead.
    earlier: Condvar,
}

struct Timers {
    /// Ids tell apart sleeps with the same deadline.
    next_id: u64,
    pending: BTreeMap<(Instant, u64), Waker>,
    /// What the clock's thread is doing, so that a new sleep wakes it only
    /// when it must: a call's deadline is nearly always later than the one
    /// the thread already waits for (every call of a tool has the same
    /// timeout, counted from a later start), and waking a thread is a
    /// system call and a switch to it, per call.
    thread: Thread,
}

/// What the clock's thread is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Thread {
    /// Awake: it reads the map again before it waits.
    Awake,
    /// Waiting for this deadline (perhaps of a sleep since dropped: it then
    /// wakes once for nothing, and waits for the next).
    Until(Instant),
    /// Waiting with no deadline: the map was empty.
    Idle,
}

impl Thread {
    /// Whether a sleep due at `deadline` needs the thread woken.
    fn must_wake_for(self, deadline: Instant) -> bool {
        match self {
            Thread::Awake => false,
            Thread::Until(armed) => deadline < armed,
            Thread::Idle => true,
        }
    }
}

impl Clock {
    fn lock(&self) -> MutexGuard<'_, Timers> {
        // Nothing that can panic runs under the lock (wakers are woken
        // after it is released); a poisoned lock still holds a valid map.
        self.timers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The clock thread: wakes what is due, then waits for the next
    /// deadline or for an earlier one to be registered.
    fn run(&self) {
        let mut due = Vec::new();
        let mut timers = self.lock();
        loop {
            let now = Instant::now();
            while let Some(entry) = timers.pending.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                due.push(entry.remove());
            }
            if !due.is_empty() {
                drop(timers);
                // A waker is the runtime's (or the host's) code: woken
                // without the lock held, so it can register a new sleep,
                // and contained, so that one that panics cannot stop the
                // clock of every other call.
                for waker in due.drain(..) {
                    let _ = call_contained(|| waker.wake());
                }
                timers = self.lock();
                continue;
            }
            timers = match timers.pending.first_key_value() {
                Some(((deadline, _), _)) => {
                    let deadline = *deadline;
                    timers.thread = Thread::Until(deadline);
                    let wait = deadline.saturating_duration_since(now);
                    self.earlier
                        .wait_timeout(timers, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => {
                    timers.thread = Thread::Idle;
                    self.earlier
                        .wait(timers)
                        .unwrap_or_else(PoisonError::into_inner)
                }
            };
            timers.thread = Thread::Awake;
        }
    }
}

/// Starts the clock's thread if it is not running yet; returns whether it
/// runs. Only the first call tries: a thread that could not be started is
/// not asked for again.
pub(crate) fn start() -> bool {
    *RUNNING.get_or_init(|| {
        std::thread::Builder::new()
            .name("rho-clock".to_owned())
            .spawn(|| CLOCK.run())
            .is_ok()
    })
}

/// A sleep on rho's clock: completes at its deadline. `Unpin`, and makes
/// no allocation of its own; dropping it unregisters it.
#[derive(Debug)]
pub(crate) struct ClockSleep {
    deadline: Instant,
    /// The id it is registered under, once it was polled before its
    /// deadline.
    registered: Option<u64>,
}

impl ClockSleep {
    /// A sleep that completes `duration` from now (a duration too long to
    /// count never completes).
    pub(crate) fn after(duration: Duration) -> Self {
        let now = Instant::now();
        // A far deadline: about thirty years, which any call outlives.
        let deadline = now
            .checked_add(duration)
            .unwrap_or_else(|| now + Duration::from_secs(1 << 30));
        Self {
            deadline,
            registered: None,
        }
    }
}

impl Future for ClockSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            self.unregister();
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        let mut timers = CLOCK.lock();
        match self.registered {
            Some(id) => {
                let replaced = match timers.pending.get_mut(&(deadline, id)) {
                    Some(known) if !known.will_wake(cx.waker()) => {
                        Some(std::mem::replace(known, cx.waker().clone()))
                    }
                    // The same waker; or fired between the check above and
                    // the lock, and then woken, so the next poll completes.
                    Some(_) | None => None,
                };
                drop(timers);
                // The old waker is dropped after the lock, like every waker.
                drop(replaced);
            }
            None => {
                let id = timers.next_id;
                timers.next_id += 1;
                timers.pending.insert((deadline, id), cx.waker().clone());
                self.registered = Some(id);
                let wake = timers.thread.must_wake_for(deadline);
                if wake {
                    // Woken once: later sleeps need not wake it again
                    // before it has looked.
                    timers.thread = Thread::Awake;
                }
                drop(timers);
                if wake {
                    CLOCK.earlier.notify_one();
                }
            }
        }
        Poll::Pending
    }
}

impl ClockSleep {
    fn unregister(&mut self) {
        if let Some(id) = self.registered.take() {
            let removed = CLOCK.lock().pending.remove(&(self.deadline, id));
            // Dropped after the lock: a waker's Drop is foreign code.
            drop(removed);
        }
    }
}

impl Drop for ClockSleep {
    fn drop(&mut self) {
        self.unregister();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending_has(sleep: &ClockSleep) -> bool {
        let id = sleep.registered.expect("registered");
        CLOCK.lock().pending.contains_key(&(sleep.deadline, id))
    }

    /// Sleeps made in shuffled order complete in the order of their
    /// deadlines, none before its own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sleeps_complete_in_deadline_order_and_never_early() {
        assert!(start());
        let made = Instant::now();
        let (sender, mut order) = tokio::sync::mpsc::unbounded_channel();
        for ms in [30_u64, 5, 20, 1, 15, 10, 25] {
            let sender = sender.clone();
            tokio::spawn(async move {
                ClockSleep::after(Duration::from_millis(ms)).await;
                let _ = sender.send((ms, made.elapsed()));
            });
        }
        drop(sender);
        let mut seen = Vec::new();
        while let Some((ms, elapsed)) = order.recv().await {
            assert!(
                elapsed >= Duration::from_millis(ms),
                "{ms} ms sleep ended early"
            );
            seen.push(ms);
        }
        assert_eq!(seen, [1, 5, 10, 15, 20, 25, 30]);
    }

    /// A sleep dropped before its deadline leaves no entry behind, and one
    /// that completed none either: a waiting call's clock costs nothing
    /// once the call ended.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sleep_leaves_no_entry_once_dropped_or_done() {
        assert!(start());
        let mut cx = Context::from_waker(Waker::noop());
        let mut far = ClockSleep::after(Duration::from_secs(3600));
        assert!(Pin::new(&mut far).poll(&mut cx).is_pending());
        assert!(pending_has(&far));
        let key = (far.deadline, far.registered.expect("registered"));
        drop(far);
        assert!(!CLOCK.lock().pending.contains_key(&key));

        let mut near = ClockSleep::after(Duration::from_millis(2));
        assert!(Pin::new(&mut near).poll(&mut cx).is_pending());
        (&mut near).await;
        assert_eq!(near.registered, None);
    }

    /// A waker that panics when woken.
    struct Raises;

    impl std::task::Wake for Raises {
        fn wake(self: std::sync::Arc<Self>) {
            panic!("a waker that raises");
        }
    }

    /// A waker that panics when the clock wakes it does not stop the clock:
    /// later sleeps still complete.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waker_that_panics_does_not_stop_the_clock() {
        assert!(start());
        let raises = Waker::from(std::sync::Arc::new(Raises));
        let mut doomed = ClockSleep::after(Duration::from_millis(1));
        assert!(
            Pin::new(&mut doomed)
                .poll(&mut Context::from_waker(&raises))
                .is_pending()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        tokio::time::timeout(
            Duration::from_secs(10),
            ClockSleep::after(Duration::from_millis(5)),
        )
        .await
        .expect("the clock still runs");
    }

    /// The thread is woken for a sleep only when it would otherwise wait
    /// past that sleep's deadline.
    #[test]
    fn a_sleep_wakes_the_thread_only_when_it_waits_too_long() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert!(Thread::Idle.must_wake_for(later));
        assert!(Thread::Until(later).must_wake_for(now));
        assert!(!Thread::Until(now).must_wake_for(later));
        assert!(!Thread::Until(now).must_wake_for(now));
        assert!(!Thread::Awake.must_wake_for(now));
    }

    /// Sleeps registered one after the other, each due later than the
    /// last (calls of one tool, in sequence), still all complete on time
    /// when the earlier ones are dropped first: the thread, waiting for a
    /// dropped deadline, wakes for nothing once and waits for the next.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn later_sleeps_complete_after_earlier_ones_were_dropped() {
        assert!(start());
        let made = Instant::now();
        let mut cx = Context::from_waker(Waker::noop());
        for ms in [40_u64, 41, 42] {
            let mut dropped = ClockSleep::after(Duration::from_millis(ms));
            assert!(Pin::new(&mut dropped).poll(&mut cx).is_pending());
        }
        tokio::time::timeout(
            Duration::from_secs(10),
            ClockSleep::after(Duration::from_millis(60)),
        )
        .await
        .expect("the clock wakes the later sleep");
        assert!(made.elapsed() >= Duration::from_millis(60));
    }

    /// A duration too long to add to now is a sleep that never completes,
    /// not a panic.
    #[test]
    fn a_sleep_too_long_to_count_is_far_not_a_panic() {
        let sleep = ClockSleep::after(Duration::MAX);
        assert!(sleep.deadline > Instant::now() + Duration::from_secs(3600 * 24 * 365));
    }
}
