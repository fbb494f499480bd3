//! Tools the model writes in JavaScript, each call run in a fresh QuickJS
//! sandbox that is stopped for real at its deadline.
//!
//! An agent that writes its own tools runs code nobody reviewed inside the
//! host's process. rho-script gives such code the whole of rho's contract:
//! a [`ScriptTool`] is an untrusted [`Tool`](rho_tool_core::Tool) whose
//! every call evaluates its JavaScript source in a new QuickJS runtime, on a
//! thread rho-script owns, with a memory cap, a stack limit and an interrupt
//! that ends the script when rho ends the call; the answer is made plain
//! data on that thread, before it leaves the sandbox.
//!
//! # The shape of a script
//!
//! A source is a classic script (strict mode; no modules, no `import`) that
//! defines a function `run`; a call evaluates the source, then returns
//! what `run(args)` returns, `args` being the call's JSON arguments:
//!
//! ```js
//! function run({ a, b }) {
//!   return { sum: a + b };
//! }
//! ```
//!
//! `run` may be declared any way that makes a global binding
//! (`function run`, `const run = (args) => ...`, `async function run`).
//! Why a named function rather than the script's completion value: the
//! completion value depends on the last statement in ways that surprise
//! (a trailing declaration gives `undefined`), while "defines `run`" is one
//! rule a model follows reliably and can be checked by name, and helpers
//! and constants can sit beside it. Not a module: QuickJS evaluates modules
//! asynchronously and they bring a loader, which the sandbox does not have.
//!
//! # What the answer becomes
//!
//! | `run` returns | the result |
//! |---|---|
//! | a string | that text |
//! | an object or an array | its plain form as details, and as compact JSON the text |
//! | a function | its source text |
//! | a BigInt | its decimal digits |
//! | `NaN`, `Infinity`, `-Infinity` | that text |
//! | `undefined`, `null` | `null` |
//! | another number, a boolean | its JSON |
//! | a promise (or a thenable) | what it settles to, as above |
//! | `rho.answer(...)`, `rho.error(...)` | the answer it built (see below) |
//!
//! Inside objects and arrays the same holds (functions, BigInts and the
//! non-finite numbers become text, `undefined` becomes null, a `toJSON`
//! method is applied, a `Date` is its ISO text). The walk is rho-script's
//! own, with an explicit stack, bounded by [`ScriptLimits::answer`] (depth,
//! number of values, size, one string); getters, `toJSON` and proxy traps
//! it runs are script code and run under the same interrupt and caps. A
//! value that is its own ancestor is refused with the path where the cycle
//! closes.
//!
//! # What a script is granted
//!
//! One global, `rho`, and nothing else of the host's but the functions
//! the host grants by name (below):
//!
//! | `rho.` | what it does |
//! |---|---|
//! | `update(value)` | reports a partial result: the loop gets it as a [`CallEvent::Update`](rho_tool_core::CallEvent::Update), in order, before the call's end |
//! | `sleep(ms)` | a promise that resolves after `ms` milliseconds, on the timer of the executor the call runs on |
//! | `answer({ text, images, details })`, `answer({ error, details })` | builds an answer to return (below) |
//! | `error(text)` | the same as `answer({ error: text })` |
//!
//! **`update`** makes the value plain on the script's thread, with the
//! same walk and limits as an answer (a value that cannot be made plain
//! throws a `TypeError` in the script, and nothing is reported), and hands
//! it to the call's future, which passes it to
//! [`ToolContext::update`](rho_tool_core::ToolContext::update) while it
//! waits for the answer. At most 64 partial results wait between the two:
//! past that **the oldest is dropped** for the newest (`update` neither
//! blocks nor fails), and the loop's side keeps the newest 256, so a
//! script that floods updates costs bounded memory and its last update
//! arrives.
//!
//! **`sleep`** is a timer of the script's own event loop: when the script
//! has nothing left to run but pending sleeps, its thread asks the call's
//! future to sleep until the first is due, on
//! [`ToolContext::sleep`](rho_tool_core::ToolContext::sleep) (tokio's
//! timer on tokio, smol's on smol), and resolves it when that ends. Sleeps
//! resolve in the order they are due, so `Promise.all` of two 50 ms sleeps
//! takes 50 ms. While it waits, the thread still stops at once when the
//! call ends: a sleep past the call's timeout ends `TimedOut`, like any
//! script that runs too long, and frees the thread. At most 10,000 sleeps
//! may be pending at once (past that `sleep` rejects with a `RangeError`).
//!
//! `rho` is an ordinary, frozen global: a script may shadow or replace it
//! for itself. What rho-script needs of it and of the built-ins (the
//! answers' registry, the sleeps' resolvers, `Promise.resolve`, `Error`,
//! what reads an image's bytes) was kept before the script ran, so a
//! script that changes the built-ins cannot forge an answer, wake a sleep
//! early or change the bytes of an image.
//!
//! **Host functions granted by name.** Beyond those four a script has
//! what the host grants it, tool by tool: a [`Grant`] is a host function
//! under a name, given in a tool's [`ScriptOptions`]
//! ([`ScriptOptions::with_grant`]) or in a source's, for every tool of it;
//! the script
//! calls it as `await rho.<name>(argument)`.
//!
//! ```js
//! async function run({ path }) {
//!   const page = await rho.read_page({ path }); // granted by the host
//!   return { words: page.text.split(/\s+/).length };
//! }
//! ```
//!
//! - The argument is made plain data in the sandbox (the same walk and
//!   limits as an answer; one that cannot be made plain rejects with a
//!   `TypeError`) and reaches the host as JSON.
//! - The host function runs as the host's code: in the call's future, on
//!   the call's executor, with the call's
//!   [`ToolContext`](rho_tool_core::ToolContext); never on the script's
//!   thread. Several run side by side when the script awaits them
//!   together; at most 64 may be pending at once (past that the call
//!   rejects with a `RangeError`).
//! - Its `Ok` value is what the promise resolves to, parsed inside the
//!   sandbox under the call's memory cap; its `Err` text is the message
//!   of the `Error` the promise rejects with, which the script may catch.
//! - Host calls still pending when the call ends (its answer, its
//!   timeout, a host abort) are dropped with the call's future.
//! - Only what was granted is there: `rho` of a tool without grants has
//!   the four functions above and nothing else.

