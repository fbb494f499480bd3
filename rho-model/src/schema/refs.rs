//! `$ref` inlined: every reference replaced by the definition it names.
//!
//! Tool schemas derived from types (schemars, pydantic, zod) put shared
//! types under `$defs` and point at them. Some APIs take no references at
//! all, and the rest of the conversion is simpler on a tree, so references
//! are inlined first. A reference that leads back to itself cannot be
//! inlined, and is refused with where it was met.

use serde_json::{Map, Value};

use super::{Change, ChangeKind, SchemaError, pointer};

/// How many schema nodes an inlined schema may hold: definitions that each
/// refer to the next twice would otherwise double the schema per level.
const MAX_NODES: usize = 100_000;

/// `schema` with every `$ref` replaced by what it names and the
/// definitions (`$defs`, `definitions`) removed; each replacement is
/// reported in `changes`.
pub(crate) fn inline(schema: &Value, changes: &mut Vec<Change>) -> Result<Value, SchemaError> {
    let mut inliner = Inliner {
        root: schema,
        stack: Vec::new(),
        nodes: 0,
        changes,
    };
    inliner.node(schema, "", true)
}

struct Inliner<'a, 'c> {
    root: &'a Value,
    /// The references being expanded, outermost first.
    stack: Vec<String>,
    nodes: usize,
    changes: &'c mut Vec<Change>,
}

impl Inliner<'_, '_> {
    fn node(&mut self, schema: &Value, at: &str, root: bool) -> Result<Value, SchemaError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(SchemaError::TooLarge { limit: MAX_NODES });
        }
        match schema {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref") {
                    return self.reference(reference, map, at);
                }
                let mut out = Map::with_capacity(map.len());
                for (key, value) in map {
                    if root && (key == "$defs" || key == "definitions") {
                        continue;
                    }
                    out.insert(key.clone(), self.value(key, value, at)?);
                }
                Ok(Value::Object(out))
            }
            other => Ok(other.clone()),
        }
    }

    /// The value of keyword `key`: schemas inside it are inlined, data
    /// (`enum`, `const`, `default`, `examples`) is copied as it is.
    fn value(&mut self, key: &str, value: &Value, at: &str) -> Result<Value, SchemaError> {
        let here = pointer(at, key);
        match key {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                let Some(map) = value.as_object() else {
                    return Ok(value.clone());
                };
                let mut out = Map::with_capacity(map.len());
                for (name, schema) in map {
                    out.insert(
                        name.clone(),
                        self.node(schema, &pointer(&here, name), false)?,
                    );
                }
                Ok(Value::Object(out))
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => match value {
                Value::Array(list) => list
                    .iter()
                    .enumerate()
                    .map(|(index, schema)| {
                        self.node(schema, &pointer(&here, &index.to_string()), false)
                    })
                    .collect::<Result<_, _>>()
                    .map(Value::Array),
                other => Ok(other.clone()),
            },
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "additionalItems" => match value {
                // `items` as a list is the old form of `prefixItems`.
                Value::Array(list) => list
                    .iter()
                    .enumerate()
                    .map(|(index, schema)| {
                        self.node(schema, &pointer(&here, &index.to_string()), false)
                    })
                    .collect::<Result<_, _>>()
                    .map(Value::Array),
                schema => self.node(schema, &here, false),
            },
            _ => Ok(value.clone()),
        }
    }

    fn reference(
        &mut self,
        reference: &Value,
        map: &Map<String, Value>,
        at: &str,
    ) -> Result<Value, SchemaError> {
        let Some(reference) = reference.as_str() else {
            return Err(SchemaError::Unresolved {
                at: at.to_owned(),
                reference: reference.to_string(),
            });
        };
        let unresolved = || SchemaError::Unresolved {
            at: at.to_owned(),
            reference: reference.to_owned(),
        };
        if self.stack.iter().any(|open| open == reference) {
            return Err(SchemaError::Recursive {
                at: at.to_owned(),
                reference: reference.to_owned(),
            });
        }
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| {
                if pointer.is_empty() {
                    Some(self.root)
                } else if pointer.starts_with("/$defs/") || pointer.starts_with("/definitions/") {
                    self.root.pointer(pointer)
                } else {
                    None
                }
            })
            .ok_or_else(unresolved)?;
        self.changes.push(Change::new(
            at,
            ChangeKind::Inlined {
                reference: reference.to_owned(),
            },
        ));
        self.stack.push(reference.to_owned());
        let inlined = self.node(target, at, false);
        self.stack.pop();
        let mut inlined = inlined?;
        // Keywords beside the reference (a description, most often) stay,
        // over the definition's own.
        if let Value::Object(out) = &mut inlined {
            for (key, value) in map {
                if key != "$ref" {
                    let value = self.value(key, value, at)?;
                    out.insert(key.clone(), value);
                }
            }
        }
        Ok(inlined)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn references_are_replaced_and_definitions_removed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "from": { "$ref": "#/$defs/point", "description": "start" },
                "to": { "$ref": "#/$defs/point" },
            },
            "$defs": { "point": { "type": "object", "properties": { "x": { "type": "number" } } } },
        });
        let mut changes = Vec::new();
        let inlined = inline(&schema, &mut changes).expect("inlined");
        assert_eq!(
            inlined,
            json!({
                "type": "object",
                "properties": {
                    "from": { "type": "object", "properties": { "x": { "type": "number" } }, "description": "start" },
                    "to": { "type": "object", "properties": { "x": { "type": "number" } } },
                },
            })
        );
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0].at, "/properties/from");
    }

    #[test]
    fn a_recursive_reference_is_refused_where_it_is_met() {
        let schema = json!({
            "type": "object",
            "properties": { "tree": { "$ref": "#/$defs/node" } },
            "$defs": { "node": { "type": "object", "properties": {
                "children": { "type": "array", "items": { "$ref": "#/$defs/node" } } } } },
        });
        let error = inline(&schema, &mut Vec::new()).expect_err("recursive");
        assert_eq!(
            error,
            SchemaError::Recursive {
                at: "/properties/tree/properties/children/items".into(),
                reference: "#/$defs/node".into(),
            }
        );
        let root = json!({ "type": "object", "properties": { "again": { "$ref": "#" } } });
        assert!(matches!(
            inline(&root, &mut Vec::new()),
            Err(SchemaError::Recursive { .. })
        ));
    }

    #[test]
    fn a_reference_outside_the_schema_is_unresolved() {
        for reference in [
            "https://example.com/s.json",
            "#/$defs/missing",
            "#/properties/a",
        ] {
            let schema = json!({ "type": "object", "properties": { "a": { "$ref": reference } } });
            assert!(
                matches!(
                    inline(&schema, &mut Vec::new()),
                    Err(SchemaError::Unresolved { .. })
                ),
                "{reference}"
            );
        }
    }

    #[test]
    fn a_doubling_chain_of_definitions_is_refused_as_too_large() {
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), json!({ "type": "string" }));
        for level in 1..40 {
            let below = format!("#/$defs/d{}", level - 1);
            defs.insert(
                format!("d{level}"),
                json!({ "type": "object", "properties": {
                    "a": { "$ref": below }, "b": { "$ref": below } } }),
            );
        }
        let schema = json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/d39" } }, "$defs": defs });
        assert_eq!(
            inline(&schema, &mut Vec::new()),
            Err(SchemaError::TooLarge { limit: MAX_NODES })
        );
    }
}
