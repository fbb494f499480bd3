//! What in-process containment cannot stop, stopped by the process
//! boundary: a child that aborts, one that never yields, one whose
//! grandchild hangs, one that floods its output; plus a host abort and a
//! child that exits leaving a grandchild behind.
//!
//! Every scenario runs through rho's `Runner` on tokio (multi-thread) and on
//! smol (two threads): `<scenario>::on_tokio`, `<scenario>::on_smol`.

#![cfg(unix)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::untrusted::timeout_text;
use rho_tool_core::{Executor, Outcome, Runner, ToolCall};
use support::{Scratch, assert_dead, assert_reaped, sh};

/// The timeout of the tools that hang. The tests do not race it: they let
/// the child start (its pid file appears) before they poll the call, and
/// the loop only ends a call while it is polled.
const SHORT: Duration = Duration::from_secs(1);

fn call(id: &str, tool: &str) -> ToolCall {
    ToolCall::new(id, tool, serde_json::json!({ "id": id }))
}

crate::on_both_executors!(
    a_child_that_aborts_is_an_error_naming_the_signal,
    a_child_that_never_yields_is_killed_at_the_timeout,
    a_hanging_grandchild_is_killed_with_the_child,
    a_child_that_floods_its_output_is_stopped_at_the_cap,
    a_host_abort_kills_the_whole_group,
    a_grandchild_left_behind_dies_when_the_child_exits,
);

/// 1. `std::process::abort` in a child: an error result naming the tool
///    and `SIGABRT`, with the end of its stderr; `Outcome::Crashed` (counted
///    against the tool like a panic); the host and its runner go on.
async fn a_child_that_aborts_is_an_error_naming_the_signal<E: Executor>(runner: Runner<E>) {
    let scratch = Scratch::new("abort");
    let aborts = sh(
        "aborts",
        "cat >/dev/null; echo $$ > child.pid; echo 'about to abort' >&2; ulimit -c 0; kill -ABRT $$",
        &scratch,
    );
    let end = runner.start(call("1", "aborts"), Arc::new(aborts)).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert!(end.result.is_error);
    let text = end.result.text();
    assert!(
        text.starts_with("tool `aborts` crashed: its process was killed by signal SIGABRT ("),
        "{text}"
    );
    assert!(text.ends_with("its stderr:\nabout to abort"), "{text}");
    assert_reaped(scratch.pid("child.pid"), "the aborted child");

    // A segfault reads the same way.
    let segfaults = sh(
        "segfaults",
        "cat >/dev/null; ulimit -c 0; kill -SEGV $$",
        &scratch,
    );
    let end = runner
        .start(call("2", "segfaults"), Arc::new(segfaults))
        .await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert!(
        end.result
            .text()
            .starts_with("tool `segfaults` crashed: its process was killed by signal SIGSEGV ("),
        "{}",
        end.result.text()
    );

    // The host is fine: the same runner runs the next call.
    let fine = sh(
        "fine",
        r#"cat >/dev/null; echo '{"text": "fine"}'"#,
        &scratch,
    );
    let end = runner.start(call("3", "fine"), Arc::new(fine)).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "fine");
}

/// 2. A child that never yields (a busy loop, ignoring its input) is killed
///    at the timeout: `Outcome::TimedOut` with rho's timeout text, and the
///    process is gone afterwards, reaped (no zombie).
async fn a_child_that_never_yields_is_killed_at_the_timeout<E: Executor>(runner: Runner<E>) {
    let scratch = Scratch::new("spin");
    let spins = sh(
        "spins",
        "echo $$ > child.pid; while :; do :; done",
        &scratch,
    )
    .with_timeout(SHORT);
    let call = runner.start(call("1", "spins"), Arc::new(spins));
    let child = scratch.pid("child.pid");
    let end = call.await;
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(end.result.text(), timeout_text("spins", SHORT));
    assert_reaped(child, "the spinning child");
}

