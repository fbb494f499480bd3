//! `ToolResult`: the normalised answer the loop, the model and the session get.

use rho_untrusted::Plain;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::content::Content;
use crate::output::Image;

/// The result of one call, as plain data.
///
/// It serialises to JSON in the shape MCP's `CallToolResult` uses, so a host
/// can store it in its session or forward it as is:
///
/// ```
/// use rho_tool_core::{Content, Image, ToolResult};
///
/// let result = ToolResult::from_content(
///     [Content::image(Image::new("image/png", vec![1, 2, 3])), Content::text("a tiny picture")],
///     false,
/// );
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
///
/// # Why the content is behind methods
///
/// Nearly every result is one text part. Such a result holds its part
/// inline, so making one allocates the text and nothing else; a result of
/// several parts holds a list. [`content`](ToolResult::content) gives the
/// parts as a slice either way.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    content: Parts,
    /// Data for host screens; the model does not read it.
    pub details: Option<Plain>,
    /// Whether the call failed.
    pub is_error: bool,
}

/// The parts of a result: one inline, or a list (also for none).
#[derive(Debug, Clone, PartialEq)]
enum Parts {
    One(Content),
    Many(Vec<Content>),
}

impl Parts {
    fn as_slice(&self) -> &[Content] {
        match self {
            Parts::One(part) => std::slice::from_ref(part),
            Parts::Many(parts) => parts,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Content] {
        match self {
            Parts::One(part) => std::slice::from_mut(part),
            Parts::Many(parts) => parts,
        }
    }

    fn from_vec(mut parts: Vec<Content>) -> Self {
        match parts.len() {
            1 => match parts.pop() {
                Some(part) => Parts::One(part),
                None => Parts::Many(parts),
            },
            _ => Parts::Many(parts),
        }
    }

    fn into_vec(self) -> Vec<Content> {
        match self {
            Parts::One(part) => vec![part],
            Parts::Many(parts) => parts,
        }
    }
}

impl ToolResult {
    /// A successful result of `text`.
    pub fn success(text: impl Into<String>) -> Self {
        Self::of_text(text.into(), false)
    }

    /// An error result of `text`.
    pub fn error(text: impl Into<String>) -> Self {
        Self::of_text(text.into(), true)
    }

    fn of_text(text: String, is_error: bool) -> Self {
        Self {
            content: Parts::One(Content::Text(text)),
            details: None,
            is_error,
        }
    }

    /// A result of `content`, in order, failed or not.
    pub fn from_content(content: impl IntoIterator<Item = Content>, is_error: bool) -> Self {
        Self {
            content: Parts::from_vec(content.into_iter().collect()),
            details: None,
            is_error,
        }
    }

    /// The same result with `details` for host screens.
    pub fn with_details(mut self, details: Plain) -> Self {
        self.details = Some(details);
        self
    }

    /// What the model reads: text, images and the other parts, in order.
    pub fn content(&self) -> &[Content] {
        self.content.as_slice()
    }

    /// The parts, to change them in place (an output cap cutting text, say).
    pub fn content_mut(&mut self) -> &mut [Content] {
        self.content.as_mut_slice()
    }

    /// Adds `part` after the others.
    pub fn push(&mut self, part: Content) {
        let parts = std::mem::replace(&mut self.content, Parts::Many(Vec::new()));
        let mut parts = parts.into_vec();
        parts.push(part);
        self.content = Parts::Many(parts);
    }

    /// The parts, taken out.
    pub fn into_content(self) -> Vec<Content> {
        self.content.into_vec()
    }

    /// All the text parts, joined by newlines.
    pub fn text(&self) -> String {
        let mut texts = self.content().iter().filter_map(Content::as_text);
        let mut joined = texts.next().unwrap_or_default().to_owned();
        for text in texts {
            joined.push('\n');
            joined.push_str(text);
        }
        joined
    }

    /// The image parts, in order.
    pub fn images(&self) -> impl Iterator<Item = &Image> {
        self.content().iter().filter_map(Content::as_image)
    }

    /// The number of images.
    pub fn image_count(&self) -> usize {
        self.images().count()
    }
}

/// `CallToolResult`'s field names, borrowed for writing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireOut<'a> {
    content: &'a [Content],
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Plain>,
    is_error: bool,
}

/// `CallToolResult`'s field names, owned for reading.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireIn {
    content: Vec<Content>,
    #[serde(default)]
    details: Option<Plain>,
    #[serde(default)]
    is_error: bool,
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireOut {
            content: self.content(),
            details: self.details.as_ref(),
            is_error: self.is_error,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireIn::deserialize(deserializer)?;
        Ok(Self {
            content: Parts::from_vec(wire.content),
            details: wire.details,
            is_error: wire.is_error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_part_is_held_inline_and_reads_as_a_slice() {
        let result = ToolResult::success("5");
        assert!(matches!(result.content, Parts::One(_)));
        assert_eq!(result.content(), [Content::text("5")]);
        let two = ToolResult::from_content([Content::text("a"), Content::text("b")], false);
        assert_eq!(two.text(), "a\nb");
        let one = ToolResult::from_content([Content::text("a")], false);
        assert!(matches!(one.content, Parts::One(_)));
    }

    #[test]
    fn images_are_the_image_parts_in_order_and_nothing_else() {
        let result = ToolResult::from_content(
            [
                Content::text("a"),
                Content::image(Image::new("image/png", [1])),
                Content::text("b"),
                Content::image(Image::new("image/gif", [2])),
            ],
            false,
        );
        let images: Vec<&str> = result
            .images()
            .map(|image| image.mime_type.as_str())
            .collect();
        assert_eq!(images, ["image/png", "image/gif"]);
        assert_eq!(result.image_count(), 2);
        assert_eq!(ToolResult::success("none").images().count(), 0);
    }

    #[test]
    fn push_keeps_the_order() {
        let mut result = ToolResult::error("first");
        result.push(Content::text("second"));
        assert_eq!(result.text(), "first\nsecond");
        assert_eq!(result.into_content().len(), 2);
    }

    #[test]
    fn no_parts_reads_as_empty_text() {
        let empty = ToolResult::from_content([], false);
        assert_eq!(empty.text(), "");
        assert!(empty.content().is_empty());
    }
}
