//! The rules of an [`AnnotationGate`](super::AnnotationGate): which calls
//! a rule applies to ([`Match`], with tool-name globs in [`ToolGlob`]),
//! and the rule itself ([`Rule`]), whose answer is a [`Verdict`].

use std::fmt;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::annotations::ToolAnnotations;
use crate::gate::Verdict;

/// Which calls a [`Rule`] applies to: a test of the tool's name, its trust
/// and its [`ToolAnnotations`] (read with MCP's defaults).
///
/// The four hint tests read an untrusted tool's hints as absent, unless the
/// gate believes such hints
/// ([`AnnotationGate::believe_untrusted_hints`](super::AnnotationGate::believe_untrusted_hints)):
/// an untrusted tool then counts as not read-only, destructive, not
/// idempotent and open world, whatever it claims.
///
/// `!m` negates a test; [`Match::all`] needs every test to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Match {
    /// Every call.
    Always,
    /// Tools that leave their environment unchanged.
    ReadOnly,
    /// Tools that may destroy or overwrite what is there.
    Destructive,
    /// Tools whose repeated calls have no further effect.
    Idempotent,
    /// Tools that reach an open world of outside entities.
    OpenWorld,
    /// The tool of this name (exactly).
    Tool(String),
    /// Tools whose name one of the globs matches.
    Glob(ToolGlob),
    /// Tools whose code the host did not write
    /// ([`Tool::is_untrusted`](crate::Tool::is_untrusted)).
    Untrusted,
    /// Calls the inner test does not match.
    Not(Box<Match>),
    /// Calls that every inner test matches (every call, when there are
    /// none).
    All(Vec<Match>),
}

impl Match {
    /// The tool named `name`.
    pub fn tool(name: impl Into<String>) -> Self {
        Self::Tool(name.into())
    }

    /// Tools whose name the glob `pattern` matches (see [`ToolGlob`] for
    /// the syntax): `Match::glob("read_*")`.
    ///
    /// # Errors
    ///
    /// [`GlobError`] when `pattern` is not a glob ([`ToolGlob::new`]).
    pub fn glob(pattern: impl Into<String>) -> Result<Self, GlobError> {
        ToolGlob::new([pattern]).map(Self::Glob)
    }

    /// Calls that every one of `tests` matches.
    pub fn all(tests: impl IntoIterator<Item = Match>) -> Self {
        Self::All(tests.into_iter().collect())
    }

    /// Whether the tool named `name`, with `hints`, matches; `untrusted`
    /// says its code is not the host's, and then its hints are read as
    /// absent (MCP's cautious defaults), as the gate reads them unless told
    /// to believe them. For a host that picks tools by the gate's tests
    /// outside the gate (which tools run as MCP tasks, say).
    pub fn matches_tool(&self, name: &str, hints: &ToolAnnotations, untrusted: bool) -> bool {
        let absent = ToolAnnotations::new();
        self.matches(&Facts {
            name,
            hints: if untrusted { &absent } else { hints },
            untrusted,
        })
    }

    /// Whether a call of `tool` matches; its hints are as the gate reads
    /// them (already cleared for an untrusted tool that is not believed).
    pub(super) fn matches(&self, tool: &Facts<'_>) -> bool {
        match self {
            Match::Always => true,
            Match::ReadOnly => tool.hints.is_read_only(),
            Match::Destructive => tool.hints.is_destructive(),
            Match::Idempotent => tool.hints.is_idempotent(),
            Match::OpenWorld => tool.hints.is_open_world(),
            Match::Tool(name) => name == tool.name,
            Match::Glob(glob) => glob.matches(tool.name),
            Match::Untrusted => tool.untrusted,
            Match::Not(inner) => !inner.matches(tool),
            Match::All(tests) => tests.iter().all(|test| test.matches(tool)),
        }
    }
}

impl std::ops::Not for Match {
    type Output = Match;

    /// The calls this test does not match.
    fn not(self) -> Match {
        Match::Not(Box::new(self))
    }
}

