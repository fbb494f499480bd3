//! `Content`: one part of what the model reads of a result.
//!
//! The parts are MCP's content blocks (text, image, audio, a link to a
//! resource, an embedded resource), so a result crosses an MCP boundary in
//! either direction without losing anything (what an MCP part carries
//! beside its data, such as its annotations and `_meta`, is kept beside it
//! in the result: [`ToolResult::extras`](crate::ToolResult::extras)). The enum is
//! `#[non_exhaustive]`: MCP grows, and so may this list, without a breaking
//! change. Text is held inline (it is nearly every part); the other parts
//! are boxed, so that a part is the size of a text.
//!
//! An [`Image`] lives here, with the part that holds it: a tool's answer
//! and a result both speak of images, and both build on the parts.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use rho_untrusted::Plain;
use rho_untrusted::plain::{base64_decode, base64_encode};

/// An image in an answer: its mime type and raw bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    /// The mime type, such as `image/png`.
    pub mime_type: String,
    /// The encoded image (not base64: rho encodes it when it serialises).
    pub data: Vec<u8>,
}

impl Image {
    /// An image of `mime_type` made of `data`.
    pub fn new(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Image")
            .field("mime_type", &self.mime_type)
            .field("bytes", &self.data.len())
            .finish()
    }
}

/// One part of a result's content.
///
/// Serialises in MCP's shape (`{"type": "text", "text": ...}`,
/// `{"type": "image", "mimeType": ..., "data": <base64>}`, ...).
///
/// ```
/// use rho::{Content, Image};
///
/// let parts = [Content::text("a chart"), Content::image(Image::new("image/png", [1, 2, 3]))];
/// let json = serde_json::to_value(&parts).unwrap();
/// assert_eq!(json[0], serde_json::json!({ "type": "text", "text": "a chart" }));
/// assert_eq!(json[1]["data"], "AQID");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content {
    /// Text for the model.
    Text(String),
    /// An image for the model (boxed: see [`Content::image`]).
    Image(Box<Image>),
    /// A sound for the model (boxed, like an image).
    Audio(Box<Audio>),
    /// A link to a resource the model (or the host) may read.
    ResourceLink(Box<ResourceLink>),
    /// A resource's contents, embedded in the result.
    Resource(Box<EmbeddedResource>),
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }

    /// An image part. Media parts are boxed so that a part stays the size
    /// of a text: a result's one part is held inline, and every call's
    /// result moves through the loop, so its size is paid by every call.
    pub fn image(image: Image) -> Self {
        Content::Image(Box::new(image))
    }

    /// A sound part.
    pub fn audio(audio: Audio) -> Self {
        Content::Audio(Box::new(audio))
    }

    /// The text, when this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(text) => Some(text),
            Content::Image(_)
            | Content::Audio(_)
            | Content::ResourceLink(_)
            | Content::Resource(_) => None,
        }
    }

    /// The image, when this is an image part.
    pub fn as_image(&self) -> Option<&Image> {
        match self {
            Content::Image(image) => Some(image),
            Content::Text(_)
            | Content::Audio(_)
            | Content::ResourceLink(_)
            | Content::Resource(_) => None,
        }
    }

    /// MCP's name of the part's type: `"text"`, `"image"`, `"audio"`,
    /// `"resource_link"` or `"resource"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Content::Text(_) => "text",
            Content::Image(_) => "image",
            Content::Audio(_) => "audio",
            Content::ResourceLink(_) => "resource_link",
            Content::Resource(_) => "resource",
        }
    }
}

/// A sound in a result: its mime type and raw bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Audio {
    /// The mime type, such as `audio/wav`.
    pub mime_type: String,
    /// The encoded sound (not base64: rho encodes it when it serialises).
    pub data: Vec<u8>,
}

impl Audio {
    /// A sound of `mime_type` made of `data`.
    pub fn new(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }
}

impl std::fmt::Debug for Audio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audio")
            .field("mime_type", &self.mime_type)
            .field("bytes", &self.data.len())
            .finish()
    }
}

/// A link to a resource, as MCP's `resource_link` content.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people, if any.
    pub title: Option<String>,
    /// What it is, if said.
    pub description: Option<String>,
    /// Its mime type, if known.
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    pub size: Option<u64>,
}

