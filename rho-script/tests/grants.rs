//! The host functions every script is granted (`rho.update`, `rho.sleep`)
//! and the answers it builds with `rho.answer` and `rho.error`, through
//! rho's runner on tokio (multi-thread) and on smol.
//!
//! Every scenario is `<scenario>::on_tokio` and `<scenario>::on_smol`.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_registry::{Accounting, QuarantineRule, ToolRegistry};
use rho_script::{ScriptDefinition, ScriptPool, ScriptSource};
use rho_tool_core::untrusted::Plain;
use rho_tool_core::{CallEnd, CallEvent, Executor, Outcome, Runner, ToolCall};
use rho_turn::TurnRunner;
use serde_json::json;
use support::{NEVER, SHORT, STOP_BOUND, call, script};

crate::on_both_executors!(
    updates_arrive_in_order_as_events_before_the_end,
    a_flood_of_updates_is_bounded_and_its_newest_arrives,
    an_update_that_cannot_be_made_plain_throws_in_the_script,
    a_sleep_waits_on_the_executor_timer_before_the_answer,
    sleeps_end_in_the_order_they_are_due,
    a_sleep_past_the_timeout_times_out_and_frees_its_thread,
    an_image_answer_reaches_the_result_as_image_parts,
    an_invalid_image_ends_with_rhos_error,
    an_ordinary_object_with_answer_keys_is_details,
    a_malformed_built_answer_is_an_error_naming_the_mistake,
    rho_error_fails_the_call_without_a_strike,
);

/// Starts a call and reads its events to the end: the updates' partial
/// results, each with how many were dropped before it, and the end.
async fn events<E: Executor>(
    runner: &Runner<E>,
    tool: &Arc<rho_script::ScriptTool>,
) -> (Vec<(Plain, u64)>, CallEnd) {
    let name = rho_tool_core::Tool::name(&**tool).to_owned();
    let mut handle = runner.start(ToolCall::new("call", name, json!({})), tool.clone());
    let mut updates = Vec::new();
    loop {
        match handle.next_event().await {
            Some(CallEvent::Update(update)) => {
                updates.push((update.partial, update.dropped_before));
            }
            Some(CallEvent::Ended(end)) => return (updates, end),
            Some(_) => {}
            None => panic!("the call ended without an end"),
        }
    }
}

async fn updates_arrive_in_order_as_events_before_the_end<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "progress",
        "async function run() {
            rho.update({ step: 0 });
            rho.update({ step: 1 });
            await rho.sleep(5);
            rho.update({ step: 2 });
            await rho.sleep(5);
            rho.update('last');
            return 'done';
        }",
        NEVER,
    );
    let (updates, end) = events(&runner, &tool).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "done");
    let partials: Vec<Plain> = updates.into_iter().map(|(partial, _)| partial).collect();
    let step = |n: i64| Plain::Map([("step".to_owned(), Plain::Int(n))].into_iter().collect());
    assert_eq!(
        partials,
        vec![step(0), step(1), step(2), Plain::Text("last".to_owned())]
    );
}

async fn a_flood_of_updates_is_bounded_and_its_newest_arrives<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    const FLOOD: i64 = 20_000;
    let tool = script(
        &pool,
        "flood",
        &format!(
            "function run() {{ for (let i = 0; i < {FLOOD}; i++) rho.update(i); return 'done'; }}"
        ),
        NEVER,
    );
    let name = rho_tool_core::Tool::name(&*tool).to_owned();
    let mut handle = runner.start(ToolCall::new("call", name, json!({})), tool.clone());
    // Nobody reads while the script floods: what waits is bounded on the
    // script's side and the loop's.
    std::thread::sleep(Duration::from_millis(1500));
    let mut partials = Vec::new();
    let end = loop {
        match handle.next_event().await {
            Some(CallEvent::Update(update)) => partials.push(update.partial),
            Some(CallEvent::Ended(end)) => break end,
            Some(_) => {}
            None => panic!("the call ended without an end"),
        }
    };
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert!(
        partials.len() <= 256 + 64,
        "{} updates kept",
        partials.len()
    );
    assert_eq!(partials.last(), Some(&Plain::Int(FLOOD - 1)));
    let numbers: Vec<i64> = partials
        .iter()
        .map(|partial| match partial {
            Plain::Int(n) => *n,
            other => panic!("not a number: {other:?}"),
        })
        .collect();
    assert!(numbers.windows(2).all(|pair| pair[0] < pair[1]), "in order");
}

async fn an_update_that_cannot_be_made_plain_throws_in_the_script<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "cyclic",
        "function run() {
            const a = {}; a.self = a;
            try { rho.update(a); return 'sent'; } catch (e) { return `${e.name}: ${e.message}`; }
        }",
        NEVER,
    );
    let (updates, end) = events(&runner, &tool).await;
    assert!(updates.is_empty(), "{updates:?}");
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    let text = end.result.text();
    assert!(text.starts_with("TypeError: rho.update:"), "{text}");
    assert!(text.contains("cyclic"), "{text}");
}

async fn a_sleep_waits_on_the_executor_timer_before_the_answer<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "nap",
        "async function run() { await rho.sleep(50); return 'slept'; }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "slept");
    let ran = end.ran.expect("it ran");
    assert!(ran >= Duration::from_millis(50), "{ran:?}");
}

