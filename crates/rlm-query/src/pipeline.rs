//! The pipeline: plan → select → extract (concurrent batches) → collect → synthesize.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rlm_embed::Embedder;
use rlm_llm::{ChatRequest, ErrorKind, Ledger, LlmClient, UsageReport};
use rlm_store::{SearchMode, Store};
use serde::Serialize;

use crate::budget::{
    Amount, batch_amount, describe_limit, findings_bound, fits, synthesis_reserve,
};
use crate::collect::{ChunkFindings, collect, finding_count};
use crate::error::{Error, Result};
use crate::events::{QueryEvent, QueryEvents};
use crate::extract::{
    BatchFailure, BatchOutcome, ChunkExtraction, ChunkFailure, Extractor, estimate,
};
use crate::options::{QueryOptions, ScanMode};
use crate::plan::{Plan, PlanSource, describe_store, parse_plan};
use crate::prompts::QueryPrompts;
use crate::select::{Corpus, SelectedChunk, Selection, check_selection};
use crate::synthesize::{Coverage, Synthesizer, plain_report};
use crate::tools::{SynthesisTools, ToolCallSummary};
use crate::trace::{QueryLog, error_chain};

/// Output tokens the planner may use.
const PLAN_MAX_TOKENS: u32 = 1_024;

/// How a query ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QueryStatus {
    /// The report was written from the findings.
    Answered,
    /// No chunk was found, or none of those analysed was relevant.
    NoEvidence,
    /// Every batch failed; nothing was analysed.
    ExtractionFailed,
    /// The findings are there but the report call failed; the report lists the findings.
    SynthesisFailed,
}

impl QueryStatus {
    /// The name written to logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::NoEvidence => "no_evidence",
            Self::ExtractionFailed => "extraction_failed",
            Self::SynthesisFailed => "synthesis_failed",
        }
    }
}

/// Usage of each stage; every call is counted, failed and repeated ones included.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageUsage {
    /// The planner call.
    pub plan: UsageReport,
    /// Every extractor call.
    pub extract: UsageReport,
    /// Group reductions and the report, every model call of its tool rounds included.
    pub synthesize: UsageReport,
    /// All of them.
    pub total: UsageReport,
    /// The report's tool calls.
    pub tools: ToolUsage,
}

/// What the report's writer did with its tools.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ToolUsage {
    /// Rounds of tool calls run.
    pub rounds: u32,
    /// Tool calls answered.
    pub calls: usize,
    /// Of those, the ones answered with an error.
    pub errors: usize,
    /// Bytes of tool results sent to the model.
    pub output_bytes: usize,
}

/// At most this many selected chunks are listed in the log's search record (the count is
/// always there).
const LOGGED_SELECTION: usize = 10_000;

/// Wall time of each stage, in seconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Timings {
    pub plan: f64,
    pub search: f64,
    pub extract: f64,
    pub synthesize: f64,
    pub total: f64,
}

/// Everything a query produced.
#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    /// Query id, also in the log's file name.
    pub run_id: String,
    /// How it ended.
    pub status: QueryStatus,
    /// The Markdown report.
    pub report: String,
    /// The plan that ran (after the caller's options).
    pub plan: Plan,
    /// Where the plan came from.
    pub plan_source: PlanSource,
    /// Plan fields the caller's options replaced.
    pub fixed_by_caller: Vec<&'static str>,
    /// `search` or `all`.
    pub scan: ScanMode,
    /// The search mode that found the chunks (`None` for a scan).
    pub search_mode: Option<SearchMode>,
    /// Search notices and fallbacks.
    pub search_notes: Vec<String>,
    /// Chunks chosen for analysis.
    pub chunks_selected: usize,
    /// Chunks an extractor reported on.
    pub chunks_analyzed: usize,
    /// Extractor batches (before any split).
    pub batches: usize,
    /// Batches whose reply was rejected or whose call failed.
    pub batches_failed: Vec<BatchFailure>,
    /// Chunks left without a report.
    pub chunk_failures: Vec<ChunkFailure>,
    /// Chunks never sent to an extractor because the budget had to keep room for the report
    /// (reason `budget`).
    pub chunks_skipped: Vec<ChunkFailure>,
    /// What the budget kept for the report before extraction (`None` without a budget).
    pub synthesis_reserve: Option<ReserveReport>,
    /// The findings the report was written from.
    pub findings: Vec<ChunkFindings>,
    /// Group reductions before the report (0 when the findings fit one call).
    pub reduce_calls: usize,
    /// The report writer's tool calls, in order.
    pub tool_calls: Vec<ToolCallSummary>,
    /// The synthesis error, for `synthesis_failed`.
    pub synthesis_error: Option<String>,
    /// Chunk ids the report cites that were neither analysed nor read by its tools (marked
    /// `(not read)` in the report).
    pub citations_unknown: Vec<i64>,
    /// Usage per stage.
    pub usage: StageUsage,
    /// Time per stage.
    pub timings: Timings,
    /// The trajectory log, when written.
    pub log: Option<PathBuf>,
}

