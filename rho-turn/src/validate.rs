//! Argument validation: a call's arguments against its tool's JSON Schema,
//! before the gate, so no one is asked to approve a malformed call.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rho_registry::ToolInfo;
use rho_tool_core::ToolResult;
use rho_tool_core::untrusted::{Plain, call_contained};
use serde_json::Value;

use crate::cap::cut_middle;

impl ArgumentError {
    /// How deep a call's arguments may nest: serde_json's own limit when it
    /// parses text, so arguments a model sent as JSON never reach it
    /// (checked without recursion, see the `depth` module).
    pub const MAX_DEPTH: usize = 128;

    /// How many failures an error lists; the rest are counted.
    pub const MAX_LISTED: usize = 50;

    /// How many bytes of the received arguments an error echoes (head and
    /// tail kept, the middle cut).
    pub const MAX_ECHO: usize = 2048;
}

/// How many bytes of one failure's message an error keeps.
const MAX_MESSAGE: usize = 300;
/// How many failures are counted at most (a huge array of wrong items
/// should not make the loop walk it all).
const MAX_COUNTED: usize = 1000;

/// Compiled argument schemas, one per tool.
///
/// A tool's schema is compiled the first time one of its calls is checked
/// and kept, keyed by the tool's name: a tool whose schema changes (a
/// source swapped it) is compiled again, every other call reuses the
/// compiled form. A registered tool ([`check_tool`](SchemaCache::check_tool))
/// is recognised by its registration, at the cost of comparing two
/// pointers; a bare schema ([`check`](SchemaCache::check)) by comparing it
/// whole. Cheap to clone; clones share the cache. A
/// [`TurnRunner`](crate::TurnRunner) has one for all its turns.
///
/// ```
/// use rho::turn::SchemaCache;
/// use serde_json::json;
///
/// let schemas = SchemaCache::new();
/// let schema = json!({
///     "type": "object",
///     "properties": { "n": { "type": "integer" } },
///     "required": ["n"],
///     "additionalProperties": false,
/// });
/// assert!(schemas.check("count", &schema, &json!({ "n": 3 })).is_ok());
/// let error = schemas.check("count", &schema, &json!({ "n": "3", "m": 1 })).unwrap_err();
/// let text = error.to_string();
/// assert!(text.contains("`/n`") && text.contains("'m' was unexpected"), "{text}");
/// ```
#[derive(Clone, Default)]
pub struct SchemaCache {
    compiled: Arc<Mutex<HashMap<String, Compiled>>>,
}

#[derive(Clone)]
struct Compiled {
    from: Origin,
    validator: Result<Arc<jsonschema::Validator>, String>,
}

/// What a compiled schema was compiled from.
#[derive(Clone)]
enum Origin {
    /// A registered tool's schema. The cache holds the registration, so
    /// the pointer cannot be reused by another while it is cached.
    Tool(Arc<ToolInfo>),
    /// A schema given as it is.
    Schema(Value),
}

impl Origin {
    fn schema(&self) -> &Value {
        match self {
            Origin::Tool(info) => &info.parameters,
            Origin::Schema(schema) => schema,
        }
    }
}

