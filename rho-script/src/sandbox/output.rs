//! [`ScriptOutput`]: what the sandbox answers, before it becomes the
//! call's [`ToolOutput`].
//!
//! The sandbox does not build a `ToolOutput` itself because its answer may
//! have to cross a process boundary first (the worker-process mode), and a
//! `ToolOutput` is opaque. A `ScriptOutput` holds the same forms as plain
//! data and goes over the wire as JSON, read back exactly: the details'
//! maps are read structurally (never as the `{"$bytes": ...}` form, which
//! the sandbox never makes), so an answer is the same in both modes.

use std::collections::BTreeMap;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{Image, ToolOutput};
use serde_json::{Map, Value, json};

use crate::sandbox::base64::{base64_decode, base64_encode};

/// What a script's call answered, in the forms a [`ToolOutput`] has.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScriptOutput {
    answer: Answered,
    details: Option<Plain>,
}

#[derive(Debug, Clone, PartialEq)]
enum Answered {
    Text(String),
    Images { images: Vec<Image>, text: String },
    Error(String),
    Crashed(String),
}

impl ScriptOutput {
    fn of(answer: Answered) -> Self {
        Self {
            answer,
            details: None,
        }
    }

    /// A successful answer of `text`.
    pub(crate) fn text(text: impl Into<String>) -> Self {
        Self::of(Answered::Text(text.into()))
    }

    /// A successful answer of images and `text`.
    pub(crate) fn images(images: Vec<Image>, text: impl Into<String>) -> Self {
        Self::of(Answered::Images {
            images,
            text: text.into(),
        })
    }

    /// A failed call: no strike against the tool.
    pub(crate) fn error(text: impl Into<String>) -> Self {
        Self::of(Answered::Error(text.into()))
    }

    /// A crashed call: a strike against the tool.
    pub(crate) fn crashed(text: impl Into<String>) -> Self {
        Self::of(Answered::Crashed(text.into()))
    }

    /// The answer with `details`.
    pub(crate) fn with_plain_details(mut self, details: Plain) -> Self {
        self.details = Some(details);
        self
    }

    /// The text the model would read.
    pub(crate) fn message(&self) -> &str {
        match &self.answer {
            Answered::Text(text)
            | Answered::Images { text, .. }
            | Answered::Error(text)
            | Answered::Crashed(text) => text,
        }
    }

    /// A crash as an error with the same text (the same answer, but no
    /// strike against the tool); other answers as they are.
    pub(crate) fn crash_as_error(self) -> Self {
        match self.answer {
            Answered::Crashed(text) => Self {
                answer: Answered::Error(text),
                details: self.details,
            },
            _ => self,
        }
    }

    /// The answer as the call's output.
    pub(crate) fn into_tool_output(self) -> ToolOutput {
        let output = match self.answer {
            Answered::Text(text) => ToolOutput::text(text),
            Answered::Images { images, text } => ToolOutput::images(images, text),
            Answered::Error(text) => ToolOutput::error(text),
            Answered::Crashed(text) => ToolOutput::crashed(text),
        };
        match self.details {
            Some(details) => output.with_plain_details(details),
            None => output,
        }
    }

    /// The answer as JSON, for the wire.
    pub(crate) fn to_wire(&self) -> Value {
        let mut wire = Map::new();
        let (kind, text) = match &self.answer {
            Answered::Text(text) => ("text", text),
            Answered::Images { images, text } => {
                let images = images
                    .iter()
                    .map(|image| {
                        json!({ "mimeType": image.mime_type, "data": base64_encode(&image.data) })
                    })
                    .collect();
                wire.insert("images".to_owned(), Value::Array(images));
                ("text", text)
            }
            Answered::Error(text) => ("error", text),
            Answered::Crashed(text) => ("crashed", text),
        };
        wire.insert(kind.to_owned(), Value::String(text.clone()));
        if let Some(details) = &self.details {
            wire.insert("details".to_owned(), plain_to_wire(details));
        }
        Value::Object(wire)
    }

    /// The answer [`to_wire`](Self::to_wire) wrote, or what is wrong
    /// with it.
    pub(crate) fn from_wire(wire: Value) -> Result<Self, String> {
        let Value::Object(mut wire) = wire else {
            return Err("an answer that is not an object".to_owned());
        };
        let details = wire.remove("details").map(plain_from_wire);
        let images = wire.remove("images");
        let text = |value: Value| match value {
            Value::String(text) => Ok(text),
            _ => Err("an answer's text that is not a string".to_owned()),
        };
        let answer = match (
            wire.remove("text"),
            wire.remove("error"),
            wire.remove("crashed"),
        ) {
            (Some(value), None, None) => match images {
                None => Answered::Text(text(value)?),
                Some(images) => Answered::Images {
                    images: images_from_wire(images)?,
                    text: text(value)?,
                },
            },
            (None, Some(value), None) if images.is_none() => Answered::Error(text(value)?),
            (None, None, Some(value)) if images.is_none() => Answered::Crashed(text(value)?),
            _ => return Err("an answer of no known form".to_owned()),
        };
        if let Some(key) = wire.keys().next() {
            return Err(format!("an answer with an unknown field `{key}`"));
        }
        Ok(Self { answer, details })
    }
}

