//! Code mode: a script calls the host's tools as async functions, and
//! every such call is a rho call of its own (validation, gate, clock,
//! accounting, events, session), on tokio and smol, in threads and in
//! worker processes.
//!
//! Every scenario is four tests (see `support`).

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_registry::{Accounting, QuarantineRule, Source, ToolRegistry};
use rho_script::{CodeLimits, CodeMode, RunScript, ScriptOptions, ScriptPool, ScriptTool};
use rho_tool_core::{
    Executor, Gate, Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput, Verdict, async_trait,
};
use rho_turn::{TurnEvent, TurnRunner};
use serde_json::{Value, json};
use support::{NEVER, STOP_BOUND};

crate::on_both_executors!(
    a_script_calls_allowed_tools_and_gets_their_text_or_details,
    failures_throw_with_the_text_the_model_would_read,
    a_nested_crash_counts_against_the_nested_tool_not_the_script,
    a_nested_gate_wait_is_not_charged_to_the_script,
    the_scripts_deadline_still_bounds_its_calls_and_ends_them,
    subscribers_see_nested_calls_under_the_script_and_the_session_keeps_them,
    the_limits_of_a_run_throw_clear_errors,
    a_thousand_nested_calls_all_end_in_order_of_completion,
    run_script_runs_a_program_the_model_wrote_in_the_call,
    a_script_gets_whole_results_whatever_the_session_keeps,
);

/// A tool of the host's, written here as a closure.
struct HostTool<F> {
    name: &'static str,
    parameters: Value,
    run: F,
}

#[async_trait]
impl<F, Fut> Tool for HostTool<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolOutput> + Send + 'static,
{
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "a host tool"
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn timeout(&self) -> Duration {
        NEVER
    }
    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        (self.run)(arguments, context).await
    }
}

fn host_tool<F, Fut>(name: &'static str, parameters: Value, run: F) -> Arc<dyn Tool>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolOutput> + Send + 'static,
{
    Arc::new(HostTool {
        name,
        parameters,
        run,
    })
}

fn path_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "path": { "type": "string" } },
        "required": ["path"],
        "additionalProperties": false
    })
}

/// The host's file tools, in a source `files` with `accounting`.
fn files(registry: &ToolRegistry, accounting: Arc<Accounting>) {
    let source = registry
        .add_source(Source::trusted("files").with_policy(accounting))
        .expect("a new source");
    source
        .add(host_tool(
            "read_file",
            path_schema(),
            |args, _| async move {
                let path = args["path"].as_str().unwrap_or_default().to_owned();
                ToolOutput::text(format!("contents of {path}: alpha beta alpha"))
            },
        ))
        .expect("a new tool");
    source
        .add(host_tool(
            "grep",
            json!({
                "type": "object",
                "properties": { "text": { "type": "string" }, "word": { "type": "string" } },
                "required": ["text", "word"]
            }),
            |args, _| async move {
                let text = args["text"].as_str().unwrap_or_default();
                let word = args["word"].as_str().unwrap_or_default();
                let count = text.split_whitespace().filter(|w| *w == word).count();
                ToolOutput::text(format!("{count} matches"))
                    .with_details(json!({ "matches": count }))
            },
        ))
        .expect("a new tool");
    source
        .add(host_tool(
            "broken",
            json!({ "type": "object" }),
            |_, _| async {
                if true {
                    panic!("the broken tool broke");
                }
                ToolOutput::text("never")
            },
        ))
        .expect("a new tool");
    source
        .add(host_tool(
            "fails",
            json!({ "type": "object" }),
            |_, _| async { ToolOutput::error("the disk is full") },
        ))
        .expect("a new tool");
    source
        .add(host_tool(
            "slow",
            json!({ "type": "object" }),
            |_, context| async move {
                context.sleep(Duration::from_secs(3600)).await;
                ToolOutput::text("woke")
            },
        ))
        .expect("a new tool");
    source
        .add(host_tool(
            "gated",
            json!({ "type": "object" }),
            |_, _| async { ToolOutput::text("approved and done") },
        ))
        .expect("a new tool");
    source
        .add(host_tool(
            "big",
            json!({ "type": "object" }),
            |_, _| async { ToolOutput::text("x".repeat(4096)) },
        ))
        .expect("a new tool");
    let secrets = registry
        .add_source(Source::trusted("secrets"))
        .expect("a new source");
    secrets
        .add(host_tool(
            "read_secret",
            json!({ "type": "object" }),
            |_, _| async { ToolOutput::text("the secret") },
        ))
        .expect("a new tool");
}

