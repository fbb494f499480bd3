//! The proxy's policy: which calls run, which are refused, and which a
//! person is asked about; the file's format is in the proxy module's docs.

use std::fmt;
use std::path::Path;

use rho_tool_core::ToolAnnotations;

use super::glob::Glob;

/// What the policy does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Run it.
    Allow,
    /// Refuse it; the model gets an error result naming the rule.
    Deny,
    /// Ask the person at the client (MCP elicitation); refuse it when the
    /// client cannot be asked.
    Ask,
}

impl Action {
    /// `"allow"`, `"deny"` or `"ask"`, as the file and the audit log say.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::Ask => "ask",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Action::Allow),
            "deny" => Some(Action::Deny),
            "ask" => Some(Action::Ask),
            _ => None,
        }
    }
}

/// A behaviour hint a rule can test (MCP's tool annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hint {
    /// `readOnlyHint`: the tool leaves its environment unchanged.
    ReadOnly,
    /// `destructiveHint`: it may destroy or overwrite what is there.
    Destructive,
    /// `idempotentHint`: calling it again has no further effect.
    Idempotent,
    /// `openWorldHint`: it reaches outside entities (the web, say).
    OpenWorld,
}

impl Hint {
    /// The name the file uses: `read_only`, `destructive`, `idempotent`,
    /// `open_world`.
    pub fn as_str(self) -> &'static str {
        match self {
            Hint::ReadOnly => "read_only",
            Hint::Destructive => "destructive",
            Hint::Idempotent => "idempotent",
            Hint::OpenWorld => "open_world",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [
            Hint::ReadOnly,
            Hint::Destructive,
            Hint::Idempotent,
            Hint::OpenWorld,
        ]
        .into_iter()
        .find(|hint| hint.as_str() == text)
    }

    /// Whether a tool with `annotations` has this trait, read with MCP's
    /// defaults.
    fn holds(self, annotations: &ToolAnnotations) -> bool {
        match self {
            Hint::ReadOnly => annotations.is_read_only(),
            Hint::Destructive => annotations.is_destructive(),
            Hint::Idempotent => annotations.is_idempotent(),
            Hint::OpenWorld => annotations.is_open_world(),
        }
    }
}

/// One rule of a [`Policy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    number: usize,
    tools: Vec<Glob>,
    annotation: Option<Hint>,
    action: Action,
    reason: Option<String>,
}

impl PolicyRule {
    /// Its number: its place in the file, from 1.
    pub fn number(&self) -> usize {
        self.number
    }

    /// What it does with the calls it matches.
    pub fn action(&self) -> Action {
        self.action
    }

    /// Why, in the file's words, if it says.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    fn matches(&self, tool: &str, hints: &ToolAnnotations) -> bool {
        (self.tools.is_empty() || self.tools.iter().any(|glob| glob.matches(tool)))
            && self.annotation.is_none_or(|hint| hint.holds(hints))
    }
}

/// `rule 2 (tool "delete_*")`, `rule 3 (annotation destructive)`.
impl fmt::Display for PolicyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule {} (", self.number)?;
        if !self.tools.is_empty() {
            f.write_str("tool ")?;
            for (i, glob) in self.tools.iter().enumerate() {
                if i > 0 {
                    f.write_str(" or ")?;
                }
                write!(f, "{glob}")?;
            }
            if self.annotation.is_some() {
                f.write_str(" and ")?;
            }
        }
        if let Some(hint) = self.annotation {
            write!(f, "annotation {}", hint.as_str())?;
        }
        f.write_str(")")
    }
}

/// The proxy's policy: rules in order, first match wins, then a default.
///
/// Made from a file ([`Policy::load`]) or its text ([`Policy::from_toml`];
/// the format is in the [proxy module docs](super)), or [`Policy::allow_all`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<PolicyRule>,
    default: Action,
    believe_hints: bool,
}

/// What the policy decided about a call, and which rule said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ruling<'a> {
    /// What to do.
    pub action: Action,
    /// The rule that matched; `None` for the default.
    pub rule: Option<&'a PolicyRule>,
}

impl Ruling<'_> {
    /// Which rule decided, in words: `rule 2 (tool "delete_*")`, or `the
    /// default`.
    pub fn because(&self) -> String {
        match self.rule {
            Some(rule) => rule.to_string(),
            None => "the default".to_owned(),
        }
    }
}

impl Policy {
    /// No rules; every call runs.
    pub fn allow_all() -> Self {
        Self {
            rules: Vec::new(),
            default: Action::Allow,
            believe_hints: false,
        }
    }

