//! [`Grant`]: a host function a script may call by name, as `rho.<name>`.
//!
//! A script has no authority of its own: whatever it may do beyond
//! computing (read a file, fetch a page, ask a database) the host grants
//! it as a function, by name, tool by tool. The function is the host's
//! code and runs as the host's code: in the call's future, on the
//! executor the call runs on, never on the script's thread. The script
//! only hands it plain data and gets plain data back, so nothing of the
//! sandbox reaches the host but JSON, and nothing of the host reaches the
//! sandbox but JSON.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rho_tool_core::ToolContext;

/// The future a [`HostFunction`] answers with: the value the script's
/// promise resolves to, or the text of the error it rejects with.
pub type HostFuture = Pin<Box<dyn Future<Output = Result<serde_json::Value, String>> + Send>>;

/// A function of the host that a script calls as `rho.<name>(argument)`.
///
/// `argument` is what the script passed, made plain data inside the
/// sandbox under the tool's answer limits (JSON: functions are their
/// source text, `undefined` is null, and so on, as for an answer). The
/// future runs in the call's own future, on the call's executor, while
/// the script waits for it; its `Ok` value is handed back to the script as
/// what the promise resolves to (it counts against the call's memory cap
/// once inside), its `Err` text as the message of the `Error` the promise
/// rejects with.
///
/// Closures implement it: `|argument, context| async move { ... }` (the
/// future must own what it uses: clone out of the closure first). The
/// context is the call's own [`ToolContext`] (cheap to clone): its id, its
/// executor's timer, its partial results.
///
/// # Contract
///
/// - The future may be dropped before it ends: at the call's timeout, on
///   a host abort, and when the script ends (returns, throws, is stopped)
///   with the promise still pending. Write it to be cancelled at any
///   `.await`.
/// - A panic in `call` or in the future ends the whole call as a crash of
///   the tool (rho contains it in the call's task, as any tool's panic):
///   answer `Err` for what the script may catch.
pub trait HostFunction: Send + Sync + 'static {
    /// Starts one call of the function by the script.
    fn call(&self, argument: serde_json::Value, context: ToolContext) -> HostFuture;
}

impl<F, Fut> HostFunction for F
where
    F: Fn(serde_json::Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<serde_json::Value, String>> + Send + 'static,
{
    fn call(&self, argument: serde_json::Value, context: ToolContext) -> HostFuture {
        Box::pin(self(argument, context))
    }
}

/// The names a grant may not take: the functions every script already
/// has, and names that would not be an own property of `rho`.
const RESERVED: [&str; 5] = ["update", "sleep", "answer", "error", "__proto__"];

/// The longest name a grant may have.
const MAX_GRANT_NAME: usize = 64;

/// A host function granted to scripts under a name: a script calls it as
/// `await rho.<name>(argument)`.
///
/// Give it to a script tool, a `run_script` or every tool of a source in
/// their [`ScriptOptions`](crate::ScriptOptions)
/// ([`with_grant`](crate::ScriptOptions::with_grant)).
/// Cheap to clone.
///
/// ```
/// use rho::script::Grant;
/// use serde_json::json;
///
/// // `rho.lookup({ word })` answers a definition from the host's table.
/// let lookup = Grant::new("lookup", |argument: serde_json::Value, _| async move {
///     match argument["word"].as_str() {
///         Some("rho") => Ok(json!({ "definition": "the 17th letter of the Greek alphabet" })),
///         Some(word) => Err(format!("no definition of `{word}`")),
///         None => Err("`word` must be a string".to_owned()),
///     }
/// })?;
/// assert_eq!(lookup.name(), "lookup");
/// # Ok::<(), rho::script::GrantError>(())
/// ```
#[derive(Clone)]
pub struct Grant {
    name: Arc<str>,
    function: Arc<dyn HostFunction>,
}

impl Grant {
    /// `function`, granted as `rho.<name>`.
    ///
    /// # Errors
    ///
    /// [`GrantError`] when `name` is not a JavaScript identifier of 1 to
    /// 64 ASCII letters, digits, `_` or `$` (not starting with a digit), or
    /// is the name of a function every script has (`update`, `sleep`,
    /// `answer`, `error`).
    pub fn new(name: impl Into<String>, function: impl HostFunction) -> Result<Self, GrantError> {
        let name = name.into();
        let identifier = !name.is_empty()
            && name.len() <= MAX_GRANT_NAME
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$')
            && !name.as_bytes()[0].is_ascii_digit();
        if !identifier {
            return Err(GrantError::NotAnIdentifier { name });
        }
        if RESERVED.contains(&name.as_str()) {
            return Err(GrantError::Reserved { name });
        }
        Ok(Self {
            name: Arc::from(name),
            function: Arc::new(function),
        })
    }

    /// The name a script calls it by, as `rho.<name>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts one call of the function.
    pub(crate) fn call(&self, argument: serde_json::Value, context: ToolContext) -> HostFuture {
        self.function.call(argument, context)
    }
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grant")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Why a [`Grant`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// The name is not a short JavaScript identifier.
    #[error(
        "`{name}` cannot be a grant's name: it must be 1 to 64 ASCII letters, digits, `_` or `$`, not starting with a digit"
    )]
    NotAnIdentifier {
        /// The name asked for.
        name: String,
    },
    /// Every script already has a function of that name.
    #[error(
        "`{name}` cannot be a grant's name: `rho.{name}` is one of the functions every script has"
    )]
    Reserved {
        /// The name asked for.
        name: String,
    },
}

