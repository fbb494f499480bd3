//! A script tool through rho's runner, on tokio (multi-thread) and on smol:
//! answers made plain, scripts that never yield stopped at their deadline
//! with the thread free again, memory and stack caps, and every way a
//! script can fail ending in one clear result.
//!
//! Every scenario is `<scenario>::on_tokio` and `<scenario>::on_smol`.

mod support;

use std::time::{Duration, Instant};

use rho_script::{PoolOptions, ScriptPool};
use rho_tool_core::untrusted::Plain;
use rho_tool_core::{Executor, Joined, Outcome, Runner, ToolCall};
use serde_json::json;
use support::{NEVER, SHORT, STOP_BOUND, call, script};

crate::on_both_executors!(
    a_string_answer_is_the_text,
    an_object_answer_becomes_details_and_compact_json,
    an_async_run_answers_once_its_promise_settles,
    a_loop_that_never_yields_times_out_and_frees_its_thread,
    a_memory_bomb_ends_naming_the_memory_limit,
    deep_recursion_ends_with_a_stack_error,
    a_thrown_error_crashes_with_its_message_and_stack,
    a_thrown_non_error_crashes_showing_the_value,
    a_rejected_promise_crashes_with_its_reason,
    a_promise_that_never_settles_crashes_saying_so,
    a_cyclic_answer_is_refused_with_the_path_where_it_closes,
    bigint_nan_infinity_and_functions_become_text,
    a_script_without_run_or_with_a_syntax_error_crashes_at_the_call,
    nothing_is_carried_from_one_call_to_the_next,
    a_host_abort_stops_a_looping_script_and_frees_its_thread,
    a_regex_that_backtracks_for_ever_is_stopped_at_the_deadline,
    getters_to_json_and_proxies_that_never_end_are_stopped_at_the_deadline,
);

async fn a_string_answer_is_the_text<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    let tool = script(
        &pool,
        "greet",
        "function run(args) { return `hello, ${args.who}`; }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({ "who": "world" })).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "hello, world");
    assert_eq!(end.result.details, None);
}

async fn an_object_answer_becomes_details_and_compact_json<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "sum",
        "function run({ a, b }) {
            return { sum: a + b, parts: [a, b], half: (a + b) / 2, none: undefined, when: new Date(0) };
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({ "a": 2, "b": 3 })).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(
        end.result.text(),
        r#"{"half":2.5,"none":null,"parts":[2,3],"sum":5,"when":"1970-01-01T00:00:00.000Z"}"#
    );
    let details = end.result.details.expect("details");
    assert_eq!(details.get("sum"), Some(&Plain::Int(5)));
    assert_eq!(details.get("half"), Some(&Plain::Float(2.5)));
    assert_eq!(details.get("none"), Some(&Plain::Null));
}

async fn an_async_run_answers_once_its_promise_settles<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "later",
        "async function run(args) {
            const x = await Promise.resolve(args.n);
            const y = await { then(resolve) { resolve(x * 2); } };
            return [x, y];
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({ "n": 21 })).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "[21,42]");
}

/// More looping calls than script threads, one after another: each is
/// stopped at its deadline by the interrupt, so each next one gets a
/// thread; then an ordinary call still answers.
async fn a_loop_that_never_yields_times_out_and_frees_its_thread<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let spin = script(&pool, "spin", "function run() { while (true) {} }", SHORT);
    let busy = script(
        &pool,
        "busy",
        "function run() { let x = 0; for (;;) { x = (x * 31 + 7) % 1000003; } }",
        SHORT,
    );
    let loops = pool.options().threads * 2 + 1;
    for round in 0..loops {
        let tool = if round % 2 == 0 { &spin } else { &busy };
        let started = Instant::now();
        let end = call(&runner, tool, json!({})).await;
        assert_eq!(end.outcome, Outcome::TimedOut, "round {round}: {end:?}");
        assert!(
            started.elapsed() < SHORT + STOP_BOUND,
            "round {round} took {:?}",
            started.elapsed()
        );
    }
    let fine = script(
        &pool,
        "fine",
        "function run() { return 'still here'; }",
        NEVER,
    );
    let started = Instant::now();
    let end = call(&runner, &fine, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "still here");
    // Had a looping script kept its thread, this call would wait for ever.
    assert!(started.elapsed() < STOP_BOUND, "{:?}", started.elapsed());
}

