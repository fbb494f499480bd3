//! The scripted session: the registry, the gate, and twelve model messages.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use rho::gate::{Match, Rule};
use rho::process::ShellTool;
use rho::script::{CodeMode, RunScript, ScriptLimits, ScriptOptions, ScriptPool, ScriptSource};
use rho::turn::{EventBus, TurnAbort};
use rho::{
    Accounting, AnnotationGate, ApprovalRequest, Approver, Executor, QuarantineRule, SessionEntry,
    Source, Tool, ToolCall, ToolRegistry, TurnEvent, TurnRunner, Verdict,
};
use serde_json::json;

use crate::print::Printer;
use crate::{fail, tools};

/// How long the demo's person takes to approve a deploy.
const APPROVAL: Duration = Duration::from_millis(1000);
/// How long they take to read a tool the model wrote before it exists.
const CODE_REVIEW: Duration = Duration::from_millis(200);
/// How long they take to approve a note the model's program saves.
const NOTE_APPROVAL: Duration = Duration::from_millis(600);

/// A wait on the runtime's own timer.
pub(crate) type Wait =
    Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// What the session needs of the runtime it runs on.
pub(crate) trait Runtime: Sync {
    /// The bus the turns publish on.
    fn events(&self) -> &EventBus;

    /// Runs a turn of `calls` to its end, handing its abort handle to
    /// `started` first.
    fn run(&self, calls: Vec<ToolCall>, started: &mut dyn FnMut(TurnAbort)) -> Vec<SessionEntry>;
}

/// The demo's gate, the ready one of `rho-tool-core`, deciding by the tools'
/// annotations: nobody may delete directory trees; read-only tools run at
/// once; anything else is put to the approver, where a person approves
/// deploys (it takes them about a second) and reads the code of a tool the
/// model defines (a fifth of a second) before it exists, and the rest is
/// allowed. An
/// agent-written tool that claims to be read-only is still put to the
/// approver: its claim is code the host did not write. A program the model
/// writes for `run_script` is read like a tool's code, and a note it saves
/// is approved (in a bit over half a second) while the program waits,
/// without running its clock.
pub(crate) fn gate() -> AnnotationGate {
    AnnotationGate::new().rule(
        Rule::deny(Match::tool("rm_rf"))
            .because("deleting directory trees needs a person at the keyboard"),
    )
}

/// The demo's approver: the person the gate's questions go to.
pub(crate) fn approver(wait: Wait) -> Arc<dyn Approver> {
    Arc::new(move |request: ApprovalRequest| {
        let wait = wait.clone();
        async move {
            match request.tool.as_str() {
                "deploy" => wait(APPROVAL).await,
                "define_tool" | "run_script" => wait(CODE_REVIEW).await,
                "save_note" => wait(NOTE_APPROVAL).await,
                _ => {}
            }
            Verdict::Allow
        }
    })
}

/// How long a script the model writes may run, and how much memory it may
/// take: small, so the demo shows both ends quickly.
const SCRIPT_TIMEOUT: Duration = Duration::from_millis(500);
const SCRIPT_MEMORY: usize = 16 << 20;

/// The tools, from three sources: the host's own (with `define_tool`), the
/// tools the agent wrote itself in Rust, and the JavaScript tools the model
/// defines during the session. The agent's sources quarantine a tool after
/// two crashes or timeouts.
pub(crate) fn registry() -> (ToolRegistry, Arc<Accounting>, ScriptPool) {
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
    let pool = ScriptPool::new(2)
        .unwrap_or_else(|error| fail(&format!("cannot start the script threads: {error}")));
    let scripts = ScriptSource::builder("agent-js", &pool)
        .with_policy(accounting.clone())
        .with_options(
            ScriptOptions::new()
                .with_timeout(SCRIPT_TIMEOUT)
                .with_limits(ScriptLimits::default().with_memory(SCRIPT_MEMORY)),
        )
        .register(&registry)
        .unwrap_or_else(|error| fail(&format!("cannot start the script tools: {error}")));
    let builtin: [Arc<dyn Tool>; 9] = [
        Arc::new(scripts.define_tool()),
        Arc::new(shell()),
        Arc::new(tools::Deploy),
        Arc::new(tools::ReadFile),
        Arc::new(tools::SlowBuild),
        Arc::new(tools::Screenshot),
        Arc::new(tools::Grep),
        Arc::new(tools::RemoveAll),
        Arc::new(tools::SaveNote),
    ];
    let agent: [Arc<dyn Tool>; 2] = [Arc::new(tools::Flaky), Arc::new(tools::AgentScript)];
    let added = registry
        .add_source(Source::trusted("builtin"))
        .and_then(|source| source.add_all(builtin))
        .and_then(|()| {
            registry.add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        })
        .and_then(|source| source.add_all(agent));
    if let Err(error) = added {
        fail(&format!("cannot register the demo's tools: {error}"));
    }
    (registry, accounting, pool)
}

