//! The conformance suite's fixtures as rho tools: each tool the suite's
//! server scenarios call, by the name and with the answer they check
//! (`@modelcontextprotocol/conformance`, its "everything" server's
//! fixtures). The tools that reach back to the client are in `asking.rs`;
//! resources, prompts and completions in `features.rs`; what rho does not
//! serve yet (input-required results, tasks) is listed in the baselines
//! beside this file.

use std::sync::Arc;
use std::time::Duration;

use rho_registry::{Source, SourceHandle, ToolRegistry};
use rho_tool_core::{
    Audio, Content, EmbeddedResource, Image, ResourceContents, Tool, ToolContext, ToolOutput,
    ToolResult, async_trait,
};
use serde_json::{Value, json};

use crate::features::Features;

/// A 1x1 PNG (a transparent pixel).
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// A WAV header of an empty 8 kHz mono sound.
fn wav() -> Vec<u8> {
    let mut wav = Vec::with_capacity(44);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&36u32.to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes());
    wav.extend_from_slice(&16000u32.to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&0u32.to_le_bytes());
    wav
}

fn embedded() -> Content {
    Content::Resource(Box::new(
        EmbeddedResource::new(
            "test://embedded-resource",
            ResourceContents::Text("This is an embedded resource content.".into()),
        )
        .with_mime_type("text/plain"),
    ))
}

/// The fixtures, one variant a tool.
#[derive(Debug, Clone, Copy)]
enum Fixture {
    SimpleText,
    Image,
    Audio,
    EmbeddedResource,
    MixedContent,
    Error,
    Progress,
    Reconnection,
    JsonSchema2020,
    Header,
}

const ALL: &[Fixture] = &[
    Fixture::SimpleText,
    Fixture::Image,
    Fixture::Audio,
    Fixture::EmbeddedResource,
    Fixture::MixedContent,
    Fixture::Error,
    Fixture::Progress,
    Fixture::Reconnection,
    Fixture::JsonSchema2020,
    Fixture::Header,
];

#[async_trait]
impl Tool for Fixture {
    fn name(&self) -> &str {
        match self {
            Fixture::SimpleText => "test_simple_text",
            Fixture::Image => "test_image_content",
            Fixture::Audio => "test_audio_content",
            Fixture::EmbeddedResource => "test_embedded_resource",
            Fixture::MixedContent => "test_multiple_content_types",
            Fixture::Error => "test_error_handling",
            Fixture::Progress => "test_tool_with_progress",
            Fixture::Reconnection => "test_reconnection",
            Fixture::JsonSchema2020 => "json_schema_2020_12_tool",
            Fixture::Header => "test_custom_header",
        }
    }

    fn description(&self) -> &str {
        match self {
            Fixture::SimpleText => "Returns a simple text answer",
            Fixture::Image => "Returns an image",
            Fixture::Audio => "Returns a sound",
            Fixture::EmbeddedResource => "Returns an embedded resource",
            Fixture::MixedContent => "Returns text, an image and a resource",
            Fixture::Error => "Always fails",
            Fixture::Progress => "Reports progress 0, 50 and 100 of 100",
            Fixture::Reconnection => "Answers after about 100 ms",
            Fixture::JsonSchema2020 => "Takes arguments described by JSON Schema 2020-12",
            Fixture::Header => {
                "Answers its region, which a client over HTTP also sends as a header"
            }
        }
    }