async fn a_memory_bomb_ends_naming_the_memory_limit<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let bomb = script(
        &pool,
        "bomb",
        "function run() { let a = []; for (;;) a.push(new Array(1e6).fill(1)); }",
        NEVER,
    );
    let end = call(&runner, &bomb, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert!(end.result.is_error);
    assert_eq!(
        end.result.text(),
        "tool `bomb` crashed: the script exceeded its memory limit of 64 MiB and was stopped"
    );
    let strings = script(
        &pool,
        "strings",
        "function run() { const kept = []; for (let i = 0; ; i++) kept.push('x'.repeat(1 << 20) + i); }",
        NEVER,
    );
    let end = call(&runner, &strings, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert!(
        end.result.text().contains("memory limit of 64 MiB"),
        "{}",
        end.result.text()
    );
    // The process and the pool are fine.
    let fine = script(&pool, "fine", "function run() { return 'ok'; }", NEVER);
    assert_eq!(call(&runner, &fine, json!({})).await.result.text(), "ok");
}

async fn deep_recursion_ends_with_a_stack_error<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    let deep = script(
        &pool,
        "deep",
        "function run() { return (function f(n) { return f(n + 1) + 1; })(0); }",
        NEVER,
    );
    let end = call(&runner, &deep, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result.text(),
        "tool `deep` crashed: the script exceeded its stack limit (Maximum call stack size exceeded): recursion too deep"
    );
}

async fn a_thrown_error_crashes_with_its_message_and_stack<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "thrower",
        "function check(x) {\n  throw new TypeError(`bad input: ${x}`);\n}\nfunction run(args) { return check(args.x); }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({ "x": 7 })).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    let text = end.result.text();
    assert!(
        text.starts_with("tool `thrower` crashed: the script threw TypeError: bad input: 7\n"),
        "{text}"
    );
    assert!(text.contains("at check (thrower.js:2"), "{text}");
    assert!(text.contains("at run (thrower.js:4"), "{text}");
}

async fn a_thrown_non_error_crashes_showing_the_value<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(&pool, "forty_two", "function run() { throw 42; }", NEVER);
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result.text(),
        "tool `forty_two` crashed: the script threw a value that is not an Error: 42"
    );
    let tool = script(
        &pool,
        "object",
        "function run() { throw { code: 'E1', at: [1, 2] }; }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(
        end.result.text(),
        r#"tool `object` crashed: the script threw a value that is not an Error: {"at":[1,2],"code":"E1"}"#
    );
}

async fn a_rejected_promise_crashes_with_its_reason<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "rejects",
        "async function run() { await null; throw new Error('no luck'); }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    let text = end.result.text();
    assert!(
        text.starts_with(
            "tool `rejects` crashed: the script's promise was rejected with Error: no luck\n"
        ),
        "{text}"
    );
    let tool = script(
        &pool,
        "rejects_text",
        "function run() { return Promise.reject('nope'); }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(
        end.result.text(),
        r#"tool `rejects_text` crashed: the script's promise was rejected with a value that is not an Error: "nope""#
    );
}

async fn a_promise_that_never_settles_crashes_saying_so<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "pending",
        "function run() { return new Promise(() => {}); }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result.text(),
        "tool `pending` crashed: its promise never settled: `run` returned a promise that was still pending when the script had nothing left to run"
    );
}

async fn a_cyclic_answer_is_refused_with_the_path_where_it_closes<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "cycle",
        "function run() { const a = { items: [{ name: 'x' }] }; a.items[0].parent = a; return a; }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert_eq!(
        end.result.text(),
        "tool `cycle` answered a value that cannot be made plain data: it is cyclic: the value at $.items[0].parent is its own ancestor at $"
    );
    // The same object twice, side by side, is no cycle.
    let tool = script(
        &pool,
        "shared",
        "function run() { const x = { v: 1 }; return [x, x]; }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.result.text(), r#"[{"v":1},{"v":1}]"#);
}

async fn bigint_nan_infinity_and_functions_become_text<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "odd",
        "function run() {
            return { big: 2n ** 70n, nan: NaN, inf: -Infinity, f: function add(a, b) { return a + b; }, arrow: (x) => x * 2 };
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    let details = end.result.details.expect("details");
    assert_eq!(
        details.get("big"),
        Some(&Plain::Text("1180591620717411303424".into()))
    );
    assert_eq!(details.get("nan"), Some(&Plain::Text("NaN".into())));
    assert_eq!(details.get("inf"), Some(&Plain::Text("-Infinity".into())));
    assert_eq!(
        details.get("f"),
        Some(&Plain::Text("function add(a, b) { return a + b; }".into()))
    );
    assert_eq!(
        details.get("arrow"),
        Some(&Plain::Text("(x) => x * 2".into()))
    );
    // As whole answers they are the text itself.
    for (source, text) in [
        (
            "function run() { return 10n ** 20n; }",
            "100000000000000000000",
        ),
        ("function run() { return 0 / 0; }", "NaN"),
        (
            "function run() { return function twice(x) { return 2 * x; }; }",
            "function twice(x) { return 2 * x; }",
        ),
        ("function run() { return undefined; }", "null"),
        ("function run() { return 1.5; }", "1.5"),
    ] {
        let tool = script(&pool, "scalar", source, NEVER);
        let end = call(&runner, &tool, json!({})).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{source}: {end:?}");
        assert_eq!(end.result.text(), text, "{source}");
    }
}