async fn sleeps_end_in_the_order_they_are_due<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    let tool = script(
        &pool,
        "naps",
        "async function run() {
            const order = [];
            await Promise.all([
                rho.sleep(60).then(() => order.push('late')),
                rho.sleep(5).then(() => order.push('early')),
                rho.sleep(0).then(() => order.push('now')),
            ]);
            return order.join(',');
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "now,early,late");
}

async fn a_sleep_past_the_timeout_times_out_and_frees_its_thread<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let sleepy = script(
        &pool,
        "sleepy",
        "async function run() { await rho.sleep(60000); return 'woke'; }",
        SHORT,
    );
    // More calls than threads: each must give its thread back.
    for round in 0..pool.options().threads * 2 + 1 {
        let started = Instant::now();
        let end = call(&runner, &sleepy, json!({})).await;
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
    assert_eq!(end.result.text(), "still here", "{end:?}");
    assert!(started.elapsed() < STOP_BOUND, "{:?}", started.elapsed());
}

async fn an_image_answer_reaches_the_result_as_image_parts<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "draw",
        "function run() {
            return rho.answer({
                text: 'two pictures',
                images: [
                    { mimeType: 'image/png', data: 'iVBORw==' },
                    { mimeType: 'image/gif', data: new Uint8Array([71, 73, 70, 200]) },
                ],
                details: { width: 1 },
            });
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.image_count(), 2);
    assert_eq!(end.result.text(), "two pictures");
    let images: Vec<(&str, &[u8])> = end
        .result
        .images()
        .map(|image| (image.mime_type.as_str(), image.data.as_slice()))
        .collect();
    assert_eq!(
        images,
        vec![
            ("image/png", &[0x89, b'P', b'N', b'G'][..]),
            ("image/gif", &[71, 73, 70, 200][..]),
        ]
    );
    let details = end.result.details.expect("details");
    assert_eq!(details.get("width"), Some(&Plain::Int(1)));
}

async fn an_invalid_image_ends_with_rhos_error<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    for (name, image) in [
        ("empty", "{ mimeType: 'image/png', data: '' }"),
        ("wrong_mime", "{ mimeType: 'text/plain', data: 'aGk=' }"),
    ] {
        let tool = script(
            &pool,
            name,
            &format!("function run() {{ return rho.answer({{ text: 'x', images: [{image}] }}); }}"),
            NEVER,
        );
        let end = call(&runner, &tool, json!({})).await;
        assert!(end.result.is_error, "{name}: {end:?}");
        assert_eq!(end.outcome, Outcome::Failed, "{name}: {end:?}");
        let text = end.result.text();
        assert!(text.contains("image 0"), "{name}: {text}");
    }
}

async fn an_ordinary_object_with_answer_keys_is_details<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "plain",
        "function run() { return { text: 'hi', images: [], error: 'no' }; }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(
        end.result.text(),
        r#"{"error":"no","images":[],"text":"hi"}"#
    );
    assert_eq!(end.result.image_count(), 0);
}

async fn a_malformed_built_answer_is_an_error_naming_the_mistake<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    for (name, built, says) in [
        ("typo", "rho.answer({ txt: 'x' })", "unknown key `txt`"),
        (
            "number",
            "rho.answer({ text: 5 })",
            "`text` must be a string",
        ),
        (
            "not_base64",
            "rho.answer({ images: [{ mimeType: 'image/png', data: '@@' }] })",
            "not base64",
        ),
        (
            "both",
            "rho.answer({ error: 'e', text: 't' })",
            "has no `text`",
        ),
    ] {
        let tool = script(
            &pool,
            name,
            &format!("function run() {{ return {built}; }}"),
            NEVER,
        );
        let end = call(&runner, &tool, json!({})).await;
        assert_eq!(end.outcome, Outcome::Failed, "{name}: {end:?}");
        let text = end.result.text();
        assert!(text.contains("built its answer wrongly"), "{name}: {text}");
        assert!(text.contains(says), "{name}: {text}");
    }
}

async fn rho_error_fails_the_call_without_a_strike<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(1)));
    let source = ScriptSource::builder("agent", &pool)
        .with_policy(accounting.clone())
        .register(&registry)
        .expect("a fresh registry");
    source
        .define(ScriptDefinition::new(
            "picky",
            "Refuses odd numbers.",
            json!({ "type": "object" }),
            "async function run({ n }) {
                if (n % 2) return rho.error(`${n} is odd: give an even number`);
                return rho.answer({ text: 'even', details: { n } });
            }",
        ))
        .await
        .expect("a good definition");
    let turns = TurnRunner::new(runner, registry);
    for _ in 0..3 {
        let entries = turns
            .turn([ToolCall::new("c", "picky", json!({ "n": 3 }))])
            .await;
        assert_eq!(entries[0].outcome, Outcome::Failed, "{:?}", entries[0]);
        assert_eq!(entries[0].text(), "3 is odd: give an even number");
    }
    let entries = turns
        .turn([ToolCall::new("c", "picky", json!({ "n": 4 }))])
        .await;
    assert_eq!(entries[0].outcome, Outcome::Succeeded, "{:?}", entries[0]);
    assert_eq!(entries[0].text(), "even");
    let health = accounting.tool_health("picky").expect("it was called");
    assert_eq!(
        (health.failed, health.crashed, health.strikes),
        (3, 0, 0),
        "{health:?}"
    );
    assert!(!health.is_quarantined());
}