/// The reserve kept for the report, as estimated when the last batch was sent.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ReserveReport {
    /// Tokens at most.
    pub tokens: u64,
    /// Dollars at most, when the price is known.
    pub cost_usd: Option<f64>,
    /// Model calls (the group reductions when the findings need them, the report and its
    /// tool rounds).
    pub calls: u64,
}

/// A query over a store, ready to run.
pub struct Query {
    client: LlmClient,
    store: Store,
    embedder: Option<Box<dyn Embedder>>,
    options: QueryOptions,
    prompts: QueryPrompts,
    events: Option<Arc<dyn QueryEvents>>,
    log_dir: Option<PathBuf>,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("options", &self.options)
            .field("log_dir", &self.log_dir)
            .finish_non_exhaustive()
    }
}

impl Query {
    /// A query with the built-in prompts, no events and no log.
    pub fn new(client: LlmClient, store: Store, options: QueryOptions) -> Self {
        Self {
            client,
            store,
            embedder: None,
            options,
            prompts: QueryPrompts::default(),
            events: None,
            log_dir: None,
        }
    }

    /// The model the store's vectors were made with (semantic and hybrid search need it).
    pub fn embedder(mut self, embedder: Option<Box<dyn Embedder>>) -> Self {
        self.embedder = embedder;
        self
    }

    /// Prompts to use instead of the built-in ones.
    pub fn prompts(mut self, prompts: QueryPrompts) -> Self {
        self.prompts = prompts;
        self
    }

    /// Where progress goes.
    pub fn events(mut self, events: Arc<dyn QueryEvents>) -> Self {
        self.events = Some(events);
        self
    }

    /// Writes the trajectory to `dir/query_<time>_<id>.jsonl`.
    pub fn log_dir(mut self, dir: PathBuf) -> Self {
        self.log_dir = Some(dir);
        self
    }

    /// Runs the query. Errors are reserved for what stops it before there is anything to
    /// report (bad options, an empty store, a missing key); failed batches are in the result.
    ///
    /// Cancel safety: dropping the future cancels the calls in flight; the log keeps every
    /// record written so far.
    pub async fn run(self, question: &str) -> Result<QueryResult> {
        let started = Instant::now();
        let Self {
            client,
            store,
            embedder,
            options,
            prompts,
            events,
            log_dir,
        } = self;
        let emit = |event: &QueryEvent<'_>| {
            if let Some(events) = &events {
                events.event(event);
            }
        };
        let question = question.trim().to_owned();
        if question.is_empty() {
            return Err(Error::EmptyQuestion);
        }
        options.validate()?;
        let store_dir = store.dir().to_owned();
        let corpus = Arc::new(Corpus::new(store, embedder));

        let names = options.buffers.clone();
        let glob = options.path_glob.clone();
        // A scan that no plan can redirect is read in the same pass as the buffers, not after
        // another trip to the blocking pool.
        let scan_now = options.scan == ScanMode::All && options.skip_plan;
        let (all_buffers, selected_buffers, semantic, scanned) = blocking(&corpus, move |corpus| {
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
            Ok((all, selected, corpus.semantic_available()?, scanned))
        })
        .await?;
        check_selection(&all_buffers, &[], None)?;
        check_selection(
            &selected_buffers,
            &options.buffers,
            options.path_glob.as_deref(),
        )?;

