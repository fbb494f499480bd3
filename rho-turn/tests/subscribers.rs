//! Subscribers: slow and panicking ones cost the others nothing, they come
//! and go during a turn, and a full buffer drops old updates with a count.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::install_quiet_panic_hook;
use rho_tool_core::{AllowAll, Outcome, ToolContext, ToolOutput};
use rho_turn::{EventBus, Subscriber, TurnEvent};
use serde_json::json;
use support::{Tools, call, echo, executor, runtime, tool};

const CALLS: usize = 1000;

/// Counts starts and ends.
#[derive(Clone, Default)]
struct Counter {
    starts: Arc<AtomicUsize>,
    ends: Arc<AtomicUsize>,
}

impl Counter {
    fn callback(&self) -> impl FnMut(&TurnEvent) + Send + 'static {
        let this = self.clone();
        move |event| match event {
            TurnEvent::ToolExecutionStart(_) => {
                this.starts.fetch_add(1, Ordering::SeqCst);
            }
            TurnEvent::ToolExecutionEnd(_) => {
                this.ends.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
    }
}

#[test]
fn a_slow_and_a_panicking_subscriber_cost_the_others_nothing() {
    install_quiet_panic_hook();
    let runtime = runtime();
    let tools = Tools::new().add(echo());
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let calls =
        || (0..CALLS).map(|i| call(format!("c{i}"), "echo", json!({ "text": i.to_string() })));

    // Warm up, then time a turn with well-behaved subscribers only.
    runtime.block_on(turns.turn(calls()));
    let quiet = Counter::default();
    let quiet_subscription = turns
        .events()
        .subscribe(quiet.callback())
        .expect("a thread");
    let started = Instant::now();
    let entries = runtime.block_on(turns.turn(calls()));
    let baseline = started.elapsed();
    assert_eq!(entries.len(), CALLS);
    quiet_subscription.unsubscribe();

    // The same turn with a subscriber that sleeps on every event and one
    // that panics on every event, beside two well-behaved ones (a callback
    // and a stream).
    let slow_seen = Arc::new(AtomicUsize::new(0));
    let seen = slow_seen.clone();
    let slow = turns
        .events()
        .subscribe(move |_event: &TurnEvent| {
            seen.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
        })
        .expect("a thread");
    let panicking = turns
        .events()
        .subscribe(|event: &TurnEvent| panic!("subscriber bug on {}", event.name()))
        .expect("a thread");
    let good = Counter::default();
    let good_subscription = turns.events().subscribe(good.callback()).expect("a thread");
    let mut stream = turns.events().stream();

    let started = Instant::now();
    let entries = runtime.block_on(turns.turn(calls()));
    let with_slow = started.elapsed();

    assert_eq!(entries.len(), CALLS);
    for (i, entry) in entries.iter().enumerate() {
        assert_eq!(entry.outcome, Outcome::Succeeded);
        assert_eq!(entry.text(), i.to_string());
    }
    assert!(good_subscription.wait_idle(Duration::from_secs(30)));
    assert_eq!(good.ends.load(Ordering::SeqCst), CALLS);
    assert_eq!(good.starts.load(Ordering::SeqCst), CALLS);
    let mut stream_ends = 0;
    while let Some(event) = stream.try_recv() {
        stream_ends += usize::from(matches!(*event, TurnEvent::ToolExecutionEnd(_)));
    }
    assert_eq!(stream_ends, CALLS);
    assert_eq!(stream.lagged(), 0);

    // The panicking subscriber was called for every event, and kept going.
    assert!(panicking.wait_idle(Duration::from_secs(30)));
    assert!(
        panicking.panics() >= 2 * CALLS as u64,
        "{}",
        panicking.panics()
    );
    assert!(
        panicking
            .last_panic()
            .expect("a message")
            .contains("subscriber bug")
    );
    assert!(panicking.is_active());
    // The slow one is far behind, and nobody waited for it.
    assert!(slow_seen.load(Ordering::SeqCst) < 2 * CALLS);
    assert!(slow.pending() > 0);
    let limit = baseline * 5 + Duration::from_millis(500);
    eprintln!("1,000 calls: {baseline:?} without the slow subscriber, {with_slow:?} with it");
    assert!(
        with_slow < limit,
        "{with_slow:?} with a slow subscriber, {baseline:?} without"
    );
    assert!(slow.unsubscribe());
    assert!(!slow.is_active());
}

#[test]
fn subscribers_come_and_go_during_a_turn() {
    let runtime = runtime();
    // Each call waits for its `go` flag, so the test decides what happens
    // between subscribing and unsubscribing.
    let go = Arc::new(AtomicUsize::new(0));
    let gate = go.clone();
    let stepped = tool("stepped", move |args, cx: ToolContext| {
        let go = gate.clone();
        async move {
            let step = args["step"].as_u64().expect("a step") as usize;
            while go.load(Ordering::SeqCst) < step {
                cx.sleep(Duration::from_millis(1)).await;
            }
            ToolOutput::text("ok")
        }
    });
    let tools = Tools::new().add(stepped);
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let early = Counter::default();
    let early_subscription = turns
        .events()
        .subscribe(early.callback())
        .expect("a thread");

    let turn = turns
        .turn((1..=3).map(|step| call(format!("s{step}"), "stepped", json!({ "step": step }))));
    let task = runtime.spawn(turn);

    go.store(1, Ordering::SeqCst);
    support::wait_until("the first end", || early.ends.load(Ordering::SeqCst) == 1);
    let late = Counter::default();
    let late_subscription = turns.events().subscribe(late.callback()).expect("a thread");
    assert_eq!(turns.events().subscriber_count(), 2);
    go.store(2, Ordering::SeqCst);
    support::wait_until("the second end", || {
        late.ends.load(Ordering::SeqCst) == 1 && early.ends.load(Ordering::SeqCst) == 2
    });
    assert!(early_subscription.unsubscribe());
    go.store(3, Ordering::SeqCst);
    let entries = runtime.block_on(task).expect("the turn's task");
    assert_eq!(entries.len(), 3);
    assert!(late_subscription.wait_idle(Duration::from_secs(10)));
    assert_eq!(late.ends.load(Ordering::SeqCst), 2);
    assert_eq!(early.ends.load(Ordering::SeqCst), 2);
    assert_eq!(turns.events().subscriber_count(), 1);
}

/// Records updates and lag.
struct Lagging {
    updates: Arc<AtomicUsize>,
    lagged: Arc<AtomicU64>,
    release: Arc<AtomicUsize>,
}

impl Subscriber for Lagging {
    fn on_event(&mut self, event: &TurnEvent) {
        // Stuck until released: everything piles up in the buffer.
        while self.release.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        if let TurnEvent::ToolExecutionUpdate(_) = event {
            self.updates.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn on_lagged(&mut self, dropped: u64) {
        self.lagged.fetch_add(dropped, Ordering::SeqCst);
    }
}

#[test]
fn a_full_buffer_drops_the_oldest_updates_and_counts_them() {
    let runtime = runtime();
    let chatty = tool("chatty", |_args, cx: ToolContext| async move {
        for i in 0..100 {
            cx.update(&json!({ "i": i })).expect("plain");
            // Give the loop time to take each update, so the core's own
            // queue drops nothing and only the subscriber's buffer does.
            cx.sleep(Duration::from_millis(1)).await;
        }
        ToolOutput::text("done")
    });
    let tools = Tools::new().add(chatty);
    let turns = tools
        .turns(executor(&runtime), Arc::new(AllowAll))
        .with_events(EventBus::with_buffer(10));
    let release = Arc::new(AtomicUsize::new(0));
    let updates = Arc::new(AtomicUsize::new(0));
    let lagged = Arc::new(AtomicU64::new(0));
    let subscription = turns
        .events()
        .subscribe(Lagging {
            updates: updates.clone(),
            lagged: lagged.clone(),
            release: release.clone(),
        })
        .expect("a thread");
    let mut stream = turns.events().stream();

    let entries = runtime.block_on(turns.turn([call("c", "chatty", json!({}))]));
    assert_eq!(entries[0].text(), "done");
    release.store(1, Ordering::SeqCst);
    assert!(subscription.wait_idle(Duration::from_secs(10)));

    // The stuck subscriber kept the newest 10 updates and was told of the
    // rest; the end was never dropped.
    let (got, dropped) = (
        updates.load(Ordering::SeqCst),
        lagged.load(Ordering::SeqCst),
    );
    assert_eq!(got + dropped as usize, 100, "got {got}, dropped {dropped}");
    assert!(got <= 11, "{got}");
    assert_eq!(subscription.lagged(), dropped);
    // The stream, never polled during the turn, likewise.
    let events: Vec<_> = std::iter::from_fn(|| stream.try_recv()).collect();
    let names: Vec<&str> = events.iter().map(|e| e.name()).collect();
    assert_eq!(names.first(), Some(&"tool_execution_start"));
    assert_eq!(names.last(), Some(&"tool_execution_end"));
    let stream_updates = names
        .iter()
        .filter(|n| **n == "tool_execution_update")
        .count();
    assert_eq!(stream_updates, 10);
    assert_eq!(stream.lagged(), 90);
    // The newest updates are the ones kept.
    let last_update = events
        .iter()
        .rev()
        .find_map(|e| match &**e {
            TurnEvent::ToolExecutionUpdate(update) => Some(update.record().partial.to_json()),
            _ => None,
        })
        .expect("an update");
    assert_eq!(last_update, json!({ "i": 99 }));
}