    fn parameters(&self) -> Value {
        match self {
            Fixture::JsonSchema2020 => json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "address",
                        "type": "object",
                        "properties": {
                            "street": { "type": "string" },
                            "city": { "type": "string" }
                        }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contact": {
                        "anyOf": [
                            { "type": "string", "format": "email" },
                            { "type": "string", "pattern": "^[0-9+ -]+$" }
                        ]
                    },
                    "kind": { "type": "string", "enum": ["person", "company"] },
                    "registration": { "type": "string" }
                },
                "allOf": [{ "anyOf": [{ "required": ["name"] }, { "required": ["contact"] }] }],
                "if": { "properties": { "kind": { "const": "company" } }, "required": ["kind"] },
                "then": { "required": ["registration"] },
                "else": {},
                "additionalProperties": false
            }),
            Fixture::Header => json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" }
                },
                "required": ["region"]
            }),
            _ => json!({ "type": "object", "properties": {} }),
        }
    }

    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        match self {
            Fixture::SimpleText => ToolOutput::text("This is a simple text response for testing."),
            Fixture::Image => ToolOutput::from_result(ToolResult::from_content(
                [Content::image(Image::new("image/png", PNG))],
                false,
            )),
            Fixture::Audio => ToolOutput::from_result(ToolResult::from_content(
                [Content::audio(Audio::new("audio/wav", wav()))],
                false,
            )),
            Fixture::EmbeddedResource => {
                ToolOutput::from_result(ToolResult::from_content([embedded()], false))
            }
            Fixture::MixedContent => ToolOutput::from_result(ToolResult::from_content(
                [
                    Content::text("Multiple content types test:"),
                    Content::image(Image::new("image/png", PNG)),
                    embedded(),
                ],
                false,
            )),
            Fixture::Error => {
                ToolOutput::error("This tool intentionally returns an error for testing")
            }
            Fixture::Progress => {
                for progress in [0, 50, 100] {
                    let _ = context.update(&json!({
                        "progress": progress,
                        "total": 100,
                        "message": format!("Completed step {progress} of 100"),
                    }));
                    context.sleep(Duration::from_millis(50)).await;
                }
                ToolOutput::text("Progress tool completed")
            }
            Fixture::Reconnection => {
                context.sleep(Duration::from_millis(100)).await;
                ToolOutput::text("Reconnection test completed successfully")
            }
            Fixture::JsonSchema2020 => ToolOutput::text("JSON Schema 2020-12 tool called"),
            Fixture::Header => ToolOutput::text(format!(
                "region: {}",
                arguments["region"].as_str().unwrap_or_default()
            )),
        }
    }
}

/// The suite's hook to see list-changed notifications: each call changes
/// the tool list, adding `test_dynamic_tool`, or taking it away when it is
/// there.
struct TriggerToolChange {
    source: SourceHandle,
}

/// The tool that comes and goes.
struct Dynamic;

#[async_trait]
impl Tool for TriggerToolChange {
    fn name(&self) -> &str {
        "test_trigger_tool_change"
    }

    fn description(&self) -> &str {
        "Adds test_dynamic_tool, or takes it away when it is there"
    }

    async fn run(&self, _arguments: Value, _context: ToolContext) -> ToolOutput {
        if self.source.remove("test_dynamic_tool") {
            return ToolOutput::text("test_dynamic_tool removed");
        }
        match self.source.add(Arc::new(Dynamic)) {
            Ok(()) => ToolOutput::text("test_dynamic_tool added"),
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }
}

#[async_trait]
impl Tool for Dynamic {
    fn name(&self) -> &str {
        "test_dynamic_tool"
    }

    fn description(&self) -> &str {
        "A tool added at run time"
    }

    async fn run(&self, _arguments: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text("dynamic")
    }
}

/// The suite's hook to see the prompt list change: each call adds
/// `test_dynamic_prompt` to the features' prompts, or takes it away.
struct TriggerPromptChange {
    features: Features,
}

#[async_trait]
impl Tool for TriggerPromptChange {
    fn name(&self) -> &str {
        "test_trigger_prompt_change"
    }

    fn description(&self) -> &str {
        "Adds test_dynamic_prompt, or takes it away when it is there"
    }

    async fn run(&self, _arguments: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text(self.features.switch_prompt())
    }
}

/// The registry the suite's server scenarios are run against, beside
/// `features` (whose prompt list one of its tools changes).
pub(crate) fn registry(features: &Features) -> ToolRegistry {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("conformance"))
        .expect("a new source");
    source
        .add_all(
            ALL.iter()
                .map(|&fixture| Arc::new(fixture) as Arc<dyn Tool>),
        )
        .expect("new names");
    source
        .add_all(
            crate::asking::ALL
                .iter()
                .map(|&fixture| Arc::new(fixture) as Arc<dyn Tool>),
        )
        .expect("new names");
    source
        .add_all(
            crate::input::ALL
                .iter()
                .map(|&fixture| Arc::new(fixture) as Arc<dyn Tool>),
        )
        .expect("new names");
    source
        .add_all(
            crate::tasks::ALL
                .iter()
                .map(|&fixture| Arc::new(fixture) as Arc<dyn Tool>),
        )
        .expect("new names");
    source
        .add(Arc::new(TriggerToolChange {
            source: source.clone(),
        }))
        .expect("a new name");
    source
        .add(Arc::new(TriggerPromptChange {
            features: features.clone(),
        }))
        .expect("a new name");
    registry
}
