//! [`ScriptTool`]: a tool whose code is a JavaScript source.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::task::{Context, Poll};

use rho_tool_core::{Concurrency, Tool, ToolContext, ToolOutput, async_trait};

use crate::code::{CodeCalls, CodeMode};
use crate::sandbox::{
    Callee, Clock, HostAnswer, HostAsk, HostCalls, JobKind, JobSpec, Origin, ScriptPool,
};
use crate::tool::{GrantSet, HostFuture, ScriptOptions};

/// How long past the tool's timeout the sandbox stops a script on its own,
/// in case nothing drops the call's future (rho's runner drops it at the
/// timeout, which stops the script at once).
const OWN_DEADLINE_GRACE: Duration = Duration::from_millis(250);

/// A tool whose code is a JavaScript source, run in a fresh QuickJS sandbox
/// on a [`ScriptPool`]'s threads at every call.
///
/// The source is a classic script (strict mode, no modules, no imports)
/// that defines a function `run`; each call evaluates the source and
/// returns what `run(args)` returns. See the crate docs for the shape,
/// what the answer becomes and how the call is stopped.
///
/// The tool is untrusted ([`Tool::is_untrusted`] is `true`): its code was
/// not written by the host.
pub struct ScriptTool {
    description: String,
    parameters: serde_json::Value,
    source: Arc<str>,
    runs: Runs,
}

impl ScriptTool {
    /// A tool called `name` that runs `source` on `pool`'s threads, with
    /// arguments of any object, the default timeout (`<dyn Tool>::DEFAULT_TIMEOUT`)
    /// and the default limits.
    ///
    /// Nothing is checked here: a source that does not load or defines no
    /// `run` ends each call crashed, with the engine's message.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        source: impl Into<String>,
        pool: &ScriptPool,
    ) -> Self {
        Self {
            description: description.into(),
            parameters: serde_json::json!({ "type": "object" }),
            source: Arc::from(source.into()),
            runs: Runs::new(name.into(), pool),
        }
    }

    /// Sets the JSON Schema of the arguments.
    #[must_use]
    pub fn with_parameters(mut self, schema: serde_json::Value) -> Self {
        self.parameters = schema;
        self
    }

    /// Runs each call with `options`: its timeout, limits, grants and
    /// code mode (see [`ScriptOptions`]).
    #[must_use]
    pub fn with_options(mut self, options: ScriptOptions) -> Self {
        self.runs.options = options;
        self
    }

    /// The JavaScript source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// What each call runs with.
    pub fn options(&self) -> &ScriptOptions {
        &self.runs.options
    }
}

#[async_trait]
impl Tool for ScriptTool {
    fn name(&self) -> &str {
        &self.runs.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.parameters.clone()
    }

    fn timeout(&self) -> Duration {
        self.runs.options.timeout()
    }

    fn is_untrusted(&self) -> bool {
        true
    }

    fn concurrency(&self) -> Concurrency {
        self.runs.concurrency()
    }

    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        self.runs
            .run(
                Arc::clone(&self.source),
                Origin::Defined,
                arguments,
                context,
            )
            .await
    }
}

/// What a script call needs besides its source and arguments, the same
/// for a [`ScriptTool`] and a [`RunScript`](crate::RunScript).
#[derive(Clone)]
pub(crate) struct Runs {
    pub(crate) name: Arc<str>,
    pub(crate) options: ScriptOptions,
    pub(crate) pool: ScriptPool,
}

impl Runs {
    /// `name` on `pool`, with the default timeout and limits, no grants,
    /// no code mode.
    pub(crate) fn new(name: String, pool: &ScriptPool) -> Self {
        Self {
            name: Arc::from(name),
            options: ScriptOptions::new(),
            pool: pool.clone(),
        }
    }

    /// How calls of a script may overlap: a script that reaches nothing
    /// beyond its fresh sandbox cannot change what another call reads, so
    /// it runs side by side; one with a host function or code mode may
    /// write through them, so it keeps the model's order.
    pub(crate) fn concurrency(&self) -> Concurrency {
        if self.options.grants().is_empty() && self.options.code_mode().is_none() {
            Concurrency::Shared
        } else {
            Concurrency::Exclusive
        }
    }

    /// Runs `source` with `arguments` in a fresh sandbox on the pool.
    pub(crate) async fn run(
        &self,
        source: Arc<str>,
        origin: Origin,
        arguments: serde_json::Value,
        context: ToolContext,
    ) -> ToolOutput {
        let now = Instant::now();
        // In code mode a call of a tool may wait for a person, which
        // rho's clock does not count, up to the runner's most: so may the
        // sandbox's own deadline.
        let ScriptOptions {
            timeout,
            limits,
            grants,
            code,
        } = &self.options;
        let own = match code {
            Some(_) => timeout
                .saturating_add(context.max_clock_pause())
                .saturating_add(OWN_DEADLINE_GRACE),
            None => timeout.saturating_add(OWN_DEADLINE_GRACE),
        };
        let deadline = now
            .checked_add(own)
            .unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
        self.pool
            .submit(
                JobSpec {
                    name: Arc::clone(&self.name),
                    source,
                    origin,
                    kind: JobKind::Call(arguments),
                    limits: limits.clone(),
                    grants: grants.names(),
                    tools: code.as_ref().map(CodeMode::names),
                    deadline,
                    timeout: *timeout,
                    clock: Clock::Submitted,
                },
                context,
                Box::new(ToolCalls {
                    grants: grants.clone(),
                    calls: Vec::new(),
                    code: code.clone().map(CodeCalls::new),
                }),
            )
            .await
    }
}

/// What runs a script tool's calls of the host: its grants (`rho.<name>`)
/// and, in code mode, its calls of tools (`tools.<name>`).
struct ToolCalls {
    grants: GrantSet,
    /// The grants' calls in flight, by the id the script waits under.
    calls: Vec<(u64, HostFuture)>,
    code: Option<CodeCalls>,
}

impl HostCalls for ToolCalls {
    fn start(&mut self, ask: HostAsk, context: &ToolContext) -> Result<(), String> {
        if ask.callee == Callee::Tool {
            return match &mut self.code {
                Some(code) => code.start(ask, context),
                None => Err(format!(
                    "tools.{}: no tools are granted to this tool",
                    ask.name
                )),
            };
        }
        let Some(grant) = self.grants.get(&ask.name) else {
            return Err(format!("rho.{} is not granted to this tool", ask.name));
        };
        // Plain data: only library-owned impls run here.
        let argument = serde_json::to_value(&ask.argument)
            .map_err(|error| format!("rho.{}: its argument: {error}", ask.name))?;
        self.calls
            .push((ask.id, grant.call(argument, context.clone())));
        Ok(())
    }

    fn poll(&mut self, cx: &mut Context<'_>, ended: &mut Vec<HostAnswer>) {
        let mut index = 0;
        while index < self.calls.len() {
            if let Poll::Ready(result) = self.calls[index].1.as_mut().poll(cx) {
                let (id, _) = self.calls.swap_remove(index);
                ended.push(HostAnswer { id, result });
            } else {
                index += 1;
            }
        }
        if let Some(code) = &mut self.code {
            code.poll(cx, ended);
        }
    }
}

impl fmt::Debug for ScriptTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptTool")
            .field("name", &self.runs.name)
            .field("source_bytes", &self.source.len())
            .field("options", &self.runs.options)
            .finish_non_exhaustive()
    }
}
