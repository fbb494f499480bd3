//! An [`AnnotationGate`] written as data: [`GateConfig`], read with serde
//! from a file a person writes (the proxy's policy file, say).

use std::fmt;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;

use super::AnnotationGate;
use super::rules::{Match, Rule, ToolGlob};
use crate::gate::Verdict;

/// An [`AnnotationGate`] as a person writes it in a file: rules in order,
/// the first that matches a call decides it, and `default` decides the
/// rest. Read it with serde in any format; in TOML:
///
/// ```toml
/// default = "ask"          # allow | deny | ask (when left out: ask)
/// believe_hints = true     # read untrusted tools' annotations as they state them
///
/// [[rule]]
/// tool = ["read_*", "list_*", "search_files"]   # names or globs (see `ToolGlob`)
/// action = "allow"
///
/// [[rule]]
/// tool = "delete_*"
/// action = "deny"
/// reason = "nothing is deleted from this machine"   # shown to the model
///
/// [[rule]]
/// annotation = "destructive"   # read_only | destructive | idempotent | open_world
/// action = "ask"
/// ```
///
/// A rule has a `tool` test ([`Match::Glob`]), an `annotation` test
/// ([`Match::ReadOnly`], [`Match::Destructive`], [`Match::Idempotent`],
/// [`Match::OpenWorld`]) or both (then both must hold), an `action` (its
/// [`Verdict`], without its reason), and optionally a `reason` in words
/// ([`Rule::because`]). Rules keep their order, so a rule's number among
/// the gate's ([`DecidedBy::Rule`](super::DecidedBy::Rule)) is its place
/// in the file, from 1.
///
/// `default` is both steps after the rules
/// ([`read_only_tools`](AnnotationGate::read_only_tools) and
/// [`otherwise`](AnnotationGate::otherwise)): a file says in a rule what
/// read-only tools get, rather than rely on a step it does not show.
/// `believe_hints` is
/// [`believe_untrusted_hints`](AnnotationGate::believe_untrusted_hints)
/// (default `false`). No approver comes from a file: set it on the runner
/// ([`Runner::with_approver`](crate::Runner::with_approver)).
///
/// An unknown key, a misspelt action or annotation, a pattern that is not
/// a glob, a rule without `action` or that tests nothing: each is an error
/// of the format's deserializer, which says where (TOML's and JSON's name
/// the line and column).
///
/// ```
/// use rho::gate::GateConfig;
/// use rho::{AnnotationGate, ToolAnnotations};
///
/// let config: GateConfig = toml::from_str(
///     r#"
///     default = "deny"
///
///     [[rule]]
///     tool = ["read_*", "echo"]
///     action = "allow"
///
///     [[rule]]
///     annotation = "destructive"
///     action = "ask"
///     reason = "it may overwrite files"
///     "#,
/// )
/// .expect("a valid configuration");
/// let gate = AnnotationGate::from(config);
/// let plain = ToolAnnotations::new().destructive(false);
/// let (plain, unknown) = (&plain, &ToolAnnotations::new());
/// let verdict = |tool, hints| gate.verdict_for(tool, hints, false).to_string();
/// assert_eq!(verdict("read_file", plain), "allow");
/// assert_eq!(verdict("write_file", unknown), "ask: it may overwrite files");
/// assert_eq!(verdict("touch", plain), "deny: the approval policy denies it: no rule allows it");
///
/// let mistake = toml::from_str::<GateConfig>("[[rule]]\ntool = \"rm\"\naction = \"nope\"\n")
///     .expect_err("no such action");
/// assert!(mistake.to_string().contains("line 3, column 10"), "{mistake}");
/// assert!(mistake.to_string().contains("unknown variant `nope`"), "{mistake}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    #[serde(default = "ask")]
    default: Word,
    #[serde(default)]
    believe_hints: bool,
    #[serde(default, rename = "rule", deserialize_with = "rules")]
    rules: Vec<Rule>,
}

/// A file that leaves `default` out asks about everything no rule decides.
fn ask() -> Word {
    Word::Ask
}

/// A verdict as a configuration writes it: its word, the reason apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Word {
    Allow,
    Ask,
    Deny,
}

