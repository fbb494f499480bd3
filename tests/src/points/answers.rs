//! Every answer form reaches the loop as `to_result` makes it: ok text, one
//! image and text, several images and text, error text, each with or
//! without details; an invalid image makes the answer unusable (`Failed`,
//! not a crash). Each result is checked against the exact `ToolResult` and
//! JSON (MCP's shape: images as `mimeType` + base64) it must be.

use std::collections::BTreeMap;

use rho_tool_core::untrusted::{Limits, Plain};
use rho_tool_core::{CallEnd, Content, Image, Outcome, ToolOutput, ToolResult};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Rig, call, end_of};
use crate::Harness;
use crate::support::TestTool;

/// The first bytes of a PNG file; base64 `iVBORw==`.
const PNG: [u8; 4] = [0x89, b'P', b'N', b'G'];
/// The first bytes of a JPEG file; base64 `/9j/`.
const JPEG: [u8; 3] = [0xff, 0xd8, 0xff];

#[derive(Serialize)]
struct Listing {
    files: Vec<&'static str>,
    total: u32,
    ratio: f64,
    owner: Option<&'static str>,
}

#[derive(Serialize)]
struct BuildFailure {
    code: i32,
    stderr: String,
}

/// Plain details of every kind, bytes included.
fn plain_details() -> Plain {
    Plain::Map(BTreeMap::from([
        ("null".to_owned(), Plain::Null),
        ("yes".to_owned(), Plain::Bool(true)),
        ("neg".to_owned(), Plain::Int(-7)),
        ("pos".to_owned(), Plain::Int(7)),
        ("big".to_owned(), Plain::UInt(u64::MAX)),
        ("float".to_owned(), Plain::Float(2.25)),
        ("text".to_owned(), Plain::Text("héllo \"quoted\"".into())),
        ("bytes".to_owned(), Plain::Bytes(vec![0, 1, 2, 255])),
        (
            "list".to_owned(),
            Plain::List(vec![Plain::Null, Plain::List(vec![])]),
        ),
        ("map".to_owned(), Plain::Map(BTreeMap::new())),
    ]))
}

fn image(mime: &str, data: &[u8]) -> Content {
    Content::image(Image::new(mime, data))
}

/// An answer form: its name, how to make it, the outcome its call must
/// end with, and what else its end and its result's JSON must be.
type Answer = (
    &'static str,
    fn() -> ToolOutput,
    Outcome,
    fn(&CallEnd, &Value),
);

