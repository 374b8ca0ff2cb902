//! What a turn's UI chunks amount to for an API that answers once: the text (the
//! texts of successive steps joined by a blank line), how the turn ended, its
//! usage, or why it failed. The stateless surfaces fold their answers with it, and
//! so does a task run to its end (`agent::task`).

/// What an answer's UI chunks amount to: the text (the texts of successive steps
/// joined by a blank line), how the turn ended and its usage, or why it failed.
#[derive(Debug, Default)]
pub struct Collected {
    /// The answer's text so far.
    pub text: String,
    texts: u32,
    /// The turn's own end (`messageMetadata.finishReason`: `stop`, `max-steps`).
    pub outcome: Option<String>,
    /// The usage summed over the steps.
    pub usage: Option<crate::llm::Usage>,
    /// Why the turn failed or was stopped.
    pub error: Option<String>,
    /// The provider that answered the turn's last step (`messageMetadata.provider`).
    pub provider: Option<String>,
}

/// What one chunk added to a [`Collected`] answer.
pub enum Added {
    /// Text appended.
    Text(String),
    /// The turn finished.
    Finished,
    /// The turn failed (`error` holds why).
    Failed,
}

impl Collected {
    /// Takes `c` in.
    pub fn apply(&mut self, c: &crate::llm::UiChunk) -> Option<Added> {
        use crate::llm::UiChunk;
        match c {
            UiChunk::TextStart { .. } => {
                self.texts += 1;
                (self.texts > 1).then(|| self.push("\n\n"))
            }
            UiChunk::TextDelta { delta, .. } => Some(self.push(delta)),
            UiChunk::Error { error_text } => {
                self.error = Some(error_text.clone());
                Some(Added::Failed)
            }
            UiChunk::Abort { reason } => {
                let why = reason.as_deref().unwrap_or("the turn was stopped");
                self.error = Some(format!("the agent's turn was stopped: {why}"));
                Some(Added::Failed)
            }
            UiChunk::Finish { message_metadata, .. } => {
                let meta = message_metadata.as_ref();
                self.usage = meta
                    .and_then(|m| m.get("usage"))
                    .and_then(|u| serde_json::from_value(u.clone()).ok());
                self.outcome = meta.and_then(|m| m["finishReason"].as_str()).map(str::to_string);
                self.provider = meta.and_then(|m| m["provider"].as_str()).map(str::to_string);
                Some(Added::Finished)
            }
            _ => None,
        }
    }

    fn push(&mut self, text: &str) -> Added {
        self.text.push_str(text);
        Added::Text(text.to_string())
    }
}
