//! Script tools defined at run time through a `ScriptSource` and the ready
//! `define_tool`, called through a turn, on tokio (multi-thread) and on
//! smol: what a definition checks before anything is registered, that the
//! gate sees a definition before the tool exists, and that a quarantined
//! tool stays quarantined when it is redefined, until the host re-enables
//! it.
//!
//! Every scenario is `<scenario>::on_tokio` and `<scenario>::on_smol`.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rho_registry::{Accounting, QuarantineRule, Refusal, Source, ToolRegistry};
use rho_script::{DefineError, ScriptDefinition, ScriptPool, ScriptSource};
use rho_tool_core::{
    AnnotationGate, ApprovalRequest, Executor, Outcome, Runner, Tool, ToolCall, ToolContext,
    ToolOutput, Verdict, async_trait,
};
use rho_turn::{SessionEntry, TurnRunner};
use serde_json::{Value, json};

crate::on_both_executors!(
    a_defined_tool_is_called_through_a_turn,
    redefining_a_tool_changes_what_its_calls_run,
    a_syntax_error_is_refused_with_its_line_and_column_and_nothing_is_registered,
    a_script_without_run_is_refused_and_nothing_is_registered,
    a_top_level_that_loops_for_ever_is_refused_at_the_check_deadline,
    a_definition_waiting_for_a_busy_thread_gets_its_whole_check_deadline,
    a_top_level_that_throws_is_refused_with_its_message,
    parameters_that_are_not_an_object_schema_are_refused_and_nothing_is_registered,
    a_bad_name_is_refused_and_nothing_is_registered,
    another_sources_tool_name_is_refused_and_its_tool_kept,
    define_tool_asks_the_gate_before_the_tool_exists_and_answers_mistakes_as_errors,
    a_quarantined_tool_stays_quarantined_when_redefined_until_the_host_reenables_it,
    a_source_of_many_megabytes_is_refused_before_it_is_parsed,
    a_new_name_past_the_tool_cap_is_refused_but_a_held_one_is_redefined,
);

/// An object schema with two numbers `a` and `b`.
fn two_numbers() -> Value {
    json!({
        "type": "object",
        "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
        "required": ["a", "b"]
    })
}

fn definition(name: &str, source: &str) -> ScriptDefinition {
    ScriptDefinition::new(name, "a test tool", two_numbers(), source)
}

/// A registry with a script source named `agent` (with `accounting`, if
/// any) and a turn runner over it.
fn setup<E: Executor>(
    runner: Runner<E>,
    pool: &ScriptPool,
    accounting: Option<Arc<Accounting>>,
) -> (TurnRunner<E>, ScriptSource) {
    let registry = ToolRegistry::new();
    let mut builder = ScriptSource::builder("agent", pool);
    if let Some(accounting) = accounting {
        builder = builder.with_policy(accounting);
    }
    let source = builder.register(&registry).expect("a fresh registry");
    (TurnRunner::new(runner, registry), source)
}

/// One call in a turn of its own.
async fn call<E: Executor>(turns: &TurnRunner<E>, name: &str, arguments: Value) -> SessionEntry {
    let mut entries = turns.turn([ToolCall::new("call", name, arguments)]).await;
    entries.remove(0)
}

fn is_unknown<E: Executor>(turns: &TurnRunner<E>, name: &str) -> bool {
    matches!(turns.registry().resolve(name), Err(Refusal::Unknown { .. }))
}

async fn a_defined_tool_is_called_through_a_turn<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    let (turns, source) = setup(runner, &pool, None);
    let defined = source
        .define(definition(
            "add",
            "function run({ a, b }) { return { sum: a + b }; }",
        ))
        .await
        .expect("a good definition");
    assert!(
        !defined.replaced && defined.disabled.is_none(),
        "{defined:?}"
    );
    assert!(
        defined.to_string().contains("can be called now"),
        "{defined}"
    );

    let tools = turns.registry().tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].parameters, two_numbers());

    let entry = call(&turns, "add", json!({ "a": 2, "b": 3 })).await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{entry:?}");
    assert_eq!(entry.text(), r#"{"sum":5}"#);

    // The schema is the tool's: the turn refuses arguments that do not fit.
    let entry = call(&turns, "add", json!({ "a": "two", "b": 3 })).await;
    assert_eq!(entry.outcome, Outcome::Refused, "{entry:?}");
}

