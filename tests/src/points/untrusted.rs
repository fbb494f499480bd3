//! An untrusted tool's answer is made plain data inside its own task,
//! before it is encoded or leaves the task: its `Serialize` and `Drop` run
//! there, never in the loop, a panic of either ends the call as crashed,
//! and the loop only gets `Plain` data.

use std::collections::BTreeMap;
use std::sync::Arc;

use rho_tool_core::untrusted::{Limits, Phase, Plain};
use rho_tool_core::{Outcome, ToolOutput};
use serde::ser::{Error as _, SerializeStruct};
use serde::{Serialize, Serializer};

use super::panics::check_payload;
use super::{Rig, assert_panic_text, call, end_of};
use crate::Harness;
use crate::support::{Code, DropRaises, Reason, ReasonKind, Recorder, SerializeRaises, TestTool};

/// Details whose `Serialize` and `Drop` record where they ran.
struct Spy(Arc<Recorder>);

#[derive(Serialize)]
struct Inner {
    ok: bool,
    delta: i64,
}

impl Serialize for Spy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.note(Code::Serialize);
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
        self.0.note(Code::Drop);
    }
}

/// An untrusted tool answers details of a foreign type: their `Serialize`
/// ran once, in the call's own task (the task that ran the tool), never in
/// the loop (nor on the loop's thread, on a multi-threaded executor); their
/// `Drop` ran once, in the task; the loop got a `Plain` map of the fields,
/// the NaN made text.
pub fn an_untrusted_answer_is_made_plain_inside_its_task_and_the_loop_gets_plain_data<
    H: Harness,
>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let spy = Recorder::new();
    let ran = Recorder::new();
    let tool = {
        let (spy, ran) = (spy.clone(), ran.clone());
        TestTool::new("search", move |_, _| {
            let details = Spy(spy.clone());
            let ran = ran.clone();
            async move {
                ran.note(Code::Run);
                ToolOutput::text("1 hit").with_details(details)
            }
        })
        .untrusted()
        .into_arc()
    };
    assert!(tool.is_untrusted());
    let end = rig.run(async {
        let handle = runner.start(call("c1", "search"), tool);
        end_of(&executor, handle).await
    });
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "1 hit");
    assert!(!end.result.is_error);
    assert_eq!(spy.count(Code::Serialize), 1, "{spy:?}");
    assert_eq!(spy.count(Code::Drop), 1, "{spy:?}");
    assert_eq!(
        spy.in_loop(),
        0,
        "the answer's code ran in the loop: {spy:?}"
    );
    let task = ran.tasks()[0];
    assert!(task.is_some(), "the tool ran outside any task");
    assert!(
        spy.tasks().iter().all(|t| *t == task),
        "the answer's code ran outside the call's task: {:?} vs {task:?}",
        spy.tasks()
    );
    rig.assert_off_the_loop_thread(&spy, "the answer's code");
    let details = end.result.details.expect("the answer had details");
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
    assert_eq!(details.get("score"), Some(&Plain::Text("NaN".into())));
    assert_eq!(details, expected);
    rig.finish();
}

/// Runs an untrusted tool answering details made by `details`, raising
/// `reason`; the call must end crashed in the answer phase.
fn answer_crashes<H: Harness, D>(
    reason: &Reason,
    details: impl Fn(&Reason, &Arc<Recorder>) -> D + Send + Sync + 'static,
) where
    D: Serialize + Send + 'static,
{
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let answer = Recorder::new();
    let tool = {
        let (reason, answer) = (reason.clone(), answer.clone());
        TestTool::new("search", move |_, _| {
            let value = details(&reason, &answer);
            async move { ToolOutput::text("1 hit").with_details(value) }
        })
        .untrusted()
        .into_arc()
    };
    let end = rig.run(async {
        let handle = runner.start(call("c1", "search"), tool);
        end_of(&executor, handle).await
    });
    assert_eq!(end.outcome, Outcome::Crashed, "{reason:?}: {end:?}");
    assert_panic_text(
        &end.result,
        "search",
        Phase::Answer,
        reason.kind().message().as_deref(),
    );
    assert_eq!(answer.count(Code::Serialize), 1, "{answer:?}");
    assert_eq!(
        answer.count(Code::Drop),
        1,
        "the answer is dropped once: {answer:?}"
    );
    assert_eq!(answer.in_loop(), 0, "the answer's code ran in the loop");
    assert_eq!(
        answer.outside_task(),
        0,
        "the answer's code ran outside its task"
    );
    check_payload(reason);
    rig.assert_off_the_loop_thread(&answer, "the answer's code");
    rig.assert_off_the_loop_thread(reason.first(), "the payload");
    rig.finish();
}

