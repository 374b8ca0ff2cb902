//! Cumulative stream deltas made incremental: some local OpenAI-compatible servers
//! send the whole text so far in every `delta.content` (and `reasoning`) instead of
//! the new part. A provider's `stream_deltas` says which kind it sends; this keeps
//! the text so far per channel and hands the transformer only what is new.
//!
//! `auto` decides once per stream, at the second non-empty delta of a channel: a
//! delta that is longer than the text so far and starts with all of it means the
//! server is cumulative. A short first delta that the next one happens to extend
//! (`"I"` then `"It"`) would be misread, so a first delta of only whitespace never
//! decides; operators who know their server should say `incremental` or
//! `cumulative`. Tool-call arguments are always taken as incremental.

use crate::config::StreamDeltas;

/// Where a delta's text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Channel {
    /// `content` and `refusal`.
    Text,
    /// `reasoning_content` / `reasoning`.
    Reasoning,
}

/// The text so far of each channel, and what kind of deltas the stream sends.
#[derive(Debug, Default)]
pub(super) struct Deltas {
    mode: StreamDeltas,
    /// For `auto`: `Some(cumulative?)` once decided.
    decided: Option<bool>,
    so_far: [String; 2],
}

impl Deltas {
    pub(super) fn new(mode: StreamDeltas) -> Deltas {
        Deltas {
            mode,
            decided: None,
            so_far: Default::default(),
        }
    }

    /// Forgets every channel's text (a new attempt of the same step).
    pub(super) fn reset(&mut self) {
        *self = Deltas::new(self.mode);
    }

    /// The new text in `delta` (possibly empty).
    pub(super) fn fresh<'a>(&mut self, channel: Channel, delta: &'a str) -> &'a str {
        let cumulative = match (self.mode, self.decided) {
            (StreamDeltas::Incremental, _) => return delta,
            (StreamDeltas::Cumulative, _) | (StreamDeltas::Auto, Some(true)) => true,
            (StreamDeltas::Auto, Some(false)) => false,
            (StreamDeltas::Auto, None) => {
                let prev = &self.so_far[channel as usize];
                if prev.trim().is_empty() {
                    // Nothing to compare with yet: new text either way.
                    self.so_far[channel as usize] = delta.to_string();
                    return delta;
                }
                let is_cumulative = delta.len() > prev.len() && delta.starts_with(prev.as_str());
                self.decided = Some(is_cumulative);
                is_cumulative
            }
        };
        let prev = &mut self.so_far[channel as usize];
        if !cumulative {
            // Only `auto` gets here; its text so far is no longer needed.
            prev.clear();
            return delta;
        }
        // A server that rewrote earlier text cannot take back what was shown: send
        // what follows the part both share.
        let common = common_prefix(prev, delta);
        prev.clear();
        prev.push_str(delta);
        &delta[common..]
    }
}

/// Length in bytes of the longest common prefix of `a` and `b`, on a char boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(mode: StreamDeltas, deltas: &[(Channel, &str)]) -> Vec<String> {
        let mut d = Deltas::new(mode);
        deltas.iter().map(|(c, t)| d.fresh(*c, t).to_string()).collect()
    }

    #[test]
    fn cumulative_deltas_become_the_new_text() {
        use Channel::*;
        let out = feed(
            StreamDeltas::Cumulative,
            &[
                (Reasoning, "Hm"),
                (Reasoning, "Hmm."),
                (Text, "Héllo"),
                (Text, "Héllo"),
                (Text, "Héllo wörld"),
            ],
        );
        assert_eq!(out, ["Hm", "m.", "Héllo", "", " wörld"]);
        // A rewrite sends only what follows the shared part.
        assert_eq!(
            feed(StreamDeltas::Cumulative, &[(Text, "abc"), (Text, "abX d")]),
            ["abc", "X d"]
        );
        assert_eq!(common_prefix("aé", "aè"), 1);
    }

    #[test]
    fn auto_decides_at_the_second_delta() {
        use Channel::*;
        let cumulative = [(Text, "Hello"), (Text, "Hello there"), (Text, "Hello there!")];
        assert_eq!(feed(StreamDeltas::Auto, &cumulative), ["Hello", " there", "!"]);
        let incremental = [(Text, "Hello"), (Text, " there"), (Text, "Hello")];
        assert_eq!(
            feed(StreamDeltas::Auto, &incremental),
            ["Hello", " there", "Hello"]
        );
        // Whitespace decides nothing; incremental passes everything through.
        assert_eq!(
            feed(StreamDeltas::Auto, &[(Text, " "), (Text, " a"), (Text, " ab")]),
            [" ", " a", "b"]
        );
        assert_eq!(
            feed(StreamDeltas::Incremental, &cumulative),
            ["Hello", "Hello there", "Hello there!"]
        );
    }
}
