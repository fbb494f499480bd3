//! Scripts that try to break the sandbox or the answer's conversion: each
//! ends with one clear result, and the pool runs the next call. On tokio
//! (multi-thread) and on smol.
//!
//! Every scenario is `<scenario>::on_tokio` and `<scenario>::on_smol`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rho_registry::{Accounting, QuarantineRule, ToolRegistry};
use rho_script::{
    ScriptDefinition, ScriptLimits, ScriptOptions, ScriptPool, ScriptSource, ScriptTool,
};
use rho_tool_core::untrusted::Limits;
use rho_tool_core::{Executor, Outcome, Runner, ToolCall};
use rho_turn::TurnRunner;
use serde_json::{Value, json};
use support::{NEVER, call, script};

crate::on_both_executors!(
    memory_bombs_of_every_kind_end_naming_the_cap,
    a_huge_answer_is_refused_naming_the_limit,
    a_replaced_function_to_string_does_not_change_a_functions_text,
    redefined_globals_change_nothing_rho_reads,
    a_forged_rho_cannot_build_an_answer,
    built_ins_replaced_before_an_image_is_read_change_nothing,
    lone_surrogates_become_replacement_characters,
    a_thrown_built_answer_is_that_answer_and_no_crash,
    a_schema_that_rejects_every_argument_refuses_every_call_before_it_runs,
    hostile_answers_in_a_row_leave_the_pool_serving,
);

/// The tool answers `ok`: the pool and its threads still serve.
async fn still_serves<E: Executor>(runner: &Runner<E>, pool: &ScriptPool) {
    let fine = script(pool, "fine", "function run() { return 'ok'; }", NEVER);
    assert_eq!(call(runner, &fine, json!({})).await.result.text(), "ok");
}

async fn memory_bombs_of_every_kind_end_naming_the_cap<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    // Each bomb and the end it must have. Past the cap the engine says
    // "out of memory", or throws `null` when it has no memory left to make
    // that error. Some bombs are refused before they allocate (a typed
    // array or a string past the engine's own length limits), and one is a
    // native loop that grows too slowly to reach the cap before its
    // deadline: each is still one clear end.
    const MEMORY: &str = "exceeded its memory limit of 16 MiB";
    const NULL_MEMORY: &str = "when a script exceeds its memory limit of 16 MiB";
    let bombs = [
        (
            "string_doubling",
            "function run() { let s = 'x'; for (;;) s = s + s; }",
            "InternalError: string too long",
        ),
        (
            "string_join",
            "function run() { return new Array(3e6).join('abcdefgh').length; }",
            MEMORY,
        ),
        (
            "string_join_huge",
            "function run() { return new Array(1e9).join('abc').length; }",
            "timed out after 3s",
        ),
        (
            "array",
            "function run() { const a = []; for (;;) a.push({ i: a.length }); }",
            NULL_MEMORY,
        ),
        (
            "typed_array",
            "function run() { return new Float64Array(1e9).length; }",
            "RangeError: invalid array buffer length",
        ),
        (
            "typed_arrays",
            "function run() { const k = []; for (;;) k.push(new Uint8Array(1 << 20)); }",
            MEMORY,
        ),
        (
            "array_buffer",
            "function run() { return new ArrayBuffer(2 ** 31).byteLength; }",
            "RangeError: invalid array buffer length",
        ),
        (
            "map",
            "function run() { const m = new Map(); for (let i = 0; ; i++) m.set(i, [i]); }",
            NULL_MEMORY,
        ),
        (
            "closures",
            "function run() { let f = () => 0; for (;;) { const g = f; f = () => g() + 1; } }",
            NULL_MEMORY,
        ),
    ];
    for (name, source, expected) in bombs {
        let timeout = if expected.starts_with("timed out") {
            Duration::from_secs(3)
        } else {
            NEVER
        };
        let tool = Arc::new(
            ScriptTool::new(name, "a memory bomb", source, &pool).with_options(
                ScriptOptions::new()
                    .with_timeout(timeout)
                    .with_limits(ScriptLimits::default().with_memory(16 << 20)),
            ),
        );
        let end = call(&runner, &tool, json!({})).await;
        let text = end.result.text();
        let outcome = if expected.starts_with("timed out") {
            Outcome::TimedOut
        } else {
            Outcome::Crashed
        };
        assert_eq!(end.outcome, outcome, "{name}: {text}");
        // Either form of the memory text is the memory limit.
        let matches = text.contains(expected)
            || (expected == NULL_MEMORY && text.contains(MEMORY))
            || (expected == MEMORY && text.contains(NULL_MEMORY));
        assert!(matches, "{name}: {text}");
    }
    still_serves(&runner, &pool).await;
}

async fn a_huge_answer_is_refused_naming_the_limit<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = Arc::new(
        ScriptTool::new(
            "huge",
            "answers a lot",
            "function run() { return new Array(200000).fill('0123456789'); }",
            &pool,
        )
        .with_options(ScriptOptions::new().with_timeout(NEVER).with_limits(
            ScriptLimits::default().with_answer(Limits::default().with_max_bytes(1 << 20)),
        )),
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Failed, "{}", end.result.text());
    assert!(
        end.result
            .text()
            .starts_with("tool `huge` answered a value that cannot be made plain data: "),
        "{}",
        end.result.text()
    );
    still_serves(&runner, &pool).await;
}

