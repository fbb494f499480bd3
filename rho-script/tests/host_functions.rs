//! Host functions granted to scripts by name (`rho.<name>`): what the
//! host gets, what the script gets back, and that the host's code runs on
//! the call's executor and ends with the call, on tokio (multi-thread) and
//! on smol.
//!
//! Every scenario is `<scenario>::on_tokio` and `<scenario>::on_smol`.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_registry::ToolRegistry;
use rho_script::{Grant, ScriptDefinition, ScriptOptions, ScriptPool, ScriptSource, ScriptTool};
use rho_tool_core::untrusted::Plain;
use rho_tool_core::{CallEvent, Executor, Outcome, Runner, ToolCall, ToolContext};
use rho_turn::TurnRunner;
use serde_json::{Value, json};
use support::{NEVER, SHORT, STOP_BOUND, call};

crate::on_both_executors!(
    a_granted_function_gets_plain_data_and_answers_the_script,
    a_host_error_rejects_with_an_error_the_script_can_catch,
    a_host_error_is_an_original_error_whatever_the_script_replaced,
    an_uncaught_host_error_crashes_with_its_text,
    host_calls_run_side_by_side_on_the_executor,
    only_what_was_granted_is_there,
    a_pending_host_call_is_dropped_when_the_call_times_out,
    the_host_function_gets_the_calls_own_context,
    too_many_pending_host_calls_reject,
    an_argument_that_cannot_be_made_plain_rejects_in_the_script,
    a_huge_host_answer_counts_against_the_memory_cap,
    a_panicking_host_function_crashes_the_call_and_nothing_else,
    a_sources_grant_reaches_the_tools_the_model_defines,
);

fn tool(pool: &ScriptPool, source: &str, grants: Vec<Grant>) -> Arc<ScriptTool> {
    let options = grants.into_iter().fold(
        ScriptOptions::new().with_timeout(NEVER),
        ScriptOptions::with_grant,
    );
    Arc::new(
        ScriptTool::new("host_user", "uses host functions", source, pool).with_options(options),
    )
}

fn echo() -> Grant {
    Grant::new("echo", |argument: Value, _| async move {
        Ok(json!({ "got": argument }))
    })
    .expect("a grant name")
}

async fn a_granted_function_gets_plain_data_and_answers_the_script<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = {
        let seen = Arc::clone(&seen);
        Grant::new("record", move |argument: Value, _| {
            seen.lock().expect("not poisoned").push(argument.clone());
            async move { Ok(json!([argument, 1.5, "two", null])) }
        })
        .expect("a grant name")
    };
    let tool = tool(
        &pool,
        "async function run({ word }) {
            const answer = await rho.record({ word, f: function add(a, b) { return a + b; },
                                              n: NaN, u: undefined, big: 10n ** 20n });
            return { answer, echoed: await rho.echo(word) };
        }",
        vec![record, echo()],
    );
    let end = call(&runner, &tool, json!({ "word": "rho" })).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    let sent = json!({
        "word": "rho",
        "f": "function add(a, b) { return a + b; }",
        "n": "NaN",
        "u": null,
        "big": "100000000000000000000",
    });
    assert_eq!(*seen.lock().expect("not poisoned"), vec![sent.clone()]);
    let details: Value = serde_json::from_str(&end.result.text()).expect("JSON text");
    assert_eq!(
        details,
        json!({ "answer": [sent, 1.5, "two", null], "echoed": { "got": "rho" } })
    );
}

async fn a_host_error_rejects_with_an_error_the_script_can_catch<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let refuse = Grant::new("refuse", |_: Value, _| async {
        Err::<Value, _>("the host said no".to_owned())
    })
    .expect("a grant name");
    let tool = tool(
        &pool,
        "async function run() {
            try { await rho.refuse({}); return 'not reached'; }
            catch (error) { return `${error instanceof Error}: ${error.message}`; }
        }",
        vec![refuse],
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(end.result.text(), "true: the host said no");
}

async fn a_host_error_is_an_original_error_whatever_the_script_replaced<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let refuse = Grant::new("refuse", |_: Value, _| async move {
        Err::<Value, _>("not today".to_owned())
    })
    .expect("a grant name");
    let tool = tool(
        &pool,
        "async function run() {
            const OriginalError = Error;
            globalThis.Error = function () { return { forged: true }; };
            globalThis.Promise = function () { throw new Error('no promise'); };
            Function.prototype.bind = () => { throw new Error('no bind'); };
            try { await rho.refuse(1); return 'resolved'; }
            catch (error) { return [error instanceof OriginalError, error.message, Object.keys(error).length]; }
        }",
        vec![refuse],
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(end.result.text(), r#"[true,"not today",0]"#);
}

