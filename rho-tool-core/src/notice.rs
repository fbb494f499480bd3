//! What the task and the loop share about one call.
//!
//! One allocation per call, which the task, the loop's handle and the tool's
//! context each point to: the call's id, the tool's name and the task id,
//! the runner's parts (gate, watch, limits, timer), the call's own watch,
//! and a small mutex rather than channels. Through the mutex the task says "the gate is waiting" and "running" once each and
//! queues partial results; the host may say "abort" once; the loop reads it
//! all and leaves its waker. Only plain data is ever stored here: partial
//! results are made plain in the task before they are queued.
//!
//! Keeping all of this behind one pointer is what keeps a call small: the
//! task's state, the handle and the tool's context each hold one pointer
//! instead of five.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

use rho_untrusted::{Limits, Plain};

use crate::call::TaskId;
use crate::extensions::Extensions;
use crate::queue::{Held, Wait, WaitingFor};
use crate::runner::Parts;
use crate::tool::{CallSide, Timer};
use crate::watch::Watch;

/// How many partial results wait for the loop before the oldest is dropped.
/// A loop that polls its calls keeps this near empty; the bound only stops
/// a chatty tool from growing memory while the loop is busy elsewhere.
pub(crate) const UPDATE_QUEUE: usize = 256;

/// What a call has beside its tool, from its [`Start`](crate::Start):
/// its own watch, the values handed to its tool and what it waits for.
#[derive(Default)]
pub(crate) struct Beside {
    pub(crate) watch: Option<Arc<dyn Watch>>,
    pub(crate) extensions: Option<Box<Extensions>>,
    pub(crate) waits: Vec<Wait>,
}

/// See the module's docs.
pub(crate) struct Notice {
    names: Names,
    /// The task running the call.
    pub(crate) task: TaskId,
    /// The runner's gate, watch, limits and timer.
    pub(crate) parts: Arc<Parts>,
    /// The call's own watch (its tool's source, say), beside the runner's.
    pub(crate) watch: Option<Arc<dyn Watch>>,
    /// What the starter handed the tool ([`Start::with_extension`]).
    ///
    /// [`Start::with_extension`]: crate::Start::with_extension
    extensions: Option<Box<Extensions>>,
    /// Whether the call waits for anything after its gate: read without
    /// the lock by the task of every call, which then needs no look at
    /// the queue at all.
    waits: bool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    gate_waiting: bool,
    running_at: Option<Instant>,
    abort: bool,
    /// The loop has reported the end: later updates are ignored.
    closed: bool,
    /// Partial results, made only when a tool first reports one: most
    /// tools never do, and this state is part of every call in flight.
    updates: Option<Box<Updates>>,
    /// The tool's pauses of its clock, made only at its first pause.
    pause: Option<Box<Pause>>,
    /// What the call waits for after its gate; only for a call that
    /// waits for something.
    queue: Option<Box<Queue>>,
    loop_waker: Option<Waker>,
}

/// A call's waits after its gate, as the task and the loop share them.
#[derive(Default)]
struct Queue {
    /// The waits, until the task takes them.
    waits: Vec<Wait>,
    /// When the task took them: the gate had allowed the call.
    allowed_at: Option<Instant>,
    /// How many waits did not answer at once, so far; the loop reports a
    /// `Queued` event when this grows.
    pending: u32,
    /// What the newest of those waits for.
    waiting_for: Option<WaitingFor>,
    /// What the waits gave, kept until the call ends.
    held: Vec<Held>,
    /// The call ended: what a wait gives from now on is let go at once.
    released: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("waits", &self.waits.len())
            .field("allowed_at", &self.allowed_at)
            .field("pending", &self.pending)
            .field("waiting_for", &self.waiting_for)
            .field("held", &self.held.len())
            .field("released", &self.released)
            .finish()
    }
}

impl std::fmt::Debug for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notice")
            .field("call_id", &self.call_id())
            .field("tool", &self.tool())
            .field("task", &self.task)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// A call's id and its tool's name, in one allocation.
#[derive(Debug)]
pub(crate) struct Names {
    /// The id followed by the name.
    text: Box<str>,
    /// Where the name begins.
    split: usize,
}

impl Names {
    pub(crate) fn new(call_id: &str, tool: &str) -> Self {
        let mut text = String::with_capacity(call_id.len() + tool.len());
        text.push_str(call_id);
        text.push_str(tool);
        Self {
            text: text.into_boxed_str(),
            split: call_id.len(),
        }
    }

    pub(crate) fn call_id(&self) -> &str {
        &self.text[..self.split]
    }

    pub(crate) fn tool(&self) -> &str {
        &self.text[self.split..]
    }
}