async fn a_replaced_function_to_string_does_not_change_a_functions_text<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "liar",
        "function run() {
            Function.prototype.toString = function () { for (;;) {} };
            Object.defineProperty(Function.prototype, 'toString', { value: () => 'forged' });
            function helper(x) { return x * 2; }
            return { helper, arrow: (a) => a };
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(
        end.result.text(),
        r#"{"arrow":"(a) => a","helper":"function helper(x) { return x * 2; }"}"#
    );
}

async fn redefined_globals_change_nothing_rho_reads<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "vandal",
        "async function run() {
            const answer = rho.answer;
            const sleep = rho.sleep;
            globalThis.JSON = { stringify() { return 'forged'; }, parse() { return {}; } };
            Object.keys = () => ['forged'];
            Object.getOwnPropertyNames = () => ['forged'];
            Reflect.apply = () => { throw new Error('forged apply'); };
            Reflect.ownKeys = () => ['forged'];
            Array.isArray = () => false;
            WeakMap.prototype.get = () => undefined;
            WeakMap.prototype.set = () => undefined;
            String.prototype.toWellFormed = () => 'forged';
            Object.defineProperty(Object.prototype, 'injected', { get() { throw new Error('read me'); }, enumerable: true });
            Array.prototype.push = () => { throw new Error('no push'); };
            Promise.resolve = () => { throw new Error('no resolve'); };
            Promise.prototype.then = function () { throw new Error('no then'); };
            await sleep(1);
            return answer({ text: 'still mine', details: { list: [1, 2], text: 'a\\u00e9' } });
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(end.result.text(), "still mine");
    let details: Value = serde_json::to_value(end.result.details.as_ref().expect("details"))
        .expect("plain data is JSON");
    assert_eq!(details, json!({ "list": [1, 2], "text": "aé" }));
    still_serves(&runner, &pool).await;
}

async fn a_forged_rho_cannot_build_an_answer<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    let tool = script(
        &pool,
        "forger",
        "function run() {
            globalThis.rho = { answer: (spec) => ({ spec, images: [], text: 'forged' }) };
            return rho.answer({ error: 'x' });
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    // An ordinary object: details, not an answer.
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(
        end.result.text(),
        r#"{"images":[],"spec":{"error":"x"},"text":"forged"}"#
    );
}

async fn built_ins_replaced_before_an_image_is_read_change_nothing<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    // The helper that reads an image's bytes is made only when an answer
    // needs it, after the script ran: it must still use the originals.
    let tool = script(
        &pool,
        "painter",
        "async function run() {
            const gif = new Uint8Array([71, 73, 70, 200]);
            const buffer = new Uint8Array([1, 2]).buffer;
            const view = new DataView(new Uint8Array([9, 8, 7]).buffer, 1, 2);
            const answer = rho.answer;
            globalThis.Uint8Array = function () { throw new Error('no bytes'); };
            ArrayBuffer.isView = () => false;
            String.fromCharCode = () => 'forged';
            Reflect.apply = () => { throw new Error('forged apply'); };
            Object.getPrototypeOf(Int8Array.prototype).subarray = () => { throw new Error('no subarray'); };
            Object.freeze = (object) => object;
            Function.prototype.bind = () => { throw new Error('no bind'); };
            globalThis.WeakMap = function () { throw new Error('no weak map'); };
            globalThis.Promise = function () { throw new Error('no promise'); };
            await rho.sleep(1);
            return answer({
                text: 'mine',
                images: [
                    { mimeType: 'image/gif', data: gif },
                    { mimeType: 'image/png', data: buffer },
                    { mimeType: 'image/png', data: view },
                    { mimeType: 'image/png', data: [1, 255] },
                ],
            });
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    assert_eq!(end.result.text(), "mine");
    let images: Vec<(&str, &[u8])> = end
        .result
        .images()
        .map(|image| (image.mime_type.as_str(), image.data.as_slice()))
        .collect();
    assert_eq!(
        images,
        vec![
            ("image/gif", &[71, 73, 70, 200][..]),
            ("image/png", &[1, 2][..]),
            ("image/png", &[8, 7][..]),
            ("image/png", &[1, 255][..]),
        ]
    );
    still_serves(&runner, &pool).await;
}

async fn lone_surrogates_become_replacement_characters<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let tool = script(
        &pool,
        "surrogates",
        r"function run() {
            rho.update('\uD800 alone');
            return { ['\uDFFF key']: 'high \uD83D then nothing', fine: '\uD83D\uDE00' };
        }",
        NEVER,
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
    let details: Value = serde_json::from_str(&end.result.text()).expect("JSON text");
    assert_eq!(
        details,
        json!({ "\u{FFFD} key": "high \u{FFFD} then nothing", "fine": "😀" })
    );
    // A string answer too, and a thrown message.
    let text = script(
        &pool,
        "text",
        r"function run() { return 'a\uDC00b'; }",
        NEVER,
    );
    assert_eq!(
        call(&runner, &text, json!({})).await.result.text(),
        "a\u{FFFD}b"
    );
    let thrown = script(
        &pool,
        "thrown",
        r"function run() { throw new Error('bad \uD800 byte'); }",
        NEVER,
    );
    let end = call(&runner, &thrown, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed);
    assert!(
        end.result.text().contains("bad \u{FFFD} byte"),
        "{}",
        end.result.text()
    );
}

