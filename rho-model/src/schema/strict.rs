//! OpenAI's strict mode: the schema subset its structured outputs take.
//!
//! In strict mode the API guarantees the arguments match the schema, and
//! takes only schemas where that can be enforced: every object closed
//! (`additionalProperties: false`) and every property listed as required,
//! a type (or `anyOf`, `enum`, `const`) on every schema, and a listed set of
//! keywords. The conversion here makes a tool's schema so where it can:
//! optional properties become required and nullable (read back as left out,
//! see [`Nulls`]), open objects are closed, `oneOf` becomes `anyOf`, and the
//! keywords strict mode does not take move into the description. What it
//! cannot do (a map of any keys, `allOf`, a schema that takes any value, an
//! optional property inside `anyOf`, whose `null` could not be read back
//! unambiguously) is refused with where and why; the caller then lists the
//! tool outside strict mode.

use serde_json::{Map, Value};

use super::{Change, ChangeKind, Converted, Nulls, SchemaError, inline, pointer};

/// The keywords strict mode takes, beside the structural ones handled
/// apart (`type`, `properties`, `required`, `additionalProperties`,
/// `items`, `anyOf`, `description`).
const KEPT: &[&str] = &[
    "enum",
    "const",
    "pattern",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// The string formats strict mode takes.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords for people, not validation: left out, reported.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "title",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// `schema` in OpenAI's strict subset, with every change it took; or why
/// it cannot be had (the tool is then listed outside strict mode).
///
/// ```
/// use rho::model::schema::{strict, ChangeKind};
/// use serde_json::json;
///
/// let converted = strict(&json!({
///     "type": "object",
///     "properties": { "path": { "type": "string" }, "limit": { "type": "integer" } },
///     "required": ["path"],
/// })).unwrap();
/// assert_eq!(converted.schema["properties"]["limit"]["type"], json!(["integer", "null"]));
/// assert_eq!(converted.schema["additionalProperties"], json!(false));
/// assert!(converted.changes.iter().any(|c| c.what == ChangeKind::Closed));
///
/// // The model's `null` is read back as the property left out.
/// let mut arguments = json!({ "path": "a.rs", "limit": null });
/// converted.nulls.restore(&mut arguments);
/// assert_eq!(arguments, json!({ "path": "a.rs" }));
/// ```
pub fn strict(schema: &Value) -> Result<Converted, SchemaError> {
    let mut changes = Vec::new();
    let tree = inline(schema, &mut changes)?;
    let root = super::object_root(&tree)?;
    changes.extend(root.changes);
    let mut converter = Strict {
        changes: &mut changes,
    };
    let (schema, nulls) = converter.node(&root.schema, "", false)?;
    Ok(Converted {
        schema,
        changes,
        nulls,
    })
}

struct Strict<'c> {
    changes: &'c mut Vec<Change>,
}