fn images_from_wire(images: Value) -> Result<Vec<Image>, String> {
    let Value::Array(images) = images else {
        return Err("images that are not a list".to_owned());
    };
    images
        .into_iter()
        .map(|image| {
            let mime = image.get("mimeType").and_then(Value::as_str);
            let data = image
                .get("data")
                .and_then(Value::as_str)
                .and_then(base64_decode);
            match (mime, data) {
                (Some(mime), Some(data)) => Ok(Image::new(mime, data)),
                _ => Err("an image that is not `{ mimeType, data }`".to_owned()),
            }
        })
        .collect()
}

/// Plain data as JSON. The sandbox makes no bytes; were there any, they
/// would go as base64 text.
pub(crate) fn plain_to_wire(plain: &Plain) -> Value {
    // Plain data's own impls are trusted; a value the sandbox made within
    // its limits always serialises.
    serde_json::to_value(plain).unwrap_or(Value::Null)
}

/// JSON read back as plain data, structurally: every object a map.
/// Integers as the sandbox makes them (signed, as a JavaScript number's
/// integer is; unsigned only past `i64`), other numbers as floats. Depth
/// is bounded by the JSON parser that made the value.
pub(crate) fn plain_from_wire(value: Value) -> Plain {
    match value {
        Value::Null => Plain::Null,
        Value::Bool(flag) => Plain::Bool(flag),
        Value::Number(number) => {
            if let Some(n) = number.as_i64() {
                Plain::Int(n)
            } else if let Some(n) = number.as_u64() {
                Plain::UInt(n)
            } else {
                match number.as_f64() {
                    Some(x) if x.is_finite() => Plain::Float(x),
                    _ => Plain::Text(number.to_string()),
                }
            }
        }
        Value::String(text) => Plain::Text(text),
        Value::Array(list) => Plain::List(list.into_iter().map(plain_from_wire).collect()),
        Value::Object(map) => Plain::Map(
            map.into_iter()
                .map(|(key, value)| (key, plain_from_wire(value)))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

/// Plain data on a worker's wire, for `#[serde(with = "plain_wire")]`.
///
/// Not [`Plain`]'s own `Deserialize`: that reads a one-key map
/// `{"$bytes": ...}` as bytes and a small unsigned integer as
/// [`Plain::UInt`], while in the sandbox a script's object of that shape
/// is a map and its integers are signed. Read structurally
/// ([`plain_from_wire`]), what crosses is what the in-process mode has.
pub(crate) mod plain_wire {
    use rho_tool_core::untrusted::Plain;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        plain: &Plain,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        plain.serialize(serializer)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Plain, D::Error> {
        serde_json::Value::deserialize(deserializer).map(super::plain_from_wire)
    }
}

/// A [`ScriptOutput`] on a worker's wire, for
/// `#[serde(with = "output_wire")]`: the form of
/// [`ScriptOutput::to_wire`], read back by [`ScriptOutput::from_wire`],
/// which checks every field (the worker is untrusted) and keeps the
/// details as [`plain_wire`] does.
pub(crate) mod output_wire {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::ScriptOutput;

    pub(crate) fn serialize<S: Serializer>(
        output: &ScriptOutput,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        output.to_wire().serialize(serializer)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<ScriptOutput, D::Error> {
        ScriptOutput::from_wire(serde_json::Value::deserialize(deserializer)?)
            .map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_crosses_the_wire_unchanged() {
        let details = Plain::Map(
            [
                ("$bytes".to_owned(), Plain::Text("AAAA".to_owned())),
                ("n".to_owned(), Plain::Int(-3)),
                ("u".to_owned(), Plain::UInt(u64::MAX)),
                ("i".to_owned(), Plain::Int(3)),
                ("f".to_owned(), Plain::Float(2.0)),
                (
                    "list".to_owned(),
                    Plain::List(vec![Plain::Null, Plain::Bool(true)]),
                ),
            ]
            .into_iter()
            .collect(),
        );
        let outputs = [
            ScriptOutput::text("hi").with_plain_details(details.clone()),
            ScriptOutput::images(vec![Image::new("image/png", vec![1, 2, 3])], "a picture"),
            ScriptOutput::error("no").with_plain_details(Plain::Text("why".to_owned())),
            ScriptOutput::crashed("boom"),
        ];
        for output in outputs {
            let json = serde_json::to_string(&output.to_wire()).expect("JSON");
            let back = ScriptOutput::from_wire(serde_json::from_str(&json).expect("JSON"));
            assert_eq!(back.as_ref(), Ok(&output), "{json}");
        }
    }

    #[test]
    fn a_malformed_wire_answer_is_refused() {
        for wire in [
            json!("text"),
            json!({}),
            json!({ "text": "a", "error": "b" }),
            json!({ "text": 1 }),
            json!({ "error": "a", "images": [] }),
            json!({ "text": "a", "extra": 1 }),
            json!({ "text": "a", "images": [{ "mimeType": "image/png", "data": "*" }] }),
        ] {
            assert!(ScriptOutput::from_wire(wire.clone()).is_err(), "{wire}");
        }
    }
}
