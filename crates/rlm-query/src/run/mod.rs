//! One query as it runs: [`QueryRun`] holds what the stages share (the client, the store, the
//! ledgers, the log, the clock), and each stage is a method in a file of its own — `plan.rs`,
//! `select.rs` (search or scan, and the estimate), `extract.rs` (the concurrent dispatch
//! loop), `synthesize.rs` (collect, report, citations) — run in order by [`QueryRun::stages`].
//!
//! A run that stops before its result (an error, or its future dropped on Ctrl-C or SIGTERM)
//! still closes its log: a `query_result` record with status `failed` (and the error) or
//! `interrupted`, so no log reads as a query still going.

mod clock;
mod extract;
mod plan;
mod select;
mod synthesize;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rlm_llm::{Ledger, LlmClient, Price};
use rlm_store::BufferInfo;
use serde::Serialize;

use crate::budget::{
    Amount, batch_amount, describe_limit, findings_bound, fits, synthesis_reserve,
};
use crate::error::{Error, Result};
use crate::events::{QueryEvent, QueryEvents};
use crate::options::{QueryOptions, ScanMode};
use crate::pipeline::{Query, QueryResult, QueryStatus, StageUsage, Timings, ToolUsage};
use crate::prompts::QueryPrompts;
use crate::select::{Corpus, check_selection};
use crate::trace::{QueryLog, error_chain};

use self::select::EarlyScan;

/// The ledgers of one query: the root under the client's, with one child per stage, so every
/// call reserves against the query's budget and the per-stage usage is what each child spent.
struct Ledgers {
    root: Arc<Ledger>,
    plan: Arc<Ledger>,
    extract: Arc<Ledger>,
    synthesize: Arc<Ledger>,
}

/// What the stages of one query share.
pub(crate) struct QueryRun {
    client: LlmClient,
    corpus: Arc<Corpus>,
    options: QueryOptions,
    prompts: QueryPrompts,
    events: Option<Arc<dyn QueryEvents>>,
    question: String,
    started: Instant,
    /// When the extraction stops sending and its calls end (see `clock.rs`).
    deadline: Option<tokio::time::Instant>,
    /// When the report's calls end: `--timeout` from the start (`None` without one).
    report_deadline: Option<tokio::time::Instant>,
    /// What the extractors found so far, kept for the closing record of a query stopped
    /// before its result (SIGTERM, Ctrl-C).
    found: Vec<(
        crate::select::SelectedChunk,
        crate::extract::ChunkExtraction,
    )>,
    log: Arc<QueryLog>,
    ledgers: Ledgers,
    /// Every buffer of the store, for the planner.
    all_buffers: Vec<BufferInfo>,
    /// The buffers `--buffer`/`--path` chose.
    selected_buffers: Vec<BufferInfo>,
    semantic: bool,
    synthesis_price: Option<Price>,
    extract_price: Option<Price>,
    /// Tool rounds the report writer gets (0 when its model has no native tools).
    tool_rounds: u32,
    /// A budget limits the query (tokens, dollars or calls).
    limited: bool,
    timings: Timings,
    /// Set once the closing record is written.
    closed: bool,
    /// Extractor batches sent at once ([`QueryRun::fan_out`]), known before the first.
    at_once: usize,
    /// The requests the sub-call model's server answers at once, when it says (llama.cpp's
    /// `total_slots`): more sent wait in its queue, so the time limit counts rounds of these.
    server_slots: Option<usize>,
}