/// In words, as denial texts and approval requests name it: "destructive
/// tools", "tool `rm`", "tool `read_*` or `list_*`", "anything but
/// read-only tools".
impl fmt::Display for Match {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Match::Always => f.write_str("every tool"),
            Match::ReadOnly => f.write_str("read-only tools"),
            Match::Destructive => f.write_str("destructive tools"),
            Match::Idempotent => f.write_str("idempotent tools"),
            Match::OpenWorld => f.write_str("open-world tools"),
            Match::Tool(name) => write!(f, "tool `{name}`"),
            Match::Glob(glob) => write!(f, "tool {glob}"),
            Match::Untrusted => f.write_str("untrusted tools"),
            Match::Not(inner) => write!(f, "anything but {inner}"),
            Match::All(tests) if tests.is_empty() => f.write_str("every tool"),
            Match::All(tests) => {
                f.write_str("(")?;
                for (i, test) in tests.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" that are also ")?;
                    }
                    write!(f, "{test}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Tool names by pattern: one or more globs, and a name matches when any
/// of them matches it whole.
///
/// A glob is written in the `globset` crate's syntax, with `/` an
/// ordinary character:
///
/// - `*` stands for any run of characters, none included;
/// - `?` for any one byte (one character in the ASCII names MCP asks
///   tools to have);
/// - `[abc]`, `[a-z]` and `[!abc]` for one character of a set, or not of
///   it;
/// - `{read,list}_*` for any of the alternatives;
/// - `\` makes the next character plain (`\*` is a star).
///
/// A name with none of these matches only itself. Matching takes time
/// linear in the name whatever the pattern: the globs are compiled once,
/// into one automaton.
///
/// ```
/// use rho::gate::ToolGlob;
///
/// let files = ToolGlob::new(["read_*", "list_?", "{get,put}_file"]).unwrap();
/// assert!(files.matches("read_file"));
/// assert!(files.matches("list_a"));
/// assert!(files.matches("put_file"));
/// assert!(!files.matches("delete_file"));
/// assert!(ToolGlob::new(["read_["]).is_err());
/// ```
#[derive(Clone)]
pub struct ToolGlob {
    patterns: Vec<String>,
    set: GlobSet,
}

impl ToolGlob {
    /// Names that any of `patterns` matches.
    ///
    /// # Errors
    ///
    /// [`GlobError`] when a pattern is empty or not a glob (an unclosed
    /// `[` or `{`, a dangling `\`), or when there is no pattern.
    pub fn new<I>(patterns: I) -> Result<Self, GlobError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let patterns: Vec<String> = patterns.into_iter().map(Into::into).collect();
        let globs = patterns
            .iter()
            .map(|pattern| compile(pattern))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_globs(patterns, globs)
    }

    /// The set of `globs`, compiled from `patterns`.
    fn from_globs(patterns: Vec<String>, globs: Vec<globset::Glob>) -> Result<Self, GlobError> {
        if globs.is_empty() {
            return Err(GlobError::new(
                "an empty list of tools: name at least one tool or glob",
            ));
        }
        let mut set = GlobSetBuilder::new();
        for glob in globs {
            set.add(glob);
        }
        // Only a set too large for the regex engine's limits fails here.
        let set = set.build().map_err(|error| {
            GlobError::new(format!("the tool globs cannot be compiled: {error}"))
        })?;
        Ok(Self { patterns, set })
    }

    /// Whether `name` matches one of the globs, whole.
    pub fn matches(&self, name: &str) -> bool {
        self.set.is_match(name)
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// One pattern compiled, or why it is not a glob.
fn compile(pattern: &str) -> Result<globset::Glob, GlobError> {
    if pattern.is_empty() {
        // It would match only the empty name, which no tool has: a slip.
        return Err(GlobError::new("an empty tool name matches no tool"));
    }
    GlobBuilder::new(pattern)
        // Tool names are not paths: `*` runs over a `/` too.
        .literal_separator(false)
        // Said, so that `\` escapes on every platform alike.
        .backslash_escape(true)
        .build()
        .map_err(|error| {
            GlobError::new(format!(
                "`{pattern}` is not a tool-name glob: {}",
                error.kind()
            ))
        })
}

/// Two are equal when their patterns are, in order.
impl PartialEq for ToolGlob {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns
    }
}

impl Eq for ToolGlob {}

impl fmt::Debug for ToolGlob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ToolGlob").field(&self.patterns).finish()
    }
}

/// The patterns quoted, joined by "or": "`read_*` or `list_*`".
impl fmt::Display for ToolGlob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, pattern) in self.patterns.iter().enumerate() {
            if i > 0 {
                f.write_str(" or ")?;
            }
            write!(f, "`{pattern}`")?;
        }
        Ok(())
    }
}

