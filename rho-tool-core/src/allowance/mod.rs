//! Approvals that are remembered: an [`Allowance`] an approver answers
//! with ([`Verdict::Remember`](crate::Verdict::Remember)), and the
//! [`Allowances`] a runner keeps and checks before it asks anyone.
//!
//! One concept a module: `command` reads the words of a shell command, so
//! that a prefix is matched on the command bash would run, not on its
//! text; here what an allowance covers and the store that keeps them.

mod command;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::annotations::ToolAnnotations;
use crate::gate::ApprovalRequest;

/// "Allow this for the rest of the session": the calls of one tool an
/// approver allows once and for all, so that nobody is asked again about
/// a call it covers.
///
/// An approver answers with one
/// ([`Verdict::Remember`](crate::Verdict::Remember)); the runner keeps it
/// in its [`Allowances`] and, when a gate later asks about a call it
/// covers, allows the call without asking. It answers questions only: a
/// gate's denial still denies.
///
/// ```
/// use rho::{Allowance, ApprovalRequest};
/// use serde_json::json;
///
/// // `git status`, and any further words, for the shell tool.
/// let git_status = Allowance::command_prefix("shell", "command", ["git", "status"]);
/// assert!(git_status.covers("shell", &json!({"command": "git status --short"})));
/// // Matched on the command bash would run, not on its text.
/// assert!(!git_status.covers("shell", &json!({"command": "git status; rm -rf ~"})));
/// assert!(!git_status.covers("shell", &json!({"command": "git status $(rm -rf ~)"})));
///
/// // An approver offering "allow `git status` for the session" makes it
/// // from the request it was asked about.
/// let request = ApprovalRequest::new("call-1", "shell", json!({"command": "git status -s"}));
/// assert_eq!(Allowance::prefix_of(&request, "command", 2), Some(git_status));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Allowance {
    tool: String,
    #[serde(flatten)]
    scope: AllowanceScope,
}

/// Which calls of its tool an [`Allowance`] covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AllowanceScope {
    /// Every call of the tool.
    Tool,
    /// Calls with exactly these arguments.
    Arguments {
        /// The arguments, as JSON.
        arguments: serde_json::Value,
    },
    /// Calls whose arguments (an object) hold each of these fields with
    /// exactly its value, whatever else they hold: "deploys to staging",
    /// `{"env": "staging"}`. A field left out is free, so name every one
    /// that could change what the call does. No fields covers nothing.
    Fields {
        /// The fields and their values.
        fields: serde_json::Map<String, serde_json::Value>,
    },
    /// Calls whose `argument` is a shell command that bash runs as one
    /// simple command whose first words are `words`, given alone (no
    /// other argument: a grant asked for or a working directory could
    /// change what the command may do). A command of anything but plain
    /// words (an operator, a redirection, a substitution, a variable) is
    /// never covered, nor is a prefix word bash would expand. An empty
    /// prefix covers nothing.
    CommandPrefix {
        /// The name of the argument that holds the command.
        argument: String,
        /// The words the command starts with.
        words: Vec<String>,
    },
}