impl Word {
    /// The verdict, with no reason of its own (the gate words one).
    fn verdict(self) -> Verdict {
        match self {
            Word::Allow => Verdict::Allow,
            Word::Ask => Verdict::ask(""),
            Word::Deny => Verdict::deny(""),
        }
    }
}

impl From<GateConfig> for AnnotationGate {
    fn from(config: GateConfig) -> Self {
        let gate = AnnotationGate::new()
            .read_only_tools(config.default.verdict())
            .otherwise(config.default.verdict())
            .believe_untrusted_hints(config.believe_hints);
        config.rules.into_iter().fold(gate, AnnotationGate::rule)
    }
}

/// The `rule` list, with an error that says how a list of rules is
/// written.
fn rules<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Rule>, D::Error> {
    struct Rules;

    impl<'de> serde::de::Visitor<'de> for Rules {
        type Value = Vec<Rule>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of rules (in TOML, each a [[rule]] table)")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<Rule>, A::Error> {
            let mut rules = Vec::new();
            while let Some(rule) = seq.next_element()? {
                rules.push(rule);
            }
            Ok(rules)
        }
    }

    deserializer.deserialize_seq(Rules)
}

/// A rule as a configuration writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleConfig {
    #[serde(default)]
    tool: Option<ToolGlob>,
    #[serde(default, deserialize_with = "annotation")]
    annotation: Option<Match>,
    action: Word,
    #[serde(default)]
    reason: Option<String>,
}

/// Reads a rule in its configuration form.
///
/// Checked inside the visit of the rule's table, not after it: a format
/// that knows where each value is (TOML) then points at this rule, not at
/// the first of the list.
impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RuleVisitor;

        impl<'de> serde::de::Visitor<'de> for RuleVisitor {
            type Value = Rule;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rule: `tool`, `annotation`, `action` and `reason`")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Rule, A::Error> {
                let config = RuleConfig::deserialize(MapAccessDeserializer::new(map))?;
                let when = match (config.tool, config.annotation) {
                    (Some(tools), Some(hint)) => Match::All(vec![Match::Glob(tools), hint]),
                    (Some(tools), None) => Match::Glob(tools),
                    (None, Some(hint)) => hint,
                    (None, None) => {
                        return Err(serde::de::Error::custom(
                            "this rule tests nothing: give it a `tool`, an `annotation` or both \
                             (what every other call gets is `default`)",
                        ));
                    }
                };
                let rule = Rule::new(when, config.action.verdict());
                Ok(match config.reason {
                    Some(reason) => rule.because(reason),
                    None => rule,
                })
            }
        }

        deserializer.deserialize_map(RuleVisitor)
    }
}

/// The names a configuration gives the hint tests.
const ANNOTATIONS: [&str; 4] = ["read_only", "destructive", "idempotent", "open_world"];

