//! Questions to a client as input-required results (SEP-2322): how a
//! served call asks a client on MCP 2026-07-28 or later, which takes no
//! requests from its server.
//!
//! On older revisions a tool's question ([`McpClient`](super::McpClient))
//! is a request from server to client, answered while the call runs. From
//! 2026-07-28 the server answers the client's own request instead: "input
//! required", with the questions and a `requestState`; the client answers
//! them and sends its request again with `inputResponses` and that state.
//!
//! rho keeps the call itself waiting meanwhile, on this server: the tool
//! is stopped inside its question, its clock held, and the call is parked
//! under a `requestState` that is a fresh random token, good for one
//! retry. The retry finds the call by it, hands the answers to the tool
//! and follows the call on, through more rounds if the tool asks again.
//! A tool therefore runs once however many rounds its questions take (a
//! gate's approval is never asked twice, a side effect before a question
//! never happens twice), and a state that was changed, replayed, or that
//! belongs to a call that has ended finds nothing: the request is refused
//! with `-32602`. A call whose client never comes back is ended at the
//! server's input deadline.
//!
//! Answers that come with a request that starts a call (no
//! `requestState`) are at hand for its first questions, so a client can
//! answer ahead, as MCP lets it; an answer that is missing, or is not the
//! result its question calls for, is asked for again.

// rmcp marks sampling and roots deprecated by SEP-2577, the types of the
// input requests of 2026-07-28 among them; they are what a client is
// asked with until MCP has their successors.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, ListRootsResult,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::client::McpClientError;

/// Questions a tool puts to its client at once, each under a key the tool
/// chooses (unique among them), for [`McpClient::ask`](super::McpClient::ask).
///
/// On a client on 2026-07-28 or later they go out together, in one
/// input-required result; on an older client, one request after another.
#[derive(Debug, Clone, Default)]
pub struct Questions {
    asked: Vec<(String, InputRequest)>,
}

impl Questions {
    /// No questions yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the client's user (`elicitation/create`) under `key`.
    pub fn elicit(self, key: impl Into<String>, params: ElicitRequestParams) -> Self {
        self.with(key, InputRequest::Elicitation(ElicitRequest::new(params)))
    }

    /// Asks the client's model for a message (`sampling/createMessage`)
    /// under `key`.
    pub fn create_message(
        self,
        key: impl Into<String>,
        params: CreateMessageRequestParams,
    ) -> Self {
        self.with(
            key,
            InputRequest::CreateMessage(CreateMessageRequest::new(params)),
        )
    }

    /// Asks the client for its roots (`roots/list`) under `key`.
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.with(key, InputRequest::ListRoots(Default::default()))
    }

    /// A question under `key`; a second one under the same key replaces
    /// the first.
    pub(crate) fn with(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        let key = key.into();
        self.asked.retain(|(asked, _)| *asked != key);
        self.asked.push((key, request));
        self
    }

    /// Whether there is no question.
    pub fn is_empty(&self) -> bool {
        self.asked.is_empty()
    }

    /// How many questions there are.
    pub fn len(&self) -> usize {
        self.asked.len()
    }

    /// Each question by its key, as MCP carries it: what an imported
    /// server asked, for a host's [`Answerer`](crate::import::Answerer).
    pub fn requests(&self) -> impl Iterator<Item = (&str, &InputRequest)> {
        self.asked
            .iter()
            .map(|(key, request)| (key.as_str(), request))
    }
}

impl From<InputRequests> for Questions {
    /// The questions of an input-required result, by their keys.
    fn from(requests: InputRequests) -> Self {
        Self {
            asked: requests.into_iter().collect(),
        }
    }
}

/// The client's answer to one question.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Answer {
    /// The user's answer to an elicitation.
    Elicit(ElicitResult),
    /// The model's message.
    Message(CreateMessageResult),
    /// The client's roots.
    Roots(ListRootsResult),
}

impl Answer {
    /// The answer as JSON, as MCP carries it.
    fn to_value(&self) -> Option<Value> {
        match self {
            Self::Elicit(answer) => serde_json::to_value(answer).ok(),
            Self::Message(answer) => serde_json::to_value(answer).ok(),
            Self::Roots(answer) => serde_json::to_value(answer).ok(),
        }
    }