    /// The policy in the TOML file at `path`.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] naming the file, and the line and column or the
    /// rule that is wrong.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|error| PolicyError {
            message: format!("cannot read the policy file {}: {error}", path.display()),
        })?;
        Self::from_toml(&text).map_err(|error| PolicyError {
            message: format!("the policy file {}: {}", path.display(), error.message),
        })
    }

    /// The policy written in `text` (TOML).
    ///
    /// # Errors
    ///
    /// [`PolicyError`] saying where and what is wrong: a TOML syntax error
    /// with its line and column, an unknown key, an unknown action or
    /// annotation, a rule that tests nothing.
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        let table: toml::Table = text.parse().map_err(|error: toml::de::Error| PolicyError {
            message: error.to_string().trim_end().to_owned(),
        })?;
        let mut policy = Self {
            rules: Vec::new(),
            default: Action::Ask,
            believe_hints: false,
        };
        for (key, value) in &table {
            match key.as_str() {
                "default" => policy.default = action(value, "`default`")?,
                "believe_hints" => {
                    policy.believe_hints = value
                        .as_bool()
                        .ok_or_else(|| PolicyError::new("`believe_hints` must be true or false"))?;
                }
                "rule" => {
                    let rules = value.as_array().ok_or_else(|| {
                        PolicyError::new("`rule` must be a list of tables: write each as [[rule]]")
                    })?;
                    for (index, rule) in rules.iter().enumerate() {
                        policy.rules.push(parse_rule(index + 1, rule)?);
                    }
                }
                other => {
                    return Err(PolicyError::new(format!(
                        "unknown key `{other}` (a policy has `default`, `believe_hints` and \
                         [[rule]] tables)"
                    )));
                }
            }
        }
        Ok(policy)
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    /// What calls no rule matches get.
    pub fn default_action(&self) -> Action {
        self.default
    }

    /// Whether the server's annotations are read as stated (else as
    /// absent: MCP's cautious defaults).
    pub fn believes_hints(&self) -> bool {
        self.believe_hints
    }

    /// What the policy does with a call of `tool`, which the server
    /// describes with `annotations`.
    pub fn decide(&self, tool: &str, annotations: &ToolAnnotations) -> Ruling<'_> {
        let unknown = ToolAnnotations::default();
        let hints = if self.believe_hints {
            annotations
        } else {
            &unknown
        };
        match self.rules.iter().find(|rule| rule.matches(tool, hints)) {
            Some(rule) => Ruling {
                action: rule.action,
                rule: Some(rule),
            },
            None => Ruling {
                action: self.default,
                rule: None,
            },
        }
    }
}

/// A value as the error texts quote it.
fn shown(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => format!("{text:?}"),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(x) => x.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(_) => "a date".to_owned(),
        toml::Value::Array(_) => "a list".to_owned(),
        toml::Value::Table(_) => "a table".to_owned(),
    }
}

fn action(value: &toml::Value, what: &str) -> Result<Action, PolicyError> {
    value.as_str().and_then(Action::parse).ok_or_else(|| {
        PolicyError::new(format!(
            "{what} must be \"allow\", \"deny\" or \"ask\", not {}",
            shown(value)
        ))
    })
}

fn parse_rule(number: usize, value: &toml::Value) -> Result<PolicyRule, PolicyError> {
    let at = |message: String| PolicyError::new(format!("rule {number}: {message}"));
    let table = value
        .as_table()
        .ok_or_else(|| at("must be a table ([[rule]])".to_owned()))?;
    let mut rule = PolicyRule {
        number,
        tools: Vec::new(),
        annotation: None,
        action: Action::Ask,
        reason: None,
    };
    let mut has_action = false;
    for (key, value) in table {
        match key.as_str() {
            "tool" => {
                let names: Vec<&toml::Value> = match value {
                    toml::Value::Array(names) => names.iter().collect(),
                    one => vec![one],
                };
                for name in names {
                    match name.as_str() {
                        Some(name) if !name.is_empty() => rule.tools.push(Glob::new(name)),
                        _ => {
                            return Err(at(format!(
                                "`tool` must be a name or a list of names (globs with * and ? \
                                 allowed), not {}",
                                shown(value)
                            )));
                        }
                    }
                }
                if rule.tools.is_empty() {
                    return Err(at("`tool` is an empty list".to_owned()));
                }
            }
            "annotation" => {
                rule.annotation = Some(value.as_str().and_then(Hint::parse).ok_or_else(|| {
                    at(format!(
                        "`annotation` must be \"read_only\", \"destructive\", \"idempotent\" \
                         or \"open_world\", not {}",
                        shown(value)
                    ))
                })?);
            }
            "action" => {
                rule.action = action(value, "`action`").map_err(|error| at(error.message))?;
                has_action = true;
            }
            "reason" => {
                rule.reason = Some(
                    value
                        .as_str()
                        .ok_or_else(|| {
                            at(format!("`reason` must be a string, not {}", shown(value)))
                        })?
                        .to_owned(),
                );
            }
            other => {
                return Err(at(format!(
                    "unknown key `{other}` (a rule has `tool`, `annotation`, `action` and \
                     `reason`)"
                )));
            }
        }
    }
    if !has_action {
        return Err(at(
            "no `action`: say \"allow\", \"deny\" or \"ask\"".to_owned()
        ));
    }
    if rule.tools.is_empty() && rule.annotation.is_none() {
        return Err(at(
            "tests nothing: give it a `tool`, an `annotation` or both (what every \
                       other call gets is `default`)"
                .to_owned(),
        ));
    }
    Ok(rule)
}

