//! What the model (or the host) defines ([`ScriptDefinition`]), how a
//! definition is refused ([`DefineError`]) or taken ([`Defined`]), and the
//! checks of its name and schema that need no sandbox.

use std::fmt;
use std::time::Duration;

use rho_registry::Disabled;
use rho_tool_core::untrusted::call_contained;

use crate::source::ScriptSource;
#[cfg(doc)]
use crate::source::ScriptSourceBuilder;

/// One tool, as the model (or the host) defines it: what
/// [`ScriptSource::define`] checks and registers.
///
/// ```
/// use rho::script::ScriptDefinition;
/// use serde_json::json;
///
/// let add = ScriptDefinition::new(
///     "add",
///     "Adds `a` and `b`.",
///     json!({
///         "type": "object",
///         "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
///         "required": ["a", "b"]
///     }),
///     "function run({ a, b }) { return { sum: a + b }; }",
/// );
/// assert_eq!(add.name, "add");
/// assert_eq!(add.timeout, None);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ScriptDefinition {
    /// The tool's name: 1 to 64 ASCII letters, digits, `_` or `-`, not
    /// held by another source of the registry.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema of the tool's arguments: a valid schema whose
    /// `type` is `"object"`. A turn checks each call's arguments against it
    /// before the gate.
    pub parameters: serde_json::Value,
    /// The JavaScript source: a classic script that defines a function
    /// `run` (see the crate docs).
    pub source: String,
    /// How long each call may run; `None`: the source's timeout
    /// ([`ScriptOptions::with_timeout`](crate::ScriptOptions::with_timeout)
    /// given to [`ScriptSourceBuilder::with_options`]).
    pub timeout: Option<Duration>,
}

impl ScriptDefinition {
    /// A definition with the source's timeout.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
        source: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            source: source.into(),
            timeout: None,
        }
    }

    /// Sets how long each call may run.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// Why a definition was refused; nothing was registered or changed.
///
/// Its `Display` is written for the model, which made the mistake and can
/// fix it: it names the tool, what is wrong and, for a syntax error, the
/// line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DefineError {
    /// The name is empty, too long, or has a character other than ASCII
    /// letters, digits, `_` and `-`.
    #[error(
        "tool `{name}` was not defined: a tool name must be 1 to 64 ASCII letters, digits, `_` or `-` ({reason})"
    )]
    BadName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Another source of the registry has a tool of that name.
    #[error(
        "tool `{name}` was not defined: that name belongs to a tool of source `{held_by}`, which cannot be replaced; choose another name"
    )]
    NameTaken {
        /// The name.
        name: String,
        /// The source that holds it.
        held_by: String,
    },
    /// The source does not parse.
    #[error(
        "tool `{name}` was not defined: its script has a syntax error at line {line}, column {column}: {message}"
    )]
    Syntax {
        /// The tool's name.
        name: String,
        /// The line of the error, from 1.
        line: u32,
        /// The column of the error, from 1.
        column: u32,
        /// The engine's message.
        message: String,
    },
    /// The top level ran but left no function `run`.
    #[error(
        "tool `{name}` was not defined: its script defines no function `run` (`typeof run` is `{found}`); a tool's script must define `function run(args) {{ ... }}` at its top level"
    )]
    NoRun {
        /// The tool's name.
        name: String,
        /// What `typeof run` was.
        found: String,
    },
    /// The top level threw, or ran past the memory or stack limit.
    #[error("tool `{name}` was not defined: {text}")]
    TopLevel {
        /// The tool's name.
        name: String,
        /// What happened, with the exception's message and stack.
        text: String,
    },
    /// The top level was still running at the check's deadline.
    #[error(
        "tool `{name}` was not defined: its script's top level was still running after {limit:?} and was stopped; the top level should only define `run` and what it needs, and do the work inside `run`"
    )]
    TopLevelTimedOut {
        /// The tool's name.
        name: String,
        /// The check's deadline.
        limit: Duration,
    },
    /// `parameters` is not a JSON Schema.
    #[error("tool `{name}` was not defined: its parameters are not a valid JSON Schema: {reason}")]
    BadSchema {
        /// The tool's name.
        name: String,
        /// What the schema check said.
        reason: String,
    },
    /// `parameters` is a schema, but not of an object.
    #[error(
        "tool `{name}` was not defined: its parameters must be the schema of an object, with `\"type\": \"object\"` and the arguments under `properties` ({found})"
    )]
    NotObjectSchema {
        /// The tool's name.
        name: String,
        /// What was found instead.
        found: String,
    },
    /// The source is larger than the source's cap.
    #[error(
        "tool `{name}` was not defined: its script is {bytes} bytes, more than the {max} bytes a tool's script may have; keep the tool to the code it needs"
    )]
    SourceTooLarge {
        /// The tool's name.
        name: String,
        /// The script's size in bytes.
        bytes: usize,
        /// The cap.
        max: usize,
    },
    /// The source holds as many tools as it may, and the name is new.
    #[error(
        "tool `{name}` was not defined: this session already has {max} tools of its own, the most it may have; redefine one of them instead"
    )]
    TooManyTools {
        /// The tool's name.
        name: String,
        /// The cap.
        max: usize,
    },
    /// The definition could not be checked or registered for a reason
    /// that is not in it: the script threads are all busy, the engine
    /// failed, the source was removed from the registry.
    #[error("tool `{name}` was not defined: {reason}")]
    Unavailable {
        /// The tool's name.
        name: String,
        /// Why.
        reason: String,
    },
}

