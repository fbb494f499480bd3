//! The agent-tools source: [`ScriptSource`], a registry source of script
//! tools the model defines at run time, each definition checked in the
//! sandbox before it is registered, and [`DefineTool`], the ready tool by
//! which the model defines them. Built on the script tools
//! ([`crate::tool`]), code mode ([`crate::code`]) and the sandbox.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_registry::{RegistryError, Source, SourceHandle, SourcePolicy, ToolRegistry};
use rho_tool_core::IntoShared;
use rho_tool_core::untrusted::call_contained;

use crate::code::CodeMode;
use crate::sandbox::{CheckFailure, Clock, JobKind, JobSpec, Origin, ScriptPool};
use crate::tool::{ScriptOptions, ScriptTool};

mod define_tool;
mod definition;

pub use define_tool::DefineTool;
pub use definition::{DefineError, Defined, ScriptDefinition};
use definition::{check_name, check_schema};

impl ScriptSource {
    /// How long a definition's top level may run at its check, by default:
    /// one second. A top level that declares functions and constants takes
    /// microseconds; one that loops for ever is refused at this deadline. It
    /// counts from when a script thread takes the check, not from the call of
    /// [`ScriptSource::define`].
    pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

    /// The longest tool name: 64 characters.
    pub const MAX_NAME_LEN: usize = 64;

    /// How many tools a script source may hold by default: 64. Each new name
    /// starts a clean record in the source's accounting, so without a bound a
    /// model could keep defining a crashing tool under new names.
    pub const DEFAULT_MAX_TOOLS: usize = 64;
}

/// An untrusted registry source of JavaScript tools, defined while the
/// session runs and each checked before it is registered.
///
/// Made with [`ScriptSource::builder`] (or [`ScriptSource::new`], no
/// policy): it registers a source ([`Source::untrusted`]) in the registry,
/// with the policy the host gives, usually an
/// [`Accounting`](rho_registry::Accounting) it keeps to read health and to
/// re-enable tools. [`define`](ScriptSource::define) checks a
/// [`ScriptDefinition`] and registers its [`ScriptTool`], or replaces the
/// source's own tool of that name; [`DefineTool`](DefineTool) lets
/// the model do so during a turn. Cheap to clone; clones share the source.
///
/// # What is checked, when
///
/// At definition time, in this order, and nothing is registered unless
/// every check passes:
///
/// 1. the name: 1 to 64 ASCII letters, digits, `_` or `-`;
/// 2. the parameters: a valid JSON Schema (by its `$schema`, default draft
///    2020-12, compiled as a turn compiles it), whose `type` is `"object"`;
/// 3. the script, in a fresh sandbox on the pool's threads, with the
///    source's memory cap, the pool's stack limit and the interrupt: it is
///    parsed (a syntax error is refused with its line and column), its top
///    level runs under a short deadline ([`ScriptSource::DEFAULT_CHECK_TIMEOUT`]; a top
///    level that throws, or runs past a limit or the deadline, is refused),
///    and it must leave a function `run` (which is not called);
/// 4. the registry: a name that another source holds is refused.
///
/// At call time, every call runs the script in a fresh sandbox again, as
/// for any [`ScriptTool`].
///
/// # Accounting
///
/// Crashes and timeouts of the source's tools reach its policy like those
/// of any untrusted source. With [`Accounting`](rho_registry::Accounting)
/// the quarantine is kept by tool *name*, so redefining a quarantined tool
/// does not lift it: the definition is accepted (the model may fix its
/// code) but the tool stays out of the model's list and its calls are
/// refused until the host calls
/// [`Accounting::reenable`](rho_registry::Accounting::reenable); then the
/// new code runs. [`Defined`]'s text tells the model so. Why accept rather
/// than refuse: a refusal would push the model to define the same code
/// under a new name, which starts with a clean record; an accepted
/// redefinition keeps the fix where the host will look.
#[derive(Clone)]
pub struct ScriptSource {
    handle: SourceHandle,
    settings: Settings,
    /// Held while a definition counts the source's tools and registers its
    /// own, so that definitions at once cannot pass the cap together.
    registering: Arc<std::sync::Mutex<()>>,
}

/// How a [`ScriptSource`] is made; see [`ScriptSource::builder`].
#[must_use = "a builder does nothing until it is registered"]
pub struct ScriptSourceBuilder {
    name: String,
    settings: Settings,
}

