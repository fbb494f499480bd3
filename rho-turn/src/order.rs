//! The model's order within a turn: which call's tool may run when.
//!
//! The relation is the one of a fair read/write lock taken in the model's
//! order. A shared call may run once every earlier exclusive call of the
//! turn has ended; an exclusive call once every earlier call has ended. A
//! call's gate runs at once either way (a person sees the whole message):
//! what waits is its tool, through a [`Place`] the call's task waits for
//! after its gate, off the clock. The turn opens places as calls end.
//!
//! Calls start in the model's order, so when call `i` starts every earlier
//! call has started: two pointers (the first call not ended, the first
//! exclusive call not ended) answer "may `i` run now" without a scan, and
//! the closed places form a queue in index order whose front is the only
//! one that can open next.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use rho_tool_core::{ToolResult, Wait, WaitingFor};

/// How one call takes the turn's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Not started yet.
    NotYet,
    /// Takes no part: a call refused before its gate, or every call of a
    /// turn whose runner does not order calls. Never waits, never holds
    /// anyone back.
    Free,
    /// Runs beside other shared calls.
    Shared,
    /// Runs alone.
    Exclusive,
}

/// The order of one turn's calls; see the module's docs.
#[derive(Debug)]
pub(crate) struct Order {
    modes: Vec<Mode>,
    ended: Vec<bool>,
    /// No call before this index is unended (among started calls).
    first_unended: usize,
    /// No exclusive call before this index is unended.
    first_exclusive_unended: usize,
    /// The places not yet open, in index order.
    closed: VecDeque<(usize, Arc<Place>)>,
}

impl Order {
    pub(crate) fn new(calls: usize) -> Self {
        Self {
            modes: vec![Mode::NotYet; calls],
            ended: vec![false; calls],
            first_unended: 0,
            first_exclusive_unended: 0,
            closed: VecDeque::new(),
        }
    }

    /// Call `index` starts with `mode`. Returns what it must wait for
    /// before its tool runs: `None` when it may run at once, else the
    /// nearest earlier call it waits behind and the place it waits for.
    pub(crate) fn start(&mut self, index: usize, mode: Mode) -> Option<(usize, Arc<Place>)> {
        self.modes[index] = mode;
        let runs_now = match mode {
            Mode::NotYet | Mode::Free => {
                self.end(index);
                return None;
            }
            Mode::Shared => self.first_exclusive_unended >= index,
            Mode::Exclusive => self.first_unended >= index,
        };
        if runs_now {
            return None;
        }
        let behind = (0..index).rev().find(|&earlier| {
            !self.ended[earlier]
                && match mode {
                    Mode::Exclusive => self.modes[earlier] != Mode::Free,
                    _ => self.modes[earlier] == Mode::Exclusive,
                }
        })?;
        let place = Arc::new(Place::default());
        self.closed.push_back((index, place.clone()));
        Some((behind, place))
    }

    /// Call `index` ended (or will never run): moves the pointers and
    /// opens the places that may open now.
    pub(crate) fn end(&mut self, index: usize) {
        if std::mem::replace(&mut self.ended[index], true) {
            return;
        }
        let unended = |at: usize| self.modes[at] == Mode::NotYet || !self.ended[at];
        while self.first_unended < self.modes.len() && !unended(self.first_unended) {
            self.first_unended += 1;
        }
        let mut at = self.first_exclusive_unended;
        while at < self.modes.len()
            && self.modes[at] != Mode::NotYet
            && (self.ended[at] || self.modes[at] != Mode::Exclusive)
        {
            at += 1;
        }
        self.first_exclusive_unended = at;
        while let Some((front, place)) = self.closed.front() {
            let opens = match self.modes[*front] {
                Mode::Exclusive => self.first_unended >= *front,
                _ => self.first_exclusive_unended >= *front,
            };
            if !opens {
                break;
            }
            place.open();
            self.closed.pop_front();
        }
    }

    /// Refuses every closed place after `index` with what `result` makes
    /// of each call's index; returns how many.
    pub(crate) fn refuse_after(
        &mut self,
        index: usize,
        result: impl Fn(usize) -> ToolResult,
    ) -> usize {
        let mut refused = 0;
        self.closed.retain(|(at, place)| {
            if *at <= index {
                return true;
            }
            place.refuse(result(*at));
            refused += 1;
            false
        });
        refused
    }

