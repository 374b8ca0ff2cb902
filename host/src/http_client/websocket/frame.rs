//! RFC 6455 framing for a client: frames it writes are masked with a fresh random
//! key; frames it reads must not be. [`Reader`] joins fragmented messages
//! (within a size bound), hands control frames (ping, pong, close) over as they
//! come, and refuses what the RFC forbids (reserved bits, unknown opcodes,
//! fragmented or oversized control frames, masked server frames, a continuation
//! without a start, a new message inside a fragmented one).

use super::WsError;
use tokio::io::{AsyncRead, AsyncReadExt};

pub(super) const CONTINUATION: u8 = 0x0;
pub(super) const TEXT: u8 = 0x1;
pub(super) const BINARY: u8 = 0x2;
pub(super) const CLOSE: u8 = 0x8;
pub(super) const PING: u8 = 0x9;
pub(super) const PONG: u8 = 0xA;

/// One whole frame, FIN set, masked with `mask`.
pub(super) fn encode(opcode: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n <= usize::from(u16::MAX) => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// What the server sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// A whole text or binary message.
    Message(Vec<u8>),
    /// A ping: answer with a pong carrying the same payload.
    Ping(Vec<u8>),
    /// A pong (unsolicited ones are allowed and ignored).
    Pong,
    /// A close frame: its status code and reason, when given.
    Close(Option<u16>, String),
}

/// Reads frames from the server's half of the connection.
pub(crate) struct Reader<R> {
    inner: R,
    max_message: usize,
    /// The fragments of a message not finished yet.
    partial: Option<Vec<u8>>,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    pub(super) fn new(inner: R, max_message: usize) -> Reader<R> {
        Reader {
            inner,
            max_message,
            partial: None,
        }
    }

    /// The next message or control frame.
    pub(crate) async fn next(&mut self) -> Result<Incoming, WsError> {
        loop {
            let (fin, opcode, payload) = self.frame().await?;
            match opcode {
                PING => return Ok(Incoming::Ping(payload)),
                PONG => return Ok(Incoming::Pong),
                CLOSE => return Ok(close(&payload)),
                TEXT | BINARY if self.partial.is_some() => {
                    return Err(WsError::Protocol("a new message started inside a fragmented one"));
                }
                TEXT | BINARY if fin => return Ok(Incoming::Message(payload)),
                TEXT | BINARY => self.partial = Some(payload),
                CONTINUATION => {
                    let Some(mut partial) = self.partial.take() else {
                        return Err(WsError::Protocol("a continuation frame without a message"));
                    };
                    partial.extend_from_slice(&payload);
                    if fin {
                        return Ok(Incoming::Message(partial));
                    }
                    self.partial = Some(partial);
                }
                _ => return Err(WsError::Protocol("a frame with an unknown opcode")),
            }
        }
    }

    /// One frame: FIN, opcode, unmasked payload.
    async fn frame(&mut self) -> Result<(bool, u8, Vec<u8>), WsError> {
        let mut head = [0u8; 2];
        self.inner.read_exact(&mut head).await.map_err(WsError::Io)?;
        let (fin, opcode) = (head[0] & 0x80 != 0, head[0] & 0x0F);
        if head[0] & 0x70 != 0 {
            return Err(WsError::Protocol(
                "a frame with reserved bits set (no extension was agreed)",
            ));
        }
        if head[1] & 0x80 != 0 {
            return Err(WsError::Protocol("a masked frame from the server"));
        }
        let len = match head[1] & 0x7F {
            126 => u64::from(self.inner.read_u16().await.map_err(WsError::Io)?),
            127 => self.inner.read_u64().await.map_err(WsError::Io)?,
            n => u64::from(n),
        };
        let control = opcode >= CLOSE;
        if control && (!fin || len > 125) {
            return Err(WsError::Protocol("a fragmented or oversized control frame"));
        }
        let held = self.partial.as_ref().map_or(0, Vec::len) as u64;
        if held.saturating_add(len) > self.max_message as u64 {
            return Err(WsError::TooLarge {
                limit: self.max_message,
            });
        }
        let mut payload = vec![0u8; len as usize];
        self.inner.read_exact(&mut payload).await.map_err(WsError::Io)?;
        Ok((fin, opcode, payload))
    }
}

