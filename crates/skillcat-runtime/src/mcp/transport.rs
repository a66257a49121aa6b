//! The server's line transport: one JSON-RPC message a line, as rmcp frames stdio, and an
//! answer to every line that is not one.
//!
//! ```text
//! line ──JSON-RPC message?──▶ to the service
//!      ├─ not JSON (malformed, over-deep, not UTF-8) ─▶ {"jsonrpc":"2.0","id":null,
//!      │                                                 "error":{"code":-32700,…}}
//!      ├─ longer than MAX_LINE ─────────────────────▶ the same, the line skipped unread
//!      ├─ JSON but not a message (a notification) ──▶ ignored (JSON-RPC never answers one)
//!      └─ JSON but not a message (anything else) ───▶ -32600, with its id when it has one
//! ```
//!
//! rmcp's own stdio transport drops a line that is not JSON without a word, so a client that
//! sent one waits for ever; JSON-RPC 2.0 answers it with a Parse error whose `id` is `null`.
//! The server then reads on: one bad line costs nothing else.

use std::future::Future;
use std::io;
use std::sync::Arc;

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value as Json, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read (rmcp's own limit): a longer one is skipped, and answered.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// JSON-RPC's Parse error.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's Invalid Request.
const INVALID_REQUEST: i64 = -32600;

/// Reads messages a line each from `R`, writes them a line each to `W`.
pub(crate) struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line read so far (kept when a read is cancelled, so none is lost).
    line: Vec<u8>,
    /// Skipping the rest of a line longer than [`MAX_LINE`].
    discarding: bool,
    /// An error answer still to write, and how much of it is written (kept when a write is
    /// cancelled, so it is written whole, before anything is read after the line it answers).
    pending: Option<(Vec<u8>, usize)>,
    write: Arc<Mutex<Option<W>>>,
}

enum Read {
    Line,
    Oversized,
    End,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(crate) fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            pending: None,
            write: Arc::new(Mutex::new(Some(write))),
        }
    }

    /// One whole line into `self.line` (its newline included), never more than [`MAX_LINE`]
    /// bytes of it held. Cancel-safe: what was read stays in `self.line`.
    async fn read_line(&mut self) -> Read {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) | Err(_) => return Read::End,
                Ok(a) => a,
            };
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let mut done = None;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
            } else if self.line.len() + take > MAX_LINE {
                self.line.clear();
                self.discarding = newline.is_none();
                done = Some(Read::Oversized);
            } else {
                self.line.extend_from_slice(&available[..take]);
                if newline.is_some() {
                    done = Some(Read::Line);
                }
            }
            self.read.consume(take);
            if let Some(done) = done {
                return done;
            }
        }
    }

    /// Writes the pending answer, whole. `false` when the output is gone.
    async fn flush_pending(&mut self) -> bool {
        let Some((bytes, written)) = &mut self.pending else {
            return true;
        };
        let mut guard = self.write.lock().await;
        let Some(w) = guard.as_mut() else {
            return false;
        };
        while *written < bytes.len() {
            match w.write(&bytes[*written..]).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => *written += n,
            }
        }
        if w.flush().await.is_err() {
            return false;
        }
        drop(guard);
        self.pending = None;
        true
    }
}

/// The answer to a line that is not a message, if it gets one.
fn answer(line: &[u8]) -> Option<Vec<u8>> {
    let (code, message, id) = match serde_json::from_slice::<Json>(line) {
        Err(_) => (PARSE_ERROR, "Parse error", Json::Null),
        // A notification is never answered, even a malformed one.
        Ok(v) if v.get("method").is_some() && v.get("id").is_none() => return None,
        Ok(v) => {
            let id = match v.get("id") {
                Some(id @ (Json::String(_) | Json::Number(_))) => id.clone(),
                _ => Json::Null,
            };
            (INVALID_REQUEST, "Invalid Request", id)
        }
    };
    Some(error_line(code, message, id))
}

fn error_line(code: i64, message: &str, id: Json) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let lock = self.write.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            let mut guard = lock.lock().await;
            let w = guard
                .as_mut()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "transport closed"))?;
            w.write_all(&line).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.flush_pending().await {
                return None;
            }
            match self.read_line().await {
                Read::End => return None,
                Read::Oversized => {
                    let message = format!(
                        "Parse error: a line longer than {} MiB is not read",
                        MAX_LINE >> 20
                    );
                    self.pending = Some((error_line(PARSE_ERROR, &message, Json::Null), 0));
                    continue;
                }
                Read::Line => {}
            }
            let mut line: &[u8] = &self.line;
            line = line.strip_suffix(b"\n").unwrap_or(line);
            line = line.strip_suffix(b"\r").unwrap_or(line);
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                self.line.clear();
                continue;
            }
            let parsed = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line);
            let reply = match &parsed {
                Ok(_) => None,
                Err(_) => answer(line),
            };
            self.line.clear();
            match parsed {
                Ok(message) => return Some(message),
                Err(_) => self.pending = reply.map(|r| (r, 0)),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_are_not_messages_are_answered() {
        let text = |l: &str| answer(l.as_bytes()).map(|a| String::from_utf8(a).unwrap());
        let parse = "{\"error\":{\"code\":-32700,\"message\":\"Parse error\"},\"id\":null,\"jsonrpc\":\"2.0\"}\n";
        let got: Json = serde_json::from_str(&text("{not json").unwrap()).unwrap();
        assert_eq!(got, serde_json::from_str::<Json>(parse).unwrap());
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(text(&deep).unwrap().contains("-32700"));
        assert!(text("{\"jsonrpc\":\"2.0\",\"method\":\"x/y\",\"params\":7}").is_none());
        let got: Json = serde_json::from_str(&text("{\"id\":4}").unwrap()).unwrap();
        assert_eq!(got["id"], 4);
        assert_eq!(got["error"]["code"], -32600);
    }
}