/// A host whose `files` tools a script may call: its turns, the script
/// source's accounting and the files' accounting.
struct Host<E: Executor> {
    turns: TurnRunner<E>,
    agent: Arc<Accounting>,
    files: Arc<Accounting>,
    pool: ScriptPool,
}

impl<E: Executor> Host<E> {
    fn new(runner: Runner<E>, pool: ScriptPool, gate: Option<Arc<dyn Gate>>) -> Self {
        let registry = ToolRegistry::new();
        let files_accounting = Arc::new(Accounting::new(QuarantineRule::after(3)));
        files(&registry, files_accounting.clone());
        let runner = match gate {
            Some(gate) => runner.with_gate(gate),
            None => runner,
        };
        let turns = TurnRunner::new(runner, registry.clone());
        let agent = Arc::new(Accounting::new(QuarantineRule::after(3)));
        registry
            .add_source(Source::untrusted("agent").with_policy(agent.clone()))
            .expect("a new source");
        Self {
            turns,
            agent,
            files: files_accounting,
            pool,
        }
    }

    /// Adds a script tool `name` to the agent's source, with code mode
    /// over `files` and `limits`, and `timeout`.
    fn script(&self, name: &str, source: &str, timeout: Duration, limits: CodeLimits) {
        let code = CodeMode::new(&self.turns)
            .allow_source("files")
            .with_limits(limits);
        let tool = ScriptTool::new(name, "a script", source, &self.pool).with_options(
            ScriptOptions::new()
                .with_timeout(timeout)
                .with_code_mode(code),
        );
        let registry = self.turns.registry();
        let agent = registry
            .add_source(Source::untrusted(format!("agent-{name}")).with_policy(self.agent.clone()))
            .expect("a new source");
        agent.add(Arc::new(tool)).expect("a new tool");
    }

    async fn call(&self, name: &str, arguments: Value) -> rho_turn::SessionEntry {
        let mut entries = self
            .turns
            .turn([ToolCall::new("script-call", name, arguments)])
            .await;
        entries.remove(0)
    }
}

async fn a_script_calls_allowed_tools_and_gets_their_text_or_details<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let host = Host::new(runner, pool, None);
    host.script(
        "summarise",
        "async function run({ paths, word }) {
            const texts = await Promise.all(paths.map((path) => tools.read_file({ path })));
            const counts = [];
            for (const text of texts) counts.push((await tools.grep({ text, word })).matches);
            return { files: paths.length, counts, first: texts[0], allowed: Object.keys(tools).sort() };
        }",
        NEVER,
        CodeLimits::default(),
    );
    let entry = host
        .call(
            "summarise",
            json!({ "paths": ["a.txt", "b.txt"], "word": "alpha" }),
        )
        .await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    let answer: Value = serde_json::from_str(&entry.text()).expect("JSON");
    assert_eq!(answer["files"], 2);
    assert_eq!(answer["counts"], json!([2, 2]));
    assert_eq!(answer["first"], "contents of a.txt: alpha beta alpha");
    assert_eq!(
        answer["allowed"],
        json!([
            "big",
            "broken",
            "fails",
            "gated",
            "grep",
            "read_file",
            "slow"
        ])
    );
    // Four calls of tools, each a rho call kept in the script's entry.
    assert_eq!(entry.nested.len(), 4);
    assert!(
        entry
            .nested
            .iter()
            .all(|nested| nested.outcome == Outcome::Succeeded)
    );
    let ids: Vec<&str> = entry
        .nested
        .iter()
        .map(|nested| nested.call_id.as_str())
        .collect();
    for n in 1..=4 {
        assert!(
            ids.contains(&format!("script-call.{n}").as_str()),
            "{ids:?}"
        );
    }
}

