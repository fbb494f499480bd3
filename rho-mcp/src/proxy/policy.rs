//! The proxy's policy file: an [`AnnotationGate`] configuration
//! ([`GateConfig`]) read from TOML, the server's confinement
//! ([`Confinement`]) in its `[confinement]` table, and the calls allowed
//! without asking ([`Allowances`]) in its `[allowances]` table; the format
//! is in the proxy module's docs.

use std::path::Path;

use rho_process::confine::Confinement;
use rho_tool_core::annotation_gate::GateConfig;
use rho_tool_core::{Allowance, Allowances, AnnotationGate, DestructiveTools};
use serde::Deserialize;
use toml::de::ValueDeserializer;

/// What a policy file says: the gate every call goes through, the calls
/// its `ask`s are answered for in advance, and, if it has a
/// `[confinement]` table, what the server's process may do.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The gate the file configures.
    pub gate: AnnotationGate,
    /// The server's confinement (a stdio server only).
    pub confinement: Option<Confinement>,
    /// The calls allowed without asking where the gate would ask (empty
    /// without an `[allowances]` table).
    pub allowances: Allowances,
}

/// The `[allowances]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowancesTable {
    #[serde(default)]
    destructive_tools: DestructiveTools,
    #[serde(default)]
    allow: Vec<Allowance>,
}

impl AllowancesTable {
    /// A store holding the table's allowances, numbered in its order.
    fn into_allowances(self) -> Allowances {
        let allowances = Allowances::new().destructive_tools(self.destructive_tools);
        for allowance in self.allow {
            allowances.add(allowance);
        }
        allowances
    }
}

/// The policy in the TOML file at `path`.
///
/// # Errors
///
/// [`PolicyError`] naming the file, and the line and column of what is
/// wrong with the line quoted.
pub fn load_policy(path: &Path) -> Result<Policy, PolicyError> {
    let text = std::fs::read_to_string(path).map_err(|error| PolicyError {
        message: format!("cannot read the policy file {}: {error}", path.display()),
    })?;
    policy_from_toml(&text).map_err(|error| PolicyError {
        message: format!("the policy file {}: {}", path.display(), error.message),
    })
}

/// The policy written in `text` (TOML).
///
/// The `[confinement]` table is taken out of the document first, then the
/// rest is read as the gate's configuration: both keep their places in
/// the file, so an error in either says where it is.
///
/// # Errors
///
/// [`PolicyError`] saying where (line and column, the line quoted) and
/// what is wrong: a TOML syntax error, an unknown key, an unknown action
/// or annotation, a tool pattern that is not a glob, a rule without an
/// action or that tests nothing, a confinement key that does not exist.
pub fn policy_from_toml(text: &str) -> Result<Policy, PolicyError> {
    let located = |mut error: toml::de::Error| {
        error.set_input(Some(text));
        PolicyError {
            // toml's text ends with a line break, which a message to
            // stderr adds itself.
            message: error.to_string().trim_end().to_owned(),
        }
    };
    let mut document = toml::de::DeTable::parse(text).map_err(located)?;
    let mut take = |name: &str| document.get_mut().remove(name).map(ValueDeserializer::from);
    let confinement = take("confinement")
        .map(Confinement::deserialize)
        .transpose()
        .map_err(located)?;
    let allowances = take("allowances")
        .map(AllowancesTable::deserialize)
        .transpose()
        .map_err(located)?
        .map_or_else(Allowances::new, AllowancesTable::into_allowances);
    let config =
        GateConfig::deserialize(toml::de::Deserializer::from(document)).map_err(located)?;
    Ok(Policy {
        gate: AnnotationGate::from(config),
        confinement,
        allowances,
    })
}

/// A policy that cannot be used, and why: where in the file, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    message: String,
}

#[cfg(test)]
mod tests {
    use rho_tool_core::ToolAnnotations;
    use rho_tool_core::annotation_gate::DecidedBy;

    use super::*;
    use crate::proxy::gate::because;

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

