//! `Turn`: the calls of one model message, run side by side, as one future.

use crate::validate::ArgumentError;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rho_registry::{Bound, Refusal, Resolved};
use rho_tool_core::untrusted::{Exit, Plain, exit_text};
use rho_tool_core::{
    CallEnd, CallEvent, CallHandle, ClockPause, Concurrency, Executor, Outcome, Start, TaskId,
    ToolCall, ToolResult, Wait,
};
use tracing::Span;

use crate::abort::{Control, TurnAbort};
use crate::depth;
use crate::entry::SessionEntry;
use crate::event::{CallRef, ExecutionEnd, ExecutionStart, TurnEvent, TurnId};
use crate::nested::Parent;
use crate::order::{Mode, Order};
use crate::ready::ReadySet;
use crate::report;
use crate::runner::Config;
use crate::span;
use crate::stop::{Failed, Stop};

/// How many events one call may report in one poll of the turn.
const EVENTS_PER_POLL: usize = 64;

/// The tool calls of one model message, run side by side.
///
/// A future: await it (on any runtime) for one [`SessionEntry`] per call,
/// in the order the model issued the calls, while events go out to the
/// [`EventBus`](crate::EventBus) as things happen (so ends arrive in the
/// order calls finish). Made by [`TurnRunner::turn`](crate::TurnRunner::turn);
/// nothing runs until it is first polled.
///
/// For each call, in the model's order (as the concurrency bound lets
/// them start): `tool_execution_start`; then the call is refused at once
/// if its id repeats an earlier call's, if the registry has no such tool
/// (or it is disabled), or if its arguments do not fit the tool's schema
/// (no gate is asked); otherwise it starts on the runner, gate first.
///
/// Every call of a turn that is awaited to the end gets exactly one start
/// and one end event, also a call refused or aborted before it ran.
/// Dropping an unfinished turn aborts its calls: those that started end as
/// aborted (with their end events); those still waiting for a slot end
/// without any event.
///
/// The turn is one future that polls its calls' handles; each call has a
/// waker of its own, so only the calls that have news are polled. A
/// call's timeout clock runs while the turn is polled (see
/// [`CallHandle`]): keep awaiting it.
pub struct Turn<E: Executor> {
    id: TurnId,
    config: Arc<Config<E>>,
    /// The running call that made this turn's calls, if one did.
    parent: Option<Parent>,
    /// Whole ends kept for the caller ([`Turn::keep_ends`]), in the order
    /// the calls ended; `None` unless asked for.
    ends: Option<Vec<CallEnd>>,
    /// One slot per call, in the model's order; each ends holding the
    /// call's session entry.
    slots: Vec<Slot<E>>,
    /// Calls not started yet, in the model's order.
    waiting: VecDeque<usize>,
    in_flight: usize,
    /// Slots not yet `Ended`.
    left: usize,
    ready: Arc<ReadySet>,
    control: Arc<Control>,
    /// The calls' ids, in the model's order.
    ids: Arc<[String]>,
    /// Which call's tool may run when.
    order: Order,
    /// The turn's first failure, in a turn that stops there.
    stop: Option<Arc<Stop>>,
    finished: bool,
}

/// One call of the turn, from the model's message to its session entry.
enum Slot<E: Executor> {
    /// Not started: waiting for a free place under the concurrency bound.
    Waiting(Waiting),
    /// Started: its handle is polled by the turn.
    Started(Box<Started<E>>),
    /// Ended: what the session keeps of it.
    Ended(SessionEntry),
    /// Taken out for a moment while the slot moves from one state to the
    /// next; never seen between two steps of the turn.
    Vacant,
}

struct Waiting {
    call: ToolCall,
    /// Why the call is refused without asking anyone, if it is.
    fault: Option<Fault>,
}

/// A mistake of the model's message that refuses a call before its tool
/// is even looked at.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// The call's id is the id of the earlier call at this index.
    DuplicateOf(usize),
    /// The arguments nest deeper than the limit (and were taken apart).
    TooDeep,
    /// The model's arguments could not be read
    /// ([`ToolCall::malformed`]); the reason is on the call.
    Malformed,
}

struct Started<E: Executor> {
    handle: CallHandle<E>,
    waker: Waker,
    span: Span,
    call: CallRef,
    /// Held while the call waits for its gate, in a turn made within a
    /// call: that call's clock does not run meanwhile.
    parent_pause: Option<ClockPause>,
}