impl Strict<'_> {
    /// One schema converted, and how its nulls read back. `in_any_of`:
    /// the schema is (inside) a branch of an `anyOf`, where an optional
    /// property cannot be made nullable.
    fn node(
        &mut self,
        schema: &Value,
        at: &str,
        in_any_of: bool,
    ) -> Result<(Value, Nulls), SchemaError> {
        let unsupported = |reason: &str| SchemaError::Unsupported {
            at: at.to_owned(),
            reason: reason.to_owned(),
        };
        let Some(map) = schema.as_object() else {
            return Err(unsupported(&format!(
                "the schema `{schema}` is not an object; strict mode takes no boolean schemas"
            )));
        };
        let mut out = Map::new();
        let mut nulls = Nulls::default();
        let mut described: Vec<String> = Vec::new();
        let mut description = map
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
        for (key, value) in map {
            match key.as_str() {
                "description" => {}
                "type" | "required" => {}
                "properties" | "additionalProperties" => {}
                "items" => match value {
                    Value::Object(_) => {
                        let (items, inner) = self.node(value, &pointer(at, "items"), in_any_of)?;
                        nulls.items(inner);
                        out.insert("items".into(), items);
                    }
                    _ => return Err(unsupported("`items` that is not one schema")),
                },
                "anyOf" | "oneOf" => {
                    if key == "oneOf" {
                        if map.contains_key("anyOf") {
                            return Err(unsupported("both `anyOf` and `oneOf`"));
                        }
                        self.changes.push(Change::new(at, ChangeKind::OneOfAsAnyOf));
                    }
                    let Some(branches) = value.as_array() else {
                        return Err(unsupported(&format!("`{key}` that is not a list")));
                    };
                    let here = pointer(at, key);
                    let mut converted = Vec::with_capacity(branches.len());
                    for (index, branch) in branches.iter().enumerate() {
                        let (branch, _) =
                            self.node(branch, &pointer(&here, &index.to_string()), true)?;
                        converted.push(branch);
                    }
                    out.insert("anyOf".into(), Value::Array(converted));
                }
                "format" => match value.as_str() {
                    Some(format) if FORMATS.contains(&format) => {
                        out.insert(key.clone(), value.clone());
                    }
                    _ => described.push(self.describe(at, key, value)),
                },
                "allOf" => return Err(unsupported("`allOf`, which strict mode does not take")),
                "patternProperties" => {
                    return Err(unsupported(
                        "`patternProperties`: strict mode closes every object, which would refuse the keys they allow",
                    ));
                }
                "prefixItems" => {
                    return Err(unsupported(
                        "`prefixItems`, which strict mode does not take",
                    ));
                }
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
        let kind = map.get("type");
        let is_object =
            kind.is_some_and(|kind| names(kind, "object")) || map.contains_key("properties");
        if let Some(kind) = kind {
            out.insert("type".into(), kind.clone());
        }
        if is_object {
            self.object(map, at, in_any_of, &mut out, &mut nulls)?;
        } else if kind.is_some_and(|kind| names(kind, "array")) && !out.contains_key("items") {
            return Err(unsupported("an array whose items may be anything"));
        }
        if !out.contains_key("type")
            && !out.contains_key("anyOf")
            && !out.contains_key("enum")
            && !out.contains_key("const")
        {
            return Err(unsupported(
                "a schema that takes any value (no `type`, `anyOf`, `enum` or `const`)",
            ));
        }
        if !described.is_empty() {
            let note = described.join("; ");
            description = Some(match description {
                Some(text) if !text.is_empty() => format!("{text} ({note})"),
                _ => note,
            });
        }
        if let Some(description) = description {
            out.insert("description".into(), description.into());
        }
        Ok((Value::Object(out), nulls))
    }

    /// An object's properties, each required, the optional ones nullable;
    /// the object closed.
    fn object(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        in_any_of: bool,
        out: &mut Map<String, Value>,
        nulls: &mut Nulls,
    ) -> Result<(), SchemaError> {
        let unsupported = |reason: &str| SchemaError::Unsupported {
            at: at.to_owned(),
            reason: reason.to_owned(),
        };
        let empty = Map::new();
        let properties = match map.get("properties") {
            None => &empty,
            Some(Value::Object(properties)) => properties,
            Some(_) => return Err(unsupported("`properties` that is not an object")),
        };
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) | None if properties.is_empty() => {
                return Err(unsupported(
                    "an object of any keys; strict mode closes every object, which would leave it none",
                ));
            }
            Some(Value::Bool(true)) | None => {
                self.changes.push(Change::new(at, ChangeKind::Closed))
            }
            Some(_) => {
                return Err(unsupported(
                    "`additionalProperties` with a schema (a map); strict mode closes every object",
                ));
            }
        }
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let here = pointer(at, "properties");
        let mut converted = Map::with_capacity(properties.len());
        for (name, schema) in properties {
            let (mut schema, inner) = self.node(schema, &pointer(&here, name), in_any_of)?;
            nulls.property(name, inner);
            if !required.contains(&name.as_str()) {
                if in_any_of {
                    return Err(unsupported(&format!(
                        "the optional property `{name}` inside `anyOf`: strict mode would need it nullable, and a `null` there could not be read back"
                    )));
                }
                let took_null = make_nullable(&mut schema);
                nulls.absent_if_null(name);
                self.changes.push(Change::new(
                    at,
                    ChangeKind::MadeNullable {
                        property: name.clone(),
                    },
                ));
                if took_null {
                    // Required now, the property's `null` is the only way
                    // the model can leave it out; the tool's own `null`
                    // is no longer sent.
                    self.changes.push(Change::new(
                        at,
                        ChangeKind::NullReadAsLeftOut {
                            property: name.clone(),
                        },
                    ));
                }
            }
            converted.insert(name.clone(), schema);
        }
        let names: Vec<Value> = converted.keys().cloned().map(Value::String).collect();
        out.entry("type").or_insert_with(|| "object".into());
        out.insert("properties".into(), Value::Object(converted));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), false.into());
        Ok(())
    }

    /// Keyword `key` reported as moved into the description; its text.
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

/// Whether `kind` (a `type` value) names `name`.
fn names(kind: &Value, name: &str) -> bool {
    match kind {
        Value::String(kind) => kind == name,
        Value::Array(kinds) => kinds.iter().any(|kind| kind == name),
        _ => false,
    }
}