impl ResourceLink {
    /// A link to `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// The same link with a mime type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The same link with a description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A resource's contents embedded in a result, as MCP's `resource` content.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its mime type, if known.
    pub mime_type: Option<String>,
    /// Its contents.
    pub contents: ResourceContents,
}

impl EmbeddedResource {
    /// The resource at `uri` with `contents`.
    pub fn new(uri: impl Into<String>, contents: ResourceContents) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            contents,
        }
    }

    /// The same resource with a mime type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// The contents of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes (base64 in JSON).
    Blob(Vec<u8>),
}

/// The JSON shape of a part, borrowed from it.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireOut<'a> {
    Text {
        text: &'a str,
    },
    Image {
        #[serde(rename = "mimeType")]
        mime_type: &'a str,
        data: String,
    },
    Audio {
        #[serde(rename = "mimeType")]
        mime_type: &'a str,
        data: String,
    },
    ResourceLink {
        uri: &'a str,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    Resource {
        resource: ResourceOut<'a>,
    },
}

#[derive(Serialize)]
struct ResourceOut<'a> {
    uri: &'a str,
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob: Option<String>,
}

/// The JSON shape of a part, owned, as it is read.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireIn {
    Text {
        text: String,
    },
    Image {
        #[serde(rename = "mimeType")]
        mime_type: String,
        data: String,
    },
    Audio {
        #[serde(rename = "mimeType")]
        mime_type: String,
        data: String,
    },
    ResourceLink {
        uri: String,
        name: String,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        description: Option<String>,
        #[serde(rename = "mimeType", default)]
        mime_type: Option<String>,
        #[serde(default)]
        size: Option<u64>,
    },
    Resource {
        resource: ResourceIn,
    },
}

#[derive(Deserialize)]
struct ResourceIn {
    uri: String,
    #[serde(rename = "mimeType", default)]
    mime_type: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    blob: Option<String>,
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            Content::Text(text) => WireOut::Text { text },
            Content::Image(image) => WireOut::Image {
                mime_type: &image.mime_type,
                data: base64_encode(&image.data),
            },
            Content::Audio(audio) => WireOut::Audio {
                mime_type: &audio.mime_type,
                data: base64_encode(&audio.data),
            },
            Content::ResourceLink(link) => WireOut::ResourceLink {
                uri: &link.uri,
                name: &link.name,
                title: link.title.as_deref(),
                description: link.description.as_deref(),
                mime_type: link.mime_type.as_deref(),
                size: link.size,
            },
            Content::Resource(resource) => {
                let (text, blob) = match &resource.contents {
                    ResourceContents::Text(text) => (Some(text.as_str()), None),
                    ResourceContents::Blob(bytes) => (None, Some(base64_encode(bytes))),
                };
                WireOut::Resource {
                    resource: ResourceOut {
                        uri: &resource.uri,
                        mime_type: resource.mime_type.as_deref(),
                        text,
                        blob,
                    },
                }
            }
        };
        wire.serialize(serializer)
    }
}

/// The fields of a part's JSON that [`Content`] holds, by its `type`
/// (`type` itself included); for an embedded resource, those of the
/// resource inside it too.
fn held_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "text" => &["type", "text"],
        "image" | "audio" => &["type", "mimeType", "data"],
        "resource_link" => &[
            "type",
            "uri",
            "name",
            "title",
            "description",
            "mimeType",
            "size",
        ],
        "resource" => &["type", "resource"],
        _ => &["type"],
    }
}

/// The fields of an embedded resource's `resource` that
/// [`EmbeddedResource`] holds.
const HELD_RESOURCE_FIELDS: [&str; 4] = ["uri", "mimeType", "text", "blob"];

/// Reads one part from its MCP JSON, with its extras: the fields the part
/// carried that [`Content`] does not hold (see [`ToolResult::extras`](crate::ToolResult::extras)).
pub(crate) fn read_part(json: &Value) -> Result<(Content, Option<Plain>), serde_json::Error> {
    let part = Content::deserialize(json)?;
    let Value::Object(fields) = json else {
        return Ok((part, None));
    };
    let mut extras = BTreeMap::new();
    for (key, value) in fields {
        if !held_fields(part.kind()).contains(&key.as_str()) {
            extras.insert(key.clone(), Plain::from(value.clone()));
        }
    }
    if let (Content::Resource(_), Some(Value::Object(resource))) = (&part, fields.get("resource")) {
        let inner: BTreeMap<String, Plain> = resource
            .iter()
            .filter(|(key, _)| !HELD_RESOURCE_FIELDS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), Plain::from(value.clone())))
            .collect();
        if !inner.is_empty() {
            extras.insert("resource".to_owned(), Plain::Map(inner));
        }
    }
    Ok((part, (!extras.is_empty()).then_some(Plain::Map(extras))))
}