/// The partial results waiting for the loop.
#[derive(Debug, Default)]
struct Updates {
    queue: VecDeque<Plain>,
    /// Updates dropped (oldest first) since the loop last took one.
    dropped: u64,
}

/// How the tool paused its clock ([`ToolContext::pause_clock`](crate::ToolContext::pause_clock)).
#[derive(Debug, Default)]
struct Pause {
    /// Guards alive.
    holders: u32,
    /// When the guards alive began to hold it.
    since: Option<Instant>,
    /// The time held by guards that ended.
    total: Duration,
}

/// The tool's pauses of its clock, as the loop sees them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Paused {
    /// The time held by pauses that ended.
    pub(crate) total: Duration,
    /// A pause is held now.
    pub(crate) held: bool,
}

/// What the loop saw when it looked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Seen {
    /// The gate did not answer at its first poll: it is waiting.
    pub(crate) gate_waiting: bool,
    /// When the task said "running" (the gate allowed), if it has.
    pub(crate) running_at: Option<Instant>,
    pub(crate) abort: bool,
    /// Partial results are queued.
    pub(crate) has_update: bool,
    /// The tool's pauses of its clock.
    pub(crate) paused: Paused,
    /// How many of the call's waits did not answer at once, so far.
    pub(crate) queued: u32,
}

impl Notice {
    pub(crate) fn new(task: TaskId, parts: Arc<Parts>, names: Names, beside: Beside) -> Self {
        let waits = !beside.waits.is_empty();
        let state = State {
            queue: waits.then(|| {
                Box::new(Queue {
                    waits: beside.waits,
                    ..Queue::default()
                })
            }),
            ..State::default()
        };
        Self {
            names,
            task,
            parts,
            watch: beside.watch,
            extensions: beside.extensions,
            waits,
            state: Mutex::new(state),
        }
    }

    /// Whether the call waits for anything after its gate.
    pub(crate) fn has_waits(&self) -> bool {
        self.waits
    }

    /// Called by the task once its gate allowed: takes the waits and
    /// notes the moment.
    pub(crate) fn take_waits(&self) -> Vec<Wait> {
        let now = Instant::now();
        let mut state = self.lock();
        match state.queue.as_mut() {
            Some(queue) => {
                queue.allowed_at = Some(now);
                std::mem::take(&mut queue.waits)
            }
            None => Vec::new(),
        }
    }

    /// Called by the task: a wait did not answer at once; the loop hears
    /// of it.
    pub(crate) fn set_queued(&self, waiting_for: WaitingFor) {
        self.change(|state| {
            let Some(queue) = state.queue.as_mut() else {
                return false;
            };
            queue.pending += 1;
            queue.waiting_for = Some(waiting_for);
            true
        });
    }

    /// Called by the task: a wait gave `held`, kept until the call ends
    /// (let go at once if it already has).
    pub(crate) fn hold(&self, held: Held) {
        let late = {
            let mut state = self.lock();
            match state.queue.as_mut() {
                Some(queue) if !queue.released => {
                    queue.held.push(held);
                    None
                }
                _ => Some(held),
            }
        };
        // Outside the lock: a permit's drop may wake other calls.
        drop(late);
    }

    /// Called by the task when its tool answered, and by the loop when it
    /// has the call's end: lets go of what the waits gave. Idempotent.
    pub(crate) fn release_held(&self) {
        if !self.waits {
            return;
        }
        let held = {
            let mut state = self.lock();
            match state.queue.as_mut() {
                Some(queue) => {
                    queue.released = true;
                    std::mem::take(&mut queue.held)
                }
                None => Vec::new(),
            }
        };
        drop(held);
    }

    /// What the newest wait that did not answer at once waits for.
    pub(crate) fn waiting_for(&self) -> Option<WaitingFor> {
        self.lock().queue.as_ref()?.waiting_for.clone()
    }

    /// When the gate allowed the call, for a call that waits for
    /// something (and has got past its gate).
    pub(crate) fn allowed_at(&self) -> Option<Instant> {
        if !self.waits {
            return None;
        }
        self.lock().queue.as_ref()?.allowed_at
    }

    /// The watches told of this call: the runner's, then the call's own.
    pub(crate) fn watches(&self) -> impl Iterator<Item = &dyn Watch> {
        self.parts
            .watch
            .as_deref()
            .into_iter()
            .chain(self.watch.as_deref())
    }

    /// Whether anyone is told of this call's end.
    pub(crate) fn is_watched(&self) -> bool {
        self.parts.watch.is_some() || self.watch.is_some()
    }

    /// The call's id, as the tool's context and the loop's handle read it.
    pub(crate) fn call_id(&self) -> &str {
        self.names.call_id()
    }