/// A policy that cannot be used, and why: where in the file, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    message: String,
}

impl PolicyError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
        default = "deny"
        believe_hints = true

        [[rule]]
        tool = ["read_*", "echo"]
        action = "allow"

        [[rule]]
        tool = "delete_*"
        action = "deny"
        reason = "nothing is deleted here"

        [[rule]]
        annotation = "destructive"
        action = "ask"
    "#;

    #[test]
    fn the_first_matching_rule_decides_then_the_default() {
        let policy = Policy::from_toml(EXAMPLE).expect("valid");
        let plain = ToolAnnotations::new().destructive(false);
        let ruling = policy.decide("read_file", &plain);
        assert_eq!(
            (ruling.action, ruling.rule.map(PolicyRule::number)),
            (Action::Allow, Some(1))
        );
        let ruling = policy.decide("delete_file", &ToolAnnotations::new());
        assert_eq!(ruling.action, Action::Deny);
        assert_eq!(ruling.because(), r#"rule 2 (tool "delete_*")"#);
        assert_eq!(
            ruling.rule.and_then(PolicyRule::reason),
            Some("nothing is deleted here")
        );
        let ruling = policy.decide("write_file", &ToolAnnotations::new());
        assert_eq!(ruling.action, Action::Ask);
        assert_eq!(ruling.because(), "rule 3 (annotation destructive)");
        let ruling = policy.decide("touch", &plain);
        assert_eq!(
            (ruling.action, ruling.because()),
            (Action::Deny, "the default".to_owned())
        );
    }

    #[test]
    fn hints_are_not_believed_unless_the_file_says_so() {
        let policy = Policy::from_toml(
            "default = \"deny\"\n[[rule]]\nannotation = \"read_only\"\naction = \"allow\"\n",
        )
        .expect("valid");
        assert!(!policy.believes_hints());
        let claims = ToolAnnotations::new().read_only();
        assert_eq!(policy.decide("ls", &claims).action, Action::Deny);
        let believing = Policy::from_toml(
            "default = \"deny\"\nbelieve_hints = true\n[[rule]]\nannotation = \"read_only\"\naction = \"allow\"\n",
        )
        .expect("valid");
        assert_eq!(believing.decide("ls", &claims).action, Action::Allow);
    }

    #[test]
    fn a_rule_with_both_tests_needs_both() {
        let policy = Policy::from_toml(
            "default = \"allow\"\nbelieve_hints = true\n[[rule]]\ntool = \"fs_*\"\nannotation = \"destructive\"\naction = \"deny\"\n",
        )
        .expect("valid");
        let destructive = ToolAnnotations::new().destructive(true);
        assert_eq!(policy.decide("fs_rm", &destructive).action, Action::Deny);
        assert_eq!(policy.decide("net_rm", &destructive).action, Action::Allow);
        assert_eq!(
            policy
                .decide("fs_ls", &ToolAnnotations::new().read_only())
                .action,
            Action::Allow
        );
        assert_eq!(
            policy.rules()[0].to_string(),
            r#"rule 1 (tool "fs_*" and annotation destructive)"#
        );
    }

    #[test]
    fn mistakes_are_named_with_where_they_are() {
        let cases = [
            (
                "default = \"maybe\"",
                "`default` must be \"allow\", \"deny\" or \"ask\"",
            ),
            ("defualt = \"allow\"", "unknown key `defualt`"),
            ("[[rule]]\ntool = \"x\"", "rule 1: no `action`"),
            ("[[rule]]\naction = \"deny\"", "rule 1: tests nothing"),
            (
                "[[rule]]\ntool = \"x\"\naction = \"allow\"\n[[rule]]\ntool = \"y\"\naction = \"nope\"",
                "rule 2: `action` must be",
            ),
            (
                "[[rule]]\nannotation = \"readonly\"\naction = \"allow\"",
                "`annotation` must be",
            ),
            (
                "[[rule]]\ntool = 3\naction = \"allow\"",
                "`tool` must be a name",
            ),
            (
                "[[rule]]\ntool = []\naction = \"allow\"",
                "`tool` is an empty list",
            ),
            (
                "[[rule]]\ntool = \"x\"\naction = \"allow\"\nwhen = 1",
                "unknown key `when`",
            ),
            ("rule = 1", "`rule` must be a list of tables"),
            (
                "believe_hints = \"yes\"",
                "`believe_hints` must be true or false",
            ),
            ("default = \"allow\"\n[[rule]\n", "line 2"),
        ];
        for (text, expected) in cases {
            let error = Policy::from_toml(text).expect_err(text).to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn an_empty_file_asks_about_everything() {
        let policy = Policy::from_toml("").expect("valid");
        assert_eq!(policy.default_action(), Action::Ask);
        assert!(policy.rules().is_empty());
    }
}