async fn redefining_a_tool_changes_what_its_calls_run<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner, &pool, None);
    source
        .define(definition(
            "calc",
            "function run({ a, b }) { return String(a + b); }",
        ))
        .await
        .expect("first");
    let entry = call(&turns, "calc", json!({ "a": 6, "b": 3 })).await;
    assert_eq!(entry.text(), "9");

    let defined = source
        .define(definition(
            "calc",
            "const run = ({ a, b }) => String(a * b);",
        ))
        .await
        .expect("second");
    assert!(defined.replaced, "{defined:?}");
    assert!(
        defined.to_string().contains("run the new code"),
        "{defined}"
    );
    let entry = call(&turns, "calc", json!({ "a": 6, "b": 3 })).await;
    assert_eq!(entry.text(), "18");
    assert_eq!(turns.registry().tools().len(), 1);
}

/// Defines `name` with `source`, expects a refusal, and checks that the
/// registry still has no tool of that name.
async fn refused<E: Executor>(
    turns: &TurnRunner<E>,
    source: &ScriptSource,
    definition: ScriptDefinition,
) -> DefineError {
    let name = definition.name.clone();
    let error = source
        .define(definition)
        .await
        .expect_err("a refused definition");
    assert!(is_unknown(turns, &name), "{name} was registered");
    assert!(turns.registry().tools().is_empty());
    error
}

async fn a_syntax_error_is_refused_with_its_line_and_column_and_nothing_is_registered<
    E: Executor,
>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner, &pool, None);
    let script = "// adds\nfunction run({ a, b }) {\n  return a +;\n}\n";
    let error = refused(&turns, &source, definition("add", script)).await;
    match &error {
        DefineError::Syntax { line, column, .. } => assert_eq!((*line, *column), (3, 13)),
        other => panic!("{other:?}"),
    }
    let text = error.to_string();
    assert!(text.contains("syntax error at line 3, column 13"), "{text}");

    // An unclosed brace: the engine reports where the script ends.
    let error = refused(
        &turns,
        &source,
        definition("add", "function run() {\n  return 1;\n"),
    )
    .await;
    assert!(matches!(error, DefineError::Syntax { .. }), "{error:?}");

    // `import` is not for classic scripts.
    let error = refused(
        &turns,
        &source,
        definition("add", "import x from 'y';\nfunction run() {}"),
    )
    .await;
    assert!(
        matches!(error, DefineError::Syntax { line: 1, .. }),
        "{error:?}"
    );
}

async fn a_script_without_run_is_refused_and_nothing_is_registered<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner, &pool, None);
    let error = refused(
        &turns,
        &source,
        definition("add", "function main() { return 1; }"),
    )
    .await;
    assert!(
        matches!(&error, DefineError::NoRun { found, .. } if found == "undefined"),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("defines no function `run`"),
        "{error}"
    );

    let error = refused(&turns, &source, definition("add", "const run = 42;")).await;
    assert!(
        matches!(&error, DefineError::NoRun { found, .. } if found == "number"),
        "{error:?}"
    );
}