impl QueryRun {
    /// Checks the question, the options, the store and the budget, and opens the log; nothing
    /// is spent yet. Also returns the scan read beside the plan call, when there is one.
    pub(crate) async fn prepare(query: Query, question: &str) -> Result<(Self, Option<EarlyScan>)> {
        let started = Instant::now();
        let Query {
            client,
            store,
            embedder,
            options,
            prompts,
            events,
            log_dir,
        } = query;
        let question = question.trim().to_owned();
        if question.is_empty() {
            return Err(Error::EmptyQuestion);
        }
        options.validate()?;
        let store_dir = store.dir().to_owned();
        let corpus = Arc::new(Corpus::new(store, embedder));
        let listing = select::list(&corpus, &options).await?;
        let synthesis_price = client.price(&options.model);
        let extract_price = client.price(&options.subcall_model);
        if options.budget.max_cost_usd.is_some() {
            for (model, price) in [
                (&options.model, &synthesis_price),
                (&options.subcall_model, &extract_price),
            ] {
                if price.is_none() {
                    return Err(Error::UnknownPrice(model.clone()));
                }
            }
        }
        let tool_rounds = if client
            .capabilities(&options.model)
            .is_ok_and(|capabilities| capabilities.tools)
        {
            options.max_tool_rounds
        } else {
            0
        };
        let limited = options.budget.max_cost_usd.is_some()
            || options.budget.max_tokens.is_some()
            || options.budget.max_calls.is_some();
        let root = Ledger::child(client.ledger(), options.budget);
        let ledgers = Ledgers {
            plan: Ledger::child(&root, rlm_llm::Budget::default()),
            extract: Ledger::child(&root, rlm_llm::Budget::default()),
            synthesize: Ledger::child(&root, rlm_llm::Budget::default()),
            root,
        };
        let run_id = rlm_trace::new_run_id();
        let log = Arc::new(QueryLog::create(log_dir.as_deref(), &run_id)?);
        let run = Self {
            deadline: options
                .timeout
                .map(|timeout| clock::at(started, clock::extraction_share(timeout))),
            report_deadline: options.timeout.map(|timeout| clock::at(started, timeout)),
            found: Vec::new(),
            client,
            corpus,
            prompts,
            events,
            question,
            started,
            log,
            ledgers,
            all_buffers: listing.all,
            selected_buffers: listing.selected,
            semantic: listing.semantic,
            synthesis_price,
            extract_price,
            tool_rounds,
            limited,
            timings: Timings::default(),
            closed: false,
            at_once: options.max_concurrency,
            server_slots: None,
            options,
        };
        run.check_first_budget()?;
        run.log.write(&rlm_trace::QueryMetadata {
            run_id,
            question: run.question.clone(),
            model: run.options.model.clone(),
            subcall_model: run.options.subcall_model.clone(),
            store: store_dir,
            options: options_record(&run.options),
        });
        let early_scan = run.start_early_scan(listing.scanned);
        Ok((run, early_scan))
    }

    /// Runs the stages in order; every way out before the result closes the log (see the
    /// module docs).
    pub(crate) async fn run(mut self, early_scan: Option<EarlyScan>) -> Result<QueryResult> {
        let outcome = self.stages(early_scan).await;
        if let Err(err) = &outcome {
            self.close("failed", Some(error_chain(err)));
        }
        let result = outcome?;
        // What is left (the store's connection, the HTTP pool) is let go on the blocking pool
        // rather than before the caller gets the result.
        tokio::task::spawn_blocking(move || drop(self));
        Ok(result)
    }

    async fn stages(&mut self, early_scan: Option<EarlyScan>) -> Result<QueryResult> {
        let planned = self.plan().await?;
        let planned_constrained = planned.constrained;
        let mut selection = self.select(&planned.plan, early_scan).await?;
        let batch_size = self.batch_size_within_window(&mut selection, planned.plan.batch_size);
        let batches = select::batches(&selection, batch_size);
        self.emit(&QueryEvent::Selected {
            selection: &selection,
            batches: batches.len(),
        });
        self.log_selection(&selection);
        let mut result = self.result(planned, &selection, batches.len());
        if selection.chunks.is_empty() {
            self.no_findings(
                &mut result,
                "No chunk of the selection matched the searches, so nothing was analysed."
                    .to_owned(),
            );
            return Ok(self.finish(result));
        }
        self.estimate(&selection, &batches)?;
        (self.at_once, self.server_slots) = self.fan_out().await;
        result.time_limit = Some(self.bound_extraction(batches.len()));
        let extractions = self.extract(batches, &mut result).await?;
        // After the calls: a model that refused its schema was answered in plain JSON mode.
        self.emit(&QueryEvent::StructuredOutput {
            plan: planned_constrained,
            extraction: self.client.constrains_output(&self.options.subcall_model),
        });
        if extractions.is_empty() {
            return Ok(self.finish(result));
        }
        self.synthesize(extractions, &mut result).await?;
        Ok(self.finish(result))
    }