impl<E: Executor> Slot<E> {
    /// The session entry of the slot. Every slot yields one, so the entries
    /// are always one per call, in order: an `Ended` slot its own, and
    /// (should the turn ever be asked for its entries early) any other slot
    /// an aborted call's.
    fn into_entry(self, index: usize) -> SessionEntry {
        let (call_id, tool) = match self {
            Slot::Ended(entry) => return entry,
            Slot::Waiting(Waiting { call, .. }) => (call.id, call.name),
            Slot::Started(started) => (started.call.call_id, started.call.tool),
            Slot::Vacant => (String::new(), format!("call {index}")),
        };
        SessionEntry {
            result: ToolResult::error(exit_text(&tool, Exit::Aborted)),
            call_id,
            tool,
            outcome: Outcome::Aborted,
            cut_bytes: 0,
            waited: Duration::ZERO,
            queued: Duration::ZERO,
            ran: None,
            nested: Vec::new(),
        }
    }
}

impl<E: Executor> Turn<E> {
    pub(crate) fn new(
        config: Arc<Config<E>>,
        parent: Option<Parent>,
        calls: Vec<ToolCall>,
    ) -> Self {
        let count = calls.len();
        let ids: Arc<[String]> = calls.iter().map(|call| call.id.clone()).collect();
        let mut first: HashMap<&str, usize> = HashMap::new();
        let slots = calls
            .into_iter()
            .enumerate()
            .map(|(index, mut call)| {
                let fault = if call.malformed.is_some() {
                    Some(Fault::Malformed)
                } else if depth::nests_deeper_than(&call.arguments, ArgumentError::MAX_DEPTH) {
                    // Taken apart now, before anything (an event, the
                    // validator, a drop) can recurse through them.
                    let arguments = std::mem::replace(&mut call.arguments, depth::placeholder());
                    depth::dismantle(arguments);
                    Some(Fault::TooDeep)
                } else {
                    None
                };
                let fault = match first.get(ids[index].as_str()) {
                    Some(&earlier) => Some(Fault::DuplicateOf(earlier)),
                    None => {
                        first.insert(&ids[index], index);
                        fault
                    }
                };
                Slot::Waiting(Waiting { call, fault })
            })
            .collect();
        let ready = ReadySet::new(count);
        let stop = config.stop_on_failure.then(Arc::default);
        Self {
            id: TurnId::next(),
            config,
            parent,
            ends: None,
            slots,
            waiting: (0..count).collect(),
            in_flight: 0,
            left: count,
            control: Control::new(ids.clone(), ready.clone()),
            ready,
            ids,
            order: Order::new(count),
            stop,
            finished: false,
        }
    }

    /// The turn's id, as its events carry it.
    pub fn id(&self) -> TurnId {
        self.id
    }

    /// How many calls the turn has.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the turn has no calls (it ends at once, with no entries).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Keeps each call's whole end (all its text, all its details), beside
    /// the session entries the turn resolves to, for
    /// [`take_ends`](Self::take_ends): for a caller that needs what a call
    /// answered, not what the session keeps of it (a script's call of a
    /// tool, say). Costs a copy of each result.
    #[must_use]
    pub fn keep_ends(mut self) -> Self {
        self.ends = Some(Vec::new());
        self
    }

