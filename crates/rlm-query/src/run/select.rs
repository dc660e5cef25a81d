//! Stage 2: the chunks to analyse (the plan's searches, or a scan of every chunk), then the
//! estimate of what extracting them costs, which a `--scan all` under `--max-cost` must fit.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rlm_store::BufferInfo;

use super::{QueryRun, check_listing, scans};
use crate::budget::findings_bound;
use crate::error::{Error, Result};
use crate::events::QueryEvent;
use crate::extract::estimate;
use crate::options::QueryOptions;
use crate::plan::Plan;
use crate::select::{Corpus, SelectedChunk, Selection};

/// At most this many selected chunks are listed in the log's search record (the count is
/// always there).
const LOGGED_SELECTION: usize = 10_000;

/// One extractor batch: its label (`"3"`, or `"3.1"` once split) and chunks.
pub(super) type Batch = (String, Vec<SelectedChunk>);

/// The store's buffers as a query sees them, listed before anything is spent.
pub(super) struct Listing {
    pub(super) all: Vec<BufferInfo>,
    pub(super) selected: Vec<BufferInfo>,
    pub(super) semantic: bool,
    /// The scan, when no plan can redirect it (read in the listing's pass).
    pub(super) scanned: Option<(Selection, Duration)>,
}

/// Lists the buffers (and the chosen ones), and reads a scan no plan can redirect in the same
/// pass rather than after another trip to the blocking pool.
pub(super) async fn list(corpus: &Arc<Corpus>, options: &QueryOptions) -> Result<Listing> {
    let names = options.buffers.clone();
    let glob = options.path_glob.clone();
    let scan_now = scans(options) && options.skip_plan;
    let listing = blocking(corpus, move |corpus| {
        let all = corpus.buffers(&[], None)?;
        // Without names or a glob the selection is every buffer: listed once.
        let selected = if names.is_empty() && glob.is_none() {
            all.clone()
        } else {
            corpus.buffers(&names, glob.as_deref())?
        };
        let scanned = if scan_now {
            let scan_started = Instant::now();
            Some((corpus.scan(&selected)?, scan_started.elapsed()))
        } else {
            None
        };
        let semantic = corpus.semantic_available()?;
        Ok(Listing {
            all,
            selected,
            semantic,
            scanned,
        })
    })
    .await?;
    check_listing(&listing.all, &listing.selected, options)?;
    Ok(listing)
}

/// The selection's chunks cut into batches of `batch_size`.
pub(super) fn batches(selection: &Selection, batch_size: usize) -> Vec<Batch> {
    selection
        .chunks
        .chunks(batch_size.max(1))
        .enumerate()
        .map(|(index, chunks)| (index.to_string(), chunks.to_vec()))
        .collect()
}

impl QueryRun {
    /// With `--scan all`, the scan of the buffers chosen before planning starts now and reads
    /// beside the plan call: the plan keeps or narrows them (then its buffers' chunks are kept
    /// from this read).
    pub(super) fn start_early_scan(
        &self,
        scanned: Option<(Selection, Duration)>,
    ) -> Option<EarlyScan> {
        if let Some(read) = scanned {
            return Some(EarlyScan::Read(read));
        }
        if !scans(&self.options) {
            return None;
        }
        let corpus = Arc::clone(&self.corpus);
        let buffers = self.selected_buffers.clone();
        Some(EarlyScan::Reading(tokio::task::spawn_blocking(move || {
            let scan_started = Instant::now();
            Ok((corpus.scan(&buffers)?, scan_started.elapsed()))
        })))
    }

    /// The chunks to analyse: the early scan narrowed to the plan's buffers, or the plan's
    /// searches merged rank by rank.
    pub(super) async fn select(
        &mut self,
        plan: &Plan,
        early_scan: Option<EarlyScan>,
    ) -> Result<Selection> {
        let stage_started = Instant::now();
        let Some(early) = early_scan else {
            let plan = plan.clone();
            let glob = self.options.path_glob.clone();
            let question = self.question.clone();
            let selection = blocking(&self.corpus, move |corpus| {
                corpus.search(&plan, glob.as_deref(), &question)
            })
            .await?;
            self.timings.search = stage_started.elapsed().as_secs_f64();
            return Ok(selection);
        };
        // A scan (`early_scan` is set exactly when one runs) has read the buffers chosen before
        // the plan. The plan can only narrow them: flags win over it, and with no `--buffer`
        // every buffer under the glob was chosen. Its buffers' chunks are among those read, in
        // the same order.
        let (mut selection, took) = early.selection().await?;
        self.timings.search = took.as_secs_f64();
        if plan.buffers != self.options.buffers {
            let names = plan.buffers.clone();
            let glob = self.options.path_glob.clone();
            let kept: HashSet<String> = blocking(&self.corpus, move |corpus| {
                corpus.buffers(&names, glob.as_deref())
            })
            .await?
            .into_iter()
            .map(|buffer| buffer.name)
            .collect();
            selection
                .chunks
                .retain(|chunk| kept.contains(&chunk.buffer));
            self.timings.search += stage_started.elapsed().as_secs_f64();
        }
        Ok(selection)
    }

