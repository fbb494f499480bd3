//! The subscribers: one that checks every call's events against its session
//! entry, and a churn of subscribers that panic, lag, or are dropped while
//! events flow.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rho_conformance::support::block_on_within;
use rho_tool_core::Outcome;
use rho_turn::{EventBus, Subscriber, TurnEvent, TurnId};

/// How many event problems are described in full.
const DESCRIBED: usize = 12;

/// Checks that every call of every turn gets exactly one start and one end
/// event, and that the end's outcome is the session entry's.
///
/// The subscriber (on its own thread) and the drivers (when a turn ended)
/// meet here, in either order; a turn is forgotten once both sides are in
/// and agree, so memory stays bounded.
#[derive(Debug, Default)]
pub(crate) struct EventCheck {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    turns: HashMap<TurnId, Seen>,
    starts: u64,
    ends: u64,
    wrong: u64,
    described: Vec<String>,
}

#[derive(Debug, Default)]
struct Seen {
    starts: Vec<u32>,
    ends: Vec<Option<Outcome>>,
    extra_ends: u32,
    /// The entries' outcomes, once the driver has them; and its label.
    expected: Option<(Vec<Option<Outcome>>, String)>,
}

impl State {
    fn wrong(&mut self, description: String) {
        self.wrong += 1;
        if self.described.len() < DESCRIBED {
            self.described.push(description);
        }
    }

    fn seen(&mut self, turn: TurnId) -> &mut Seen {
        self.turns.entry(turn).or_default()
    }

    /// Compares and forgets `turn` once both sides are in.
    fn settle(&mut self, turn: TurnId) {
        let Some(seen) = self.turns.get(&turn) else {
            return;
        };
        let Some((expected, _)) = &seen.expected else {
            return;
        };
        let ended = seen.ends.iter().filter(|end| end.is_some()).count();
        if ended < expected.len() && seen.extra_ends == 0 {
            return;
        }
        let Some(seen) = self.turns.remove(&turn) else {
            return;
        };
        let Some((expected, label)) = seen.expected else {
            return;
        };
        let mut problems = Vec::new();
        if seen.extra_ends > 0 {
            problems.push(format!("{} end events too many", seen.extra_ends));
        }
        if seen.ends.len() > expected.len() {
            problems.push(format!(
                "end events for {} calls, the turn has {}",
                seen.ends.len(),
                expected.len()
            ));
        }
        for (index, entry) in expected.iter().enumerate() {
            let starts = seen.starts.get(index).copied().unwrap_or(0);
            if starts != 1 {
                problems.push(format!("call {index}: {starts} start events"));
            }
            let end = seen.ends.get(index).copied().flatten();
            if end != *entry {
                problems.push(format!(
                    "call {index}: end event {end:?}, session entry {entry:?}"
                ));
            }
        }
        if !problems.is_empty() {
            self.wrong(format!("events of {label}: {}", problems.join("; ")));
        }
    }
}

impl EventCheck {
    /// The driver's side: turn `turn` (described by `label`) ended with these
    /// entries' outcomes.
    pub(crate) fn expect(&self, turn: TurnId, label: String, outcomes: Vec<Option<Outcome>>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.seen(turn).expected = Some((outcomes, label));
        state.settle(turn);
    }

    fn on_event(&self, event: &TurnEvent) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let turn = event.turn();
        let index = event.index();
        match event {
            TurnEvent::ToolExecutionStart(_) => {
                state.starts += 1;
                let seen = state.seen(turn);
                if seen.starts.len() <= index {
                    seen.starts.resize(index + 1, 0);
                }
                seen.starts[index] += 1;
            }
            TurnEvent::ToolExecutionEnd(end) => {
                state.ends += 1;
                let seen = state.seen(turn);
                if seen.ends.len() <= index {
                    seen.ends.resize(index + 1, None);
                }
                if seen.ends[index].is_some() {
                    seen.extra_ends += 1;
                } else {
                    seen.ends[index] = Some(end.outcome());
                }
                state.settle(turn);
            }
            _ => {}
        }
    }

    /// Start and end events seen, problems found, their first descriptions,
    /// and the turns whose events never all came (each one a problem too).
    pub(crate) fn finish(&self) -> EventReport {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let unsettled: Vec<TurnId> = state.turns.keys().copied().collect();
        for turn in &unsettled {
            let description = match &state.turns[turn].expected {
                Some((_, label)) => format!("events of {label}: some end events never came"),
                None => format!("events of {turn}: the soak never saw this turn end"),
            };
            state.wrong(description);
        }
        state.turns.clear();
        EventReport {
            starts: state.starts,
            ends: state.ends,
            wrong: state.wrong,
            described: state.described.clone(),
        }
    }
}

