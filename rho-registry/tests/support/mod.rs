//! Tools, gates and helpers shared by the registry's test files.
//!
//! Every test binary includes this module with `mod support;` and uses only
//! part of it.

// Each test binary includes this module and uses only part of it.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_registry::ToolRegistry;
use rho_tool_core::untrusted::{install_quiet_panic_hook, restore_panic_hook};
use rho_tool_core::{
    CallEnd, Gate, Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput, Verdict, async_trait,
};

/// What a call of a [`Scripted`] tool is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Class {
    /// Answer successfully.
    Ok,
    /// Answer with an error.
    Error,
    /// Panic.
    Panic,
    /// Never answer: the call times out.
    Hang,
    /// Never answer: the host aborts the call.
    Abort,
    /// Be denied by [`DenyMarked`].
    Deny,
}

impl Class {
    pub(crate) const ALL: [Class; 6] = [
        Class::Ok,
        Class::Error,
        Class::Panic,
        Class::Hang,
        Class::Abort,
        Class::Deny,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Class::Ok => "ok",
            Class::Error => "error",
            Class::Panic => "panic",
            Class::Hang => "hang",
            Class::Abort => "abort",
            Class::Deny => "deny",
        }
    }

    /// How a call of this class ends.
    pub(crate) fn outcome(self) -> Outcome {
        match self {
            Class::Ok => Outcome::Succeeded,
            Class::Error => Outcome::Failed,
            Class::Panic => Outcome::Crashed,
            Class::Hang => Outcome::TimedOut,
            Class::Abort => Outcome::Aborted,
            Class::Deny => Outcome::Denied,
        }
    }

    /// A call of `tool` of this class.
    pub(crate) fn call(self, id: impl Into<String>, tool: &str) -> ToolCall {
        ToolCall::new(id, tool, serde_json::json!({ "do": self.as_str() }))
    }
}

/// A tool that does what each call's `{"do": ...}` says (see [`Class`]).
pub(crate) struct Scripted {
    pub(crate) name: String,
    pub(crate) timeout: Duration,
}

/// A scripted tool with the default timeout.
pub(crate) fn scripted(name: &str) -> Arc<dyn Tool> {
    scripted_with_timeout(name, <dyn Tool>::DEFAULT_TIMEOUT)
}

/// A scripted tool with `timeout`.
pub(crate) fn scripted_with_timeout(name: &str, timeout: Duration) -> Arc<dyn Tool> {
    Arc::new(Scripted {
        name: name.to_owned(),
        timeout,
    })
}

#[async_trait]
impl Tool for Scripted {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Does what `do` says."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": { "do": { "type": "string" } },
        })
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        match arguments["do"].as_str().unwrap_or("ok") {
            "ok" => ToolOutput::text(format!("{} ok", self.name)),
            "error" => ToolOutput::error(format!("{} failed on purpose", self.name)),
            "panic" => panic!("{} panicked on purpose", self.name),
            "hang" | "abort" => {
                // The executor's own timer, so the tool runs on any runtime.
                context.sleep(Duration::from_secs(3600)).await;
                ToolOutput::text("woke up after an hour")
            }
            other => ToolOutput::error(format!("ran a call that should not run: {other}")),
        }
    }
}

/// Denies the calls whose arguments say `{"do": "deny"}`.
#[derive(Debug)]
pub(crate) struct DenyMarked;

#[async_trait]
impl Gate for DenyMarked {
    async fn check(&self, call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        if call.arguments["do"] == "deny" {
            Verdict::deny("the arguments asked for a denial")
        } else {
            Verdict::Allow
        }
    }
}

/// The runner of the test's runtime, with the [`DenyMarked`] gate and no
/// watch of its own: the registry tells each source of its tools' calls.
pub(crate) fn runner() -> Runner<TokioExecutor> {
    let executor = TokioExecutor::current().expect("the test runs in a tokio runtime with a timer");
    Runner::new(executor).with_gate(Arc::new(DenyMarked))
}

/// Starts `call` through `registry` (aborting it at once for
/// [`Class::Abort`]) and awaits it on a task of its own.
pub(crate) fn launch(
    registry: &ToolRegistry,
    runner: &Runner<TokioExecutor>,
    class: Class,
    call: ToolCall,
) -> tokio::task::JoinHandle<CallEnd> {
    let start = registry.start_for(&call.name);
    let handle = runner.start(call, start);
    if class == Class::Abort {
        handle.abort();
    }
    tokio::spawn(handle)
}

/// Runs one call of `class` to its end.
pub(crate) async fn run(
    registry: &ToolRegistry,
    runner: &Runner<TokioExecutor>,
    class: Class,
    tool: &str,
) -> CallEnd {
    launch(registry, runner, class, class.call("call", tool))
        .await
        .expect("the task awaiting the call does not panic")
}

static QUIET: Mutex<usize> = Mutex::new(0);

/// Keeps contained panics (the test's tools panic on purpose) off stderr
/// while alive; the hook that was there before comes back when the last
/// guard of the binary is dropped. Panics outside containment (a failing
/// assertion) still print.
pub(crate) struct QuietPanics(());

impl QuietPanics {
    pub(crate) fn new() -> Self {
        let mut users = QUIET.lock().unwrap_or_else(PoisonError::into_inner);
        if *users == 0 {
            install_quiet_panic_hook();
        }
        *users += 1;
        Self(())
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        let mut users = QUIET.lock().unwrap_or_else(PoisonError::into_inner);
        *users -= 1;
        if *users == 0 && !std::thread::panicking() {
            restore_panic_hook();
        }
    }
}
