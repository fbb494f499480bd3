//! TypeScript declarations of the tools a script may call, made from their
//! JSON Schemas, for the model's prompt.
//!
//! Models write TypeScript-flavoured JavaScript best when they are shown
//! TypeScript signatures: a schema becomes the type it describes as
//! closely as TypeScript can say it (objects with optional fields, enums
//! and `const` as literal unions, `anyOf`/`oneOf` as unions, `allOf` as
//! intersections, arrays and tuples, local `$ref`s resolved), and what it
//! cannot say becomes `unknown`, never a wrong type.

use std::fmt::Write as _;

use rho_registry::ToolInfo;
use serde_json::{Map, Value};

/// How deep a schema is followed (nesting and `$ref`s together); deeper
/// parts are `unknown`. Recursive schemas end here.
const MAX_DEPTH: usize = 24;

/// What a declaration needs of a tool.
pub(crate) struct Declared<'a> {
    pub(crate) name: &'a str,
    pub(crate) description: &'a str,
    pub(crate) parameters: &'a Value,
    pub(crate) output_schema: Option<&'a Value>,
}

impl<'a> From<&'a ToolInfo> for Declared<'a> {
    fn from(info: &'a ToolInfo) -> Self {
        Self {
            name: &info.name,
            description: &info.description,
            parameters: &info.parameters,
            output_schema: info.output_schema.as_ref(),
        }
    }
}

/// The declaration of `tools`: one method per tool.
pub(crate) fn tools<'a>(infos: impl IntoIterator<Item = Declared<'a>>) -> String {
    let mut out = String::from("declare const tools: {\n");
    for info in infos {
        doc_comment(&mut out, "  ", info.description);
        let arguments = Schema::new(info.parameters).render(info.parameters, 0, 1);
        let answer = info.output_schema.map_or_else(
            || "unknown".to_owned(),
            |schema| Schema::new(schema).render(schema, 0, 1),
        );
        let _ = writeln!(
            out,
            "  {}(args: {arguments}): Promise<{answer}>;",
            property_name(info.name)
        );
    }
    out.push_str("};\n");
    out
}

/// `/** ... */` before a member, when there is text.
fn doc_comment(out: &mut String, indent: &str, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    // A comment must not end early.
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0]);
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in lines {
        let _ = writeln!(out, "{indent} * {}", line.trim_end());
    }
    let _ = writeln!(out, "{indent} */");
}

/// A name as a property key: bare when it is an identifier, quoted
/// otherwise.
fn property_name(name: &str) -> String {
    let identifier = name
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_' || first == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

/// A schema with its root, for `$ref`s.
struct Schema<'a> {
    root: &'a Value,
}

impl<'a> Schema<'a> {
    fn new(root: &'a Value) -> Self {
        Self { root }
    }

