//! Partial results (`ToolContext::update`): made plain data inside the
//! call's task, delivered to the loop in order, after `Running` and before
//! the end; an update whose `Serialize` panics is refused in the task and
//! changes nothing else.

use std::collections::BTreeMap;
use std::sync::Arc;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{CallEvent, Outcome, ToolOutput};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::{Rig, call};
use crate::Harness;
use crate::support::{Code, Reason, ReasonKind, Recorder, SOON, TestTool, within};

/// A partial result whose `Serialize` records itself (and raises, for
/// `reason`).
struct Progress {
    step: u64,
    recorder: Arc<Recorder>,
    reason: Option<Reason>,
}

impl Serialize for Progress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.recorder.note(Code::Serialize);
        if let Some(reason) = &self.reason {
            reason.raise();
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("step", &self.step)?;
        map.end()
    }
}

/// An untrusted tool reports three partial results (and one whose
/// `Serialize` panics with a custom payload, which `update` refuses): the
/// loop gets `Running`, then the three as plain data in order, then the
/// successful end; every `Serialize` ran in the call's task, none in the
/// loop; the panic payload was never formatted or run in the loop.
pub fn partial_results_arrive_in_order_before_the_end_as_plain_data<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let recorder = Recorder::new();
    let reason = Reason::new(ReasonKind::Custom(None));
    let refused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tool = {
        let (recorder, reason, refused) = (recorder.clone(), reason.clone(), refused.clone());
        TestTool::new("progress", move |_, cx| {
            let (recorder, reason, refused) = (recorder.clone(), reason.clone(), refused.clone());
            async move {
                for step in 0..3 {
                    let progress = Progress {
                        step,
                        recorder: recorder.clone(),
                        reason: None,
                    };
                    cx.update(&progress).expect("a plain update is reported");
                    cx.sleep(std::time::Duration::from_millis(1)).await;
                }
                let bad = Progress {
                    step: 99,
                    recorder: recorder.clone(),
                    reason: Some(reason),
                };
                refused.store(
                    cx.update(&bad).is_err(),
                    std::sync::atomic::Ordering::SeqCst,
                );
                ToolOutput::text("done")
            }
        })
        .untrusted()
        .into_arc()
    };
    let events = rig.run(async {
        let mut handle = runner.start(call("c1", "progress"), tool);
        let mut events = Vec::new();
        loop {
            match within(&executor, SOON, handle.next_event()).await {
                Some(Some(event)) => events.push(event),
                Some(None) => break,
                None => panic!("the call reported no next event within {SOON:?}"),
            }
        }
        events
    });
    let mut steps = Vec::new();
    let mut iter = events.iter();
    assert!(
        matches!(iter.next(), Some(CallEvent::Running(_))),
        "Running first: {events:?}"
    );
    let mut end = None;
    for event in iter {
        match event {
            CallEvent::Update(update) => {
                assert!(end.is_none(), "an Update after the end: {events:?}");
                assert_eq!(update.call_id, "c1");
                assert_eq!(update.dropped_before, 0);
                steps.push(update.partial.clone());
            }
            CallEvent::Ended(ended) => {
                assert!(end.is_none(), "two ends: {events:?}");
                end = Some(ended.clone());
            }
            other => panic!("unexpected event {other:?} in {events:?}"),
        }
    }
    let expected: Vec<Plain> = (0..3_u64)
        .map(|step| Plain::Map(BTreeMap::from([("step".to_owned(), Plain::UInt(step))])))
        .collect();
    assert_eq!(steps, expected, "the partial results, in order");
    let end = end.expect("the call ended");
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert!(
        refused.load(std::sync::atomic::Ordering::SeqCst),
        "an update whose Serialize panicked was not refused"
    );
    assert_eq!(recorder.count(Code::Serialize), 4, "{recorder:?}");
    assert_eq!(
        recorder.in_loop(),
        0,
        "an update's Serialize ran in the loop"
    );
    assert_eq!(
        recorder.outside_task(),
        0,
        "an update's Serialize ran outside its task"
    );
    super::panics::check_payload(&reason);
    rig.finish();
}