/// A definition that was registered.
///
/// Its `Display` is the text for the model: what was defined and whether
/// the tool can be called now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Defined {
    /// The tool's name.
    pub name: String,
    /// Whether it replaced the source's own tool of that name.
    pub replaced: bool,
    /// Set when the tool is quarantined (or otherwise disabled by the
    /// source's policy): the new code is registered, but calls are refused
    /// until the host re-enables the tool.
    pub disabled: Option<Disabled>,
}

impl fmt::Display for Defined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.replaced {
            "redefined"
        } else {
            "defined"
        };
        match &self.disabled {
            None if self.replaced => write!(
                f,
                "{verb} tool `{}`: calls from now on run the new code",
                self.name
            ),
            None => write!(f, "{verb} tool `{}`: it can be called now", self.name),
            Some(disabled) => write!(
                f,
                "{verb} tool `{}`, but it stays {disabled}. Redefining a disabled tool does not enable it: \
                 only the host can, and its calls are refused until then; once the host re-enables it, \
                 calls run this new code",
                self.name
            ),
        }
    }
}

/// Refuses a name that is not `[A-Za-z0-9_-]{1,64}`.
pub(super) fn check_name(name: &str) -> Result<(), DefineError> {
    let reason = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.len() > ScriptSource::MAX_NAME_LEN {
        Some(format!("it has {} characters", name.chars().count()))
    } else {
        name.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
            .map(|c| format!("it has {c:?}"))
    };
    match reason {
        Some(reason) => Err(DefineError::BadName {
            name: name.chars().take(2 * ScriptSource::MAX_NAME_LEN).collect(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Refuses parameters that are not a JSON Schema of an object. The schema
/// crate panics on a `$schema` it does not know; that is contained and
/// refused like any other bad schema.
pub(super) fn check_schema(name: &str, schema: &serde_json::Value) -> Result<(), DefineError> {
    let bad = |reason: String| DefineError::BadSchema {
        name: name.to_owned(),
        reason,
    };
    let Some(object) = schema.as_object() else {
        return Err(DefineError::NotObjectSchema {
            name: name.to_owned(),
            found: format!("got {}", json_kind(schema)),
        });
    };
    match call_contained(|| jsonschema::meta::validate(schema).map_err(|e| e.to_string())) {
        Ok(Ok(())) => {}
        Ok(Err(reason)) => return Err(bad(reason)),
        Err(caught) => {
            return Err(bad(caught
                .message
                .unwrap_or_else(|| "its meta-schema is unknown".to_owned())));
        }
    }
    match call_contained(|| jsonschema::validator_for(schema).map_err(|e| e.to_string())) {
        Ok(Ok(_)) => {}
        Ok(Err(reason)) => return Err(bad(reason)),
        Err(caught) => {
            return Err(bad(caught
                .message
                .unwrap_or_else(|| "it could not be compiled".to_owned())));
        }
    }
    match object.get("type") {
        Some(serde_json::Value::String(kind)) if kind == "object" => Ok(()),
        Some(other) => Err(DefineError::NotObjectSchema {
            name: name.to_owned(),
            found: format!("its `type` is {other}"),
        }),
        None => Err(DefineError::NotObjectSchema {
            name: name.to_owned(),
            found: "it has no `type`".to_owned(),
        }),
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_letters_digits_underscores_and_dashes_up_to_64() {
        assert!(check_name("add_2-numbers").is_ok());
        assert!(check_name(&"a".repeat(64)).is_ok());
        for bad in ["", "a b", "naïve", "a.b", &"a".repeat(65)] {
            assert!(
                matches!(check_name(bad), Err(DefineError::BadName { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn parameters_must_be_a_valid_schema_of_an_object() {
        assert!(check_schema("t", &json!({ "type": "object" })).is_ok());
        let bad = check_schema("t", &json!({ "type": "objekt" }));
        assert!(matches!(bad, Err(DefineError::BadSchema { .. })), "{bad:?}");
        let bad = check_schema(
            "t",
            &json!({ "type": "object", "properties": { "a": { "pattern": "(" } } }),
        );
        assert!(matches!(bad, Err(DefineError::BadSchema { .. })), "{bad:?}");
        let bad = check_schema(
            "t",
            &json!({ "$schema": "https://example.com/unknown", "type": "object" }),
        );
        assert!(matches!(bad, Err(DefineError::BadSchema { .. })), "{bad:?}");
        for not_object in [
            json!({ "type": "string" }),
            json!({}),
            json!("object"),
            json!(true),
        ] {
            let bad = check_schema("t", &not_object);
            assert!(
                matches!(bad, Err(DefineError::NotObjectSchema { .. })),
                "{not_object}: {bad:?}"
            );
        }
    }
}