        // What the budget must cover, known before anything is spent.
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
        let extract_fixed_bytes = prompts.extract.len() + question.len();
        let reserve_for = |evidence_bytes: u64| {
            synthesis_reserve(
                prompts.synthesize.len(),
                question.len(),
                evidence_bytes,
                options.synthesis_input_chars,
                options.synthesis_max_tokens,
                tool_rounds,
                synthesis_price.as_ref(),
            )
        };
        let planner_request = (!options.skip_plan).then(|| {
            plan_request(
                &prompts.plan,
                &options,
                &question,
                &describe_store(&all_buffers, semantic),
            )
        });
        if limited {
            let chunks: u64 = selected_buffers.iter().map(|buffer| buffer.chunks).sum();
            let bytes: u64 = selected_buffers.iter().map(|buffer| buffer.bytes).sum();
            let per_batch = (options
                .batch_size
                .unwrap_or(crate::options::DEFAULT_BATCH_SIZE) as u64)
                .min(chunks)
                .max(1);
            let batch = batch_amount(
                bytes / chunks.max(1) * per_batch,
                per_batch as usize,
                extract_fixed_bytes,
                options.extract_max_tokens,
                extract_price.as_ref(),
            );
            let plan = planner_request.as_ref().map_or(
                Amount {
                    cost_usd: Some(0.0),
                    ..Amount::default()
                },
                |request| {
                    let estimate = rlm_llm::Estimate::of(request, synthesis_price.as_ref());
                    Amount {
                        tokens: estimate.tokens,
                        cost_usd: estimate.cost_usd,
                        calls: 1,
                    }
                },
            );
            let needed = plan.plus(batch).plus(reserve_for(findings_bound(
                per_batch as usize,
                0,
                options.extract_max_tokens,
            )));
            if !fits(&options.budget, &rlm_llm::ModelTotals::default(), needed) {
                return Err(Error::BudgetTooSmall {
                    what: "the plan, one extractor batch and the report",
                    needed: needed.describe(&options.budget),
                    limit: describe_limit(&options.budget),
                });
            }
        }

        let run_id = rlm_trace::new_run_id();
        let log = Arc::new(QueryLog::create(log_dir.as_deref(), &run_id)?);
        log.write(&rlm_trace::QueryMetadata {
            run_id: run_id.clone(),
            question: question.clone(),
            model: options.model.clone(),
            subcall_model: options.subcall_model.clone(),
            store: store_dir,
            options: options_record(&options),
        });

        let root = Ledger::child(client.ledger(), options.budget);
        let stage_client = |ledger: &Arc<Ledger>| {
            let client = client.with_ledger(Arc::clone(ledger));
            match options.timeout {
                Some(timeout) => client.with_deadline(started + timeout),
                None => client,
            }
        };
        let plan_ledger = Ledger::child(&root, rlm_llm::Budget::default());
        let extract_ledger = Ledger::child(&root, rlm_llm::Budget::default());
        let synthesize_ledger = Ledger::child(&root, rlm_llm::Budget::default());
        let deadline = options
            .timeout
            .map(|timeout| tokio::time::Instant::from_std(started + timeout));
        let mut timings = Timings::default();

        // A scan of the buffers chosen before planning reads beside the plan call: the plan
        // keeps them or narrows them (then its buffers' chunks are kept from this read).
        let mut early_scan = scanned.map(EarlyScan::Read);
        if early_scan.is_none() && options.scan == ScanMode::All {
            let corpus = Arc::clone(&corpus);
            let buffers = selected_buffers.clone();
            early_scan = Some(EarlyScan::Reading(tokio::task::spawn_blocking(move || {
                let scan_started = Instant::now();
                Ok((corpus.scan(&buffers)?, scan_started.elapsed()))
            })));
        }