async fn an_uncaught_host_error_crashes_with_its_text<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let refuse = Grant::new("refuse", |_: Value, _| async {
        Err::<Value, _>("the host said no".to_owned())
    })
    .expect("a grant name");
    let tool = tool(
        &pool,
        "async function run() { await rho.refuse({}); }",
        vec![refuse],
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
    assert!(
        end.result.text().contains("the host said no"),
        "{}",
        end.result.text()
    );
}

/// Two host calls that can only end together (each waits for the other's
/// message) end: they ran side by side, not one after the other.
async fn host_calls_run_side_by_side_on_the_executor<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (to_b, from_a) = smol::channel::bounded::<&'static str>(1);
    let (to_a, from_b) = smol::channel::bounded::<&'static str>(1);
    let a = Grant::new("a", move |_: Value, _| {
        let (to_b, from_b) = (to_b.clone(), from_b.clone());
        async move {
            to_b.send("from a")
                .await
                .map_err(|error| error.to_string())?;
            let got = from_b.recv().await.map_err(|error| error.to_string())?;
            Ok(json!(got))
        }
    })
    .expect("a grant name");
    let b = Grant::new("b", move |_: Value, _| {
        let (to_a, from_a) = (to_a.clone(), from_a.clone());
        async move {
            let got = from_a.recv().await.map_err(|error| error.to_string())?;
            to_a.send("from b")
                .await
                .map_err(|error| error.to_string())?;
            Ok(json!(got))
        }
    })
    .expect("a grant name");
    let tool = tool(
        &pool,
        "async function run() { return await Promise.all([rho.a(), rho.b()]); }",
        vec![a, b],
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(end.result.text(), r#"["from b","from a"]"#);
}

async fn only_what_was_granted_is_there<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    let tool_with = tool(
        &pool,
        "function run() { return Object.keys(rho).sort().join(','); }",
        vec![echo()],
    );
    let end = call(&runner, &tool_with, json!({})).await;
    assert_eq!(end.result.text(), "answer,echo,error,sleep,update");

    let tool_without = tool(
        &pool,
        "async function run() { return typeof rho.echo; }",
        Vec::new(),
    );
    let end = call(&runner, &tool_without, json!({})).await;
    assert_eq!(end.result.text(), "undefined");
}

async fn a_pending_host_call_is_dropped_when_the_call_times_out<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    struct Dropped(Arc<AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let forever = {
        let dropped = Arc::clone(&dropped);
        Grant::new("forever", move |_: Value, _| {
            let guard = Dropped(Arc::clone(&dropped));
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok(Value::Null)
            }
        })
        .expect("a grant name")
    };
    let tool = Arc::new(
        ScriptTool::new(
            "waits",
            "waits for the host",
            "async function run() { await rho.forever(); }",
            &pool,
        )
        .with_options(ScriptOptions::new().with_timeout(SHORT).with_grant(forever)),
    );
    let started = Instant::now();
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::TimedOut, "{}", end.result.text());
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            started.elapsed() < SHORT + STOP_BOUND,
            "the host call's future was not dropped"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The thread is free again: the next call answers.
    let next = tool_answering(&pool);
    assert_eq!(call(&runner, &next, json!({})).await.result.text(), "ok");
}

fn tool_answering(pool: &ScriptPool) -> Arc<ScriptTool> {
    Arc::new(ScriptTool::new(
        "ok",
        "answers",
        "function run() { return 'ok'; }",
        pool,
    ))
}

async fn the_host_function_gets_the_calls_own_context<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let whoami = Grant::new("whoami", |_: Value, context: ToolContext| async move {
        context
            .update(&"from the host")
            .map_err(|error| error.to_string())?;
        context.sleep(Duration::from_millis(1)).await;
        Ok(json!(context.call_id()))
    })
    .expect("a grant name");
    let tool = tool(
        &pool,
        "async function run() { return await rho.whoami(); }",
        vec![whoami],
    );
    let mut handle = runner.start(ToolCall::new("call-77", "host_user", json!({})), tool);
    let mut updates = Vec::new();
    let end = loop {
        match handle.next_event().await {
            Some(CallEvent::Update(update)) => updates.push(update.partial),
            Some(CallEvent::Ended(end)) => break end,
            Some(_) => {}
            None => panic!("no end"),
        }
    };
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(end.result.text(), "call-77");
    assert_eq!(updates, vec![Plain::Text("from the host".to_owned())]);
}

