//! An untrusted tool's answer is made plain data inside its task (DESIGN.md
//! step 6): its `Serialize` and `Drop` run there, never in the loop, and the
//! loop only gets `Plain` data.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use rho_tool_core::untrusted::{Limits, Phase, Plain, panic_text};
use rho_tool_core::{CallEnd, Outcome, Runner, ToolOutput, ToolResult};
use serde::ser::{Error as _, SerializeStruct};
use serde::{Serialize, Serializer};
use support::{InLoop, Record, Tattle, TestTool, call, executor, in_loop};

/// Where a piece of code ran: how often, how often inside the loop's mark,
/// on which thread and in which tokio task.
#[derive(Default)]
struct Where {
    runs: AtomicUsize,
    in_loop: AtomicUsize,
    thread: Mutex<Option<ThreadId>>,
    task: Mutex<Option<Option<tokio::task::Id>>>,
}

impl Where {
    fn note(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if in_loop() {
            self.in_loop.fetch_add(1, Ordering::SeqCst);
        }
        *self.thread.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(std::thread::current().id());
        *self.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(tokio::task::try_id());
    }

    fn thread(&self) -> Option<ThreadId> {
        *self.thread.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `None`: never ran; `Some(None)`: ran outside any tokio task.
    fn task(&self) -> Option<Option<tokio::task::Id>> {
        *self.task.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the answer's `Serialize` does.
#[derive(Clone, Copy)]
enum Behaviour {
    Fields,
    PanicWithText,
    PanicWithCustomPayload,
    Error,
}

/// An answer's details whose `Serialize` records where it ran and whose
/// `Drop` records itself.
struct Spy {
    serialized: Arc<Where>,
    dropped: Arc<Record>,
    behaviour: Behaviour,
}

#[derive(Serialize)]
struct Inner {
    ok: bool,
    delta: i64,
}

impl Serialize for Spy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialized.note();
        match self.behaviour {
            Behaviour::Fields => {}
            Behaviour::PanicWithText => panic!("the answer's Serialize exploded"),
            Behaviour::PanicWithCustomPayload => std::panic::panic_any(Tattle::new(&self.dropped)),
            Behaviour::Error => return Err(S::Error::custom("the answer refused to serialize")),
        }
        let mut state = serializer.serialize_struct("Spy", 5)?;
        state.serialize_field("file", "src/main.rs")?;
        state.serialize_field("line", &3_u32)?;
        state.serialize_field("score", &f64::NAN)?;
        state.serialize_field("tags", &["hot", "new"])?;
        state.serialize_field(
            "nested",
            &Inner {
                ok: true,
                delta: -2,
            },
        )?;
        state.end()
    }
}

impl Drop for Spy {
    fn drop(&mut self) {
        self.dropped.note_drop();
    }
}

struct Run {
    end: CallEnd,
    serialized: Arc<Where>,
    dropped: Arc<Record>,
    ran: Arc<Where>,
}

/// Runs an untrusted tool that answers a [`Spy`] of `behaviour`, with the
/// loop marked.
async fn run_spy(behaviour: Behaviour) -> Run {
    let serialized = Arc::new(Where::default());
    let dropped = Record::new();
    let ran = Arc::new(Where::default());
    let tool = {
        let (serialized, dropped, ran) = (serialized.clone(), dropped.clone(), ran.clone());
        TestTool::new("search", move |_, _| {
            let spy = Spy {
                serialized: serialized.clone(),
                dropped: dropped.clone(),
                behaviour,
            };
            let ran = ran.clone();
            async move {
                ran.note();
                ToolOutput::text("1 hit").with_details(spy)
            }
        })
        .untrusted()
    };
    let tool = tool.into_arc();
    assert!(tool.is_untrusted());
    let runner = Runner::new(executor());
    let end = InLoop::new(runner.start(call("c1", "search"), tool)).await;
    Run {
        end,
        serialized,
        dropped,
        ran,
    }
}

/// The details' `Serialize` ran in the call's own tokio task (the same task
/// as the tool's `run`), on a worker thread, never inside the loop's polls;
/// their `Drop` ran once, not in the loop; the loop got a `Plain` map with
/// the fields, the NaN made text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_answer_is_made_plain_inside_its_task_and_the_loop_gets_plain_data() {
    let loop_thread = std::thread::current().id();
    let Run {
        end,
        serialized,
        dropped,
        ran,
    } = run_spy(Behaviour::Fields).await;

    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "1 hit");
    assert!(!end.result.is_error);

    assert_eq!(serialized.runs.load(Ordering::SeqCst), 1);
    assert_eq!(serialized.in_loop.load(Ordering::SeqCst), 0);
    let run_task = ran.task().expect("the tool ran");
    assert!(run_task.is_some(), "the tool runs in a tokio task");
    assert_eq!(
        serialized.task(),
        Some(run_task),
        "Serialize ran outside the call's task"
    );
    assert_ne!(serialized.thread(), Some(loop_thread));
    assert_eq!(dropped.drops(), 1);
    assert_eq!(dropped.in_loop(), 0);

    let details = end.result.details.expect("the answer had details");
    assert!(matches!(details, Plain::Map(_)), "{details:?}");
    let expected = Plain::Map(BTreeMap::from([
        ("file".to_owned(), Plain::Text("src/main.rs".into())),
        ("line".to_owned(), Plain::UInt(3)),
        ("score".to_owned(), Plain::Text("NaN".into())),
        (
            "tags".to_owned(),
            Plain::List(vec![Plain::Text("hot".into()), Plain::Text("new".into())]),
        ),
        (
            "nested".to_owned(),
            Plain::Map(BTreeMap::from([
                ("ok".to_owned(), Plain::Bool(true)),
                ("delta".to_owned(), Plain::Int(-2)),
            ])),
        ),
    ]));
    assert_eq!(details, expected);
    assert_eq!(details.get("score"), Some(&Plain::Text("NaN".into())));
}

