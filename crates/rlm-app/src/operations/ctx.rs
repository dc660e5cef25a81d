//! `ctx …`: evidence assembly over a ctx directory, thin over [`rlm_assemble::Ctx`].

use std::path::{Path, PathBuf};

use rlm_assemble::{AddOptions, Ctx, FocusOptions, InitOptions, PlanReport};
use serde::Serialize;

use crate::error::AppError;
use crate::requests::{CtxAction, CtxBuildOptions, CtxRequest, OnOff};
use crate::settings::{Sources, catalog};
use crate::{Context, Outcome};

/// What `rlm ctx plan|budget|assemble --json` prints: one record with the plan.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlanRecord {
    /// The prompt's plan.
    Ctx {
        /// `plan`, `budget` or `assemble`.
        command: String,
        /// Parts in order with their tokens and status, the totals, the digest and the stale
        /// parts.
        #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
        plan: rlm_assemble::Plan,
        /// Files written (`assemble`: build/prompt.mdctx, build/ctxplan.json).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        written: Vec<String>,
        /// Parts whose tokens had to be counted (not in the cache).
        counted_parts: usize,
    },
}

impl From<PlanReport> for PlanRecord {
    fn from(report: PlanReport) -> Self {
        Self::Ctx {
            command: report.command.to_owned(),
            plan: report.plan,
            written: report.written,
            counted_parts: report.counted_parts,
        }
    }
}

/// What any `rlm ctx` action gives: its report as `--json` prints it, and as text.
#[derive(Debug, Serialize)]
pub struct CtxRecord {
    #[serde(flatten)]
    pub report: CtxReport,
    /// The report as a person reads it (not in JSON).
    #[serde(skip)]
    pub text: String,
}

/// The report of a `rlm ctx` action, printed as it is.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum CtxReport {
    /// `plan`, `budget`, `assemble`.
    Plan(PlanRecord),
    /// `init`, `add`, `toggle`, `rank`, `rebase`, `remove`, `ask`, `focus`.
    Changed(rlm_assemble::Report),
    Status(rlm_assemble::StatusReport),
    Env(rlm_assemble::EnvReport),
    Deps(rlm_assemble::DepsReport),
}

/// The ctx directory: `request.dir`, else `RLM_CTX_DIR`, else `ctx`.
pub fn ctx_dir(dir: Option<&Path>, sources: &Sources) -> PathBuf {
    catalog::CTX_DIR
        .environment_path(dir.map(Path::to_path_buf), sources)
        .value
}

/// Runs one `rlm ctx` action.
pub fn ctx(
    sources: &Sources,
    request: &CtxRequest,
    _context: &Context,
) -> anyhow::Result<Outcome<CtxRecord>> {
    let dir = ctx_dir(request.dir.as_deref(), sources);
    let open = |dir: &Path| open(dir, sources);
    let built = |build: &CtxBuildOptions| open(&dir).and_then(|ctx| with_build(ctx, build));
    let changed = |report: rlm_assemble::Report| record(CtxReport::Changed, report);
    let result = match &request.action {
        CtxAction::Init {
            flow,
            tokenizer,
            budget,
        } => {
            let options = InitOptions {
                flow_id: flow.clone(),
                tokenizer: *tokenizer,
                budget: *budget,
            };
            Ctx::init(&dir, options).map(|(_, report)| changed(report))
        }
        CtxAction::Add {
            selectors,
            rank,
            role,
            link,
            follow,
        } => open(&dir).and_then(|ctx| {
            let rank = rank.as_deref().map(str::parse).transpose()?;
            let base = match sources.cwd() {
                Some(cwd) => cwd.to_path_buf(),
                None => std::env::current_dir().map_err(|e| {
                    rlm_assemble::Error::Invalid(format!("cannot read the current directory: {e}"))
                })?,
            };
            let options = AddOptions {
                rank,
                slot: *role,
                link: *link,
                base,
                follow: *follow,
            };
            ctx.add(selectors, &options).map(changed)
        }),
        CtxAction::Status => open(&dir)
            .and_then(|ctx| ctx.status())
            .map(|report| record(CtxReport::Status, report)),
        CtxAction::Plan(build) => built(build).and_then(|c| c.plan("plan")).map(plan_record),
        CtxAction::Budget(build) => built(build).and_then(|c| c.plan("budget")).map(plan_record),
        CtxAction::Toggle { state, target } => open(&dir)
            .and_then(|ctx| ctx.toggle(matches!(state, OnOff::On), target))
            .map(changed),
        CtxAction::Rank { name, rank } => open(&dir)
            .and_then(|ctx| ctx.set_rank(name, rank))
            .map(changed),
        CtxAction::Rebase => open(&dir).and_then(|ctx| ctx.rebase()).map(changed),
        CtxAction::Remove { names } => open(&dir).and_then(|ctx| ctx.remove(names)).map(changed),
        CtxAction::Env => open(&dir)
            .and_then(|ctx| ctx.env())
            .map(|report| record(CtxReport::Env, report)),
        CtxAction::Ask { question } => open(&dir).and_then(|ctx| ctx.ask(question)).map(changed),
        CtxAction::Focus {
            query,
            top,
            min_ratio,
        } => open(&dir).and_then(|ctx| {
            if query.len() == 1 && query[0] == "off" {
                return ctx.focus_off().map(changed);
            }
            if !(0.0..=1.0).contains(min_ratio) {
                return Err(rlm_assemble::Error::Invalid(
                    "--min-ratio must be between 0 and 1".into(),
                ));
            }
            let options = FocusOptions {
                top: *top,
                min_ratio: *min_ratio,
            };
            ctx.focus(&query.join(" "), options).map(changed)
        }),
        CtxAction::Deps { name } => open(&dir)
            .and_then(|ctx| ctx.deps(name))
            .map(|report| record(CtxReport::Deps, report)),
        CtxAction::Assemble(build) => built(build).and_then(|c| c.assemble()).map(plan_record),
    };
    let (record, notes) = result.map_err(ctx_error)?;
    Ok(Outcome {
        notes,
        ..Outcome::success(vec![record])
    })
}

