//! Waiting that is not the tool's: an approval nobody answers ends at the
//! host's deadline, a call waiting for its place in the model's order is
//! off its clock and says what it waits for, approvals are asked for the
//! whole message at once, and a turn asked to stop at the first failure
//! answers each skipped call. Each on tokio and on smol.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rho_tool_core::{
    ApprovalRequest, Concurrency, Executor, Gate, Outcome, Tool, ToolCall, ToolOutput, Verdict,
    WaitingFor, async_trait,
};
use rho_turn::{SessionEntry, TurnEvent};
use serde_json::json;
use support::{Recorder, Tools, call, tool};

/// Asks the approver about every tool whose name starts with `ask_`,
/// allows the others.
struct AskGate;

#[async_trait]
impl Gate for AskGate {
    async fn check(&self, _call: &ToolCall, tool: &dyn Tool) -> Verdict {
        if tool.name().starts_with("ask_") {
            Verdict::Ask {
                reason: "it writes".to_owned(),
            }
        } else {
            Verdict::Allow
        }
    }
}

/// An exclusive tool that counts its runs and answers `answer`.
fn counted(
    name: &'static str,
    runs: &Arc<AtomicUsize>,
    answer: fn() -> ToolOutput,
) -> support::FnTool<
    impl Fn(serde_json::Value, rho_tool_core::ToolContext) -> std::future::Ready<ToolOutput>
    + Send
    + Sync
    + 'static,
> {
    let runs = runs.clone();
    tool(name, move |_args, _cx| {
        runs.fetch_add(1, Ordering::SeqCst);
        std::future::ready(answer())
    })
    .with_concurrency(Concurrency::Exclusive)
}

fn by_id<'a>(entries: &'a [SessionEntry], id: &str) -> &'a SessionEntry {
    entries
        .iter()
        .find(|entry| entry.call_id == id)
        .unwrap_or_else(|| panic!("no entry for call {id}"))
}

fn an_unanswered_approval_ends_at_the_deadline<E: Executor>(
    executor: E,
    block_on: impl FnOnce(rho_turn::Turn<E>) -> Vec<SessionEntry>,
) {
    let runs = Arc::new(AtomicUsize::new(0));
    let read_runs = Arc::new(AtomicUsize::new(0));
    let tools = Tools::new()
        .add(counted("ask_write", &runs, || ToolOutput::text("written")))
        .add(
            counted("read", &read_runs, || ToolOutput::text("read"))
                .with_concurrency(Concurrency::Shared),
        );
    let timer = executor.clone();
    // A person who never answers: the approver waits an hour.
    let approver = move |_request: ApprovalRequest| {
        let sleep = timer.sleep(Duration::from_secs(3600));
        async move {
            sleep.await;
            Verdict::Allow
        }
    };
    let turns = tools
        .turns(executor, Arc::new(AskGate))
        .with_approver(Arc::new(approver))
        .with_approval_deadline(Duration::from_millis(150));
    let entries = block_on(turns.turn([
        call("w", "ask_write", json!({})),
        call("r", "read", json!({})),
    ]));

    let write = by_id(&entries, "w");
    assert_eq!(write.outcome, Outcome::Denied, "{}", write.text());
    assert!(
        write.text().contains("nobody answered within 150ms"),
        "{}",
        write.text()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a denied tool never runs");
    assert!(
        write.waited >= Duration::from_millis(150),
        "{:?}",
        write.waited
    );
    // The other call of the message did not wait for the person.
    assert_eq!(by_id(&entries, "r").outcome, Outcome::Succeeded);
    assert_eq!(read_runs.load(Ordering::SeqCst), 1);
    // Counted as denied, never as a strike against the tool.
    let health = tools
        .builtin
        .tool_health("ask_write")
        .expect("the call was counted");
    assert_eq!(health.denied, 1, "{health:?}");
    assert_eq!(
        (health.failed, health.crashed, health.timed_out),
        (0, 0, 0),
        "{health:?}"
    );
    assert!(tools.builtin.quarantine("ask_write").is_none());
}

/// `[write (exclusive, 300 ms), read (shared, timeout 200 ms)]`: the read
/// waits for the write longer than its own timeout and still succeeds,
/// because waiting for its place is not on its clock.
fn waiting_for_order_is_off_the_clock<E: Executor>(
    executor: E,
    block_on: impl FnOnce(rho_turn::Turn<E>) -> Vec<SessionEntry>,
) {
    const WRITE_TAKES: Duration = Duration::from_millis(300);
    let read_started_early = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicBool::new(false));
    let write = {
        let written = written.clone();
        tool("write", move |_args, cx| {
            let written = written.clone();
            async move {
                cx.sleep(WRITE_TAKES).await;
                written.store(true, Ordering::SeqCst);
                ToolOutput::text("written")
            }
        })
        .with_concurrency(Concurrency::Exclusive)
    };
    let read = {
        let written = written.clone();
        let early = read_started_early.clone();
        tool("read", move |_args, _cx| {
            if !written.load(Ordering::SeqCst) {
                early.store(true, Ordering::SeqCst);
            }
            async { ToolOutput::text("read") }
        })
        .with_timeout(Duration::from_millis(200))
    };
    let tools = Tools::new().add(write).add(read);
    let turns = tools.turns(executor, Arc::new(rho_tool_core::AllowAll));
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);
    let entries =
        block_on(turns.turn([call("w", "write", json!({})), call("r", "read", json!({}))]));

    let read = by_id(&entries, "r");
    assert_eq!(read.outcome, Outcome::Succeeded, "{}", read.text());
    assert!(!read_started_early.load(Ordering::SeqCst));
    // It waited at least as long as the write ran, and that time is the
    // entry's `queued`, not its `ran`.
    assert!(read.queued >= WRITE_TAKES, "{:?}", read.queued);
    let ran = read.ran.expect("the read ran");
    assert!(ran < WRITE_TAKES, "{ran:?}");

    // One queued event, naming the call it waited for; none for the write.
    assert!(subscription.wait_idle(Duration::from_secs(10)));
    let queued: Vec<_> = recorder
        .all()
        .into_iter()
        .filter_map(|event| match event {
            TurnEvent::ToolExecutionQueued(queued) => Some(queued),
            _ => None,
        })
        .collect();
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0].record().call_id, "r");
    assert_eq!(
        queued[0].record().waiting_for,
        WaitingFor::Call {
            call_id: "w".to_owned(),
            index: 0
        }
    );
    assert_eq!(
        recorder.names_of(1),
        [
            "tool_execution_start",
            "tool_execution_queued",
            "tool_execution_running",
            "tool_execution_end"
        ]
    );
}