/// A `Serialize` that panics with a message: the call is crashed, the text
/// says the tool panicked while its answer was made plain data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_whose_serialize_panics_ends_crashed_naming_the_answer() {
    let Run {
        end,
        serialized,
        dropped,
        ..
    } = run_spy(Behaviour::PanicWithText).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text(
            "search",
            Phase::Answer,
            Some("the answer's Serialize exploded")
        ))
    );
    assert!(end.result.text().contains("answer"));
    assert_eq!(serialized.in_loop.load(Ordering::SeqCst), 0);
    // The value is still dropped (in the task) after its Serialize panicked.
    assert_eq!(dropped.drops(), 1);
    assert_eq!(dropped.in_loop(), 0);
}

/// A `Serialize` that panics with a custom payload: crashed with the neutral
/// text; the payload is disposed of in the task, never formatted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_whose_serialize_panics_with_a_custom_payload_keeps_it_out_of_the_loop() {
    let Run { end, dropped, .. } = run_spy(Behaviour::PanicWithCustomPayload).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("search", Phase::Answer, None))
    );
    // Two drops on the one record: the payload's and the value's own.
    assert_eq!(dropped.drops(), 2);
    assert_eq!(dropped.formats(), 0);
    assert_eq!(dropped.in_loop(), 0);
}

/// A `Serialize` that returns an error of its own: not a crash, an unusable
/// answer (`Failed`) whose text gives the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_whose_serialize_fails_ends_failed_with_the_error() {
    let Run { end, dropped, .. } = run_spy(Behaviour::Error).await;
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert!(end.result.is_error);
    let text = end.result.text();
    assert!(text.contains("`search`"), "{text}");
    assert!(text.contains("the answer refused to serialize"), "{text}");
    assert_eq!(dropped.drops(), 1);
}

/// Details whose `Drop` panics once they were converted: the call counts as
/// crashed (the answer's own code panicked), and nothing runs in the loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_whose_drop_panics_ends_crashed() {
    struct DropBomb(Arc<Record>);
    impl Serialize for DropBomb {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_str("fine so far")
        }
    }
    impl Drop for DropBomb {
        fn drop(&mut self) {
            self.0.note_drop();
            panic!("the answer's Drop exploded");
        }
    }
    let record = Record::new();
    let tool = {
        let record = record.clone();
        TestTool::new("search", move |_, _| {
            let bomb = DropBomb(record.clone());
            async move { ToolOutput::text("1 hit").with_details(bomb) }
        })
        .untrusted()
    };
    let runner = Runner::new(executor());
    let end = InLoop::new(runner.start(call("c1", "search"), tool.into_arc())).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text(
            "search",
            Phase::Answer,
            Some("the answer's Drop exploded")
        ))
    );
    assert_eq!(record.drops(), 1);
    assert_eq!(record.in_loop(), 0);
}

/// Details beyond the runner's limits are refused inside the task: the
/// call fails with a text naming the limit, and no oversized data reaches
/// the loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_beyond_the_runners_limits_ends_failed() {
    let tool = TestTool::new("search", |_, _| async {
        ToolOutput::text("1 hit").with_details(serde_json::json!({ "blob": "x".repeat(1000) }))
    })
    .untrusted();
    let runner = Runner::new(executor()).with_limits(Limits::default().with_max_string(100));
    let end = InLoop::new(runner.start(call("c1", "search"), tool.into_arc())).await;
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert_eq!(end.result.details, None);
    let text = end.result.text();
    assert!(text.contains("`search`"), "{text}");
    assert!(text.contains("length in bytes of one string"), "{text}");
    assert!(text.contains("$.blob"), "{text}");
}
