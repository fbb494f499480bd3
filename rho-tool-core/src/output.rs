//! What a tool answers, before rho normalises it.

use rho_untrusted::plain::Foreign;
use rho_untrusted::{Limits, Plain, PlainError};
use serde::Serialize;

use crate::content::{Content, Image};
use crate::result::ToolResult;

/// What a tool's `run` returns.
///
/// The forms: ok text ([`text`](ToolOutput::text)); ok with one image and
/// text ([`image`](ToolOutput::image)); ok with several images and text
/// ([`images`](ToolOutput::images)); error text
/// ([`error`](ToolOutput::error)); a crash the tool observed
/// ([`crashed`](ToolOutput::crashed)); and any answer MCP can hold, made
/// as a [`ToolResult`] ([`from_result`](ToolOutput::from_result)): parts
/// of every kind (text, images, sounds, resource links, embedded
/// resources) in any order, ok or failed. Any of them can carry details
/// for host screens ([`with_details`](ToolOutput::with_details)). rho
/// turns it into a [`ToolResult`] inside the call's task
/// ([`to_result`](ToolOutput::to_result)).
///
/// ```
/// use rho::{Image, ToolOutput};
///
/// let shot = ToolOutput::image(Image::new("image/png", vec![0x89, b'P', b'N', b'G']), "the login page")
///     .with_details(serde_json::json!({ "width": 1280, "height": 800 }));
/// let result = shot.to_result(&Default::default()).unwrap();
/// assert!(!result.is_error);
/// assert_eq!(result.text(), "the login page");
/// ```
#[derive(Debug)]
pub struct ToolOutput {
    answer: Answer,
    details: Option<Details>,
}

#[derive(Debug)]
enum Answer {
    Text(String),
    Images { images: Vec<Image>, text: String },
    Error(String),
    Crashed(String),
    Result(ToolResult),
}

#[derive(Debug)]
enum Details {
    Plain(Plain),
    Foreign(Foreign),
}