    /// The log's `search` record: the first chunks and the count (a scan can select millions;
    /// built only when there is a log to write).
    pub(super) fn log_selection(&self, selection: &Selection) {
        if self.log.path().is_none() {
            return;
        }
        let listed = &selection.chunks[..selection.chunks.len().min(LOGGED_SELECTION)];
        self.log.write(&rlm_trace::QueryStage {
            run_id: self.log.run_id().to_owned(),
            stage: "search".to_owned(),
            seconds: self.timings.search,
            detail: serde_json::json!({
                "scan": self.options.scan,
                "mode": selection.mode,
                "notes": selection.notes,
                "selected": selection.chunks.len(),
                "chunk_ids": listed.iter().map(|chunk| chunk.id).collect::<Vec<_>>(),
                "hits": listed,
            }),
        });
    }

    /// Stage 3: says what extraction will cost at most, and refuses a scan the money budget
    /// cannot cover (extraction plus the report's reserve).
    pub(super) fn estimate(&self, selection: &Selection, batches: &[Batch]) -> Result<()> {
        let options = &self.options;
        let batch_size = batches.first().map_or(1, |(_, chunks)| chunks.len());
        let (calls, tokens, cost) = estimate(
            &selection.chunks,
            batch_size,
            &self.prompts,
            &self.question,
            options.output_cap(options.extract_max_tokens),
            self.extract_price.as_ref(),
        );
        self.emit(&QueryEvent::Estimate {
            calls,
            chunks: selection.chunks.len(),
            tokens,
            cost_usd: cost,
        });
        let Some(limit) = options.budget.max_cost_usd.filter(|_| scans(options)) else {
            return Ok(());
        };
        let evidence: u64 = batches
            .iter()
            .map(|(_, chunks)| {
                findings_bound(
                    chunks.len(),
                    source_bytes(chunks),
                    options.extract_cap(chunks.len()),
                )
            })
            .sum();
        let reserve = self.reserve_for(evidence).cost_usd;
        match cost.zip(reserve) {
            None => Err(Error::UnknownPrice(options.subcall_model.clone())),
            Some((extraction, reserve)) if extraction + reserve > limit => Err(Error::OverBudget {
                chunks: selection.chunks.len(),
                calls,
                estimate: extraction + reserve,
                limit,
            }),
            Some(_) => Ok(()),
        }
    }
}

/// Bytes the chunks' `buffer:first-last` sources add to a prompt.
pub(super) fn source_bytes(chunks: &[SelectedChunk]) -> u64 {
    chunks.iter().map(|chunk| chunk.source().len() as u64).sum()
}

/// The scan of the buffers chosen before planning, started before the plan is known.
pub(crate) enum EarlyScan {
    /// Read in the listing's pass (no plan runs).
    Read((Selection, Duration)),
    /// Being read on the blocking pool while the plan call is out.
    Reading(tokio::task::JoinHandle<Result<(Selection, Duration)>>),
}

impl EarlyScan {
    /// The chunks and how long reading them took.
    async fn selection(self) -> Result<(Selection, Duration)> {
        match self {
            Self::Read(read) => Ok(read),
            Self::Reading(handle) => handle.await.map_err(|err| Error::Task(err.to_string()))?,
        }
    }
}

/// Runs store work on the blocking pool.
pub(super) async fn blocking<T: Send + 'static>(
    corpus: &Arc<Corpus>,
    work: impl FnOnce(&Corpus) -> Result<T> + Send + 'static,
) -> Result<T> {
    let corpus = Arc::clone(corpus);
    tokio::task::spawn_blocking(move || work(&corpus))
        .await
        .map_err(|err| Error::Task(err.to_string()))?
}