/// `schema` made to take `null` too; whether it took `null` already (its
/// `null` is then its own, not "left out").
fn make_nullable(schema: &mut Value) -> bool {
    let Some(map) = schema.as_object_mut() else {
        return false;
    };
    if let Some(Value::Array(values)) = map.get("enum") {
        if values.contains(&Value::Null) {
            return true;
        }
    }
    if let Some(branches) = map.get("anyOf").and_then(Value::as_array) {
        if branches
            .iter()
            .any(|branch| branch.get("type").is_some_and(|kind| names(kind, "null")))
        {
            return true;
        }
    }
    let had_null = match map.get_mut("type") {
        Some(Value::String(kind)) if kind == "null" => true,
        Some(Value::String(kind)) => {
            let kind = std::mem::take(kind);
            map.insert("type".into(), serde_json::json!([kind, "null"]));
            false
        }
        Some(Value::Array(kinds)) => {
            if kinds.contains(&Value::from("null")) {
                true
            } else {
                kinds.push("null".into());
                false
            }
        }
        _ => false,
    };
    if had_null {
        return true;
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.push(Value::Null);
    }
    if map.contains_key("const") {
        // `{const: x}` becomes "x or null" as an `anyOf`.
        let constant = std::mem::take(map);
        map.insert(
            "anyOf".into(),
            serde_json::json!([Value::Object(constant), { "type": "null" }]),
        );
    } else if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.push(serde_json::json!({ "type": "null" }));
    }
    false
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn optional_properties_become_nullable_and_read_back_as_left_out() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "the file" },
                "limit": { "type": "integer", "minimum": 1 },
                "mode": { "enum": ["a", "b"] },
                "note": { "type": ["string", "null"] },
            },
            "required": ["path"],
        });
        let mut converted = strict(&schema).expect("strict");
        // The order of `required` follows the properties' map.
        let required = converted.schema["required"].as_array_mut().expect("a list");
        required.sort_by_key(|name| name.as_str().map(str::to_owned));
        assert_eq!(
            converted.schema,
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "the file" },
                    "limit": { "type": ["integer", "null"], "minimum": 1 },
                    "mode": { "enum": ["a", "b", null] },
                    "note": { "type": ["string", "null"] },
                },
                "required": ["limit", "mode", "note", "path"],
                "additionalProperties": false,
            })
        );
        assert!(
            converted
                .changes
                .contains(&Change::new("", ChangeKind::Closed))
        );
        let mut arguments = json!({ "path": "a", "limit": null, "mode": null, "note": null });
        converted.nulls.restore(&mut arguments);
        assert_eq!(arguments, json!({ "path": "a" }));
        // `note` took null itself: its null now means "left out", and the
        // change says so.
        assert!(converted.changes.contains(&Change::new(
            "",
            ChangeKind::NullReadAsLeftOut {
                property: "note".into()
            }
        )));
    }

    #[test]
    fn keywords_strict_mode_lacks_move_into_the_description() {
        let schema = json!({
            "type": "object",
            "properties": { "name": { "type": "string", "minLength": 2, "description": "who" } },
            "required": ["name"],
            "additionalProperties": false,
            "title": "Args",
        });
        let converted = strict(&schema).expect("strict");
        assert_eq!(
            converted.schema["properties"]["name"]["description"],
            "who (minLength: 2)"
        );
        assert_eq!(
            converted.changes,
            vec![
                // The object's own keywords first, then its properties'.
                Change::new(
                    "",
                    ChangeKind::Dropped {
                        keyword: "title".into()
                    }
                ),
                Change::new(
                    "/properties/name",
                    ChangeKind::Described {
                        keyword: "minLength".into()
                    }
                ),
            ]
        );
    }

    #[test]
    fn what_strict_mode_cannot_express_is_refused_with_where() {
        let cases = [
            (
                json!({ "type": "object", "additionalProperties": { "type": "string" } }),
                "",
            ),
            (json!({ "type": "object" }), ""),
            (
                json!({ "type": "object", "properties": { "x": {} }, "required": ["x"] }),
                "/properties/x",
            ),
            (
                json!({ "type": "object", "properties": { "x": { "allOf": [] } } }),
                "/properties/x",
            ),
            (
                json!({ "type": "object", "properties": { "x": { "anyOf": [
                    { "type": "object", "properties": { "y": { "type": "string" } } } ] } }, "required": ["x"] }),
                "/properties/x/anyOf/0",
            ),
        ];
        for (schema, at) in cases {
            match strict(&schema) {
                Err(SchemaError::Unsupported { at: found, .. }) => {
                    assert_eq!(found, at, "{schema}")
                }
                other => panic!("{schema}: {other:?}"),
            }
        }
    }
}