async fn failures_throw_with_the_text_the_model_would_read<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let host = Host::new(runner, pool, None);
    host.script(
        "careful",
        "async function run() {
            const seen = {};
            for (const [key, call] of [
                ['fails', () => tools.fails({})],
                ['invalid', () => tools.read_file({ path: 7 })],
                ['unknown', () => tools.read_fil({ path: 'a' })],
                ['not_allowed', () => tools.read_secret({})],
            ]) {
                try { await call(); seen[key] = 'no error'; }
                catch (error) { seen[key] = `${error instanceof Error}: ${error.message}`; }
            }
            return seen;
        }",
        NEVER,
        CodeLimits::default(),
    );
    let entry = host.call("careful", json!({})).await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    let seen: Value = serde_json::from_str(&entry.text()).expect("JSON");
    assert_eq!(seen["fails"], "true: the disk is full");
    let invalid = seen["invalid"].as_str().expect("text");
    assert!(
        invalid.starts_with("true: ") && invalid.contains("/path"),
        "{invalid}"
    );
    let unknown = seen["unknown"].as_str().expect("text");
    assert!(
        unknown.contains("no such tool `read_fil`") && unknown.contains("read_file"),
        "{unknown}"
    );
    assert_eq!(
        seen["not_allowed"],
        "true: tool `read_secret` is not one this script may call (see `Object.keys(tools)`)"
    );
}

async fn a_nested_crash_counts_against_the_nested_tool_not_the_script<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let host = Host::new(runner, pool, None);
    host.script(
        "tries",
        "async function run() {
            try { await tools.broken({}); } catch (error) { return `caught: ${error.message}`; }
        }",
        NEVER,
        CodeLimits::default(),
    );
    let entry = host.call("tries", json!({})).await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    assert!(
        entry.text().contains("the broken tool broke"),
        "{}",
        entry.text()
    );
    let broken = host.files.tool_health("broken").expect("counted");
    assert_eq!(broken.crashed, 1);
    let script = host.agent.tool_health("tries").expect("counted");
    assert_eq!((script.succeeded, script.crashed), (1, 0));
}

/// A gate that makes the `gated` tool wait for a person.
struct SlowApproval<E> {
    executor: E,
    wait: Duration,
}

#[async_trait]
impl<E: Executor> Gate for SlowApproval<E> {
    async fn check(&self, call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        if call.name == "gated" {
            self.executor.sleep(self.wait).await;
        }
        Verdict::Allow
    }
}

async fn a_nested_gate_wait_is_not_charged_to_the_script<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let gate = Arc::new(SlowApproval {
        executor: runner.executor().clone(),
        wait: Duration::from_millis(1200),
    });
    let host = Host::new(runner, pool, Some(gate));
    host.script(
        "asks",
        "async function run() { return await tools.gated({}); }",
        Duration::from_millis(500),
        CodeLimits::default(),
    );
    let entry = host.call("asks", json!({})).await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    assert_eq!(entry.text(), "approved and done");
    assert!(entry.ran.expect("ran") >= Duration::from_millis(1200));
    assert!(entry.nested[0].waited >= Duration::from_millis(1200));
}

