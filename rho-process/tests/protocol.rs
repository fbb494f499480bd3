//! The protocol through rho's `Runner`: arguments in on stdin, the answer
//! out on stdout, and every way a child can get it wrong.

#![cfg(unix)]

mod support;

use std::sync::Arc;

use rho_process::ProcessTool;
use rho_tool_core::{CallEnd, Content, Executor, Image, Outcome, Runner, ToolCall};
use support::{Scratch, on_tokio, sh};

crate::on_both_executors!(a_valid_answer_with_text_details_and_an_image);

async fn run<E: Executor>(runner: &Runner<E>, tool: ProcessTool) -> CallEnd {
    let name = rho_tool_core::Tool::name(&tool).to_owned();
    let arguments = serde_json::json!({ "path": "/tmp/a b", "n": 3 });
    runner
        .start(ToolCall::new("1", name, arguments), Arc::new(tool))
        .await
}

/// The child reads its arguments and answers text, details (here: the
/// arguments it read) and an image.
async fn a_valid_answer_with_text_details_and_an_image<E: Executor>(runner: Runner<E>) {
    let scratch = Scratch::new("answer");
    let script = r#"args=$(cat)
printf '{"text": "a 1x1 png", "details": {"args": %s}, "images": [{"mimeType": "image/png", "data": "iVBORw0KGgo="}]}\n' "$args""#;
    let end = run(&runner, sh("shot", script, &scratch)).await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(
        end.result.content(),
        vec![
            Content::image(Image::new("image/png", b"\x89PNG\r\n\x1a\n".to_vec())),
            Content::text("a 1x1 png"),
        ]
    );
    let details = end.result.details.expect("details").to_json();
    assert_eq!(
        details,
        serde_json::json!({ "args": { "path": "/tmp/a b", "n": 3 } })
    );
}

#[test]
fn an_error_answer_is_the_childs_own_error() {
    on_tokio(|runner| async move {
        let scratch = Scratch::new("error");
        let script = r#"cat >/dev/null; echo '{"error": "no such file", "details": {"code": 2}}'"#;
        let end = run(&runner, sh("read", script, &scratch)).await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert_eq!(end.result.text(), "no such file");
        let details = end.result.details.expect("details").to_json();
        assert_eq!(details, serde_json::json!({ "code": 2 }));
    });
}

#[test]
fn a_non_zero_exit_names_the_code_and_quotes_stderr() {
    on_tokio(|runner| async move {
        let scratch = Scratch::new("exit");
        let script = r#"cat >/dev/null; echo '{"text": "ignored"}'; echo 'disk full' >&2; exit 3"#;
        let end = run(&runner, sh("build", script, &scratch)).await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert_eq!(
            end.result.text(),
            "tool `build` failed: its process exited with code 3\nits stderr:\ndisk full"
        );
    });
}

#[test]
fn output_that_is_not_json_is_quoted_in_the_error() {
    on_tokio(|runner| async move {
        let scratch = Scratch::new("not-json");
        let end = run(&runner, sh("chatty", "echo hello world", &scratch)).await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        let text = end.result.text();
        assert!(
            text.starts_with("tool `chatty` gave invalid output: its stdout is not JSON ("),
            "{text}"
        );
        assert!(text.ends_with("); it began: \"hello world\\n\""), "{text}");
    });
}

#[test]
fn json_of_the_wrong_shape_says_what_is_wrong() {
    on_tokio(|runner| async move {
        let scratch = Scratch::new("shape");
        let end = run(&runner, sh("typo", r#"echo '{"txt": "hi"}'"#, &scratch)).await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert_eq!(
            end.result.text(),
            "tool `typo` gave invalid output: its stdout is not an answer: unknown field `txt`, \
             expected one of `text`, `error`, `images`, `details` at line 1 column 6; \
             it began: \"{\\\"txt\\\": \\\"hi\\\"}\\n\""
        );

        let end = run(&runner, sh("silent", "echo 'nothing to say' >&2", &scratch)).await;
        assert_eq!(
            end.result.text(),
            "tool `silent` gave invalid output: its process exited without writing an answer to stdout\
             \nits stderr:\nnothing to say"
        );
    });
}

#[test]
fn an_image_that_is_not_one_is_refused_by_the_core() {
    on_tokio(|runner| async move {
        let scratch = Scratch::new("image");
        let script =
            r#"echo '{"text": "t", "images": [{"mimeType": "text/plain", "data": "AQID"}]}'"#;
        let end = run(&runner, sh("shot", script, &scratch)).await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert!(end.result.text().contains("image 0"), "{end:?}");
    });
}

#[test]
fn a_program_that_does_not_exist_is_an_error() {
    on_tokio(|runner| async move {
        let missing = ProcessTool::new("ghost", "/nonexistent/rho-process-test");
        let end = run(&runner, missing).await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert!(
            end.result.text().starts_with(
                "tool `ghost` could not start its process `/nonexistent/rho-process-test`: "
            ),
            "{}",
            end.result.text()
        );
    });
}

#[test]
fn the_environment_is_cleared_unless_inherited() {
    // Some variable of the host's (cargo sets several), with a value that
    // needs no escaping in JSON.
    let plain = |text: &str| {
        !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
    };
    let (name, value) = std::env::vars()
        .find(|(name, value)| name != "PATH" && plain(name) && plain(value))
        .expect("the test process has some plain environment variable");
    let script = r#"cat >/dev/null; printf '{"text": "%s %s"}' "$(printenv "$WANTED" || echo unset)" "${GREETING-unset}""#;
    on_tokio(|runner| async move {
        let scratch = Scratch::new("env");
        let cleared = sh("env", script, &scratch)
            .with_env("WANTED", &name)
            .with_env("GREETING", "hi");
        let end = run(&runner, cleared).await;
        assert_eq!(
            end.result.text(),
            "unset hi",
            "{name} leaked into the child"
        );

        let inherited = sh("env", script, &scratch)
            .inherit_env()
            .with_env("WANTED", &name);
        let end = run(&runner, inherited).await;
        assert_eq!(end.result.text(), format!("{value} unset"));
    });
}