    /// The tool's name, read once when the call started.
    pub(crate) fn tool(&self) -> &str {
        self.names.tool()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code that can panic runs under this lock; a poisoned lock still
        // holds consistent data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `change`; when it says something changed, wakes the loop if
    /// the loop left a waker. Returns whether it woke the loop.
    fn change(&self, change: impl FnOnce(&mut State) -> bool) -> bool {
        let waker = {
            let mut state = self.lock();
            if !change(&mut state) {
                return false;
            }
            state.loop_waker.take()
        };
        match waker {
            Some(waker) => {
                waker.wake();
                true
            }
            None => false,
        }
    }

    /// Called by the task each time its gate did not answer at a poll; the
    /// loop hears of it once.
    pub(crate) fn set_gate_waiting(&self) {
        self.change(|state| !std::mem::replace(&mut state.gate_waiting, true));
    }

    /// Called by the task once its gate allowed: the call is running.
    /// Returns whether that woke the loop.
    ///
    /// The moment is recorded here, in the task, so the loop's clock starts
    /// at the notice even when the loop looks later.
    pub(crate) fn set_running(&self) -> bool {
        let now = Instant::now();
        self.change(|state| {
            state.running_at = Some(now);
            true
        })
    }

    /// Called by the task: a partial result, already plain data.
    pub(crate) fn push_update(&self, update: Plain) {
        self.change(|state| {
            if state.closed {
                return false;
            }
            let updates = state.updates.get_or_insert_with(Box::default);
            if updates.queue.len() == UPDATE_QUEUE {
                updates.queue.pop_front();
                updates.dropped += 1;
            }
            updates.queue.push_back(update);
            true
        });
    }

    /// Called by the tool: its clock is paused until as many
    /// [`release_clock`](Self::release_clock)s.
    pub(crate) fn hold_clock(&self) {
        self.change(|state| {
            let pause = state.pause.get_or_insert_with(Box::default);
            pause.holders += 1;
            if pause.holders == 1 {
                pause.since = Some(Instant::now());
                return true;
            }
            false
        });
    }

    /// Called by the tool: one pause ended; the last one wakes the loop,
    /// which sets the deadline again.
    pub(crate) fn release_clock(&self) {
        self.change(|state| {
            let Some(pause) = state.pause.as_mut() else {
                return false;
            };
            pause.holders = pause.holders.saturating_sub(1);
            if pause.holders > 0 {
                return false;
            }
            if let Some(since) = pause.since.take() {
                pause.total = pause.total.saturating_add(since.elapsed());
            }
            true
        });
    }

    /// Called by the host: stop the call.
    pub(crate) fn request_abort(&self) {
        self.change(|state| {
            state.abort = true;
            true
        });
    }

    /// Called by the loop when it reported the end, or when nobody reads
    /// partial results: no more updates are queued.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.updates = None;
    }

    /// Called by the loop: reads the state and leaves `waker` to be woken
    /// when anything changes.
    pub(crate) fn look(&self, waker: &Waker) -> Seen {
        let mut state = self.lock();
        match &mut state.loop_waker {
            Some(known) if known.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
        Seen {
            gate_waiting: state.gate_waiting,
            running_at: state.running_at,
            abort: state.abort,
            has_update: state
                .updates
                .as_ref()
                .is_some_and(|updates| !updates.queue.is_empty()),
            paused: state
                .pause
                .as_ref()
                .map_or_else(Paused::default, |pause| Paused {
                    total: pause.total,
                    held: pause.holders > 0,
                }),
            queued: state.queue.as_ref().map_or(0, |queue| queue.pending),
        }
    }

    /// Called by the loop: the oldest queued partial result, and how many
    /// older ones were dropped to keep the queue bounded.
    pub(crate) fn take_update(&self) -> Option<(Plain, u64)> {
        let mut state = self.lock();
        let updates = state.updates.as_mut()?;
        let update = updates.queue.pop_front()?;
        Some((update, std::mem::take(&mut updates.dropped)))
    }
}

impl CallSide for Notice {
    fn call_id(&self) -> &str {
        Notice::call_id(self)
    }

    fn task(&self) -> TaskId {
        self.task
    }

    fn limits(&self) -> &Limits {
        &self.parts.limits
    }

    fn push_update(&self, update: Plain) {
        Notice::push_update(self, update);
    }

    fn hold_clock(&self) {
        Notice::hold_clock(self);
    }

    fn release_clock(&self) {
        Notice::release_clock(self);
    }

    fn max_clock_pause(&self) -> Duration {
        self.parts.max_clock_pause
    }

    fn timer(&self) -> &dyn Timer {
        self.parts.timer.as_ref()
    }

    fn extensions(&self) -> Option<&Extensions> {
        self.extensions.as_deref()
    }
}