    /// The rule that decided, by number, and its reason.
    fn rule(decided_by: DecidedBy<'_>) -> Option<(usize, Option<&str>)> {
        match decided_by {
            DecidedBy::Rule { number, rule } => Some((number, rule.reason())),
            _ => None,
        }
    }

    // The proxy's tools are an imported server's: untrusted, hence the
    // `true` of each ruling below.

    #[test]
    fn the_first_matching_rule_decides_then_the_default() {
        let policy = policy_from_toml(EXAMPLE).expect("valid").gate;
        let plain = ToolAnnotations::new().destructive(false);
        let ruling = policy.ruling("read_file", &plain, true);
        assert_eq!(
            (ruling.verdict().as_str(), rule(ruling.decided_by())),
            ("allow", Some((1, None)))
        );
        let ruling = policy.ruling("delete_file", &ToolAnnotations::new(), true);
        assert_eq!(ruling.verdict().as_str(), "deny");
        assert_eq!(because(&ruling), r#"rule 2 (tool "delete_*")"#);
        assert_eq!(
            rule(ruling.decided_by()),
            Some((2, Some("nothing is deleted here")))
        );
        let ruling = policy.ruling("write_file", &ToolAnnotations::new(), true);
        assert_eq!(ruling.verdict().as_str(), "ask");
        assert_eq!(because(&ruling), "rule 3 (annotation destructive)");
        let ruling = policy.ruling("touch", &plain, true);
        assert_eq!(
            (ruling.verdict().as_str(), because(&ruling)),
            ("deny", "the default".to_owned())
        );
    }

    #[test]
    fn hints_are_not_believed_unless_the_file_says_so() {
        let policy = policy_from_toml(
            "default = \"deny\"\n[[rule]]\nannotation = \"read_only\"\naction = \"allow\"\n",
        )
        .expect("valid")
        .gate;
        assert!(!policy.believes_untrusted_hints());
        let claims = ToolAnnotations::new().read_only();
        assert_eq!(policy.verdict_for("ls", &claims, true).as_str(), "deny");
        let believing = policy_from_toml(
            "default = \"deny\"\nbelieve_hints = true\n[[rule]]\nannotation = \"read_only\"\naction = \"allow\"\n",
        )
        .expect("valid").gate;
        assert_eq!(believing.verdict_for("ls", &claims, true).as_str(), "allow");
    }

    #[test]
    fn a_rule_with_both_tests_needs_both() {
        let policy = policy_from_toml(
            "default = \"allow\"\nbelieve_hints = true\n[[rule]]\ntool = \"fs_*\"\nannotation = \"destructive\"\naction = \"deny\"\n",
        )
        .expect("valid").gate;
        let destructive = ToolAnnotations::new().destructive(true);
        assert_eq!(
            policy.verdict_for("fs_rm", &destructive, true).as_str(),
            "deny"
        );
        assert_eq!(
            policy.verdict_for("net_rm", &destructive, true).as_str(),
            "allow"
        );
        assert_eq!(
            policy
                .verdict_for("fs_ls", &ToolAnnotations::new().read_only(), true)
                .as_str(),
            "allow"
        );
        assert_eq!(
            because(&policy.ruling("fs_rm", &destructive, true)),
            r#"rule 1 (tool "fs_*" and annotation destructive)"#
        );
    }

    #[test]
    fn mistakes_are_named_with_where_they_are() {
        // The text, the line and column toml names, and what it says.
        let cases = [
            (
                "default = \"maybe\"",
                "line 1, column 11",
                "unknown variant `maybe`, expected one of `allow`, `ask`, `deny`",
            ),
            (
                "defualt = \"allow\"",
                "line 1, column 1",
                "unknown field `defualt`, expected one of `default`, `believe_hints`, `rule`",
            ),
            (
                "[[rule]]\ntool = \"x\"",
                "line 1, column 1",
                "missing field `action`",
            ),
            (
                "[[rule]]\naction = \"deny\"",
                "line 1, column 1",
                "this rule tests nothing: give it a `tool`, an `annotation` or both",
            ),
            (
                "[[rule]]\ntool = \"x\"\naction = \"allow\"\n[[rule]]\ntool = \"y\"\naction = \"nope\"",
                "line 6, column 10",
                "unknown variant `nope`, expected one of `allow`, `ask`, `deny`",
            ),
            (
                "[[rule]]\nannotation = \"readonly\"\naction = \"allow\"",
                "line 2, column 14",
                "unknown variant `readonly`, expected one of `read_only`, `destructive`, \
                 `idempotent`, `open_world`",
            ),
            (
                "[[rule]]\ntool = 3\naction = \"allow\"",
                "line 2, column 8",
                "invalid type: integer `3`, expected a tool name or a list of tool names",
            ),
            (
                "[[rule]]\ntool = []\naction = \"allow\"",
                "line 2, column 8",
                "an empty list of tools: name at least one tool or glob",
            ),
            (
                "[[rule]]\ntool = \"x\"\naction = \"allow\"\nwhen = 1",
                "line 4, column 1",
                "unknown field `when`, expected one of `tool`, `annotation`, `action`, `reason`",
            ),
            (
                "rule = 1",
                "line 1, column 8",
                "invalid type: integer `1`, expected a list of rules (in TOML, each a [[rule]] table)",
            ),
            (
                "believe_hints = \"yes\"",
                "line 1, column 17",
                "invalid type: string \"yes\", expected a boolean",
            ),
            (
                "default = \"allow\"\n[[rule]\n",
                "line 2, column 8",
                "unclosed array table",
            ),
            // What the hand-written reader let through or could not say.
            (
                "[[rule]]\ntool = \"read_[\"\naction = \"allow\"",
                "line 2, column 8",
                "`read_[` is not a tool-name glob: unclosed character class",
            ),
            (
                "[[rule]]\ntool = [\"echo\", \"\"]\naction = \"allow\"",
                "line 2, column 17",
                "an empty tool name matches no tool",
            ),
            (
                "[[rule]]\ntool = \"x\"\naction = \"allow\"\n\n[[rule]]\nreason = \"y\"\naction = \"deny\"",
                "line 5, column 1",
                "this rule tests nothing",
            ),
        ];
        for (text, place, expected) in cases {
            let error = policy_from_toml(text).expect_err(text).to_string();
            assert!(
                error.starts_with(&format!("TOML parse error at {place}\n")),
                "{text:?}: {error}"
            );
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn the_confinement_table_configures_the_servers_confinement() {
        let policy = policy_from_toml(
            "default = \"allow\"\n\n[confinement]\nworkspace = \"/srv/project\"\nread = [\"/opt/node\"]\nnetwork = \"loopback\"\n[confinement.limits]\nmemory = 1073741824\ncpu = 30\n",
        )
        .expect("valid");
        let confinement = policy.confinement.expect("a confinement");
        assert_eq!(confinement.workspace(), Some(Path::new("/srv/project")));
        assert_eq!(confinement.read_paths(), [Path::new("/opt/node")]);
        assert_eq!(confinement.network().as_str(), "loopback");
        assert_eq!(confinement.limits().memory, Some(1 << 30));
        assert_eq!(
            confinement.limits().cpu,
            Some(std::time::Duration::from_secs(30))
        );
        // Unset limits keep their defaults.
        assert_eq!(confinement.limits().processes, Some(512));
        assert!(policy_from_toml("").expect("valid").confinement.is_none());

        // A mistake in the table is placed like one in the rules.
        let error = policy_from_toml("default = \"allow\"\n[confinement]\nnetwrok = \"full\"\n")
            .expect_err("an unknown key")
            .to_string();
        assert!(error.contains("line 3, column 1"), "{error}");
        assert!(error.contains("unknown field `netwrok`"), "{error}");
        let error = policy_from_toml(
            "[confinement]\nnetwork = \"some\"\n[[rule]]\ntool = \"x\"\naction = \"nope\"\n",
        )
        .expect_err("two mistakes: the first is told")
        .to_string();
        assert!(error.contains("line 2"), "{error}");
    }

    #[test]
    fn the_confinement_table_allows_hosts_by_name() {
        let policy = policy_from_toml(
            "[confinement]\nhosts = [\"api.github.com\", \"*.githubusercontent.com:443\"]\n[confinement.addresses]\n\"mirror.internal\" = \"10.0.0.5\"\n",
        )
        .expect("valid");
        let confinement = policy.confinement.expect("a confinement");
        assert_eq!(confinement.network().as_str(), "hosts");
        let hosts: Vec<String> = confinement
            .allowed_hosts()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(hosts, ["api.github.com", "*.githubusercontent.com:443"]);
        assert_eq!(
            confinement.host_addresses().get("mirror.internal"),
            Some(&std::net::IpAddr::from([10, 0, 0, 5]))
        );
        let error = policy_from_toml("[confinement]\nhosts = [\"*\"]\n")
            .expect_err("not a host")
            .to_string();
        assert!(error.contains("`*` is not an allowed host"), "{error}");
    }

    #[test]
    fn an_empty_file_asks_about_everything() {
        let policy = policy_from_toml("").expect("valid").gate;
        assert!(policy.rules().is_empty());
        let read_only = ToolAnnotations::new().read_only();
        for believed in [false, true] {
            let policy = policy.clone().believe_untrusted_hints(believed);
            assert_eq!(policy.verdict_for("ls", &read_only, true).as_str(), "ask");
            assert_eq!(
                policy
                    .verdict_for("rm", &ToolAnnotations::new(), true)
                    .as_str(),
                "ask"
            );
        }
    }

    #[test]
    fn a_file_that_cannot_be_read_or_is_wrong_is_named() {
        let missing = Path::new("/nonexistent/rho-policy.toml");
        let error = load_policy(missing).expect_err("no such file").to_string();
        assert!(
            error.starts_with("cannot read the policy file /nonexistent/rho-policy.toml: "),
            "{error}"
        );

        let path = std::env::temp_dir().join(format!("rho-policy-{}.toml", std::process::id()));
        std::fs::write(&path, "default = \"allow\"\nbelieve = true\n").expect("written");
        let error = load_policy(&path).expect_err("an unknown key").to_string();
        let _ = std::fs::remove_file(&path);
        assert!(
            error.starts_with(&format!(
                "the policy file {}: TOML parse error at line 2, column 1\n",
                path.display()
            )),
            "{error}"
        );
        assert!(
            error.ends_with(
                "unknown field `believe`, expected one of `default`, `believe_hints`, `rule`"
            ),
            "{error}"
        );
    }

    /// The `[allowances]` example of the proxy's docs and README reads,
    /// and covers what it says.
    #[test]
    fn the_documented_allowances_read_and_cover_what_they_say() {
        let policy = policy_from_toml(
            r#"
            [allowances]
            destructive_tools = "scoped"
            allow = [
                { tool = "run_command", scope = "command_prefix", argument = "command", words = ["git", "status"] },
                { tool = "deploy", scope = "fields", fields = { env = "staging" } },
                { tool = "search", scope = "tool" },
            ]
            "#,
        )
        .expect("the example reads");
        let destructive = ToolAnnotations::new();
        let covering = |tool: &str, arguments: serde_json::Value| {
            policy
                .allowances
                .covering(tool, &arguments, &destructive)
                .map(rho_tool_core::AllowanceId::get)
        };
        let git = |command: &str| serde_json::json!({ "command": command });
        assert_eq!(covering("run_command", git("git status -s")), Some(1));
        assert_eq!(covering("run_command", git("git status; rm -rf ~")), None);
        let staging = serde_json::json!({ "env": "staging", "tag": "v2" });
        assert_eq!(covering("deploy", staging), Some(2));
        // A whole-tool allowance never covers a destructive tool under
        // `scoped`; a read-only one it does.
        assert_eq!(covering("search", serde_json::json!({})), None);
        let read_only = ToolAnnotations::new().read_only();
        let id = policy
            .allowances
            .covering("search", &serde_json::json!({}), &read_only);
        assert_eq!(id.map(rho_tool_core::AllowanceId::get), Some(3));
        assert!(policy_from_toml("").expect("empty").allowances.is_empty());
    }
}
