//! Stage 4: the extractors — batches dispatched concurrently while they fit the budget beside
//! those in flight and the report's reserve, their texts read ahead on a blocking thread.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::QueryRun;
use super::select::{Batch, source_bytes};
use crate::budget::{Amount, batch_amount, describe_limit, findings_bound, fits};
use crate::error::{Error, Result};
use crate::events::QueryEvent;
use crate::extract::{BatchOutcome, ChunkExtraction, ChunkFailure, Extractor, NOT_SENT};
use crate::pipeline::{QueryResult, QueryStatus, ReserveReport};
use crate::select::{Corpus, SelectedChunk};

/// How long after the deadline a batch still running is dropped: the client's own deadline
/// error ends its call first, so the call is counted.
const DEADLINE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// What one batch task returns: its outcome, what it held of the budget, and its seconds.
type Settled = (BatchOutcome, Amount, u64, f64);

/// Batches that must all fail the same way, with nothing found yet, before the rest are not
/// sent: by then the failure is the model's or the server's, not the chunks'.
pub const SYSTEMATIC_FAILURE_BATCHES: usize = 3;

/// The dispatch loop's books: what batches in flight hold and what settled ones found.
struct Books {
    /// Estimates of the batches in flight.
    committed: Amount,
    /// Upper bounds of the findings the batches in flight may add to the report's input.
    evidence_in_flight: u64,
    /// Bytes of the findings found so far.
    evidence_known: u64,
    dispatched: usize,
    done: usize,
    /// The report's reserve when the last batch was sent.
    reserve: Option<Amount>,
    /// While no batch has found anything: the failure every settled batch had (digits
    /// dropped, so chunk ids and sizes do not tell them apart), and how many had it.
    same_failure: Option<(String, usize)>,
    /// Set once a failure is known to be systematic: no batch is sent after it.
    stopped: Option<String>,
}

/// What the dispatch loop works through: the batches not sent yet, the tasks out, and what
/// came back.
struct Dispatch {
    extractor: Extractor,
    total: usize,
    texts: tokio::sync::mpsc::Receiver<std::result::Result<Vec<String>, String>>,
    pending: std::iter::Peekable<std::vec::IntoIter<Batch>>,
    /// Each batch is a task of its own, so both runtime threads build requests and read
    /// replies when a round's answers arrive together; dropping the set (the run's future)
    /// aborts the calls in flight.
    in_flight: tokio::task::JoinSet<Settled>,
    /// The chunks of each batch in flight, by task, for those a systematic failure cancels.
    in_flight_chunks: std::collections::HashMap<tokio::task::Id, (Vec<SelectedChunk>, Amount, u64)>,
    books: Books,
    extractions: Vec<(SelectedChunk, ChunkExtraction)>,
    /// Set when the time limit passed with batches still to send.
    out_of_time: bool,
}

/// Why the batches left when the time limit passed were not sent.
pub const TIME_LIMIT_REASON: &str = "the time limit was reached";