async fn a_thrown_built_answer_is_that_answer_and_no_crash<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(1)));
    let scripts = ScriptSource::builder("agent", &pool)
        .with_policy(accounting.clone())
        .register(&registry)
        .expect("a new source");
    for (name, source) in [
        (
            "thrower",
            "function run({ n }) { if (n < 0) throw rho.error('`n` must not be negative'); return n; }",
        ),
        (
            "async_thrower",
            "async function run({ n }) { await rho.sleep(1); throw rho.error(`no ${n}`); }",
        ),
        (
            "early",
            "function run() { throw rho.answer({ text: 'done early', details: { early: true } }); }",
        ),
    ] {
        let defined = scripts
            .define(ScriptDefinition::new(
                name,
                "throws",
                json!({ "type": "object" }),
                source,
            ))
            .await;
        assert!(defined.is_ok(), "{defined:?}");
    }
    let turns = TurnRunner::new(runner, registry);
    for _ in 0..3 {
        let entries = turns
            .turn([
                ToolCall::new("a", "thrower", json!({ "n": -1 })),
                ToolCall::new("b", "async_thrower", json!({ "n": 7 })),
                ToolCall::new("c", "early", json!({})),
            ])
            .await;
        assert_eq!(entries[0].outcome, Outcome::Failed, "{}", entries[0].text());
        assert_eq!(entries[0].text(), "`n` must not be negative");
        assert_eq!(entries[1].outcome, Outcome::Failed, "{}", entries[1].text());
        assert_eq!(entries[1].text(), "no 7");
        assert_eq!(
            entries[2].outcome,
            Outcome::Succeeded,
            "{}",
            entries[2].text()
        );
        assert_eq!(entries[2].text(), "done early");
    }
    // Three failures each and no strike: a quarantine after one crash
    // would have disabled them.
    for name in ["thrower", "async_thrower"] {
        let health = accounting.tool_health(name).expect("counted");
        assert_eq!(
            (
                health.failed,
                health.crashed,
                health.strikes,
                health.quarantine.is_some()
            ),
            (3, 0, 0, false),
            "{name}"
        );
    }
}

async fn a_schema_that_rejects_every_argument_refuses_every_call_before_it_runs<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(1)));
    let scripts = ScriptSource::builder("agent", &pool)
        .with_policy(accounting.clone())
        .register(&registry)
        .expect("a new source");
    let defined = scripts
        .define(ScriptDefinition::new(
            "never",
            "takes nothing at all",
            json!({ "type": "object", "not": {} }),
            // Would crash if it ever ran.
            "function run() { throw new Error('ran'); }",
        ))
        .await;
    assert!(defined.is_ok(), "{defined:?}");
    let turns = TurnRunner::new(runner, registry);
    let entries = turns
        .turn([
            ToolCall::new("a", "never", json!({})),
            ToolCall::new("b", "never", json!({ "x": 1 })),
        ])
        .await;
    for entry in &entries {
        assert_eq!(entry.outcome, Outcome::Refused, "{}", entry.text());
        assert!(!entry.text().contains("ran"), "{}", entry.text());
    }
    let health = accounting.tool_health("never").expect("counted");
    assert_eq!(
        (
            health.refused,
            health.crashed,
            health.strikes,
            health.quarantine.is_some()
        ),
        (2, 0, 0, false)
    );
}

async fn hostile_answers_in_a_row_leave_the_pool_serving<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let sources = [
        "function run() { const a = {}; a.a = a; return a; }",
        "function run() { return { toJSON() { throw new Error('no json'); } }; }",
        "function run() { return new Proxy([], { get() { throw new Error('trap'); } }); }",
        "function run() { return new Proxy({}, { ownKeys() { return ['a', 'a']; } }); }",
        "function run() { throw Symbol('odd'); }",
        "function run() { throw { get message() { throw new Error('twice'); } }; }",
        "function run() { return Promise.reject(new Proxy({}, {})); }",
        "function run() { let o = {}; for (let i = 0; i < 100000; i++) o = { o }; return o; }",
        "function run() { return { [Symbol('s')]: 1, ok: 2n ** 64n }; }",
    ];
    for (index, source) in sources.into_iter().enumerate() {
        let tool = script(&pool, &format!("hostile_{index}"), source, NEVER);
        let end = call(&runner, &tool, json!({})).await;
        assert!(
            !end.result.text().is_empty(),
            "{source}: an empty text ({:?})",
            end.outcome
        );
        assert_ne!(end.outcome, Outcome::TimedOut, "{source}");
    }
    still_serves(&runner, &pool).await;
}