async fn a_top_level_that_loops_for_ever_is_refused_at_the_check_deadline<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let registry = ToolRegistry::new();
    let source = ScriptSource::builder("agent", &pool)
        .with_check_timeout(Duration::from_millis(200))
        .register(&registry)
        .expect("a fresh registry");
    let turns = TurnRunner::new(runner, registry);
    let started = Instant::now();
    let error = refused(
        &turns,
        &source,
        definition("spin", "for (;;) {}\nfunction run() {}"),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_millis(200) + support::STOP_BOUND,
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(error, DefineError::TopLevelTimedOut { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("still running after 200ms"),
        "{error}"
    );

    // The thread is free again: a good definition goes through.
    source
        .define(definition("ok", "function run() { return 'ok'; }"))
        .await
        .expect("the next definition");
    assert_eq!(
        call(&turns, "ok", json!({ "a": 1, "b": 2 })).await.text(),
        "ok"
    );
}

/// The check's deadline counts from when a script thread takes the
/// definition: one that waits behind busy threads for longer than the
/// deadline is still checked, and a good one is accepted.
async fn a_definition_waiting_for_a_busy_thread_gets_its_whole_check_deadline<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner.clone(), &pool, None);
    // Both of the pool's threads wait in a script for 1.5 s, longer than
    // the check's deadline of 1 s.
    let sleeper = support::script(
        &pool,
        "sleeper",
        "async function run() { await rho.sleep(1500); return 'slept'; }",
        support::NEVER,
    );
    let busy: Vec<_> = (0..2)
        .map(|n| {
            runner.start(
                ToolCall::new(format!("busy-{n}"), "sleeper", json!({})),
                sleeper.clone(),
            )
        })
        .collect();
    // Long enough for both calls to reach their threads.
    runner.executor().sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let defined = source
        .define(definition("fine", "function run() { return 'fine'; }"))
        .await;
    let waited = started.elapsed();
    assert!(
        defined.is_ok(),
        "refused after {waited:?}: {}",
        defined.expect_err("refused")
    );
    assert!(
        waited > ScriptSource::DEFAULT_CHECK_TIMEOUT,
        "the definition waited only {waited:?}: the threads were not busy"
    );
    for sleeping in busy {
        let end = sleeping.await;
        assert_eq!(end.result.text(), "slept", "{end:?}");
    }
    assert_eq!(
        call(&turns, "fine", json!({ "a": 1, "b": 2 })).await.text(),
        "fine"
    );
}

async fn a_top_level_that_throws_is_refused_with_its_message<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner, &pool, None);
    let script = "function run() {}\nthrow new TypeError('no setup');";
    let error = refused(&turns, &source, definition("setup", script)).await;
    let text = error.to_string();
    assert!(matches!(error, DefineError::TopLevel { .. }), "{error:?}");
    assert!(text.contains("TypeError: no setup"), "{text}");
    assert!(text.contains("setup.js:2"), "{text}");
}

async fn parameters_that_are_not_an_object_schema_are_refused_and_nothing_is_registered<
    E: Executor,
>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner, &pool, None);
    let run = "function run() { return 'ok'; }";
    let with = |parameters: Value| ScriptDefinition::new("t", "a test tool", parameters, run);

    let error = refused(&turns, &source, with(json!({ "type": "objekt" }))).await;
    assert!(matches!(error, DefineError::BadSchema { .. }), "{error:?}");
    assert!(
        error.to_string().contains("not a valid JSON Schema"),
        "{error}"
    );

    let bad_regex =
        json!({ "type": "object", "properties": { "a": { "type": "string", "pattern": "([" } } });
    let error = refused(&turns, &source, with(bad_regex)).await;
    assert!(matches!(error, DefineError::BadSchema { .. }), "{error:?}");

    for not_object in [
        json!({ "type": "string" }),
        json!({ "properties": {} }),
        json!([1]),
    ] {
        let error = refused(&turns, &source, with(not_object.clone())).await;
        assert!(
            matches!(error, DefineError::NotObjectSchema { .. }),
            "{not_object}: {error:?}"
        );
        assert!(error.to_string().contains("schema of an object"), "{error}");
    }
}

async fn a_bad_name_is_refused_and_nothing_is_registered<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner, &pool, None);
    let run = "function run() { return 'ok'; }";
    let long = "n".repeat(65);
    for name in ["", "two words", "dots.are.out", "ünïcode", long.as_str()] {
        let error = refused(&turns, &source, definition(name, run)).await;
        assert!(
            matches!(error, DefineError::BadName { .. }),
            "{name:?}: {error:?}"
        );
        assert!(
            error.to_string().contains("1 to 64 ASCII letters"),
            "{error}"
        );
    }
}