impl QueryRun {
    /// Runs every batch that fits the budget and the time limit, no more at once than the
    /// sub-call model's provider serves now; the rest are skipped (`chunks_skipped` for the
    /// budget, `chunk_failures` "not sent" for the time limit). Returns the extractions; with
    /// none, the result says why (an input error, e.g. a refused request, is the query's
    /// error instead).
    pub(super) async fn extract(
        &mut self,
        batches: Vec<Batch>,
        result: &mut QueryResult,
    ) -> Result<Vec<(SelectedChunk, ChunkExtraction)>> {
        let stage_started = Instant::now();
        let input_error: Arc<Mutex<Option<rlm_llm::Error>>> = Arc::default();
        let mut dispatch = Dispatch {
            extractor: Extractor {
                events: self.events.clone(),
                client: self.stage_client(&self.ledgers.extract),
                system: self.prompts.extract.clone(),
                question: self.question.clone(),
                model: self.options.subcall_model.clone(),
                max_tokens: self.options.output_cap(self.options.extract_max_tokens),
                log: Arc::clone(&self.log),
                input_error: Arc::clone(&input_error),
            },
            total: batches.len(),
            texts: read_ahead(&self.corpus, &batches, self.at_once),
            pending: batches.into_iter().peekable(),
            in_flight: tokio::task::JoinSet::new(),
            in_flight_chunks: std::collections::HashMap::new(),
            books: Books {
                committed: Amount {
                    cost_usd: Some(0.0),
                    ..Amount::default()
                },
                evidence_in_flight: 0,
                evidence_known: 0,
                dispatched: 0,
                done: 0,
                reserve: None,
                same_failure: None,
                stopped: None,
            },
            extractions: Vec::new(),
            out_of_time: false,
        };
        loop {
            self.send_what_fits(&mut dispatch).await?;
            let Some(joined) = dispatch.in_flight.join_next_with_id().await else {
                break;
            };
            self.receive(joined, &mut dispatch, result)?;
        }
        result.timings.extract = stage_started.elapsed().as_secs_f64();
        self.conclude(dispatch, &input_error, result)
    }

    /// Sends batches while they fit: under the provider's current limit, the budget, the time
    /// limit, and no systematic failure seen.
    async fn send_what_fits(&mut self, dispatch: &mut Dispatch) -> Result<()> {
        while dispatch.books.stopped.is_none() && dispatch.in_flight.len() < self.sending_limit() {
            let Some((_, chunks)) = dispatch.pending.peek() else {
                break;
            };
            if self
                .deadline
                .is_some_and(|deadline| tokio::time::Instant::now() >= deadline)
            {
                dispatch.out_of_time = true;
                break;
            }
            let none_in_flight = dispatch.in_flight.is_empty();
            let Some((amount, bound)) = self.admit(chunks, &mut dispatch.books, none_in_flight)?
            else {
                break;
            };
            let Some((label, chunks)) = dispatch.pending.next() else {
                break;
            };
            // The reader sends the batches' texts in the batches' order.
            let read = dispatch
                .texts
                .recv()
                .await
                .unwrap_or_else(|| Err("the chunk reader stopped".to_owned()));
            let books = &mut dispatch.books;
            books.committed = books.committed.plus(amount);
            books.evidence_in_flight += bound;
            books.dispatched += 1;
            let ids: Vec<SelectedChunk> = chunks.clone();
            let task = dispatch.in_flight.spawn(self.batch_task(
                &dispatch.extractor,
                label,
                chunks,
                read,
                amount,
                bound,
            ));
            dispatch
                .in_flight_chunks
                .insert(task.id(), (ids, amount, bound));
            self.emit(&QueryEvent::BatchSent {
                sent: dispatch.books.dispatched,
                total: dispatch.total,
                in_flight: dispatch.in_flight.len(),
            });
        }
        Ok(())
    }

    /// Books a batch that came back (or was cancelled by a systematic failure), and stops the
    /// others when it shows one.
    fn receive(
        &mut self,
        joined: std::result::Result<(tokio::task::Id, Settled), tokio::task::JoinError>,
        dispatch: &mut Dispatch,
        result: &mut QueryResult,
    ) -> Result<()> {
        let (outcome, amount, bound, seconds) = match joined {
            Ok((id, settled)) => {
                dispatch.in_flight_chunks.remove(&id);
                settled
            }
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            // Only a systematic failure cancels batches (the set is aborted below, then
            // drained here); anything else is a runtime shutting down.
            Err(err) => match (
                &dispatch.books.stopped,
                dispatch.in_flight_chunks.remove(&err.id()),
            ) {
                (Some(reason), Some((chunks, amount, bound))) => {
                    (BatchOutcome::not_sent(&chunks, reason), amount, bound, 0.0)
                }
                _ => return Err(Error::Task(err.to_string())),
            },
        };
        let stopping = dispatch.books.stopped.is_none();
        let found_before = dispatch.extractions.len();
        self.settle(outcome, amount, bound, dispatch, result);
        self.found
            .extend(dispatch.extractions[found_before..].iter().cloned());
        if dispatch.books.done == 1 {
            self.pace_from_first_batch(seconds, dispatch.total, result);
            // The batches sent from now on end at the deadline as it stands.
            dispatch.extractor.client = self.stage_client(&self.ledgers.extract);
        }
        if stopping && let Some(reason) = &dispatch.books.stopped {
            self.emit(&QueryEvent::Warning {
                message: format!("{reason}: the other batches are not sent"),
            });
            // The batches in flight would fail the same way: cancelled, and their chunks
            // reported as not sent when the set gives them back.
            dispatch.in_flight.abort_all();
        }
        Ok(())
    }