/// 3. A child whose grandchild hangs: at the timeout the whole group is
///    killed; the child is reaped and the grandchild is dead too.
async fn a_hanging_grandchild_is_killed_with_the_child<E: Executor>(runner: Runner<E>) {
    let scratch = Scratch::new("grandchild");
    let forks = sh(
        "forks",
        "cat >/dev/null; sleep 1000 & echo $! > grandchild.pid; echo $$ > child.pid; sleep 1000",
        &scratch,
    )
    .with_timeout(SHORT);
    let call = runner.start(call("1", "forks"), Arc::new(forks));
    let child = scratch.pid("child.pid");
    let grandchild = scratch.pid("grandchild.pid");
    let end = call.await;
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_reaped(child, "the child");
    assert_dead(grandchild, "the grandchild");
}

/// 4. A child that floods stdout (or stderr) is stopped at the cap, not at
///    its (far) timeout: an error result naming the stream and the cap;
///    the group is killed and the child reaped. What is read is bounded by
///    the cap (see the unit tests of `capture`).
async fn a_child_that_floods_its_output_is_stopped_at_the_cap<E: Executor>(runner: Runner<E>) {
    let scratch = Scratch::new("flood");
    let floods = sh("floods", "echo $$ > child.pid; exec yes", &scratch).with_max_stdout(1 << 20);
    let end = runner.start(call("1", "floods"), Arc::new(floods)).await;
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    let text = end.result.text();
    assert!(
        text.starts_with(
            "tool `floods` wrote more than its cap of 1048576 bytes to stdout: \
             rho stopped reading and killed its process group; its stdout began: \"y\\ny\\n"
        ),
        "{text}"
    );
    assert!(text.ends_with("(1048576 bytes in all)"), "{text}");
    assert_reaped(scratch.pid("child.pid"), "the flooding child");

    let shouts = sh(
        "shouts",
        // The flood comes from a background job while the child waits:
        // only the group kill at the cap ends the child.
        "echo $$ > shouts.pid; head -c 100000000 /dev/zero >&2 & sleep 1000",
        &scratch,
    )
    .with_max_stderr(64 * 1024);
    let end = runner.start(call("2", "shouts"), Arc::new(shouts)).await;
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert!(
        end.result.text().starts_with(
            "tool `shouts` wrote more than its cap of 65536 bytes to stderr: \
             rho stopped reading and killed its process group"
        ),
        "{}",
        end.result.text()
    );
    assert_reaped(scratch.pid("shouts.pid"), "the child flooding stderr");
}

/// A host abort (a person pressed Esc) kills the whole group at once.
async fn a_host_abort_kills_the_whole_group<E: Executor>(runner: Runner<E>) {
    let scratch = Scratch::new("abort-host");
    let waits = sh(
        "waits",
        "sleep 1000 & echo $! > grandchild.pid; echo $$ > child.pid; cat; wait",
        &scratch,
    );
    let call = runner.start(call("1", "waits"), Arc::new(waits));
    let child = scratch.pid("child.pid");
    let grandchild = scratch.pid("grandchild.pid");
    call.abort();
    let end = call.await;
    assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
    assert_reaped(child, "the child");
    assert_dead(grandchild, "the grandchild");
}

/// A child that answers and exits while a grandchild it started still runs
/// (holding stdout open): the group is killed when the child exits, so the
/// call ends at once with the answer and the grandchild does not outlive it.
async fn a_grandchild_left_behind_dies_when_the_child_exits<E: Executor>(runner: Runner<E>) {
    let scratch = Scratch::new("left-behind");
    let leaves = sh(
        "leaves",
        r#"cat >/dev/null; sleep 1000 & echo $! > grandchild.pid; echo '{"text": "done"}'"#,
        &scratch,
    );
    let end = runner.start(call("1", "leaves"), Arc::new(leaves)).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "done");
    assert_dead(scratch.pid("grandchild.pid"), "the grandchild");
}