    /// Reads `value` as the answer `request` calls for; `None` when it is
    /// not one (a number where a result belongs, say).
    fn read(request: &InputRequest, value: Value) -> Option<Self> {
        match request {
            InputRequest::Elicitation(_) => serde_json::from_value(value).ok().map(Self::Elicit),
            InputRequest::CreateMessage(_) => serde_json::from_value(value).ok().map(Self::Message),
            InputRequest::ListRoots(_) => serde_json::from_value(value).ok().map(Self::Roots),
            // A kind of question rho does not ask.
            _ => None,
        }
    }
}

/// The client's answers to [`Questions`], by key.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    by_key: BTreeMap<String, Answer>,
}

impl Answers {
    /// The answer under `key`.
    pub fn get(&self, key: &str) -> Option<&Answer> {
        self.by_key.get(key)
    }

    /// The user's answer under `key`, if that was an elicitation.
    pub fn elicit(&self, key: &str) -> Option<&ElicitResult> {
        match self.get(key)? {
            Answer::Elicit(answer) => Some(answer),
            _ => None,
        }
    }

    /// The model's message under `key`, if that was sampling.
    pub fn message(&self, key: &str) -> Option<&CreateMessageResult> {
        match self.get(key)? {
            Answer::Message(answer) => Some(answer),
            _ => None,
        }
    }

    /// The roots under `key`, if those were asked for.
    pub fn roots(&self, key: &str) -> Option<&ListRootsResult> {
        match self.get(key)? {
            Answer::Roots(answer) => Some(answer),
            _ => None,
        }
    }

    /// Answers `key` with `answer` (a second answer replaces the first):
    /// how a host's [`Answerer`](crate::import::Answerer) builds its
    /// answers.
    pub fn insert(&mut self, key: impl Into<String>, answer: Answer) {
        self.by_key.insert(key.into(), answer);
    }

    /// The answers as a retry carries them (`inputResponses`, 2026-07-28).
    pub(crate) fn to_responses(&self) -> InputResponses {
        self.by_key
            .iter()
            .filter_map(|(key, answer)| Some((key.clone(), answer.to_value()?)))
            .collect()
    }

    /// The answer under `key`, taken out.
    pub(crate) fn take(&mut self, key: &str) -> Option<Answer> {
        self.by_key.remove(key)
    }
}

/// What a call's [`McpClient`](super::McpClient) sends whoever follows the
/// call on a 2026 client: its questions, and where the answers go.
pub(crate) struct Question {
    pub(crate) questions: Questions,
    /// What the client must have declared besides what the questions call
    /// for ([`McpClient::require`](super::McpClient::require)); boxed, as
    /// it is seldom there.
    pub(crate) required: Option<Box<ClientCapabilities>>,
    pub(crate) reply: oneshot::Sender<Result<Answers, McpClientError>>,
}

/// The sending side, in the call's `McpClient`.
pub(crate) type Asker = mpsc::UnboundedSender<Question>;
/// The receiving side, with whoever follows the call.
pub(crate) type AskedQuestions = mpsc::UnboundedReceiver<Question>;

/// A question being answered, possibly over several rounds.
pub(crate) struct Pending {
    question: Question,
    answers: Answers,
}

impl Pending {
    pub(crate) fn new(question: Question) -> Self {
        Self {
            question,
            answers: Answers::default(),
        }
    }

    /// Takes from `responses` the answers this question lacks (those
    /// that read as what their question calls for; others stay asked).
    /// Keys nobody asked are left where they are.
    pub(crate) fn take_answers(&mut self, responses: &mut InputResponses) {
        for (key, request) in self.question.questions.requests() {
            if self.answers.get(key).is_some() {
                continue;
            }
            if let Some(answer) = responses
                .remove(key)
                .and_then(|value| Answer::read(request, value))
            {
                self.answers.insert(key.to_owned(), answer);
            }
        }
    }

    /// The questions still without an answer.
    pub(crate) fn unanswered(&self) -> InputRequests {
        self.question
            .questions
            .requests()
            .filter(|(key, _)| self.answers.get(key).is_none())
            .map(|(key, request)| (key.to_owned(), request.clone()))
            .collect()
    }

    /// What the client would have to have declared to answer all of it,
    /// when it did not (`None`: it can answer).
    pub(crate) fn missing_capabilities(
        &self,
        declared: Option<&ClientCapabilities>,
    ) -> Option<ClientCapabilities> {
        let mut needed = self
            .question
            .required
            .as_deref()
            .cloned()
            .unwrap_or_default();
        for (_, request) in self.question.questions.requests() {
            match request {
                InputRequest::Elicitation(_) => {
                    needed.elicitation.get_or_insert_with(Default::default);
                }
                InputRequest::CreateMessage(_) => {
                    needed.sampling.get_or_insert_with(Default::default);
                }
                InputRequest::ListRoots(_) => {
                    needed.roots.get_or_insert_with(Default::default);
                }
                _ => {}
            }
        }
        lacking(&needed, &declared.cloned().unwrap_or_default())
    }