    /// Before anything is spent: the plan, one average batch and the report's reserve must
    /// fit the budget.
    fn check_first_budget(&self) -> Result<()> {
        if !self.limited {
            return Ok(());
        }
        let options = &self.options;
        let chunks: u64 = self
            .selected_buffers
            .iter()
            .map(|buffer| buffer.chunks)
            .sum();
        let bytes: u64 = self
            .selected_buffers
            .iter()
            .map(|buffer| buffer.bytes)
            .sum();
        let per_batch = (options
            .batch_size
            .unwrap_or(crate::options::DEFAULT_BATCH_SIZE) as u64)
            .min(chunks)
            .max(1);
        let batch = batch_amount(
            bytes / chunks.max(1) * per_batch,
            per_batch as usize,
            self.extract_fixed_bytes(),
            options.extract_cap(per_batch as usize),
            self.extract_price.as_ref(),
        );
        let plan = self.plan_request().as_ref().map_or(
            Amount {
                cost_usd: Some(0.0),
                ..Amount::default()
            },
            |request| {
                let estimate = rlm_llm::Estimate::of(request, self.synthesis_price.as_ref());
                Amount {
                    tokens: estimate.tokens,
                    cost_usd: estimate.cost_usd,
                    calls: 1,
                }
            },
        );
        let needed = plan.plus(batch).plus(self.reserve_for(findings_bound(
            per_batch as usize,
            0,
            options.extract_cap(per_batch as usize),
        )));
        if fits(&options.budget, &rlm_llm::ModelTotals::default(), needed) {
            Ok(())
        } else {
            Err(Error::BudgetTooSmall {
                what: "the plan, one extractor batch and the report",
                needed: needed.describe(&options.budget),
                limit: describe_limit(&options.budget),
            })
        }
    }

    /// What the report (its reductions, the final call and its tool rounds) may cost at most
    /// for findings of `evidence_bytes`.
    fn reserve_for(&self, evidence_bytes: u64) -> Amount {
        synthesis_reserve(
            self.prompts.synthesize.len(),
            self.question.len(),
            evidence_bytes,
            self.options.synthesis_input_chars,
            self.options.synthesis_cap(),
            self.tool_rounds,
            self.synthesis_price.as_ref(),
        )
    }

    /// The plan's batch size, or fewer chunks per call when the models' window
    /// ([`QueryOptions::window_tokens`]) cannot hold that many of the selection's largest
    /// chunk; a smaller batch is noted in the selection.
    fn batch_size_within_window(
        &self,
        selection: &mut crate::select::Selection,
        planned: usize,
    ) -> usize {
        /// Tags and instructions around each chunk and each batch, as the estimate counts them.
        const CHUNK_FRAME_BYTES: u64 = 64;
        const BATCH_FRAME_BYTES: u64 = 256;
        let largest = selection
            .chunks
            .iter()
            .map(|chunk| chunk.bytes + chunk.buffer.len() as u64 + CHUNK_FRAME_BYTES)
            .max()
            .unwrap_or(0);
        let fixed = self.extract_fixed_bytes() as u64 + BATCH_FRAME_BYTES;
        let size = self
            .options
            .batch_size_within_window(planned, largest, fixed);
        if size < planned
            && let Some(window) = self.options.window_tokens
        {
            selection.notes.push(format!(
                "batches of {size} chunks, not {planned}: the model's window of {window} tokens \
                 holds no more"
            ));
        }
        size
    }

    /// Bytes every extractor request carries besides its chunks.
    fn extract_fixed_bytes(&self) -> usize {
        self.prompts.extract.len() + self.question.len()
    }

    /// A client for one stage: its ledger, and the deadline.
    fn stage_client(&self, ledger: &Arc<Ledger>) -> LlmClient {
        let client = self.client.with_ledger(Arc::clone(ledger));
        match self.deadline {
            Some(deadline) => client.with_deadline(deadline.into_std()),
            None => client,
        }
    }

