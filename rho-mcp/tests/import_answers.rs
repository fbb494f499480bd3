//! An imported server's answer arrives whole, through the fault server's
//! `answer` tool, which answers what it is told: every kind of part MCP
//! has, in the order sent, with its annotations and `_meta`; an error
//! answer with its images; megabytes of audio byte for byte; and an
//! answer past the source's message limit a clear error. Each runs in a
//! tokio host and in a smol host.

#[macro_use]
mod import_support;

use import_support::{Host, Smol, Tokio, call, fault_source};
use rho_registry::ToolRegistry;
use rho_tool_core::{Content, Outcome};
use serde_json::json;

fn every_kind_of_part_arrives_in_order_with_its_extras(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    let content = json!([
        { "type": "text", "text": "first", "annotations": { "audience": ["assistant"], "priority": 0.5 } },
        { "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=", "_meta": { "shot": 1 } },
        { "type": "text", "text": "between" },
        { "type": "audio", "mimeType": "audio/wav", "data": "UklGRiQAAABXQVZF" },
        { "type": "resource_link", "uri": "file:///src/lib.rs", "name": "lib.rs", "title": "The library",
          "description": "its root", "mimeType": "text/x-rust", "size": 1234,
          "annotations": { "lastModified": "2026-01-02T03:04:05Z" } },
        { "type": "resource", "resource": { "uri": "file:///data.bin", "mimeType": "application/octet-stream",
          "blob": "AAEC/w==" } },
        { "type": "resource", "resource": { "uri": "file:///notes.txt", "mimeType": "text/plain", "text": "notes" } },
        { "type": "text", "text": "last" },
    ]);
    let result = json!({ "content": content, "structuredContent": { "parts": 8 } });
    host.block_on(async {
        let end = call(&registry, &runner, "answer", json!({ "result": result })).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
        let kinds: Vec<&str> = end.result.content().iter().map(Content::kind).collect();
        assert_eq!(
            kinds,
            [
                "text",
                "image",
                "text",
                "audio",
                "resource_link",
                "resource",
                "resource",
                "text"
            ]
        );
        let written = serde_json::to_value(&end.result).expect("a result is JSON");
        assert_eq!(written["content"], content, "each part as sent");
        assert_eq!(written["details"], json!({ "parts": 8 }));
    });
}

fn an_error_answer_keeps_its_images(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    let result = json!({ "isError": true, "content": [
        { "type": "text", "text": "the page did not load; this is what it showed" },
        { "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=" },
    ] });
    host.block_on(async {
        let end = call(&registry, &runner, "answer", json!({ "result": result })).await;
        assert_eq!(end.outcome, Outcome::Failed, "{}", end.result.text());
        assert!(end.result.is_error);
        let images: Vec<_> = end.result.images().collect();
        assert_eq!(images.len(), 1, "{:?}", end.result.content());
        assert_eq!(images[0].data, b"\x89PNG\r\n\x1a\n");
    });
}

fn megabytes_of_audio_arrive_byte_for_byte(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    // 6 MiB of sound is 8 MiB of base64, under the default limit of a
    // message (16 MiB).
    let size = 6 << 20;
    host.block_on(async {
        let end = call(&registry, &runner, "answer", json!({ "audioBytes": size })).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
        let [Content::Audio(audio)] = end.result.content() else {
            panic!("one audio part: {:?}", end.result.content());
        };
        assert_eq!(audio.mime_type, "audio/wav");
        assert_eq!(audio.data.len(), size);
        let wrong = audio
            .data
            .iter()
            .enumerate()
            .position(|(at, byte)| usize::from(*byte) != at % 251);
        assert_eq!(wrong, None, "every byte as the server sent it");
    });
}

fn an_answer_past_the_message_limit_is_a_clear_error(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(
            fault_source("faulty")
                .max_message(1 << 20)
                .connect(&registry),
        )
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let end = call(
            &registry,
            &runner,
            "answer",
            json!({ "audioBytes": 2 << 20 }),
        )
        .await;
        assert!(end.result.is_error);
        let text = end.result.text();
        assert!(
            text.contains("longer than the limit of 1048576 bytes"),
            "{text}"
        );
    });
}

on_both_hosts!(
    every_kind_of_part_arrives_in_order_with_its_extras,
    an_error_answer_keeps_its_images,
    megabytes_of_audio_arrive_byte_for_byte,
    an_answer_past_the_message_limit_is_a_clear_error,
);
