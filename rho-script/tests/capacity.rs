//! What a stopped script costs the pool: nothing past its deadline. A
//! script inside one long native operation (`new Array(n).join('')`) does
//! not see the engine's interrupt until the operation returns, seconds
//! later; the pool gives up on its thread and starts another (threads), or
//! kills its worker and starts another (worker processes), so the next
//! call runs at once even on a pool of one thread. Each scenario runs on
//! tokio and smol, in both modes unless it says otherwise.
//!
//! The stuck operation is a join of an empty array of 50 million holes: it
//! allocates next to nothing and keeps the engine busy for seconds (about
//! five in a debug build on this project's machine), far longer than the
//! margins below.

mod support;

use std::time::{Duration, Instant};

use rho_registry::ToolRegistry;
use rho_script::{
    DefineError, Isolation, PoolOptions, PoolState, ScriptDefinition, ScriptPool, ScriptSource,
    WorkerCommand,
};
use rho_tool_core::{Executor, Outcome, Runner, ToolCall};
use rho_turn::TurnRunner;
use serde_json::json;
use support::{Mode, NEVER, call, script};

/// `<scenario>::{on_tokio, on_smol, in_workers_on_tokio, in_workers_on_smol}`,
/// each scenario given the runner and the mode (it makes its own pool).
macro_rules! in_both_modes {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::support::{self, Mode};

            #[test]
            fn on_tokio() {
                support::on_tokio(|runner, _| super::$scenario(runner, Mode::Threads));
            }

            #[test]
            fn on_smol() {
                support::on_smol(|runner, _| super::$scenario(runner, Mode::Threads));
            }

            #[test]
            fn in_workers_on_tokio() {
                support::on_tokio(|runner, _| super::$scenario(runner, Mode::Workers));
            }

            #[test]
            fn in_workers_on_smol() {
                support::on_smol(|runner, _| super::$scenario(runner, Mode::Workers));
            }
        }
    )*};
}

in_both_modes!(
    a_stuck_script_costs_no_capacity_past_its_deadline,
    a_definition_stuck_in_a_native_operation_is_refused_at_its_deadline,
);

/// Threads mode only: its cap on stuck threads has no counterpart in worker
/// mode, where a stuck worker is killed.
mod past_the_cap_a_stuck_thread_keeps_its_place_and_calls_wait {
    #[test]
    fn on_tokio() {
        super::support::on_tokio(|runner, _| super::past_the_cap(runner));
    }

    #[test]
    fn on_smol() {
        super::support::on_smol(|runner, _| super::past_the_cap(runner));
    }
}

/// A script stuck for seconds in one native operation.
const STUCK: &str = "function run() { return new Array(5e7).join('').length; }";

/// The timeout of a stuck call.
const STUCK_TIMEOUT: Duration = Duration::from_millis(300);

/// The timeout of the trivial call right behind a stuck one: far more than
/// the pool needs to have a thread (or worker) for it, far less than the
/// seconds the stuck one holds its own, and less than the half second the
/// worker mode used to wait before it killed a worker that did not stop.
const NEXT_TIMEOUT: Duration = Duration::from_millis(400);

/// How long a given-up thread may take to come back and end, on a shared
/// machine.
const RETURN_BOUND: Duration = Duration::from_secs(120);

/// A pool of `threads` threads (and so many stuck threads replaced at
/// once) running its scripts as `mode` says.
fn pool_of(mode: Mode, threads: usize) -> ScriptPool {
    let options = PoolOptions::new(threads);
    let options = match mode {
        Mode::Threads => options,
        Mode::Workers => options.with_isolation(Isolation::WorkerProcesses(WorkerCommand::new(
            env!("CARGO_BIN_EXE_rho-script-worker"),
        ))),
    };
    ScriptPool::with_options(options).expect("the pool starts")
}

/// Polls `pool`'s state until `done` holds of it, for `bound` at most.
async fn state_until<E: Executor>(
    runner: &Runner<E>,
    pool: &ScriptPool,
    bound: Duration,
    done: impl Fn(&PoolState) -> bool,
) -> PoolState {
    let started = Instant::now();
    loop {
        let state = pool.state();
        if done(&state) {
            return state;
        }
        assert!(started.elapsed() < bound, "still {state:?}");
        runner.executor().sleep(Duration::from_millis(20)).await;
    }
}

