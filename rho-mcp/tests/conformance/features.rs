//! The conformance suite's resources and prompts, served beside the
//! fixture tools through `McpServer::with_features`: what rho passes
//! through and adds nothing to. The shapes are written as the JSON the
//! specification shows and read into rmcp's types.

use rho_mcp::rmcp::model::{
    CompleteRequestParams, CompleteResult, ElicitRequest, ElicitRequestParams,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequest, InputRequiredResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    PromptListChangedNotification, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rho_mcp::rmcp::service::RequestContext;
use rho_mcp::rmcp::{ErrorData, RoleServer};
use rho_mcp::serve::{McpFeatures, Notifier};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rho_tool_core::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A 1x1 PNG, base64.
const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

/// `value`, a result's JSON, in rmcp's type: complete (as revision
/// 2026-07-28 wants every result to say; rmcp drops the word for older
/// clients).
fn shape<T: DeserializeOwned>(mut value: Value) -> T {
    value["resultType"] = json!("complete");
    serde_json::from_value(value).expect("an MCP shape rmcp reads")
}

/// The suite's resources and prompts, and `test_dynamic_prompt` when the
/// trigger tool has added it.
#[derive(Clone, Default)]
pub(crate) struct Features {
    dynamic_prompt: Arc<AtomicBool>,
    notifier: Notifier,
}

impl Features {
    /// Adds `test_dynamic_prompt`, or takes it away when it is there, and
    /// tells the clients the prompt list changed; says which.
    pub(crate) fn switch_prompt(&self) -> &'static str {
        let was_there = self.dynamic_prompt.fetch_xor(true, Ordering::SeqCst);
        self.notifier
            .notify(PromptListChangedNotification::default().into());
        if was_there {
            "test_dynamic_prompt removed"
        } else {
            "test_dynamic_prompt added"
        }
    }
}

#[async_trait]
impl McpFeatures for Features {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::builder()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_completions()
            .build()
    }

    fn notifier(&self) -> Option<Notifier> {
        Some(self.notifier.clone())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(shape(json!({ "resources": [
            { "uri": "test://static-text", "name": "static-text", "mimeType": "text/plain",
              "description": "A text resource" },
            { "uri": "test://static-binary", "name": "static-binary", "mimeType": "image/png",
              "description": "A binary resource" },
            { "uri": "test://watched-resource", "name": "watched-resource", "mimeType": "text/plain",
              "description": "A resource to subscribe to" }
        ] })))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(shape(json!({ "resourceTemplates": [
            { "uriTemplate": "test://template/{id}/data", "name": "template",
              "mimeType": "application/json", "description": "Data of one id" }
        ] })))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" | "test://watched-resource" => json!({
                "uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."
            }),
            "test://static-binary" => json!({
                "uri": uri, "mimeType": "image/png", "blob": PNG_BASE64
            }),
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) => json!({
                    "uri": uri, "mimeType": "application/json",
                    "text": json!({ "id": id, "data": format!("data of {id}") }).to_string()
                }),
                None => {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource {uri}"),
                        Some(json!({ "uri": uri })),
                    ));
                }
            },
        };
        let result: ReadResourceResult = shape(json!({ "contents": [contents] }));
        Ok(result.into())
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut listed = json!({ "prompts": [
            { "name": "test_simple_prompt", "description": "A prompt without arguments" },
            { "name": "test_prompt_with_arguments", "description": "A prompt with two arguments",
              "arguments": [
                  { "name": "arg1", "description": "The first", "required": true },
                  { "name": "arg2", "description": "The second", "required": true }
              ] },
            { "name": "test_prompt_with_embedded_resource",
              "description": "A prompt holding a resource",
              "arguments": [{ "name": "resourceUri", "description": "The resource", "required": true }] },
            { "name": "test_prompt_with_image", "description": "A prompt holding an image" },
            { "name": "test_input_required_result_prompt",
              "description": "A prompt that asks the user for its context first" }
        ] });
        if self.dynamic_prompt.load(Ordering::SeqCst)
            && let Some(prompts) = listed["prompts"].as_array_mut()
        {
            prompts.push(json!({ "name": "test_dynamic_prompt",
                                 "description": "A prompt added at run time" }));
        }
        Ok(shape(listed))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let argument = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let content = match request.name.as_str() {
            "test_simple_prompt" => {
                json!({ "type": "text", "text": "This is a simple prompt for testing." })
            }
            "test_prompt_with_arguments" => json!({ "type": "text", "text": format!(
                "Prompt with arguments: arg1='{}', arg2='{}'", argument("arg1"), argument("arg2")
            ) }),
            "test_prompt_with_embedded_resource" => json!({ "type": "resource", "resource": {
                "uri": argument("resourceUri"), "mimeType": "text/plain",
                "text": "Embedded resource content for testing."
            } }),
            "test_prompt_with_image" => {
                json!({ "type": "image", "data": PNG_BASE64, "mimeType": "image/png" })
            }
            // A host's prompt asks its client the 2026-07-28 way itself,
            // with rmcp's types: rho passes prompts through.
            "test_input_required_result_prompt" => {
                let answered = request
                    .input_responses
                    .as_ref()
                    .and_then(|responses| responses.get("user_context"))
                    .and_then(|answer| answer.pointer("/content/context"))
                    .and_then(Value::as_str);
                let Some(context) = answered else {
                    let question: ElicitRequestParams = shape(json!({
                        "mode": "form",
                        "message": "What context should the prompt use?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": { "context": { "type": "string" } },
                            "required": ["context"]
                        }
                    }));
                    let asks = InputRequiredResult::from_input_requests(
                        [(
                            "user_context".to_owned(),
                            InputRequest::Elicitation(ElicitRequest::new(question)),
                        )]
                        .into_iter()
                        .collect(),
                    );
                    return Ok(asks.into());
                };
                json!({ "type": "text", "text": format!("A prompt in this context: {context}") })
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt {other}"),
                    None,
                ));
            }
        };
        let result: GetPromptResult = shape(json!({
            "messages": [{ "role": "user", "content": content }]
        }));
        Ok(result.into())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(shape(
            json!({ "completion": { "values": [], "total": 0, "hasMore": false } }),
        ))
    }
}
