//! A server's `CallToolResult` as a rho [`ToolOutput`], whole.
//!
//! | MCP | rho |
//! |---|---|
//! | `content` | the result's parts ([`Content`]), one for one, in order: text, images and audio (their bytes), resource links, embedded resources (their text or bytes) |
//! | a part's `annotations`, `_meta` and other fields | that part's [`extras`](ToolResult::extras) |
//! | `isError` | the result's `is_error`, whatever its parts (an error may hold images) |
//! | `structuredContent` | the details, as sent |
//!
//! So a proxy that serves the import on gives its client the answer the
//! server sent. Nothing is made up either: a result with structured
//! content and no text stays without text (MCP asks such a server to send
//! its JSON as text too).
//!
//! Sizes are bounded before this: a whole answer is one message, under
//! the source's [`max_message`](super::McpSourceBuilder::max_message)
//! (past it the call ends with an error naming the limit), and the
//! details are made plain data under the runner's limits. Content that
//! cannot be read (an image that is not base64, a part of a kind MCP does
//! not have) makes the whole answer an error that names the part: the
//! model never gets half an answer without knowing.

use rho_tool_core::{Content, ToolOutput, ToolResult};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// The answer of `result`, from tool `tool` of server `server`.
pub(crate) fn to_output(server: &str, tool: &str, mut result: CallToolResult) -> ToolOutput {
    let is_error = result.is_error == Some(true);
    let structured = result.structured_content.take();
    let answer = match plain_texts(&mut result.content) {
        Some(texts) => ToolResult::from_content(texts, is_error),
        None => match read(&result) {
            Ok(answer) => answer,
            Err(why) => {
                return ToolOutput::error(format!(
                    "tool `{tool}` of MCP server `{server}` answered with content that cannot \
                     be read: {why}"
                ));
            }
        },
    };
    let output = ToolOutput::from_result(answer);
    match structured {
        Some(details) if !details.is_null() => output.with_details(details),
        _ => output,
    }
}

/// The parts, when every one is a text with nothing beside it (nearly
/// every answer): taken as they are, with no JSON in between.
fn plain_texts(content: &mut [ContentBlock]) -> Option<Vec<Content>> {
    let plain = |block: &ContentBlock| matches!(block, ContentBlock::Text(text) if text.meta.is_none() && text.annotations.is_none());
    if !content.iter().all(plain) {
        return None;
    }
    let texts = content.iter_mut().filter_map(|block| match block {
        ContentBlock::Text(text) => Some(Content::Text(std::mem::take(&mut text.text))),
        _ => None,
    });
    Some(texts.collect())
}

/// Every part through rho's reading of MCP's JSON, which keeps what rho's
/// content types do not hold as each part's extras. Written as text and
/// read back, not as a `serde_json::Value`: rmcp holds an annotation's
/// `priority` as an `f32`, which text writes as it came (`0.7`) and a
/// `Value` would widen (`0.699999988079071`).
fn read(result: &CallToolResult) -> Result<ToolResult, String> {
    let json = serde_json::to_vec(result).map_err(|error| error.to_string())?;
    serde_json::from_slice(&json).map_err(|error| error.to_string())
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
        let kinds: Vec<&str> = ok.content().iter().map(Content::kind).collect();
        assert_eq!(kinds, ["text", "image", "text"], "in the order sent");

        let failed = answer(CallToolResult::error(vec![ContentBlock::text("nope")]));
        assert!(failed.is_error);
        assert_eq!(failed.text(), "nope");

        let mut structured = CallToolResult::success(vec![]);
        structured.structured_content = Some(json!({ "n": 1 }));
        let structured = answer(structured);
        // As sent: no text is made up from the structured content.
        assert!(structured.content().is_empty());
        assert_eq!(
            structured.details.expect("details").to_json(),
            json!({ "n": 1 })
        );
    }

    #[test]
    fn every_kind_of_part_arrives_whole_in_order() {
        let content = json!([
            { "type": "text", "text": "a", "annotations": { "priority": 0.5, "audience": ["user"] } },
            { "type": "image", "mimeType": "image/png", "data": "AQID", "_meta": { "k": 1 } },
            { "type": "text", "text": "b" },
            { "type": "audio", "mimeType": "audio/wav", "data": "UklGRg==" },
            { "type": "resource_link", "uri": "file:///a.rs", "name": "a.rs", "title": "A",
              "size": 3, "icons": [{ "src": "https://example.com/a.png" }] },
            { "type": "resource", "resource": { "uri": "file:///b.bin", "mimeType": "application/gzip",
              "blob": "H4sI", "_meta": { "inner": true } } },
            { "type": "resource", "resource": { "uri": "file:///c.txt", "text": "see" } },
        ]);
        let sent: CallToolResult = serde_json::from_value(json!({
            "content": content,
            "isError": true,
            "structuredContent": { "why": "partly" },
        }))
        .expect("rmcp reads it");
        let got = answer(sent);
        assert!(got.is_error, "an error, with its images kept");
        let kinds: Vec<&str> = got.content().iter().map(Content::kind).collect();
        assert_eq!(
            kinds,
            [
                "text",
                "image",
                "text",
                "audio",
                "resource_link",
                "resource",
                "resource"
            ]
        );
        let Content::Audio(audio) = &got.content()[3] else {
            panic!("an audio part: {:?}", got.content());
        };
        assert_eq!(audio.data, b"RIFF", "the bytes, not their size");
        let written = serde_json::to_value(&got).expect("a result is JSON");
        assert_eq!(written["content"], content, "every part and its extras");
        assert_eq!(
            got.details.expect("details").to_json(),
            json!({ "why": "partly" })
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