/// The model's shell: `bash -c` in a workspace of its own, confined by the
/// kernel (the workspace and a scratch `/tmp` writable, the system's
/// programs readable, nothing else there, no network). This program is its
/// own confinement launcher (`serve_if_launcher` in `main`).
fn shell() -> ShellTool {
    let workspace = workspace();
    let made = std::fs::create_dir_all(&workspace).and_then(|()| {
        std::fs::write(
            workspace.join("notes.md"),
            "# notes\n- ship the confinement\n",
        )
    });
    if let Err(error) = made {
        fail(&format!("cannot make the shell's workspace: {error}"));
    }
    ShellTool::new(workspace).with_timeout(Duration::from_secs(5))
}

/// The shell's workspace, removed when the session ends.
fn workspace() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rho-demo-workspace-{}", std::process::id()))
}

/// Adds `run_script` to the host's tools: the model's program, in the call,
/// may call the project's file tools, the imported docs and `save_note`,
/// each call a rho call of its own (code mode).
pub(crate) fn add_run_script<E: Executor>(turns: &TurnRunner<E>, pool: &ScriptPool) {
    let code = CodeMode::new(turns)
        .allow_tool("read_file")
        .allow_tool("grep")
        .allow_tool("save_note")
        .allow_source("docs");
    let run_script = RunScript::new(pool).with_options(
        ScriptOptions::new()
            .with_timeout(SCRIPT_TIMEOUT)
            .with_limits(ScriptLimits::default().with_memory(SCRIPT_MEMORY))
            .with_code_mode(code),
    );
    let added = turns
        .registry()
        .add_source(Source::trusted("code"))
        .and_then(|source| source.add(run_script));
    if let Err(error) = added {
        fail(&format!("cannot register run_script: {error}"));
    }
}

/// The program the model writes in turn 9: it reads three files, greps
/// them, looks the words up in the docs, saves a note (which a person
/// approves while the program waits) and answers one line.
const SUMMARY_PROGRAM: &str = r#"async function run({ paths }) {
  const files = await Promise.all(paths.map((path) => tools.read_file({ path })));
  const todos = await tools.grep({ pattern: "TODO" });
  const docs = await tools.search_docs({ query: "timeout" });
  const lines = files.map((text) => Number(text.split(" ")[1])).reduce((a, b) => a + b, 0);
  const note = `${paths.length} files, ${lines} lines, ${todos.matches.length} TODOs; docs: ${docs.split(":")[0]}`;
  await tools.save_note({ text: note });
  return note;
}"#;

fn call(id: &str, tool: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall::new(id, tool, arguments)
}

/// A call of `define_tool`: the model writes a JavaScript tool.
fn define(
    id: &str,
    name: &str,
    what: &str,
    parameters: serde_json::Value,
    source: &str,
) -> ToolCall {
    call(
        id,
        "define_tool",
        json!({ "name": name, "description": what, "parameters": parameters, "source": source }),
    )
}

