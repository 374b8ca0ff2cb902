//! The session store: conversations (a record, its UIMessages, the approvals
//! the hub issued) and the lease saying "a turn of this session is live here".
//!
//! [`SessionStore`] is what the agent needs from storage; [`open`] picks the
//! implementation for the configured backend:
//! - `sled`: today's table `chat_sessions` and key layout, leases in memory (a
//!   sled database has one process, and its leases must die with it);
//! - `postgres` (feature `postgres`): tables shared by every replica, leases
//!   with expiries from the database's clock.
//!
//! Saves are a compare-and-swap on the record's `version`: a writer saves the
//! version it last saw and gets the next one back, or a [`SaveOutcome::Conflict`]
//! when someone else wrote the session since (a turn that lost its lease), never
//! a silent overwrite. Records stored before versions existed read as version 0.

#[cfg(test)]
pub(crate) mod conformance;
mod lease;
#[cfg(feature = "postgres")]
mod postgres;
mod sled;
#[cfg(test)]
mod stored_sessions_tests;

use super::message::{Role, UiMessage};
use crate::hub::StoredUsage;
use crate::json::encoded_len;
use crate::storage::{Backend, Storage, StorageError};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use self::sled::SledSessions;

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
    /// Bumped by every save; 0 for a session never saved (or saved before
    /// versions existed).
    #[serde(default)]
    pub version: u64,
    /// Who owns it: the principal whose turn created it (sessions stored before
    /// sessions had owners belong to the local operator).
    #[serde(default = "local_principal")]
    pub principal: String,
    /// The OAuth client the session was created through, for a grant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The bytes of its stored messages (JSON), as of its last save; 0 for a
    /// session not saved since sessions were measured.
    #[serde(default)]
    pub stored_bytes: u64,
}

fn local_principal() -> String {
    crate::config::LOCAL_PRINCIPAL.to_string()
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

/// One save: the history `head` followed by `tail` (the assistant message being
/// streamed, if any). Messages from index `from` on are (re)written, the record
/// says how many there are, and stored messages past the end of a shorter
/// history are removed. `info.version` is the version the writer last saw.
pub struct SaveRequest<'a> {
    /// The record as the writer has it (its `version` is the expected one).
    pub info: &'a SessionInfo,
    /// The history.
    pub head: &'a [UiMessage],
    /// The message after the history, if any.
    pub tail: Option<&'a UiMessage>,
    /// The first index that changed.
    pub from: usize,
    /// Whether the save must be durable (flushed, committed) before it returns.
    pub durable: bool,
}

/// What a save did.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveOutcome {
    /// Written: the record as stored now (its new version, count, title, time).
    Saved(SessionInfo),
    /// Not written: the stored version is not the one the writer saw.
    Conflict(Conflict),
}

/// A save refused because the session changed since the writer read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The session.
    pub session_id: String,
    /// The version the writer expected.
    pub expected: u64,
    /// The version stored (`None`: the session is gone).
    pub found: Option<u64>,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let found = match self.found {
            Some(v) => format!("version {v}"),
            None => "no record".to_string(),
        };
        write!(
            f,
            "session {:?} was written elsewhere (expected version {}, found {found}): this turn lost its lease",
            self.session_id, self.expected
        )
    }
}

/// The answer to a lease request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lease {
    /// The caller holds the lease until `expires_ms` (Unix milliseconds).
    Acquired {
        /// When the lease lapses unless renewed.
        expires_ms: u64,
    },
    /// Someone else holds it.
    HeldBy {
        /// The holder (a replica id).
        owner: String,
        /// When the holder's lease lapses unless renewed.
        expires_ms: u64,
    },
}