impl Allowance {
    /// Every call of `tool`.
    pub fn tool(tool: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            scope: AllowanceScope::Tool,
        }
    }

    /// Calls of `tool` with exactly `arguments`.
    pub fn arguments(tool: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self {
            tool: tool.into(),
            scope: AllowanceScope::Arguments { arguments },
        }
    }

    /// Calls of `tool` whose arguments hold each of `fields` with its
    /// value ([`AllowanceScope::Fields`]).
    pub fn fields(
        tool: impl Into<String>,
        fields: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        Self {
            tool: tool.into(),
            scope: AllowanceScope::Fields { fields },
        }
    }

    /// Calls of `tool` whose `argument` is a shell command starting with
    /// `words` ([`AllowanceScope::CommandPrefix`]).
    pub fn command_prefix(
        tool: impl Into<String>,
        argument: impl Into<String>,
        words: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            tool: tool.into(),
            scope: AllowanceScope::CommandPrefix {
                argument: argument.into(),
                words: words.into_iter().map(Into::into).collect(),
            },
        }
    }

    /// The first `words` words of the command in `request`'s `argument`,
    /// as a [`command_prefix`](Allowance::command_prefix) of its tool:
    /// what an approver offers as "allow `git status` for the session".
    /// `None` when the command is not one simple command of plain words,
    /// has fewer words, one of them is one bash would expand, or `words`
    /// is zero.
    pub fn prefix_of(request: &ApprovalRequest, argument: &str, words: usize) -> Option<Self> {
        let command = request.arguments.get(argument)?.as_str()?;
        let read = command::simple_command_words(command)?;
        let prefix = read.get(..words).filter(|prefix| !prefix.is_empty())?;
        if !prefix.iter().all(|word| word.literal) {
            return None;
        }
        Some(Self::command_prefix(
            request.tool.clone(),
            argument,
            prefix.iter().map(|word| word.text.clone()),
        ))
    }

    /// The name of the tool whose calls it covers.
    pub fn tool_name(&self) -> &str {
        &self.tool
    }

    /// Which of the tool's calls it covers.
    pub fn scope(&self) -> &AllowanceScope {
        &self.scope
    }

    /// Whether it covers a call of `tool` with `arguments`. Says nothing
    /// of destructive tools: that is the [`Allowances`]' to decide.
    pub fn covers(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        if tool != self.tool {
            return false;
        }
        match &self.scope {
            AllowanceScope::Tool => true,
            AllowanceScope::Arguments { arguments: allowed } => allowed == arguments,
            AllowanceScope::Fields { fields } => {
                let Some(given) = arguments.as_object() else {
                    return false;
                };
                !fields.is_empty()
                    && fields
                        .iter()
                        .all(|(name, value)| given.get(name) == Some(value))
            }
            AllowanceScope::CommandPrefix { argument, words } => {
                let Some(given) = arguments.as_object() else {
                    return false;
                };
                let alone = given.len() == 1;
                let Some(command) = given.get(argument).and_then(serde_json::Value::as_str) else {
                    return false;
                };
                if !alone || words.is_empty() {
                    return false;
                }
                command::simple_command_words(command).is_some_and(|read| {
                    read.len() >= words.len()
                        && read
                            .iter()
                            .zip(words)
                            .all(|(read, word)| read.literal && read.text == *word)
                })
            }
        }
    }

    /// Whether it covers some but not all calls of its tool.
    fn is_narrow(&self) -> bool {
        !matches!(self.scope, AllowanceScope::Tool)
    }
}

impl fmt::Display for Allowance {
    /// In words for a person: ``every call of `read_file` ``, ``calls of
    /// `shell` running `git status …` ``.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tool = &self.tool;
        match &self.scope {
            AllowanceScope::Tool => write!(f, "every call of `{tool}`"),
            AllowanceScope::Arguments { arguments } => {
                write!(f, "calls of `{tool}` with arguments {arguments}")
            }
            AllowanceScope::Fields { fields } => {
                let fields = serde_json::Value::Object(fields.clone());
                write!(f, "calls of `{tool}` whose arguments hold {fields}")
            }
            AllowanceScope::CommandPrefix { words, .. } => {
                write!(f, "calls of `{tool}` running `{} …`", words.join(" "))
            }
        }
    }
}

/// Whether an allowance may cover a tool whose annotations say it is
/// destructive ([`ToolAnnotations::is_destructive`]; an untrusted tool's
/// hints are not believed, so it always is).
///
/// A shell is destructive: a host that wants "allow `git status` for the
/// session" chooses [`Scoped`](DestructiveTools::Scoped).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DestructiveTools {
    /// Never: every call of a destructive tool is asked about (the
    /// default).
    #[default]
    Never,
    /// By an allowance narrower than the whole tool (its arguments, a
    /// command prefix), never by one of [`AllowanceScope::Tool`].
    Scoped,
    /// By any allowance.
    Always,
}

/// An allowance's number in its [`Allowances`], to revoke it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AllowanceId(u64);

impl AllowanceId {
    /// Its number: 1 for the first allowance a store kept, and so on in
    /// the order they were added.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for AllowanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "allowance {}", self.0)
    }
}

/// The allowances of one session: kept, listed, revoked, and checked by
/// the runner before it asks anyone.
///
/// Clones share one store, so a host keeps a clone to show and revoke
/// what the runner keeps; two runners given clones share one session.
/// A runner ([`Runner::with_allowances`](crate::Runner::with_allowances))
/// checks them whenever its gate asks about a call (an
/// [`AnnotationGate`](crate::AnnotationGate), the MCP proxy's policy, any
/// gate): a covered call runs without asking the approver. Nothing is
/// kept beyond the store's life: persisting them is the host's (they are
/// serde values).
///
/// ```
/// use rho::gate::{Allowance, Allowances, DestructiveTools};
/// use rho::ToolAnnotations;
/// use serde_json::json;
///
/// let allowances = Allowances::new().destructive_tools(DestructiveTools::Scoped);
/// let id = allowances.add(Allowance::command_prefix("shell", "command", ["cargo", "test"]));
/// let shell = ToolAnnotations::new(); // no hints: destructive
/// let call = json!({"command": "cargo test -p rho"});
/// assert_eq!(allowances.covering("shell", &call, &shell), Some(id));
///
/// assert!(allowances.revoke(id).is_some());
/// assert_eq!(allowances.covering("shell", &call, &shell), None);
/// ```
#[derive(Clone, Default)]
pub struct Allowances {
    kept: Arc<Mutex<Kept>>,
}

