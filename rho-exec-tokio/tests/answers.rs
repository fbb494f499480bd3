//! Every answer form normalises to the expected `ToolResult` through a real
//! call (DESIGN.md step 5), and `ToolResult` round-trips through JSON in the
//! MCP shape (images as `mimeType` + base64).

mod support;

use std::collections::BTreeMap;

use rho_tool_core::untrusted::{Limits, Plain};
use rho_tool_core::{CallEnd, Content, Image, Outcome, Runner, ToolOutput, ToolResult};
use serde::Serialize;
use support::{InLoop, TestTool, call, executor};

/// The first bytes of a PNG file; base64 `iVBORw==`.
const PNG: [u8; 4] = [0x89, b'P', b'N', b'G'];
/// The first bytes of a JPEG file; base64 `/9j/`.
const JPEG: [u8; 3] = [0xff, 0xd8, 0xff];

/// Runs a tool answering what `answer` makes, and checks that the call's
/// result is what `to_result` gives for the same answer directly.
async fn run_answer(answer: fn() -> ToolOutput) -> CallEnd {
    let tool = TestTool::new("answer", move |_, _| {
        let output = answer();
        async move { output }
    });
    let runner = Runner::new(executor());
    let end = InLoop::new(runner.start(call("c1", "answer"), tool.into_arc())).await;
    if let Ok(direct) = answer().to_result(&Limits::default()) {
        assert_eq!(end.result, direct, "the call and to_result disagree");
    }
    end
}

/// Serialises `result` to JSON text and back; they must be equal.
fn round_trip(result: &ToolResult) -> serde_json::Value {
    let text = serde_json::to_string(result).expect("a ToolResult serialises");
    let back: ToolResult = serde_json::from_str(&text).expect("and deserialises");
    assert_eq!(
        &back, result,
        "the JSON round trip changed the result: {text}"
    );
    serde_json::from_str(&text).expect("valid JSON")
}