/// Read from a name or a list of names: `"read_*"` or `["read_*", "echo"]`.
/// A pattern that is not a glob is an error at that pattern.
impl<'de> Deserialize<'de> for ToolGlob {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ToolGlobVisitor)
    }
}

struct ToolGlobVisitor;

impl<'de> serde::de::Visitor<'de> for ToolGlobVisitor {
    type Value = ToolGlob;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool name or a list of tool names (globs allowed)")
    }

    fn visit_str<E: serde::de::Error>(self, pattern: &str) -> Result<ToolGlob, E> {
        let glob = compile(pattern).map_err(E::custom)?;
        ToolGlob::from_globs(vec![pattern.to_owned()], vec![glob]).map_err(E::custom)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<ToolGlob, A::Error> {
        let (mut patterns, mut globs) = (Vec::new(), Vec::new());
        while let Some(Pattern(pattern, glob)) = seq.next_element()? {
            patterns.push(pattern);
            globs.push(glob);
        }
        ToolGlob::from_globs(patterns, globs).map_err(serde::de::Error::custom)
    }
}

/// One pattern of a list, checked as it is read, so that a format that
/// knows where each value is (TOML) points at the wrong one.
struct Pattern(String, globset::Glob);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PatternVisitor;

        impl serde::de::Visitor<'_> for PatternVisitor {
            type Value = Pattern;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool name (globs allowed)")
            }

            fn visit_str<E: serde::de::Error>(self, pattern: &str) -> Result<Pattern, E> {
                let glob = compile(pattern).map_err(E::custom)?;
                Ok(Pattern(pattern.to_owned(), glob))
            }
        }

        deserializer.deserialize_str(PatternVisitor)
    }
}

/// A tool-name pattern that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct GlobError {
    message: String,
}

impl GlobError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// One rule of an [`AnnotationGate`](super::AnnotationGate): calls that
/// `when` matches get its [`Verdict`].
///
/// ```
/// use rho::gate::{Match, Rule, Verdict};
///
/// let rule = Rule::deny(Match::tool("drop_table")).because("the database is read-only today");
/// assert_eq!(rule.verdict(), &Verdict::deny("the database is read-only today"));
/// assert_eq!(rule.reason(), Some("the database is read-only today"));
/// ```
///
/// A [`GateConfig`](super::GateConfig) writes a rule as data (`tool`,
/// `annotation`, `action`, `reason`), and a rule deserializes from that
/// form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    when: Match,
    /// An ask's or a denial's reason is the rule's own (`because`); empty
    /// until it says one, and the gate then names the test.
    verdict: Verdict,
}

impl Rule {
    /// Calls that `when` matches get `verdict`. The reason of an ask or a
    /// denial is the rule's reason; an empty one lets the gate name the
    /// rule's test instead.
    pub fn new(when: Match, verdict: Verdict) -> Self {
        Self { when, verdict }
    }

    /// Calls that `when` matches run without asking.
    pub fn allow(when: Match) -> Self {
        Self::new(when, Verdict::Allow)
    }

    /// Calls that `when` matches are asked about.
    pub fn ask(when: Match) -> Self {
        Self::new(when, Verdict::ask(""))
    }

    /// Calls that `when` matches are denied.
    pub fn deny(when: Match) -> Self {
        Self::new(when, Verdict::deny(""))
    }

    /// Says why, in words for the model and the approver: a denial's text,
    /// or the reason an approval request gives. Without it, the rule's test
    /// is named ("destructive tools"). An allow has no reason to give: it
    /// is kept nowhere.
    #[must_use]
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        match &mut self.verdict {
            Verdict::Allow | Verdict::Remember(_) => {}
            Verdict::Ask { reason: slot } | Verdict::Deny { reason: slot } => {
                *slot = reason.into();
            }
        }
        self
    }

    /// Which calls the rule applies to.
    pub fn when(&self) -> &Match {
        &self.when
    }

    /// What it decides about them, with the rule's own reason (empty when
    /// it gave none).
    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }

    /// Why, when the rule says so itself.
    pub fn reason(&self) -> Option<&str> {
        self.verdict.reason().filter(|reason| !reason.is_empty())
    }
}