impl SchemaCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many tools' schemas are cached.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no schema is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Compiled>> {
        // Only map operations run under the lock; compiling happens outside.
        self.compiled.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks `arguments` of a call of `tool` against `schema`.
    ///
    /// # Errors
    ///
    /// [`ArgumentError::Invalid`] with every failure (up to
    /// [`ArgumentError::MAX_LISTED`]) when the arguments do not fit; [`ArgumentError::BadSchema`]
    /// when the schema itself is not a valid JSON Schema.
    pub fn check(
        &self,
        tool: &str,
        schema: &Value,
        arguments: &Value,
    ) -> Result<(), ArgumentError> {
        let validator = self.validator(
            tool,
            |from| from.schema() == schema,
            || Origin::Schema(schema.clone()),
        );
        report(tool, validator, arguments)
    }

    /// Checks `arguments` of a call of the registered tool `info` against
    /// its parameter schema; see [`check`](SchemaCache::check). The schema
    /// is not compared: the registration is.
    ///
    /// # Errors
    ///
    /// As [`check`](SchemaCache::check).
    pub fn check_tool(&self, info: &Arc<ToolInfo>, arguments: &Value) -> Result<(), ArgumentError> {
        let validator = self.validator(
            &info.name,
            |from| matches!(from, Origin::Tool(known) if Arc::ptr_eq(known, info)),
            || Origin::Tool(info.clone()),
        );
        report(&info.name, validator, arguments)
    }

    /// The validator of `tool`: the cached one when `same` says it was
    /// compiled from what is asked for, else a fresh one, cached.
    fn validator(
        &self,
        tool: &str,
        same: impl Fn(&Origin) -> bool,
        from: impl FnOnce() -> Origin,
    ) -> Result<Arc<jsonschema::Validator>, String> {
        if let Some(cached) = self.lock().get(tool) {
            if same(&cached.from) {
                return cached.validator.clone();
            }
        }
        let from = from();
        // The schema crate is not expected to panic, but a panic here would
        // be in the loop: contain it like any other.
        let validator = match call_contained(|| jsonschema::validator_for(from.schema())) {
            Ok(Ok(validator)) => Ok(Arc::new(validator)),
            Ok(Err(error)) => Err(cut_middle(&error.to_string(), MAX_MESSAGE).0),
            Err(caught) => Err(format!(
                "compiling it panicked: {}",
                caught.message.as_deref().unwrap_or("(no message)")
            )),
        };
        self.lock().insert(
            tool.to_owned(),
            Compiled {
                from,
                validator: validator.clone(),
            },
        );
        validator
    }
}

/// The answer of a check of `arguments` by `validator`.
fn report(
    tool: &str,
    validator: Result<Arc<jsonschema::Validator>, String>,
    arguments: &Value,
) -> Result<(), ArgumentError> {
    let validator = validator.map_err(|reason| ArgumentError::BadSchema {
        tool: tool.to_owned(),
        reason,
    })?;
    let mut failures = Vec::new();
    let mut total = 0;
    for error in validator.iter_errors(arguments).take(MAX_COUNTED) {
        total += 1;
        if failures.len() < ArgumentError::MAX_LISTED {
            failures.push(Failure {
                path: error.instance_path().as_str().to_owned(),
                message: cut_middle(&error.to_string(), MAX_MESSAGE).0,
            });
        }
    }
    if total == 0 {
        return Ok(());
    }
    Err(ArgumentError::Invalid {
        tool: tool.to_owned(),
        failures,
        total,
        received: cut_middle(&arguments.to_string(), ArgumentError::MAX_ECHO).0,
    })
}

impl fmt::Debug for SchemaCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaCache")
            .field("tools", &self.len())
            .finish()
    }
}

/// One way the arguments do not fit the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Where, as a JSON Pointer into the arguments (`""` is the arguments
    /// themselves, `/items/0/name` a field of an element).
    pub path: String,
    /// What is wrong there, in the schema crate's words.
    pub message: String,
}

/// Why a call's arguments were refused before its gate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// The arguments do not fit the tool's schema.
    #[error("{}", invalid_text(tool, failures, *total, received))]
    Invalid {
        /// The tool.
        tool: String,
        /// The failures, in the schema crate's order (at most
        /// [`ArgumentError::MAX_LISTED`]).
        failures: Vec<Failure>,
        /// How many failures there are in all (counted up to 1,000).
        total: usize,
        /// The arguments received, as compact JSON, cut in the middle
        /// past [`ArgumentError::MAX_ECHO`] bytes.
        received: String,
    },
    /// The tool's schema is not a valid JSON Schema: no call of it can be
    /// checked, so none runs.
    #[error(
        "tool `{tool}` was not run: its parameter schema is not a valid JSON Schema ({reason}); \
         the tool must be fixed by its author"
    )]
    BadSchema {
        /// The tool.
        tool: String,
        /// What the schema crate said.
        reason: String,
    },
}

impl ArgumentError {
    /// The error result for the model: this error's text, with details for
    /// host screens (`{"refused": "invalid_arguments" | "invalid_schema",
    /// "tool": ..., "errors": [{"path": ..., "message": ...}]}`).
    pub fn to_result(&self) -> ToolResult {
        let details = match self {
            ArgumentError::Invalid {
                tool,
                failures,
                total,
                ..
            } => serde_json::json!({
                "refused": "invalid_arguments",
                "tool": tool,
                "total": total,
                "errors": failures.iter().map(|failure| serde_json::json!({
                    "path": failure.path,
                    "message": failure.message,
                })).collect::<Vec<_>>(),
            }),
            ArgumentError::BadSchema { tool, reason } => serde_json::json!({
                "refused": "invalid_schema",
                "tool": tool,
                "reason": reason,
            }),
        };
        ToolResult::error(self.to_string()).with_details(Plain::from(details))
    }
}