/// Where the agent keeps its sessions, and who runs a turn of which.
///
/// Leases are not re-entrant: `acquire` succeeds only when nobody (the same
/// owner included) holds an unexpired lease, so one owner cannot run two turns
/// of a session either.
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync {
    /// The session's record without its messages.
    async fn info(&self, id: &str) -> Result<Option<SessionInfo>, StorageError>;
    /// The session and its messages (exactly `message_count` of them).
    async fn load(&self, id: &str) -> Result<Option<Session>, StorageError>;
    /// Every session, or only `principal`'s, most recently updated first (ties by
    /// id).
    async fn list(&self, principal: Option<&str>) -> Result<Vec<SessionInfo>, StorageError>;
    /// How many sessions `principal` has stored, and their bytes.
    async fn stored_usage(&self, principal: &str) -> Result<StoredUsage, StorageError>;
    /// Gives session `id` to `principal` (a new version of its record); `None`
    /// when there is no such session.
    async fn hand_over(&self, id: &str, principal: &str) -> Result<Option<SessionInfo>, StorageError>;
    /// Writes the session if its stored version is still `save.info.version`.
    async fn save(&self, save: SaveRequest<'_>) -> Result<SaveOutcome, StorageError>;
    /// Records approvals issued in session `id` (the durable save of the
    /// message that asks for them follows).
    async fn issue_approvals(&self, id: &str, issued: &[IssuedApproval]) -> Result<(), StorageError>;
    /// The approval `approval` issued in session `id`, if the hub issued it there.
    async fn issued_approval(&self, id: &str, approval: &str)
    -> Result<Option<IssuedApproval>, StorageError>;
    /// Removes a session, its messages and approvals; false when there was none.
    async fn delete(&self, id: &str) -> Result<bool, StorageError>;
    /// Takes the lease of session `id` for `owner` for `ttl`, unless another
    /// unexpired lease exists.
    async fn acquire(&self, id: &str, owner: &str, ttl: Duration) -> Result<Lease, StorageError>;
    /// Extends `owner`'s lease of `id` by `ttl` from now; false when `owner`
    /// no longer holds it (it expired and someone else took it, or was released).
    async fn renew(&self, id: &str, owner: &str, ttl: Duration) -> Result<bool, StorageError>;
    /// Gives up `owner`'s lease of `id` (nothing when `owner` does not hold it).
    async fn release(&self, id: &str, owner: &str) -> Result<(), StorageError>;
    /// The sessions with an unexpired lease (a turn live on some replica).
    async fn leased(&self) -> Result<HashSet<String>, StorageError>;
}

/// The session store in `backend` (its schema migrated first, for PostgreSQL).
pub(crate) async fn open(backend: &Backend) -> Result<Arc<dyn SessionStore>, StorageError> {
    match backend {
        Backend::Embedded(storage) => open_sled(storage),
        #[cfg(feature = "postgres")]
        Backend::Postgres(pg) => Ok(Arc::new(postgres::PgChatSessions::open(pg).await?)),
    }
}

/// The session store on sled `storage`.
pub(crate) fn open_sled(storage: &Storage) -> Result<Arc<dyn SessionStore>, StorageError> {
    Ok(Arc::new(SledSessions::open(storage)?))
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

/// The record a save writes: `info` with the count, time, title, size and
/// version of this save.
pub(crate) fn next_record(save: &SaveRequest<'_>) -> SessionInfo {
    let mut info = save.info.clone();
    info.message_count = save.head.len() + usize::from(save.tail.is_some());
    info.updated_at = crate::clock::now_ms();
    if info.title.is_empty() {
        info.title = title_of(save.head);
    }
    info.version = save.info.version + 1;
    info.stored_bytes = save
        .head
        .iter()
        .chain(save.tail)
        .map(|m| encoded_len(m) as u64)
        .sum();
    info
}

/// `info` given to `principal`, as a new version.
pub(crate) fn handed_over(info: &SessionInfo, principal: &str) -> SessionInfo {
    SessionInfo {
        principal: principal.to_string(),
        version: info.version + 1,
        ..info.clone()
    }
}

/// The messages a save writes, with their indexes.
pub(crate) fn written<'a>(save: &'a SaveRequest<'a>) -> impl Iterator<Item = (usize, &'a UiMessage)> + 'a {
    save.head.iter().chain(save.tail).enumerate().skip(save.from)
}

/// The error for a session record that counts more messages than are stored.
pub(crate) fn missing_messages(table: &str, info: &SessionInfo, stored: usize) -> StorageError {
    StorageError::Inconsistent {
        table: table.into(),
        message: format!(
            "session {} records {} messages but {stored} are stored",
            info.id, info.message_count
        ),
    }
}