/// What the rules test of one call's tool.
pub(super) struct Facts<'a> {
    pub(super) name: &'a str,
    pub(super) hints: &'a ToolAnnotations,
    pub(super) untrusted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `test` matches a trusted tool named `name` without hints.
    fn matches(test: &Match, name: &str) -> bool {
        let hints = ToolAnnotations::new();
        test.matches(&Facts {
            name,
            hints: &hints,
            untrusted: false,
        })
    }

    #[test]
    fn tests_name_themselves_in_words() {
        assert_eq!(Match::Always.to_string(), "every tool");
        assert_eq!(Match::tool("rm").to_string(), "tool `rm`");
        assert_eq!(
            (!Match::ReadOnly).to_string(),
            "anything but read-only tools"
        );
        assert_eq!(
            Match::all([Match::Idempotent, Match::Untrusted]).to_string(),
            "(idempotent tools that are also untrusted tools)"
        );
        assert_eq!(Match::all([]).to_string(), "every tool");
        assert!(matches(&Match::all([]), "x"));
        assert_eq!(Match::OpenWorld.to_string(), "open-world tools");
        assert_eq!(Match::Destructive.to_string(), "destructive tools");
        let files = ToolGlob::new(["read_*", "list_*"]).expect("globs");
        assert_eq!(Match::Glob(files).to_string(), "tool `read_*` or `list_*`");
    }

    /// Outside the gate a tool is tested as the gate tests it: an
    /// untrusted tool's hints count for nothing.
    #[test]
    fn a_tool_is_matched_with_an_untrusted_tools_hints_read_as_absent() {
        let read_only = ToolAnnotations::new().read_only();
        assert!(Match::ReadOnly.matches_tool("cat", &read_only, false));
        assert!(!Match::ReadOnly.matches_tool("cat", &read_only, true));
        assert!(Match::Untrusted.matches_tool("cat", &read_only, true));
        assert!(Match::tool("cat").matches_tool("cat", &read_only, true));
    }

    #[test]
    fn exact_names_and_globs() {
        let cases = [
            ("echo", "echo", true),
            ("echo", "echo2", false),
            ("read_*", "read_file", true),
            ("read_*", "read_", true),
            ("read_*", "write_file", false),
            ("*_file", "move_file", true),
            ("*", "", true),
            ("get-?", "get-a", true),
            ("get-?", "get-ab", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("**", "anything", true),
            ("é*", "élan", true),
            // Tool names are not paths: a star runs over a slash.
            ("fs/*", "fs/a/b", true),
            ("{get,put}_*", "put_x", true),
            ("[a-c]at", "bat", true),
            ("[!a-c]at", "bat", false),
            (r"what\?", "what?", true),
            (r"what\?", "whats", false),
        ];
        for (pattern, name, expected) in cases {
            let glob = Match::glob(pattern).expect("a glob");
            assert_eq!(matches(&glob, name), expected, "{pattern} ~ {name}");
        }
    }

    #[test]
    fn many_stars_end() {
        // A backtracking matcher would take years here (the test would
        // never end); an automaton answers at once. No clock is read: the
        // test ending at all is the property.
        let pattern = Match::glob("*a*a*a*a*a*a*a*a*a*a*b").expect("a glob");
        let name = "a".repeat(10_000);
        assert!(!matches(&pattern, &name));
    }

    #[test]
    fn a_list_of_globs_matches_any_of_them() {
        let tools = ToolGlob::new(["read_*", "echo"]).expect("globs");
        assert!(tools.matches("read_file"));
        assert!(tools.matches("echo"));
        assert!(!tools.matches("echo2"));
        assert_eq!(tools.patterns(), ["read_*", "echo"]);
        assert_eq!(tools, ToolGlob::new(["read_*", "echo"]).expect("globs"));
        assert_ne!(tools, ToolGlob::new(["echo", "read_*"]).expect("globs"));
    }

    #[test]
    fn what_is_not_a_glob_is_an_error_saying_why() {
        let cases = [
            (
                "read_[",
                "`read_[` is not a tool-name glob: unclosed character class",
            ),
            (
                "{a,b",
                "`{a,b` is not a tool-name glob: unclosed alternate group",
            ),
            ("a\\", "`a\\` is not a tool-name glob: dangling '\\'"),
            ("", "an empty tool name matches no tool"),
        ];
        for (pattern, expected) in cases {
            let error = Match::glob(pattern).expect_err(pattern).to_string();
            assert!(error.starts_with(expected), "{pattern:?}: {error}");
        }
        let none = ToolGlob::new(Vec::<String>::new()).expect_err("no pattern");
        assert!(
            none.to_string().starts_with("an empty list of tools"),
            "{none}"
        );
    }
}
