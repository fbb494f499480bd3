//! [`ScriptTool`]: a tool whose code is a JavaScript source.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::Limits;
use rho_tool_core::{DEFAULT_TIMEOUT, Tool, ToolContext, ToolOutput, async_trait};

use crate::code::CodeMode;
use crate::grant::{Grant, GrantSet};
use crate::pool::{Clock, JobKind, JobSpec, ScriptPool};

/// The default memory cap of one call: 64 MiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 64 << 20;

/// How much a script's sandbox may take in one call, besides time.
///
/// ```
/// use rho_script::ScriptLimits;
/// use rho_tool_core::untrusted::Limits;
///
/// let limits = ScriptLimits::default()
///     .with_memory(16 << 20)
///     .with_answer(Limits::default().with_max_depth(16));
/// assert_eq!(limits.memory, 16 << 20);
/// assert_eq!(limits.answer.max_depth, 16);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScriptLimits {
    /// The memory the call's JavaScript runtime may allocate, in bytes
    /// (default [`DEFAULT_MEMORY_LIMIT`]). Past it the call ends crashed,
    /// with a text naming the limit.
    pub memory: usize,
    /// The limits of the answer's plain form: depth, number of values,
    /// total size, one string (default: [`Limits::default`]).
    pub answer: Limits,
}

impl ScriptLimits {
    /// Sets the memory cap, in bytes.
    #[must_use]
    pub fn with_memory(mut self, bytes: usize) -> Self {
        self.memory = bytes;
        self
    }

    /// Sets the limits of the answer's plain form.
    #[must_use]
    pub fn with_answer(mut self, limits: Limits) -> Self {
        self.answer = limits;
        self
    }
}

impl Default for ScriptLimits {
    fn default() -> Self {
        Self {
            memory: DEFAULT_MEMORY_LIMIT,
            answer: Limits::default(),
        }
    }
}

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
    /// arguments of any object, the default timeout ([`DEFAULT_TIMEOUT`])
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

    /// Sets the timeout, after which rho stops the call.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.runs.timeout = timeout;
        self
    }

    /// Sets the memory cap and the answer's limits.
    #[must_use]
    pub fn with_limits(mut self, limits: ScriptLimits) -> Self {
        self.runs.limits = limits;
        self
    }

    /// Grants `grant` to the script, as `rho.<name>` (replacing an earlier
    /// grant of the same name).
    #[must_use]
    pub fn with_grant(mut self, grant: Grant) -> Self {
        self.runs.grants = self.runs.grants.with(grant);
        self
    }

    /// Lets the script call the tools `code` allows, as `tools.<name>`
    /// (code mode): each call a rho call of its own. See [`CodeMode`].
    #[must_use]
    pub fn with_code_mode(mut self, code: CodeMode) -> Self {
        self.runs.code = Some(code);
        self
    }

    pub(crate) fn with_grant_set(mut self, grants: GrantSet) -> Self {
        self.runs.grants = grants;
        self
    }

    /// The JavaScript source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The limits of each call.
    pub fn limits(&self) -> &ScriptLimits {
        &self.runs.limits
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
        self.runs.timeout
    }

    fn is_untrusted(&self) -> bool {
        true
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

/// Where a call's source came from, which says whose mistake a source that
/// does not load is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The tool's own source: one that does not load is the tool's crash.
    Defined,
    /// The call brought it ([`RunScript`](crate::RunScript)): one that
    /// does not load is the call's mistake, an error result, no strike.
    Given,
}

/// What a script call needs besides its source and arguments, the same
/// for a [`ScriptTool`] and a [`RunScript`](crate::RunScript).
#[derive(Clone)]
pub(crate) struct Runs {
    pub(crate) name: Arc<str>,
    pub(crate) timeout: Duration,
    pub(crate) limits: ScriptLimits,
    pub(crate) grants: GrantSet,
    pub(crate) code: Option<CodeMode>,
    pub(crate) pool: ScriptPool,
}

impl Runs {
    /// `name` on `pool`, with the default timeout and limits, no grants,
    /// no code mode.
    pub(crate) fn new(name: String, pool: &ScriptPool) -> Self {
        Self {
            name: Arc::from(name),
            timeout: DEFAULT_TIMEOUT,
            limits: ScriptLimits::default(),
            grants: GrantSet::default(),
            code: None,
            pool: pool.clone(),
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
        let own = match &self.code {
            Some(_) => self
                .timeout
                .saturating_add(context.max_clock_pause())
                .saturating_add(OWN_DEADLINE_GRACE),
            None => self.timeout.saturating_add(OWN_DEADLINE_GRACE),
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
                    limits: self.limits.clone(),
                    grants: self.grants.names(),
                    tools: self.code.as_ref().map(CodeMode::names),
                    deadline,
                    timeout: self.timeout,
                    clock: Clock::Submitted,
                },
                context,
                self.grants.clone(),
                self.code.clone(),
            )
            .await
    }
}

impl fmt::Debug for ScriptTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptTool")
            .field("name", &self.runs.name)
            .field("source_bytes", &self.source.len())
            .field("timeout", &self.runs.timeout)
            .field("limits", &self.runs.limits)
            .field("grants", &self.runs.grants)
            .field("code", &self.runs.code)
            .finish_non_exhaustive()
    }
}
