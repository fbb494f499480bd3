//! `rho-demo model`: the whole loop of a host against a real model API.
//!
//! Request, calls, turn, results, next request, in any of the four
//! dialects rho speaks, until the model answers without calls. rho holds
//! no HTTP client for model APIs: this host has one (reqwest), and
//! `rho::model` turns its JSON into calls and results into JSON.
//!
//! ```text
//! RHO_MODEL_KEY=... cargo run -p rho-demo -- model --api anthropic
//! cargo run -p rho-demo -- model --api chat --url http://localhost:11434/v1 --model qwen3
//! ```

use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use rho::model::anthropic::Anthropic;
use rho::model::chat::Chat;
use rho::model::gemini::Gemini;
use rho::model::responses::Responses;
use rho::model::{Dialect, ToolList};
use rho::tokio::{TokioExecutor, TurnRunner};
use rho::{Source, ToolRegistry};
use serde_json::{Value, json};

use crate::tools::{Grep, ReadFile, SaveNote, Screenshot};

/// Talk to a model: the full loop of a host, in any of the four dialects,
/// against a URL and key from the environment.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// The model API's dialect.
    #[arg(long, env = "RHO_MODEL_API", value_enum, default_value_t = Api::Chat)]
    api: Api,
    /// The API's base URL (default: the provider's own; for a local
    /// OpenAI-compatible server, e.g. `http://localhost:11434/v1`).
    #[arg(long, env = "RHO_MODEL_URL")]
    url: Option<String>,
    /// The model's name (default: one of the provider's current ones).
    #[arg(long, env = "RHO_MODEL")]
    model: Option<String>,
    /// What the person asks.
    #[arg(
        long,
        default_value = "Read src/main.rs, grep the project for `TODO`, take a screenshot, \
                         then save a one-line note of what you found."
    )]
    prompt: String,
    /// At most this many requests.
    #[arg(long, default_value_t = 8)]
    max_requests: usize,
}

/// The model APIs rho speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Api {
    /// OpenAI Chat Completions, and OpenAI-compatible servers.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Gemini,
}

impl Api {
    fn dialect(self) -> Box<dyn Dialect> {
        match self {
            Api::Chat => Box::new(Chat::new()),
            Api::Responses => Box::new(Responses::new()),
            Api::Anthropic => Box::new(Anthropic::new()),
            Api::Gemini => Box::new(Gemini::new()),
        }
    }

    fn default_url(self) -> &'static str {
        match self {
            Api::Chat | Api::Responses => "https://api.openai.com/v1",
            Api::Anthropic => "https://api.anthropic.com",
            Api::Gemini => "https://generativelanguage.googleapis.com",
        }
    }

    fn default_model(self) -> &'static str {
        match self {
            Api::Chat | Api::Responses => "gpt-5-mini",
            Api::Anthropic => "claude-sonnet-4-5",
            Api::Gemini => "gemini-2.5-flash",
        }
    }

    /// The environment variables the key is read from, in order.
    fn key_variables(self) -> &'static [&'static str] {
        match self {
            Api::Chat | Api::Responses => &["RHO_MODEL_KEY", "OPENAI_API_KEY"],
            Api::Anthropic => &["RHO_MODEL_KEY", "ANTHROPIC_API_KEY"],
            Api::Gemini => &["RHO_MODEL_KEY", "GEMINI_API_KEY"],
        }
    }

    /// The first message of the conversation.
    fn user(self, text: &str) -> Value {
        match self {
            Api::Gemini => json!({ "role": "user", "parts": [{ "text": text }] }),
            _ => json!({ "role": "user", "content": text }),
        }
    }

    /// The request: where, with which headers, and its body.
    fn request(
        self,
        client: &reqwest::Client,
        url: &str,
        key: &str,
        model: &str,
        conversation: &[Value],
        tools: &ToolList,
    ) -> reqwest::RequestBuilder {
        let url = url.trim_end_matches('/');
        let (endpoint, body) = match self {
            Api::Chat => (
                format!("{url}/chat/completions"),
                json!({ "model": model, "messages": conversation, "tools": tools.to_json() }),
            ),
            Api::Responses => (
                format!("{url}/responses"),
                // Stateless: the conversation is sent whole each time.
                json!({ "model": model, "input": conversation, "tools": tools.to_json(), "store": false }),
            ),
            Api::Anthropic => (
                format!("{url}/v1/messages"),
                json!({ "model": model, "max_tokens": 2048, "messages": conversation, "tools": tools.to_json() }),
            ),
            Api::Gemini => (
                format!("{url}/v1beta/models/{model}:generateContent"),
                json!({ "contents": conversation, "tools": tools.to_json() }),
            ),
        };
        let request = client.post(endpoint).json(&body);
        match self {
            Api::Chat | Api::Responses => request.bearer_auth(key),
            Api::Anthropic => request
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01"),
            Api::Gemini => request.header("x-goog-api-key", key),
        }
    }
}