#[derive(Default)]
struct Kept {
    next: u64,
    allowances: Vec<(AllowanceId, Allowance)>,
    destructive_tools: DestructiveTools,
}

impl Allowances {
    /// An empty store that covers no destructive tool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets whether the allowances may cover destructive tools (default
    /// [`DestructiveTools::Never`]), for every clone of the store.
    #[must_use]
    pub fn destructive_tools(self, which: DestructiveTools) -> Self {
        self.lock().destructive_tools = which;
        self
    }

    /// Keeps `allowance`; returns its id (the one it already has if an
    /// equal one is kept).
    pub fn add(&self, allowance: Allowance) -> AllowanceId {
        let mut kept = self.lock();
        if let Some((id, _)) = kept.allowances.iter().find(|(_, a)| *a == allowance) {
            return *id;
        }
        kept.next += 1;
        let id = AllowanceId(kept.next);
        kept.allowances.push((id, allowance));
        id
    }

    /// What is kept, oldest first.
    pub fn list(&self) -> Vec<(AllowanceId, Allowance)> {
        self.lock().allowances.clone()
    }

    /// Forgets the allowance `id`; returns it, or `None` if it was not
    /// kept. A call already allowed by it goes on.
    pub fn revoke(&self, id: AllowanceId) -> Option<Allowance> {
        let mut kept = self.lock();
        let at = kept.allowances.iter().position(|(kept, _)| *kept == id)?;
        Some(kept.allowances.remove(at).1)
    }

    /// Forgets every allowance.
    pub fn clear(&self) {
        self.lock().allowances.clear();
    }

    /// Whether no allowance is kept.
    pub fn is_empty(&self) -> bool {
        self.lock().allowances.is_empty()
    }

    /// The first allowance that covers a call of `tool` with `arguments`,
    /// whose annotations (as believed: an untrusted tool's read as
    /// [`ToolAnnotations::without_hints`]) are `annotations`.
    pub fn covering(
        &self,
        tool: &str,
        arguments: &serde_json::Value,
        annotations: &ToolAnnotations,
    ) -> Option<AllowanceId> {
        let kept = self.lock();
        let destructive = annotations.is_destructive();
        kept.allowances
            .iter()
            .find(|(_, allowance)| {
                may_cover(kept.destructive_tools, destructive, allowance)
                    && allowance.covers(tool, arguments)
            })
            .map(|(id, _)| *id)
    }