    /// After the last batch: what was not sent and why, the reserve, and the reason when
    /// nothing could be analysed.
    fn conclude(
        &mut self,
        mut dispatch: Dispatch,
        input_error: &Mutex<Option<rlm_llm::Error>>,
        result: &mut QueryResult,
    ) -> Result<Vec<(SelectedChunk, ChunkExtraction)>> {
        let books = &dispatch.books;
        let unsent_reason = match &books.stopped {
            Some(reason) => Some(reason.clone()),
            None if dispatch.out_of_time => Some(TIME_LIMIT_REASON.to_owned()),
            None => None,
        };
        if let Some(reason) = &unsent_reason {
            let not_sent: Vec<SelectedChunk> = dispatch
                .pending
                .by_ref()
                .flat_map(|(_, chunks)| chunks)
                .collect();
            let outcome = BatchOutcome::not_sent(&not_sent, reason);
            result.chunk_failures.extend(outcome.chunk_failures);
            result.stopped_early = Some(reason.clone());
        }
        result.chunks_skipped = dispatch
            .pending
            .flat_map(|(_, chunks)| chunks)
            .map(|chunk| ChunkFailure {
                chunk_id: chunk.id,
                reason: "budget".to_owned(),
            })
            .collect();
        result.synthesis_reserve = books.reserve.map(|held| ReserveReport {
            tokens: held.tokens,
            cost_usd: held.cost_usd,
            calls: held.calls,
        });
        let extractions = dispatch.extractions;
        result.chunks_analyzed = extractions.len();
        if extractions.is_empty() {
            let first = input_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(err) = first {
                return Err(Error::Model {
                    stage: "extract",
                    source: err,
                });
            }
            self.nothing_analysed(unsent_reason.as_deref(), result);
        }
        Ok(extractions)
    }

    /// The result of an extraction that analysed no chunk.
    fn nothing_analysed(&self, unsent_reason: Option<&str>, result: &mut QueryResult) {
        let reason = result
            .chunk_failures
            .first()
            .map_or("unknown", |failure| failure.reason.as_str());
        result.status = QueryStatus::ExtractionFailed;
        let why = match unsent_reason {
            Some(stopped) => format!(
                "No chunk could be analysed: {stopped}, so the other {} chunks were not sent.",
                result
                    .chunk_failures
                    .iter()
                    .filter(|failure| failure.reason.starts_with(NOT_SENT))
                    .count()
            ),
            None => format!(
                "No chunk could be analysed: all {} batches failed (first reason: {reason}).",
                result.batches
            ),
        };
        self.no_findings(result, why);
    }

