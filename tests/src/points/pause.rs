//! Pauses of a call's clock (`ToolContext::pause_clock`): the deadline
//! moves by the time a pause held, the clock runs again after it, and a
//! pause that is never released still ends at the timeout plus the
//! runner's most.

use std::time::Duration;

use rho_tool_core::untrusted::timeout_text;
use rho_tool_core::{Executor, Outcome, ToolOutput, ToolResult};

use super::{Rig, call, events_of};
use crate::Harness;
use crate::support::{HANG, TestTool};

/// A tool that holds a pause of its clock for `held`, then sleeps `after`
/// (both on the executor's timer) and answers "done".
fn pausing<E: Executor>(executor: &E, held: Duration, after: Duration) -> TestTool {
    let executor = executor.clone();
    TestTool::new("pausing", move |_, context| {
        let pause = context.pause_clock();
        let executor = executor.clone();
        async move {
            executor.sleep(held).await;
            drop(pause);
            executor.sleep(after).await;
            ToolOutput::text("done")
        }
    })
}

/// A tool whose clock is paused for twice its timeout, then answers: it
/// succeeds, having run longer than its timeout.
pub fn a_paused_clock_moves_the_deadline_by_the_time_it_held<H: Harness>() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let tool = pausing(&executor, TIMEOUT * 2, Duration::ZERO).with_timeout(TIMEOUT);
    let runner = rig.runner();
    rig.run(async {
        let mut handle = runner.start(call("c1", "pausing"), tool.into_arc());
        let (_, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        let ran = end.ran.expect("the clock ran");
        assert!(ran >= TIMEOUT * 2, "ran {ran:?}");
    });
    rig.finish();
}

/// After its pause the clock runs again: a tool that pauses, then sleeps
/// for ever, ends timed out once the timeout has run besides the pause.
pub fn the_clock_runs_again_after_a_pause<H: Harness>() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    const HELD: Duration = Duration::from_millis(150);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let tool = pausing(&executor, HELD, HANG).with_timeout(TIMEOUT);
    let runner = rig.runner();
    rig.run(async {
        let mut handle = runner.start(call("c1", "pausing"), tool.into_arc());
        let (_, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
        assert_eq!(
            end.result,
            ToolResult::error(timeout_text("pausing", TIMEOUT))
        );
        let ran = end.ran.expect("the clock ran");
        assert!(ran >= TIMEOUT + HELD, "killed after {ran:?}");
        assert!(ran < HANG / 2, "the pause was not released: {ran:?}");
    });
    rig.finish();
}

/// A pause never released moves the deadline by the runner's most and no
/// further: the call ends timed out at the timeout plus that most.
pub fn a_pause_held_for_ever_ends_at_the_timeout_plus_the_runners_most<H: Harness>() {
    const TIMEOUT: Duration = Duration::from_millis(100);
    const MOST: Duration = Duration::from_millis(300);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let tool = pausing(&executor, HANG, Duration::ZERO).with_timeout(TIMEOUT);
    let runner = rig.runner().with_max_clock_pause(MOST);
    rig.run(async {
        let mut handle = runner.start(call("c1", "pausing"), tool.into_arc());
        let (_, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
        let ran = end.ran.expect("the clock ran");
        assert!(ran >= TIMEOUT + MOST, "killed after {ran:?}");
        assert!(ran < HANG / 2, "the pause held the call for ever: {ran:?}");
    });
    rig.finish();
}
