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
//! Exactly one of `text` and `error`; no other fields, none twice. A `null`
//! field counts as absent. Image data is standard base64 with padding
//! (`base64`'s `STANDARD` engine).
//!
//! serde reads the shape (types, unknown, missing and repeated fields, with
//! the line and column of what is wrong); the rules across fields are
//! checked after.

use std::fmt;
use std::marker::PhantomData;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rho_tool_core::{Image, ToolOutput};
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de};
use serde_json::Value;
use serde_json::error::Category;

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

/// The answer as the child writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    images: Option<Vec<Object<ImageAnswer>>>,
    #[serde(default)]
    details: Option<Value>,
}

/// One image: `{"mimeType": "image/png", "data": "<base64>"}`.
///
/// Whether it is an image at all (bytes present, an `image/*` type) is
/// checked by rho's core when it normalises the answer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ImageAnswer {
    mime_type: String,
    #[serde(deserialize_with = "base64_data")]
    data: Vec<u8>,
}

/// Reads the answer from the child's whole stdout.
pub(crate) fn parse(stdout: &[u8]) -> Result<ToolOutput, Invalid> {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Err(Invalid::Empty);
    }
    let Object(answer) = serde_json::from_slice::<Object<Answer>>(stdout).map_err(|error| {
        let why = message(&error);
        match error.classify() {
            Category::Data => Invalid::Shape(why),
            Category::Syntax | Category::Eof | Category::Io => Invalid::NotJson(why),
        }
    })?;
    let Answer {
        text,
        error,
        images,
        details,
    } = answer;

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
        (Some(text), None, Some(images)) => ToolOutput::images(
            images
                .into_iter()
                .map(|Object(image)| Image::new(image.mime_type, image.data))
                .collect(),
            text,
        ),
        (None, Some(error), None) => ToolOutput::error(error),
    };
    Ok(match details {
        Some(details) => output.with_details(details),
        None => output,
    })
}

/// A JSON object read as `T`, and nothing else.
///
/// serde's derived structs also take a JSON list of their fields in order
/// (`["hi"]` for `{"text": "hi"}`); the protocol has objects only.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Takes a map and hands it to `T`'s own deserializer.
        struct MapOnly<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for MapOnly<T> {
            type Value = T;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }

        deserializer
            .deserialize_map(MapOnly(PhantomData))
            .map(Object)
    }
}

/// An image's `data`: standard base64 with padding, decoded.
fn base64_data<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    let text = String::deserialize(deserializer)?;
    STANDARD.decode(text).map_err(|error| {
        de::Error::custom(format_args!(
            "`data` is not valid base64 (the standard alphabet, with padding): {error}"
        ))
    })
}

/// serde_json's message, its part before the position clipped: it may quote
/// the child's output (a field name, a string of the wrong type).
fn message(error: &serde_json::Error) -> String {
    let full = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match full.strip_suffix(&position) {
        Some(reason) if error.line() != 0 => format!("{}{position}", clip(reason)),
        _ => clip(&full),
    }
}

/// `text`, or its first 120 and last 80 characters when it is longer than
/// that: a long quote is cut in its middle, and what serde says after it
/// (`expected one of ...`) is kept.
fn clip(text: &str) -> String {
    const HEAD: usize = 120;
    const TAIL: usize = 80;
    let chars = text.chars().count();
    if chars <= HEAD + TAIL {
        return text.to_owned();
    }
    let head: String = text.chars().take(HEAD).collect();
    let tail: String = text.chars().skip(chars - TAIL).collect();
    format!("{head}…{tail}")
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
            Err(Invalid::NotJson(why)) if why == "trailing characters at line 1 column 15"
        ));
        assert_eq!(
            shape("[1]"),
            "invalid type: sequence, expected a JSON object at line 1 column 0"
        );
        assert_eq!(
            shape(r#"{"txt": "a"}"#),
            "unknown field `txt`, expected one of `text`, `error`, `images`, `details` \
             at line 1 column 6"
        );
        assert_eq!(
            shape(r#"{"text": 5}"#),
            "invalid type: integer `5`, expected a string at line 1 column 10"
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
            "`data` is not valid base64 (the standard alphabet, with padding): \
             Invalid padding at line 1 column 65"
        );
        assert_eq!(
            shape(r#"{"text": "a", "images": [{"data": "AQID"}]}"#),
            "missing field `mimeType` at line 1 column 41"
        );
        assert_eq!(
            shape(r#"{"text": "a", "images": [{"mimeType": "image/png", "data": "", "x": 1}]}"#),
            "unknown field `x`, expected `mimeType` or `data` at line 1 column 66"
        );
        assert_eq!(
            shape(r#"{"text": "a", "images": "x"}"#),
            "invalid type: string \"x\", expected a sequence at line 1 column 27"
        );
    }

    #[test]
    fn null_fields_are_absent_and_repeated_ones_refused() {
        let ok = result(r#"{"text": "hi", "error": null, "images": null, "details": null}"#);
        assert_eq!(
            (ok.is_error, ok.text(), ok.details),
            (false, "hi".into(), None)
        );
        assert_eq!(
            shape(r#"{"text": "a", "text": "b"}"#),
            "duplicate field `text` at line 1 column 20"
        );
    }

    #[test]
    fn an_answer_or_an_image_written_as_a_list_is_refused() {
        // serde's derived structs would take `["hi"]` for `{"text": "hi"}`.
        assert_eq!(
            shape(r#"["hi"]"#),
            "invalid type: sequence, expected a JSON object at line 1 column 0"
        );
        assert_eq!(
            shape(r#"{"text": "a", "images": [["image/png", "AQID"]]}"#),
            "invalid type: sequence, expected a JSON object at line 1 column 25"
        );
    }

    #[test]
    fn what_is_quoted_from_the_output_is_clipped() {
        let long = format!(r#"{{"{}": 1}}"#, "x".repeat(100_000));
        let why = shape(&long);
        assert!(why.chars().count() < 250, "{why}");
        assert!(why.starts_with("unknown field `xxx"), "{why}");
        assert!(
            why.ends_with(
                "xxx`, expected one of `text`, `error`, `images`, `details` at line 1 column 100003"
            ),
            "{why}"
        );
    }

    #[test]
    fn deep_or_huge_output_is_an_error_not_a_crash() {
        let deep = format!(r#"{{"text": "a", "details": {}}}"#, "[".repeat(1_000_000));
        match parse(deep.as_bytes()) {
            Err(Invalid::NotJson(why)) => {
                assert!(
                    why.starts_with("recursion limit exceeded at line 1"),
                    "{why}"
                );
            }
            other => panic!("expected a JSON error, got {other:?}"),
        }
        let deep = format!(
            r#"{{"text": "a", "details": {}1{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(parse(deep.as_bytes()).is_ok());
        assert!(matches!(
            parse("[".repeat(1_000_000).as_bytes()),
            Err(Invalid::Shape(_))
        ));
    }
}