    /// Whether the next batch (`chunks`) may go out now: its estimate and findings bound, or
    /// `None` when it must wait for one in flight. Under a budget it goes out only while the
    /// spend, the batches in flight, it and the report's reserve (recomputed from the findings
    /// so far) fit; the very first batch not fitting is the query's error.
    fn admit(
        &self,
        chunks: &[SelectedChunk],
        books: &mut Books,
        none_in_flight: bool,
    ) -> Result<Option<(Amount, u64)>> {
        let options = &self.options;
        let bytes: u64 = chunks.iter().map(|chunk| chunk.bytes).sum();
        let amount = batch_amount(
            bytes + source_bytes(chunks),
            chunks.len(),
            self.extract_fixed_bytes(),
            options.extract_cap(chunks.len()),
            self.extract_price.as_ref(),
        );
        let bound = findings_bound(
            chunks.len(),
            source_bytes(chunks),
            options.extract_cap(chunks.len()),
        );
        if !self.limited {
            return Ok(Some((amount, bound)));
        }
        let held = self.reserve_for(books.evidence_known + books.evidence_in_flight + bound);
        if !fits(
            &options.budget,
            &self.ledgers.root.total(),
            books.committed.plus(amount).plus(held),
        ) {
            if books.dispatched == 0 && none_in_flight {
                return Err(Error::BudgetTooSmall {
                    what: "one extractor batch and the report after the plan",
                    needed: amount.plus(held).describe(&options.budget),
                    limit: describe_limit(&options.budget),
                });
            }
            return Ok(None);
        }
        books.reserve = Some(held);
        Ok(Some((amount, bound)))
    }

    /// One batch as a task: its extractor run within the deadline.
    fn batch_task(
        &self,
        extractor: &Extractor,
        label: String,
        chunks: Vec<SelectedChunk>,
        texts: std::result::Result<Vec<String>, String>,
        amount: Amount,
        bound: u64,
    ) -> impl Future<Output = Settled> + Send + 'static {
        let extractor = extractor.clone();
        // The client ends each call at the deadline itself (a failed call, counted); this is
        // the backstop for a batch between calls.
        let deadline = self.deadline.map(|deadline| deadline + DEADLINE_GRACE);
        async move {
            let started = Instant::now();
            let run = extractor.run(label.clone(), chunks.clone(), texts);
            let outcome = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, run)
                    .await
                    .unwrap_or_else(|_| BatchOutcome::failed(&label, &chunks, TIME_LIMIT_REASON)),
                None => run.await,
            };
            (outcome, amount, bound, started.elapsed().as_secs_f64())
        }
    }

    /// Books a settled batch: frees what it held, keeps what it found, reports progress.
    fn settle(
        &self,
        outcome: BatchOutcome,
        amount: Amount,
        bound: u64,
        dispatch: &mut Dispatch,
        result: &mut QueryResult,
    ) {
        let books = &mut dispatch.books;
        let total = dispatch.total;
        books.committed = books.committed.minus(amount);
        books.evidence_in_flight -= bound;
        books.evidence_known += outcome
            .extractions
            .iter()
            .map(|(chunk, extraction)| findings_bytes(chunk, extraction))
            .sum::<u64>();
        books.done += 1;
        let failed_whole = outcome.extractions.is_empty() && !outcome.chunk_failures.is_empty();
        let found_before = !dispatch.extractions.is_empty();
        if !found_before && books.stopped.is_none() && books.done < total {
            let reason = outcome
                .chunk_failures
                .first()
                .filter(|_| failed_whole)
                .map(|failure| failure.reason.as_str());
            note_failure(books, reason);
        }
        dispatch.extractions.extend(outcome.extractions);
        result.batches_failed.extend(outcome.failures);
        result.chunk_failures.extend(outcome.chunk_failures);
        let spent = self.ledgers.extract.total();
        self.emit(&QueryEvent::BatchDone {
            done: books.done,
            total,
            findings: dispatch
                .extractions
                .iter()
                .map(|(_, e)| e.findings.len())
                .sum(),
            in_flight: books.dispatched - books.done,
            failed_chunks: result.chunk_failures.len(),
            tokens: spent.usage.total(),
            cost_usd: spent.cost_usd,
            unpriced_calls: spent.unpriced_calls,
        });
    }
}

