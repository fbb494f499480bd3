//! Gemini's own `Schema` type: the subset of OpenAPI 3.0 a function
//! declaration's `parameters` take.
//!
//! Types are upper case (`STRING`, `OBJECT`, ...), one per schema, with
//! `nullable` for "or null"; `enum` lists strings only; there is `anyOf` but
//! no `oneOf`, `allOf` or `not`. References are inlined and recursion
//! refused (the API takes neither). A keyword outside the subset moves into
//! the description; one for people only is dropped; each is reported.

use serde_json::{Map, Value};

use super::{Change, ChangeKind, Converted, Nulls, SchemaError, inline, pointer};

/// Keywords the subset takes as they are, beside those handled apart
/// (`type`, `properties`, `required`, `items`, `anyOf`, `enum`, `format`,
/// `description`, `nullable`).
const KEPT: &[&str] = &[
    "title",
    "default",
    "example",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "pattern",
];

/// The formats the subset takes.
const FORMATS: &[&str] = &["enum", "date-time", "int32", "int64", "float", "double"];

/// Keywords for people, not validation: left out, reported.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// `schema` in Gemini's `Schema` subset, with every change it took; or why
/// it cannot be had (the tool is then listed with its JSON Schema as is,
/// in `parametersJsonSchema`).
///
/// ```
/// use rho::model::schema::gemini;
/// use serde_json::json;
///
/// let converted = gemini(&json!({
///     "type": "object",
///     "properties": { "note": { "type": ["string", "null"] } },
/// })).unwrap();
/// assert_eq!(converted.schema, json!({
///     "type": "OBJECT",
///     "properties": { "note": { "type": "STRING", "nullable": true } },
/// }));
/// ```
pub fn gemini(schema: &Value) -> Result<Converted, SchemaError> {
    let mut changes = Vec::new();
    let tree = inline(schema, &mut changes)?;
    let root = super::object_root(&tree)?;
    changes.extend(root.changes);
    let schema = Subset {
        changes: &mut changes,
    }
    .node(&root.schema, "")?;
    Ok(Converted {
        schema,
        changes,
        nulls: Nulls::default(),
    })
}

struct Subset<'c> {
    changes: &'c mut Vec<Change>,
}

