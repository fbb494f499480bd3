//! What a script's thread and its call's future share while the script
//! runs, and the future itself.
//!
//! The script's thread never runs host code and the future never runs
//! JavaScript: they trade plain data through a [`Slot`]. The thread puts
//! in partial results, calls of granted host functions and the time its
//! next sleep is due; the future forwards the partial results to the
//! call's [`ToolContext`], runs the host functions and the sleep on the
//! call's executor, and puts their ends back; the thread puts in the
//! answer last. The future's drop is the stop: it sets the flag the
//! engine's interrupt reads and wakes a thread that waits.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use rho_tool_core::ToolContext;
use rho_tool_core::untrusted::Plain;

use crate::sandbox::host::{Callee, HostAnswer, HostAsk, HostCalls};
use crate::sandbox::job::Answer;
use crate::sandbox::wire::FromWorker;

/// How many partial results wait between the script's thread and the
/// call's future: past it, the oldest is dropped for the newest.
pub(crate) const UPDATE_QUEUE: usize = 64;

/// What the script's thread and the call's future share: the answer, and
/// what goes each way while the script runs.
#[derive(Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    /// Wakes the script's thread when a host call or its sleep ended, or
    /// the call's future was dropped.
    woke: Condvar,
}

#[derive(Default)]
struct SlotState {
    answer: Option<Answer>,
    /// An answer was put in: the script thread's, or the pool's for a
    /// thread it gave up on. The first one stands; a later one is dropped.
    settled: bool,
    waker: Option<Waker>,
    updates: VecDeque<Plain>,
    /// Host calls asked for, not yet started by the future.
    asks: VecDeque<HostAsk>,
    /// Host calls ended, not yet taken by the script's thread.
    answers: VecDeque<HostAnswer>,
    timer: Timer,
    /// What a worker process sent, for the pool's thread that relays a
    /// job to it (empty when the script runs on the pool's own thread).
    relayed: VecDeque<Relayed>,
    /// Whether the script's thread waits on [`Slot::woke`]: a notify is a
    /// system call even when nobody waits, so the other side makes it only
    /// then.
    asleep: bool,
}

/// What the reader of a worker process hands the pool's thread.
pub(crate) enum Relayed {
    /// The worker greeted as a rho-script worker of this version.
    Greeted,
    /// A message of the job.
    Message(FromWorker),
    /// The worker's first line was no such greeting, or it ended first:
    /// why.
    NotAWorker(String),
    /// The worker's stdout ended or carried garbage: why.
    Broken(String),
}

/// What the script's thread asked of the call's future since the future
/// last looked ([`Slot::take_outgoing`]).
pub(crate) struct Outgoing {
    pub(crate) updates: VecDeque<Plain>,
    pub(crate) asks: VecDeque<HostAsk>,
    /// A sleep to start, until then (replacing one that runs).
    pub(crate) timer: Option<Instant>,
    pub(crate) answer: Option<Answer>,
}

/// The sleep the script's thread asked of the call's executor timer: one
/// at a time, until the first of the script's pending sleeps is due.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Timer {
    #[default]
    Idle,
    /// Asked for by the script's thread, not yet started by the future.
    Asked(Instant),
    /// On the executor's timer, until then.
    Started(Instant),
    /// Over: the script's thread may go on.
    Fired,
}

/// Why [`Slot::wait`] returned.
pub(crate) enum Woken {
    /// Host calls ended (and the timer may have fired too).
    Answers(Vec<HostAnswer>),
    /// A worker process sent these (relaying only).
    Relayed(Vec<Relayed>),
    /// The sleep asked for is over.
    Due,
    /// The call's future was dropped, or the sandbox's own deadline
    /// passed: the interrupt's check says which.
    Stopped,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands a partial result to the call's future (dropping the oldest
    /// waiting one when [`UPDATE_QUEUE`] are waiting already).
    pub(crate) fn push_update(&self, partial: Plain) {
        let waker = {
            let mut state = self.lock();
            if state.updates.len() >= UPDATE_QUEUE {
                state.updates.pop_front();
            }
            state.updates.push_back(partial);
            state.waker.take()
        };
        wake(waker);
    }