/// A close frame's status code and reason.
fn close(payload: &[u8]) -> Incoming {
    if payload.len() < 2 {
        return Incoming::Close(None, String::new());
    }
    let code = u16::from_be_bytes([payload[0], payload[1]]);
    let reason = String::from_utf8_lossy(&payload[2..]).chars().take(123).collect();
    Incoming::Close(Some(code), reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unmasked (server) frame.
    fn server(first: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![first];
        match payload.len() {
            n if n < 126 => out.push(n as u8),
            n => {
                out.push(126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        out.extend_from_slice(payload);
        out
    }

    async fn read_all(bytes: Vec<u8>, max: usize) -> Vec<Result<Incoming, String>> {
        let mut reader = Reader::new(std::io::Cursor::new(bytes), max);
        let mut out = Vec::new();
        loop {
            match reader.next().await {
                Ok(incoming) => out.push(Ok(incoming)),
                Err(WsError::Io(_)) => return out,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }

    #[test]
    fn client_frames_are_masked_with_their_length_encoded() {
        let mask = [1, 2, 3, 4];
        let small = encode(TEXT, b"hi", mask);
        assert_eq!(small, [0x81, 0x82, 1, 2, 3, 4, b'h' ^ 1, b'i' ^ 2]);
        let medium = encode(BINARY, &[0; 300], mask);
        assert_eq!(&medium[..4], &[0x82, 0xFE, 0x01, 0x2C]);
        assert_eq!(medium.len(), 4 + 4 + 300);
        let large = encode(TEXT, &vec![0; 70_000], mask);
        assert_eq!(&large[..2], &[0x81, 0xFF]);
        assert_eq!(u64::from_be_bytes(large[2..10].try_into().unwrap()), 70_000);
    }

    #[tokio::test]
    async fn messages_fragments_and_control_frames() {
        let mut bytes = server(0x81, b"{\"a\":1}");
        bytes.extend(server(0x01, b"hel"));
        bytes.extend(server(0x89, b"p")); // a ping between fragments
        bytes.extend(server(0x00, b"lo "));
        bytes.extend(server(0x80, b"world"));
        bytes.extend(server(0x8A, b""));
        bytes.extend(server(0x88, &[0x03, 0xE8, b'b', b'y', b'e']));
        let got = read_all(bytes, 1024).await;
        assert_eq!(
            got,
            vec![
                Ok(Incoming::Message(b"{\"a\":1}".to_vec())),
                Ok(Incoming::Ping(b"p".to_vec())),
                Ok(Incoming::Message(b"hello world".to_vec())),
                Ok(Incoming::Pong),
                Ok(Incoming::Close(Some(1000), "bye".into())),
            ]
        );
    }

    #[tokio::test]
    async fn what_the_rfc_forbids_and_the_size_bound_are_refused() {
        let cases: [(Vec<u8>, &str); 7] = [
            (server(0xC1, b"x"), "reserved bits"),
            ([0x81, 0x81, 0, 0, 0, 0, b'x'].to_vec(), "masked frame"),
            (server(0x80, b"x"), "continuation frame without a message"),
            (
                [server(0x01, b"a"), server(0x81, b"b")].concat(),
                "new message started",
            ),
            (server(0x09, b"x"), "fragmented or oversized control"),
            (server(0x83, b"x"), "unknown opcode"),
            (server(0x81, &[b'x'; 200]), "larger than 100 bytes"),
        ];
        for (bytes, want) in cases {
            let got = read_all(bytes, 100).await;
            let last = got.last().cloned().unwrap().unwrap_err();
            assert!(last.contains(want), "{want}: {last}");
        }
        // Fragments add up against the bound.
        let split = [server(0x01, &[b'x'; 60]), server(0x80, &[b'x'; 60])].concat();
        let got = read_all(split, 100).await;
        assert!(got[0].clone().unwrap_err().contains("larger than 100 bytes"));
    }
}
