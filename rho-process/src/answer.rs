//! The child's answer on stdout, and how it maps to a [`ToolOutput`].
//!
//! The shape (see the crate docs for the full protocol) is one JSON object:
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `text` | string | a successful answer |
//! | `error` | string | a failed call; the model reads it as the error |
//! | `images` | list of `{"mimeType": string, "data": base64 string}` | images, only beside `text` |
//! | `details` | any JSON | data for host screens, beside either |
//!
//! Exactly one of `text` and `error`; no other fields. A `null` field counts
//! as absent. Image data is standard base64 with padding, as
//! [`base64_decode`] reads it.

use rho_tool_core::untrusted::plain::base64_decode;
use rho_tool_core::{Image, ToolOutput};
use serde_json::{Map, Value};

/// The fields an answer may have.
const FIELDS: [&str; 4] = ["text", "error", "images", "details"];

/// Why stdout is not an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// Nothing but whitespace.
    Empty,
    /// Not one JSON value; serde_json's reason.
    NotJson(String),
    /// JSON, but not an answer; what is wrong.
    Shape(String),
}

/// Reads the answer from the child's whole stdout.
pub(crate) fn parse(stdout: &[u8]) -> Result<ToolOutput, Invalid> {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Err(Invalid::Empty);
    }
    let value: Value =
        serde_json::from_slice(stdout).map_err(|error| Invalid::NotJson(error.to_string()))?;
    let Value::Object(mut answer) = value else {
        return Err(Invalid::Shape(format!(
            "it is {}, not an object",
            kind(&value)
        )));
    };
    if let Some(unknown) = answer.keys().find(|key| !FIELDS.contains(&key.as_str())) {
        return Err(Invalid::Shape(format!(
            "unknown field `{}` (the fields are `text`, `error`, `images` and `details`)",
            clip(unknown)
        )));
    }
    let text = string_field(&mut answer, "text")?;
    let error = string_field(&mut answer, "error")?;
    let images = images_field(&mut answer)?;
    let details = answer.remove("details").filter(|value| !value.is_null());

    let output = match (text, error, images) {
        (Some(_), Some(_), _) => {
            return Err(Invalid::Shape(
                "it has both `text` and `error`; give one".to_owned(),
            ));
        }
        (None, None, _) => {
            return Err(Invalid::Shape(
                "it has neither `text` nor `error`".to_owned(),
            ));
        }
        (None, Some(_), Some(_)) => {
            return Err(Invalid::Shape(
                "`images` go with `text`, not with `error`".to_owned(),
            ));
        }
        (Some(text), None, None) => ToolOutput::text(text),
        (Some(text), None, Some(images)) => ToolOutput::images(images, text),
        (None, Some(error), None) => ToolOutput::error(error),
    };
    Ok(match details {
        Some(details) => output.with_details(details),
        None => output,
    })
}

/// The string field `name`, if present and not `null`.
fn string_field(answer: &mut Map<String, Value>, name: &str) -> Result<Option<String>, Invalid> {
    match answer.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(Invalid::Shape(format!(
            "`{name}` must be a string, not {}",
            kind(&other)
        ))),
    }
}

/// The `images` field, if present and not `null`.
fn images_field(answer: &mut Map<String, Value>) -> Result<Option<Vec<Image>>, Invalid> {
    match answer.remove("images") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| image(index, item))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(Invalid::Shape(format!(
            "`images` must be a list, not {}",
            kind(&other)
        ))),
    }
}