async fn too_many_pending_host_calls_reject<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    let started = Arc::new(AtomicUsize::new(0));
    let slow = {
        let started = Arc::clone(&started);
        Grant::new("slow", move |_: Value, context: ToolContext| {
            started.fetch_add(1, Ordering::SeqCst);
            async move {
                context.sleep(Duration::from_millis(20)).await;
                Ok(json!(1))
            }
        })
        .expect("a grant name")
    };
    let tool = tool(
        &pool,
        "async function run() {
            const calls = [];
            for (let i = 0; i < 64; i++) calls.push(rho.slow());
            let refused;
            try { await rho.slow(); } catch (error) { refused = `${error.name}: ${error.message}`; }
            const done = await Promise.all(calls);
            return { refused, done: done.length };
        }",
        vec![slow],
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    let answer: Value = serde_json::from_str(&end.result.text()).expect("JSON");
    assert_eq!(answer["done"], 64);
    let refused = answer["refused"].as_str().expect("a refusal");
    assert!(
        refused.starts_with("RangeError: rho.slow: more than 64 calls"),
        "{refused}"
    );
    assert_eq!(started.load(Ordering::SeqCst), 64);
}

async fn an_argument_that_cannot_be_made_plain_rejects_in_the_script<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = tool(
        &pool,
        "async function run() {
            const cycle = { name: 'loop' };
            cycle.self = cycle;
            try { await rho.echo(cycle); return 'sent'; }
            catch (error) { return `${error.name}: ${error.message}`; }
        }",
        vec![echo()],
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert!(
        end.result
            .text()
            .starts_with("TypeError: rho.echo: the value cannot be made plain data: it is cyclic"),
        "{}",
        end.result.text()
    );
}

async fn a_huge_host_answer_counts_against_the_memory_cap<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let flood = Grant::new("flood", |_: Value, _| async {
        Ok(json!(vec!["x".repeat(1 << 10); 32 << 10]))
    })
    .expect("a grant name");
    let tool = Arc::new(
        ScriptTool::new(
            "flooded",
            "gets 32 MiB",
            "async function run() { return (await rho.flood()).length; }",
            &pool,
        )
        .with_options(
            ScriptOptions::new()
                .with_limits(rho_script::ScriptLimits::default().with_memory(8 << 20))
                .with_grant(flood),
        ),
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
    assert!(
        end.result
            .text()
            .contains("exceeded its memory limit of 8 MiB"),
        "{}",
        end.result.text()
    );
}

async fn a_panicking_host_function_crashes_the_call_and_nothing_else<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let broken = Grant::new("broken", |_: Value, _| async {
        if true {
            panic!("the host's function broke");
        }
        Ok(Value::Null)
    })
    .expect("a grant name");
    let tool = tool(
        &pool,
        "async function run() { return await rho.broken(); }",
        vec![broken],
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
    assert!(
        end.result.text().contains("the host's function broke"),
        "{}",
        end.result.text()
    );
    let next = tool_answering(&pool);
    assert_eq!(call(&runner, &next, json!({})).await.result.text(), "ok");
}

async fn a_sources_grant_reaches_the_tools_the_model_defines<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let registry = ToolRegistry::new();
    let scripts = ScriptSource::builder("agent", &pool)
        .with_options(ScriptOptions::new().with_grant(echo()))
        .register(&registry)
        .expect("a new source");
    let defined = scripts
        .define(ScriptDefinition::new(
            "relay",
            "relays to the host",
            json!({ "type": "object" }),
            // The check sees the name at the top level.
            "if (typeof rho.echo !== 'function') throw new Error('no echo');
             async function run({ word }) { return await rho.echo(word); }",
        ))
        .await;
    assert!(defined.is_ok(), "{defined:?}");
    let turns = TurnRunner::new(runner, registry);
    let entries = turns
        .turn([ToolCall::new("c1", "relay", json!({ "word": "hi" }))])
        .await;
    assert_eq!(
        entries[0].outcome,
        Outcome::Succeeded,
        "{}",
        entries[0].text()
    );
    assert_eq!(entries[0].text(), r#"{"got":"hi"}"#);
}