    /// The type `schema` describes; `depth` counts nesting and `$ref`s,
    /// for the bound; `indent` is the level of the lines an object's
    /// fields go on.
    fn render(&self, schema: &Value, depth: usize, indent: usize) -> String {
        if depth > MAX_DEPTH {
            return "unknown".to_owned();
        }
        let object = match schema {
            Value::Bool(true) => return "unknown".to_owned(),
            Value::Bool(false) => return "never".to_owned(),
            Value::Object(object) => object,
            _ => return "unknown".to_owned(),
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            return match self.resolve(reference) {
                Some(target) => self.render(target, depth + 1, indent),
                None => "unknown".to_owned(),
            };
        }
        if let Some(constant) = object.get("const") {
            return literal(constant);
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            return union(values.iter().map(literal).collect());
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = object.get(key) {
                return union(
                    options
                        .iter()
                        .map(|option| self.render(option, depth + 1, indent))
                        .collect(),
                );
            }
        }
        if let Some(Value::Array(parts)) = object.get("allOf") {
            let parts: Vec<String> = parts
                .iter()
                .map(|part| wrap(&self.render(part, depth + 1, indent)))
                .collect();
            return if parts.is_empty() {
                "unknown".to_owned()
            } else {
                parts.join(" & ")
            };
        }
        match object.get("type") {
            Some(Value::String(kind)) => self.of_type(kind, object, depth, indent),
            Some(Value::Array(kinds)) => union(
                kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|kind| self.of_type(kind, object, depth, indent))
                    .collect(),
            ),
            _ if object.contains_key("properties") => self.of_type("object", object, depth, indent),
            _ if object.contains_key("items") || object.contains_key("prefixItems") => {
                self.of_type("array", object, depth, indent)
            }
            _ => "unknown".to_owned(),
        }
    }

    fn of_type(
        &self,
        kind: &str,
        object: &Map<String, Value>,
        depth: usize,
        indent: usize,
    ) -> String {
        match kind {
            "string" => "string".to_owned(),
            "number" | "integer" => "number".to_owned(),
            "boolean" => "boolean".to_owned(),
            "null" => "null".to_owned(),
            "array" => self.array(object, depth, indent),
            "object" => self.object(object, depth, indent),
            _ => "unknown".to_owned(),
        }
    }

    fn array(&self, object: &Map<String, Value>, depth: usize, indent: usize) -> String {
        // A tuple: `prefixItems` (2020-12) or an array of `items` (older).
        let tuple = match (object.get("prefixItems"), object.get("items")) {
            (Some(Value::Array(items)), _) | (None, Some(Value::Array(items))) => Some(items),
            _ => None,
        };
        if let Some(items) = tuple {
            let items: Vec<String> = items
                .iter()
                .map(|item| self.render(item, depth + 1, indent))
                .collect();
            return format!("[{}]", items.join(", "));
        }
        match object.get("items") {
            Some(items) => format!("{}[]", wrap(&self.render(items, depth + 1, indent))),
            None => "unknown[]".to_owned(),
        }
    }

    fn object(&self, object: &Map<String, Value>, depth: usize, indent: usize) -> String {
        let properties = object.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let rest = match object.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) | None => properties
                .is_none_or(Map::is_empty)
                .then(|| "unknown".to_owned()),
            Some(schema) => Some(self.render(schema, depth + 1, indent + 1)),
        };
        let properties = properties.filter(|properties| !properties.is_empty());
        let Some(properties) = properties else {
            return match rest {
                Some(rest) => format!("Record<string, {rest}>"),
                None => "{}".to_owned(),
            };
        };
        let inner = "  ".repeat(indent + 1);
        let mut out = String::from("{\n");
        for (name, schema) in properties {
            if let Some(description) = schema.get("description").and_then(Value::as_str) {
                doc_comment(&mut out, &inner, description);
            }
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let _ = writeln!(
                out,
                "{inner}{}{optional}: {};",
                property_name(name),
                self.render(schema, depth + 1, indent + 1)
            );
        }
        if let Some(rest) = rest {
            let _ = writeln!(out, "{inner}[key: string]: {rest};");
        }
        out.push_str(&"  ".repeat(indent));
        out.push('}');
        out
    }

    /// The schema a local `$ref` points at: `#`, `#/$defs/X`,
    /// `#/definitions/X`, or any JSON pointer into the root.
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }
}

/// A JSON value as a TypeScript literal type (scalars), else `unknown`.
fn literal(value: &Value) -> String {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => value.to_string(),
        _ => "unknown".to_owned(),
    }
}