async fn the_scripts_deadline_still_bounds_its_calls_and_ends_them<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let host = Host::new(runner, pool, None);
    let ends = Arc::new(Mutex::new(Vec::new()));
    let seen = ends.clone();
    let _subscription = host
        .turns
        .events()
        .subscribe(move |event: &TurnEvent| {
            if let TurnEvent::ToolExecutionEnd(end) = event {
                seen.lock().expect("not poisoned").push((
                    end.call_id().to_owned(),
                    end.outcome(),
                    end.parent_call_id.clone(),
                ));
            }
        })
        .expect("a subscriber");
    host.script(
        "waits",
        "async function run() { return await tools.slow({}); }",
        Duration::from_millis(300),
        CodeLimits::default(),
    );
    let started = Instant::now();
    let entry = host.call("waits", json!({})).await;
    assert_eq!(entry.outcome, Outcome::TimedOut, "{}", entry.text());
    assert!(started.elapsed() < STOP_BOUND);
    // The nested call was aborted with the script: its end was reported,
    // under the script.
    let deadline = Instant::now() + STOP_BOUND;
    loop {
        let ends = ends.lock().expect("not poisoned").clone();
        if let Some((_, outcome, parent)) = ends.iter().find(|(id, ..)| id == "script-call.1") {
            assert_eq!(*outcome, Outcome::Aborted);
            assert_eq!(parent.as_deref(), Some("script-call"));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no end of the nested call: {ends:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let slow = host.files.tool_health("slow").expect("counted");
    assert_eq!((slow.aborted, slow.crashed, slow.timed_out), (1, 0, 0));
}

async fn subscribers_see_nested_calls_under_the_script_and_the_session_keeps_them<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let host = Host::new(runner, pool, None);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let _subscription = host
        .turns
        .events()
        .subscribe(move |event: &TurnEvent| {
            seen.lock().expect("not poisoned").push(event.clone());
        })
        .expect("a subscriber");
    host.script(
        "reads",
        "async function run() { return await tools.read_file({ path: 'x' }); }",
        NEVER,
        CodeLimits::default(),
    );
    let entry = host.call("reads", json!({})).await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    assert_eq!(entry.nested.len(), 1);
    assert_eq!(entry.nested[0].tool, "read_file");
    let json = serde_json::to_value(&entry).expect("JSON");
    assert_eq!(json["nested"][0]["call_id"], "script-call.1");
    let deadline = Instant::now() + STOP_BOUND;
    loop {
        let events = events.lock().expect("not poisoned").clone();
        let nested: Vec<&'static str> = events
            .iter()
            .filter(|event| event.call_id() == "script-call.1")
            .map(|event| {
                assert_eq!(event.parent_call_id(), Some("script-call"));
                event.name()
            })
            .collect();
        if nested.last() == Some(&"tool_execution_end") {
            assert_eq!(nested.first(), Some(&"tool_execution_start"));
            break;
        }
        assert!(Instant::now() < deadline, "{nested:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

async fn the_limits_of_a_run_throw_clear_errors<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
    let host = Host::new(runner, pool, None);
    let limits = CodeLimits::default()
        .with_max_calls(3)
        .with_max_in_flight(2)
        .with_max_bytes_back(6000);
    host.script(
        "counted",
        "async function run() {
            const result = {};
            for (let i = 0; i < 4; i++) {
                try { await tools.read_file({ path: `${i}` }); result[i] = 'ok'; }
                catch (error) { result[i] = error.message; }
            }
            return result;
        }",
        NEVER,
        limits.clone(),
    );
    let entry = host.call("counted", json!({})).await;
    let result: Value = serde_json::from_str(&entry.text()).expect("JSON");
    assert_eq!(result["0"], "ok");
    assert_eq!(result["2"], "ok");
    assert_eq!(
        result["3"],
        "tools.read_file: this script run has made its 3 calls of tools; it may make no more"
    );
    host.script(
        "crowded",
        "async function run() {
            const held = [tools.slow({}), tools.slow({})];
            held.forEach((call) => call.catch(() => {}));
            try { await tools.read_file({ path: 'a' }); return 'ran'; }
            catch (error) { return error.message; }
        }",
        NEVER,
        limits.clone(),
    );
    let entry = host.call("crowded", json!({})).await;
    assert_eq!(
        entry.text(),
        "tools.read_file: 2 calls of tools are in flight from this script already; await some of them first"
    );
    host.script(
        "flooded",
        "async function run() {
            await tools.big({});
            try { await tools.big({}); return 'ran'; } catch (error) { return error.message; }
        }",
        NEVER,
        limits,
    );
    let entry = host.call("flooded", json!({})).await;
    assert_eq!(
        entry.text(),
        "tools.big: this script run has been passed back more than its 6000 bytes of results; this one is withheld"
    );
}