//! # Answers a script builds
//!
//! Returning `rho.answer(...)` (or a promise of it) gives the answer all of
//! rho's forms; the value `rho.answer` returns is a token that only
//! rho-script recognises, so an ordinary object with keys named `text` or
//! `images` is still details like any other object.
//!
//! ```js
//! async function run({ page }) {
//!   if (!page) return rho.error("`page` is required: give a page number");
//!   rho.update({ rendering: page });
//!   await rho.sleep(10);
//!   return rho.answer({
//!     text: `page ${page}`,
//!     images: [{ mimeType: "image/png", data: "iVBORw0KGgo..." }],
//!     details: { page },
//!   });
//! }
//! ```
//!
//! | key | what it is |
//! |---|---|
//! | `text` | a string, the text the model reads (default: empty) |
//! | `images` | an array of `{ mimeType, data }`: `mimeType` a string such as `"image/png"`; `data` base64 text (standard or URL-safe, padding optional), a `Uint8Array` (any typed array or `DataView`: its bytes), an `ArrayBuffer` or an array of byte values |
//! | `details` | any value, made plain as an answer's details |
//! | `error` | a string: the call ends [`Failed`](rho_tool_core::Outcome::Failed) with it as the text (only `details` may go with it) |
//!
//! The answer is read when the call ends (getters run then, under the same
//! deadline and limits). Images go through
//! [`ToolOutput::images`](rho_tool_core::ToolOutput::images): rho checks
//! each (an `image/*` mime type, some bytes) and ends the call `Failed`
//! with its own text naming the image otherwise. Their size is bounded by
//! the call's memory cap, in which the script made them. Another key, a
//! field of the wrong type or data that is not base64 ends the call
//! `Failed`, saying what was wrong.
//!
//! An error answer is the way to say "the input was wrong": it is no
//! crash, so it is no strike against the tool in a registry's accounting.
//!
//! # How a call ends
//!
//! | the script | the call |
//! |---|---|
//! | answers | [`Outcome::Succeeded`](rho_tool_core::Outcome::Succeeded) |
//! | answers `rho.error(text)` or `rho.answer({ error })` | `Failed`, with that text; no strike |
//! | throws (or rejects with) `rho.error(text)` or another built answer | that answer, as if returned: a way to stop early, no crash |
//! | builds an answer of the wrong shape, or an invalid image | `Failed`, saying what is wrong |
//! | runs (or sleeps) past the tool's timeout (`while (true) {}`) | `TimedOut`: rho drops the call's future, which sets the call's stop flag; the engine's interrupt sees it (a script waiting for a sleep is woken by it) and the thread is free for the next call (one stuck in a native operation is replaced: see below) |
//! | is aborted by the host | `Aborted`, stopped the same way |
//! | allocates past its memory cap (default 64 MiB) | `Crashed`, "exceeded its memory limit of 64 MiB" (when the engine had no memory left even to make that error it throws `null`, and the text says so) |
//! | recurses past the stack limit | `Crashed`, "exceeded its stack limit" |
//! | throws an `Error` | `Crashed`, with the error's name, message and stack |
//! | throws another value | `Crashed`, with the value's plain form |
//! | returns a promise that rejects | `Crashed`, with the reason, as for a throw |
//! | returns a promise that never settles | `Crashed`, saying so |
//! | fails to load (a syntax error), defines no `run` | `Crashed`, with the engine's message and line (a [`ScriptSource`] refuses such a script when it is defined) |
//! | answers a value that cannot be made plain (a cycle, past a limit) | `Failed`, naming why and where |
//!
//! A crash counts against the tool in a registry's accounting, like a
//! timeout. Every text is made on the script's thread, from plain data.
//!
//! # Guarantees and limits of the sandbox
//!
//! - **Fresh every call.** A new QuickJS runtime and context per call;
//!   nothing (globals, changed prototypes) is carried to the next call. A
//!   script thread with nothing to do makes the next call's runtime and
//!   context ahead of time (no job has touched them; the call gets its
//!   limits and interrupt when it takes them), so a call that comes to an
//!   idle pool does not wait for them; each thread holds one such spare.
//! - **No ambient authority.** The context has the language's built-ins
//!   and the `rho` grants only (no `std`/`os` modules, no loader, no file,
//!   network, process or environment access). The clock (`Date`,
//!   `performance.now`) and `Math.random` are there.
//! - **Stopped for real.** The engine calls rho-script's interrupt check
//!   every few thousand operations (and on function calls, loop back-edges
//!   and inside the regular expression engine); it stops the script when
//!   the call's future was dropped or, as a backstop when nothing drops it,
//!   250 ms past the tool's timeout. A script cannot catch it.
//! - **Not stopped mid-operation, and no capacity lost to it.** One native
//!   operation (a huge `Array.prototype.join` or `fill`, `'x'.repeat(n)`, a
//!   `JSON.parse`) runs to its end before the next check, for seconds at
//!   worst; the memory cap bounds how big it can be. The call still ends at
//!   its deadline, and its thread costs the pool nothing past it: 20 ms past
//!   the stop the pool gives up on a thread that has not come back, answers
//!   the call as stopped at its deadline, and starts a fresh thread in its
//!   place; the stuck thread ends itself when the operation returns. At
//!   most [`PoolOptions::max_abandoned`] given-up threads (default: the
//!   pool's size) run beside the pool's own, each holding its runtime
//!   (under the call's memory cap); past that a stuck thread keeps its
//!   place and calls wait for it in the queue, so the threads never number
//!   more than `threads + max_abandoned`. In worker mode the stuck worker is killed at that point
//!   instead, and the next call starts a fresh one. [`ScriptPool::state`]
//!   tells a host how often either happened.
//! - **Own threads.** Scripts run on a [`ScriptPool`]'s std threads (a fixed
//!   number for new calls, beside the stuck ones above while they last,
//!   with a bounded queue; a call past the queue ends at once with an
//!   error), never on the executor's workers, so a script never holds up
//!   other tasks, on tokio, smol or any other executor.
//! - **In-process, unless asked otherwise.** QuickJS is C: an engine bug
//!   can still abort the process, which no in-process guard can catch. A
//!   pool made with [`Isolation::WorkerProcesses`] runs the same scripts
//!   in worker processes instead, with the same results, so that such a
//!   bug ends only the call (as a crash) and its worker (see [`worker`]).
//!
//! # Tools defined at run time
//!
//! A [`ScriptSource`] is an untrusted registry source of script tools.
//! A tool is a [`ScriptDefinition`]:
//!
//! | field | what it is |
//! |---|---|
//! | `name` | 1 to 64 ASCII letters, digits, `_` or `-`; not another source's |
//! | `description` | what the tool does, for the model |
//! | `parameters` | the JSON Schema of the arguments, `"type": "object"` |
//! | `source` | a script that defines `run`, as above |
//! | `timeout` | optional; the source's timeout otherwise |
//!
//! [`ScriptSource::define`] checks it **at definition time**, and
//! registers nothing unless every check passes: the name; the size of the
//! source (at most [`ScriptTool::DEFAULT_MAX_SOURCE`] bytes unless the host sets
//! another cap, checked before anything parses it); room for a new name
//! (a source holds at most [`ScriptSource::DEFAULT_MAX_TOOLS`] tools; redefining a held
//! one needs none); the schema
//! (valid by its meta-schema, compiled, of an object); the script, in a
//! fresh sandbox with the call's caps and interrupt, where it is parsed (a
//! syntax error is refused with its line and column) and its top level
//! runs under a short deadline ([`ScriptSource::DEFAULT_CHECK_TIMEOUT`]), after which
//! `typeof run` must be `"function"` (`run` is not called); last, the
//! registry refuses a name another source holds. Each refusal is a
//! [`DefineError`] whose text is written for the model. **At call time**
//! nothing is reused: each call loads the script in a fresh sandbox again.
//!
//! [`DefineTool`] is the ready `define_tool` by which the model defines or
//! redefines a tool during a turn. It is a call like any other, so the
//! host's gate sees the whole source before the tool exists; its
//! annotations say it is not read-only, so an
//! [`AnnotationGate`](rho_tool_core::AnnotationGate) asks a person by
//! default. A refused definition is an error result for the model, never
//! a crash.
//!
//! # Accounting
//!
//! Crashes and timeouts of a source's tools count against the tool in the
//! source's policy, like those of any untrusted source; give the source an
//! [`Accounting`](rho_registry::Accounting) and it quarantines a tool
//! that keeps failing. The record is kept by tool name, so **redefining a
//! quarantined tool does not lift its quarantine**: the new code is
//! accepted, and the model is told the tool stays disabled until the host
//! re-enables it ([`Accounting::reenable`](rho_registry::Accounting::reenable));
//! then the new code runs. Accepting rather than refusing keeps the fix
//! under the name the host is looking at, instead of pushing the model to
//! the same code under a fresh name. (A fresh name does start with a clean
//! record: the source's cap on its number of tools bounds how often that
//! can happen, and a host that must stop it asks a person about each
//! definition through the gate.)
//!
//! # Code mode: a script that calls tools
//!
//! A model does better, and reads far less, when it writes one short
//! program that calls several tools and keeps the intermediate results to
//! itself. Give a script tool a [`CodeMode`] (made from the host's
//! [`TurnRunner`](rho_turn::TurnRunner), allowing tools by source or by
//! name) and the script finds them as the global `tools`:
//!
//! ```js
//! async function run({ paths, word }) {
//!   const texts = await Promise.all(paths.map((path) => tools.read_file({ path })));
//!   const hits = [];
//!   for (const text of texts) hits.push((await tools.grep({ text, word })).matches);
//!   return { files: paths.length, hits };
//! }
//! ```
//!
//! Each call is a full rho call, not a function call: its arguments are
//! checked against the tool's schema, the host's gate decides (a person
//! may be asked, and that wait does not run the script's clock; see
//! [`ToolContext::pause_clock`](rho_tool_core::ToolContext::pause_clock)),
//! it has its own timeout from approval and is killed at its deadline, its
//! crash counts against the tool it called (not the script), subscribers
//! see it as a call of its own whose `parent_call_id` is the script's, and
//! the session keeps it inside the script's entry
//! ([`SessionEntry::nested`](rho_turn::SessionEntry::nested)). A failure
//! of any kind is a thrown `Error` with the text the model would have
//! read; [`CodeLimits`] bound a run's calls, its calls in flight and the
//! bytes passed back. When the script's call ends, its calls still in
//! flight are aborted. [`CodeMode::declarations`] renders the allowed tools
//! as TypeScript for the model's prompt. [`RunScript`] is the ready
//! `run_script` tool, code mode's usual shape: the model writes the
//! program in the call itself and reads only its answer. It works the same in both
//! isolation modes: the tools always run in the host, the script only
//! hands them plain data.
//!
//! # Threads or worker processes
//!
//! | [`Isolation`] | where scripts run | an engine bug (abort, segfault) |
//! |---|---|---|
//! | `Threads` (default) | on the pool's own threads, in the host's process | ends the host |
//! | `WorkerProcesses(command)` | in one worker process per pool thread, each its own process group | ends the call, `Crashed` with the signal and the end of the worker's stderr; the next call gets a fresh worker |
//!
//! Everything else is the same in both: the sandbox, the caps, the
//! interrupt, the answers and their texts, partial results, sleeps on the
//! call's executor and host functions (which always run in the host's
//! process, in the call's future). The crate's tests run every behaviour
//! in both modes. See [`worker`] for the worker program and its life.
//!
//! The worker program is the host's own executable, when its `main` calls
//! [`worker::serve_if_worker`] first thing ([`WorkerCommand::embedded`]),
//! or the `rho-script-worker` this crate ships, installed next to the host
//! or on `PATH` ([`WorkerCommand::installed`]); [`WorkerCommand::find`]
//! takes whichever is there, and its error names both when neither is.
//!
//! # How the crate is layered
//!
//! Four concepts, each a module, each importing only the ones below it:
//!
//! 1. **the sandbox** (`sandbox`): the engine, the plain-data walk, the
//!    pool's threads and watchdog, the worker processes ([`worker`]) and
//!    the limits ([`ScriptPool`], [`PoolOptions`], [`ScriptLimits`]). It
//!    runs a job (a source, how to call it, its limits and deadline, the
//!    names of the host calls it may make) and hands each host call to
//!    whatever the layer above gave it with the job; it imports nothing
//!    of the layers above.
//! 2. **code mode** (`code`): [`CodeMode`], what `tools.<name>` stands
//!    for, each call a rho call through the host's turn runner.
//! 3. **script tools** (`tool`): [`ScriptTool`], [`RunScript`] and the
//!    [`Grant`]s of host functions; a script tool's calls of the host run
//!    its grants and, given a [`CodeMode`], its calls of tools.
//! 4. **the agent-tools source** (`source`): [`ScriptSource`] and
//!    [`DefineTool`], the tools the model defines at run time, each
//!    checked in the sandbox before it is registered.
//!
//! # Example
//!
//! One tool as a [`ScriptTool`], run directly:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use rho::script::{ScriptOptions, ScriptPool, ScriptTool};
//! use rho::{Executor, Outcome, Runner, ToolCall};
//!
//! async fn example<E: Executor>(runner: Runner<E>, pool: ScriptPool) {
//!     // The model wrote this tool.
//!     let add = ScriptTool::new(
//!         "add",
//!         "Adds `a` and `b`.",
//!         "function run({ a, b }) { return { sum: a + b }; }",
//!         &pool,
//!     );
//!     let call = ToolCall::new("call-1", "add", serde_json::json!({ "a": 2, "b": 3 }));
//!     let end = runner.start(call, Arc::new(add)).await;
//!     assert_eq!(end.outcome, Outcome::Succeeded);
//!     assert_eq!(end.result.text(), r#"{"sum":5}"#);
//!
//!     // And this one never ends: rho stops it at its timeout.
//!     let spin = ScriptTool::new("spin", "Spins.", "function run() { for (;;) {} }", &pool)
//!         .with_options(ScriptOptions::new().with_timeout(Duration::from_millis(100)));
//!     let call = ToolCall::new("call-2", "spin", serde_json::json!({}));
//!     let end = runner.start(call, Arc::new(spin)).await;
//!     assert_eq!(end.outcome, Outcome::TimedOut);
//! }
//!
//! // Any executor works; here smol, with two script threads.
//! let executors = rho::smol::SmolPool::new(1)?;
//! let pool = ScriptPool::new(2)?;
//! smol::block_on(example(Runner::new(executors.executor()), pool));
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Tools defined at run time through a [`ScriptSource`], with accounting,
//! and called through a turn:
//!
//! ```
//! use std::sync::Arc;
//! use rho::script::{DefineError, ScriptDefinition, ScriptPool, ScriptSource};
//! use rho::{Accounting, Outcome, QuarantineRule, Source, ToolCall, ToolRegistry, TurnRunner};
//! use serde_json::json;
//!
//! let registry = ToolRegistry::new();
//! let pool = ScriptPool::new(2)?;
//! let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
//! let scripts = ScriptSource::builder("agent", &pool)
//!     .with_policy(accounting.clone())
//!     .register(&registry)?;
//! // The model defines tools itself through `define_tool` (in a trusted
//! // source: it is the host's code).
//! registry.add_source(Source::trusted("host"))?.add(scripts.define_tool())?;
//!
//! let executors = rho::smol::SmolPool::new(1)?;
//! let turns = TurnRunner::new(executors.executor(), registry);
//!
//! smol::block_on(async {
//!     // The host (or the model, through `define_tool`) defines a tool...
//!     let add = ScriptDefinition::new(
//!         "add",
//!         "Adds `a` and `b`.",
//!         json!({
//!             "type": "object",
//!             "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
//!             "required": ["a", "b"]
//!         }),
//!         "function run({ a, b }) { return { sum: a + b }; }",
//!     );
//!     let defined = scripts.define(add).await?;
//!     assert_eq!(defined.to_string(), "defined tool `add`: it can be called now");
//!
//!     // ... and a broken one is refused, with where it is broken.
//!     let broken = ScriptDefinition::new("sub", "Subtracts.", json!({ "type": "object" }),
//!         "function run({ a, b }) {\n  return a - ;\n}");
//!     let error = scripts.define(broken).await.expect_err("a syntax error");
//!     assert!(matches!(error, DefineError::Syntax { line: 2, column: 14, .. }), "{error}");
//!
//!     // The model calls the tool in a turn; its arguments are checked
//!     // against its schema first.
//!     let entries = turns.turn([
//!         ToolCall::new("c1", "add", json!({ "a": 2, "b": 3 })),
//!         ToolCall::new("c2", "sub", json!({ "a": 2, "b": 3 })),
//!         ToolCall::new("c3", "define_tool", json!({
//!             "name": "mul",
//!             "description": "Multiplies `a` and `b`.",
//!             "parameters": { "type": "object" },
//!             "source": "const run = ({ a, b }) => a * b;",
//!         })),
//!     ]).await;
//!     assert_eq!(entries[0].text(), r#"{"sum":5}"#);
//!     assert!(entries[1].text().contains("no such tool `sub`"));
//!     assert_eq!(entries[2].outcome, Outcome::Succeeded, "{}", entries[2].text());
//!
//!     let entries = turns.turn([ToolCall::new("c4", "mul", json!({ "a": 6, "b": 7 }))]).await;
//!     assert_eq!(entries[0].text(), "42");
//!     Ok::<(), DefineError>(())
//! })?;
//! assert_eq!(accounting.tool_health("add").map(|health| health.succeeded), Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod code;
mod sandbox;
mod source;
mod tool;

#[cfg(unix)]
pub use sandbox::worker;

pub use code::{CodeLimits, CodeMode};
pub use sandbox::{Isolation, PoolOptions, PoolState, ScriptLimits, ScriptPool};
pub use source::{
    DefineError, DefineTool, Defined, ScriptDefinition, ScriptSource, ScriptSourceBuilder,
};
pub use tool::{Grant, GrantError, HostFunction, HostFuture, RunScript, ScriptOptions, ScriptTool};
#[cfg(unix)]
pub use worker::{WorkerCommand, WorkerNotFound};