/// Details whose `Serialize` panics (with a `&str`, a `String`, a custom
/// payload, a payload whose `Drop` panics): crashed, with the text of a
/// panic while the answer was made plain data; the value is still dropped
/// once, in the task; no payload code in the loop.
pub fn an_answer_whose_serialize_panics_ends_crashed<H: Harness>() {
    for kind in [
        ReasonKind::StaticStr,
        ReasonKind::String,
        ReasonKind::Custom(None),
        ReasonKind::Bomb,
    ] {
        answer_crashes::<H, _>(&Reason::new(kind), SerializeRaises::new);
    }
}

/// Details that serialise fine but whose `Drop` panics (with a `&str`, a
/// custom payload): crashed (the answer's own code panicked), nothing of it
/// in the loop.
pub fn an_answer_whose_drop_panics_ends_crashed<H: Harness>() {
    for kind in [ReasonKind::StaticStr, ReasonKind::Custom(None)] {
        answer_crashes::<H, _>(&Reason::new(kind), DropRaises::new);
    }
}

/// Details whose `Serialize` returns an error of its own.
struct Refuses(Arc<Recorder>);

/// The error [`Refuses`] returns.
const REFUSAL: &str = "the answer refused to serialize";

impl Serialize for Refuses {
    fn serialize<S: Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
        self.0.note(Code::Serialize);
        Err(S::Error::custom(REFUSAL))
    }
}

impl Drop for Refuses {
    fn drop(&mut self) {
        self.0.note(Code::Drop);
    }
}

/// Details whose `Serialize` returns an error of its own: not a crash but
/// an unusable answer, `Failed`, an error naming the tool and giving the
/// error; the value was serialised and dropped once each, in its task.
pub fn an_answer_whose_serialize_fails_ends_failed_with_the_error<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let answer = Recorder::new();
    let tool = {
        let answer = answer.clone();
        TestTool::new("search", move |_, _| {
            let details = Refuses(answer.clone());
            async move { ToolOutput::text("1 hit").with_details(details) }
        })
        .untrusted()
        .into_arc()
    };
    let end = rig.run(async {
        let handle = runner.start(call("c1", "search"), tool);
        end_of(&executor, handle).await
    });
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert!(end.result.is_error);
    assert_eq!(end.result.details, None);
    let text = end.result.text();
    assert!(text.contains("`search`"), "{text}");
    assert!(text.contains(REFUSAL), "{text}");
    assert!(!end.outcome.counts_against_tool());
    assert_eq!(answer.count(Code::Serialize), 1, "{answer:?}");
    assert_eq!(answer.count(Code::Drop), 1, "{answer:?}");
    assert_eq!(answer.in_loop(), 0, "the answer's code ran in the loop");
    assert_eq!(
        answer.outside_task(),
        0,
        "the answer's code ran outside its task"
    );
    rig.finish();
}

/// Details beyond the runner's limits (`Runner::with_limits`: a string
/// longer than allowed) are refused inside the task: the call fails with a
/// text naming the tool, the limit and where the value broke it, and no
/// details reach the loop.
pub fn an_answer_beyond_the_runners_limits_ends_failed<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig
        .runner()
        .with_limits(Limits::default().with_max_string(100));
    let tool = TestTool::new("search", |_, _| async {
        ToolOutput::text("1 hit").with_details(serde_json::json!({ "blob": "x".repeat(1000) }))
    })
    .untrusted()
    .into_arc();
    let end = rig.run(async {
        let handle = runner.start(call("c1", "search"), tool);
        end_of(&executor, handle).await
    });
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert!(end.result.is_error);
    assert_eq!(end.result.details, None);
    let text = end.result.text();
    assert!(text.contains("`search`"), "{text}");
    assert!(text.contains("length in bytes of one string"), "{text}");
    assert!(text.contains("$.blob"), "{text}");
    rig.finish();
}
