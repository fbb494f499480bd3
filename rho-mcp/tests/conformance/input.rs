//! The conformance suite's fixtures for input-required results (SEP-2322):
//! rho tools that ask their client through `McpClient::ask`, by the names,
//! keys and answers the suite's `input-required-result-*` scenarios and
//! `server-stateless` (`test_missing_capability`,
//! `test_streaming_elicitation`) check.
//!
//! The suite describes these tools as handlers run again with the client's
//! answers; served by rho they run once, each waiting inside its question
//! for the client's retry. The client sees the same messages either way.

#![allow(deprecated)] // sampling and roots: SEP-2577; see rho_mcp::McpClient

use rho_mcp::rmcp::model::{CreateMessageRequestParams, ElicitRequestParams, SamplingMessage};
use rho_mcp::{Answers, McpClient, Questions};
use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// The fixtures, one variant a tool.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Input {
    Elicitation,
    Sampling,
    ListRoots,
    RequestState,
    MultipleInputs,
    MultiRound,
    TamperedState,
    Capabilities,
    MissingCapability,
    /// The elicitation again, under the name `server-stateless` looks
    /// for: its question must come in the call's answer, never as a
    /// request of the server's on the call's stream.
    StreamingElicitation,
}

pub(crate) const ALL: &[Input] = &[
    Input::Elicitation,
    Input::Sampling,
    Input::ListRoots,
    Input::RequestState,
    Input::MultipleInputs,
    Input::MultiRound,
    Input::TamperedState,
    Input::Capabilities,
    Input::MissingCapability,
    Input::StreamingElicitation,
];

/// An elicitation of one field (of JSON Schema type `kind`).
pub(crate) fn elicitation(message: &str, field: &str, kind: &str) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": kind } },
            "required": [field],
        },
    }))
    .expect("a form elicitation")
}

fn sampling(prompt: &str, max_tokens: u32) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens)
}

/// The user's value of `field` under `key`.
fn field(answers: &Answers, key: &str, field: &str) -> String {
    answers
        .elicit(key)
        .and_then(|answer| answer.content.as_ref())
        .and_then(|content| content.get(field))
        .map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

/// The model's text under `key`.
fn message(answers: &Answers, key: &str) -> String {
    answers
        .message(key)
        .and_then(|answer| answer.message.content.first())
        .and_then(|part| part.as_text())
        .map(|part| part.text.clone())
        .unwrap_or_default()
}

/// The roots' URIs under `key`.
fn roots(answers: &Answers, key: &str) -> String {
    answers
        .roots(key)
        .map(|answer| {
            answer
                .roots
                .iter()
                .map(|root| root.uri.clone())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

#[async_trait]
impl Tool for Input {
    fn name(&self) -> &str {
        match self {
            Input::Elicitation => "test_input_required_result_elicitation",
            Input::Sampling => "test_input_required_result_sampling",
            Input::ListRoots => "test_input_required_result_list_roots",
            Input::RequestState => "test_input_required_result_request_state",
            Input::MultipleInputs => "test_input_required_result_multiple_inputs",
            Input::MultiRound => "test_input_required_result_multi_round",
            Input::TamperedState => "test_input_required_result_tampered_state",
            Input::Capabilities => "test_input_required_result_capabilities",
            Input::MissingCapability => "test_missing_capability",
            Input::StreamingElicitation => "test_streaming_elicitation",
        }
    }

    fn description(&self) -> &str {
        match self {
            Input::Elicitation => "Asks the user's name, then greets them",
            Input::Sampling => "Asks the client's model a question",
            Input::ListRoots => "Asks the client for its roots",
            Input::RequestState => "Asks for a confirmation over a request state",
            Input::MultipleInputs => "Asks the user, the model and the roots at once",
            Input::MultiRound => "Asks two questions, one after the other",
            Input::TamperedState => "Asks for a confirmation; a changed state is refused",
            Input::Capabilities => "Asks only what the client declared it can answer",
            Input::MissingCapability => "Needs sampling, whatever the client declared",
            Input::StreamingElicitation => {
                "Asks the user's name in its answer, never in a request of its own"
            }
        }
    }

    async fn run(&self, _arguments: Value, context: ToolContext) -> ToolOutput {
        let Some(client) = McpClient::of(&context) else {
            return ToolOutput::error("this tool runs only when served over MCP");
        };
        let ask = |questions| {
            let client = client.clone();
            async move { client.ask(questions).await }
        };
        let answered = match self {
            Input::Elicitation | Input::StreamingElicitation => ask(Questions::new().elicit(
                "user_name",
                elicitation("What is your name?", "name", "string"),
            ))
            .await
            .map(|answers| format!("Hello, {}!", field(&answers, "user_name", "name"))),
            Input::Sampling => ask(Questions::new().create_message(
                "capital_question",
                sampling("What is the capital of France?", 100),
            ))
            .await
            .map(|answers| format!("The model said: {}", message(&answers, "capital_question"))),
            Input::ListRoots => ask(Questions::new().list_roots("client_roots"))
                .await
                .map(|answers| format!("The client's roots: {}", roots(&answers, "client_roots"))),
            Input::RequestState | Input::TamperedState => {
                ask(Questions::new()
                    .elicit("confirm", elicitation("Please confirm", "ok", "boolean")))
                .await
                // The state was rho's, and it led back to this very call.
                .map(|answers| format!("state-ok: confirmed {}", field(&answers, "confirm", "ok")))
            }
            Input::MultipleInputs => ask(Questions::new()
                .elicit(
                    "user_name",
                    elicitation("What is your name?", "name", "string"),
                )
                .create_message("greeting", sampling("Generate a greeting", 50))
                .list_roots("client_roots"))
            .await
            .map(|answers| {
                format!(
                    "{} to {} (roots: {})",
                    message(&answers, "greeting"),
                    field(&answers, "user_name", "name"),
                    roots(&answers, "client_roots")
                )
            }),
            Input::MultiRound => {
                let name = match ask(Questions::new().elicit(
                    "step1",
                    elicitation("Step 1: What is your name?", "name", "string"),
                ))
                .await
                {
                    Ok(answers) => field(&answers, "step1", "name"),
                    Err(error) => return ToolOutput::error(error.to_string()),
                };
                ask(Questions::new().elicit(
                    "step2",
                    elicitation("Step 2: What is your favorite color?", "color", "string"),
                ))
                .await
                .map(|answers| format!("{name} likes {}", field(&answers, "step2", "color")))
            }
            Input::Capabilities => {
                let declared = client.capabilities().unwrap_or_default();
                let mut questions = Questions::new();
                if declared.elicitation.is_some() {
                    questions = questions.elicit(
                        "user_name",
                        elicitation("What is your name?", "name", "string"),
                    );
                }
                if declared.sampling.is_some() {
                    questions = questions.create_message(
                        "capital_question",
                        sampling("What is the capital of France?", 100),
                    );
                }
                if declared.roots.is_some() {
                    questions = questions.list_roots("client_roots");
                }
                ask(questions)
                    .await
                    .map(|answers| format!("Asked what the client can answer: {answers:?}"))
            }
            Input::MissingCapability => {
                ask(Questions::new()
                    .create_message("needed", sampling("This tool needs sampling", 10)))
                .await
                .map(|answers| format!("The model said: {}", message(&answers, "needed")))
            }
        };
        match answered {
            Ok(text) => ToolOutput::text(text),
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }
}
