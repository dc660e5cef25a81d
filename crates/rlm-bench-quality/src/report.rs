//! What `rlm bench-quality` prints: a line per task as it ends (or, with `--dry-run`, as it is
//! generated) and a summary; JSON Lines with `--json` (`"type": "task"` and `"summary"`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use rlm_engine::{RunResult, Status};
use rlm_llm::ModelTotals;

use crate::cli::Mode;
use crate::kind_name;
use crate::tasks::{Task, TaskSpec};
use rlm_app::text::{neutralize, usd};

/// Characters of an answer shown on a task's line.
const ANSWER_CHARS_SHOWN: usize = 40;

/// How one task's run ended.
#[derive(Debug)]
pub struct Outcome {
    /// `None` when the run could not start.
    pub status: Option<Status>,
    pub answer: Option<String>,
    /// Why there is no answer: the model's error, the limit that stopped the run, or why the
    /// run could not start.
    pub error: Option<String>,
    pub usage: ModelTotals,
    pub iterations: u32,
    pub run_id: Option<String>,
    pub log: Option<PathBuf>,
    pub seconds: f64,
}

impl Outcome {
    pub fn of(result: Result<RunResult, rlm_engine::Error>, elapsed: Duration) -> Self {
        match result {
            Ok(result) => {
                let outcome = result.outcome;
                let error = match (&outcome.answer, outcome.error) {
                    (Some(_), _) => None,
                    (None, Some(error)) => Some(error),
                    (None, None) => Some(outcome.status.to_string()),
                };
                Self {
                    status: Some(outcome.status),
                    answer: outcome.answer,
                    error,
                    usage: outcome.usage.total,
                    iterations: outcome.iterations,
                    run_id: Some(outcome.run_id),
                    log: result.trajectory,
                    seconds: elapsed.as_secs_f64(),
                }
            }
            Err(error) => Self {
                status: None,
                answer: None,
                error: Some(format!("{:#}", anyhow::Error::new(error))),
                usage: ModelTotals::default(),
                iterations: 0,
                run_id: None,
                log: None,
                seconds: elapsed.as_secs_f64(),
            },
        }
    }
}

/// A finished task as the summary needs it.
#[derive(Debug)]
struct Scored {
    mode: Mode,
    kind: &'static str,
    score: f64,
    failed: bool,
    usage: ModelTotals,
    seconds: f64,
}

/// Prints tasks and the summary, and keeps the scores for it.
#[derive(Debug)]
pub struct Printer {
    json: bool,
    seed: u64,
    haystack: String,
    model: Option<String>,
    scored: Vec<Scored>,
    header_printed: bool,
}

impl Printer {
    pub fn new(json: bool, seed: u64, haystack: String) -> Self {
        Self {
            json,
            seed,
            haystack,
            model: None,
            scored: Vec::new(),
            header_printed: false,
        }
    }

    pub fn set_model(&mut self, model: String) {
        self.model = Some(model);
    }

    /// Tasks whose run gave no answer.
    pub fn failed(&self) -> usize {
        self.scored.iter().filter(|task| task.failed).count()
    }

    /// Prints the table's header before its first row.
    fn header_once(
        &mut self,
        out: &mut impl std::io::Write,
        header: impl FnOnce() -> String,
    ) -> std::io::Result<()> {
        if self.header_printed {
            return Ok(());
        }
        self.header_printed = true;
        writeln!(out, "{}", header())
    }

    /// A generated task, for `--dry-run`.
    pub fn listed(&mut self, index: usize, task: &Task) -> anyhow::Result<()> {
        if self.json {
            return crate::output::print_json(&BenchRecord::Task {
                task: TaskFields::of(index, task),
                result: None,
            });
        }
        let mut out = crate::output::stdout();
        self.header_once(&mut out, || {
            format!(
                "{:>4}  {:<6}  {:>5}  {:<9}  {:>9}  {:>7}  question",
                "task", "kind", "size", "where", "chars", "truth"
            )
        })?;
        writeln!(
            out,
            "{index:>4}  {:<6}  {:>5}  {:<9}  {:>9}  {:>7}  {}",
            kind_name(task.spec.kind),
            size_name(task.spec.size),
            place(task),
            task.context.chars().count(),
            task.truth.to_string(),
            task.question
        )?;
        out.flush()?;
        Ok(())
    }