async fn a_thousand_nested_calls_all_end_in_order_of_completion<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let host = Host::new(runner, pool, None);
    let ended = Arc::new(AtomicUsize::new(0));
    let counter = ended.clone();
    let _subscription = host
        .turns
        .events()
        .subscribe(move |event: &TurnEvent| {
            if let (TurnEvent::ToolExecutionEnd(_), Some(_)) = (event, event.parent_call_id()) {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        })
        .expect("a subscriber");
    host.script(
        "many",
        "async function run() {
            const order = [];
            const calls = [];
            for (let i = 0; i < 1000; i++) {
                if (calls.length >= 16) await Promise.race(calls.map((c) => c.done));
                const call = { done: null };
                call.done = tools.read_file({ path: `${i}` }).then(() => {
                    order.push(i);
                    calls.splice(calls.indexOf(call), 1);
                });
                calls.push(call);
            }
            await Promise.all(calls.map((c) => c.done));
            return { ended: order.length, distinct: new Set(order).size };
        }",
        NEVER,
        CodeLimits::default().with_max_calls(1000),
    );
    let entry = host.call("many", json!({})).await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    let answer: Value = serde_json::from_str(&entry.text()).expect("JSON");
    assert_eq!(answer, json!({ "ended": 1000, "distinct": 1000 }));
    assert_eq!(entry.nested.len(), 1000);
    let deadline = Instant::now() + STOP_BOUND;
    while ended.load(Ordering::SeqCst) < 1000 {
        assert!(
            Instant::now() < deadline,
            "{} ends seen",
            ended.load(Ordering::SeqCst)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

use rho_turn::{Typed, TypedTool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
/// How to search.
struct SearchArgs {
    /// The words to look for.
    query: String,
    /// Where to look.
    scope: Scope,
    /// At most this many results.
    limit: Option<u32>,
    /// Only in these folders.
    folders: Vec<String>,
    range: Option<Range>,
    target: Target,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Scope {
    Files,
    Symbols,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Range {
    start: u32,
    end: Option<u32>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Target {
    Path(String),
    Lines(Vec<u32>),
}

struct Search;

#[async_trait]
impl TypedTool for Search {
    type Args = SearchArgs;
    fn name(&self) -> &str {
        "search"
    }
    fn description(&self) -> &str {
        "Searches the project."
    }
    fn output_schema(&self) -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": { "hits": { "type": "array", "items": { "type": "string" } } },
            "required": ["hits"]
        }))
    }
    async fn run(&self, _args: SearchArgs, _context: ToolContext) -> ToolOutput {
        ToolOutput::text("")
    }
}

/// The declarations a model is shown, made from schemas a real generator
/// (schemars) wrote for typed tools: nested objects, enums, optional
/// fields, arrays, unions, and an output schema.
#[test]
fn declarations_render_real_schemas_as_typescript() {
    let declarations = project_declarations(false);
    let expected = [
        "declare const tools: {",
        "  /** Searches the project. */",
        "  search(args: {",
        "    /** Only in these folders. */",
        "    folders: string[];",
        "    /** At most this many results. */",
        "    limit?: number | null;",
        "    /** The words to look for. */",
        "    query: string;",
        "    /** Where to look. */",
        "    scope: \"files\" | \"symbols\";",
        "    target: string | number[];",
        "  }): Promise<{",
        "    hits: string[];",
        "  }>;",
        "};",
    ];
    for line in expected {
        assert!(
            declarations.lines().any(|got| got == line),
            "no line `{line}` in:\n{declarations}"
        );
    }
    // The optional nested object, through its `$ref`.
    // The optional nested object, through its `$ref`, indented as its
    // place says.
    assert!(
        declarations.contains(
            "    range?: {\n      end?: number | null;\n      start: number;\n    } | null;\n"
        ),
        "{declarations}"
    );
}

async fn run_script_runs_a_program_the_model_wrote_in_the_call<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let host = Host::new(runner, pool.clone(), None);
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(1)));
    let run_script = RunScript::new(&pool).with_options(
        ScriptOptions::new()
            .with_timeout(NEVER)
            .with_code_mode(CodeMode::new(&host.turns).allow_source("files")),
    );
    host.turns
        .registry()
        .add_source(Source::trusted("code").with_policy(accounting.clone()))
        .expect("a new source")
        .add(Arc::new(run_script))
        .expect("a new tool");
    let program = "async function run({ paths }) {
        const texts = await Promise.all(paths.map((path) => tools.read_file({ path })));
        return texts.map((text) => text.length);
    }";
    let entry = host
        .call(
            "run_script",
            json!({ "source": program, "args": { "paths": ["a", "bb"] } }),
        )
        .await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    assert_eq!(entry.text(), "[31,32]");
    assert_eq!(entry.nested.len(), 2);
    // A program that does not parse is the call's mistake, with where:
    // an error, no strike (a quarantine after one crash would follow).
    for _ in 0..2 {
        let entry = host
            .call(
                "run_script",
                json!({ "source": "function run() {\n  return [1, 2;\n}" }),
            )
            .await;
        assert_eq!(entry.outcome, Outcome::Failed, "{}", entry.text());
        assert!(entry.text().contains("SyntaxError"), "{}", entry.text());
        assert!(
            entry.text().contains("run_script.js:2:"),
            "{}",
            entry.text()
        );
    }
    let health = accounting.tool_health("run_script").expect("counted");
    assert_eq!(
        (health.failed, health.crashed, health.quarantine.is_some()),
        (2, 0, false)
    );
}