    /// Every question answered: the answers go to the tool (`Ok`), or,
    /// when some are missing, the pending question comes back (`Err`).
    pub(crate) fn finish(self) -> Result<(), Self> {
        if self
            .question
            .questions
            .requests()
            .any(|(key, _)| self.answers.get(key).is_none())
        {
            return Err(self);
        }
        // The tool may have stopped waiting (its call ended): nothing to do.
        let _ = self.question.reply.send(Ok(self.answers));
        Ok(())
    }

    /// Ends the question with `error` (the tool's ask returns it).
    pub(crate) fn fail(self, error: McpClientError) {
        let _ = self.question.reply.send(Err(error));
    }
}

/// What of `needed` the client did not declare (`None`: nothing), judged
/// by capability (`elicitation`, `sampling`, `roots`, `tasks`) and, among
/// extensions and experimental ones, by name: one declared in any form
/// counts as declared, as MCP's missing-capability error names whole
/// capabilities.
pub(crate) fn lacking(
    needed: &ClientCapabilities,
    declared: &ClientCapabilities,
) -> Option<ClientCapabilities> {
    /// Capabilities that are sets of capabilities by name.
    const BY_NAME: [&str; 2] = ["extensions", "experimental"];
    let as_map = |capabilities: &ClientCapabilities| match serde_json::to_value(capabilities) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let declared = as_map(declared);
    let mut missing = serde_json::Map::new();
    for (name, value) in as_map(needed) {
        match (declared.get(&name), value) {
            (None, value) => {
                missing.insert(name, value);
            }
            (Some(Value::Object(theirs)), Value::Object(named))
                if BY_NAME.contains(&name.as_str()) =>
            {
                let named: serde_json::Map<String, Value> = named
                    .into_iter()
                    .filter(|(inner, _)| !theirs.contains_key(inner))
                    .collect();
                if !named.is_empty() {
                    missing.insert(name, Value::Object(named));
                }
            }
            _ => {}
        }
    }
    if missing.is_empty() {
        return None;
    }
    // Made of a `ClientCapabilities`' own fields, so it reads back as one.
    Some(serde_json::from_value(Value::Object(missing)).unwrap_or_default())
}

/// The calls parked on this server waiting for their client's answers, by
/// the `requestState` token their client holds. Shared by the server's
/// sessions: on stateless HTTP each request is a session of its own.
pub(crate) struct Waiting<T> {
    calls: Arc<Mutex<HashMap<String, T>>>,
}

impl<T> Clone for Waiting<T> {
    fn clone(&self) -> Self {
        Self {
            calls: self.calls.clone(),
        }
    }
}

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Self {
            calls: Arc::default(),
        }
    }
}

impl<T> Waiting<T> {
    /// The most calls that may wait at once; a question beyond them is
    /// refused, so a client cannot fill the server's memory with calls it
    /// never answers.
    pub(crate) const MOST: usize = 4096;

    fn lock(&self) -> MutexGuard<'_, HashMap<String, T>> {
        // Only map operations run under the lock.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Parks `call` under a fresh token, which is returned; `Err(call)`
    /// when as many calls wait as may.
    pub(crate) fn park(&self, call: T) -> Result<String, T> {
        let mut calls = self.lock();
        if calls.len() >= Self::MOST {
            return Err(call);
        }
        let token = fresh_token();
        calls.insert(token.clone(), call);
        Ok(token)
    }

    /// The call parked under `token`, taken out if `fits` says the
    /// request resuming it is its own (it stays parked otherwise).
    pub(crate) fn take(&self, token: &str, fits: impl FnOnce(&T) -> bool) -> Taken<T> {
        let mut calls = self.lock();
        match calls.get(token) {
            None => Taken::Nothing,
            Some(call) if !fits(call) => Taken::NotItsOwn,
            Some(_) => calls.remove(token).map_or(Taken::Nothing, Taken::Call),
        }
    }

    /// Takes out the call under `token`, whoever asks (its deadline).
    pub(crate) fn remove(&self, token: &str) -> Option<T> {
        self.lock().remove(token)
    }
}

/// What [`Waiting::take`] found.
pub(crate) enum Taken<T> {
    /// The call, now the caller's to follow.
    Call(T),
    /// No call waits under that token.
    Nothing,
    /// A call waits, for another tool or other arguments.
    NotItsOwn,
}