/// `part` as MCP's JSON with `extras` merged in: each extra field is added
/// where the part has no field of that name (inside objects both have, one
/// level at a time), so the part's own data always wins.
pub(crate) fn write_part(part: &Content, extras: &Plain) -> Result<Value, serde_json::Error> {
    let mut json = serde_json::to_value(part)?;
    merge(&mut json, extras);
    Ok(json)
}

fn merge(into: &mut Value, extras: &Plain) {
    let (Value::Object(fields), Some(extras)) = (into, extras.as_map()) else {
        return;
    };
    for (key, extra) in extras {
        match fields.get_mut(key) {
            None => {
                fields.insert(key.clone(), extra.to_json());
            }
            Some(own) => merge(own, extra),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes = |data: &str, what: &str| {
            base64_decode(data).ok_or_else(|| D::Error::custom(format!("{what} is not base64")))
        };
        Ok(match WireIn::deserialize(deserializer)? {
            WireIn::Text { text } => Content::Text(text),
            WireIn::Image { mime_type, data } => Content::image(Image {
                data: bytes(&data, "image data")?,
                mime_type,
            }),
            WireIn::Audio { mime_type, data } => Content::audio(Audio {
                data: bytes(&data, "audio data")?,
                mime_type,
            }),
            WireIn::ResourceLink {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            } => Content::ResourceLink(Box::new(ResourceLink {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            })),
            WireIn::Resource { resource } => {
                let contents = match (resource.text, resource.blob) {
                    (Some(text), None) => ResourceContents::Text(text),
                    (None, Some(blob)) => ResourceContents::Blob(bytes(&blob, "resource blob")?),
                    _ => {
                        return Err(D::Error::custom(
                            "an embedded resource has exactly one of `text` and `blob`",
                        ));
                    }
                };
                Content::Resource(Box::new(EmbeddedResource {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    contents,
                }))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(part: Content, expected: serde_json::Value) {
        let json = serde_json::to_value(&part).expect("a part serialises");
        assert_eq!(json, expected);
        let back: Content = serde_json::from_value(json).expect("and reads back");
        assert_eq!(back, part);
    }

    #[test]
    fn every_part_round_trips_in_mcps_shape() {
        round_trip(Content::text("hi"), json!({ "type": "text", "text": "hi" }));
        round_trip(
            Content::image(Image::new("image/png", [1, 2, 3])),
            json!({ "type": "image", "mimeType": "image/png", "data": "AQID" }),
        );
        round_trip(
            Content::audio(Audio::new("audio/wav", [0])),
            json!({ "type": "audio", "mimeType": "audio/wav", "data": "AA==" }),
        );
        round_trip(
            Content::ResourceLink(Box::new(
                ResourceLink::new("file:///a.rs", "a.rs").with_mime_type("text/x-rust"),
            )),
            json!({ "type": "resource_link", "uri": "file:///a.rs", "name": "a.rs",
                    "mimeType": "text/x-rust" }),
        );
        round_trip(
            Content::Resource(Box::new(EmbeddedResource::new(
                "file:///b.bin",
                ResourceContents::Blob(vec![255]),
            ))),
            json!({ "type": "resource", "resource": { "uri": "file:///b.bin", "blob": "/w==" } }),
        );
    }

    #[test]
    fn malformed_parts_are_errors_not_panics() {
        for bad in [
            json!({ "type": "image", "mimeType": "image/png", "data": "not base64!" }),
            json!({ "type": "resource", "resource": { "uri": "x", "text": "a", "blob": "AA==" } }),
            json!({ "type": "resource", "resource": { "uri": "x" } }),
            json!({ "type": "hologram" }),
            json!({ "text": "no type" }),
        ] {
            assert!(
                serde_json::from_value::<Content>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_part_is_the_size_of_a_text() {
        // Text inline, the rest boxed: a one-text result holds its part
        // inline without growing every call's result.
        assert!(std::mem::size_of::<Content>() <= 32);
    }
}