/// What a source's builder sets and the source then keeps.
#[derive(Clone)]
struct Settings {
    policy: Option<Arc<dyn SourcePolicy>>,
    pool: ScriptPool,
    /// What every tool of the source runs with (the timeout of those
    /// whose definition has none); the limits, grants and code mode also
    /// bound a definition's check.
    options: ScriptOptions,
    check_timeout: Duration,
    /// The largest source a definition may have, in bytes.
    max_source: usize,
    /// How many tools the source may hold.
    max_tools: usize,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("policy", &self.policy.is_some())
            .field("options", &self.options)
            .field("check_timeout", &self.check_timeout)
            .field("max_source", &self.max_source)
            .field("max_tools", &self.max_tools)
            .finish_non_exhaustive()
    }
}

impl ScriptSource {
    /// A source named `name` whose tools run on `pool`'s threads, to be
    /// registered with [`ScriptSourceBuilder::register`]. Defaults: no
    /// policy, [`ScriptOptions::new`] (the default limits and timeout, no
    /// grants, no code mode), check deadline [`ScriptSource::DEFAULT_CHECK_TIMEOUT`],
    /// [`ScriptTool::DEFAULT_MAX_SOURCE`] bytes of source and [`ScriptSource::DEFAULT_MAX_TOOLS`]
    /// tools.
    pub fn builder(name: impl Into<String>, pool: &ScriptPool) -> ScriptSourceBuilder {
        ScriptSourceBuilder {
            name: name.into(),
            settings: Settings {
                policy: None,
                pool: pool.clone(),
                options: ScriptOptions::new(),
                check_timeout: ScriptSource::DEFAULT_CHECK_TIMEOUT,
                max_source: ScriptTool::DEFAULT_MAX_SOURCE,
                max_tools: ScriptSource::DEFAULT_MAX_TOOLS,
            },
        }
    }

    /// A source named `name` in `registry`, with the defaults and no
    /// policy (so nothing is counted and nothing quarantined; use
    /// [`builder`](ScriptSource::builder) to give it one).
    ///
    /// # Errors
    ///
    /// [`RegistryError::DuplicateSource`] when the registry has a source of
    /// that name.
    pub fn new(
        registry: &ToolRegistry,
        name: impl Into<String>,
        pool: &ScriptPool,
    ) -> Result<Self, RegistryError> {
        Self::builder(name, pool).register(registry)
    }

    /// The source's handle in the registry (to list, remove or replace its
    /// tools directly).
    pub fn handle(&self) -> &SourceHandle {
        &self.handle
    }

    /// The source's name.
    pub fn name(&self) -> &str {
        self.handle.name()
    }

    /// The pool the source's tools run on.
    pub fn pool(&self) -> &ScriptPool {
        &self.settings.pool
    }

    /// The ready [`DefineTool`](DefineTool) of this source, to add
    /// to a trusted source of the host.
    pub fn define_tool(&self) -> DefineTool {
        DefineTool::new(self.clone())
    }

    /// Removes the source's tool `name`; returns whether it had one. Its
    /// record in the policy (and a quarantine) stays.
    pub fn remove(&self, name: &str) -> bool {
        self.handle.remove(name)
    }

    /// Checks `definition` and registers its tool, or replaces the source's
    /// own tool of that name (calls in flight finish with the old code).
    /// See the type's docs for what is checked, in which order.
    ///
    /// Awaits the check on a script thread: the wait for a free thread,
    /// then at most the check's deadline, which counts from when a thread
    /// takes the check (a definition queued behind busy threads still gets
    /// all of it); dropping the future stops it and registers nothing.
    ///
    /// # Errors
    ///
    /// A [`DefineError`] saying what is wrong; nothing was registered.
    pub async fn define(&self, definition: ScriptDefinition) -> Result<Defined, DefineError> {
        let ScriptDefinition {
            name,
            description,
            parameters,
            source,
            timeout,
        } = definition;
        check_name(&name)?;
        if source.len() > self.settings.max_source {
            return Err(DefineError::SourceTooLarge {
                name,
                bytes: source.len(),
                max: self.settings.max_source,
            });
        }
        self.check_room(&name)?;
        check_schema(&name, &parameters)?;
        let source: Arc<str> = Arc::from(source);
        let name_arc: Arc<str> = Arc::from(name.as_str());
        let now = Instant::now();
        let verdict = self
            .settings
            .pool
            .check(JobSpec {
                name: name_arc,
                source: Arc::clone(&source),
                origin: Origin::Defined,
                kind: JobKind::Check,
                limits: self.settings.options.limits().clone(),
                grants: self.settings.options.grants().names(),
                tools: self.settings.options.code_mode().map(CodeMode::names),
                // Counted again from when a thread takes the check: see
                // `Clock::Taken`.
                deadline: now + self.settings.check_timeout,
                timeout: self.settings.check_timeout,
                clock: Clock::Taken,
            })
            .await;
        if let Err(failure) = verdict {
            return Err(self.refusal(&name, failure));
        }
        let mut options = self.settings.options.clone();
        if let Some(timeout) = timeout {
            options = options.with_timeout(timeout);
        }
        let tool = ScriptTool::new(name.clone(), description, &*source, &self.settings.pool)
            .with_parameters(parameters)
            .with_options(options);
        // Counted again under the lock: the check above answers the model
        // before the script is checked, this one keeps the cap exact.
        let _registering = self
            .registering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.check_room(&name)?;
        let replaced = self
            .handle
            .replace(Arc::new(tool))
            .map_err(|error| match error {
                RegistryError::DuplicateTool { held_by, .. } => DefineError::NameTaken {
                    name: name.clone(),
                    held_by,
                },
                other => DefineError::Unavailable {
                    name: name.clone(),
                    reason: other.to_string(),
                },
            })?;
        let disabled = self
            .settings
            .policy
            .as_ref()
            .and_then(|policy| call_contained(|| policy.disabled(&name)).ok().flatten());
        Ok(Defined {
            name,
            replaced,
            disabled,
        })
    }

