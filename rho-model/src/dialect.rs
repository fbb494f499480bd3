//! What every dialect does, as one trait: for a host that picks its model
//! API at run time, and for code written once for all of them.

use rho_registry::ToolInfo;
use rho_turn::SessionEntry;
use serde_json::Value;

use crate::anthropic::{Anthropic, AnthropicStream};
use crate::chat::{Chat, ChatStream};
use crate::gemini::{Gemini, GeminiStream};
use crate::listing::{ListError, ToolList};
use crate::reading::{ReadError, Reply};
use crate::responses::{Responses, ResponsesStream};

/// One model API's shapes: the request's tools, the model's calls read
/// from a response (whole or streamed), and the results written back.
///
/// Each dialect type has the same methods of its own (with its own stream
/// type); this trait is the same surface behind `dyn`:
///
/// ```
/// use rho::model::{Dialect, anthropic::Anthropic, chat::Chat};
///
/// fn dialect(api: &str) -> Box<dyn Dialect> {
///     match api {
///         "anthropic" => Box::new(Anthropic::new()),
///         _ => Box::new(Chat::new()),
///     }
/// }
/// assert_eq!(dialect("anthropic").name(), "Anthropic Messages");
/// ```
pub trait Dialect: Send + Sync {
    /// The API's name, for messages.
    fn name(&self) -> &'static str;

    /// The request's `tools`, from the tools a registry lists.
    fn tools(&self, tools: &[ToolInfo]) -> Result<ToolList, ListError>;

    /// The model's answer in a whole (not streamed) response.
    fn read(&self, response: &Value, tools: Option<&ToolList>) -> Result<Reply, ReadError>;

    /// A reader of a streamed response's events.
    fn stream<'l>(&self, tools: Option<&'l ToolList>) -> Box<dyn StreamReader + 'l>;

    /// What answers `reply`'s calls, from the entries of the turn that ran
    /// them: what to append to the conversation after
    /// [`Reply::history`], one answer per call in the calls' order.
    fn results(&self, reply: &Reply, entries: &[SessionEntry]) -> Vec<Value>;
}

/// A streamed response, read event by event.
pub trait StreamReader: Send {
    /// Takes one event (one SSE `data:` line's JSON, or one chunk).
    fn push(&mut self, event: &Value) -> Result<(), ReadError>;

    /// The reply, whether or not the stream ended well.
    fn finish(self: Box<Self>) -> Reply;
}

macro_rules! dialect {
    ($dialect:ty, $stream:ident, $name:expr) => {
        impl Dialect for $dialect {
            fn name(&self) -> &'static str {
                $name
            }
            fn tools(&self, tools: &[ToolInfo]) -> Result<ToolList, ListError> {
                <$dialect>::tools(self, tools)
            }
            fn read(&self, response: &Value, tools: Option<&ToolList>) -> Result<Reply, ReadError> {
                <$dialect>::read(self, response, tools)
            }
            fn stream<'l>(&self, tools: Option<&'l ToolList>) -> Box<dyn StreamReader + 'l> {
                Box::new(<$dialect>::stream(self, tools))
            }
            fn results(&self, reply: &Reply, entries: &[SessionEntry]) -> Vec<Value> {
                <$dialect>::results(self, reply, entries)
            }
        }

        impl StreamReader for $stream<'_> {
            fn push(&mut self, event: &Value) -> Result<(), ReadError> {
                $stream::push(self, event)
            }
            fn finish(self: Box<Self>) -> Reply {
                $stream::finish(*self)
            }
        }
    };
}

dialect!(Chat, ChatStream, crate::chat::API);
dialect!(Responses, ResponsesStream, crate::responses::API);
dialect!(Anthropic, AnthropicStream, crate::anthropic::API);
dialect!(Gemini, GeminiStream, crate::gemini::API);
