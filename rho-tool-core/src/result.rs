//! `ToolResult`: the normalised answer the loop, the model and the session get.

use rho_untrusted::Plain;
use serde::{Deserialize, Serialize};

/// The result of one call, as plain data.
///
/// It serialises to JSON in the shape MCP's `CallToolResult` uses, so a host
/// can store it in its session or forward it as is:
///
/// ```
/// use rho_tool_core::{Content, ToolResult};
///
/// let result = ToolResult {
///     content: vec![
///         Content::Image { mime_type: "image/png".into(), data: vec![1, 2, 3] },
///         Content::text("a tiny picture"),
///     ],
///     details: None,
///     is_error: false,
/// };
/// let json = serde_json::to_value(&result).unwrap();
/// assert_eq!(json, serde_json::json!({
///     "content": [
///         { "type": "image", "mimeType": "image/png", "data": "AQID" },
///         { "type": "text", "text": "a tiny picture" },
///     ],
///     "isError": false,
/// }));
/// assert_eq!(serde_json::from_value::<ToolResult>(json).unwrap(), result);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// What the model reads: text and images, in order.
    pub content: Vec<Content>,
    /// Data for host screens; the model does not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Plain>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result of `text`.
    pub fn success(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            details: None,
            is_error: false,
        }
    }

    /// An error result of `text`.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            details: None,
            is_error: true,
        }
    }

    /// All the text parts, joined by newlines.
    pub fn text(&self) -> String {
        let mut texts = self.content.iter().filter_map(|part| match part {
            Content::Text { text } => Some(text.as_str()),
            Content::Image { .. } => None,
        });
        let mut joined = texts.next().unwrap_or_default().to_owned();
        for text in texts {
            joined.push('\n');
            joined.push_str(text);
        }
        joined
    }

    /// The number of images.
    pub fn image_count(&self) -> usize {
        self.content
            .iter()
            .filter(|part| matches!(part, Content::Image { .. }))
            .count()
    }
}

/// One part of a result's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
    /// An image for the model; its bytes serialise as base64.
    Image {
        /// The mime type, such as `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// The raw bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }
}

mod base64_bytes {
    use rho_untrusted::plain::{base64_decode, base64_encode};
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&base64_encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        base64_decode(&text).ok_or_else(|| D::Error::custom("image data is not valid base64"))
    }
}