impl ToolOutput {
    /// A successful answer of `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::from_answer(Answer::Text(text.into()))
    }

    /// A successful answer of one image and `text` about it.
    pub fn image(image: Image, text: impl Into<String>) -> Self {
        Self::images(vec![image], text)
    }

    /// A successful answer of several images and `text` about them.
    pub fn images(images: Vec<Image>, text: impl Into<String>) -> Self {
        Self::from_answer(Answer::Images {
            images,
            text: text.into(),
        })
    }

    /// A failed call: the model reads `text` as the error.
    pub fn error(text: impl Into<String>) -> Self {
        Self::from_answer(Answer::Error(text.into()))
    }

    /// An answer already made as a [`ToolResult`]: its parts of any kind,
    /// in order, each with its [`extras`](ToolResult::extras), its error
    /// flag and its details are taken as they are (details added with
    /// [`with_details`](ToolOutput::with_details) replace its own).
    /// [`to_result`](ToolOutput::to_result) still checks its images, as
    /// for [`images`](ToolOutput::images).
    ///
    /// ```
    /// use rho::tool::{Audio, Content, Image, ToolOutput, ToolResult};
    ///
    /// let parts = [
    ///     Content::text("the chart"),
    ///     Content::image(Image::new("image/png", [0x89, b'P', b'N', b'G'])),
    ///     Content::audio(Audio::new("audio/wav", [1, 2])),
    ///     Content::text("and what it says"),
    /// ];
    /// let output = ToolOutput::from_result(ToolResult::from_content(parts.clone(), true));
    /// let result = output.to_result(&Default::default()).unwrap();
    /// assert!(result.is_error);
    /// assert_eq!(result.content(), parts);
    /// ```
    pub fn from_result(result: ToolResult) -> Self {
        Self::from_answer(Answer::Result(result))
    }

    fn from_answer(answer: Answer) -> Self {
        Self {
            answer,
            details: None,
        }
    }

    /// Adds details: data for host screens, beside what the model reads.
    ///
    /// The value is kept as it is and made plain data later, inside the
    /// call's task, under the runner's [`Limits`]: its `Serialize` and `Drop`
    /// never run in the loop. Details that are a `serde_json::Value` or
    /// [`Plain`] are then taken apart without recursion, so even one nested
    /// a million levels deep (refused under the depth limit) cannot
    /// overflow the task's stack; a value of another type is dropped by its
    /// own `Drop`.
    pub fn with_details<T: Serialize + Send + 'static>(mut self, details: T) -> Self {
        self.details = Some(Details::Foreign(Foreign::new(details)));
        self
    }

    /// Adds details that are already plain data.
    pub fn with_plain_details(mut self, details: Plain) -> Self {
        self.details = Some(Details::Plain(details));
        self
    }

    /// A call whose tool crashed in a way it could observe but not contain
    /// (a child process killed by a signal, an interpreter that died): the
    /// model reads `text` as the error, and the call ends as
    /// [`Outcome::Crashed`](crate::Outcome::Crashed), so a source's
    /// accounting counts it against the tool like a panic.
    pub fn crashed(text: impl Into<String>) -> Self {
        Self::from_answer(Answer::Crashed(text.into()))
    }

    /// Appends a paragraph to what the model reads, keeping the kind of
    /// answer (success, error or crash) and its details: a remark of the
    /// code that ran the tool (say, what its confinement did not enforce).
    #[must_use]
    pub fn with_note(mut self, note: impl AsRef<str>) -> Self {
        let note = note.as_ref();
        let append = |text: &mut String| {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(note);
        };
        match &mut self.answer {
            Answer::Text(text)
            | Answer::Images { text, .. }
            | Answer::Error(text)
            | Answer::Crashed(text) => append(text),
            Answer::Result(result) => result.push(Content::text(note)),
        }
        self
    }

    /// Whether this is an error answer (including a crash).
    pub fn is_error(&self) -> bool {
        match &self.answer {
            Answer::Error(_) | Answer::Crashed(_) => true,
            Answer::Result(result) => result.is_error,
            Answer::Text(_) | Answer::Images { .. } => false,
        }
    }

    /// Whether this answer reports a crash ([`ToolOutput::crashed`]).
    pub fn is_crash(&self) -> bool {
        matches!(self.answer, Answer::Crashed(_))
    }

    /// Normalises the answer into a [`ToolResult`], making its details plain
    /// data under `limits`.
    ///
    /// # Errors
    ///
    /// [`AnswerError::InvalidImage`] when an image has no bytes or a mime type
    /// that is not `image/*` (in any form of answer); [`AnswerError::Details`] when the details could
    /// not be made plain data (a limit, an error or a panic of their
    /// `Serialize`, a panic of their `Drop`). The details are dropped either
    /// way, with their panics contained.
    pub fn to_result(self, limits: &Limits) -> Result<ToolResult, AnswerError> {
        let details = match self.details {
            None => None,
            Some(Details::Plain(plain)) => Some(plain),
            Some(Details::Foreign(foreign)) => {
                Some(foreign.into_plain(limits).map_err(AnswerError::Details)?)
            }
        };
        if let Answer::Result(mut result) = self.answer {
            for (index, part) in result.content().iter().enumerate() {
                if let Some(image) = part.as_image() {
                    check_image(image)
                        .map_err(|reason| AnswerError::InvalidImage { index, reason })?;
                }
            }
            if details.is_some() {
                result.details = details;
            }
            return Ok(result);
        }
        let mut result = match self.answer {
            Answer::Text(text) => ToolResult::success(text),
            Answer::Error(text) | Answer::Crashed(text) => ToolResult::error(text),
            Answer::Images { images, text } => {
                let mut content = Vec::with_capacity(images.len() + 1);
                for (index, image) in images.into_iter().enumerate() {
                    check_image(&image)
                        .map_err(|reason| AnswerError::InvalidImage { index, reason })?;
                    content.push(Content::image(image));
                }
                content.push(Content::text(text));
                ToolResult::from_content(content, false)
            }
            // Returned above.
            Answer::Result(result) => result,
        };
        result.details = details;
        Ok(result)
    }
}