async fn a_script_without_run_or_with_a_syntax_error_crashes_at_the_call<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(&pool, "norun", "function go() { return 1; }", NEVER);
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result.text(),
        "tool `norun` crashed: the script defines no function `run`: a tool's script must define `function run(args) { ... }`"
    );
    let tool = script(&pool, "broken", "function run() {\n  return 1 +;\n}", NEVER);
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    let text = end.result.text();
    assert!(
        text.starts_with("tool `broken` crashed: the script failed to load: SyntaxError: "),
        "{text}"
    );
    assert!(text.contains("broken.js:2"), "{text}");
}

async fn nothing_is_carried_from_one_call_to_the_next<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "counter",
        "globalThis.count = (globalThis.count || 0) + 1;
         Object.prototype.polluted = true;
         function run() { return count; }",
        NEVER,
    );
    for _ in 0..3 {
        let end = call(&runner, &tool, json!({})).await;
        assert_eq!(end.result.text(), "1", "{end:?}");
    }
}

/// As many aborted looping calls as there are threads, then an ordinary
/// call: it answers at once, so every aborted script left its thread.
async fn a_host_abort_stops_a_looping_script_and_frees_its_thread<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let spin = script(&pool, "spin", "function run() { while (true) {} }", NEVER);
    for round in 0..pool.options().threads {
        let handle = runner.start(ToolCall::new("spin", "spin", json!({})), spin.clone());
        let abort = handle.abort_handle();
        // The call's handle is polled by a task of its own, as a loop does,
        // and the script spins on its thread before the abort.
        let waiting = runner.executor().spawn(handle);
        runner.executor().sleep(Duration::from_millis(100)).await;
        abort.abort();
        let Joined::Done(end) = waiting.await else {
            panic!("round {round}: the task that awaited the call did not finish");
        };
        assert_eq!(end.outcome, Outcome::Aborted, "round {round}: {end:?}");
    }
    let fine = script(&pool, "fine", "function run() { return 'free'; }", NEVER);
    let started = Instant::now();
    let end = call(&runner, &fine, json!({})).await;
    assert_eq!(end.result.text(), "free", "{end:?}");
    assert!(started.elapsed() < STOP_BOUND, "{:?}", started.elapsed());
}