async fn a_stuck_script_costs_no_capacity_past_its_deadline<E: Executor>(
    runner: Runner<E>,
    mode: Mode,
) {
    let pool = pool_of(mode, 1);
    let stuck = script(&pool, "stuck", STUCK, STUCK_TIMEOUT);
    let fine = script(
        &pool,
        "fine",
        "function run() { return 'ok'; }",
        NEXT_TIMEOUT,
    );
    // The thread (and its worker) are up and have served once.
    assert_eq!(call(&runner, &fine, json!({})).await.result.text(), "ok");

    let started = Instant::now();
    let end = call(&runner, &stuck, json!({})).await;
    let ended = started.elapsed();
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert!(ended < STUCK_TIMEOUT + support::STOP_BOUND, "{ended:?}");

    // The next call, on the same pool of one thread, runs at once.
    let next = Instant::now();
    let end = call(&runner, &fine, json!({})).await;
    let waited = next.elapsed();
    assert_eq!(
        end.outcome,
        Outcome::Succeeded,
        "{mode:?}: the call behind a stuck one: {end:?}"
    );
    assert_eq!(end.result.text(), "ok");
    eprintln!(
        "{mode:?}: stuck call ended {:?} past its timeout; the next call ended {waited:?} after it",
        ended.saturating_sub(STUCK_TIMEOUT)
    );

    let state = pool.state();
    assert_eq!(
        (state.threads, state.busy, state.queued),
        (1, 0, 0),
        "{state:?}"
    );
    match mode {
        Mode::Threads => {
            assert_eq!(state.replaced_threads, 1, "{state:?}");
            assert_eq!(state.worker_restarts, 0, "{state:?}");
            // The stuck thread ends itself when its operation returns, and
            // the pool keeps its one thread.
            let state = state_until(&runner, &pool, RETURN_BOUND, |state| {
                state.abandoned_threads == 0
            })
            .await;
            assert_eq!((state.busy, state.replaced_threads), (0, 1), "{state:?}");
        }
        Mode::Workers => {
            // The stuck worker was killed and replaced; no thread was.
            assert_eq!(state.worker_restarts, 1, "{state:?}");
            assert_eq!(
                (state.replaced_threads, state.abandoned_threads),
                (0, 0),
                "{state:?}"
            );
        }
    }
    // Calls after that still run, one after the other.
    for _ in 0..3 {
        assert_eq!(call(&runner, &fine, json!({})).await.result.text(), "ok");
    }
}

async fn a_definition_stuck_in_a_native_operation_is_refused_at_its_deadline<E: Executor>(
    runner: Runner<E>,
    mode: Mode,
) {
    let pool = pool_of(mode, 1);
    let registry = ToolRegistry::new();
    let source = ScriptSource::builder("agent", &pool)
        .with_check_timeout(STUCK_TIMEOUT)
        .register(&registry)
        .expect("a fresh registry");
    let started = Instant::now();
    let refused = source
        .define(ScriptDefinition::new(
            "stuck",
            "never gets to run",
            json!({ "type": "object" }),
            "new Array(5e7).join('');\nfunction run() { return 1; }",
        ))
        .await
        .expect_err("a top level stuck past the check's deadline");
    let waited = started.elapsed();
    assert!(
        matches!(refused, DefineError::TopLevelTimedOut { .. }),
        "{mode:?}: {refused:?}"
    );
    assert!(
        refused.to_string().contains("still running after 300ms"),
        "{refused}"
    );
    // Refused at its deadline, not when the operation returned, seconds
    // later.
    assert!(
        waited < STUCK_TIMEOUT + Duration::from_millis(1500),
        "{mode:?}: refused after {waited:?}"
    );
    // The pool's one thread (or worker) is free for the next definition.
    let fine = Instant::now();
    source
        .define(ScriptDefinition::new(
            "fine",
            "answers",
            json!({ "type": "object" }),
            "function run() { return 'ok'; }",
        ))
        .await
        .expect("the next definition");
    assert!(
        fine.elapsed() < Duration::from_millis(1500),
        "{mode:?}: the next definition took {:?}",
        fine.elapsed()
    );
    let turns = TurnRunner::new(runner, registry);
    let entries = turns.turn([ToolCall::new("c", "fine", json!({}))]).await;
    assert_eq!(entries[0].text(), "ok", "{:?}", entries[0]);
}

/// A pool of one thread that may leave one stuck thread running: the
/// first stuck call's thread is replaced; the second's is not (the cap is
/// reached), so a call behind it waits in the queue until a stuck thread
/// comes back, then runs.
async fn past_the_cap<E: Executor>(runner: Runner<E>) {
    let pool = ScriptPool::with_options(PoolOptions::new(1).with_max_abandoned(1))
        .expect("the pool starts");
    // Shorter than `STUCK`: two of them run at once here.
    let stuck = script(
        &pool,
        "stuck",
        "function run() { return new Array(3e7).join('').length; }",
        STUCK_TIMEOUT,
    );
    let fine = script(&pool, "fine", "function run() { return 'ok'; }", NEVER);
    for _ in 0..2 {
        let end = call(&runner, &stuck, json!({})).await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    }
    // The first stuck thread was replaced, and the second keeps its place.
    let state = state_until(&runner, &pool, support::STOP_BOUND, |state| {
        state.replaced_threads == 1
    })
    .await;
    assert_eq!((state.abandoned_threads, state.busy), (1, 1), "{state:?}");
    let waiting = runner.start(ToolCall::new("c", "fine", json!({})), fine.clone());
    let state = state_until(&runner, &pool, support::STOP_BOUND, |state| {
        state.queued == 1
    })
    .await;
    assert_eq!(
        (state.abandoned_threads, state.busy, state.replaced_threads),
        (1, 1, 1),
        "{state:?}"
    );
    // Once the first stuck thread comes back and ends, the second is
    // replaced in turn (or, on a busy machine, comes back first itself),
    // and the waiting call runs.
    let end = waiting.await;
    assert_eq!(end.result.text(), "ok", "{end:?}");
    let state = state_until(&runner, &pool, RETURN_BOUND, |state| {
        state.abandoned_threads == 0
    })
    .await;
    assert_eq!((state.busy, state.queued), (0, 0), "{state:?}");
    assert!((1..=2).contains(&state.replaced_threads), "{state:?}");
    assert_eq!(call(&runner, &fine, json!({})).await.result.text(), "ok");
}