    /// Asks the call's future to run a granted host function.
    pub(crate) fn ask_host(&self, ask: HostAsk) {
        let waker = {
            let mut state = self.lock();
            state.asks.push_back(ask);
            state.waker.take()
        };
        wake(waker);
    }

    /// Blocks the script's thread, which has nothing to run, until a host
    /// call ends, `until` (the first pending sleep) is due on the call's
    /// executor timer, the future is dropped (`stop`) or `deadline` passes.
    pub(crate) fn wait(
        &self,
        until: Option<Instant>,
        stop: &AtomicBool,
        deadline: Instant,
    ) -> Woken {
        let mut state = self.lock();
        if let Some(due) = until {
            if due <= Instant::now() {
                return Woken::Due;
            }
            if !matches!(state.timer, Timer::Asked(asked) | Timer::Started(asked) if asked == due) {
                state.timer = Timer::Asked(due);
                let waker = state.waker.take();
                drop(state);
                wake(waker);
                state = self.lock();
            }
        }
        loop {
            if !state.relayed.is_empty() {
                return Woken::Relayed(state.relayed.drain(..).collect());
            }
            if !state.answers.is_empty() {
                return Woken::Answers(state.answers.drain(..).collect());
            }
            if state.timer == Timer::Fired {
                state.timer = Timer::Idle;
                return Woken::Due;
            }
            // Checked under the lock that the future's drop takes before
            // it notifies: no wake-up is lost.
            if stop.load(Ordering::Acquire) {
                return Woken::Stopped;
            }
            let now = Instant::now();
            if now >= deadline {
                return Woken::Stopped;
            }
            state = self.sleep(state, deadline - now);
        }
    }

    /// Waits on [`Slot::woke`] for at most `wait`, marked as asleep.
    fn sleep<'a>(
        &'a self,
        mut state: MutexGuard<'a, SlotState>,
        wait: std::time::Duration,
    ) -> MutexGuard<'a, SlotState> {
        state.asleep = true;
        let mut state = self
            .woke
            .wait_timeout(state, wait)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        state.asleep = false;
        state
    }

    /// Wakes the script's thread if it waits; `state` is unlocked first.
    fn notify(&self, state: MutexGuard<'_, SlotState>) {
        let asleep = state.asleep;
        drop(state);
        if asleep {
            self.woke.notify_all();
        }
    }
}

impl Slot {
    /// Hands the pool's thread what a worker process sent.
    pub(crate) fn relay(&self, relayed: Relayed) {
        let mut state = self.lock();
        state.relayed.push_back(relayed);
        self.notify(state);
    }

    /// Waits, past a stop, only for what a worker process sends, until
    /// `deadline`; empty when nothing came.
    pub(crate) fn wait_relayed(&self, deadline: Instant) -> Vec<Relayed> {
        let mut state = self.lock();
        loop {
            if !state.relayed.is_empty() {
                return state.relayed.drain(..).collect();
            }
            let now = Instant::now();
            if now >= deadline {
                return Vec::new();
            }
            state = self.sleep(state, deadline - now);
        }
    }

    /// The future's side: takes what the script's thread asked for, and
    /// leaves `waker` to be woken when it asks more (unless the answer is
    /// there: then nothing more comes).
    pub(crate) fn take_outgoing(&self, waker: &Waker) -> Outgoing {
        let mut state = self.lock();
        let timer = match state.timer {
            Timer::Asked(due) => {
                state.timer = Timer::Started(due);
                Some(due)
            }
            _ => None,
        };
        let outgoing = Outgoing {
            updates: std::mem::take(&mut state.updates),
            asks: std::mem::take(&mut state.asks),
            timer,
            answer: state.answer.take(),
        };
        if outgoing.answer.is_none() {
            match &mut state.waker {
                Some(held) => held.clone_from(waker),
                None => state.waker = Some(waker.clone()),
            }
        }
        outgoing
    }