        // 1. Plan.
        let stage_started = Instant::now();
        let fallback = Plan::default_for(&question, semantic);
        let (mut plan, plan_source) = if let Some(request) = planner_request {
            let client = stage_client(&plan_ledger);
            let call = client.chat(&request);
            let result = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, call)
                    .await
                    .unwrap_or_else(|_| {
                        Err(rlm_llm::Error::DeadlineExceeded {
                            model: options.model.clone(),
                        })
                    }),
                None => call.await,
            };
            log.call(
                "plan",
                None,
                1,
                &[],
                &request,
                &result,
                stage_started.elapsed(),
            );
            match result {
                Ok(response) => match parse_plan(&response.text, &all_buffers, &fallback) {
                    Ok((plan, notes)) => (plan, PlanSource::Model { notes }),
                    Err(reason) => (fallback, PlanSource::Fallback { reason }),
                },
                Err(err) if err.kind() == ErrorKind::Input => {
                    return Err(Error::Model {
                        stage: "plan",
                        source: err,
                    });
                }
                Err(err) => (
                    fallback,
                    PlanSource::Fallback {
                        reason: format!("the plan call failed: {}", error_chain(&err)),
                    },
                ),
            }
        } else {
            (fallback, PlanSource::Skipped)
        };
        let fixed = plan.apply_options(&options);
        timings.plan = stage_started.elapsed().as_secs_f64();
        emit(&QueryEvent::Planned {
            plan: &plan,
            source: &plan_source,
            fixed: &fixed,
        });
        log.write(&rlm_trace::QueryStage {
            run_id: run_id.clone(),
            stage: "plan".to_owned(),
            seconds: timings.plan,
            detail: serde_json::json!({ "plan": plan, "source": plan_source, "fixed_by_caller": fixed }),
        });

        // 2. Select.
        let stage_started = Instant::now();
        let selection: Selection = if let Some(early) = early_scan {
            // A scan (`early_scan` is set exactly when one runs) has read the buffers chosen
            // before the plan. The plan can only narrow them: flags win over it, and with no
            // `--buffer` every buffer under the glob was chosen. Its buffers' chunks are among
            // those read, in the same order.
            let (mut selection, took) = early.selection().await?;
            timings.search = took.as_secs_f64();
            if plan.buffers != options.buffers {
                let names = plan.buffers.clone();
                let glob = options.path_glob.clone();
                let kept: std::collections::HashSet<String> = blocking(&corpus, move |corpus| {
                    corpus.buffers(&names, glob.as_deref())
                })
                .await?
                .into_iter()
                .map(|buffer| buffer.name)
                .collect();
                selection
                    .chunks
                    .retain(|chunk| kept.contains(&chunk.buffer));
                timings.search += stage_started.elapsed().as_secs_f64();
            }
            selection
        } else {
            let plan = plan.clone();
            let glob = options.path_glob.clone();
            let question = question.clone();
            let selection = blocking(&corpus, move |corpus| {
                corpus.search(&plan, glob.as_deref(), &question)
            })
            .await?;
            timings.search = stage_started.elapsed().as_secs_f64();
            selection
        };
        let batch_size = plan.batch_size.max(1);
        let batches: Vec<(String, Vec<SelectedChunk>)> = selection
            .chunks
            .chunks(batch_size)
            .enumerate()
            .map(|(index, chunks)| (index.to_string(), chunks.to_vec()))
            .collect();
        emit(&QueryEvent::Selected {
            selection: &selection,
            batches: batches.len(),
        });
        if log.path().is_some() {
            // A scan can select millions of chunks: the log lists the first ones and the count
            // (built only when there is a log to write).
            let listed = &selection.chunks[..selection.chunks.len().min(LOGGED_SELECTION)];
            log.write(&rlm_trace::QueryStage {
                run_id: run_id.clone(),
                stage: "search".to_owned(),
                seconds: timings.search,
                detail: serde_json::json!({
                    "scan": options.scan,
                    "mode": selection.mode,
                    "notes": selection.notes,
                    "selected": selection.chunks.len(),
                    "chunk_ids": listed.iter().map(|chunk| chunk.id).collect::<Vec<_>>(),
                    "hits": listed,
                }),
            });
        }

        let mut result = QueryResult {
            run_id: run_id.clone(),
            status: QueryStatus::NoEvidence,
            report: String::new(),
            plan,
            plan_source,
            fixed_by_caller: fixed,
            scan: options.scan,
            search_mode: selection.mode,
            search_notes: selection.notes.clone(),
            chunks_selected: selection.chunks.len(),
            chunks_analyzed: 0,
            batches: batches.len(),
            batches_failed: Vec::new(),
            chunk_failures: Vec::new(),
            chunks_skipped: Vec::new(),
            synthesis_reserve: None,
            findings: Vec::new(),
            reduce_calls: 0,
            tool_calls: Vec::new(),
            synthesis_error: None,
            citations_unknown: Vec::new(),
            usage: StageUsage::default(),
            timings,
            log: log.path().map(PathBuf::from),
        };
        if selection.chunks.is_empty() {
            result.report = "No chunk of the selection matched the searches, so nothing was analysed. Try other words, `--mode bm25`, or `--scan all` to read every chunk.\n".to_owned();
            return Ok(finish(
                result,
                &log,
                &[&plan_ledger, &extract_ledger, &synthesize_ledger],
                &root,
                started,
            ));
        }

        // 3. Estimate, and refuse a scan the money budget cannot cover.
        let price = client.price(&options.subcall_model);
        let (calls, tokens, cost) = estimate(
            &selection.chunks,
            batch_size,
            &prompts,
            &question,
            options.extract_max_tokens,
            price.as_ref(),
        );
        emit(&QueryEvent::Estimate {
            calls,
            chunks: selection.chunks.len(),
            tokens,
            cost_usd: cost,
        });
        let source_bytes = |chunks: &[SelectedChunk]| -> u64 {
            chunks.iter().map(|chunk| chunk.source().len() as u64).sum()
        };
        if options.scan == ScanMode::All
            && let Some(limit) = options.budget.max_cost_usd
        {
            let evidence: u64 = batches
                .iter()
                .map(|(_, chunks)| {
                    findings_bound(
                        chunks.len(),
                        source_bytes(chunks),
                        options.extract_max_tokens,
                    )
                })
                .sum();
            let reserve = reserve_for(evidence).cost_usd;
            match cost.zip(reserve) {
                None => return Err(Error::UnknownPrice(options.subcall_model.clone())),
                Some((extraction, reserve)) if extraction + reserve > limit => {
                    let estimate = extraction + reserve;
                    return Err(Error::OverBudget {
                        chunks: selection.chunks.len(),
                        calls,
                        estimate,
                        limit,
                    });
                }
                Some(_) => {}
            }
        }

        // 4. Extract.
        let stage_started = Instant::now();
        let input_error: Arc<Mutex<Option<rlm_llm::Error>>> = Arc::default();
        let extractor = Extractor {
            client: stage_client(&extract_ledger),
            system: prompts.extract.clone(),
            question: question.clone(),
            model: options.subcall_model.clone(),
            max_tokens: options.extract_max_tokens,
            log: Arc::clone(&log),
            input_error: Arc::clone(&input_error),
        };
        let total = batches.len();
        let mut texts = read_ahead(&corpus, &batches, options.max_concurrency);
        let run_batch = |label: String,
                         chunks: Vec<SelectedChunk>,
                         texts: std::result::Result<Vec<String>, String>,
                         amount: Amount,
                         bound: u64| {
            let extractor = extractor.clone();
            async move {
                let run = extractor.run(label.clone(), chunks.clone(), texts);
                let outcome =
                    match deadline {
                        Some(deadline) => tokio::time::timeout_at(deadline, run)
                            .await
                            .unwrap_or_else(|_| {
                                BatchOutcome::failed(&label, &chunks, "the time limit was reached")
                            }),
                        None => run.await,
                    };
                (outcome, amount, bound)
            }
        };
        // Batches go out while they fit the budget beside those in flight and the reserve for
        // the report; one that does not fit waits for a batch in flight to settle (its real
        // spend is usually far below its estimate) and the rest are skipped when none is left.
        let mut pending = batches.into_iter().peekable();
        // Each batch is a task of its own, so both runtime threads build requests and read
        // replies when a round's answers arrive together; dropping the set (the run's future)
        // aborts the calls in flight.
        let mut in_flight = tokio::task::JoinSet::new();
        let mut committed = Amount {
            cost_usd: Some(0.0),
            ..Amount::default()
        };
        let mut evidence_in_flight = 0u64;
        let mut evidence_known = 0u64;
        let mut dispatched = 0;
        let mut reserve = None;
        let mut extractions: Vec<(SelectedChunk, ChunkExtraction)> = Vec::new();
        let mut done = 0;
        loop {
            while in_flight.len() < options.max_concurrency {
                let Some((_, chunks)) = pending.peek() else {
                    break;
                };
                let bytes: u64 = chunks.iter().map(|chunk| chunk.bytes).sum();
                let amount = batch_amount(
                    bytes + source_bytes(chunks),
                    chunks.len(),
                    extract_fixed_bytes,
                    options.extract_max_tokens,
                    extract_price.as_ref(),
                );
                let bound = findings_bound(
                    chunks.len(),
                    source_bytes(chunks),
                    options.extract_max_tokens,
                );
                if limited {
                    let held = reserve_for(evidence_known + evidence_in_flight + bound);
                    if !fits(
                        &options.budget,
                        &root.total(),
                        committed.plus(amount).plus(held),
                    ) {
                        if dispatched == 0 && in_flight.is_empty() {
                            return Err(Error::BudgetTooSmall {
                                what: "one extractor batch and the report after the plan",
                                needed: amount.plus(held).describe(&options.budget),
                                limit: describe_limit(&options.budget),
                            });
                        }
                        break;
                    }
                    reserve = Some(held);
                }
                let Some((label, chunks)) = pending.next() else {
                    break;
                };
                // The reader sends the batches' texts in the batches' order.
                let read = texts
                    .recv()
                    .await
                    .unwrap_or_else(|| Err("the chunk reader stopped".to_owned()));
                committed = committed.plus(amount);
                evidence_in_flight += bound;
                dispatched += 1;
                in_flight.spawn(run_batch(label, chunks, read, amount, bound));
            }
            let Some(joined) = in_flight.join_next().await else {
                break;
            };
            let (outcome, amount, bound) = match joined {
                Ok(settled) => settled,
                Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
                // Only a runtime shutting down cancels a batch: the set is never aborted while
                // it is awaited.
                Err(err) => return Err(Error::Task(err.to_string())),
            };
            committed = committed.minus(amount);
            evidence_in_flight -= bound;
            evidence_known += outcome
                .extractions
                .iter()
                .map(|(chunk, extraction)| findings_bytes(chunk, extraction))
                .sum::<u64>();
            done += 1;
            extractions.extend(outcome.extractions);
            result.batches_failed.extend(outcome.failures);
            result.chunk_failures.extend(outcome.chunk_failures);
            let spent = extract_ledger.total();
            emit(&QueryEvent::BatchDone {
                done,
                total,
                findings: extractions.iter().map(|(_, e)| e.findings.len()).sum(),
                failed_chunks: result.chunk_failures.len(),
                tokens: spent.usage.total(),
                cost_usd: spent.cost_usd,
            });
        }
        result.chunks_skipped = pending
            .flat_map(|(_, chunks)| chunks)
            .map(|chunk| ChunkFailure {
                chunk_id: chunk.id,
                reason: "budget".to_owned(),
            })
            .collect();
        result.synthesis_reserve = reserve.map(|held| ReserveReport {
            tokens: held.tokens,
            cost_usd: held.cost_usd,
            calls: held.calls,
        });
        result.timings.extract = stage_started.elapsed().as_secs_f64();
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
            let reason = result
                .chunk_failures
                .first()
                .map_or("unknown", |failure| failure.reason.as_str());
            result.status = QueryStatus::ExtractionFailed;
            result.report = format!(
                "No chunk could be analysed: all {} batches failed (first reason: {reason}).\n",
                result.batches
            );
            return Ok(finish(
                result,
                &log,
                &[&plan_ledger, &extract_ledger, &synthesize_ledger],
                &root,
                started,
            ));
        }

        // 5. Collect.
        let mut read_ids: std::collections::HashSet<i64> =
            extractions.iter().map(|(chunk, _)| chunk.id).collect();
        let findings = collect(extractions, options.threshold);
        let coverage = Coverage {
            selected: result.chunks_selected,
            analyzed: result.chunks_analyzed,
            missing: result
                .chunks_selected
                .saturating_sub(result.chunks_analyzed),
            skipped_for_budget: result.chunks_skipped.len(),
            relevant: findings.len(),
        };
        if findings.is_empty() {
            result.report = format!(
                "None of the {} analysed chunks holds anything relevant to the question at the chosen threshold.\n",
                result.chunks_analyzed
            );
            if let Some(note) = coverage.missing_note() {
                result.report.push_str(&format!("\n{note}\n"));
            }
            return Ok(finish(
                result,
                &log,
                &[&plan_ledger, &extract_ledger, &synthesize_ledger],
                &root,
                started,
            ));
        }

        // 6. Synthesize.
        let stage_started = Instant::now();
        emit(&QueryEvent::Synthesizing {
            chunks: findings.len(),
            findings: finding_count(&findings),
        });
        let synthesizer = Synthesizer {
            client: client.with_ledger(Arc::clone(&synthesize_ledger)),
            system: prompts.synthesize.clone(),
            model: options.model.clone(),
            question: question.clone(),
            input_chars: options.synthesis_input_chars,
            max_tokens: options.synthesis_max_tokens,
            log: Arc::clone(&log),
            tools: (tool_rounds > 0).then(|| {
                let names = selected_buffers
                    .iter()
                    .map(|buffer| buffer.name.clone())
                    .collect();
                (
                    Arc::new(SynthesisTools::new(
                        Arc::clone(&corpus),
                        names,
                        Arc::clone(&log),
                    )),
                    tool_rounds,
                )
            }),
        };
        let outcome = synthesizer.run(&findings, &coverage).await;
        if let Some((tools, _)) = &synthesizer.tools {
            result.tool_calls = tools.calls();
        }
        match outcome {
            Ok(synthesis) => {
                result.status = QueryStatus::Answered;
                read_ids.extend(
                    result
                        .tool_calls
                        .iter()
                        .flat_map(|call| call.chunk_ids.iter().copied()),
                );
                let (report, unknown) = crate::citations::check(&synthesis.report, &read_ids);
                result.report = report;
                if !unknown.is_empty() {
                    let note = crate::citations::note(&unknown);
                    emit(&QueryEvent::Warning {
                        message: note.clone(),
                    });
                    if !result.report.ends_with('\n') {
                        result.report.push('\n');
                    }
                    result.report.push_str(&format!("\n{note}\n"));
                    result.citations_unknown = unknown;
                }
                result.reduce_calls = synthesis.reduce_calls;
                result.usage.tools.rounds = synthesis.tool_rounds;
            }
            Err(err) if err.kind() == ErrorKind::Input => {
                return Err(Error::Model {
                    stage: "synthesize",
                    source: err,
                });
            }
            Err(err) => {
                let message = error_chain(&err);
                result.status = QueryStatus::SynthesisFailed;
                result.report = plain_report(&findings, &message, &coverage);
                result.synthesis_error = Some(message);
            }
        }
        result.timings.synthesize = stage_started.elapsed().as_secs_f64();
        result.findings = findings;
        let done = finish(
            result,
            &log,
            &[&plan_ledger, &extract_ledger, &synthesize_ledger],
            &root,
            started,
        );
        // The report is ready: what is left (the store's connection, the chunk list, the HTTP
        // pool) is let go on the blocking pool rather than before the caller gets the result.
        let leftovers = (corpus, selection, client, synthesizer, texts);
        tokio::task::spawn_blocking(move || drop(leftovers));
        Ok(done)
    }
}

