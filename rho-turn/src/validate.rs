//! Argument validation: a call's arguments against its tool's JSON Schema,
//! before the gate, so no one is asked to approve a malformed call.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rho_tool_core::ToolResult;
use rho_tool_core::untrusted::{Plain, call_contained};
use serde_json::Value;

use crate::cap::cut_middle;

/// How many failures an error lists; the rest are counted.
pub const MAX_LISTED: usize = 50;
/// How many bytes of the received arguments an error echoes (head and tail
/// kept, the middle cut).
pub const MAX_ECHO: usize = 2048;
/// How many bytes of one failure's message an error keeps.
const MAX_MESSAGE: usize = 300;
/// How many failures are counted at most (a huge array of wrong items
/// should not make the loop walk it all).
const MAX_COUNTED: usize = 1000;

/// Compiled argument schemas, one per tool.
///
/// A tool's schema is compiled the first time one of its calls is checked
/// and kept, keyed by the tool's name and the schema itself: a tool whose
/// schema changes (a source swapped it) is compiled again, every other call
/// reuses the compiled form. Cheap to clone; clones share the cache. A
/// [`TurnRunner`](crate::TurnRunner) has one for all its turns.
///
/// ```
/// use rho_turn::SchemaCache;
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
    schema: Value,
    validator: Result<Arc<jsonschema::Validator>, String>,
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
    /// [`MAX_LISTED`]) when the arguments do not fit; [`ArgumentError::BadSchema`]
    /// when the schema itself is not a valid JSON Schema.
    pub fn check(
        &self,
        tool: &str,
        schema: &Value,
        arguments: &Value,
    ) -> Result<(), ArgumentError> {
        let validator =
            self.validator(tool, schema)
                .map_err(|reason| ArgumentError::BadSchema {
                    tool: tool.to_owned(),
                    reason,
                })?;
        let mut failures = Vec::new();
        let mut total = 0;
        for error in validator.iter_errors(arguments).take(MAX_COUNTED) {
            total += 1;
            if failures.len() < MAX_LISTED {
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
            received: cut_middle(&arguments.to_string(), MAX_ECHO).0,
        })
    }

    fn validator(&self, tool: &str, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        if let Some(cached) = self.lock().get(tool) {
            if cached.schema == *schema {
                return cached.validator.clone();
            }
        }
        // The schema crate is not expected to panic, but a panic here would
        // be in the loop: contain it like any other.
        let validator = match call_contained(|| jsonschema::validator_for(schema)) {
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
                schema: schema.clone(),
                validator: validator.clone(),
            },
        );
        validator
    }
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
        /// [`MAX_LISTED`]).
        failures: Vec<Failure>,
        /// How many failures there are in all (counted up to 1,000).
        total: usize,
        /// The arguments received, as compact JSON, cut in the middle
        /// past [`MAX_ECHO`] bytes.
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
        ToolResult {
            details: Some(Plain::from(details)),
            ..ToolResult::error(self.to_string())
        }
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