    /// How many extractor batches go out at once: `max_concurrency`, at most what the sub-call
    /// model's provider takes at once; or, unless the caller chose `max_concurrency`
    /// ([`QueryOptions::concurrency_from_server`]), what the provider's server reported (a
    /// llama.cpp server with 32 slots gets 32). The server is asked here, once per process;
    /// the slots it reported come back too.
    async fn fan_out(&self) -> (usize, Option<usize>) {
        let options = &self.options;
        let Ok(model) = self.client.resolve(&options.subcall_model) else {
            return (options.max_concurrency.max(1), None);
        };
        let props = self.client.server_props(&options.subcall_model).await;
        let server_slots = props.and_then(|props| props.total_slots);
        let provider = self.client.concurrency(&model.provider);
        let at_once = match provider {
            Some(reported)
                if options.concurrency_from_server
                    && reported.source == rlm_llm::ConcurrencySource::Server =>
            {
                reported.limit
            }
            _ => self
                .client
                .max_concurrency(&model.provider)
                .unwrap_or(options.max_concurrency)
                .min(options.max_concurrency),
        };
        (at_once.max(1), server_slots)
    }

    /// Ends a query that has nothing to report: the result and the report say why, and what
    /// was searched.
    fn no_findings(&self, result: &mut QueryResult, why: String) {
        let searched = self.searched(result);
        let hint = match result.status {
            QueryStatus::ExtractionFailed => {
                "The reasons are in the trajectory; a larger model, `--batch-size 1` or `--max-output-tokens` may help."
            }
            _ if scans(&self.options) => "Try another question, or a wider `--path`.",
            _ => "Try other words, `--mode bm25`, or `--scan all` to read every chunk.",
        };
        result.report = format!("{why}\n\n{searched}\n\n{hint}\n");
        result.no_findings_reason = Some(why);
    }