async fn a_script_gets_whole_results_whatever_the_session_keeps<E: Executor>(
    runner: Runner<E>,
    pool: ScriptPool,
) {
    let mut host = Host::new(runner, pool, None);
    // The session keeps no details and 8 bytes of text of every call but
    // the script's own.
    host.turns = host
        .turns
        .clone()
        .with_keep_details(rho_turn::KeepDetails::None)
        .with_output_cap(rho_turn::OutputCap::bytes(8))
        .with_tool_output_cap("counts", None);
    host.script(
        "counts",
        "async function run() {
            const text = await tools.read_file({ path: 'a' });
            const found = await tools.grep({ text, word: 'alpha' });
            return { text, found };
        }",
        NEVER,
        CodeLimits::default(),
    );
    let entry = host.call("counts", json!({})).await;
    assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
    // The session's copies of the nested calls are cut and keep no
    // details...
    assert_eq!(entry.nested.len(), 2);
    assert!(
        entry
            .nested
            .iter()
            .all(|nested| nested.result.details.is_none())
    );
    assert!(entry.nested.iter().all(|nested| nested.cut_bytes > 0));
    // ... but the script got the whole results.
    let answer: Value = serde_json::from_str(&entry.text()).expect("JSON");
    assert_eq!(answer["text"], "contents of a: alpha beta alpha");
    assert_eq!(answer["found"], json!({ "matches": 2 }));
}

/// The declarations of the project's tools: `search`, whose schema
/// schemars made, and (with `more`) `word-count`, whose name is no
/// identifier and whose argument holds a map.
fn project_declarations(more: bool) -> String {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("project"))
        .expect("a new source")
        .add(Typed::new(Search).into_arc())
        .expect("a new tool");
    let executors = rho_exec_smol::SmolPool::new(1).expect("an executor");
    let turns = TurnRunner::new(executors.executor(), registry.clone());
    // Nothing allowed, nothing declared.
    assert_eq!(
        CodeMode::new(&turns).declarations(),
        "declare const tools: {\n};\n"
    );
    if more {
        registry
            .add_source(Source::trusted("words"))
            .expect("a new source")
            .add(host_tool(
                "word-count",
                json!({
                    "type": "object",
                    "properties": {
                        "text": { "type": "string" },
                        "weights": { "type": "object", "additionalProperties": { "type": "number" } }
                    },
                    "required": ["text"],
                    "additionalProperties": false
                }),
                |_, _| async { ToolOutput::text("0") },
            ))
            .expect("a new tool");
        return CodeMode::new(&turns)
            .allow_tool("search")
            .allow_tool("word-count")
            .declarations();
    }
    CodeMode::new(&turns).allow_tool("search").declarations()
}