    /// A task whose run ended: scored, printed, kept for the summary.
    pub fn finished(
        &mut self,
        index: usize,
        task: &Task,
        mode: Mode,
        outcome: Outcome,
    ) -> anyhow::Result<()> {
        let mut outcome = outcome;
        let answered = given_answer(&outcome).is_some();
        if !answered
            && outcome.error.is_none()
            && let Some(given) = &outcome.answer
        {
            outcome.error = Some(format!(
                "not an answer ({}): {}",
                if echoes_context_hint(given) {
                    "it repeats the prompt's context description".to_owned()
                } else {
                    outcome
                        .status
                        .map_or_else(|| "no status".to_owned(), |status| status.to_string())
                },
                shown_answer(given)
            ));
        }
        let answer = outcome.answer.as_deref().filter(|_| answered);
        let score = answer.map_or(0.0, |answer| task.truth.score(answer));
        let failed = answer.is_none();
        self.scored.push(Scored {
            mode,
            kind: kind_name(task.spec.kind),
            score,
            failed,
            usage: outcome.usage.clone(),
            seconds: outcome.seconds,
        });
        if self.json {
            let usage = &outcome.usage;
            let result = TaskResult {
                mode: mode.name(),
                answer: outcome.answer.as_deref(),
                score,
                failed,
                status: outcome.status,
                error: outcome.error.as_deref(),
                iterations: outcome.iterations,
                input_tokens: usage.usage.input_tokens,
                output_tokens: usage.usage.output_tokens,
                cache_read_tokens: usage.usage.cache_read_tokens,
                cache_write_tokens: usage.usage.cache_write_tokens,
                cost_usd: usage.cost_usd,
                cost_is_partial: usage.cost_is_partial(),
                seconds: outcome.seconds,
                run_id: outcome.run_id.as_deref(),
                log: outcome.log.as_deref(),
            };
            return crate::output::print_json(&BenchRecord::Task {
                task: TaskFields::of(index, task),
                result: Some(result),
            });
        }
        let mut out = crate::output::stdout();
        self.header_once(&mut out, || {
            format!(
                "{:>4}  {:<6}  {:<5}  {:>5}  {:<9}  {:>5}  {:>19}  {:>9}  {:>7}  result",
                "task", "kind", "mode", "size", "where", "score", "tokens in / out", "cost", "time"
            )
        })?;
        let result = match (answer, &outcome.error) {
            (Some(answer), _) => format!(
                "answer {} (truth {}){}",
                shown_answer(answer),
                task.truth,
                match outcome.status {
                    Some(Status::ForcedAnswer) => ", given only when the turns ran out",
                    Some(Status::NoEvidence) => ", given before any code looked at the data",
                    _ => "",
                }
            ),
            (None, error) => format!(
                "failed: {}",
                neutralize(error.as_deref().unwrap_or("no answer")).replace('\n', " ")
            ),
        };
        writeln!(
            out,
            "{index:>4}  {:<6}  {:<5}  {:>5}  {:<9}  {score:>5.3}  {:>19}  {:>9}  {:>6.1}s  {result}",
            kind_name(task.spec.kind),
            mode.name(),
            size_name(task.spec.size),
            place(task),
            tokens(&outcome.usage),
            cost(&outcome.usage),
            outcome.seconds,
        )?;
        out.flush()?;
        Ok(())
    }

    /// The mean score and the totals of the tasks that ran; with more than one `--mode`, each
    /// mode's too (a line each).
    pub fn summary(&self, interrupted: bool) -> anyhow::Result<()> {
        let all = Totals::of(self.scored.iter());
        let mut modes: Vec<Mode> = self.scored.iter().map(|task| task.mode).collect();
        modes.sort_unstable();
        modes.dedup();
        // In `Mode`'s order: the loop, then the plain call.
        let by_mode: Vec<(&str, Totals)> = modes
            .iter()
            .map(|mode| {
                let tasks = self.scored.iter().filter(|task| task.mode == *mode);
                (mode.name(), Totals::of(tasks))
            })
            .collect();
        if self.json {
            return crate::output::print_json(&BenchRecord::Summary {
                tasks: all.tasks,
                failed: all.failed,
                mean_score: all.mean_score,
                by_kind: all.by_kind.clone(),
                input_tokens: all.usage.usage.input_tokens,
                output_tokens: all.usage.usage.output_tokens,
                cache_read_tokens: all.usage.usage.cache_read_tokens,
                cost_usd: all.usage.cost_usd,
                cost_is_partial: all.usage.cost_is_partial(),
                seconds: all.seconds,
                by_mode: by_mode
                    .iter()
                    .map(|(mode, totals)| (*mode, totals.json()))
                    .collect(),
                model: self.model.as_deref(),
                seed: self.seed,
                haystack: &self.haystack,
                interrupted,
            });
        }
        let mut out = crate::output::stdout();
        if by_mode.len() > 1 {
            for (mode, totals) in &by_mode {
                writeln!(out, "{mode:<5}  {}", totals.line())?;
            }
        } else {
            writeln!(out, "{}", all.line())?;
        }
        out.flush()?;
        Ok(())
    }
}