/// Counts a batch that failed whole (`reason`) while nothing was found: the third failing the
/// same way stops the others.
fn note_failure(books: &mut Books, reason: Option<&str>) {
    books.same_failure = match (books.same_failure.take(), reason) {
        (None, Some(reason)) if books.done == 1 => Some((failure_kind(reason), 1)),
        (Some((kind, count)), Some(reason)) if kind == failure_kind(reason) => {
            Some((kind, count + 1))
        }
        // A batch that found something, or failed otherwise: not one cause.
        _ => None,
    };
    if let (Some((_, count)), Some(reason)) = (&books.same_failure, reason)
        && *count >= SYSTEMATIC_FAILURE_BATCHES
    {
        books.stopped = Some(format!(
            "the first {count} batches all failed the same way ({reason})"
        ));
    }
}

/// A failure's reason without its digits: chunk ids, counts and sizes do not make two
/// failures different.
fn failure_kind(reason: &str) -> String {
    reason.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// Bytes an extraction adds to the findings the report is written from (an upper bound of
/// its rendering).
fn findings_bytes(chunk: &SelectedChunk, extraction: &ChunkExtraction) -> u64 {
    let texts = extraction
        .findings
        .iter()
        .chain(&extraction.follow_up)
        .chain(&extraction.summary)
        .map(|text| text.len() as u64 + 16)
        .sum::<u64>();
    findings_bound(0, chunk.source().len() as u64, 0) + texts + 160
}

/// Reads the batches' chunk texts ahead of their calls, in the batches' order, on a blocking
/// thread of its own, and hands each batch over as soon as it is read: the first call goes out
/// after one batch's read, not a round's, and the rest are read while the first calls are out.
/// At most `ahead` batches wait in the channel. A batch that cannot be read fails alone.
/// Dropping the receiver stops the reader.
pub(super) fn read_ahead(
    corpus: &Arc<Corpus>,
    batches: &[Batch],
    ahead: usize,
) -> tokio::sync::mpsc::Receiver<std::result::Result<Vec<String>, String>> {
    let (sender, receiver) = tokio::sync::mpsc::channel(ahead.max(1));
    let corpus = Arc::clone(corpus);
    let ids: Vec<Vec<i64>> = batches
        .iter()
        .map(|(_, chunks)| chunks.iter().map(|chunk| chunk.id).collect())
        .collect();
    tokio::task::spawn_blocking(move || {
        for batch in ids {
            let read = corpus.texts(&batch).map_err(|err| err.to_string());
            if sender.blocking_send(read).is_err() {
                return;
            }
        }
    });
    receiver
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::store_with;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn texts_are_read_ahead_in_batch_order_and_a_bad_batch_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(String, String)> = (0..11)
            .map(|n| (format!("f{n:02}.txt"), format!("text of file {n}\n")))
            .collect();
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .collect();
        let corpus = Arc::new(Corpus::new(store_with(dir.path(), &borrowed), None));
        let all = corpus.buffers(&[], None).unwrap();
        let mut chunks = corpus.scan(&all).unwrap().chunks;
        assert_eq!(chunks.len(), 11);
        // Batches of 1, 2, 3 and 5 chunks, at most 2 read ahead; the third batch asks for a
        // chunk that does not exist.
        let mut missing = chunks[3].clone();
        missing.id = 1_000_000;
        chunks.insert(4, missing);
        let mut batches = Vec::new();
        let mut rest = chunks.as_slice();
        for size in [1, 2, 3, 6] {
            let (batch, tail) = rest.split_at(size);
            batches.push((batches.len().to_string(), batch.to_vec()));
            rest = tail;
        }
        let mut receiver = read_ahead(&corpus, &batches, 2);
        for (index, (_, batch)) in batches.iter().enumerate() {
            let read = receiver.recv().await.unwrap();
            if index == 2 {
                let err = read.unwrap_err();
                assert!(err.contains("1000000"), "{err}");
                continue;
            }
            let texts = read.unwrap();
            let expected: Vec<String> = batch
                .iter()
                .map(|chunk| {
                    let n: usize = chunk.buffer[1..3].parse().unwrap();
                    format!("text of file {n}\n")
                })
                .collect();
            assert_eq!(texts, expected, "batch {index}");
        }
        assert!(receiver.recv().await.is_none(), "one read per batch");
    }
}