/// The target directory, where test peers are installed.
fn target_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the tmp dir is inside the target dir")
        .to_path_buf()
}

/// The pinned TypeScript compiler, installed by
/// `tests/peers/install-typescript.sh` the first time: the path of `tsc`.
///
/// # Panics
///
/// Loudly, with the installer's words, when node, npm or the install is
/// not available: the test never passes without its compiler.
fn typescript() -> std::path::PathBuf {
    let dir = target_dir().join("peers").join("typescript");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("peers")
        .join("install-typescript.sh");
    let output = std::process::Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .output()
        .unwrap_or_else(|error| panic!("\n\n*** cannot run {}: {error} ***\n", script.display()));
    if !output.status.success() {
        panic!(
            "\n\n*** the declarations test needs node with npm and the pinned TypeScript \
             compiler, and it could not be installed ***\n{} said ({}):\n{}{}\n",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
    }
    dir.join("node_modules/typescript/bin/tsc")
}

/// The declarations are TypeScript a real compiler takes in strict mode,
/// and their types are the schemas': calls that fit the schemas compile,
/// and each call that breaks one (a value outside an enum, a missing
/// required field, a nested object without its required field, a value of
/// the wrong type, an unknown key of a closed object) is an error the
/// compiler reports (each is marked `@ts-expect-error`, so a call that
/// compiled when it should not fails the check too).
#[test]
fn the_declarations_type_check_under_the_typescript_compiler_and_reject_wrong_calls() {
    let tsc = typescript();
    let declarations = project_declarations(true);
    let program = format!(
        r#"{declarations}
export async function fits(): Promise<number> {{
  const found = await tools.search({{ query: "a", scope: "files", folders: [], target: [1, 2], range: {{ start: 1 }} }});
  const hits: string[] = found.hits;
  await tools.search({{ query: "b", scope: "symbols", folders: ["src"], target: "src/lib.rs", limit: null }});
  await tools["word-count"]({{ text: "one two", weights: {{ one: 2 }} }});
  return hits.length;
}}

export async function breaks(): Promise<void> {{
  // @ts-expect-error: not one of the enum's values
  await tools.search({{ query: "a", scope: "lines", folders: [], target: "x" }});
  // @ts-expect-error: the required `query` is missing
  await tools.search({{ scope: "files", folders: [], target: "x" }});
  // @ts-expect-error: a range without its required `start`
  await tools.search({{ query: "a", scope: "files", folders: [], target: "x", range: {{ end: 2 }} }});
  // @ts-expect-error: a target that is neither text nor numbers
  await tools.search({{ query: "a", scope: "files", folders: [], target: true }});
  // @ts-expect-error: a weight that is not a number
  await tools["word-count"]({{ text: "a", weights: {{ a: "heavy" }} }});
  // @ts-expect-error: a key the closed object does not have
  await tools["word-count"]({{ text: "a", language: "en" }});
}}
"#
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("declarations");
    std::fs::create_dir_all(&dir).expect("a folder for the program");
    let file = dir.join("tools.ts");
    std::fs::write(&file, &program).expect("the program is written");
    let output = std::process::Command::new("node")
        .arg(&tsc)
        .args([
            "--noEmit", "--strict", "--target", "es2022", "--lib", "es2022",
        ])
        .arg(&file)
        .output()
        .expect("node runs the compiler");
    assert!(
        output.status.success(),
        "tsc refused the program ({}):\n{}{}\nthe program:\n{program}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}