    /// The future's side: the sleep it ran is over (`slept`) and host
    /// calls ended; wakes the script's thread.
    pub(crate) fn give_back(&self, slept: bool, answers: Vec<HostAnswer>) {
        let mut state = self.lock();
        // A newer ask replaced the sleep that just ended: it stands.
        if slept && matches!(state.timer, Timer::Started(_)) {
            state.timer = Timer::Fired;
        }
        state.answers.extend(answers);
        self.notify(state);
    }

    /// The future's side: the call is gone. Sets `stop` (which the
    /// engine's interrupt reads) and wakes the script's thread; under the
    /// lock, so the thread either saw the flag or is waiting.
    pub(crate) fn stop(&self, stop: &AtomicBool) {
        stop.store(true, Ordering::Release);
        let state = self.lock();
        self.notify(state);
    }
}

fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// The sending half of a call's answer. Dropped unsent (a panic on the
/// script thread), it answers with a crash text so the call still ends.
pub(crate) struct Reply {
    slot: Arc<Slot>,
    sent: bool,
}

impl Reply {
    pub(crate) fn new(slot: Arc<Slot>) -> Self {
        Self { slot, sent: false }
    }

    /// The slot the answer goes to.
    pub(crate) fn slot(&self) -> &Arc<Slot> {
        &self.slot
    }

    pub(crate) fn send(mut self, answer: Answer) {
        self.put(answer);
    }

    fn put(&mut self, answer: Answer) {
        self.sent = true;
        wake(self.slot.settle(answer));
    }
}

impl Slot {
    /// Puts the job's answer in, unless one is there already (the pool
    /// answered for a thread it gave up on); gives the waker of the
    /// call's future, to wake once no lock is held.
    pub(crate) fn settle(&self, answer: Answer) -> Option<Waker> {
        let mut state = self.lock();
        if state.settled {
            return None;
        }
        state.settled = true;
        state.answer = Some(answer);
        state.waker.take()
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.sent {
            self.put(Answer::crashed(
                "the script's thread failed while it ran the script (a panic in the engine's binding), so the script gave no answer",
            ));
        }
    }
}

/// What a call's future knows of the pool that runs its job: only whom to
/// tell that the call was dropped unanswered, so that the pool can give up
/// on a thread that does not come back from the script. The pool
/// implements it; the future holds it weakly, so a call that outlives its
/// pool tells nobody.
pub(crate) trait PoolLink: Send + Sync {
    /// The call whose stop flag is `stop` was dropped unanswered.
    fn stopped(&self, stop: &Arc<AtomicBool>);
}

/// The future of one script call's answer.
///
/// Dropping it before the answer came (rho does so at the call's timeout
/// and on a host abort) stops the script: the engine's interrupt sees the
/// flag at its next check and the thread is free for the next call; a
/// thread inside a native operation that does not come back is replaced
/// by the pool (see [`STUCK_AFTER`](crate::sandbox::interrupt::STUCK_AFTER)). Host calls
/// it runs for the script are dropped with it.
///
/// While it waits it forwards the script's partial results to the call's
/// [`ToolContext::update`], in order, runs the host functions the script
/// calls and the sleeps it asks for on [`ToolContext::sleep`] (the call's
/// executor timer). A check has no context: its partial results are
/// dropped, its sleeps end at once and its host calls fail.
#[must_use = "a script call does nothing useful unless awaited; dropping it stops the script"]
pub(crate) struct ScriptCall<T> {
    slot: Arc<Slot>,
    stop: Arc<AtomicBool>,
    read: fn(Answer) -> T,
    context: Option<ToolContext>,
    /// What runs the script's calls of the host (none for a check).
    host: Option<Box<dyn HostCalls>>,
    sleeping: Option<Pin<Box<dyn Future<Output = ()> + Send + 'static>>>,
    /// The pool to tell when the call is dropped unanswered, so that it
    /// can give up on a thread that does not come back from the script.
    pool: Option<Weak<dyn PoolLink>>,
    /// The answer was taken: the job is over, nothing is left to stop.
    answered: bool,
}