/// One image: `{"mimeType": "image/png", "data": "<base64>"}`.
///
/// Whether it is an image at all (bytes present, an `image/*` type) is
/// checked by rho's core when it normalises the answer.
fn image(index: usize, item: Value) -> Result<Image, Invalid> {
    let shape = |what: String| Invalid::Shape(format!("`images[{index}]` {what}"));
    let Value::Object(mut fields) = item else {
        return Err(shape(format!("is {}, not an object", kind(&item))));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|key| !matches!(key.as_str(), "mimeType" | "data"))
    {
        return Err(shape(format!(
            "has an unknown field `{}` (the fields are `mimeType` and `data`)",
            clip(unknown)
        )));
    }
    let mut text = |name: &str| match fields.remove(name) {
        Some(Value::String(text)) => Ok(text),
        None => Err(shape(format!("has no `{name}`"))),
        Some(other) => Err(shape(format!(
            "`{name}` must be a string, not {}",
            kind(&other)
        ))),
    };
    let mime_type = text("mimeType")?;
    let data = text("data")?;
    let bytes = base64_decode(&data).ok_or_else(|| {
        shape("`data` is not valid base64 (the standard alphabet, with padding)".to_owned())
    })?;
    Ok(Image::new(mime_type, bytes))
}

/// "a string", "an object": the kind of a JSON value, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A field name in a message, at most 64 characters of it.
fn clip(name: &str) -> String {
    match name.char_indices().nth(64) {
        Some((end, _)) => format!("{}…", &name[..end]),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_tool_core::Content;

    fn result(stdout: &str) -> rho_tool_core::ToolResult {
        parse(stdout.as_bytes())
            .expect("a valid answer")
            .to_result(&Default::default())
            .expect("a usable answer")
    }

    fn shape(stdout: &str) -> String {
        match parse(stdout.as_bytes()) {
            Err(Invalid::Shape(why)) => why,
            other => panic!("expected a shape error, got {other:?}"),
        }
    }

    #[test]
    fn text_error_details_and_images_map_to_the_output() {
        let ok = result(r#"{"text": "hi"}"#);
        assert!(!ok.is_error);
        assert_eq!(ok.text(), "hi");
        assert_eq!(ok.details, None);

        let failed = result("{\"error\": \"no such file\", \"details\": {\"path\": \"/x\"}}\n");
        assert!(failed.is_error);
        assert_eq!(failed.text(), "no such file");
        let details = failed.details.expect("details");
        assert_eq!(details.to_json(), serde_json::json!({ "path": "/x" }));

        let shot = result(
            r#"{"text": "a dot", "images": [{"mimeType": "image/png", "data": "AQID"}], "details": null}"#,
        );
        assert_eq!(
            shot.content(),
            vec![
                Content::image(rho_tool_core::Image::new("image/png", vec![1, 2, 3])),
                Content::text("a dot"),
            ]
        );
    }

    #[test]
    fn output_that_is_not_an_answer_says_why() {
        assert!(matches!(parse(b" \n"), Err(Invalid::Empty)));
        assert!(matches!(parse(b"hello"), Err(Invalid::NotJson(_))));
        assert!(matches!(
            parse(b"{\"text\": \"a\"} {}"),
            Err(Invalid::NotJson(_))
        ));
        assert_eq!(shape("[1]"), "it is a list, not an object");
        assert_eq!(
            shape(r#"{"txt": "a"}"#),
            "unknown field `txt` (the fields are `text`, `error`, `images` and `details`)"
        );
        assert_eq!(
            shape(r#"{"text": 5}"#),
            "`text` must be a string, not a number"
        );
        assert_eq!(shape("{}"), "it has neither `text` nor `error`");
        assert_eq!(
            shape(r#"{"text": "a", "error": "b"}"#),
            "it has both `text` and `error`; give one"
        );
        assert_eq!(
            shape(r#"{"error": "a", "images": []}"#),
            "`images` go with `text`, not with `error`"
        );
        assert_eq!(
            shape(r#"{"text": "a", "images": [{"mimeType": "image/png", "data": "AQI"}]}"#),
            "`images[0]` `data` is not valid base64 (the standard alphabet, with padding)"
        );
        assert_eq!(
            shape(r#"{"text": "a", "images": [{"data": "AQID"}]}"#),
            "`images[0]` has no `mimeType`"
        );
        assert_eq!(
            shape(r#"{"text": "a", "images": "x"}"#),
            "`images` must be a list, not a string"
        );
    }
}
