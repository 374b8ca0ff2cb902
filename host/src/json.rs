//! The length of a value's JSON encoding, counted without building the text (the
//! audit excerpt's limit, the agent's message sizes).

use serde::Serialize;

/// The length in bytes of `value`'s compact JSON.
pub(crate) fn encoded_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut count = Count(0);
    // Writing to a counter cannot fail, and what the hub serializes always does.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A writer that only counts the bytes written to it.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_the_compact_encoding() {
        let v = serde_json::json!({"a": [1, "x\"y"], "b": null});
        assert_eq!(super::encoded_len(&v), serde_json::to_string(&v).unwrap().len());
    }
}
