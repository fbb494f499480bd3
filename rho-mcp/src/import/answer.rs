//! A server's `CallToolResult` as a rho [`ToolOutput`].
//!
//! | MCP | rho |
//! |---|---|
//! | text content | the answer's text (parts joined by newlines) |
//! | image content | [`ToolOutput::images`], in order |
//! | audio, resource links, embedded resources | a line of text each that says what it was (rho's answers hold text and images) |
//! | `isError: true` | [`ToolOutput::error`] with the text |
//! | `structuredContent` | details; also the text when there is no text |
//!
//! Content that cannot be read (an image that is not base64, a part of a
//! kind MCP does not have) makes the whole answer an error that says so:
//! the model never gets half an answer without knowing.

use rho_tool_core::{Content, Image, ResourceContents, ToolOutput};
use rmcp::model::CallToolResult;
use serde_json::Value;

/// The answer of `result`, from tool `tool` of server `server`.
pub(crate) fn to_output(server: &str, tool: &str, result: CallToolResult) -> ToolOutput {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for (index, block) in result.content.into_iter().enumerate() {
        let part = serde_json::to_value(&block)
            .and_then(serde_json::from_value::<Content>)
            .map_err(|error| error.to_string())
            .and_then(|part| usable(part).map_err(str::to_owned));
        match part {
            Ok(Part::Text(text)) => texts.push(text),
            Ok(Part::Image(image)) => images.push(image),
            Err(why) => {
                return ToolOutput::error(format!(
                    "tool `{tool}` of MCP server `{server}` answered with content part {index} \
                     that cannot be read: {why}"
                ));
            }
        }
    }
    let structured = result.structured_content;
    let mut text = texts.join("\n");
    if text.is_empty()
        && let Some(value) = &structured
    {
        text = value.to_string();
    }
    let output = if result.is_error == Some(true) {
        ToolOutput::error(text)
    } else if images.is_empty() {
        ToolOutput::text(text)
    } else {
        ToolOutput::images(images, text)
    };
    match structured {
        Some(details) if !details.is_null() => output.with_details(details),
        _ => output,
    }
}

enum Part {
    Text(String),
    Image(Image),
}

/// A part as text or an image; parts rho's answers do not hold become a
/// line that says what they were.
fn usable(part: Content) -> Result<Part, &'static str> {
    Ok(match part {
        Content::Text(text) => Part::Text(text),
        Content::Image(image) => {
            let image = Image::clone(&image);
            if image.data.is_empty() {
                return Err("an image with no bytes");
            }
            if !image.mime_type.starts_with("image/") {
                return Err("an image whose mime type is not `image/*`");
            }
            Part::Image(image)
        }
        Content::Audio(audio) => Part::Text(format!(
            "[audio: {}, {} bytes]",
            audio.mime_type,
            audio.data.len()
        )),
        Content::ResourceLink(link) => {
            Part::Text(format!("[resource link: {} ({})]", link.uri, link.name))
        }
        Content::Resource(resource) => Part::Text(match &resource.contents {
            ResourceContents::Text(text) => format!("[resource {}]\n{text}", resource.uri),
            ResourceContents::Blob(bytes) => format!(
                "[resource {}: {}, {} bytes]",
                resource.uri,
                resource.mime_type.as_deref().unwrap_or("binary"),
                bytes.len()
            ),
        }),
        _ => return Err("a kind of content rho does not know"),
    })
}

/// The text of a JSON-RPC error the server answered a call with.
pub(crate) fn error_text(
    server: &str,
    tool: &str,
    code: i32,
    message: &str,
    data: Option<&Value>,
) -> String {
    let mut text = format!(
        "tool `{tool}` of MCP server `{server}` failed with a protocol error ({code}): {message}"
    );
    if let Some(data) = data {
        text.push_str(&format!(" ({data})"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;
    use serde_json::json;

    fn answer(result: CallToolResult) -> rho_tool_core::ToolResult {
        to_output("srv", "t", result)
            .to_result(&Default::default())
            .expect("an answer rho can hold")
    }

    #[test]
    fn text_images_errors_and_structured_content_map() {
        let ok = answer(CallToolResult::success(vec![
            ContentBlock::text("a"),
            ContentBlock::image("AQID", "image/png"),
            ContentBlock::text("b"),
        ]));
        assert!(!ok.is_error);
        assert_eq!(ok.text(), "a\nb");
        assert_eq!(ok.image_count(), 1);

        let failed = answer(CallToolResult::error(vec![ContentBlock::text("nope")]));
        assert!(failed.is_error);
        assert_eq!(failed.text(), "nope");

        let mut structured = CallToolResult::success(vec![]);
        structured.structured_content = Some(json!({ "n": 1 }));
        let structured = answer(structured);
        assert_eq!(structured.text(), r#"{"n":1}"#);
        assert_eq!(
            structured.details.expect("details").to_json(),
            json!({ "n": 1 })
        );
    }

    #[test]
    fn an_image_that_is_not_base64_is_a_clear_error() {
        let bad = answer(CallToolResult::success(vec![ContentBlock::image(
            "not base64!",
            "image/png",
        )]));
        assert!(bad.is_error);
        assert!(bad.text().contains("content part 0"), "{}", bad.text());
    }
}
