//! A conditional atomic write on one table: read a key, decide, write several
//! keys, all in one sled transaction, so two writers of one record (a session
//! save that is a compare-and-swap on its version) cannot interleave.

use super::Table;
use crate::storage::StorageError;
use sled::transaction::{ConflictableTransactionError, TransactionError};

impl Table {
    /// Atomically reads `key`, asks `decide` about its current bytes and, when it
    /// answers `Ok(remove)`, removes those keys and writes `put`; an `Err` from
    /// `decide` writes nothing and is returned as the inner error. `decide` may run
    /// more than once (sled retries a transaction that raced another).
    pub fn write_if<E>(
        &self,
        key: &[u8],
        decide: impl Fn(Option<&[u8]>) -> Result<Vec<Vec<u8>>, E>,
        put: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<Result<(), E>, StorageError> {
        let result = self.tree.transaction(|tx| {
            let current = tx.get(key)?;
            let remove = decide(current.as_deref()).map_err(ConflictableTransactionError::Abort)?;
            for k in &remove {
                tx.remove(k.as_slice())?;
            }
            for (k, v) in put {
                tx.insert(k.as_slice(), v.as_slice())?;
            }
            Ok(())
        });
        match result {
            Ok(()) => Ok(Ok(())),
            Err(TransactionError::Abort(e)) => Ok(Err(e)),
            Err(TransactionError::Storage(e)) => Err(StorageError::Io(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::storage::Storage;

    #[test]
    fn writes_only_when_the_decision_allows() {
        let t = Storage::temporary().unwrap().table("t").unwrap();
        t.put_bytes(b"gone", b"x").unwrap();
        let put = [(b"k".to_vec(), b"1".to_vec())];
        let ok = t.write_if(
            b"k",
            |cur| {
                if cur.is_none() {
                    Ok(vec![b"gone".to_vec()])
                } else {
                    Err("taken")
                }
            },
            &put,
        );
        assert_eq!(ok.unwrap(), Ok(()));
        assert_eq!(t.get_bytes(b"gone").unwrap(), None);
        let again = t.write_if(
            b"k",
            |cur| if cur.is_none() { Ok(vec![]) } else { Err("taken") },
            &put,
        );
        assert_eq!(again.unwrap(), Err("taken"));
        assert_eq!(t.get_bytes(b"k").unwrap().unwrap(), b"1");
    }
}