impl<T> ScriptCall<T> {
    pub(crate) fn new(
        slot: Arc<Slot>,
        stop: Arc<AtomicBool>,
        read: fn(Answer) -> T,
        context: Option<ToolContext>,
        host: Option<Box<dyn HostCalls>>,
        pool: Option<Weak<dyn PoolLink>>,
    ) -> Self {
        Self {
            slot,
            stop,
            read,
            context,
            host,
            sleeping: None,
            pool,
            answered: false,
        }
    }

    /// Starts the host call `ask`, or answers it at once when it cannot run.
    fn start(&mut self, ask: HostAsk) -> Option<HostAnswer> {
        let id = ask.id;
        let (Some(context), Some(host)) = (&self.context, &mut self.host) else {
            let what = match ask.callee {
                Callee::Grant => "rho",
                Callee::Tool => "tools",
            };
            return Some(HostAnswer {
                id,
                result: Err(format!(
                    "{what}.{} cannot be called while a tool's definition is checked",
                    ask.name
                )),
            });
        };
        host.start(ask, context).err().map(|text| HostAnswer {
            id,
            result: Err(text),
        })
    }
}

impl<T> Future for ScriptCall<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = &mut *self;
        let Outgoing {
            updates,
            asks,
            timer,
            answer,
        } = this.slot.take_outgoing(cx.waker());
        // Updates first: they were sent before the answer.
        if let Some(context) = &this.context {
            for partial in &updates {
                // Already plain data, under the script's answer limits; one
                // the runner's limits refuse is dropped, as for any tool.
                let _ = context.update(partial);
            }
        }
        drop(updates);
        if let Some(answer) = answer {
            this.answered = true;
            return Poll::Ready((this.read)(answer));
        }
        let mut ended: Vec<HostAnswer> =
            asks.into_iter().filter_map(|ask| this.start(ask)).collect();
        if let Some(host) = &mut this.host {
            host.poll(cx, &mut ended);
        }
        if let Some(due) = timer {
            let wait = due.saturating_duration_since(Instant::now());
            this.sleeping = Some(match &this.context {
                Some(context) => context.sleep(wait),
                None => Box::pin(std::future::ready(())),
            });
        }
        let slept = match &mut this.sleeping {
            Some(sleep) => sleep.as_mut().poll(cx).is_ready(),
            None => false,
        };
        if slept {
            this.sleeping = None;
        }
        if slept || !ended.is_empty() {
            this.slot.give_back(slept, ended);
        }
        Poll::Pending
    }
}

impl<T> Drop for ScriptCall<T> {
    fn drop(&mut self) {
        // An answer is sent only once its job is over (the runtime freed,
        // the worker done with it): nothing reads the flag any more, and
        // the lock and the wake-up would only cost the call's thread.
        if !self.answered {
            self.slot.stop(&self.stop);
            if let Some(pool) = self.pool.as_ref().and_then(Weak::upgrade) {
                pool.stopped(&self.stop);
            }
        }
    }
}

impl<T> fmt::Debug for ScriptCall<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptCall").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_flood_of_updates_keeps_only_the_newest_waiting() {
        let slot = Slot::default();
        for n in 0..1000 {
            slot.push_update(Plain::Int(n));
        }
        let state = slot.lock();
        assert_eq!(state.updates.len(), UPDATE_QUEUE);
        assert_eq!(
            state.updates.front(),
            Some(&Plain::Int(1000 - UPDATE_QUEUE as i64))
        );
        assert_eq!(state.updates.back(), Some(&Plain::Int(999)));
    }

    #[test]
    fn a_wait_ends_at_once_when_the_call_is_stopped() {
        let slot = Slot::default();
        let stop = AtomicBool::new(true);
        let started = Instant::now();
        let far = started + Duration::from_secs(60);
        assert!(matches!(slot.wait(Some(far), &stop, far), Woken::Stopped));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_wait_for_a_sleep_already_due_returns_at_once() {
        let slot = Slot::default();
        let stop = AtomicBool::new(false);
        let now = Instant::now();
        assert!(matches!(
            slot.wait(Some(now), &stop, now + Duration::from_secs(60)),
            Woken::Due
        ));
    }
}