    /// Refuses a new name when the source holds as many tools as it may.
    fn check_room(&self, name: &str) -> Result<(), DefineError> {
        let tools = self.handle.tools();
        if tools.len() >= self.settings.max_tools && !tools.iter().any(|held| held == name) {
            return Err(DefineError::TooManyTools {
                name: name.to_owned(),
                max: self.settings.max_tools,
            });
        }
        Ok(())
    }

    fn refusal(&self, name: &str, failure: CheckFailure) -> DefineError {
        let name = name.to_owned();
        match failure {
            CheckFailure::Syntax {
                line,
                column,
                message,
            } => DefineError::Syntax {
                name,
                line,
                column,
                message,
            },
            CheckFailure::NoRun { found } => DefineError::NoRun { name, found },
            CheckFailure::Failed(text) => DefineError::TopLevel { name, text },
            CheckFailure::TimedOut => DefineError::TopLevelTimedOut {
                name,
                limit: self.settings.check_timeout,
            },
            CheckFailure::Unavailable(reason) => DefineError::Unavailable { name, reason },
        }
    }
}

impl ScriptSourceBuilder {
    /// Tells `policy` of every call of the source's tools and asks it which
    /// are disabled: usually an [`Accounting`](rho_registry::Accounting)
    /// the host keeps an `Arc` of.
    pub fn with_policy(mut self, policy: impl IntoShared<dyn SourcePolicy>) -> Self {
        self.settings.policy = Some(policy.into_shared());
        self
    }

    /// Runs every tool of the source with `options` (see
    /// [`ScriptOptions`]): its timeout is that of tools whose definition
    /// has none (all those the model defines with [`DefineTool`]); its
    /// limits bound each definition's check too, which sees the names of
    /// its grants and code mode's tools but cannot call them.
    pub fn with_options(mut self, options: ScriptOptions) -> Self {
        self.settings.options = options;
        self
    }

    /// Sets how long a definition's top level may run at its check (from
    /// when a script thread takes it).
    pub fn with_check_timeout(mut self, timeout: Duration) -> Self {
        self.settings.check_timeout = timeout;
        self
    }

    /// Sets the largest source, in bytes, a definition may have.
    pub fn with_max_source(mut self, bytes: usize) -> Self {
        self.settings.max_source = bytes;
        self
    }

    /// Sets how many tools the source may hold; a definition of a new name
    /// past it is refused (redefining a held one is not).
    pub fn with_max_tools(mut self, tools: usize) -> Self {
        self.settings.max_tools = tools;
        self
    }

    /// Registers the source in `registry`, untrusted, with the policy.
    ///
    /// # Errors
    ///
    /// [`RegistryError::DuplicateSource`] when the registry has a source of
    /// that name.
    pub fn register(self, registry: &ToolRegistry) -> Result<ScriptSource, RegistryError> {
        let mut source = Source::untrusted(self.name);
        if let Some(policy) = &self.settings.policy {
            source = source.with_policy(Arc::clone(policy));
        }
        let handle = registry.add_source(source)?;
        Ok(ScriptSource {
            handle,
            settings: self.settings,
            registering: Arc::default(),
        })
    }
}

impl fmt::Debug for ScriptSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptSource")
            .field("name", &self.name())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ScriptSourceBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptSourceBuilder")
            .field("name", &self.name)
            .field("settings", &self.settings)
            .finish()
    }
}