/// Fills in usage and time and writes the closing record.
fn finish(
    mut result: QueryResult,
    log: &QueryLog,
    stages: &[&Arc<Ledger>; 3],
    root: &Arc<Ledger>,
    started: Instant,
) -> QueryResult {
    result.usage = StageUsage {
        plan: stages[0].report(),
        extract: stages[1].report(),
        synthesize: stages[2].report(),
        total: root.report(),
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
    result.timings.total = started.elapsed().as_secs_f64();
    if log.path().is_none() {
        // The record copies every finding as JSON: built only when there is a log to write.
        return result;
    }
    let usage = [
        ("plan", &result.usage.plan),
        ("extract", &result.usage.extract),
        ("synthesize", &result.usage.synthesize),
        ("total", &result.usage.total),
    ]
    .into_iter()
    .map(|(stage, report)| (stage.to_owned(), report.clone()))
    .collect();
    log.write(&rlm_trace::QueryOutcome {
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
        usage,
        seconds: result.timings.total,
    });
    result
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

/// Serializable items as JSON values, for the log's untyped lists.
fn values<T: Serialize>(items: &[T]) -> Vec<serde_json::Value> {
    items
        .iter()
        .filter_map(|item| serde_json::to_value(item).ok())
        .collect()
}

/// Reads the batches' chunk texts ahead of their calls, in the batches' order, on a blocking
/// thread of its own, and hands each batch over as soon as it is read: the first call goes out
/// after one batch's read, not a round's, and the rest are read while the first calls are out.
/// At most `ahead` batches wait in the channel. A batch that cannot be read fails alone.
/// Dropping the receiver stops the reader.
fn read_ahead(
    corpus: &Arc<Corpus>,
    batches: &[(String, Vec<SelectedChunk>)],
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

/// The scan of the buffers chosen before planning, started before the plan is known.
enum EarlyScan {
    /// Read in the listing's pass (no plan runs).
    Read((Selection, std::time::Duration)),
    /// Being read on the blocking pool while the plan call is out.
    Reading(tokio::task::JoinHandle<Result<(Selection, std::time::Duration)>>),
}

impl EarlyScan {
    /// The chunks and how long reading them took.
    async fn selection(self) -> Result<(Selection, std::time::Duration)> {
        match self {
            Self::Read(read) => Ok(read),
            Self::Reading(handle) => handle.await.map_err(|err| Error::Task(err.to_string()))?,
        }
    }
}

/// Runs store work on the blocking pool.
async fn blocking<T: Send + 'static>(
    corpus: &Arc<Corpus>,
    work: impl FnOnce(&Corpus) -> Result<T> + Send + 'static,
) -> Result<T> {
    let corpus = Arc::clone(corpus);
    tokio::task::spawn_blocking(move || work(&corpus))
        .await
        .map_err(|err| Error::Task(err.to_string()))?
}

/// The planner's request: the question, the store, and what the caller already fixed.
fn plan_request(system: &str, options: &QueryOptions, question: &str, store: &str) -> ChatRequest {
    let mut fixed = Vec::new();
    if let Some(mode) = options.mode {
        fixed.push(format!("mode {mode}"));
    }
    if let Some(top_k) = options.top_k {
        fixed.push(format!("top_k {top_k}"));
    }
    if let Some(batch_size) = options.batch_size {
        fixed.push(format!("batch_size {batch_size}"));
    }
    if !options.buffers.is_empty() {
        let names: Vec<String> = options
            .buffers
            .iter()
            .map(|name| crate::fence::name(name))
            .collect();
        fixed.push(format!("buffers {}", names.join(", ")));
    }
    let mut user = format!(
        "<question>\n{}\n</question>\n\nThe store:\n{store}",
        crate::fence::neutralize(question)
    );
    if !fixed.is_empty() {
        user.push_str(&format!(
            "\nThe user already fixed: {} (these override your choice).\n",
            fixed.join("; ")
        ));
    }
    ChatRequest::new(options.model.clone())
        .system(system)
        .user(user)
        .json(true)
        .temperature(0.0)
        .max_tokens(PLAN_MAX_TOKENS)
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
    })
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