/// 256 random bits from the system's source, as hex: a state nobody can
/// guess, so a client can only resume the call it was given.
pub(crate) fn fresh_token() -> String {
    let mut bytes = [0u8; 32];
    // The system's random source failing is not a state a server can
    // serve on: without it any token could be guessed.
    getrandom::fill(&mut bytes).expect("the system's random source failed");
    let mut token = String::with_capacity(2 + bytes.len() * 2);
    token.push_str("r1");
    for byte in bytes {
        let _ = write!(token, "{byte:02x}");
    }
    token
}

/// The input-required result asking `unanswered`, resumable with `token`.
pub(crate) fn input_required(unanswered: InputRequests, token: String) -> InputRequiredResult {
    InputRequiredResult::new(Some(unanswered), Some(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn elicitation() -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": "name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        }))
        .expect("a form elicitation")
    }

    /// An answer that is not the result its question calls for is not
    /// taken: the question stays asked, and keys nobody asked stay put.
    #[test]
    fn only_answers_of_the_right_shape_answer_a_question() {
        let (reply, _answers) = oneshot::channel();
        let questions = Questions::new()
            .elicit("user", elicitation())
            .list_roots("roots");
        let mut pending = Pending::new(Question {
            questions,
            required: None,
            reply,
        });
        let mut responses: InputResponses = [
            ("user".to_owned(), json!(12345)),
            ("roots".to_owned(), json!({"roots": []})),
            ("other".to_owned(), json!({"action": "accept"})),
        ]
        .into_iter()
        .collect();
        pending.take_answers(&mut responses);
        assert_eq!(
            pending.unanswered().keys().collect::<Vec<_>>(),
            vec!["user"]
        );
        assert!(responses.contains_key("other"));
        let Err(mut pending) = pending.finish() else {
            panic!("finished with an answer missing");
        };
        let mut more: InputResponses = [(
            "user".to_owned(),
            json!({"action": "accept", "content": {"name": "Ada"}}),
        )]
        .into_iter()
        .collect();
        pending.take_answers(&mut more);
        assert!(pending.unanswered().is_empty());
        assert!(pending.finish().is_ok());
    }

    /// No more than `MOST` calls wait at once: the next is given back,
    /// and one taken makes room again.
    #[test]
    fn at_most_so_many_calls_wait() {
        let waiting = Waiting::default();
        let tokens: Vec<String> = (0..Waiting::<usize>::MOST)
            .map(|call| waiting.park(call).expect("room to wait"))
            .collect();
        assert!(matches!(waiting.park(usize::MAX), Err(usize::MAX)));
        assert!(matches!(waiting.take(&tokens[7], |_| true), Taken::Call(7)));
        assert!(waiting.park(usize::MAX).is_ok());
    }

    /// Tokens are fresh each time, and a token is good once.
    #[test]
    fn a_parked_call_is_taken_once_by_its_token() {
        let waiting = Waiting::default();
        let first = waiting.park("call").expect("room to wait");
        let second = waiting.park("other").expect("room to wait");
        assert_ne!(first, second);
        assert!(matches!(waiting.take(&first, |_| false), Taken::NotItsOwn));
        assert!(matches!(
            waiting.take(&first, |_| true),
            Taken::Call("call")
        ));
        assert!(matches!(waiting.take(&first, |_| true), Taken::Nothing));
        assert!(matches!(
            waiting.take(&format!("{second}0"), |_| true),
            Taken::Nothing
        ));
    }

    /// What is missing is judged by whole capability: one declared in any
    /// form counts, an extension is a capability like the others.
    #[test]
    fn lacking_names_each_undeclared_capability_once() {
        let read = |value: Value| -> ClientCapabilities {
            serde_json::from_value(value).expect("capabilities")
        };
        let needed = read(json!({
            "elicitation": { "url": {} },
            "roots": {},
            "extensions": { "io.modelcontextprotocol/tasks": {} },
        }));
        let declared = read(json!({
            "elicitation": { "form": {} },
            "extensions": { "example.com/other": {} },
        }));
        let missing = lacking(&needed, &declared).expect("some are missing");
        assert_eq!(
            serde_json::to_value(&missing).expect("json"),
            json!({ "roots": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } })
        );
        assert_eq!(
            serde_json::to_value(lacking(&declared, &needed).expect("one")).expect("json"),
            json!({ "extensions": { "example.com/other": {} } })
        );
        assert!(lacking(&ClientCapabilities::default(), &declared).is_none());
    }
}