/// The tools the model may call: reads, a search, a screenshot (an
/// image, to show how each API takes one) and a note.
fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("workspace"))
        .unwrap_or_else(|error| crate::fail(&error.to_string()));
    for tool in [
        Arc::new(ReadFile) as Arc<dyn rho::Tool>,
        Arc::new(Grep),
        Arc::new(Screenshot),
        Arc::new(SaveNote),
    ] {
        source
            .add(tool)
            .unwrap_or_else(|error| crate::fail(&error.to_string()));
    }
    registry
}

/// Runs the loop; its exit code.
pub(crate) fn run(args: ModelArgs) -> i32 {
    let api = args.api;
    let Some(key) = api
        .key_variables()
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|key| !key.is_empty()))
    else {
        eprintln!(
            "rho-demo model: no key. Set {} (and RHO_MODEL_URL for a server of your own).",
            api.key_variables().join(" or ")
        );
        return 2;
    };
    let url = args.url.unwrap_or_else(|| api.default_url().to_owned());
    let model = args.model.unwrap_or_else(|| api.default_model().to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|error| crate::fail(&format!("cannot start tokio: {error}")));
    runtime.block_on(async move {
        let registry = registry();
        let executor =
            TokioExecutor::current().unwrap_or_else(|error| crate::fail(&error.to_string()));
        let turns = TurnRunner::new(executor, registry.clone());
        let dialect = api.dialect();
        let tools = match dialect.tools(&registry.tools()) {
            Ok(tools) => tools,
            Err(error) => {
                eprintln!("rho-demo model: the tools cannot be listed: {error}");
                return 1;
            }
        };
        for listed in tools.listed() {
            if !listed.changes.is_empty() || listed.not_strict.is_some() {
                println!(
                    "tool {}: {} change(s){}",
                    listed.name,
                    listed.changes.len(),
                    listed
                        .not_strict
                        .as_ref()
                        .map(|why| format!(", not strict: {why}"))
                        .unwrap_or_default()
                );
            }
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap_or_else(|error| crate::fail(&format!("no HTTP client: {error}")));
        let mut conversation = vec![api.user(&args.prompt)];
        println!("{} at {url}, model {model}", dialect.name());
        println!("person: {}", args.prompt);
        for request in 1..=args.max_requests {
            let sent = api
                .request(&client, &url, &key, &model, &conversation, &tools)
                .send()
                .await;
            let response = match sent {
                Ok(response) => response,
                Err(error) => {
                    eprintln!("rho-demo model: request {request} failed: {error}");
                    return 1;
                }
            };
            let status = response.status();
            let body: Value = match response.json().await {
                Ok(body) => body,
                Err(error) => {
                    eprintln!("rho-demo model: request {request}: {status}, and no JSON: {error}");
                    return 1;
                }
            };
            if !status.is_success() {
                eprintln!("rho-demo model: request {request}: {status}: {body}");
                return 1;
            }
            let reply = match dialect.read(&body, Some(&tools)) {
                Ok(reply) => reply,
                Err(error) => {
                    eprintln!("rho-demo model: request {request}: {error}");
                    return 1;
                }
            };
            if let Some(text) = &reply.text {
                println!("model: {text}");
            }
            conversation.extend(reply.history.iter().cloned());
            if reply.calls.is_empty() {
                println!(
                    "(the model stopped: {})",
                    reply.stop.as_deref().unwrap_or("no reason given")
                );
                return 0;
            }
            for call in &reply.calls {
                println!("  call {} {}({})", call.id, call.name, call.arguments);
            }
            let entries = turns.turn(reply.calls.clone()).await;
            for entry in &entries {
                let images = entry.result.image_count();
                println!(
                    "  -> {} {:?}: {}{}",
                    entry.call_id,
                    entry.outcome,
                    entry.text(),
                    if images > 0 {
                        format!(" (+{images} image)")
                    } else {
                        String::new()
                    }
                );
            }
            conversation.extend(dialect.results(&reply, &entries));
        }
        eprintln!(
            "rho-demo model: still calling tools after {} requests",
            args.max_requests
        );
        1
    })
}