/// The grants of one tool, by name: the later of two of the same name
/// wins.
#[derive(Clone, Default)]
pub(crate) struct GrantSet {
    grants: Arc<[Grant]>,
}

impl GrantSet {
    /// The set with `grant` added, replacing one of the same name.
    pub(crate) fn with(&self, grant: Grant) -> Self {
        let mut grants: Vec<Grant> = self
            .grants
            .iter()
            .filter(|held| held.name != grant.name)
            .cloned()
            .collect();
        grants.push(grant);
        Self {
            grants: grants.into(),
        }
    }

    /// The grant called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Grant> {
        self.grants.iter().find(|grant| &*grant.name == name)
    }

    /// Whether no host function is granted.
    pub(crate) fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// The names, for the sandbox to install as `rho.<name>`.
    pub(crate) fn names(&self) -> Arc<[Arc<str>]> {
        self.grants
            .iter()
            .map(|grant| Arc::clone(&grant.name))
            .collect()
    }
}

impl fmt::Debug for GrantSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.grants.iter().map(|grant| &grant.name))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nothing(_: serde_json::Value, _: ToolContext) -> HostFuture {
        Box::pin(async { Ok(serde_json::Value::Null) })
    }

    #[test]
    fn a_grant_name_must_be_a_short_identifier_and_not_a_default_function() {
        assert!(Grant::new("fetch_page", nothing).is_ok());
        assert!(Grant::new("$", nothing).is_ok());
        for bad in ["", "1st", "a-b", "a.b", "é", &"x".repeat(65)] {
            assert!(
                matches!(
                    Grant::new(bad, nothing),
                    Err(GrantError::NotAnIdentifier { .. })
                ),
                "{bad}"
            );
        }
        for reserved in ["update", "sleep", "answer", "error", "__proto__"] {
            assert!(matches!(
                Grant::new(reserved, nothing),
                Err(GrantError::Reserved { .. })
            ));
        }
    }

    #[test]
    fn the_later_grant_of_a_name_replaces_the_earlier() {
        let set = GrantSet::default()
            .with(Grant::new("a", nothing).expect("a name"))
            .with(Grant::new("b", nothing).expect("a name"))
            .with(Grant::new("a", nothing).expect("a name"));
        assert_eq!(&*set.names(), &[Arc::from("b"), Arc::from("a")]);
    }
}
