//! Properties of the schema conversions, on generated schemas and values.

mod support;

use proptest::prelude::*;
use rho::model::chat::Chat;
use rho::model::schema::{ChangeKind, SchemaError};
use rho::model::{Options, Strictness};
use serde_json::Value;
use support::info;
use support::shapes::root;

fn accepts(schema: &Value, value: &Value) -> bool {
    jsonschema::validator_for(schema)
        .expect("a valid schema")
        .is_valid(value)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Strict conversion either refuses the schema with where and why, or
    /// gives a schema that accepts every value the original accepts, as
    /// the model sends it (a `null` for each optional property left out),
    /// and reads the model's value back into exactly the original value.
    #[test]
    fn strict_conversion_keeps_every_accepted_value_or_says_why_not((original, arguments) in root()) {
        prop_assert!(accepts(&original, &arguments), "generated {arguments} for {original}");
        match rho::model::schema::strict(&original) {
            Err(SchemaError::Unsupported { reason, .. }) => prop_assert!(!reason.is_empty()),
            Err(other) => prop_assert!(false, "{original}: unexpected {other:?}"),
            Ok(converted) => {
                let mut sent = arguments.clone();
                converted.nulls.fill(&mut sent);
                prop_assert!(
                    accepts(&converted.schema, &sent),
                    "{} refuses {sent} (from {arguments} under {original})", converted.schema
                );
                let mut read = sent.clone();
                converted.nulls.restore(&mut read);
                // Read back as it was, but for a `null` the tool took
                // itself where strict mode reads `null` as left out, a
                // loss the conversion reported.
                let mut expected = arguments.clone();
                converted.nulls.restore(&mut expected);
                prop_assert_eq!(&read, &expected);
                let reported = converted.changes.iter().any(|change| matches!(change.what, ChangeKind::NullReadAsLeftOut { .. }));
                prop_assert!(expected == arguments || reported, "{arguments} lost a null silently");
                prop_assert!(converted.schema.get("$defs").is_none());
                for change in &converted.changes {
                    if let ChangeKind::Described { keyword } = &change.what {
                        prop_assert!(keyword == "minLength", "{change:?}");
                    }
                }
            }
        }
    }

    /// Outside strict mode a tool list takes every object schema as it
    /// is; where strict mode is asked for where possible, each tool is
    /// either strict or says why it is not.
    #[test]
    fn a_tool_list_converts_every_tool_or_says_why((original, _arguments) in root()) {
        let loose = Chat::with_options(Options::new().strict(Strictness::Never))
            .tools([&info(original.clone())])
            .expect("every object schema is taken as it is");
        prop_assert_eq!(&loose.to_json()[0]["function"]["parameters"], &original);
        let list = Chat::new().tools([&info(original.clone())]).expect("a list");
        let listed = &list.listed()[0];
        prop_assert_eq!(listed.strict, listed.not_strict.is_none());
        prop_assert_eq!(&list.to_json()[0]["function"]["strict"], &Value::Bool(listed.strict));
    }
}

/// Gemini's subset read as JSON Schema: types lower-cased, `nullable` as
/// "or null" (in the type, the enum, or a branch).
fn subset_as_json_schema(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = serde_json::Map::new();
    for (key, value) in map {
        let value = match key.as_str() {
            "type" => Value::String(value.as_str().unwrap_or_default().to_ascii_lowercase()),
            "properties" => Value::Object(
                value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, schema)| (name.clone(), subset_as_json_schema(schema)))
                    .collect(),
            ),
            "items" => subset_as_json_schema(value),
            "anyOf" => Value::Array(
                value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(subset_as_json_schema)
                    .collect(),
            ),
            "nullable" | "format" => continue,
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::String(kind)) = out.get("type").cloned() {
            out.insert("type".into(), serde_json::json!([kind, "null"]));
        }
        if let Some(Value::Array(values)) = out.get_mut("enum") {
            values.push(Value::Null);
        }
        if let Some(Value::Array(branches)) = out.get_mut("anyOf") {
            branches.push(serde_json::json!({ "type": "null" }));
        }
    }
    Value::Object(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Gemini's subset conversion either refuses the schema with where and
    /// why, or gives a schema that, read as JSON Schema, accepts every
    /// value the original accepts, with no `$ref` left.
    #[test]
    fn gemini_conversion_keeps_every_accepted_value_or_says_why_not((original, arguments) in root()) {
        match rho::model::schema::gemini(&original) {
            Err(SchemaError::Unsupported { reason, .. }) => prop_assert!(!reason.is_empty()),
            Err(other) => prop_assert!(false, "{original}: unexpected {other:?}"),
            Ok(converted) => {
                let text = converted.schema.to_string();
                prop_assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
                let read = subset_as_json_schema(&converted.schema);
                prop_assert!(
                    accepts(&read, &arguments),
                    "{} (as {read}) refuses {arguments} under {original}", converted.schema
                );
                prop_assert!(converted.nulls.is_empty());
            }
        }
    }
}
