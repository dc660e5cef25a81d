//! Stages 5 and 6: collect the findings, then write the report — its citations checked
//! against what the query read.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use rlm_llm::ErrorKind;

use super::QueryRun;
use crate::collect::{collect, finding_count};
use crate::error::{Error, Result};
use crate::events::QueryEvent;
use crate::extract::ChunkExtraction;
use crate::pipeline::{QueryResult, QueryStatus};
use crate::select::SelectedChunk;
use crate::synthesize::{Coverage, Synthesizer, plain_report};
use crate::tools::SynthesisTools;
use crate::trace::error_chain;

impl QueryRun {
    /// Collects the extractions into findings and writes the report from them: with none
    /// relevant, the result says so; a failed report call leaves the plain findings.
    pub(super) async fn synthesize(
        &mut self,
        extractions: Vec<(SelectedChunk, ChunkExtraction)>,
        result: &mut QueryResult,
    ) -> Result<()> {
        // Every chunk an extractor read may be cited, relevant or not.
        let mut read: HashSet<i64> = extractions.iter().map(|(chunk, _)| chunk.id).collect();
        let findings = collect(extractions, self.options.threshold);
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
            let mut why = format!(
                "None of the {} analysed chunks holds anything relevant to the question at the chosen threshold.",
                result.chunks_analyzed
            );
            if let Some(note) = coverage.missing_note() {
                why.push(' ');
                why.push_str(&note);
            }
            self.no_findings(result, why);
            return Ok(());
        }
        let stage_started = Instant::now();
        self.emit(&QueryEvent::Synthesizing {
            chunks: findings.len(),
            findings: finding_count(&findings),
        });
        let synthesizer = self.synthesizer();
        let outcome = synthesizer.run(&findings, &coverage).await;
        if let Some((tools, _)) = &synthesizer.tools {
            result.tool_calls = tools.calls();
        }
        match outcome {
            Ok(synthesis) => {
                result.status = QueryStatus::Answered;
                read.extend(
                    result
                        .tool_calls
                        .iter()
                        .flat_map(|call| call.chunk_ids.iter().copied()),
                );
                result.report = synthesis.report;
                self.check_citations(result, &read);
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
        Ok(())
    }

    /// The report writer, with its tools over the query's buffers when its model has them.
    fn synthesizer(&self) -> Synthesizer {
        let client = self
            .client
            .with_ledger(Arc::clone(&self.ledgers.synthesize));
        Synthesizer {
            // `--timeout` bounds the report too: past it, the findings are returned as they are.
            client: match self.report_deadline {
                Some(deadline) => client.with_deadline(deadline.into_std()),
                None => client,
            },
            system: self.prompts.synthesize.clone(),
            model: self.options.model.clone(),
            question: self.question.clone(),
            input_chars: self.options.synthesis_input_within_window(
                (self.prompts.synthesize.len() + self.question.len()) as u64,
            ),
            max_tokens: self.options.synthesis_cap(),
            log: Arc::clone(&self.log),
            tools: (self.tool_rounds > 0).then(|| {
                let names = self
                    .selected_buffers
                    .iter()
                    .map(|buffer| buffer.name.clone())
                    .collect();
                (
                    Arc::new(SynthesisTools::new(
                        Arc::clone(&self.corpus),
                        names,
                        Arc::clone(&self.log),
                    )),
                    self.tool_rounds,
                )
            }),
        }
    }

    /// Marks the report's citations of chunks it never read (see [`crate::citations`]) and
    /// says so on stderr and at the report's end.
    fn check_citations(&self, result: &mut QueryResult, read: &HashSet<i64>) {
        let (report, unknown) = crate::citations::check_all(&result.report, read);
        result.report = report;
        if unknown.is_empty() {
            return;
        }
        let note = crate::citations::note(&unknown);
        self.emit(&QueryEvent::Warning {
            message: note.clone(),
        });
        if !result.report.ends_with('\n') {
            result.report.push('\n');
        }
        result.report.push_str(&format!("\n{note}\n"));
        // An id past i64 is in the report's mark and note only.
        result.citations_unknown = unknown
            .iter()
            .filter_map(|unknown| match unknown {
                crate::citations::Unknown::Id(id) => Some(*id),
                crate::citations::Unknown::Unparseable(_) => None,
            })
            .collect();
    }
}
