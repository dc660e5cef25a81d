//! A bound on the text waiting for tantivy's indexing threads.
//!
//! tantivy queues up to 10,000 documents between `add_document` and its indexing threads,
//! whatever their size. A load produces chunks faster than high-entropy text is indexed, so the
//! queue stays full: 10,000 chunks of 2 KB held ~40 MB, a third of the load's heap. The store's
//! tokenizer counts the text bytes the indexing threads take up ([`CountingTokenizer`]) and the
//! writer waits while more than [`MAX_QUEUED_TEXT_BYTES`] sent are not taken up yet
//! ([`DocumentQueue`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tantivy::tokenizer::Tokenizer;

/// Text bytes sent to the indexing threads and not yet taken up that a writer allows; over it,
/// the writer waits until half of it is left. Two indexing threads take up several MB of text a
/// second, so this is a fraction of a second of their work.
pub(crate) const MAX_QUEUED_TEXT_BYTES: u64 = 2 * 1024 * 1024;

/// How often a waiting writer looks at the indexing threads' progress.
const POLL: Duration = Duration::from_millis(1);

/// How long a writer waits for the indexing threads to take up any text before it stops waiting
/// (tantivy's own queue still bounds it). They pause only to write a segment; a writer must not
/// hang if they stopped for good (their error comes out of the next `add_document`).
const STALL: Duration = Duration::from_secs(1);

/// A tokenizer that adds the length of each text it is given to a shared count.
#[derive(Clone)]
pub(crate) struct CountingTokenizer<T> {
    inner: T,
    taken_up: Arc<AtomicU64>,
}

impl<T> CountingTokenizer<T> {
    pub(crate) fn new(inner: T, taken_up: Arc<AtomicU64>) -> Self {
        Self { inner, taken_up }
    }
}

impl<T: Tokenizer> Tokenizer for CountingTokenizer<T> {
    type TokenStream<'a> = T::TokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        self.taken_up
            .fetch_add(text.len() as u64, Ordering::Relaxed);
        self.inner.token_stream(text)
    }
}

/// How [`DocumentQueue::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// Under the bound (at once or after waiting).
    Room,
    /// The indexing threads took up nothing for [`STALL`].
    Stalled,
}

/// The text one writer has sent, against what the indexing threads have taken up.
#[derive(Debug)]
pub(crate) struct DocumentQueue {
    taken_up: Arc<AtomicU64>,
    /// The count `taken_up` will reach once everything sent so far is taken up.
    sent: AtomicU64,
    max_bytes: u64,
    stall: Duration,
}

impl DocumentQueue {
    /// A queue whose documents are counted into `taken_up` when indexed.
    pub(crate) fn new(taken_up: Arc<AtomicU64>) -> Self {
        Self::with_limits(taken_up, MAX_QUEUED_TEXT_BYTES, STALL)
    }

    fn with_limits(taken_up: Arc<AtomicU64>, max_bytes: u64, stall: Duration) -> Self {
        let sent = AtomicU64::new(taken_up.load(Ordering::Relaxed));
        Self {
            taken_up,
            sent,
            max_bytes,
            stall,
        }
    }

    /// Records `bytes` of text sent, then waits while more than the bound is queued.
    pub(crate) fn sent(&self, bytes: u64) -> Waited {
        let sent = self.sent.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let queued = |taken_up: u64| sent.saturating_sub(taken_up);
        let mut taken_up = self.taken_up.load(Ordering::Relaxed);
        if queued(taken_up) <= self.max_bytes {
            return Waited::Room;
        }
        let mut idle = Duration::ZERO;
        while queued(taken_up) > self.max_bytes / 2 {
            std::thread::sleep(POLL);
            let now = self.taken_up.load(Ordering::Relaxed);
            if now == taken_up {
                idle += POLL;
                if idle >= self.stall {
                    return Waited::Stalled;
                }
            } else {
                idle = Duration::ZERO;
                taken_up = now;
            }
        }
        Waited::Room
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tantivy::tokenizer::{SimpleTokenizer, TokenStream as _};

    #[test]
    fn the_tokenizer_counts_the_bytes_of_each_text_and_still_tokenizes() {
        let taken_up = Arc::new(AtomicU64::new(0));
        let mut tokenizer = CountingTokenizer::new(SimpleTokenizer::default(), taken_up.clone());
        let mut tokens = Vec::new();
        for text in ["hello world", "été"] {
            let mut stream = tokenizer.token_stream(text);
            while stream.advance() {
                tokens.push(stream.token().text.clone());
            }
        }
        assert_eq!(tokens, ["hello", "world", "été"]);
        assert_eq!(taken_up.load(Ordering::Relaxed), 11 + 5);
    }

    #[test]
    fn under_the_bound_a_writer_goes_on_at_once() {
        let taken_up = Arc::new(AtomicU64::new(500));
        let queue = DocumentQueue::with_limits(taken_up, 100, Duration::from_secs(60));
        assert_eq!(queue.sent(60), Waited::Room);
        assert_eq!(queue.sent(40), Waited::Room);
    }

    #[test]
    fn over_the_bound_a_writer_waits_until_half_is_taken_up() {
        let taken_up = Arc::new(AtomicU64::new(0));
        let queue = DocumentQueue::with_limits(taken_up.clone(), 100, Duration::from_secs(60));
        let indexer = {
            let taken_up = taken_up.clone();
            std::thread::spawn(move || {
                for _ in 0..150 {
                    std::thread::sleep(Duration::from_micros(200));
                    taken_up.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        assert_eq!(queue.sent(150), Waited::Room);
        // 150 sent, at most 50 left queued.
        assert!(taken_up.load(Ordering::Relaxed) >= 100);
        indexer.join().unwrap();
    }

    #[test]
    fn a_writer_stops_waiting_when_nothing_is_taken_up() {
        let taken_up = Arc::new(AtomicU64::new(0));
        let queue = DocumentQueue::with_limits(taken_up, 100, Duration::from_millis(20));
        assert_eq!(queue.sent(101), Waited::Stalled);
    }
}
