//! A tool's argument schema in the subset a model API takes, with what
//! changed on the way.
//!
//! Each API accepts a different part of JSON Schema, and each treats the
//! rest differently: one refuses the request, another ignores the keyword.
//! rho converts the schema a tool already gives ([`Tool::parameters`]) into
//! what the API takes and *reports* every change ([`Change`]), each with
//! what it costs ([`Loss`]), so that a host can read them, log them, or
//! refuse a lossy one. Nothing is dropped silently.
//!
//! The conversion never changes what rho checks: a call's arguments are
//! still validated against the tool's own schema before its gate, so a
//! keyword the API does not hold the model to is still held by rho, and the
//! model reads which argument broke it.
//!
//! [`Tool::parameters`]: rho_tool_core::Tool::parameters

mod gemini;
mod nulls;
mod refs;
mod strict;

use serde::Serialize;
use serde_json::Value;

pub use gemini::gemini;
pub use nulls::Nulls;
pub(crate) use refs::inline;
pub use strict::strict;

/// A schema converted for one API, and what changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The schema as the API takes it.
    pub schema: Value,
    /// Every change, in the order the conversion made them.
    pub changes: Vec<Change>,
    /// How the model's arguments are read back into the tool's own shape
    /// (strict mode's `null` for an optional property that was left out).
    pub nulls: Nulls,
}

impl Converted {
    /// The schema unchanged.
    pub(crate) fn unchanged(schema: Value) -> Self {
        Self {
            schema,
            changes: Vec::new(),
            nulls: Nulls::default(),
        }
    }

    /// The greatest loss among the changes ([`Loss::None`] when there are
    /// none).
    pub fn loss(&self) -> Loss {
        self.changes
            .iter()
            .map(|change| change.what.loss())
            .max()
            .unwrap_or(Loss::None)
    }
}

/// One change a conversion made to a schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Where, as a JSON pointer into the tool's own schema (`""` for its
    /// root; after a `$ref`, the path the reference was reached by).
    pub at: String,
    /// What changed.
    pub what: ChangeKind,
}

impl Change {
    pub(crate) fn new(at: &str, what: ChangeKind) -> Self {
        Self {
            at: at.to_owned(),
            what,
        }
    }
}

/// What a conversion changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// A `$ref` replaced by the definition it names.
    Inlined {
        /// The reference, as written.
        reference: String,
    },
    /// An optional property made required and able to be `null` (OpenAI's
    /// strict mode lists every property as required). rho reads the
    /// model's `null` back as the property left out.
    MadeNullable {
        /// The property's name.
        property: String,
    },
    /// An optional property that took `null` itself, made required: its
    /// `null` from the model is read as the property left out, so the tool
    /// never gets a `null` there.
    NullReadAsLeftOut {
        /// The property's name.
        property: String,
    },
    /// An object that allowed properties it does not name, closed (strict
    /// mode allows no others).
    Closed,
    /// The root given `"type": "object"`, which it did not state.
    TypedAsObject,
    /// A keyword the API does not take, written into the schema's
    /// description instead: the model reads it, the API does not hold the
    /// model to it, and rho's validation still does.
    Described {
        /// The keyword.
        keyword: String,
    },
    /// A keyword for people rather than for validation (`$schema`,
    /// `$comment`, `title`, `examples`, ...) left out.
    Dropped {
        /// The keyword.
        keyword: String,
    },
    /// `oneOf` written as `anyOf`: a value matching several branches is no
    /// longer refused by the API (rho's validation still refuses it).
    OneOfAsAnyOf,
}

impl ChangeKind {
    /// What the change costs.
    pub fn loss(&self) -> Loss {
        match self {
            ChangeKind::Inlined { .. }
            | ChangeKind::MadeNullable { .. }
            | ChangeKind::TypedAsObject
            | ChangeKind::Dropped { .. } => Loss::None,
            ChangeKind::Described { keyword } if keyword == "default" => Loss::None,
            ChangeKind::Described { .. } | ChangeKind::OneOfAsAnyOf => Loss::Unchecked,
            ChangeKind::Closed | ChangeKind::NullReadAsLeftOut { .. } => Loss::Narrowed,
        }
    }
}

/// What a change costs, from none to the most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Loss {
    /// The API takes the same arguments as before.
    None,
    /// The API takes more than the tool's schema does (a constraint it
    /// does not enforce); rho's validation still refuses the rest, with an
    /// error the model reads.
    Unchecked,
    /// The API no longer lets the model send some arguments the tool's
    /// schema takes (an open object closed, a `null` read as left out).
    Narrowed,
}

/// Why a schema could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A `$ref` leads back to itself; the API takes no recursive schema.
    #[error("{}: `{reference}` refers to a schema that contains it (a recursive schema)", place(.at))]
    Recursive {
        /// Where the reference was met.
        at: String,
        /// The reference.
        reference: String,
    },
    /// A `$ref` that is not to a definition of the same schema
    /// (`#/$defs/...`, `#/definitions/...`, `#`), or to one it lacks.
    #[error("{}: `{reference}` names no definition of this schema", place(.at))]
    Unresolved {
        /// Where the reference was met.
        at: String,
        /// The reference.
        reference: String,
    },
    /// Inlining the references would make the schema too large.
    #[error("the schema with its references inlined would exceed {limit} nodes")]
    TooLarge {
        /// The bound on nodes.
        limit: usize,
    },
    /// The schema does not describe an object, which every API wants at
    /// the root of a tool's arguments.
    #[error("the arguments' schema must describe an object; this one {found}")]
    NotAnObject {
        /// What it describes.
        found: String,
    },
    /// Something the target cannot express (strict mode's limits).
    #[error("{}: {reason}", place(.at))]
    Unsupported {
        /// Where.
        at: String,
        /// What, and why.
        reason: String,
    },
}

/// Where in a schema, for people: its root, or a JSON pointer.
fn place(at: &str) -> String {
    if at.is_empty() {
        "at the schema's root".to_owned()
    } else {
        format!("at `{at}`")
    }
}

/// A JSON pointer token for `key` (`~` and `/` escaped).
pub(crate) fn pointer(at: &str, key: &str) -> String {
    let mut path = String::with_capacity(at.len() + key.len() + 1);
    path.push_str(at);
    path.push('/');
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
    path
}

/// The schema checked to describe an object at its root, with
/// `"type": "object"` added when it only implies it (it has
/// `properties`): what the APIs that take JSON Schema nearly as is
/// (OpenAI outside strict mode, Anthropic) require.
pub(crate) fn object_root(schema: &Value) -> Result<Converted, SchemaError> {
    let Some(map) = schema.as_object() else {
        return Err(SchemaError::NotAnObject {
            found: format!("is `{schema}`"),
        });
    };
    match map.get("type") {
        Some(Value::String(kind)) if kind == "object" => Ok(Converted::unchanged(schema.clone())),
        Some(other) => Err(SchemaError::NotAnObject {
            found: format!("has type {other}"),
        }),
        None if map.contains_key("properties") || map.is_empty() => {
            let mut typed = map.clone();
            typed.insert("type".into(), "object".into());
            Ok(Converted {
                schema: Value::Object(typed),
                changes: vec![Change::new("", ChangeKind::TypedAsObject)],
                nulls: Nulls::default(),
            })
        }
        None => Err(SchemaError::NotAnObject {
            found: "states no type and no properties".into(),
        }),
    }
}