/// Assembles the prompt of the ctx directory `dir` (`rlm ctx assemble`): writes
/// build/prompt.mdctx and build/ctxplan.json and returns the plan, with its warnings as notes.
pub fn assemble(
    sources: &Sources,
    dir: &Path,
    build: &CtxBuildOptions,
    _context: &Context,
) -> anyhow::Result<Outcome<PlanRecord>> {
    let report = open(dir, sources)
        .and_then(|ctx| with_build(ctx, build))
        .and_then(|ctx| ctx.assemble())
        .map_err(ctx_error)?;
    let notes = stale_warnings(&report);
    Ok(Outcome {
        notes,
        ..Outcome::success(vec![PlanRecord::from(report)])
    })
}

/// Within a root (`rlm mcp --root`), every file the directory leads to must lie inside it.
fn open(dir: &Path, sources: &Sources) -> rlm_assemble::Result<Ctx> {
    match sources.root() {
        Some(root) => Ctx::open_within(dir, root),
        None => Ctx::open(dir),
    }
}

fn record<T: std::fmt::Display>(
    wrap: impl FnOnce(T) -> CtxReport,
    report: T,
) -> (CtxRecord, Vec<String>) {
    let text = report.to_string();
    (
        CtxRecord {
            report: wrap(report),
            text,
        },
        Vec::new(),
    )
}

fn plan_record(report: PlanReport) -> (CtxRecord, Vec<String>) {
    let warnings = stale_warnings(&report);
    let text = report.to_string();
    let record = CtxRecord {
        report: CtxReport::Plan(PlanRecord::from(report)),
        text,
    };
    (record, warnings)
}

fn with_build(mut ctx: Ctx, build: &CtxBuildOptions) -> rlm_assemble::Result<Ctx> {
    if let Some(tokenizer) = build.tokenizer {
        ctx = ctx.with_tokenizer(tokenizer);
    }
    if let Some(budget) = build.budget {
        ctx = ctx.with_budget(Some(budget));
    }
    Ok(ctx)
}

fn ctx_error(error: rlm_assemble::Error) -> anyhow::Error {
    let hint = match &error {
        rlm_assemble::Error::OverBudget { .. } => Some(
            "switch parts off (`rlm ctx toggle off NAME`), move them to rank 200+ \
             (`rlm ctx rank NAME 200`), or raise --budget",
        ),
        rlm_assemble::Error::NotInitialized { .. } => {
            Some("pass --dir DIR (or set RLM_CTX_DIR) to use another directory")
        }
        rlm_assemble::Error::UnknownPart(_) => Some("`rlm ctx status` lists the parts"),
        _ => None,
    };
    let input = error.is_input();
    AppError::classified(error, input, hint).into()
}

/// A warning and a hint when parts that `status` calls stale go into the prompt.
fn stale_warnings(report: &PlanReport) -> Vec<String> {
    let stale = &report.plan.stale;
    if stale.is_empty() {
        return Vec::new();
    }
    let listed: Vec<String> = stale
        .iter()
        .map(|part| {
            let label = part.freshness.label();
            let why = label.strip_prefix("stale: ").unwrap_or(&label);
            format!("{} ({why})", part.name)
        })
        .collect();
    let parts = if stale.len() == 1 {
        "part goes"
    } else {
        "parts go"
    };
    vec![
        format!(
            "warning: {} stale {parts} into the prompt: {}",
            stale.len(),
            listed.join(", ")
        ),
        "hint: `rlm ctx rebase` re-finds moved ranges; re-adding a part refreshes it; \
         `rlm ctx status` shows every part"
            .to_owned(),
    ]
}