/// `[first (exclusive), ask_second (exclusive, needs approval)]`: the
/// person is asked about the second call while the first still runs; the
/// first ends only once that question was asked, so an approval asked in
/// the call's place would never come and the first would say so.
fn approvals_are_asked_for_the_whole_message_at_once<E: Executor>(
    executor: E,
    block_on: impl FnOnce(rho_turn::Turn<E>) -> Vec<SessionEntry>,
) {
    let asked = Arc::new(AtomicBool::new(false));
    let first = {
        let asked = asked.clone();
        tool("first", move |_args, cx| {
            let asked = asked.clone();
            async move {
                for _ in 0..500 {
                    if asked.load(Ordering::SeqCst) {
                        return ToolOutput::text("the second was asked about while I ran");
                    }
                    cx.sleep(Duration::from_millis(10)).await;
                }
                ToolOutput::error("the second call was not asked about while I ran")
            }
        })
        .with_concurrency(Concurrency::Exclusive)
    };
    let second_ran_alone = Arc::new(AtomicUsize::new(0));
    let tools = Tools::new()
        .add(first)
        .add(counted("ask_second", &second_ran_alone, || {
            ToolOutput::text("second")
        }));
    let approver = {
        let asked = asked.clone();
        move |_request: ApprovalRequest| {
            asked.store(true, Ordering::SeqCst);
            async { Verdict::Allow }
        }
    };
    let turns = tools
        .turns(executor, Arc::new(AskGate))
        .with_approver(Arc::new(approver));
    let entries = block_on(turns.turn([
        call("1", "first", json!({})),
        call("2", "ask_second", json!({})),
    ]));
    assert_eq!(
        entries[0].outcome,
        Outcome::Succeeded,
        "{}",
        entries[0].text()
    );
    assert_eq!(
        entries[1].outcome,
        Outcome::Succeeded,
        "{}",
        entries[1].text()
    );
    assert_eq!(second_ran_alone.load(Ordering::SeqCst), 1);
}

/// `[a ok, b fails, c ok, d ok]`, all exclusive: with the turn asked to stop
/// at the first failure, c and d never run and each gets its own answer
/// naming b; without it, every call runs.
fn stop_on_failure<E: Executor>(
    executor: E,
    block_on: impl Fn(rho_turn::Turn<E>) -> Vec<SessionEntry>,
) {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = Tools::new()
        .add(counted("ok", &runs, || ToolOutput::text("fine")))
        .add(counted("fails", &runs, || ToolOutput::error("it broke")));
    let message = || {
        [
            call("a", "ok", json!({})),
            call("b", "fails", json!({})),
            call("c", "ok", json!({})),
            call("d", "ok", json!({})),
        ]
    };
    let turns = tools.turns(executor, Arc::new(rho_tool_core::AllowAll));

    let stopping = turns.clone().with_stop_on_failure(true);
    let entries = block_on(stopping.turn(message()));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "a and b ran, c and d did not"
    );
    let outcomes: Vec<Outcome> = entries.iter().map(|entry| entry.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Succeeded,
            Outcome::Failed,
            Outcome::Refused,
            Outcome::Refused
        ]
    );
    for skipped in &entries[2..] {
        let text = skipped.text();
        assert!(text.contains("was not run"), "{text}");
        assert!(text.contains("call `b`"), "{text}");
        assert!(skipped.ran.is_none());
    }

    runs.store(0, Ordering::SeqCst);
    let entries = block_on(turns.turn(message()));
    assert_eq!(runs.load(Ordering::SeqCst), 4, "by default every call runs");
    assert_eq!(entries[3].outcome, Outcome::Succeeded);
}

on_tokio_and_smol! {
    an_unanswered_approval_is_denied_at_the_deadline_and_is_no_strike => an_unanswered_approval_ends_at_the_deadline;
    waiting_for_an_earlier_call_is_off_the_clock_and_names_it => waiting_for_order_is_off_the_clock;
    approvals_are_asked_before_earlier_calls_end => approvals_are_asked_for_the_whole_message_at_once;
    a_turn_that_stops_at_a_failure_answers_each_skipped_call => stop_on_failure;
}