    /// Keeps `allowance`, answered about a call of `tool`, if it could
    /// cover a call of that tool: it names the tool, and the store lets it
    /// cover the tool if it is destructive. `None` when it is not kept.
    pub(crate) fn remember(
        &self,
        allowance: Allowance,
        tool: &str,
        annotations: &ToolAnnotations,
    ) -> Option<AllowanceId> {
        let destructive = annotations.is_destructive();
        let usable = allowance.tool == tool
            && may_cover(self.lock().destructive_tools, destructive, &allowance);
        usable.then(|| self.add(allowance))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        // Nothing panics while the lock is held; a poisoned store is
        // still whole.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `allowance` may cover a tool that is (or is not) destructive.
fn may_cover(which: DestructiveTools, destructive: bool, allowance: &Allowance) -> bool {
    match which {
        _ if !destructive => true,
        DestructiveTools::Never => false,
        DestructiveTools::Scoped => allowance.is_narrow(),
        DestructiveTools::Always => true,
    }
}

impl fmt::Debug for Allowances {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kept = self.lock();
        f.debug_struct("Allowances")
            .field("allowances", &kept.allowances)
            .field("destructive_tools", &kept.destructive_tools)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shell(command: &str) -> serde_json::Value {
        json!({ "command": command })
    }

    #[test]
    fn a_command_prefix_covers_only_the_command_given_alone() {
        let allowance = Allowance::command_prefix("shell", "command", ["git", "status"]);
        assert!(allowance.covers("shell", &shell("git status")));
        assert!(allowance.covers("shell", &shell("'git' status -s")));
        assert!(!allowance.covers("shell", &shell("git stat")));
        assert!(!allowance.covers("shell", &shell("git")));
        assert!(!allowance.covers("bash", &shell("git status")));
        assert!(!allowance.covers("shell", &shell("git status && rm -rf ~")));
        assert!(!allowance.covers("shell", &shell("g?t status")));
        let with_grant = json!({"command": "git status", "grant": {"network": "full"}});
        assert!(!allowance.covers("shell", &with_grant));
        assert!(!allowance.covers("shell", &json!("git status")));
        let empty = Allowance::command_prefix("shell", "command", Vec::<String>::new());
        assert!(!empty.covers("shell", &shell("git status")));
    }

    #[test]
    fn fields_cover_calls_that_hold_each_of_them() {
        let staging = json!({"env": "staging"});
        let serde_json::Value::Object(fields) = staging else {
            unreachable!()
        };
        let allowance = Allowance::fields("deploy", fields);
        assert!(allowance.covers("deploy", &json!({"env": "staging"})));
        assert!(allowance.covers("deploy", &json!({"env": "staging", "tag": "v2"})));
        assert!(!allowance.covers("deploy", &json!({"env": "production"})));
        assert!(!allowance.covers("deploy", &json!({})));
        assert!(!allowance.covers("deploy", &json!(["staging"])));
        assert_eq!(
            allowance.to_string(),
            r#"calls of `deploy` whose arguments hold {"env":"staging"}"#
        );
        let none = Allowance::fields("deploy", serde_json::Map::new());
        assert!(!none.covers("deploy", &json!({"env": "staging"})));
    }

    #[test]
    fn a_destructive_tool_is_covered_only_as_the_store_allows() {
        let destructive = ToolAnnotations::new();
        let read_only = ToolAnnotations::new().read_only();
        let whole = Allowance::tool("shell");
        let narrow = Allowance::command_prefix("shell", "command", ["ls"]);
        let call = shell("ls -l");
        for (which, whole_covers, narrow_covers) in [
            (DestructiveTools::Never, false, false),
            (DestructiveTools::Scoped, false, true),
            (DestructiveTools::Always, true, true),
        ] {
            let store = Allowances::new().destructive_tools(which);
            let id = store.add(whole.clone());
            assert_eq!(
                store.covering("shell", &call, &destructive).is_some(),
                whole_covers
            );
            assert_eq!(store.covering("shell", &call, &read_only), Some(id));
            store.clear();
            store.add(narrow.clone());
            assert_eq!(
                store.covering("shell", &call, &destructive).is_some(),
                narrow_covers
            );
        }
    }

    #[test]
    fn the_store_keeps_one_of_each_lists_and_revokes() {
        let store = Allowances::new();
        let copy = store.clone();
        let first = store.add(Allowance::tool("read"));
        assert_eq!(copy.add(Allowance::tool("read")), first);
        let second = copy.add(Allowance::arguments("get", json!({"id": 1})));
        assert_ne!(first, second);
        assert_eq!(store.list().len(), 2);
        assert_eq!(store.revoke(first), Some(Allowance::tool("read")));
        assert_eq!(store.revoke(first), None);
        assert_eq!(
            copy.list(),
            [(second, Allowance::arguments("get", json!({"id": 1})))]
        );
        let read_only = ToolAnnotations::new().read_only();
        assert_eq!(
            store.covering("get", &json!({"id": 1}), &read_only),
            Some(second)
        );
        assert_eq!(store.covering("get", &json!({"id": 2}), &read_only), None);
    }

    #[test]
    fn only_an_allowance_that_could_cover_the_tool_asked_about_is_remembered() {
        let store = Allowances::new();
        let read_only = ToolAnnotations::new().read_only();
        assert!(
            store
                .remember(Allowance::tool("other"), "read", &read_only)
                .is_none()
        );
        assert!(
            store
                .remember(Allowance::tool("write"), "write", &ToolAnnotations::new())
                .is_none()
        );
        assert!(store.is_empty());
        assert!(
            store
                .remember(Allowance::tool("read"), "read", &read_only)
                .is_some()
        );
    }

    #[test]
    fn a_prefix_offered_from_a_request_has_only_literal_words() {
        let request = |command: &str| ApprovalRequest::new("c", "shell", shell(command));
        assert_eq!(
            Allowance::prefix_of(&request("cargo test -p rho"), "command", 2),
            Some(Allowance::command_prefix(
                "shell",
                "command",
                ["cargo", "test"]
            ))
        );
        assert_eq!(
            Allowance::prefix_of(&request("ls *.rs"), "command", 2),
            None
        );
        assert_eq!(
            Allowance::prefix_of(&request("ls *.rs"), "command", 1).map(|a| a.to_string()),
            Some("calls of `shell` running `ls …`".to_owned())
        );
        assert_eq!(Allowance::prefix_of(&request("ls; rm"), "command", 1), None);
        assert_eq!(Allowance::prefix_of(&request("ls"), "command", 2), None);
        assert_eq!(Allowance::prefix_of(&request("ls"), "command", 0), None);
    }

    #[test]
    fn an_allowance_reads_and_writes_as_json() {
        let allowance = Allowance::command_prefix("shell", "command", ["git", "status"]);
        let written = serde_json::to_value(&allowance).expect("json");
        assert_eq!(
            written,
            json!({"tool": "shell", "scope": "command_prefix", "argument": "command", "words": ["git", "status"]})
        );
        let read: Allowance = serde_json::from_value(written).expect("read back");
        assert_eq!(read, allowance);
    }
}
