//! [`ScriptOptions`]: what a script's calls run with, one type for every
//! kind of script tool.

use std::time::Duration;

use rho_tool_core::Tool;

use crate::code::CodeMode;
use crate::sandbox::ScriptLimits;
use crate::tool::{Grant, GrantSet};

/// What a script's calls run with: the timeout, the memory cap and the
/// answer's limits, the host functions granted (`rho.<name>`) and code
/// mode (`tools.<name>`).
///
/// The same for a [`ScriptTool`](crate::ScriptTool), a
/// [`RunScript`](crate::RunScript) and every tool of a
/// [`ScriptSource`](crate::ScriptSource): each takes one with
/// `with_options`, so a host sets them once and gives them to each.
///
/// ```
/// use std::time::Duration;
/// use rho_script::{RunScript, ScriptOptions, ScriptPool, ScriptTool};
///
/// # fn main() -> std::io::Result<()> {
/// let pool = ScriptPool::new(1)?;
/// let options = ScriptOptions::new().with_timeout(Duration::from_secs(5));
/// let tool = ScriptTool::new("double", "Doubles n.", "function run(a) { return a.n * 2 }", &pool)
///     .with_options(options.clone());
/// let run_script = RunScript::new(&pool).with_options(options);
/// assert_eq!(tool.options().timeout(), run_script.options().timeout());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ScriptOptions {
    pub(crate) timeout: Duration,
    pub(crate) limits: ScriptLimits,
    pub(crate) grants: GrantSet,
    pub(crate) code: Option<CodeMode>,
}

impl Default for ScriptOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptOptions {
    /// The default timeout (`<dyn Tool>::DEFAULT_TIMEOUT`) and limits
    /// ([`ScriptLimits::default`]), no grants, no code mode.
    pub fn new() -> Self {
        Self {
            timeout: <dyn Tool>::DEFAULT_TIMEOUT,
            limits: ScriptLimits::default(),
            grants: GrantSet::default(),
            code: None,
        }
    }

    /// Sets the timeout, after which rho stops the call.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the memory cap and the answer's limits.
    pub fn with_limits(mut self, limits: ScriptLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Grants `grant` to the script, as `rho.<name>` (replacing an earlier
    /// grant of the same name).
    pub fn with_grant(mut self, grant: Grant) -> Self {
        self.grants = self.grants.with(grant);
        self
    }

    /// Lets the script call the tools `code` allows, as `tools.<name>`
    /// (code mode): each call a rho call of its own. See [`CodeMode`].
    pub fn with_code_mode(mut self, code: CodeMode) -> Self {
        self.code = Some(code);
        self
    }

    /// The timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The memory cap and the answer's limits.
    pub fn limits(&self) -> &ScriptLimits {
        &self.limits
    }

    /// The code mode, if the script may call tools.
    pub fn code_mode(&self) -> Option<&CodeMode> {
        self.code.as_ref()
    }

    pub(crate) fn grants(&self) -> &GrantSet {
        &self.grants
    }
}
