//! Tables of records written in batches (the audit log, the accounting records):
//! blocks of records under ordered keys, and trimming the oldest.
//!
//! A block is one key, `[written ms][block number]` (u64s) then `[records]` (u32),
//! all big-endian, so key order is write order and counting needs no decoding; its
//! value is the records as a JSON array in the order the calls finished. One sled
//! insert per batch rather than per record: sled rewrites a tree node on every
//! insert, which cost about as much CPU as the call itself at thousands of calls
//! per second (the in-process `hub_call` throughput of `cargo bench --bench hub`).
//! 16-byte keys holding one record object come from earlier versions and are read,
//! counted and trimmed like one-record blocks.

use super::{StorageError, Table};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::VecDeque;

/// A stored value: a block, or one record from an earlier version.
#[derive(serde::Deserialize)]
#[serde(untagged)]
#[serde(bound = "T: DeserializeOwned")]
pub(crate) enum Stored<T> {
    Block(Vec<T>),
    One(Box<T>),
}

impl<T> Stored<T> {
    /// The records, in the order they were written.
    pub(crate) fn into_records(self) -> Vec<T> {
        match self {
            Stored::Block(records) => records,
            Stored::One(record) => vec![*record],
        }
    }
}

/// Where a block sits and how many records it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct BlockKey {
    pub(crate) ms: u64,
    pub(crate) number: u64,
    pub(crate) records: u32,
}

impl BlockKey {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(20);
        k.extend_from_slice(&self.ms.to_be_bytes());
        k.extend_from_slice(&self.number.to_be_bytes());
        k.extend_from_slice(&self.records.to_be_bytes());
        k
    }

    /// Reads a block key, or an earlier version's `[started ms][sequence]` key of
    /// one record.
    pub(crate) fn decode(k: &[u8]) -> Option<BlockKey> {
        let u64_at = |i: usize| Some(u64::from_be_bytes(k.get(i..i + 8)?.try_into().ok()?));
        let records = match k.len() {
            16 => 1,
            20 => u32::from_be_bytes(k[16..20].try_into().ok()?),
            _ => return None,
        };
        Some(BlockKey {
            ms: u64_at(0)?,
            number: u64_at(8)?,
            records,
        })
    }
}

/// The writer's view of the table: every block, oldest first, and the total.
#[derive(Default)]
pub(crate) struct Blocks {
    pub(crate) keys: VecDeque<(Vec<u8>, BlockKey)>,
    pub(crate) records: usize,
}

impl Blocks {
    pub(crate) fn load(table: &Table) -> Result<Blocks, StorageError> {
        let mut blocks = Blocks::default();
        for raw in table.keys()? {
            match BlockKey::decode(&raw) {
                Some(key) => {
                    blocks.records += key.records as usize;
                    blocks.keys.push_back((raw, key));
                }
                None => crate::warn!("{}: ignoring a stored key of {} bytes", table.name(), raw.len()),
            }
        }
        Ok(blocks)
    }

    /// The key for a new block of `records`, after every stored one even if the
    /// clock went back.
    pub(crate) fn next_key(&self, now_ms: u64, records: usize) -> BlockKey {
        let (ms, number) = match self.keys.back() {
            Some((_, last)) if last.ms >= now_ms => (last.ms, last.number + 1),
            _ => (now_ms, 0),
        };
        BlockKey {
            ms,
            number,
            records: records as u32,
        }
    }

    pub(crate) fn stored_block(&mut self, key: BlockKey) {
        self.records += key.records as usize;
        self.keys.push_back((key.encode(), key));
    }

    /// Removes the oldest records until at most `keep` remain: whole blocks, then
    /// the oldest part of the block that straddles the limit (rewritten under its
    /// own position with the new count).
    pub(crate) fn trim<T: Serialize + DeserializeOwned>(
        &mut self,
        table: &Table,
        keep: usize,
    ) -> Result<(), StorageError> {
        let mut excess = self.records.saturating_sub(keep);
        let whole = self
            .keys
            .iter()
            .take_while(|(_, key)| {
                let fits = excess >= key.records as usize;
                if fits {
                    excess -= key.records as usize;
                }
                fits
            })
            .count();
        let mut remove: Vec<Vec<u8>> = self.keys.iter().take(whole).map(|(raw, _)| raw.clone()).collect();
        // The block that straddles the limit keeps its newest records under its own
        // position, with the new count.
        let mut rewritten = Vec::new();
        let mut straddling = None;
        if excess > 0
            && let Some((raw, key)) = self.keys.get(whole)
        {
            let mut records = table
                .get::<Stored<T>>(raw)?
                .map(Stored::into_records)
                .unwrap_or_default();
            let kept = records.split_off(excess.min(records.len()));
            let key = BlockKey {
                records: kept.len() as u32,
                ..*key
            };
            remove.push(raw.clone());
            rewritten.push((key.encode(), kept));
            straddling = Some(key);
        }
        table.rewrite(&remove, &rewritten)?;
        self.keys.drain(..remove.len());
        if let Some(key) = straddling {
            self.keys.push_front((key.encode(), key));
        }
        self.records = self.keys.iter().map(|(_, k)| k.records as usize).sum();
        Ok(())
    }
}
