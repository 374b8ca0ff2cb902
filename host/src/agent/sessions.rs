//! Stored conversations: one session record and its UIMessages in one sled table.
//!
//! Keys: `s/<session id>` holds the [`SessionInfo`]; `m/<session id>/<index:06>`
//! holds message number `index`; `a/<session id>/<approval id>` holds an
//! [`IssuedApproval`], the hub's record of an approval it asked the user for. Session ids are client ids (`[A-Za-z0-9_-]`), so
//! they never contain `/` and one session's prefix never matches another's.
//!
//! Crash safety: the session record and the messages written with it go in one
//! atomic batch, and the record's `message_count` says how many messages belong to
//! the session. A truncation (an edit, a regenerate) writes the new record first and
//! removes the surplus messages after, so a crash in between leaves unreachable
//! messages that the next save overwrites, never a history with a hole. The loop
//! saves at every `finish-step` with `durable = true` (flushed before the next
//! step starts), so a `kill -9` loses at most the step in progress.

use super::message::{Role, UiMessage};
use crate::storage::{Storage, StorageError, Table};
use serde::{Deserialize, Serialize};
use serde_json::Value;

const TABLE: &str = "chat_sessions";
/// Longest title derived from the first user message, in characters.
const TITLE_CHARS: usize = 80;

/// A session's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session id the client chose (`[A-Za-z0-9_-]`).
    pub id: String,
    /// The first user message's text, cut short; empty until there is one.
    pub title: String,
    /// Unix milliseconds.
    pub created_at: u64,
    /// Unix milliseconds of the last save.
    pub updated_at: u64,
    /// How many stored messages belong to the session.
    pub message_count: usize,
    /// The model of the latest turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// An approval the hub asked the session's user for: the id is only good for that
/// tool call of that assistant message, with exactly that input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuedApproval {
    /// The approval id (`apr_...`).
    pub id: String,
    /// The assistant message holding the call.
    pub message_id: String,
    /// The tool call it is for.
    pub tool_call_id: String,
    /// SHA-256 (hex) of the call's input as stored.
    pub input_sha256: String,
    /// The operations that asked for it.
    pub tools: Vec<String>,
    /// Unix milliseconds.
    pub issued_ms: u64,
}

/// A session with its messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The session's record (flattened into the JSON).
    #[serde(flatten)]
    pub info: SessionInfo,
    /// The conversation, oldest first.
    pub messages: Vec<UiMessage>,
}

/// The session store. Cheap to clone.
#[derive(Clone)]
pub struct Sessions {
    table: Table,
}

fn info_key(id: &str) -> Vec<u8> {
    format!("s/{id}").into_bytes()
}

fn approval_key(id: &str, approval: &str) -> Vec<u8> {
    format!("a/{id}/{approval}").into_bytes()
}

fn message_key(id: &str, index: usize) -> Vec<u8> {
    format!("m/{id}/{index:06}").into_bytes()
}

impl Sessions {
    /// The session store in `storage`'s `chat_sessions` table.
    pub fn open(storage: &Storage) -> Result<Sessions, StorageError> {
        Ok(Sessions {
            table: storage.table(TABLE)?,
        })
    }

    /// The session's record without its messages.
    pub fn info(&self, id: &str) -> Result<Option<SessionInfo>, StorageError> {
        self.table.get(&info_key(id))
    }

    /// The session and its messages (exactly `message_count` of them).
    pub fn load(&self, id: &str) -> Result<Option<Session>, StorageError> {
        let Some(info) = self.info(id)? else {
            return Ok(None);
        };
        let prefix = format!("m/{id}/");
        let mut messages: Vec<UiMessage> = self
            .table
            .scan_prefix::<UiMessage>(prefix.as_bytes())?
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        if messages.len() < info.message_count {
            return Err(StorageError::Inconsistent {
                table: TABLE.into(),
                message: format!(
                    "session {id} records {} messages but {} are stored",
                    info.message_count,
                    messages.len()
                ),
            });
        }
        messages.truncate(info.message_count);
        Ok(Some(Session { info, messages }))
    }

    /// Every session, most recently updated first.
    pub fn list(&self) -> Result<Vec<SessionInfo>, StorageError> {
        let mut all: Vec<SessionInfo> = self
            .table
            .scan_prefix(b"s/")?
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        all.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
        Ok(all)
    }

    /// Writes the session's history `head` followed by `tail` (the assistant message
    /// being streamed, if any): messages from index `from` on are (re)written, the
    /// record says how many there are, and messages past the end of a shorter history
    /// are removed. `durable` flushes before returning.
    pub fn save(
        &self,
        info: &SessionInfo,
        head: &[UiMessage],
        tail: Option<&UiMessage>,
        from: usize,
        durable: bool,
    ) -> Result<SessionInfo, StorageError> {
        let previous = self.info(&info.id)?.map(|i| i.message_count).unwrap_or(0);
        let count = head.len() + usize::from(tail.is_some());
        let mut info = info.clone();
        info.message_count = count;
        info.updated_at = crate::clock::now_ms();
        if info.title.is_empty() {
            info.title = title_of(head);
        }
        let mut batch: Vec<(Vec<u8>, Value)> = Vec::with_capacity(count.saturating_sub(from) + 1);
        for (i, m) in head.iter().chain(tail).enumerate().skip(from) {
            batch.push((
                message_key(&info.id, i),
                serde_json::to_value(m).map_err(StorageError::Encode)?,
            ));
        }
        batch.push((
            info_key(&info.id),
            serde_json::to_value(&info).map_err(StorageError::Encode)?,
        ));
        self.table.put_many(&batch)?;
        for i in count..previous {
            self.table.remove(&message_key(&info.id, i))?;
        }
        if durable {
            self.table.flush()?;
        }
        Ok(info)
    }