/// `annotation = "read_only"`: one of the hint tests of [`Match`].
fn annotation<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Match>, D::Error> {
    struct Annotation;

    impl serde::de::Visitor<'_> for Annotation {
        type Value = Match;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("one of `read_only`, `destructive`, `idempotent`, `open_world`")
        }

        fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Match, E> {
            match name {
                "read_only" => Ok(Match::ReadOnly),
                "destructive" => Ok(Match::Destructive),
                "idempotent" => Ok(Match::Idempotent),
                "open_world" => Ok(Match::OpenWorld),
                other => Err(E::unknown_variant(other, &ANNOTATIONS)),
            }
        }
    }

    deserializer.deserialize_str(Annotation).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolAnnotations;
    use crate::annotation_gate::DecidedBy;

    fn gate(text: &str) -> AnnotationGate {
        AnnotationGate::from(toml::from_str::<GateConfig>(text).expect("a valid configuration"))
    }

    #[test]
    fn a_rule_becomes_the_tests_it_names() {
        let config: GateConfig = toml::from_str(
            r#"
            believe_hints = true
            [[rule]]
            tool = "fs_*"
            annotation = "destructive"
            action = "deny"
            reason = "not on this disk"
            [[rule]]
            tool = ["a", "b*"]
            action = "allow"
            [[rule]]
            annotation = "open_world"
            action = "ask"
            "#,
        )
        .expect("valid");
        let fs = ToolGlob::new(["fs_*"]).expect("a glob");
        let ab = ToolGlob::new(["a", "b*"]).expect("globs");
        assert_eq!(
            config,
            GateConfig {
                default: Word::Ask,
                believe_hints: true,
                rules: vec![
                    Rule::deny(Match::all([Match::Glob(fs), Match::Destructive]))
                        .because("not on this disk"),
                    Rule::allow(Match::Glob(ab)),
                    Rule::ask(Match::OpenWorld),
                ],
            }
        );
    }

    #[test]
    fn default_decides_every_call_no_rule_matches_read_only_or_not() {
        let gate = gate("default = \"deny\"\nbelieve_hints = true\n");
        let read_only = ToolAnnotations::new().read_only();
        let ruling = gate.ruling("ls", &read_only, true);
        assert_eq!(ruling.verdict().as_str(), "deny");
        assert_eq!(ruling.decided_by(), DecidedBy::ReadOnlyTools);
        assert_eq!(
            gate.verdict_for("rm", &ToolAnnotations::new(), true)
                .as_str(),
            "deny"
        );

        let empty = self::gate("");
        assert!(empty.rules().is_empty());
        assert!(!empty.believes_untrusted_hints());
        assert_eq!(
            empty.verdict_for("ls", &read_only, false).as_str(),
            "ask",
            "a file that says nothing asks"
        );
    }

    #[test]
    fn rules_keep_the_files_order_and_number() {
        let gate = gate(
            "[[rule]]\ntool = \"x\"\naction = \"deny\"\n\
             [[rule]]\ntool = \"x*\"\naction = \"allow\"\n",
        );
        let ruling = gate.ruling("xy", &ToolAnnotations::new(), true);
        assert_eq!(ruling.verdict().as_str(), "allow");
        let DecidedBy::Rule { number, rule } = ruling.decided_by() else {
            panic!("a rule decides: {ruling:?}");
        };
        assert_eq!((number, rule), (2, &gate.rules()[1]));
    }

    #[test]
    fn mistakes_are_errors_at_their_place() {
        let cases = [
            (
                "default = \"maybe\"",
                "line 1, column 11",
                "unknown variant `maybe`",
            ),
            (
                "defualt = \"allow\"",
                "line 1, column 1",
                "unknown field `defualt`",
            ),
            (
                "[[rule]]\ntool = \"x\"",
                "line 1, column 1",
                "missing field `action`",
            ),
            (
                "[[rule]]\ntool = \"x\"\naction = \"allow\"\n\n[[rule]]\naction = \"deny\"",
                "line 5, column 1",
                "this rule tests nothing",
            ),
            (
                "[[rule]]\ntool = [\"ok\", \"read_[\"]\naction = \"allow\"",
                "line 2, column 15",
                "`read_[` is not a tool-name glob",
            ),
            (
                "[[rule]]\nannotation = \"readonly\"\naction = \"allow\"",
                "line 2, column 14",
                "unknown variant `readonly`, expected one of `read_only`, `destructive`, \
                 `idempotent`, `open_world`",
            ),
            ("rule = 1", "line 1, column 8", "expected a list of rules"),
        ];
        for (text, place, message) in cases {
            let error = toml::from_str::<GateConfig>(text)
                .expect_err(text)
                .to_string();
            assert!(error.contains(place), "{text:?}: {error}");
            assert!(error.contains(message), "{text:?}: {error}");
        }
    }

    #[test]
    fn any_serde_format_will_do() {
        let config: GateConfig = serde_json::from_str(
            r#"{ "default": "allow", "rule": [ { "tool": "rm", "action": "deny" } ] }"#,
        )
        .expect("valid JSON");
        let gate = AnnotationGate::from(config);
        assert_eq!(
            gate.verdict_for("rm", &ToolAnnotations::new(), false)
                .as_str(),
            "deny"
        );
        assert_eq!(
            gate.verdict_for("ls", &ToolAnnotations::new(), false)
                .as_str(),
            "allow"
        );
        let error =
            serde_json::from_str::<GateConfig>(r#"{ "rule": [ {} ] }"#).expect_err("no action");
        // The rule's closing brace: where JSON found it incomplete.
        assert_eq!((error.line(), error.column()), (1, 14), "{error}");
        assert!(
            error.to_string().contains("missing field `action`"),
            "{error}"
        );
    }
}