fn check_image(image: &Image) -> Result<(), String> {
    if image.data.is_empty() {
        return Err("it has no bytes".to_owned());
    }
    let mime = image.mime_type.as_str();
    match mime.split_once('/') {
        Some(("image", subtype)) if !subtype.is_empty() => Ok(()),
        _ => Err(format!("its mime type `{mime}` is not an image type")),
    }
}

/// Why an answer could not be normalised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// An image that is not one.
    #[error("image {index} of the answer is invalid: {reason}")]
    InvalidImage {
        /// The image's position among the answer's parts, from 0.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Details that could not be made plain data.
    #[error("the answer's details could not be made plain data: {0}")]
    Details(PlainError),
}

impl AnswerError {
    /// The panic's message, when the details' own code panicked (their
    /// `Serialize` or their `Drop`): the call then counts as crashed, not as
    /// a tool error. `Some(None)` is a panic whose payload was not text.
    pub fn panic_message(&self) -> Option<Option<&str>> {
        match self {
            AnswerError::Details(
                PlainError::Panicked { message } | PlainError::DropPanicked { message },
            ) => Some(message.as_deref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Audio;

    #[test]
    fn a_result_answer_keeps_its_parts_and_its_images_are_checked() {
        let parts = vec![
            Content::text("a"),
            Content::audio(Audio::new("audio/wav", [1])),
            Content::image(Image::new("image/png", [2])),
        ];
        let output = ToolOutput::from_result(ToolResult::from_content(parts.clone(), true));
        assert!(output.is_error());
        let result = output
            .with_details(serde_json::json!({ "n": 1 }))
            .to_result(&Limits::default())
            .expect("an answer rho can hold");
        assert!(result.is_error);
        assert_eq!(result.content(), parts);
        assert_eq!(
            result.details.map(|details| details.to_json()),
            Some(serde_json::json!({ "n": 1 }))
        );

        let bad = ToolOutput::from_result(ToolResult::from_content(
            [
                Content::text("a"),
                Content::image(Image::new("text/plain", [1])),
            ],
            false,
        ));
        assert!(matches!(
            bad.to_result(&Limits::default()),
            Err(AnswerError::InvalidImage { index: 1, .. })
        ));
    }

    /// A note joins what the model reads as a paragraph of its own, and
    /// changes nothing else: a success stays a success with its details,
    /// an error an error, a crash a crash, images stay, and a result
    /// answer gains a text part after its own.
    #[test]
    fn a_note_keeps_the_kind_of_answer_and_its_details() {
        let limits = Limits::default();
        let note = "not enforced: seccomp";
        let read = |output: ToolOutput| output.to_result(&limits).expect("an answer rho can hold");

        let success = ToolOutput::text("done")
            .with_details(serde_json::json!({ "n": 1 }))
            .with_note(note);
        assert!(!success.is_error());
        let success = read(success);
        assert_eq!(success.text(), format!("done\n\n{note}"));
        assert_eq!(
            success.details.map(|details| details.to_json()),
            Some(serde_json::json!({ "n": 1 }))
        );

        // An empty answer is the note alone, without a leading blank line.
        assert_eq!(read(ToolOutput::text("").with_note(note)).text(), note);

        let error = ToolOutput::error("denied").with_note(note);
        assert!(error.is_error() && !error.is_crash());
        assert_eq!(read(error).text(), format!("denied\n\n{note}"));

        let crash = ToolOutput::crashed("killed by SIGSEGV").with_note(note);
        assert!(crash.is_crash());
        let crash = read(crash);
        assert!(crash.is_error);
        assert_eq!(crash.text(), format!("killed by SIGSEGV\n\n{note}"));

        let image = Image::new("image/png", [1]);
        let images = read(ToolOutput::image(image.clone(), "a chart").with_note(note));
        assert!(!images.is_error);
        assert_eq!(images.content()[0], Content::image(image));
        assert!(images.text().ends_with(&format!("a chart\n\n{note}")));

        let parts = vec![Content::text("a"), Content::text("b")];
        let result = read(
            ToolOutput::from_result(ToolResult::from_content(parts.clone(), true)).with_note(note),
        );
        assert!(result.is_error);
        let mut expected = parts;
        expected.push(Content::text(note));
        assert_eq!(result.content(), expected);
    }
}
