//! Every answer form (DESIGN.md step 5) reaches the loop as `to_result`
//! makes it: ok text, one image and text, several images and text, error
//! text, each with or without details; an invalid image makes the answer
//! unusable (`Failed`, not a crash).

use std::collections::BTreeMap;

use rho_tool_core::untrusted::{Limits, Plain};
use rho_tool_core::{Image, Outcome, ToolOutput, ToolResult};
use serde::Serialize;

use super::{Rig, call, end_of};
use crate::Harness;
use crate::support::TestTool;

/// The first bytes of a PNG file.
const PNG: [u8; 4] = [0x89, b'P', b'N', b'G'];
/// The first bytes of a JPEG file.
const JPEG: [u8; 3] = [0xff, 0xd8, 0xff];

#[derive(Serialize)]
struct Listing {
    files: Vec<&'static str>,
    total: u32,
    ratio: f64,
    owner: Option<&'static str>,
}

fn plain_details() -> Plain {
    Plain::Map(BTreeMap::from([
        ("null".to_owned(), Plain::Null),
        ("yes".to_owned(), Plain::Bool(true)),
        ("neg".to_owned(), Plain::Int(-7)),
        ("big".to_owned(), Plain::UInt(u64::MAX)),
        ("float".to_owned(), Plain::Float(2.25)),
        ("text".to_owned(), Plain::Text("héllo".into())),
        ("bytes".to_owned(), Plain::Bytes(vec![0, 1, 2, 255])),
        ("list".to_owned(), Plain::List(vec![Plain::Null])),
        ("map".to_owned(), Plain::Map(BTreeMap::new())),
    ]))
}

/// An answer form: its name, how to make it, the outcome its call must
/// end with.
type Answer = (&'static str, fn() -> ToolOutput, Outcome);

/// The answers, each with the outcome its call must end with.
fn answers() -> Vec<Answer> {
    vec![
        ("text", || ToolOutput::text("hello"), Outcome::Succeeded),
        (
            "image",
            || ToolOutput::image(Image::new("image/png", PNG), "a chart"),
            Outcome::Succeeded,
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
        ),
        (
            "error",
            || ToolOutput::error("no such file: a.rs"),
            Outcome::Failed,
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
        ),
        (
            "error_with_details",
            || {
                ToolOutput::error("the build failed")
                    .with_details(serde_json::json!({ "code": -1 }))
            },
            Outcome::Failed,
        ),
        (
            "image_with_plain_details",
            || {
                ToolOutput::image(Image::new("image/png", PNG), "with data")
                    .with_plain_details(plain_details())
            },
            Outcome::Succeeded,
        ),
        (
            "empty_image",
            || ToolOutput::image(Image::new("image/png", Vec::new()), "empty"),
            Outcome::Failed,
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
        ),
    ]
}

/// Each answer form, answered by a tool through a real call: the call's
/// result is exactly what `to_result` makes of the same answer (for an
/// unusable answer: an error naming the tool and `to_result`'s reason), and
/// it round-trips through JSON.
pub fn every_answer_form_reaches_the_loop_as_to_result_makes_it<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    for (name, answer, outcome) in answers() {
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
        let json = serde_json::to_string(&end.result).expect("a result serialises");
        let back: ToolResult = serde_json::from_str(&json).expect("and deserialises");
        assert_eq!(
            back, end.result,
            "{name}: the JSON round trip changed it: {json}"
        );
    }
    rig.finish();
}
