//! The conformance suite's fixtures that reach back to the client: rho
//! tools that log to it, ask its model (sampling) and ask its user
//! (elicitation) through `McpClient`, the client rho's server hands each
//! served call. By the names, arguments and answers the suite's server
//! scenarios check (`tools-call-with-logging`, `tools-call-sampling`,
//! `tools-call-elicitation`, `elicitation-sep1034-defaults`,
//! `elicitation-sep1330-enums`, and `server-stateless`'s
//! `test_logging_tool`).

#![allow(deprecated)] // sampling and logging: SEP-2577; see rho_mcp::McpClient

use std::time::Duration;

use rho_mcp::McpClient;
use rho_mcp::rmcp::model::{
    CreateMessageRequestParams, ElicitRequestParams, ElicitationSchema, LoggingLevel,
    SamplingMessage,
};
use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// The fixtures, one variant a tool.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Asking {
    Logging,
    /// One log message: a client on 2026-07-28 gets it only when its
    /// request named a log level.
    LoggingOnce,
    Sampling,
    Elicitation,
    Defaults,
    Enums,
}

pub(crate) const ALL: &[Asking] = &[
    Asking::Logging,
    Asking::LoggingOnce,
    Asking::Sampling,
    Asking::Elicitation,
    Asking::Defaults,
    Asking::Enums,
];

#[async_trait]
impl Tool for Asking {
    fn name(&self) -> &str {
        match self {
            Asking::Logging => "test_tool_with_logging",
            Asking::LoggingOnce => "test_logging_tool",
            Asking::Sampling => "test_sampling",
            Asking::Elicitation => "test_elicitation",
            Asking::Defaults => "test_elicitation_sep1034_defaults",
            Asking::Enums => "test_elicitation_sep1330_enums",
        }
    }

    fn description(&self) -> &str {
        match self {
            Asking::Logging => "Logs three messages to the client while it runs",
            Asking::LoggingOnce => "Logs one message, for a client that asked for a log level",
            Asking::Sampling => "Asks the client's model to answer a prompt",
            Asking::Elicitation => "Asks the client's user for a name and an email",
            Asking::Defaults => "Asks the client's user, every field with a default",
            Asking::Enums => "Asks the client's user to choose, in each enum form",
        }
    }

    fn parameters(&self) -> Value {
        let one = |name: &str| {
            json!({
                "type": "object",
                "properties": { name: { "type": "string" } },
                "required": [name]
            })
        };
        match self {
            Asking::Sampling => one("prompt"),
            Asking::Elicitation => one("message"),
            _ => json!({ "type": "object", "properties": {} }),
        }
    }

    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        let Some(client) = McpClient::of(&context) else {
            return ToolOutput::error("this tool runs only when served over MCP");
        };
        match self {
            Asking::Logging => {
                let logger = Some("test_tool_with_logging");
                for (step, text) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if step > 0 {
                        context.sleep(Duration::from_millis(50)).await;
                    }
                    if let Err(error) = client.log(LoggingLevel::Info, logger, json!(text)).await {
                        return ToolOutput::error(error.to_string());
                    }
                }
                ToolOutput::text("Logging tool completed")
            }
            Asking::LoggingOnce => {
                let logger = Some("test_logging_tool");
                let message = json!("A message of test_logging_tool");
                match client.log(LoggingLevel::Info, logger, message).await {
                    Ok(()) => ToolOutput::text("Logging tool completed"),
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            Asking::Sampling => {
                let prompt = arguments["prompt"].as_str().unwrap_or_default();
                let params =
                    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
                match client.create_message(params).await {
                    Ok(answer) => {
                        let text = answer
                            .message
                            .content
                            .first()
                            .and_then(|part| part.as_text())
                            .map(|part| part.text.clone())
                            .unwrap_or_default();
                        ToolOutput::text(format!("LLM response: {text}"))
                    }
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            Asking::Elicitation => {
                let message = arguments["message"].as_str().unwrap_or_default();
                ask(
                    &client,
                    message,
                    json!({
                        "type": "object",
                        "properties": {
                            "username": { "type": "string", "description": "User's response" },
                            "email": { "type": "string", "description": "User's email address" }
                        },
                        "required": ["username", "email"]
                    }),
                    "User response",
                )
                .await
            }
            Asking::Defaults => {
                ask(
                    &client,
                    "Please review the defaults",
                    json!({
                        "type": "object",
                        "properties": {
                            "name": { "type": "string", "default": "John Doe" },
                            "age": { "type": "integer", "default": 30 },
                            "score": { "type": "number", "default": 95.5 },
                            "status": {
                                "type": "string",
                                "enum": ["active", "inactive", "pending"],
                                "default": "active"
                            },
                            "verified": { "type": "boolean", "default": true }
                        }
                    }),
                    "Elicitation completed",
                )
                .await
            }
            Asking::Enums => ask(
                &client,
                "Please choose",
                json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {
                            "type": "string",
                            "enum": ["option1", "option2", "option3"]
                        },
                        "titledSingle": {
                            "type": "string",
                            "oneOf": [
                                { "const": "value1", "title": "First Option" },
                                { "const": "value2", "title": "Second Option" },
                                { "const": "value3", "title": "Third Option" }
                            ]
                        },
                        "legacyEnum": {
                            "type": "string",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {
                            "type": "array",
                            "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
                        },
                        "titledMulti": {
                            "type": "array",
                            "items": {
                                "anyOf": [
                                    { "const": "value1", "title": "First Choice" },
                                    { "const": "value2", "title": "Second Choice" },
                                    { "const": "value3", "title": "Third Choice" }
                                ]
                            }
                        }
                    }
                }),
                "Elicitation completed",
            )
            .await,
        }
    }
}

/// Asks the client's user `message` with the form `schema`, and answers
/// what they did, after `said`.
async fn ask(client: &McpClient, message: &str, schema: Value, said: &str) -> ToolOutput {
    let schema: ElicitationSchema = match serde_json::from_value(schema) {
        Ok(schema) => schema,
        Err(error) => return ToolOutput::error(format!("the form is not one MCP has: {error}")),
    };
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_owned(),
        requested_schema: schema,
    };
    match client.elicit(params).await {
        Ok(answer) => ToolOutput::text(format!(
            "{said}: action={}, content={}",
            serde_json::to_value(&answer.action).unwrap_or_default(),
            answer.content.unwrap_or_default()
        )),
        Err(error) => ToolOutput::error(error.to_string()),
    }
}
