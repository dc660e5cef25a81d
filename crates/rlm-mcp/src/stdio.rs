//! `rlm mcp` over stdio: rmcp's newline-delimited JSON-RPC transport, except that a message
//! over [`MAX_MESSAGE_BYTES`] is answered with a JSON-RPC error (`-32600`, with the message's
//! id when its first bytes show it) instead of being dropped without a word, as rmcp does.
//!
//! rmcp keeps its framing private, so the limit is applied in front of it: [`LineLimit`]
//! passes standard input through, and cuts a line that grows past the limit, ending the cut
//! with a NUL byte (never valid JSON, so rmcp drops the stub as unparsable) and telling
//! [`Answering`], which wraps rmcp's transport, to send the error.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use rmcp::RoleServer;
use rmcp::model::{ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// The most one message may hold (without its newline): rmcp's own stdio limit, and the
/// request body limit over HTTP (`http.rs`).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an oversized message is kept to find its id in: JSON-RPC clients write `id`
/// before `params`, near the start.
const HEAD_BYTES: usize = 64 * 1024;

/// What a cut line ends with: a NUL byte, which no JSON text may hold, and its newline.
const CUT: &[u8] = b"\0\n";

/// The server's transport over the process's standard input and output.
pub fn transport()
-> Answering<AsyncRwTransport<RoleServer, LineLimit<tokio::io::Stdin>, tokio::io::Stdout>> {
    let (stdin, stdout) = rmcp::transport::stdio();
    let (oversized, answers) = mpsc::unbounded_channel();
    let input = LineLimit::new(stdin, MAX_MESSAGE_BYTES, oversized);
    // rmcp's limit above ours (a cut line is the limit, the NUL and a newline), so it never
    // drops a line itself.
    let inner = AsyncRwTransport::new_server(input, stdout)
        .with_max_line_length(MAX_MESSAGE_BYTES + CUT.len() + 1);
    Answering {
        inner,
        oversized: answers,
    }
}

/// A transport that answers each oversized message [`LineLimit`] reports with an error.
pub struct Answering<T> {
    inner: T,
    /// The id of each message cut, as far as it could be read.
    oversized: mpsc::UnboundedReceiver<Option<RequestId>>,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Answering<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // rmcp's `receive` may be dropped mid-line and resumed (it keeps the partial
            // line), so answering an oversized message in between loses nothing.
            tokio::select! {
                biased;
                Some(id) = self.oversized.recv() => {
                    if self.inner.send(too_large(id)).await.is_err() {
                        return None;
                    }
                }
                message = self.inner.receive() => return message,
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The answer to a message over the limit.
fn too_large(id: Option<RequestId>) -> ServerJsonRpcMessage {
    let error = ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "message too large: rlm mcp reads messages of up to {} MiB on stdio; this one \
             was not read",
            MAX_MESSAGE_BYTES / (1024 * 1024)
        ),
        None,
    );
    ServerJsonRpcMessage::error(error, id)
}

/// Standard input with every line longer than `limit` cut (see the module documentation).
pub struct LineLimit<R> {
    inner: R,
    limit: usize,
    /// Bytes read from `inner` not yet handed on, `input[start..end]`.
    input: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes of the current line handed on so far.
    line: usize,
    /// The first [`HEAD_BYTES`] of the current line.
    head: Vec<u8>,
    /// Dropping the rest of a cut line, up to its newline.
    discarding: bool,
    /// What is handed on before anything else (the end of a cut line).
    pending: &'static [u8],
    oversized: mpsc::UnboundedSender<Option<RequestId>>,
}

impl<R> LineLimit<R> {
    fn new(inner: R, limit: usize, oversized: mpsc::UnboundedSender<Option<RequestId>>) -> Self {
        Self {
            inner,
            limit,
            input: vec![0; 64 * 1024].into_boxed_slice(),
            start: 0,
            end: 0,
            line: 0,
            head: Vec::new(),
            discarding: false,
            pending: &[],
            oversized,
        }
    }

    /// Hands on what is buffered into `out`, up to the end of a cut line.
    fn pass(&mut self, out: &mut ReadBuf<'_>) {
        while self.start < self.end && out.remaining() > 0 {
            let rest = &self.input[self.start..self.end];
            let newline = rest.iter().position(|&byte| byte == b'\n');
            if self.discarding {
                match newline {
                    Some(at) => {
                        self.start += at + 1;
                        self.discarding = false;
                        self.line = 0;
                    }
                    None => self.start = self.end,
                }
                continue;
            }
            // The line's own bytes in this piece, then its newline if the piece has it.
            let content = newline.unwrap_or(rest.len());
            let over = self.line + content > self.limit;
            let wanted = if over {
                self.limit - self.line
            } else {
                content + usize::from(newline.is_some())
            };
            let take = wanted.min(out.remaining());
            out.put_slice(&rest[..take]);
            let rest = &self.input[self.start..self.start + take.min(content)];
            let room = HEAD_BYTES.saturating_sub(self.head.len());
            self.head.extend_from_slice(&rest[..rest.len().min(room)]);
            self.start += take;
            if take < wanted {
                // `out` is full; the rest of this line on the next read.
                self.line += take;
            } else if over {
                // The transport may have closed; then nobody is there to answer.
                let _ = self.oversized.send(request_id(&self.head));
                self.pending = CUT;
                self.discarding = true;
                self.head.clear();
                return;
            } else if newline.is_some() {
                self.line = 0;
                self.head.clear();
            } else {
                self.line += take;
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineLimit<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.pending.is_empty() {
                let count = this.pending.len().min(out.remaining());
                out.put_slice(&this.pending[..count]);
                this.pending = &this.pending[count..];
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                let mut input = ReadBuf::new(&mut this.input);
                ready!(Pin::new(&mut this.inner).poll_read(context, &mut input))?;
                if input.filled().is_empty() {
                    // The end of the input.
                    return Poll::Ready(Ok(()));
                }
                this.start = 0;
                this.end = input.filled().len();
            }
            let before = out.filled().len();
            this.pass(out);
            if out.filled().len() > before || out.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            // Nothing handed on yet (the dropped tail of a cut line, or a cut right at the
            // start of a read): go on rather than hand on nothing, which reads as the end.
        }
    }
}

/// The `id` of a JSON-RPC message from its first bytes, when they hold it: the top-level
/// keys are read in order up to `id`, so a message cut anywhere after its id still gives it.
fn request_id(head: &[u8]) -> Option<RequestId> {
    /// Reads the top-level keys into `.0` until the id; the map is never read to its end,
    /// so serde_json reports an error after the visitor returns, and the id found is kept.
    struct IdOnly<'found>(&'found mut Option<RequestId>);

    impl<'de> Visitor<'de> for IdOnly<'_> {
        type Value = ();

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a JSON-RPC message")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    *self.0 = Some(map.next_value()?);
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let mut id = None;
    let mut deserializer = serde_json::Deserializer::from_slice(head);
    // An error is expected: the text is cut, or not read past the id.
    let _ = deserializer.deserialize_map(IdOnly(&mut id));
    id
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;

    /// `input` through a [`LineLimit`] of `limit` bytes, read in pieces of `piece` bytes:
    /// what comes out, and the ids reported.
    async fn limited(
        input: &[u8],
        limit: usize,
        piece: usize,
    ) -> (Vec<u8>, Vec<Option<RequestId>>) {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let mut reader = LineLimit::new(input, limit, sender);
        let mut out = Vec::new();
        let mut buffer = vec![0; piece];
        loop {
            let read = reader.read(&mut buffer).await.unwrap();
            if read == 0 {
                break;
            }
            out.extend_from_slice(&buffer[..read]);
        }
        drop(reader);
        let mut ids = Vec::new();
        while let Some(id) = receiver.recv().await {
            ids.push(id);
        }
        (out, ids)
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_unchanged() {
        let input = b"{\"id\":1}\n{\"id\":2,\"x\":\"abc\"}\r\n\n{\"id\":3}";
        for piece in [1, 3, 64] {
            let (out, ids) = limited(input, 20, piece).await;
            assert_eq!(out, input, "piece {piece}");
            assert!(ids.is_empty());
        }
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_cut_and_its_id_reported() {
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"params\":\"{}\"}}\n",
            "x".repeat(100)
        );
        let input = format!("{{\"id\":1}}\n{long}{{\"id\":\"after\"}}\n");
        for piece in [1, 7, 4096] {
            let (out, ids) = limited(input.as_bytes(), 40, piece).await;
            let expected = format!("{{\"id\":1}}\n{}\0\n{{\"id\":\"after\"}}\n", &long[..40]);
            assert_eq!(String::from_utf8_lossy(&out), expected, "piece {piece}");
            assert_eq!(ids, [Some(RequestId::Number(7))], "piece {piece}");
        }
    }

    #[test]
    fn ids_are_read_from_the_start_of_a_message_only() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":"a-1","params":{"text":"cut her"#),
            Some(RequestId::String("a-1".into()))
        );
        assert_eq!(
            request_id(br#"{"method":"tools/call","params":{"id":5},"id":9,"#),
            Some(RequestId::Number(9))
        );
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","params":{"text":"cut"#),
            None
        );
        assert_eq!(request_id(b"not json"), None);
    }
}