/// `a | b | c`, each kept whole; one option alone; none is `never`.
fn union(mut options: Vec<String>) -> String {
    options.dedup();
    match options.len() {
        0 => "never".to_owned(),
        1 => options.remove(0),
        _ => options
            .iter()
            .map(|option| wrap_function_like(option))
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

/// Parentheses around a union or intersection, where a suffix (`[]`) or
/// an operator would otherwise bind to its last part.
fn wrap(ty: &str) -> String {
    if needs_parentheses(ty) {
        format!("({ty})")
    } else {
        ty.to_owned()
    }
}

fn wrap_function_like(ty: &str) -> String {
    // A union inside a union reads the same without parentheses; only an
    // intersection is wrapped, for clarity.
    if top_level_contains(ty, '&') {
        format!("({ty})")
    } else {
        ty.to_owned()
    }
}

fn needs_parentheses(ty: &str) -> bool {
    top_level_contains(ty, '|') || top_level_contains(ty, '&')
}

/// Whether `operator` appears outside brackets and string literals.
fn top_level_contains(ty: &str, operator: char) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for c in ty.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' | '(' | '<' => depth += 1,
            '}' | ']' | ')' | '>' => depth = depth.saturating_sub(1),
            c if c == operator && depth == 0 => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(schema: Value) -> String {
        Schema::new(&schema).render(&schema, 0, 0)
    }

    #[test]
    fn scalars_literals_and_unions() {
        assert_eq!(render(json!({ "type": "string" })), "string");
        assert_eq!(render(json!({ "type": "integer" })), "number");
        assert_eq!(
            render(json!({ "type": ["string", "null"] })),
            "string | null"
        );
        assert_eq!(render(json!({ "enum": ["a", "b", 3] })), r#""a" | "b" | 3"#);
        assert_eq!(render(json!({ "const": "only" })), r#""only""#);
        assert_eq!(
            render(
                json!({ "anyOf": [{ "type": "number" }, { "type": "array", "items": { "type": "string" } }] })
            ),
            "number | string[]"
        );
        assert_eq!(render(json!(true)), "unknown");
        assert_eq!(render(json!(false)), "never");
        assert_eq!(render(json!({})), "unknown");
    }

    #[test]
    fn arrays_of_unions_are_parenthesised_and_tuples_listed() {
        assert_eq!(
            render(json!({ "type": "array", "items": { "type": ["string", "number"] } })),
            "(string | number)[]"
        );
        assert_eq!(
            render(
                json!({ "type": "array", "prefixItems": [{ "type": "string" }, { "type": "number" }] })
            ),
            "[string, number]"
        );
        assert_eq!(render(json!({ "type": "array" })), "unknown[]");
    }

    #[test]
    fn objects_mark_optional_fields_and_keep_descriptions() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Where the file is." },
                "encoding": { "enum": ["utf8", "base64"] },
                "max-bytes": { "type": "integer" },
                "range": {
                    "type": "object",
                    "properties": { "start": { "type": "integer" }, "end": { "type": "integer" } },
                    "required": ["start"],
                    "additionalProperties": false
                }
            },
            "required": ["path"],
            "additionalProperties": false
        });
        assert_eq!(
            render(schema),
            "{\n  encoding?: \"utf8\" | \"base64\";\n  \"max-bytes\"?: number;\n  /** Where the file is. */\n  path: string;\n  range?: {\n    end?: number;\n    start: number;\n  };\n}"
        );
    }

    #[test]
    fn open_objects_and_maps() {
        assert_eq!(
            render(json!({ "type": "object" })),
            "Record<string, unknown>"
        );
        assert_eq!(
            render(json!({ "type": "object", "additionalProperties": { "type": "number" } })),
            "Record<string, number>"
        );
        assert_eq!(
            render(json!({ "type": "object", "properties": {}, "additionalProperties": false })),
            "{}"
        );
    }

    #[test]
    fn local_references_resolve_and_recursion_ends_in_unknown() {
        let schema = json!({
            "$defs": { "node": {
                "type": "object",
                "properties": { "children": { "type": "array", "items": { "$ref": "#/$defs/node" } } },
                "additionalProperties": false
            }},
            "$ref": "#/$defs/node"
        });
        let rendered = render(schema);
        assert!(rendered.starts_with("{\n  children?: {\n"), "{rendered}");
        assert!(
            rendered.contains("unknown[]") || rendered.contains("unknown"),
            "{rendered}"
        );
        assert_eq!(
            render(json!({ "$ref": "https://example.com/schema" })),
            "unknown"
        );
    }

    #[test]
    fn all_of_is_an_intersection() {
        assert_eq!(
            render(json!({ "allOf": [{ "type": "string" }, { "enum": ["a"] }] })),
            r#"string & "a""#
        );
    }

    #[test]
    fn a_tool_list_declares_one_method_per_tool() {
        let parameters = json!({
            "type": "object",
            "properties": { "text": { "type": "string" } },
            "required": ["text"]
        });
        let output = json!({
            "type": "object",
            "properties": { "words": { "type": "integer" } },
            "required": ["words"]
        });
        let text = tools([
            Declared {
                name: "echo",
                description: "Echoes. Ends */ comments.",
                parameters: &parameters,
                output_schema: None,
            },
            Declared {
                name: "word-count",
                description: "Counts\nwords.",
                parameters: &parameters,
                output_schema: Some(&output),
            },
        ]);
        assert_eq!(
            text,
            "declare const tools: {\n  /** Echoes. Ends *\\/ comments. */\n  echo(args: {\n    text: string;\n  }): Promise<unknown>;\n  /**\n   * Counts\n   * words.\n   */\n  \"word-count\"(args: {\n    text: string;\n  }): Promise<{\n    words: number;\n  }>;\n};\n"
        );
    }
}
