//! A request's tool list, and what converting each tool's schema changed.

use std::collections::HashMap;

use rho_registry::ToolInfo;
use serde_json::Value;

use crate::schema::{Change, Converted, Loss, Nulls, SchemaError};

/// The tools of one request, in one API's shape, with a report per tool.
///
/// Put [`to_json`](Self::to_json) in the request as its `tools`; keep the
/// list to read the model's answer with, so that what the conversion
/// changed in the arguments' shape (strict mode's `null`s) is read back
/// into the tool's own.
#[derive(Debug, Clone, Default)]
pub struct ToolList {
    /// The key one tool object holds all the tools under, for APIs that
    /// want them so (Gemini's `functionDeclarations`).
    pub(crate) wrapper: Option<&'static str>,
    pub(crate) value: Vec<Value>,
    pub(crate) listed: Vec<Listed>,
    pub(crate) by_name: HashMap<String, usize>,
}

impl ToolList {
    /// A list whose tools go under `key` of one tool object.
    pub(crate) fn wrapped(key: &'static str) -> Self {
        Self {
            wrapper: Some(key),
            ..Self::default()
        }
    }

    pub(crate) fn push(&mut self, value: Value, listed: Listed) {
        self.by_name.insert(listed.name.clone(), self.listed.len());
        self.value.push(value);
        self.listed.push(listed);
    }

    /// The `tools` value of a request.
    pub fn to_json(&self) -> Value {
        let tools = Value::Array(self.value.clone());
        match self.wrapper {
            Some(key) => serde_json::json!([{ key: tools }]),
            None => tools,
        }
    }

    /// The tools as listed, in order, with what changed in each.
    pub fn listed(&self) -> &[Listed] {
        &self.listed
    }

    /// The greatest loss of any tool's conversion.
    pub fn loss(&self) -> Loss {
        self.listed
            .iter()
            .map(Listed::loss)
            .max()
            .unwrap_or(Loss::None)
    }

    /// How the arguments of a call of `tool` read back into its own shape.
    pub(crate) fn nulls(&self, tool: &str) -> Option<&Nulls> {
        self.by_name
            .get(tool)
            .map(|&index| &self.listed[index].nulls)
    }

    /// Whether the list names `tool`.
    pub fn contains(&self, tool: &str) -> bool {
        self.by_name.contains_key(tool)
    }
}

/// One tool as a list holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// The tool's name.
    pub name: String,
    /// Whether the API holds the model to the schema (OpenAI's strict
    /// mode); `false` for APIs without such a mode.
    pub strict: bool,
    /// Why the tool could not be listed in strict mode, when strict mode
    /// was asked for where possible and was not.
    pub not_strict: Option<SchemaError>,
    /// What the conversion changed.
    pub changes: Vec<Change>,
    pub(crate) nulls: Nulls,
}

impl Listed {
    pub(crate) fn new(name: &str, strict: bool, converted: Converted) -> Self {
        Self {
            name: name.to_owned(),
            strict,
            not_strict: None,
            changes: converted.changes,
            nulls: converted.nulls,
        }
    }

    /// The greatest loss of the conversion.
    pub fn loss(&self) -> Loss {
        self.changes
            .iter()
            .map(|change| change.what.loss())
            .max()
            .unwrap_or(Loss::None)
    }
}

/// Why a tool list could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// A tool's schema could not be converted at all.
    #[error("tool `{tool}`: {error}")]
    Schema {
        /// The tool.
        tool: String,
        /// Why.
        error: SchemaError,
    },
    /// A conversion lost more than the host allows
    /// ([`Options::max_loss`](crate::Options::max_loss)).
    #[error("tool `{tool}`: converting its schema would lose {loss:?} (changes: {changes:?})")]
    Lossy {
        /// The tool.
        tool: String,
        /// The conversion's loss.
        loss: Loss,
        /// What it would change.
        changes: Vec<Change>,
    },
    /// A client tool was asked for, and the tools listed have none of its
    /// name to run its calls.
    #[error("the client tool `{tool}` was asked for, and no tool of that name is listed")]
    Missing {
        /// The name.
        tool: String,
    },
    /// Two tools of one name: the model could not tell them apart.
    #[error("two tools are named `{tool}`")]
    Duplicate {
        /// The name.
        tool: String,
    },
}

/// How tool lists are made, for every dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub(crate) strict: Strictness,
    pub(crate) max_loss: Loss,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            strict: Strictness::WherePossible,
            max_loss: Loss::Narrowed,
        }
    }
}

impl Options {
    /// The defaults: strict mode where the schema can be made strict, any
    /// loss allowed (and reported).
    pub fn new() -> Self {
        Self::default()
    }

    /// When to ask for strict mode (OpenAI's dialects).
    pub fn strict(mut self, strict: Strictness) -> Self {
        self.strict = strict;
        self
    }

    /// The greatest loss a conversion may have; a tool whose conversion
    /// loses more makes the list fail with [`ListError::Lossy`].
    pub fn max_loss(mut self, loss: Loss) -> Self {
        self.max_loss = loss;
        self
    }

    pub(crate) fn check(&self, info: &ToolInfo, listed: &Listed) -> Result<(), ListError> {
        let loss = listed.loss();
        if loss > self.max_loss {
            return Err(ListError::Lossy {
                tool: info.name.clone(),
                loss,
                changes: listed.changes.clone(),
            });
        }
        Ok(())
    }
}

/// When a dialect with a strict mode asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Strictness {
    /// Strict where the schema can be made strict; the others are listed
    /// outside strict mode, with the reason ([`Listed::not_strict`]).
    #[default]
    WherePossible,
    /// Never: every schema as the tool gives it (an object at its root).
    Never,
    /// Always: a schema that cannot be made strict fails the list.
    Always,
}
