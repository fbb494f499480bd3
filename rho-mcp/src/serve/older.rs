//! A host's questions for a client before 2026-07-28, outside any call.
//!
//! On 2026-07-28 a server asks its client while it answers `prompts/get`
//! or `resources/read` by answering with the questions (an input-required
//! result); the client answers them and sends its request again, with
//! the answers and the server's state. A host's
//! [`McpFeatures`](super::McpFeatures) may answer so whatever its client
//! speaks, and a client before 2026-07-28 cannot read such an answer:
//! rho asks that client the questions the way its revision asks
//! (requests on its session: elicitation, sampling, roots, through
//! [`McpClient::ask`]) and asks the features again with its answers and
//! their state, as a later client would, for at most [`QUESTION_ROUNDS`] rounds.

use rmcp::model::{
    ErrorCode, GetPromptRequestParams, GetPromptResponse, InputRequiredResult, InputResponses,
    ReadResourceRequestParams, ReadResourceResponse,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use super::client::McpClient;

/// The most rounds of questions one request may ask before rho gives up
/// on it (a host that keeps asking would otherwise hold the client's
/// request, and its person, forever): here, and for a call of an imported
/// tool whose server keeps answering with questions.
pub(crate) const QUESTION_ROUNDS: usize = 8;

/// A request the features may answer with questions: how to tell the
/// questions from the answer, and how it goes again with the answers.
pub(crate) trait Retried: Clone + Send + 'static {
    /// The features' answer: a result, or questions.
    type Response: Send + 'static;
    /// The request's method, for error texts.
    const METHOD: &'static str;
    /// The questions, or the result when there are none.
    fn questions(response: Self::Response) -> Result<InputRequiredResult, Self::Response>;
    /// The same request with the client's answers and the features' state.
    fn retry(&mut self, answers: InputResponses, state: Option<String>);
}

impl Retried for GetPromptRequestParams {
    type Response = GetPromptResponse;
    const METHOD: &'static str = "prompts/get";
    fn questions(response: GetPromptResponse) -> Result<InputRequiredResult, GetPromptResponse> {
        match response {
            GetPromptResponse::InputRequired(asked) => Ok(asked),
            answer => Err(answer),
        }
    }
    fn retry(&mut self, answers: InputResponses, state: Option<String>) {
        self.input_responses = Some(answers);
        self.request_state = state;
    }
}

impl Retried for ReadResourceRequestParams {
    type Response = ReadResourceResponse;
    const METHOD: &'static str = "resources/read";
    fn questions(
        response: ReadResourceResponse,
    ) -> Result<InputRequiredResult, ReadResourceResponse> {
        match response {
            ReadResourceResponse::InputRequired(asked) => Ok(asked),
            answer => Err(answer),
        }
    }
    fn retry(&mut self, answers: InputResponses, state: Option<String>) {
        self.input_responses = Some(answers);
        self.request_state = state;
    }
}

/// Puts `asked`'s questions to the client of `context` (before
/// 2026-07-28) and gives `request` again with its answers and the
/// features' state; an error naming the request when the client did not
/// answer.
pub(crate) async fn ask_again<R: Retried>(
    request: &mut R,
    asked: InputRequiredResult,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let questions = asked.input_requests.unwrap_or_default().into();
    let answers = McpClient::of_request(context)
        .ask(questions)
        .await
        .map_err(|error| {
            ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "`{}`: the server asked the client a question that was not answered: {error}",
                    R::METHOD
                ),
                None,
            )
        })?;
    request.retry(answers.to_responses(), asked.request_state);
    Ok(())
}

/// The error for a request whose features asked [`QUESTION_ROUNDS`] rounds of
/// questions and still had no answer.
pub(crate) fn too_many_rounds<R: Retried>() -> ErrorData {
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        format!(
            "`{}`: the server asked {QUESTION_ROUNDS} rounds of questions without an answer; rho gave up \
             on it",
            R::METHOD
        ),
        None,
    )
}