impl Subset<'_> {
    fn node(&mut self, schema: &Value, at: &str) -> Result<Value, SchemaError> {
        let unsupported = |reason: String| SchemaError::Unsupported {
            at: at.to_owned(),
            reason,
        };
        let Some(map) = schema.as_object() else {
            return Err(unsupported(format!(
                "the schema `{schema}` is not an object; Gemini takes no boolean schemas"
            )));
        };
        let mut out = Map::new();
        let mut described: Vec<String> = Vec::new();
        let mut nullable = map.get("nullable") == Some(&Value::Bool(true));
        for (key, value) in map {
            match key.as_str() {
                "type" | "description" | "nullable" | "enum" | "const" | "required" => {}
                "properties" => {
                    let Some(properties) = value.as_object() else {
                        return Err(unsupported("`properties` that is not an object".into()));
                    };
                    let here = pointer(at, "properties");
                    let mut converted = Map::with_capacity(properties.len());
                    for (name, schema) in properties {
                        converted.insert(name.clone(), self.node(schema, &pointer(&here, name))?);
                    }
                    out.insert("properties".into(), Value::Object(converted));
                }
                "items" if value.is_object() => {
                    out.insert("items".into(), self.node(value, &pointer(at, "items"))?);
                }
                "anyOf" | "oneOf" => {
                    if key == "oneOf" {
                        self.changes.push(Change::new(at, ChangeKind::OneOfAsAnyOf));
                    }
                    let Some(branches) = value.as_array() else {
                        return Err(unsupported(format!("`{key}` that is not a list")));
                    };
                    let here = pointer(at, key);
                    let mut converted = Vec::with_capacity(branches.len());
                    for (index, branch) in branches.iter().enumerate() {
                        // A `{"type": "null"}` branch is the subset's
                        // `nullable`.
                        if branch.get("type").and_then(Value::as_str) == Some("null")
                            && branch.as_object().is_some_and(|branch| branch.len() == 1)
                        {
                            nullable = true;
                            continue;
                        }
                        converted.push(self.node(branch, &pointer(&here, &index.to_string()))?);
                    }
                    match converted.len() {
                        0 => {}
                        // One branch left: the schema itself.
                        1 if !out.contains_key("anyOf") => {
                            if let Some(Value::Object(only)) = converted.pop() {
                                for (key, value) in only {
                                    out.entry(key).or_insert(value);
                                }
                            }
                        }
                        _ => {
                            out.insert("anyOf".into(), Value::Array(converted));
                        }
                    }
                }
                "format" => match value.as_str() {
                    Some(format) if FORMATS.contains(&format) => {
                        out.insert(key.clone(), value.clone());
                    }
                    _ => described.push(self.describe(at, key, value)),
                },
                key if KEPT.contains(&key) => {
                    out.insert(key.to_owned(), value.clone());
                }
                key if ANNOTATIONS.contains(&key) => {
                    self.changes.push(Change::new(
                        at,
                        ChangeKind::Dropped {
                            keyword: key.to_owned(),
                        },
                    ));
                }
                _ => described.push(self.describe(at, key, value)),
            }
        }
        // The type: one, upper case; "or null" as `nullable`; several as
        // `anyOf` of one each.
        let mut kinds: Vec<&str> = match map.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if kinds.len() > 1 && kinds.contains(&"null") {
            nullable = true;
            kinds.retain(|kind| *kind != "null");
        }
        // `enum` and `const` of strings are the subset's enum; of anything
        // else, a description.
        let choices: Option<Vec<Value>> = match (map.get("enum"), map.get("const")) {
            (Some(Value::Array(values)), _) => Some(values.clone()),
            (None, Some(value)) => Some(vec![value.clone()]),
            _ => None,
        };
        if let Some(mut values) = choices {
            if values.contains(&Value::Null) {
                nullable = true;
                values.retain(|value| !value.is_null());
            }
            if kinds.is_empty() {
                kinds.extend(common_kind(&values));
            }
            if values.iter().all(Value::is_string) && kinds.iter().all(|kind| *kind == "string") {
                kinds = vec!["string"];
                out.insert("enum".into(), Value::Array(values));
            } else {
                let keyword = if map.contains_key("enum") {
                    "enum"
                } else {
                    "const"
                };
                described.push(self.describe(at, keyword, &Value::Array(values)));
            }
        }
        match kinds.as_slice() {
            // A type from the one branch of an `anyOf`, or branches.
            [] if out.contains_key("anyOf") || out.contains_key("type") => {}
            [] if out.contains_key("properties") => {
                out.insert("type".into(), "OBJECT".into());
            }
            [] => {
                return Err(unsupported(
                    "a schema that takes any value (no `type`); Gemini's schema needs one".into(),
                ));
            }
            [kind] => {
                out.insert("type".into(), kind.to_ascii_uppercase().into());
            }
            several => {
                let branches: Vec<Value> = several
                    .iter()
                    .map(|kind| serde_json::json!({ "type": kind.to_ascii_uppercase() }))
                    .collect();
                out.insert("anyOf".into(), Value::Array(branches));
            }
        }
        if let Some(Value::Array(required)) = map.get("required") {
            // The subset requires only properties it lists; a name it does
            // not list is described instead.
            let listed = |name: &Value| {
                name.as_str().is_some_and(|name| {
                    out.get("properties")
                        .and_then(Value::as_object)
                        .is_some_and(|properties| properties.contains_key(name))
                })
            };
            let (names, unlisted): (Vec<Value>, Vec<Value>) =
                required.iter().cloned().partition(|name| listed(name));
            if !unlisted.is_empty() {
                described.push(self.describe(at, "required", &Value::Array(unlisted)));
            }
            if !names.is_empty() {
                out.insert("required".into(), Value::Array(names));
            }
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        let description = map.get("description").and_then(Value::as_str);
        let note = described.join("; ");
        match (description, note.is_empty()) {
            (Some(text), true) => {
                out.insert("description".into(), text.into());
            }
            (Some(text), false) if !text.is_empty() => {
                out.insert("description".into(), format!("{text} ({note})").into());
            }
            (_, false) => {
                out.insert("description".into(), note.into());
            }
            (None, true) => {}
        }
        Ok(Value::Object(out))
    }

    fn describe(&mut self, at: &str, key: &str, value: &Value) -> String {
        self.changes.push(Change::new(
            at,
            ChangeKind::Described {
                keyword: key.to_owned(),
            },
        ));
        format!("{key}: {value}")
    }
}

/// The JSON type all of `values` share, if they share one.
fn common_kind(values: &[Value]) -> Option<&'static str> {
    let kind = |value: &Value| match value {
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("boolean"),
        Value::Number(number) if number.is_i64() || number.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        _ => None,
    };
    let first = kind(values.first()?)?;
    values
        .iter()
        .all(|value| kind(value) == Some(first))
        .then_some(first)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn types_become_the_subsets_and_the_rest_is_described() {
        let converted = gemini(&json!({
            "type": "object",
            "properties": {
                "mode": { "enum": ["a", "b", null] },
                "count": { "type": ["integer", "string"] },
                "exact": { "type": "number", "exclusiveMinimum": 0 },
                "pick": { "oneOf": [{ "type": "string" }, { "type": "null" }] },
                "flag": { "const": true },
            },
            "required": ["mode", "ghost"],
            "additionalProperties": false,
        }))
        .expect("converted");
        assert_eq!(
            converted.schema,
            json!({
                "type": "OBJECT",
                "properties": {
                    "mode": { "type": "STRING", "enum": ["a", "b"], "nullable": true },
                    "count": { "anyOf": [{ "type": "INTEGER" }, { "type": "STRING" }] },
                    "exact": { "type": "NUMBER", "description": "exclusiveMinimum: 0" },
                    "pick": { "type": "STRING", "nullable": true },
                    "flag": { "description": "const: [true]" , "type": "BOOLEAN" },
                },
                "required": ["mode"],
                "description": "additionalProperties: false; required: [\"ghost\"]",
            })
        );
    }
}