/// The answers, each with the outcome its call must end with and its
/// checks.
fn answers() -> Vec<Answer> {
    vec![
        (
            "text",
            || ToolOutput::text("hello"),
            Outcome::Succeeded,
            |end, json| {
                assert_eq!(end.result, ToolResult::success("hello"));
                assert_eq!(
                    *json,
                    json!({ "content": [{ "type": "text", "text": "hello" }], "isError": false })
                );
            },
        ),
        (
            "image",
            || ToolOutput::image(Image::new("image/png", PNG), "a chart"),
            Outcome::Succeeded,
            |end, json| {
                assert_eq!(
                    end.result,
                    ToolResult::from_content(
                        [image("image/png", &PNG), Content::text("a chart")],
                        false
                    )
                );
                assert_eq!(end.result.image_count(), 1);
                assert_eq!(end.result.text(), "a chart");
                assert_eq!(
                    *json,
                    json!({
                        "content": [
                            { "type": "image", "mimeType": "image/png", "data": "iVBORw==" },
                            { "type": "text", "text": "a chart" },
                        ],
                        "isError": false,
                    })
                );
            },
        ),
        (
            "images",
            || {
                ToolOutput::images(
                    vec![
                        Image::new("image/png", PNG),
                        Image::new("image/jpeg", JPEG),
                        Image::new("image/png", vec![0_u8; 1]),
                    ],
                    "three shots",
                )
            },
            Outcome::Succeeded,
            |end, json| {
                assert_eq!(
                    end.result,
                    ToolResult::from_content(
                        [
                            image("image/png", &PNG),
                            image("image/jpeg", &JPEG),
                            image("image/png", &[0]),
                            Content::text("three shots"),
                        ],
                        false
                    )
                );
                assert_eq!(end.result.image_count(), 3);
                assert_eq!(json["content"][1]["mimeType"], "image/jpeg");
                assert_eq!(json["content"][1]["data"], "/9j/");
                assert_eq!(json["content"][2]["data"], "AA==");
            },
        ),
        (
            "error",
            || ToolOutput::error("no such file: a.rs"),
            Outcome::Failed,
            |end, json| {
                assert_eq!(end.result, ToolResult::error("no such file: a.rs"));
                assert!(!end.outcome.counts_against_tool());
                assert_eq!(
                    *json,
                    json!({
                        "content": [{ "type": "text", "text": "no such file: a.rs" }],
                        "isError": true,
                    })
                );
            },
        ),
        (
            "text_with_details",
            || {
                ToolOutput::text("3 files").with_details(Listing {
                    files: vec!["a", "b", "c"],
                    total: 3,
                    ratio: 0.5,
                    owner: None,
                })
            },
            Outcome::Succeeded,
            |end, json| {
                let details = Plain::Map(BTreeMap::from([
                    (
                        "files".to_owned(),
                        Plain::List(vec!["a".into(), "b".into(), "c".into()]),
                    ),
                    ("total".to_owned(), Plain::UInt(3)),
                    ("ratio".to_owned(), Plain::Float(0.5)),
                    ("owner".to_owned(), Plain::Null),
                ]));
                assert_eq!(
                    end.result,
                    ToolResult::success("3 files").with_details(details)
                );
                assert_eq!(
                    json["details"],
                    json!({ "files": ["a", "b", "c"], "total": 3, "ratio": 0.5, "owner": null })
                );
            },
        ),
        (
            "error_with_details",
            || {
                ToolOutput::error("the build failed").with_details(BuildFailure {
                    code: -1,
                    stderr: "error[E0308]".into(),
                })
            },
            Outcome::Failed,
            |end, json| {
                assert_eq!(
                    end.result,
                    ToolResult::error("the build failed").with_details(Plain::Map(BTreeMap::from(
                        [
                            ("code".to_owned(), Plain::Int(-1)),
                            ("stderr".to_owned(), Plain::Text("error[E0308]".into())),
                        ]
                    )))
                );
                assert_eq!(json["isError"], true);
                assert_eq!(json["details"]["code"], -1);
            },
        ),
        (
            "image_with_plain_details",
            || {
                ToolOutput::image(Image::new("image/png", PNG), "with data")
                    .with_plain_details(plain_details())
            },
            Outcome::Succeeded,
            |end, json| {
                assert_eq!(end.result.details, Some(plain_details()));
                assert_eq!(end.result.image_count(), 1);
                assert_eq!(json["details"]["bytes"], json!({ "$bytes": "AAEC/w==" }));
            },
        ),
        (
            "empty_image",
            || ToolOutput::image(Image::new("image/png", Vec::new()), "empty"),
            Outcome::Failed,
            |end, _| {
                let text = end.result.text();
                assert!(text.contains("image 0"), "{text}");
            },
        ),
        (
            "not_an_image",
            || {
                ToolOutput::images(
                    vec![
                        Image::new("image/png", PNG),
                        Image::new("text/plain", b"hello".to_vec()),
                    ],
                    "two",
                )
            },
            Outcome::Failed,
            |end, _| {
                let text = end.result.text();
                assert!(text.contains("image 1"), "{text}");
                assert!(text.contains("text/plain"), "{text}");
            },
        ),
    ]
}

/// Serialises `result` to JSON text and back; they must be equal. Returns
/// the JSON.
fn round_trip(name: &str, result: &ToolResult) -> Value {
    let text = serde_json::to_string(result).expect("a result serialises");
    let back: ToolResult = serde_json::from_str(&text).expect("and deserialises");
    assert_eq!(
        &back, result,
        "{name}: the JSON round trip changed it: {text}"
    );
    serde_json::from_str(&text).expect("valid JSON")
}

/// Each answer form, answered by a tool through a real call: the call's
/// result is exactly what `to_result` makes of the same answer (for an
/// unusable answer: an error naming the tool and `to_result`'s reason, no
/// image), it is the exact `ToolResult` and JSON the form must give, and
/// it round-trips through JSON. (A mime type that is not `image/*` is not
/// an image, whatever else it looks like.)
pub fn every_answer_form_reaches_the_loop_as_to_result_makes_it<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    for (name, answer, outcome, check) in answers() {
        let tool = TestTool::new(name, move |_, _| {
            let output = answer();
            async move { output }
        })
        .into_arc();
        let end = rig.run(async {
            let handle = runner.start(call("c1", name), tool);
            end_of(&executor, handle).await
        });
        assert_eq!(end.outcome, outcome, "{name}: {end:?}");
        match answer().to_result(&Limits::default()) {
            Ok(direct) => assert_eq!(end.result, direct, "{name}: the call and to_result differ"),
            Err(error) => {
                assert!(end.result.is_error, "{name}: {end:?}");
                assert_eq!(end.result.image_count(), 0, "{name}: {end:?}");
                let text = end.result.text();
                assert!(text.contains(&format!("`{name}`")), "{name}: {text}");
                assert!(text.contains(&error.to_string()), "{name}: {text}");
            }
        }
        let json = round_trip(name, &end.result);
        check(&end, &json);
    }
    for mime in ["image", "image/", "", "png"] {
        let output = ToolOutput::image(Image::new(mime, PNG), "x");
        assert!(
            output.to_result(&Limits::default()).is_err(),
            "mime type {mime:?} was taken for an image"
        );
    }
    rig.finish();
}
