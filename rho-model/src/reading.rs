//! The model's calls, read: arguments parsed, ids checked, nothing dropped.
//!
//! What the model sends wrong becomes a call the turn answers with an error
//! the model reads ([`ToolCall::malformed`]), never a panic or a call
//! left out: arguments that are not JSON, a stream cut inside them, a call
//! without an id, an id used twice. A call without an id, or whose id an
//! earlier call of the message took, gets a fresh id of rho's, written into
//! the message the host sends back too, so that the API sees every call
//! once and answered once.

use std::collections::HashSet;

use rho_tool_core::ToolCall;
use serde_json::Value;

use crate::listing::ToolList;

/// How many bytes one call's arguments may take (what a reader holds of
/// a call whose arguments go on past it is refused, not kept).
pub const MAX_ARGUMENTS_BYTES: usize = 64 << 20;

/// What the model answered: the message to send back, its text, its calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// What to append to the conversation before the results, as the API
    /// wants it in the next request: the model's message (Chat
    /// Completions, Anthropic, Gemini) or its output items (Responses),
    /// with the ids rho gave calls that lacked one (or reused one).
    pub history: Vec<Value>,
    /// The model's text beside the calls, if any.
    pub text: Option<String>,
    /// The calls, in the model's order: give them to a turn.
    pub calls: Vec<ToolCall>,
    /// Why the model stopped, as the API says it (`tool_calls`,
    /// `end_turn`, `length`, ...), when it says.
    pub stop: Option<String>,
}

/// Why an API's response could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The response lacks what every response of the API has.
    #[error("not a {api} response: {reason}")]
    Shape {
        /// The API.
        api: &'static str,
        /// What is missing or wrong.
        reason: String,
    },
}

/// Takes the calls of one message, in order.
pub(crate) struct Intake<'l> {
    list: Option<&'l ToolList>,
    seen: HashSet<String>,
    fresh: usize,
    /// The API's calls need no id (Gemini): one missing is no fault.
    ids_optional: bool,
}

impl<'l> Intake<'l> {
    pub(crate) fn new(list: Option<&'l ToolList>) -> Self {
        Self {
            list,
            seen: HashSet::new(),
            fresh: 0,
            ids_optional: false,
        }
    }

    /// An intake for an API whose calls need no id: a call without one
    /// gets one of rho's, and is no fault.
    pub(crate) fn ids_optional(mut self) -> Self {
        self.ids_optional = true;
        self
    }

    /// The call of `name` with `id` (if the model gave one) and argument
    /// text `arguments`; the id to write back, which is `id` unless rho
    /// had to give one.
    pub(crate) fn take(
        &mut self,
        id: Option<&str>,
        name: &str,
        arguments: Arguments<'_>,
    ) -> ToolCall {
        let (id, fault) = match id {
            Some(id) if !id.is_empty() && !self.seen.contains(id) => (id.to_owned(), None),
            Some(id) if !id.is_empty() => (
                self.fresh_id(),
                Some(format!(
                    "its id `{id}` is the id of an earlier call of the same message; each call needs an id of its own"
                )),
            ),
            _ if self.ids_optional => (self.fresh_id(), None),
            _ => (
                self.fresh_id(),
                Some("it came without an id, which every call needs".to_owned()),
            ),
        };
        self.seen.insert(id.clone());
        let parsed = match arguments {
            Arguments::Text(text) => parse(text),
            Arguments::TooLong(bytes) => Err(format!(
                "its arguments are longer than {MAX_ARGUMENTS_BYTES} bytes ({bytes} or more); send less at once"
            )),
            Arguments::Cut => Err("the response ended inside its arguments".to_owned()),
            Arguments::Value(value) => Ok(value),
        };
        let parsed = parsed.and_then(|value| match fault {
            Some(fault) => Err(fault),
            None => Ok(value),
        });
        match parsed {
            Ok(mut value) => {
                if let Some(nulls) = self.list.and_then(|list| list.nulls(name)) {
                    nulls.restore(&mut value);
                }
                ToolCall::new(id, name, value)
            }
            Err(reason) => ToolCall::malformed(id, name, reason),
        }
    }

    /// An id no call of the message has.
    fn fresh_id(&mut self) -> String {
        loop {
            self.fresh += 1;
            let id = format!("rho_call_{}", self.fresh);
            if !self.seen.contains(&id) {
                return id;
            }
        }
    }
}

/// A call's arguments as a response carries them.
pub(crate) enum Arguments<'a> {
    /// JSON text, to be parsed.
    Text(&'a str),
    /// Already parsed (APIs that send an object).
    Value(Value),
    /// Text that went on past [`MAX_ARGUMENTS_BYTES`].
    TooLong(usize),
    /// A stream that ended inside them.
    Cut,
}

/// Argument text parsed; empty text is no arguments (`{}`), as some
/// servers send for a tool without parameters.
fn parse(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text).map_err(|error| format!("its arguments are not JSON ({error})"))
}

/// A call's argument text as a stream grows it, up to
/// [`MAX_ARGUMENTS_BYTES`]: past the bound it keeps only how long it got.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArgumentText {
    text: String,
    /// The bytes seen, once past the bound.
    too_long: Option<usize>,
}

impl ArgumentText {
    /// Appends a delta.
    pub(crate) fn push(&mut self, piece: &str) {
        if let Some(bytes) = &mut self.too_long {
            *bytes += piece.len();
            return;
        }
        if self.text.len() + piece.len() > MAX_ARGUMENTS_BYTES {
            self.too_long = Some(self.text.len() + piece.len());
            self.text = String::new();
            return;
        }
        self.text.push_str(piece);
    }

    /// Replaces the text by the whole of it, as a `done` event gives it.
    pub(crate) fn set(&mut self, whole: &str) {
        *self = Self::default();
        self.push(whole);
    }

    /// The text so far (empty once past the bound).
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the text went past the bound.
    pub(crate) fn is_too_long(&self) -> bool {
        self.too_long.is_some()
    }

    /// The text to send back in the model's message: what it sent, or,
    /// past the bound, `{}` (the API would take the model's megabytes
    /// again for nothing).
    pub(crate) fn sent(&self) -> &str {
        if self.too_long.is_some() {
            "{}"
        } else {
            &self.text
        }
    }

    /// The arguments to read: past the bound, too long; in a stream that
    /// was `cut` (the call never finished), cut unless the text is whole
    /// JSON already; else the text.
    pub(crate) fn arguments(&self, cut: bool) -> Arguments<'_> {
        match self.too_long {
            Some(bytes) => Arguments::TooLong(bytes),
            None if cut && serde_json::from_str::<serde::de::IgnoredAny>(&self.text).is_err() => {
                Arguments::Cut
            }
            None => Arguments::Text(&self.text),
        }
    }
}

/// An item's fields but those that are `null` (a response's way of saying
/// "none", which a request must leave out).
pub(crate) fn without_nulls(item: &Value) -> serde_json::Map<String, Value> {
    match item {
        Value::Object(map) => map
            .iter()
            .filter(|(_, value)| !value.is_null())
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        _ => serde_json::Map::new(),
    }
}