/// What the event check found.
#[derive(Debug, Clone)]
pub(crate) struct EventReport {
    pub(crate) starts: u64,
    pub(crate) ends: u64,
    pub(crate) wrong: u64,
    pub(crate) described: Vec<String>,
}

/// The checking subscriber.
pub(crate) struct Checker(pub(crate) Arc<EventCheck>);

impl Subscriber for Checker {
    fn on_event(&mut self, event: &TurnEvent) {
        self.0.on_event(event);
    }
}

/// What the churn of subscribers did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ChurnReport {
    pub(crate) panicking: u64,
    pub(crate) panics_contained: u64,
    pub(crate) lagging: u64,
    pub(crate) updates_lagged: u64,
    pub(crate) streams_dropped: u64,
    pub(crate) stream_events: u64,
}

/// A thread that adds and removes subscribers while the soak runs.
pub(crate) struct Churn {
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<ChurnReport>>>,
}

impl Churn {
    /// Starts churning subscribers of `bus`, choosing with `seed`.
    pub(crate) fn start(bus: EventBus, seed: u64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rho-soak-churn".to_owned())
            .spawn(move || churn(&bus, seed, &stopping))
            .expect("a thread for the subscriber churn");
        Self {
            stop,
            thread: Mutex::new(Some(thread)),
        }
    }

    /// Stops and reports (an empty report the second time).
    pub(crate) fn stop(&self) -> ChurnReport {
        self.stop.store(true, Ordering::SeqCst);
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        thread.map_or_else(ChurnReport::default, |thread| {
            thread.join().unwrap_or_default()
        })
    }
}

fn churn(bus: &EventBus, seed: u64, stop: &AtomicBool) -> ChurnReport {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut report = ChurnReport::default();
    let mut first = true;
    while !stop.load(Ordering::SeqCst) {
        let life = Duration::from_millis(rng.u64(20..=200));
        // The first is a lagging one that lives longest: part of the
        // warm-up, like the largest turns.
        let kind = if first { 1 } else { rng.u8(0..3) };
        first = false;
        match kind {
            0 => {
                let mut seen = 0_u64;
                let subscription = bus.subscribe(move |_event: &TurnEvent| {
                    seen += 1;
                    match seen % 10 {
                        3 => panic!("a subscriber panics on purpose, at event {seen}"),
                        7 => std::panic::panic_any("a subscriber panics with a str"),
                        _ => {}
                    }
                });
                if let Ok(subscription) = subscription {
                    std::thread::sleep(life);
                    report.panicking += 1;
                    report.panics_contained += subscription.panics();
                    subscription.unsubscribe();
                }
            }
            1 => {
                let subscription = bus.subscribe(|_event: &TurnEvent| {
                    std::thread::sleep(Duration::from_micros(300));
                });
                if let Ok(subscription) = subscription {
                    // Short-lived: every notice it falls behind on stays
                    // buffered (notices are never dropped) until it goes.
                    std::thread::sleep(life / 4);
                    report.lagging += 1;
                    report.updates_lagged += subscription.lagged();
                    subscription.unsubscribe();
                }
            }
            _ => {
                let mut stream = bus.stream();
                let wanted = rng.u64(1..=64);
                for _ in 0..wanted {
                    match block_on_within(life, stream.recv()) {
                        Some(Some(_event)) => report.stream_events += 1,
                        _ => break,
                    }
                }
                // Dropped while events flow: it unsubscribes.
                drop(stream);
                report.streams_dropped += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(rng.u64(5..=40)));
    }
    report
}