/// Scores and totals of some finished tasks.
#[derive(Debug, Default)]
struct Totals {
    tasks: usize,
    failed: usize,
    mean_score: Option<f64>,
    by_kind: BTreeMap<&'static str, KindScore>,
    usage: ModelTotals,
    seconds: f64,
}

impl Totals {
    fn of<'a>(scored: impl Iterator<Item = &'a Scored>) -> Self {
        let mut totals = Self::default();
        let mut sum = 0.0;
        let mut by_kind: BTreeMap<&'static str, (usize, f64)> = BTreeMap::new();
        for task in scored {
            add(&mut totals.usage, &task.usage);
            totals.seconds += task.seconds;
            totals.tasks += 1;
            totals.failed += usize::from(task.failed);
            sum += task.score;
            let entry = by_kind.entry(task.kind).or_default();
            entry.0 += 1;
            entry.1 += task.score;
        }
        let mean = |count: usize, sum: f64| (count > 0).then(|| sum / count as f64);
        totals.mean_score = mean(totals.tasks, sum);
        totals.by_kind = by_kind
            .into_iter()
            .map(|(kind, (count, sum))| {
                let score = KindScore {
                    tasks: count,
                    mean_score: mean(count, sum),
                };
                (kind, score)
            })
            .collect();
        totals
    }

    /// `mean score 0.781 over 2 tasks · count 0.562 (1), needle 1.000 (1) · tokens … · $… · 3.1s`
    fn line(&self) -> String {
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(kind, score)| {
                format!(
                    "{kind} {:.3} ({})",
                    score.mean_score.unwrap_or(0.0),
                    score.tasks
                )
            })
            .collect();
        format!(
            "mean score {} over {}{} · {} · tokens {} · {} · {:.1}s",
            self.mean_score
                .map_or("-".to_owned(), |mean| format!("{mean:.3}")),
            rlm_app::text::count(self.tasks as u64, "task"),
            match self.failed {
                0 => String::new(),
                failed => format!(" ({failed} failed)"),
            },
            if kinds.is_empty() {
                "no tasks ran".to_owned()
            } else {
                kinds.join(", ")
            },
            tokens(&self.usage),
            cost(&self.usage),
            self.seconds,
        )
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "tasks": self.tasks,
            "failed": self.failed,
            "mean_score": self.mean_score,
            "by_kind": self.by_kind,
            "input_tokens": self.usage.usage.input_tokens,
            "output_tokens": self.usage.usage.output_tokens,
            "cost_usd": self.usage.cost_usd,
            "cost_is_partial": self.usage.cost_is_partial(),
            "seconds": self.seconds,
        })
    }
}

/// The answer to score: one the run gave (answered, or forced at the iteration limit) that is
/// not the prompt's context description repeated back. Anything else scores 0: a number
/// inside a non-answer is not the model's count.
fn given_answer(outcome: &Outcome) -> Option<&str> {
    let answered = outcome.status.is_some_and(Status::is_answered);
    outcome
        .answer
        .as_deref()
        .filter(|answer| answered && !echoes_context_hint(answer))
}

/// Whether `answer` repeats the hint block the prompt describes the context with
/// (`[Context available in context_0: plain text, 2,000 chars, …]`); small models do.
fn echoes_context_hint(answer: &str) -> bool {
    answer.contains("[Context available in ")
}

