//! `ToolResult`: the normalised answer the loop, the model and the session get.

use rho_untrusted::Plain;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::content::{Content, Image, read_part, write_part};

/// The result of one call, as plain data.
///
/// It serialises to JSON in the shape MCP's `CallToolResult` uses, so a host
/// can store it in its session or forward it as is:
///
/// ```
/// use rho::{Content, Image, ToolResult};
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
/// # What a result holds
///
/// - **Parts, in order**, of MCP's five kinds ([`Content`]): text, images
///   and sounds (their bytes), links to resources, and embedded resources
///   (their text or bytes). Any mix, in any order, failed or not: an error
///   result may hold images too.
/// - **Each part's extras** ([`extras`](ToolResult::extras)): what an MCP
///   part carries beside its data (its `annotations`, its `_meta`, a
///   link's `icons`), kept as plain data so that a part read from MCP is
///   written back the same.
/// - **Details** for host screens, which the model does not read; over MCP
///   they are the result's `structuredContent`.
/// - **Whether the call failed** (`isError`).
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
    /// The parts' extras, by index; `None` unless a part has some. The
    /// list is boxed so that the common result, which has none, pays one
    /// word for it (a `Vec` is three, in every call's result).
    #[allow(clippy::box_collection)] // on purpose: see above
    extras: Option<Box<Vec<Option<Plain>>>>,
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
            extras: None,
            details: None,
            is_error,
        }
    }

    /// A result of `content`, in order, failed or not.
    pub fn from_content(content: impl IntoIterator<Item = Content>, is_error: bool) -> Self {
        Self {
            content: Parts::from_vec(content.into_iter().collect()),
            extras: None,
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

    /// The parts, taken out (without their [`extras`](ToolResult::extras)).
    pub fn into_content(self) -> Vec<Content> {
        self.content.into_vec()
    }

    /// The extras of part `index`: the fields the part carried in MCP's
    /// JSON that its [`Content`] does not hold, as a map of plain data
    /// (its `annotations`, its `_meta`, a link's `icons`, an embedded
    /// resource's own `_meta` under `resource`, and whatever MCP adds
    /// later). `None` when it has none, as most parts.
    ///
    /// A result read from JSON ([`Deserialize`]) keeps them, and writes
    /// them back ([`Serialize`]) beside each part's own fields, so that a
    /// part crosses MCP whole: an imported server's answer served on is
    /// the answer the server gave.
    ///
    /// ```
    /// use rho::ToolResult;
    /// use serde_json::json;
    ///
    /// let sent = json!({
    ///     "content": [{ "type": "text", "text": "hi", "annotations": { "priority": 0.5 } }],
    ///     "isError": false,
    /// });
    /// let result: ToolResult = serde_json::from_value(sent.clone()).unwrap();
    /// assert_eq!(result.text(), "hi");
    /// let extras = result.extras(0).expect("the annotations").to_json();
    /// assert_eq!(extras, json!({ "annotations": { "priority": 0.5 } }));
    /// assert_eq!(serde_json::to_value(&result).unwrap(), sent);
    /// ```
    pub fn extras(&self, index: usize) -> Option<&Plain> {
        self.extras.as_ref()?.get(index)?.as_ref()
    }

    /// Sets the extras of part `index` (see [`extras`](ToolResult::extras));
    /// `None` removes them. Extras that are not a map are kept but never
    /// written. Nothing happens when there is no part `index`.
    pub fn set_extras(&mut self, index: usize, extras: Option<Plain>) {
        if index >= self.content().len() {
            return;
        }
        let all = self.extras.get_or_insert_with(Default::default);
        if all.len() <= index {
            all.resize(index + 1, None);
        }
        all[index] = extras;
        if all.iter().all(Option::is_none) {
            self.extras = None;
        }
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
    content: ContentOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Plain>,
    is_error: bool,
}

/// The parts, each with its extras merged in.
struct ContentOut<'a>(&'a ToolResult);

impl Serialize for ContentOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq};
        let result = self.0;
        let parts = result.content();
        if result.extras.is_none() {
            return parts.serialize(serializer);
        }
        let mut seq = serializer.serialize_seq(Some(parts.len()))?;
        for (index, part) in parts.iter().enumerate() {
            match result.extras(index) {
                None => seq.serialize_element(part)?,
                Some(extras) => {
                    seq.serialize_element(&write_part(part, extras).map_err(S::Error::custom)?)?
                }
            }
        }
        seq.end()
    }
}

/// `CallToolResult`'s field names, owned for reading. The parts are read
/// as JSON first, to keep their extras and to say which part is wrong.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireIn {
    content: Vec<serde_json::Value>,
    #[serde(default)]
    details: Option<Plain>,
    #[serde(default)]
    is_error: bool,
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireOut {
            content: ContentOut(self),
            details: self.details.as_ref(),
            is_error: self.is_error,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let wire = WireIn::deserialize(deserializer)?;
        let mut content = Vec::with_capacity(wire.content.len());
        let mut extras = Vec::new();
        for (index, json) in wire.content.iter().enumerate() {
            let (part, extra) = read_part(json)
                .map_err(|error| D::Error::custom(format!("content part {index}: {error}")))?;
            content.push(part);
            if extra.is_some() {
                extras.resize(index, None);
                extras.push(extra);
            }
        }
        Ok(Self {
            content: Parts::from_vec(content),
            extras: (!extras.is_empty()).then(|| Box::new(extras)),
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
    fn extras_are_read_kept_in_place_and_written_back() {
        use serde_json::json;
        let sent = json!({
            "content": [
                { "type": "text", "text": "a" },
                { "type": "image", "mimeType": "image/png", "data": "AQID",
                  "annotations": { "audience": ["user"] } },
                { "type": "resource", "resource": { "uri": "x", "text": "t", "_meta": { "n": 1 } },
                  "_meta": { "m": true } },
            ],
            "isError": true,
        });
        let mut result: ToolResult = serde_json::from_value(sent.clone()).expect("read");
        assert_eq!(result.extras(0), None);
        assert_eq!(
            result.extras(1).map(Plain::to_json),
            Some(json!({ "annotations": { "audience": ["user"] } }))
        );
        assert_eq!(
            result.extras(2).map(Plain::to_json),
            Some(json!({ "_meta": { "m": true }, "resource": { "_meta": { "n": 1 } } }))
        );
        assert_eq!(serde_json::to_value(&result).expect("written"), sent);

        // A part changed in place keeps its extras; one added has none.
        result.content_mut()[1] = Content::image(Image::new("image/gif", [9]));
        result.push(Content::text("more"));
        assert!(result.extras(1).is_some());
        assert_eq!(result.extras(3), None);
        result.set_extras(1, None);
        result.set_extras(2, None);
        assert_eq!(result.extras, None, "no extras left, none kept");
        result.set_extras(9, Some(Plain::Null));
        assert_eq!(result.extras, None, "no part 9");
    }

    #[test]
    fn a_part_that_cannot_be_read_is_named() {
        let error = serde_json::from_str::<ToolResult>(
            r#"{"content": [{"type": "text", "text": "a"}, {"type": "hologram"}]}"#,
        )
        .expect_err("no such kind");
        assert!(error.to_string().contains("content part 1"), "{error}");
    }

    #[test]
    fn no_parts_reads_as_empty_text() {
        let empty = ToolResult::from_content([], false);
        assert_eq!(empty.text(), "");
        assert!(empty.content().is_empty());
    }
}