    /// Whether call `index` may still be held back (its place is closed,
    /// or it has not started).
    #[cfg(test)]
    fn holds_back(&self, index: usize) -> bool {
        self.modes[index] == Mode::NotYet || self.closed.iter().any(|(at, _)| *at == index)
    }
}

/// The place of one call in the turn's order: closed until the turn opens
/// it (or refuses it), waited for by the call's task.
#[derive(Debug, Default)]
pub(crate) struct Place {
    state: Mutex<PlaceState>,
}

#[derive(Debug, Default)]
enum PlaceState {
    /// Not open yet; the task's waker, once it waits.
    #[default]
    Closed,
    Waiting(Waker),
    Open,
    /// The call will not run: it ends with this result.
    Refused(ToolResult),
    /// The refusal was handed to the task.
    Taken,
}

impl Place {
    fn lock(&self) -> MutexGuard<'_, PlaceState> {
        // Only this module's bookkeeping runs under the lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, next: PlaceState) {
        let before = std::mem::replace(&mut *self.lock(), next);
        if let PlaceState::Waiting(waker) = before {
            waker.wake();
        }
    }

    fn open(&self) {
        self.set(PlaceState::Open);
    }

    fn refuse(&self, result: ToolResult) {
        self.set(PlaceState::Refused(result));
    }

    /// What the call waits for: this place, named as waiting behind call
    /// `call_id` at `index`.
    pub(crate) fn wait(self: Arc<Self>, call_id: String, index: usize) -> Wait {
        let place = self;
        Wait::new(
            WaitingFor::Call { call_id, index },
            std::future::poll_fn(move |cx| {
                let mut state = place.lock();
                match std::mem::take(&mut *state) {
                    PlaceState::Open => {
                        *state = PlaceState::Open;
                        Poll::Ready(Ok(()))
                    }
                    PlaceState::Refused(result) => {
                        *state = PlaceState::Taken;
                        Poll::Ready(Err(result))
                    }
                    PlaceState::Closed | PlaceState::Waiting(_) => {
                        *state = PlaceState::Waiting(cx.waker().clone());
                        Poll::Pending
                    }
                    PlaceState::Taken => Poll::Pending,
                }
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which of `calls` may run at once as they start, in order.
    fn runs_at_start(order: &mut Order, modes: &[Mode]) -> Vec<bool> {
        modes
            .iter()
            .enumerate()
            .map(|(index, &mode)| order.start(index, mode).is_none())
            .collect()
    }

    fn is_open(place: &Place) -> bool {
        matches!(*place.lock(), PlaceState::Open)
    }

    #[test]
    fn shared_calls_run_together_and_an_exclusive_one_waits_for_them() {
        use Mode::{Exclusive as X, Shared as S};
        let mut order = Order::new(5);
        assert_eq!(
            runs_at_start(&mut order, &[S, S, X, S, S]),
            [true, true, false, false, false]
        );
        order.end(1);
        assert_eq!(order.closed.len(), 3, "call 0 still runs");
        order.end(0);
        assert_eq!(order.closed.len(), 2, "the exclusive call opened");
        assert!(order.holds_back(3) && order.holds_back(4));
        order.end(2);
        assert!(order.closed.is_empty(), "both later shared calls opened");
    }

    #[test]
    fn an_exclusive_call_waits_for_every_earlier_call_and_names_the_nearest() {
        use Mode::{Exclusive as X, Free as F, Shared as S};
        let mut order = Order::new(4);
        assert!(order.start(0, S).is_none());
        assert!(order.start(1, F).is_none());
        let (behind, place) = order.start(2, X).expect("waits");
        assert_eq!(behind, 0, "the free call holds nothing back");
        let (behind, later) = order.start(3, S).expect("waits");
        assert_eq!(behind, 2);
        order.end(0);
        assert!(is_open(&place) && !is_open(&later));
        order.end(2);
        assert!(is_open(&later));
    }

    #[test]
    fn refusing_after_a_call_leaves_earlier_places_alone() {
        use Mode::{Exclusive as X, Shared as S};
        let mut order = Order::new(4);
        runs_at_start(&mut order, &[X, X, S, X]);
        let refused = order.refuse_after(1, |at| ToolResult::error(format!("skip {at}")));
        assert_eq!(refused, 2);
        assert_eq!(order.closed.len(), 1);
        assert!(order.holds_back(1) && !order.holds_back(2));
    }
}