/// What `rlm bench-quality --json` prints: a record per task (generated, with `--dry-run`;
/// else as it ends, with its result), then a summary.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BenchRecord<'a> {
    Task {
        #[serde(flatten)]
        task: TaskFields<'a>,
        #[serde(flatten)]
        result: Option<TaskResult<'a>>,
    },
    /// The mean score and the totals of the tasks that ran.
    Summary {
        tasks: usize,
        failed: usize,
        mean_score: Option<f64>,
        by_kind: BTreeMap<&'a str, KindScore>,
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cost_usd: f64,
        cost_is_partial: bool,
        seconds: f64,
        /// Each `--mode`'s tasks, mean score, tokens and time.
        by_mode: BTreeMap<&'a str, serde_json::Value>,
        model: Option<&'a str>,
        seed: u64,
        haystack: &'a str,
        interrupted: bool,
    },
}

/// A task as generated: what it asks and the truth it is scored against.
#[derive(serde::Serialize)]
struct TaskFields<'a> {
    index: usize,
    kind: &'static str,
    size: usize,
    context_chars: usize,
    depth_percent: Option<u8>,
    label: Option<&'a str>,
    repetition: u32,
    question: &'a str,
    truth: serde_json::Value,
}

impl<'a> TaskFields<'a> {
    fn of(index: usize, task: &'a Task) -> Self {
        Self {
            index,
            kind: kind_name(task.spec.kind),
            size: task.spec.size,
            context_chars: task.context.chars().count(),
            depth_percent: task.spec.depth,
            label: task.label,
            repetition: task.spec.repetition,
            question: &task.question,
            truth: task.truth.to_json(),
        }
    }
}

/// How a task's run ended and what it cost.
#[derive(serde::Serialize)]
struct TaskResult<'a> {
    mode: &'static str,
    answer: Option<&'a str>,
    score: f64,
    failed: bool,
    status: Option<Status>,
    error: Option<&'a str>,
    iterations: u32,
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
    cache_write_tokens: u64,
    cost_usd: f64,
    cost_is_partial: bool,
    seconds: f64,
    run_id: Option<&'a str>,
    log: Option<&'a std::path::Path>,
}

/// One kind's tasks and mean score.
#[derive(Debug, Clone, serde::Serialize)]
struct KindScore {
    tasks: usize,
    mean_score: Option<f64>,
}

/// A task's size and where it looks: `64k needle at 50%`, `8k count of "billing"`.
pub fn describe(spec: &TaskSpec, label: Option<&str>) -> String {
    match (spec.depth, label) {
        (Some(depth), _) => format!("{} at {depth}%", size_name(spec.size)),
        (None, Some(label)) => format!("{} label {label}", size_name(spec.size)),
        (None, None) => size_name(spec.size),
    }
}

/// The depth of a needle or the label counted.
fn place(task: &Task) -> String {
    match (task.spec.depth, task.label) {
        (Some(depth), _) => format!("{depth}%"),
        (None, Some(label)) => label.to_owned(),
        (None, None) => "-".to_owned(),
    }
}

/// `8k`, `1m`, or the number of characters when it is not a round one.
pub fn size_name(size: usize) -> String {
    if size.is_multiple_of(1_000_000) {
        format!("{}m", size / 1_000_000)
    } else if size.is_multiple_of(1_000) {
        format!("{}k", size / 1_000)
    } else {
        size.to_string()
    }
}

fn tokens(usage: &ModelTotals) -> String {
    format!(
        "{} / {}",
        rlm_context::thousands(usage.usage.input_tokens),
        rlm_context::thousands(usage.usage.output_tokens)
    )
}

fn cost(usage: &ModelTotals) -> String {
    if usage.cost_is_partial() && usage.cost_usd <= 0.0 {
        "unknown".to_owned()
    } else if usage.cost_is_partial() {
        format!("≥{}", usd(usage.cost_usd))
    } else {
        usd(usage.cost_usd)
    }
}

/// An answer on one line, quoted, shortened, with control characters shown as escapes.
fn shown_answer(answer: &str) -> String {
    let flat = answer.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut shown: String = flat.chars().take(ANSWER_CHARS_SHOWN).collect();
    if flat.chars().count() > ANSWER_CHARS_SHOWN {
        shown.push('…');
    }
    format!("{:?}", neutralize(&shown))
}

/// Adds one task's usage to the bench's.
fn add(total: &mut ModelTotals, usage: &ModelTotals) {
    total.calls += usage.calls;
    total.failures += usage.failures;
    total.usage.add(&usage.usage);
    total.latency += usage.latency;
    total.retries += usage.retries;
    total.cost_usd += usage.cost_usd;
    total.unpriced_calls += usage.unpriced_calls;
    total.estimated_calls += usage.estimated_calls;
}