fn image(mime: &str, data: &[u8]) -> Content {
    Content::Image {
        mime_type: mime.to_owned(),
        data: data.to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_answer_is_a_successful_text_result() {
    let end = run_answer(|| ToolOutput::text("hello")).await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert_eq!(end.result, ToolResult::success("hello"));
    assert_eq!(
        round_trip(&end.result),
        serde_json::json!({ "content": [{ "type": "text", "text": "hello" }], "isError": false })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_answer_is_the_image_then_the_text() {
    let end = run_answer(|| ToolOutput::image(Image::new("image/png", PNG), "a chart")).await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert_eq!(
        end.result,
        ToolResult {
            content: vec![image("image/png", &PNG), Content::text("a chart")],
            details: None,
            is_error: false,
        }
    );
    assert_eq!(end.result.image_count(), 1);
    assert_eq!(end.result.text(), "a chart");
    assert_eq!(
        round_trip(&end.result),
        serde_json::json!({
            "content": [
                { "type": "image", "mimeType": "image/png", "data": "iVBORw==" },
                { "type": "text", "text": "a chart" },
            ],
            "isError": false,
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_of_several_images_keeps_their_order_then_the_text() {
    let end = run_answer(|| {
        ToolOutput::images(
            vec![
                Image::new("image/png", PNG),
                Image::new("image/jpeg", JPEG),
                Image::new("image/png", vec![0u8; 1]),
            ],
            "three shots",
        )
    })
    .await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert_eq!(
        end.result,
        ToolResult {
            content: vec![
                image("image/png", &PNG),
                image("image/jpeg", &JPEG),
                image("image/png", &[0]),
                Content::text("three shots"),
            ],
            details: None,
            is_error: false,
        }
    );
    assert_eq!(end.result.image_count(), 3);
    let json = round_trip(&end.result);
    assert_eq!(json["content"][1]["mimeType"], "image/jpeg");
    assert_eq!(json["content"][1]["data"], "/9j/");
    assert_eq!(json["content"][2]["data"], "AA==");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_answer_is_a_failed_error_result() {
    let end = run_answer(|| ToolOutput::error("no such file: a.rs")).await;
    assert_eq!(end.outcome, Outcome::Failed);
    assert_eq!(end.result, ToolResult::error("no such file: a.rs"));
    assert!(!end.outcome.counts_against_tool());
    assert_eq!(
        round_trip(&end.result),
        serde_json::json!({
            "content": [{ "type": "text", "text": "no such file: a.rs" }],
            "isError": true,
        })
    );
}

#[derive(Serialize)]
struct Listing {
    files: Vec<&'static str>,
    total: u32,
    ratio: f64,
    owner: Option<&'static str>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ok_answer_with_details_carries_them_as_plain_data() {
    let end = run_answer(|| {
        ToolOutput::text("3 files").with_details(Listing {
            files: vec!["a", "b", "c"],
            total: 3,
            ratio: 0.5,
            owner: None,
        })
    })
    .await;
    assert_eq!(end.outcome, Outcome::Succeeded);
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
        ToolResult {
            content: vec![Content::text("3 files")],
            details: Some(details),
            is_error: false,
        }
    );
    let json = round_trip(&end.result);
    assert_eq!(
        json["details"],
        serde_json::json!({ "files": ["a", "b", "c"], "total": 3, "ratio": 0.5, "owner": null })
    );
}

#[derive(Serialize)]
struct Exit {
    code: i32,
    stderr: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_answer_with_details_is_failed_and_keeps_them() {
    let end = run_answer(|| {
        ToolOutput::error("the build failed").with_details(Exit {
            code: -1,
            stderr: "error[E0308]".into(),
        })
    })
    .await;
    assert_eq!(end.outcome, Outcome::Failed);
    assert_eq!(
        end.result,
        ToolResult {
            content: vec![Content::text("the build failed")],
            details: Some(Plain::Map(BTreeMap::from([
                ("code".to_owned(), Plain::Int(-1)),
                ("stderr".to_owned(), Plain::Text("error[E0308]".into())),
            ]))),
            is_error: true,
        }
    );
    let json = round_trip(&end.result);
    assert_eq!(json["isError"], true);
    assert_eq!(json["details"]["code"], -1);
}

/// Plain details given as such, with every kind of plain value, bytes
/// included, survive the call and the JSON round trip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_details_of_every_kind_round_trip_through_json() {
    fn details() -> Plain {
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
    let end = run_answer(|| {
        ToolOutput::image(Image::new("image/png", PNG), "with data").with_plain_details(details())
    })
    .await;
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert_eq!(end.result.details, Some(details()));
    let json = round_trip(&end.result);
    assert_eq!(
        json["details"]["bytes"],
        serde_json::json!({ "$bytes": "AAEC/w==" })
    );
}

/// An image without bytes is not an image: the call fails (an unusable
/// answer, not a crash) with a text naming the tool and the image.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_without_bytes_makes_the_answer_unusable() {
    let answer = || ToolOutput::image(Image::new("image/png", Vec::new()), "empty");
    let end = run_answer(answer).await;
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert!(end.result.is_error);
    assert_eq!(end.result.image_count(), 0);
    let reason = answer()
        .to_result(&Limits::default())
        .expect_err("an empty image is invalid")
        .to_string();
    let text = end.result.text();
    assert!(text.contains("`answer`"), "{text}");
    assert!(text.contains(&reason), "{text}");
    assert!(text.contains("image 0"), "{text}");
    round_trip(&end.result);
}

/// A mime type that is not `image/*` is not an image either, wherever the
/// image is in the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_with_a_non_image_mime_type_makes_the_answer_unusable() {
    let answer = || {
        ToolOutput::images(
            vec![
                Image::new("image/png", PNG),
                Image::new("text/plain", b"hello".to_vec()),
            ],
            "two",
        )
    };
    let end = run_answer(answer).await;
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert!(end.result.is_error);
    assert_eq!(end.result.image_count(), 0);
    let text = end.result.text();
    assert!(text.contains("`answer`"), "{text}");
    assert!(text.contains("image 1"), "{text}");
    assert!(text.contains("text/plain"), "{text}");

    for mime in ["image", "image/", "", "png"] {
        let output = ToolOutput::image(Image::new(mime, PNG), "x");
        assert!(
            output.to_result(&Limits::default()).is_err(),
            "mime type {mime:?} was taken for an image"
        );
    }
}