    /// One sentence on what the query searched: the queries and mode, or the scan, over which
    /// buffers.
    fn searched(&self, result: &QueryResult) -> String {
        let buffers = if result.plan.buffers.is_empty() {
            format!(
                "{} buffer{}",
                self.selected_buffers.len(),
                if self.selected_buffers.len() == 1 {
                    ""
                } else {
                    "s"
                }
            )
        } else {
            result
                .plan
                .buffers
                .iter()
                .map(|name| format!("`{}`", crate::fence::name(name)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let how = match result.search_mode {
            Some(mode) => format!(
                "Searched {buffers} ({mode}, top {}) for: {}.",
                result.plan.top_k,
                result
                    .plan
                    .queries
                    .iter()
                    .map(|query| format!("\"{}\"", crate::fence::name(query)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => format!("Read every chunk of {buffers}."),
        };
        format!(
            "{how} {} of {} selected chunks analysed.",
            result.chunks_analyzed, result.chunks_selected
        )
    }

    fn emit(&self, event: &QueryEvent<'_>) {
        if let Some(events) = &self.events {
            events.event(event);
        }
    }

    /// The result as it stands after selection.
    fn result(
        &self,
        planned: plan::Planned,
        selection: &crate::select::Selection,
        batches: usize,
    ) -> QueryResult {
        QueryResult {
            run_id: self.log.run_id().to_owned(),
            status: QueryStatus::NoEvidence,
            report: String::new(),
            plan: planned.plan,
            plan_source: planned.source,
            fixed_by_caller: planned.fixed,
            scan: self.options.scan,
            search_mode: selection.mode,
            search_notes: selection.notes.clone(),
            chunks_selected: selection.chunks.len(),
            chunks_analyzed: 0,
            batches,
            batches_failed: Vec::new(),
            chunk_failures: Vec::new(),
            chunks_skipped: Vec::new(),
            stopped_early: None,
            no_findings_reason: None,
            time_limit: None,
            synthesis_reserve: None,
            findings: Vec::new(),
            reduce_calls: 0,
            tool_calls: Vec::new(),
            synthesis_error: None,
            citations_unknown: Vec::new(),
            usage: StageUsage::default(),
            timings: self.timings,
            log: self.log.path().map(PathBuf::from),
        }
    }

    /// Fills in usage and time and writes the closing record.
    fn finish(&mut self, mut result: QueryResult) -> QueryResult {
        result.usage = StageUsage {
            plan: self.ledgers.plan.report(),
            extract: self.ledgers.extract.report(),
            synthesize: self.ledgers.synthesize.report(),
            total: self.ledgers.root.report(),
            tools: ToolUsage {
                rounds: result.usage.tools.rounds,
                calls: result.tool_calls.len(),
                errors: result
                    .tool_calls
                    .iter()
                    .filter(|call| call.is_error)
                    .count(),
                output_bytes: result.tool_calls.iter().map(|call| call.output_bytes).sum(),
            },
        };
        result.timings.total = self.started.elapsed().as_secs_f64();
        self.closed = true;
        if self.log.path().is_none() {
            // The record copies every finding as JSON: built only when there is a log to write.
            return result;
        }
        self.log.write(&rlm_trace::QueryOutcome {
            run_id: result.run_id.clone(),
            status: result.status.name().to_owned(),
            report: result.report.clone(),
            chunks_selected: result.chunks_selected,
            chunks_analyzed: result.chunks_analyzed,
            batches_failed: values(&result.batches_failed),
            chunk_failures: values(&result.chunk_failures),
            chunks_skipped: values(&result.chunks_skipped),
            findings: values(&result.findings),
            citations_unknown: result.citations_unknown.clone(),
            error: None,
            usage: self.usage_by_stage(),
            seconds: result.timings.total,
        });
        result
    }

    /// Writes the closing record of a run that ended without its result.
    fn close(&mut self, status: &str, error: Option<String>) {
        if self.closed {
            return;
        }
        self.closed = true;
        if self.log.path().is_none() {
            return;
        }
        // What the extractors found is kept: a query stopped while writing its report (or
        // between batches) loses none of it.
        let found = std::mem::take(&mut self.found);
        let analyzed = found.len();
        let findings = crate::collect::collect(found, self.options.threshold);
        self.log.write(&rlm_trace::QueryOutcome {
            run_id: self.log.run_id().to_owned(),
            status: status.to_owned(),
            report: String::new(),
            chunks_selected: 0,
            chunks_analyzed: analyzed,
            batches_failed: Vec::new(),
            chunk_failures: Vec::new(),
            chunks_skipped: Vec::new(),
            findings: values(&findings),
            citations_unknown: Vec::new(),
            error,
            usage: self.usage_by_stage(),
            seconds: self.started.elapsed().as_secs_f64(),
        });
    }

    fn usage_by_stage(&self) -> std::collections::BTreeMap<String, rlm_llm::UsageReport> {
        [
            ("plan", &self.ledgers.plan),
            ("extract", &self.ledgers.extract),
            ("synthesize", &self.ledgers.synthesize),
            ("total", &self.ledgers.root),
        ]
        .into_iter()
        .map(|(stage, ledger)| (stage.to_owned(), ledger.report()))
        .collect()
    }
}

impl Drop for QueryRun {
    /// A run dropped before it closed its log was interrupted (Ctrl-C, SIGTERM, a caller that
    /// gave up): say so in the log.
    fn drop(&mut self) {
        self.close("interrupted", None);
    }
}

/// Serializable items as JSON values, for the log's untyped lists.
fn values<T: Serialize>(items: &[T]) -> Vec<serde_json::Value> {
    items
        .iter()
        .filter_map(|item| serde_json::to_value(item).ok())
        .collect()
}

/// The options as logged.
fn options_record(options: &QueryOptions) -> serde_json::Value {
    serde_json::json!({
        "mode": options.mode,
        "scan": options.scan,
        "top_k": options.top_k,
        "batch_size": options.batch_size,
        "buffers": options.buffers,
        "path_glob": options.path_glob,
        "max_concurrency": options.max_concurrency,
        "budget": options.budget,
        "timeout_seconds": options.timeout.map(|timeout| timeout.as_secs_f64()),
        "skip_plan": options.skip_plan,
        "threshold": options.threshold,
        "max_tool_rounds": options.max_tool_rounds,
        "window_tokens": options.window_tokens,
        "max_output_tokens": options.max_output_tokens,
    })
}

/// Whether the query reads every chunk of its buffers.
fn scans(options: &QueryOptions) -> bool {
    options.scan == ScanMode::All
}

/// Checks the buffers listed for a query: a store with none, or a selection that leaves none,
/// is refused.
fn check_listing(
    all: &[BufferInfo],
    selected: &[BufferInfo],
    options: &QueryOptions,
) -> Result<()> {
    check_selection(all, &[], None)?;
    check_selection(selected, &options.buffers, options.path_glob.as_deref())
}