/// The whole scripted session on `runtime`.
pub(crate) fn run_session(runtime: &dyn Runtime, accounting: &Accounting, printer: &mut Printer) {
    // The screen: a subscriber on a thread of its own hands every event to
    // the printer as it happens.
    let (sender, events) = mpsc::channel();
    let subscribed = runtime.events().subscribe(move |event: &TurnEvent| {
        let _ = sender.send(event.clone());
    });
    if let Err(error) = subscribed {
        fail(&format!("cannot subscribe the screen: {error}"));
    }
    let play =
        |printer: &mut Printer, title: &str, calls: Vec<ToolCall>, esc_after: Option<Duration>| {
            printer.heading(title);
            let total = calls.len();
            let entries = std::thread::scope(|scope| {
                let (aborts, abort) = mpsc::channel();
                let running = scope.spawn(move || {
                    runtime.run(calls, &mut |handle| {
                        let _ = aborts.send(handle);
                    })
                });
                if let (Some(after), Ok(abort)) = (esc_after, abort.recv()) {
                    scope.spawn(move || {
                        std::thread::sleep(after);
                        abort.abort();
                    });
                }
                let mut ended = 0;
                while ended < total {
                    let Ok(event) = events.recv() else { break };
                    // Calls a program made end before it does: only the
                    // model's own calls count here.
                    ended += usize::from(
                        matches!(event, TurnEvent::ToolExecutionEnd(_))
                            && event.parent_call_id().is_none(),
                    );
                    printer.print(&event);
                }
                running
                    .join()
                    .unwrap_or_else(|_| fail("the turn's thread panicked"))
            });
            printer.summary(&entries);
            entries
        };

    play(
        printer,
        "turn 1: the model calls eight tools at once",
        vec![
            call("call-1", "deploy", json!({ "env": "staging" })),
            call("call-2", "read_file", json!({ "path": "src/main.rs" })),
            call("call-3", "cargo_build", json!({})),
            call("call-4", "flaky_lint", json!({ "path": "src/lib.rs" })),
            call("call-5", "screenshot", json!({})),
            call("call-6", "grep", json!({ "pattern": "TODO" })),
            call("call-7", "count_todos", json!({})),
            call("call-8", "rm_rf", json!({ "path": "/" })),
        ],
        None,
    );
    play(
        printer,
        "turn 2: the model retries the lint, misspells a tool, and sends a malformed call",
        vec![
            call("call-9", "flaky_lint", json!({ "path": "src/main.rs" })),
            call("call-10", "grpe", json!({ "pattern": "FIXME" })),
            call("call-11", "read_file", json!({ "path": 7, "mode": "r" })),
        ],
        None,
    );
    play(
        printer,
        "turn 3: the model tries the quarantined lint once more",
        vec![call(
            "call-12",
            "flaky_lint",
            json!({ "path": "src/print.rs" }),
        )],
        None,
    );
    play(
        printer,
        "turn 4: a deploy and a build; a person presses Esc after 300 ms",
        vec![
            call("call-13", "deploy", json!({ "env": "production" })),
            call("call-14", "cargo_build", json!({ "release": true })),
        ],
        Some(Duration::from_millis(300)),
    );
    play(
        printer,
        "turn 5: the model writes five JavaScript tools (one with a syntax error)",
        vec![
            define(
                "call-15",
                "word_count",
                "Counts the words of `text`.",
                json!({ "type": "object", "properties": { "text": { "type": "string" } },
                        "required": ["text"] }),
                "function run({ text }) { return { words: text.split(/\\s+/).filter(Boolean).length }; }",
            ),
            define(
                "call-16",
                "spin",
                "Waits for a condition that never comes.",
                json!({ "type": "object" }),
                "function run() { while (true) {} }",
            ),
            define(
                "call-17",
                "hog",
                "Caches everything.",
                json!({ "type": "object" }),
                "function run() { const cache = []; for (;;) cache.push('x'.repeat(1 << 20)); }",
            ),
            define(
                "call-18",
                "parse_config",
                "Parses the config.",
                json!({ "type": "object" }),
                "function run() { return JSON.parse('{ oops'); }",
            ),
            define(
                "call-19",
                "broken",
                "Never compiles.",
                json!({ "type": "object" }),
                "function run() {\n  return [1, 2;\n}",
            ),
        ],
        None,
    );
    play(
        printer,
        "turn 6: the model calls its JavaScript tools at once",
        vec![
            call(
                "call-20",
                "word_count",
                json!({ "text": "the quick brown fox" }),
            ),
            call("call-21", "spin", json!({})),
            call("call-22", "hog", json!({})),
            call("call-23", "parse_config", json!({})),
        ],
        None,
    );
    play(
        printer,
        "turn 7: the model retries parse_config, whose second crash quarantines it",
        vec![call("call-24", "parse_config", json!({}))],
        None,
    );
    play(
        printer,
        "turn 8: the quarantined script is refused, the others still run",
        vec![
            call("call-25", "parse_config", json!({})),
            call("call-26", "word_count", json!({ "text": "one two" })),
        ],
        None,
    );
    let entries = play(
        printer,
        "turn 9: the model writes one program that reads, greps, looks up the docs and saves a note",
        vec![call(
            "call-27",
            "run_script",
            json!({ "source": SUMMARY_PROGRAM,
                    "args": { "paths": ["src/main.rs", "src/lib.rs", "src/print.rs"] } }),
        )],
        None,
    );
    if let Some(entry) = entries.first() {
        printer.code_mode_reading(entry);
    }
    play(
        printer,
        "turn 10: tools imported over MCP: one answers, one hangs and is cut at rho's deadline",
        vec![
            call("call-28", "search_docs", json!({ "query": "quarantine" })),
            call("call-29", "fetch_page", json!({ "page": "Home" })),
        ],
        None,
    );
    // The user's home, as the model would name it.
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
    play(
        printer,
        "turn 11: the model's shell, confined: a secret and the network are denied, the rest goes on",
        vec![
            call(
                "call-30",
                "shell",
                json!({ "command": format!("cat {home}/.ssh/id_ed25519 /etc/shadow") }),
            ),
            call(
                "call-31",
                "shell",
                json!({ "command": "exec 3<>/dev/tcp/1.1.1.1/443 && echo connected" }),
            ),
            call(
                "call-32",
                "shell",
                json!({ "command": "wc -l notes.md && echo done >> notes.md" }),
            ),
        ],
        None,
    );
    play(
        printer,
        "turn 12: the model reads, edits a file, runs the tests and reads again, in one message",
        vec![
            call("call-33", "read_file", json!({ "path": "src/lib.rs" })),
            // The edit takes a while; the tests must see it, so they wait
            // for it (the shell is exclusive), and the reads around them
            // keep the model's order too.
            call(
                "call-34",
                "shell",
                json!({ "command": "sleep 0.3 && sed -i 's/ship the/shipped the/' notes.md" }),
            ),
            call(
                "call-35",
                "shell",
                json!({ "command": "grep -q 'shipped the' notes.md && echo 'test notes::shipped ... ok'" }),
            ),
            call("call-36", "read_file", json!({ "path": "src/main.rs" })),
        ],
        None,
    );
    let _ = std::fs::remove_dir_all(workspace());
    printer.health(&accounting.health_table().to_string());
}