    /// Records approvals issued in session `id` (not flushed: the durable save of
    /// the message that asks for them follows).
    pub fn issue_approvals(&self, id: &str, issued: &[IssuedApproval]) -> Result<(), StorageError> {
        let items: Vec<(Vec<u8>, &IssuedApproval)> =
            issued.iter().map(|a| (approval_key(id, &a.id), a)).collect();
        self.table.put_many(&items)
    }

    /// The approval `approval` issued in session `id`, if the hub issued it there.
    pub fn issued_approval(&self, id: &str, approval: &str) -> Result<Option<IssuedApproval>, StorageError> {
        // Ids come from clients: one with a `/` could reach another session's key.
        if approval.contains('/') {
            return Ok(None);
        }
        self.table.get(&approval_key(id, approval))
    }

    /// Removes a session and its messages; false when there was none.
    pub fn delete(&self, id: &str) -> Result<bool, StorageError> {
        let existed = self.table.remove(&info_key(id))?;
        self.table.remove_prefix(format!("m/{id}/").as_bytes())?;
        self.table.remove_prefix(format!("a/{id}/").as_bytes())?;
        self.table.flush()?;
        Ok(existed)
    }
}

/// The first user message's text, cut to a title.
pub(crate) fn title_of(messages: &[UiMessage]) -> String {
    let Some(first) = messages.iter().find(|m| m.role == Role::User) else {
        return String::new();
    };
    let text = first.text();
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::Part;

    fn user(id: &str, text: &str) -> UiMessage {
        let mut m = UiMessage::new(id.into(), Role::User);
        m.parts.push(Part::Text {
            text: text.into(),
            state: None,
        });
        m
    }

    fn info(id: &str) -> SessionInfo {
        SessionInfo {
            id: id.into(),
            title: String::new(),
            created_at: 1,
            updated_at: 1,
            message_count: 0,
            model: None,
        }
    }

    #[test]
    fn sessions_save_load_truncate_list_and_delete() {
        let s = Sessions::open(&Storage::temporary().unwrap()).unwrap();
        let msgs = vec![
            user("u1", "first   question\nhere"),
            user("u2", "b"),
            user("u3", "c"),
        ];
        s.save(&info("chat-a"), &msgs[..2], Some(&msgs[2]), 0, true)
            .unwrap();
        s.save(&info("chat-ab"), &msgs[..1], None, 0, false).unwrap();
        let loaded = s.load("chat-a").unwrap().unwrap();
        assert_eq!(loaded.messages, msgs);
        assert_eq!(loaded.info.title, "first question here");
        // Truncate to two and rewrite only the last.
        let mut shorter = msgs[..2].to_vec();
        shorter[1] = user("u2", "edited");
        s.save(&loaded.info, &shorter, None, 1, true).unwrap();
        let loaded = s.load("chat-a").unwrap().unwrap();
        assert_eq!(loaded.messages, shorter);
        assert_eq!(loaded.info.message_count, 2);
        // The other session with a prefix-sharing id is untouched.
        assert_eq!(s.load("chat-ab").unwrap().unwrap().messages.len(), 1);
        let list = s.list().unwrap();
        assert_eq!(list.len(), 2);
        assert!(list[0].updated_at >= list[1].updated_at);
        let issued = IssuedApproval {
            id: "apr_1".into(),
            message_id: "a1".into(),
            tool_call_id: "c1".into(),
            input_sha256: "00".into(),
            tools: vec!["x.wipe".into()],
            issued_ms: 1,
        };
        s.issue_approvals("chat-a", std::slice::from_ref(&issued))
            .unwrap();
        assert_eq!(s.issued_approval("chat-a", "apr_1").unwrap(), Some(issued));
        assert_eq!(s.issued_approval("chat-ab", "apr_1").unwrap(), None);
        assert_eq!(s.issued_approval("chat-a", "../chat-a/apr_1").unwrap(), None);
        assert!(s.delete("chat-a").unwrap());
        assert_eq!(s.issued_approval("chat-a", "apr_1").unwrap(), None);
        assert!(!s.delete("chat-a").unwrap());
        assert!(s.load("chat-a").unwrap().is_none());
        assert_eq!(s.load("chat-ab").unwrap().unwrap().messages.len(), 1);
    }

    #[test]
    fn a_record_claiming_more_messages_than_stored_is_reported() {
        let s = Sessions::open(&Storage::temporary().unwrap()).unwrap();
        let mut i = info("x");
        i.message_count = 3;
        s.table.put(&info_key("x"), &i).unwrap();
        let err = s.load("x").unwrap_err().to_string();
        assert!(err.contains("records 3 messages"), "{err}");
    }

    #[test]
    fn long_titles_are_cut() {
        let t = title_of(&[user("u", &"word ".repeat(40))]);
        assert_eq!(t.chars().count(), TITLE_CHARS + 1);
        assert!(t.ends_with('…'));
    }
}