async fn a_source_of_many_megabytes_is_refused_before_it_is_parsed<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner, &pool, None);
    // Eight megabytes of a valid script: refused by its size, not parsed.
    let huge = format!(
        "function run() {{ return 'ok'; }}\n{}",
        "// padding that parses\n".repeat(8 << 20 >> 4)
    );
    let bytes = huge.len();
    let started = Instant::now();
    let error = refused(&turns, &source, definition("huge", &huge)).await;
    assert!(
        matches!(error, DefineError::SourceTooLarge { max, .. } if max == rho_script::ScriptTool::DEFAULT_MAX_SOURCE),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains(&format!("its script is {bytes} bytes")),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

async fn a_new_name_past_the_tool_cap_is_refused_but_a_held_one_is_redefined<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let registry = ToolRegistry::new();
    let source = ScriptSource::builder("agent", &pool)
        .with_max_tools(2)
        .register(&registry)
        .expect("a fresh registry");
    let turns = TurnRunner::new(runner, registry);
    for name in ["one", "two"] {
        source
            .define(definition(name, "function run() { return 'first'; }"))
            .await
            .expect("room for it");
    }
    let error = source
        .define(definition("three", "function run() { return 'third'; }"))
        .await
        .expect_err("no room");
    assert!(
        matches!(error, DefineError::TooManyTools { max: 2, .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("redefine one of them"),
        "{error}"
    );
    assert!(is_unknown(&turns, "three"));
    // A held name is a redefinition, not a new tool.
    source
        .define(definition("two", "function run() { return 'second'; }"))
        .await
        .expect("a redefinition needs no room");
    let entry = call(&turns, "two", json!({ "a": 1, "b": 2 })).await;
    assert_eq!(entry.text(), "second");
    assert_eq!(turns.registry().tools().len(), 2);
}

/// A host tool, to hold a name.
struct Builtin;

#[async_trait]
impl Tool for Builtin {
    fn name(&self) -> &str {
        "search"
    }
    fn description(&self) -> &str {
        "The host's search."
    }
    async fn run(&self, _arguments: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text("the host's answer")
    }
}

async fn another_sources_tool_name_is_refused_and_its_tool_kept<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let (turns, source) = setup(runner, &pool, None);
    turns
        .registry()
        .add_source(Source::trusted("builtin"))
        .expect("a new source")
        .add(Arc::new(Builtin))
        .expect("a free name");
    let error = source
        .define(definition("search", "function run() { return 'mine'; }"))
        .await
        .expect_err("the host's name");
    assert!(
        matches!(&error, DefineError::NameTaken { held_by, .. } if held_by == "builtin"),
        "{error:?}"
    );
    assert!(error.to_string().contains("choose another name"), "{error}");
    let entry = call(&turns, "search", json!({})).await;
    assert_eq!(entry.text(), "the host's answer");
    assert!(source.handle().source().is_untrusted());
}

async fn define_tool_asks_the_gate_before_the_tool_exists_and_answers_mistakes_as_errors<
    E: Executor,
>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let registry = ToolRegistry::new();
    let source = ScriptSource::new(&registry, "agent", &pool).expect("a fresh registry");
    registry
        .add_source(Source::trusted("host"))
        .expect("a new source")
        .add(Arc::new(source.define_tool()))
        .expect("a free name");

    // The approver counts the requests and checks that, while it is asked
    // about a definition, the tool does not exist yet.
    let asked = Arc::new(AtomicUsize::new(0));
    let seen_before = Arc::new(AtomicUsize::new(0));
    let approver = {
        let asked = Arc::clone(&asked);
        let seen_before = Arc::clone(&seen_before);
        let registry = registry.clone();
        move |request: ApprovalRequest| {
            asked.fetch_add(1, Ordering::SeqCst);
            if request.tool == "define_tool" {
                let name = request.arguments["name"].as_str().unwrap_or_default();
                if registry.resolve(name).is_ok() {
                    seen_before.fetch_add(1, Ordering::SeqCst);
                }
                assert!(
                    request.arguments["source"]
                        .as_str()
                        .is_some_and(|s| s.contains("run"))
                );
            }
            async move { Verdict::Allow }
        }
    };
    let runner = runner
        .with_gate(Arc::new(AnnotationGate::new()))
        .with_approver(Arc::new(approver));
    let turns = TurnRunner::new(runner, registry);

    let entry = call(
        &turns,
        "define_tool",
        json!({
            "name": "double",
            "description": "Doubles `n`.",
            "parameters": { "type": "object", "properties": { "n": { "type": "number" } } },
            "source": "function run({ n }) { return String(2 * n); }",
        }),
    )
    .await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{entry:?}");
    assert!(
        entry.text().contains("defined tool `double`"),
        "{}",
        entry.text()
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        seen_before.load(Ordering::SeqCst),
        0,
        "the tool existed before approval"
    );

    // The new tool is untrusted, so the gate asks about it too.
    let entry = call(&turns, "double", json!({ "n": 21 })).await;
    assert_eq!(entry.text(), "42");
    assert_eq!(asked.load(Ordering::SeqCst), 2);

    // A mistake is an error result the model reads, not a crash.
    let entry = call(
        &turns,
        "define_tool",
        json!({
            "name": "broken",
            "description": "Broken.",
            "parameters": { "type": "object" },
            "source": "function run() {\n  return );\n}",
        }),
    )
    .await;
    assert_eq!(entry.outcome, Outcome::Failed, "{entry:?}");
    assert!(
        entry.text().contains("syntax error at line 2, column 10"),
        "{}",
        entry.text()
    );
    assert!(is_unknown(&turns, "broken"));

    // Arguments that do not fit `define_tool`'s schema never reach the gate.
    let entry = call(&turns, "define_tool", json!({ "name": "x" })).await;
    assert_eq!(entry.outcome, Outcome::Refused, "{entry:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 3);
}

async fn a_quarantined_tool_stays_quarantined_when_redefined_until_the_host_reenables_it<
    E: Executor,
>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
    let (turns, source) = setup(runner, &pool, Some(Arc::clone(&accounting)));
    turns
        .registry()
        .add_source(Source::trusted("host"))
        .expect("a new source")
        .add(Arc::new(source.define_tool()))
        .expect("a free name");
    let define = |script: &str| {
        json!({
            "name": "flaky",
            "description": "Flaky.",
            "parameters": { "type": "object" },
            "source": script,
        })
    };

    let entry = call(
        &turns,
        "define_tool",
        define("function run() { throw new Error('bug'); }"),
    )
    .await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{entry:?}");
    for _ in 0..2 {
        let entry = call(&turns, "flaky", json!({})).await;
        assert_eq!(entry.outcome, Outcome::Crashed, "{entry:?}");
    }
    assert!(accounting.quarantine("flaky").is_some());

    // Written again, fixed: accepted, but still quarantined, and the model
    // is told so.
    let entry = call(
        &turns,
        "define_tool",
        define("function run() { return 'fixed'; }"),
    )
    .await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{entry:?}");
    let text = entry.text();
    assert!(
        text.contains("redefined tool `flaky`, but it stays disabled after 2 failures"),
        "{text}"
    );
    assert!(text.contains("only the host can"), "{text}");
    let entry = call(&turns, "flaky", json!({})).await;
    assert_eq!(entry.outcome, Outcome::Refused, "{entry:?}");
    assert!(entry.text().contains("disabled"), "{}", entry.text());
    assert!(
        turns
            .registry()
            .tools()
            .iter()
            .all(|tool| tool.name != "flaky")
    );

    // Removed and defined afresh: the record is the name's, so still
    // quarantined.
    assert!(source.remove("flaky"));
    let defined = source
        .define(ScriptDefinition::new(
            "flaky",
            "Flaky.",
            json!({ "type": "object" }),
            "function run() { return 'fixed'; }",
        ))
        .await
        .expect("a good definition");
    assert!(defined.disabled.is_some(), "{defined:?}");
    assert_eq!(
        call(&turns, "flaky", json!({})).await.outcome,
        Outcome::Refused
    );

    // The host puts it back: the new code runs.
    assert!(accounting.reenable("flaky"));
    let entry = call(&turns, "flaky", json!({})).await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{entry:?}");
    assert_eq!(entry.text(), "fixed");
    let health = accounting.tool_health("flaky").expect("it was called");
    assert_eq!(health.crashed, 2);
}