    /// The whole ends kept so far ([`keep_ends`](Self::keep_ends)), in the
    /// order the calls ended; empty unless asked for.
    pub fn take_ends(&mut self) -> Vec<CallEnd> {
        self.ends.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// A handle that aborts the turn or one of its calls from anywhere.
    pub fn abort_handle(&self) -> TurnAbort {
        TurnAbort::new(self.control.clone())
    }

    fn call_ref(&self, index: usize, call: &ToolCall) -> CallRef {
        CallRef {
            turn: self.id,
            index,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            parent_call_id: self.parent_call_id(),
        }
    }

    fn parent_call_id(&self) -> Option<String> {
        self.parent.as_ref().map(|parent| parent.call_id.clone())
    }

    /// Starts waiting calls while the bound allows, polling each once.
    fn start_more(&mut self) {
        while self.in_flight < self.config.max_concurrent {
            let Some(index) = self.waiting.pop_front() else {
                return;
            };
            self.start(index);
            self.poll_call(index);
        }
    }

    fn start(&mut self, index: usize) {
        let Slot::Waiting(Waiting { call, fault }) =
            std::mem::replace(&mut self.slots[index], Slot::Vacant)
        else {
            return;
        };
        if self.control.aborted_before_start(index) {
            self.end_unstarted(index, call);
            return;
        }
        let config = self.config.clone();
        let resolved = config.registry.resolve(&call.name);
        let reference = self.call_ref(index, &call);
        config
            .events
            .publish(TurnEvent::ToolExecutionStart(ExecutionStart {
                call: reference.clone(),
                arguments: call.arguments.clone(),
                untrusted: resolved.as_ref().is_ok_and(|r| r.info().untrusted),
            }));
        let span = span::call_span(&call.name, &call.id);
        let handle = {
            let _entered = span.enter();
            let runner = &config.runner;
            let faulty = fault.map(|fault| match fault {
                Fault::TooDeep => report::too_deep_result(&call.name),
                Fault::DuplicateOf(earlier) => report::duplicate_result(&call.id, earlier),
                Fault::Malformed => {
                    report::malformed_result(call.malformed.as_deref().unwrap_or_default())
                }
            });
            let start = self.start_of(index, &call, resolved, faulty);
            runner.start(call, start)
        };
        self.control.started(index, handle.abort_handle());
        config.nested.expect(handle.task());
        self.slots[index] = Slot::Started(Box::new(Started {
            handle,
            waker: self.ready.waker(index),
            span,
            call: reference,
            parent_pause: None,
        }));
        self.in_flight += 1;
    }

    /// How call `index` starts, and its place in the order taken.
    fn start_of(
        &mut self,
        index: usize,
        call: &ToolCall,
        resolved: Result<Resolved, Refusal>,
        faulty: Option<ToolResult>,
    ) -> Start {
        let config = self.config.clone();
        // A call after one that failed, in a turn that stops there, is not
        // run; nor is its source told (the model did nothing wrong).
        if let Some(failed) = self.stop.as_ref().and_then(|stop| stop.failed()) {
            self.order.start(index, Mode::Free);
            return Start::refused(failed.skipped_result());
        }
        let resolved = match (resolved, faulty) {
            (Ok(resolved), None) => resolved,
            // The model's mistakes in a call of a real tool are told to
            // its source, as refusals.
            (Ok(resolved), Some(result)) => {
                self.order.start(index, Mode::Free);
                return resolved.refused(result);
            }
            // A disabled tool's source hears of it too; an unknown name
            // has no source.
            (Err(refusal), Some(result)) => {
                self.order.start(index, Mode::Free);
                return Start::refused(result).maybe_watched_by(refusal.watch());
            }
            (Err(refusal), None) => {
                self.order.start(index, Mode::Free);
                return refusal.into();
            }
        };
        let checked = if config.validate {
            config.schemas.check_tool(resolved.info(), &call.arguments)
        } else {
            Ok(())
        };
        if let Err(error) = checked {
            self.order.start(index, Mode::Free);
            return resolved.refused(error.to_result());
        }
        let concurrency = config.concurrency_of(&call.name, resolved.info().concurrency);
        let mode = match concurrency {
            _ if !config.ordered => Mode::Free,
            Concurrency::Exclusive => Mode::Exclusive,
            Concurrency::Shared | Concurrency::Bounded(_) => Mode::Shared,
        };
        // The waits, in the one order every call takes them: its place in
        // the message, then the host's bound, then the registry's bounds
        // (so no two calls ever wait for each other).
        let mut waits: Vec<Wait> = Vec::new();
        if let Some((behind, place)) = self.order.start(index, mode) {
            waits.push(place.wait(self.ids[behind].clone(), behind));
        }
        waits.extend(config.bounds.get(&call.name).map(Bound::wait));
        let start = resolved.start_after(waits);
        // Last, right before the tool would run: has an earlier call failed
        // meanwhile?
        match (&self.stop, index.checked_sub(1)) {
            (Some(stop), Some(previous)) => {
                start.after(stop.check(index, (self.ids[previous].clone(), previous)))
            }
            _ => start,
        }
    }

    /// Ends a call that never started: aborted before it got a slot.
    fn end_unstarted(&mut self, index: usize, call: ToolCall) {
        let reference = self.call_ref(index, &call);
        let untrusted = self
            .config
            .registry
            .resolve(&call.name)
            .is_ok_and(|resolved| resolved.info().untrusted);
        self.config
            .events
            .publish(TurnEvent::ToolExecutionStart(ExecutionStart {
                call: reference,
                arguments: call.arguments,
                untrusted,
            }));
        let end = ExecutionEnd::new(
            self.id,
            index,
            self.parent_call_id(),
            CallEnd {
                result: ToolResult::error(exit_text(&call.name, Exit::Aborted)),
                call_id: call.id,
                tool: call.name,
                task: TaskId::NONE,
                outcome: Outcome::Aborted,
                waited: Duration::ZERO,
                queued: Duration::ZERO,
                ran: None,
            },
        );
        self.record_end(end);
    }

    /// Takes every event call `index` has for now.
    fn poll_call(&mut self, index: usize) {
        let Slot::Started(started) = &mut self.slots[index] else {
            return;
        };
        let mut cx = Context::from_waker(&started.waker);
        let _entered = started.span.enter();
        let mut budget = EVENTS_PER_POLL;
        let ended = loop {
            if budget == 0 {
                // A tool that reports faster than the loop takes its
                // updates must not keep the loop on this call: come back
                // after the others.
                started.waker.wake_by_ref();
                break None;
            }
            budget -= 1;
            match started.handle.poll_event(&mut cx) {
                Poll::Ready(Some(CallEvent::Ended(end))) => {
                    span::record_end(&started.span, end.outcome);
                    break Some(report::end(&started.call, end));
                }
                Poll::Ready(Some(event)) => {
                    match (&event, &self.parent) {
                        (CallEvent::AwaitingApproval(_), Some(parent)) => {
                            started.parent_pause = Some(parent.context.pause_clock());
                        }
                        (CallEvent::Running(_), _) => started.parent_pause = None,
                        _ => {}
                    }
                    if let Some(event) = report::progress(&started.call, event) {
                        self.config.events.publish(event);
                    }
                }
                Poll::Ready(None) | Poll::Pending => break None,
            }
        };
        drop(_entered);
        if let Some(end) = ended {
            self.in_flight -= 1;
            self.record_end(end);
        }
    }

    /// Ends a call's slot with its session entry; then its end event.
    fn record_end(&mut self, end: ExecutionEnd) {
        let cap = self.config.cap_for(end.tool());
        let kept: Option<Plain> = self.config.keep.keep(&end);
        let index = end.index;
        let mut entry = report::entry(&end, kept, cap);
        entry.nested = self.config.nested.take(end.task());
        self.slots[index] = Slot::Ended(entry);
        if let Some(ends) = &mut self.ends {
            ends.push(end.record().clone());
        }
        self.control.ended(index);
        self.left -= 1;
        if let Some(stop) = &self.stop
            && end.outcome() != Outcome::Succeeded
        {
            let failed = Failed {
                index,
                call_id: end.call_id().to_owned(),
                tool: end.tool().to_owned(),
                outcome: end.outcome(),
            };
            if stop.fail(failed.clone()) {
                // Refused first, so that ending this call opens no place
                // after it: the calls waiting behind it end at once.
                self.order.refuse_after(index, |_| failed.skipped_result());
            }
        }
        self.order.end(index);
        self.config.events.publish(TurnEvent::ToolExecutionEnd(end));
    }

    /// Ends the waiting calls the host aborted.
    fn end_aborted_waiting(&mut self) {
        let waiting = std::mem::take(&mut self.waiting);
        for index in waiting {
            if !self.control.aborted_before_start(index) {
                self.waiting.push_back(index);
                continue;
            }
            if let Slot::Waiting(Waiting { call, .. }) =
                std::mem::replace(&mut self.slots[index], Slot::Vacant)
            {
                self.end_unstarted(index, call);
            }
        }
    }
}

impl<E: Executor> Future for Turn<E> {
    type Output = Vec<SessionEntry>;