/// Reading the answer runs script code (a getter, `toJSON`, a proxy trap):
/// it runs under the same interrupt, so one that never ends is stopped at
/// the call's deadline like any loop.
async fn getters_to_json_and_proxies_that_never_end_are_stopped_at_the_deadline<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    for (name, source) in [
        (
            "getter",
            "function run() { return { get x() { for (;;) {} } }; }",
        ),
        (
            "to_json",
            "function run() { return { toJSON() { for (;;) {} } }; }",
        ),
        (
            "proxy",
            "function run() { return new Proxy({}, { ownKeys() { for (;;) {} } }); }",
        ),
    ] {
        let tool = script(&pool, name, source, SHORT);
        let started = Instant::now();
        let end = call(&runner, &tool, json!({})).await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{name}: {end:?}");
        assert!(
            started.elapsed() < SHORT + STOP_BOUND,
            "{name}: {:?}",
            started.elapsed()
        );
    }
    // A getter that throws is a crash naming where the answer was read.
    let tool = script(
        &pool,
        "throwing_getter",
        "function run() { return { ok: 1, bad: { get x() { throw new Error('no x'); } } }; }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    let text = end.result.text();
    assert!(
        text.starts_with(
            "tool `throwing_getter` crashed: reading the script's answer threw Error: no x\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("(while its answer was read at $.bad.x)"),
        "{text}"
    );
}

/// A pool of one thread and no queue: while a script holds the thread, the
/// next call ends at once saying the pool is busy, without waiting; once
/// the thread is free again, calls run.
#[test]
fn a_call_past_the_queue_ends_at_once_saying_the_pool_is_busy() {
    support::on_smol(|runner, _| async move {
        let pool = ScriptPool::with_options(PoolOptions::new(1).with_queue(0)).expect("a thread");
        let spin = script(&pool, "spin", "function run() { while (true) {} }", NEVER);
        let fine = script(&pool, "fine", "function run() { return 'ran'; }", NEVER);
        // Idle threads take calls even with no queue.
        assert_eq!(call(&runner, &fine, json!({})).await.result.text(), "ran");
        let spinning = runner.start(ToolCall::new("spin", "spin", json!({})), spin);
        let abort = spinning.abort_handle();
        let spinning = runner.executor().spawn(spinning);
        runner.executor().sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        let end = call(&runner, &fine, json!({})).await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert_eq!(
            end.result.text(),
            "tool `fine` could not start: all 1 script threads are busy and 0 calls are already waiting"
        );
        assert!(started.elapsed() < STOP_BOUND, "{:?}", started.elapsed());
        abort.abort();
        let Joined::Done(end) = spinning.await else {
            panic!("the task that awaited the call did not finish");
        };
        assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
        // The stopped script gives its thread back; poll until it has.
        let mut text = String::new();
        for _ in 0..100 {
            text = call(&runner, &fine, json!({})).await.result.text();
            if text == "ran" {
                break;
            }
            runner.executor().sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(text, "ran");
    });
}

/// The regular expression engine checks the same interrupt while it
/// backtracks, so a catastrophic pattern is stopped like a loop.
async fn a_regex_that_backtracks_for_ever_is_stopped_at_the_deadline<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "regex",
        "function run() { return /^(a+)+$/.test('a'.repeat(64) + 'b'); }",
        SHORT,
    );
    let started = Instant::now();
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert!(
        started.elapsed() < SHORT + STOP_BOUND,
        "{:?}",
        started.elapsed()
    );
    let fine = script(&pool, "fine", "function run() { return 'after'; }", NEVER);
    assert_eq!(call(&runner, &fine, json!({})).await.result.text(), "after");
}

/// Answers of 1 to 8 MiB, inside the tool's limits (one string of up to
/// 8 MiB), one call after the other: each arrives whole, the same in both
/// modes. In worker mode such an answer is one long line on the worker's
/// stdout, read under the bound of the job it belongs to. On tokio only:
/// the executor plays no part, and each run moves 450 MiB.
mod answers_of_one_to_eight_mib_a_hundred_in_a_row_all_arrive_whole {
    use super::*;
    use rho_script::{ScriptLimits, ScriptOptions, ScriptTool};
    use rho_tool_core::untrusted::Limits;
    use std::sync::Arc;

    #[test]
    fn on_tokio() {
        support::on_tokio(scenario);
    }

    #[test]
    fn in_workers_on_tokio() {
        support::on_tokio_in(support::Mode::Workers, scenario);
    }

    async fn scenario<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
        const MIB: usize = 1 << 20;
        let tool = Arc::new(
            ScriptTool::new(
                "big",
                "answers many bytes",
                "function run({ bytes, seed }) {
                   const parts = [];
                   for (let i = 0; bytes > 0; i++) {
                     const size = Math.min(bytes, 1 << 20);
                     parts.push(String.fromCharCode(97 + ((seed + i) % 26)).repeat(size));
                     bytes -= size;
                   }
                   return parts.join('');
                 }",
                &pool,
            )
            .with_options(ScriptOptions::new().with_timeout(NEVER).with_limits(
                ScriptLimits::default().with_answer(Limits::default().with_max_string(8 * MIB)),
            )),
        );
        for round in 0..100_usize {
            // From 1 MiB to 8 MiB, and rarely a round number of bytes.
            let bytes = (MIB + round * 7 * MIB / 99 + round % 7).min(8 * MIB);
            let mut expected = String::with_capacity(bytes);
            let mut index = 0;
            while expected.len() < bytes {
                let size = (bytes - expected.len()).min(MIB);
                let letter = b'a' + u8::try_from((round + index) % 26).expect("a letter");
                expected.extend(std::iter::repeat_n(char::from(letter), size));
                index += 1;
            }
            let end = call(&runner, &tool, json!({ "bytes": bytes, "seed": round })).await;
            let text = end.result.text();
            assert_eq!(
                end.outcome,
                Outcome::Succeeded,
                "round {round} ({bytes} bytes): {}",
                &text[..text.len().min(300)]
            );
            assert!(
                text == expected,
                "round {round} ({bytes} bytes): a different answer of {} bytes",
                text.len()
            );
        }
    }
}