fn invalid_text(tool: &str, failures: &[Failure], total: usize, received: &str) -> String {
    use fmt::Write as _;
    let problems = if total == 1 { "problem" } else { "problems" };
    let mut text = format!(
        "tool `{tool}` was not run: its arguments do not fit its schema ({total} {problems}):"
    );
    for failure in failures {
        let at = if failure.path.is_empty() {
            "the arguments".to_owned()
        } else {
            format!("`{}`", failure.path)
        };
        let _ = write!(text, "\n  - at {at}: {}", failure.message);
    }
    if total > failures.len() {
        let _ = write!(text, "\n  - ... and {} more", total - failures.len());
    }
    let _ = write!(text, "\nArguments received: {received}");
    text
}

#[cfg(test)]
mod tests {
    use rho_registry::{Source, ToolRegistry};
    use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};
    use serde_json::json;

    use super::*;

    struct Schema(Value);

    #[async_trait]
    impl Tool for Schema {
        fn name(&self) -> &str {
            "count"
        }
        fn description(&self) -> &str {
            "Counts."
        }
        fn parameters(&self) -> Value {
            self.0.clone()
        }
        async fn run(&self, _arguments: Value, _cx: ToolContext) -> ToolOutput {
            ToolOutput::text("")
        }
    }

    fn integer_n() -> Value {
        json!({ "type": "object", "properties": { "n": { "type": "integer" } } })
    }

    fn cached_from(cache: &SchemaCache, tool: &str) -> Option<Arc<ToolInfo>> {
        match &cache.lock().get(tool)?.from {
            Origin::Tool(info) => Some(info.clone()),
            Origin::Schema(_) => None,
        }
    }

    /// A registered tool's schema is compiled once and recognised by its
    /// registration (no schema comparison); a tool swapped under the same
    /// name is compiled again, and its new schema applies at once.
    #[test]
    fn a_tool_is_recognised_by_its_registration_and_recompiled_when_swapped() {
        let registry = ToolRegistry::new();
        let source = registry
            .add_source(Source::trusted("builtin"))
            .expect("a new source");
        source.add(Schema(integer_n())).expect("a new tool");
        let cache = SchemaCache::new();
        let first = registry.resolve("count").expect("registered");
        assert!(cache.check_tool(first.info(), &json!({ "n": 1 })).is_ok());
        let again = registry.resolve("count").expect("registered");
        assert!(cache.check_tool(again.info(), &json!({ "n": 2 })).is_ok());
        let cached = cached_from(&cache, "count").expect("compiled from the tool");
        assert!(Arc::ptr_eq(&cached, first.info()), "compiled once");
        assert_eq!(cache.len(), 1);

        let strings = json!({ "type": "object", "properties": { "n": { "type": "string" } } });
        source.replace(Schema(strings)).expect("its own name");
        let swapped = registry.resolve("count").expect("registered");
        assert!(
            cache
                .check_tool(swapped.info(), &json!({ "n": 1 }))
                .is_err()
        );
        let cached = cached_from(&cache, "count").expect("compiled from the tool");
        assert!(Arc::ptr_eq(&cached, swapped.info()), "compiled again");
        assert_eq!(cache.len(), 1);
    }

    /// A bare schema is compared whole: the same schema reuses the
    /// compiled form, another is compiled.
    #[test]
    fn a_bare_schema_is_compared_whole() {
        let cache = SchemaCache::new();
        assert!(
            cache
                .check("count", &integer_n(), &json!({ "n": 1 }))
                .is_ok()
        );
        assert!(
            cache
                .check("count", &integer_n(), &json!({ "n": "x" }))
                .is_err()
        );
        let any = json!({ "type": "object" });
        assert!(cache.check("count", &any, &json!({ "n": "x" })).is_ok());
        assert_eq!(cache.len(), 1);
    }
}