    /// Resolves once to the session entries, in call order. Polling again
    /// after that stays pending.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Vec<SessionEntry>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Pending;
        }
        this.ready.register(cx.waker());
        let (ready, poked) = this.ready.take();
        if poked {
            this.end_aborted_waiting();
        }
        for index in ready {
            this.poll_call(index);
        }
        this.start_more();
        if this.left > 0 {
            return Poll::Pending;
        }
        this.finished = true;
        let slots = std::mem::take(&mut this.slots);
        let entries: Vec<SessionEntry> = slots
            .into_iter()
            .enumerate()
            .map(|(index, slot)| slot.into_entry(index))
            .collect();
        if let Some(parent) = &this.parent {
            this.config.nested.add(parent.context.task(), &entries);
        }
        Poll::Ready(entries)
    }
}

impl<E: Executor> Drop for Turn<E> {
    /// Aborts the calls in flight and reports their ends.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let noop = Waker::noop();
        let mut cx = Context::from_waker(noop);
        for slot in &mut self.slots {
            let Slot::Started(started) = slot else {
                continue;
            };
            started.handle.abort();
            // The handle reports what it had, then the abort as the end;
            // a handle reports a bounded number of events before its end.
            let end = loop {
                match started.handle.poll_event(&mut cx) {
                    Poll::Ready(Some(CallEvent::Ended(end))) => break Some(end),
                    Poll::Ready(Some(_progress)) => continue,
                    Poll::Ready(None) | Poll::Pending => break None,
                }
            };
            // A call whose task had already answered ends with its own
            // outcome (an abort does not undo an end): the span says what
            // the end event says.
            let outcome = end.as_ref().map_or(Outcome::Aborted, |end| end.outcome);
            span::record_end(&started.span, outcome);
            if let Some(end) = end {
                let end = report::end(&started.call, end);
                self.config.nested.take(end.task());
                self.config.events.publish(TurnEvent::ToolExecutionEnd(end));
            }
            *slot = Slot::Vacant;
        }
    }
}

impl<E: Executor> fmt::Debug for Turn<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn")
            .field("id", &self.id)
            .field("calls", &self.slots.len())
            .field("in_flight", &self.in_flight)
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}
