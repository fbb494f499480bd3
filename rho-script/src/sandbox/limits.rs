//! [`ScriptLimits`]: what one job's sandbox may take besides time.

use rho_tool_core::untrusted::Limits;

impl ScriptLimits {
    /// The default JavaScript stack limit: 512 KiB.
    pub const DEFAULT_STACK: usize = 512 << 10;

    /// The default memory cap of one call: 64 MiB.
    pub const DEFAULT_MEMORY: usize = 64 << 20;
}

/// How much a script's sandbox may take in one call, besides time.
///
/// ```
/// use rho::script::ScriptLimits;
/// use rho::untrusted::Limits;
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
    /// (default [`ScriptLimits::DEFAULT_MEMORY`]). Past it the call ends crashed,
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
            memory: ScriptLimits::DEFAULT_MEMORY,
            answer: Limits::default(),
        }
    }
}
