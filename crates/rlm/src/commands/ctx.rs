//! `rlm ctx ...`: thin wrappers over `rlm_assemble::Ctx`; each prints its report (or JSON).

use std::fmt::Display;
use std::io::Write as _;
use std::process::ExitCode;

use rlm_assemble::{AddOptions, Ctx, FocusOptions, InitOptions, PlanReport};
use serde::Serialize;

use crate::cli::{CtxBuildOptions, CtxAction, CtxRequest, GlobalArgs, OnOff};
use crate::error::AppError;
use crate::settings::Sources;

pub fn run(global: &GlobalArgs, sources: &Sources, args: CtxRequest) -> anyhow::Result<ExitCode> {
    let dir = args.dir;
    // Within a root (`rlm mcp --root`), every file the directory leads to must lie inside it.
    let open = |dir: &std::path::Path| match sources.root() {
        Some(root) => Ctx::open_within(dir, root),
        None => Ctx::open(dir),
    };
    let with_build = |dir: &std::path::Path, build: CtxBuildOptions| with_build(open(dir)?, build);
    let result = match args.action {
        CtxAction::Init {
            flow,
            tokenizer,
            budget,
        } => {
            let options = InitOptions {
                flow_id: flow,
                tokenizer,
                budget,
            };
            Ctx::init(&dir, options)
                .map(|(_, report)| report)
                .map(output)
        }
        CtxAction::Add {
            selectors,
            rank,
            role,
            link,
            follow,
        } => open(&dir).and_then(|ctx| {
            let rank = rank.as_deref().map(str::parse).transpose()?;
            let base = std::env::current_dir().map_err(|e| {
                rlm_assemble::Error::Invalid(format!("cannot read the current directory: {e}"))
            })?;
            let options = AddOptions {
                rank,
                slot: role,
                link,
                base,
                follow,
            };
            ctx.add(&selectors, &options).map(output)
        }),
        CtxAction::Status => open(&dir).and_then(|ctx| ctx.status()).map(output),
        CtxAction::Plan(build) => with_build(&dir, build)
            .and_then(|c| c.plan("plan"))
            .map(output_plan),
        CtxAction::Budget(build) => with_build(&dir, build)
            .and_then(|c| c.plan("budget"))
            .map(output_plan),
        CtxAction::Toggle { state, target } => open(&dir)
            .and_then(|ctx| ctx.toggle(matches!(state, OnOff::On), &target))
            .map(output),
        CtxAction::Rank { name, rank } => open(&dir)
            .and_then(|ctx| ctx.set_rank(&name, &rank))
            .map(output),
        CtxAction::Rebase => open(&dir).and_then(|ctx| ctx.rebase()).map(output),
        CtxAction::Remove { names } => open(&dir).and_then(|ctx| ctx.remove(&names)).map(output),
        CtxAction::Env => open(&dir).and_then(|ctx| ctx.env()).map(output),
        CtxAction::Ask { question } => open(&dir).and_then(|ctx| ctx.ask(&question)).map(output),
        CtxAction::Focus {
            query,
            top,
            min_ratio,
        } => open(&dir).and_then(|ctx| {
            if query.len() == 1 && query[0] == "off" {
                return ctx.focus_off().map(output);
            }
            if !(0.0..=1.0).contains(&min_ratio) {
                return Err(rlm_assemble::Error::Invalid(
                    "--min-ratio must be between 0 and 1".into(),
                ));
            }
            let options = FocusOptions { top, min_ratio };
            ctx.focus(&query.join(" "), options).map(output)
        }),
        CtxAction::Deps { name } => open(&dir).and_then(|ctx| ctx.deps(&name)).map(output),
        CtxAction::Assemble(build) => with_build(&dir, build)
            .and_then(|c| c.assemble())
            .map(output_plan),
    };
    match result {
        Ok(printable) => {
            if !global.quiet {
                for warning in &printable.warnings {
                    eprintln!("{}", crate::output::neutralize(warning));
                }
            }
            printable.print(global.json)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => Err(to_cli_error(error).into()),
    }
}

/// What `rlm ctx plan|budget|assemble --json` prints: one record with the plan.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CtxRecord {
    /// The prompt's plan.
    Ctx {
        /// `plan`, `budget` or `assemble`.
        command: String,
        /// Parts in order with their tokens and status, the totals, the digest and the stale
        /// parts.
        #[cfg_attr(
            feature = "mcp",
            schemars(with = "serde_json::Map<String, serde_json::Value>")
        )]
        plan: rlm_assemble::Plan,
        /// Files written (`assemble`: build/prompt.mdctx, build/ctxplan.json).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        written: Vec<String>,
        /// Parts whose tokens had to be counted (not in the cache).
        counted_parts: usize,
    },
}

impl From<PlanReport> for CtxRecord {
    fn from(report: PlanReport) -> Self {
        Self::Ctx {
            command: report.command.to_owned(),
            plan: report.plan,
            written: report.written,
            counted_parts: report.counted_parts,
        }
    }
}

/// Assembles the prompt of the ctx directory `dir` (`rlm ctx assemble`): writes
/// build/prompt.mdctx and build/ctxplan.json and returns the plan, with its warnings as notes.
#[cfg_attr(
    not(feature = "mcp"),
    expect(dead_code, reason = "only `rlm mcp` calls it")
)]
pub fn assemble(
    sources: &Sources,
    dir: &std::path::Path,
    build: CtxBuildOptions,
) -> anyhow::Result<super::Outcome<CtxRecord>> {
    let opened = match sources.root() {
        Some(root) => Ctx::open_within(dir, root),
        None => Ctx::open(dir),
    };
    let report = opened
        .and_then(|ctx| with_build(ctx, build))
        .and_then(|ctx| ctx.assemble())
        .map_err(to_cli_error)?;
    let notes = stale_warnings(&report);
    Ok(super::Outcome {
        notes,
        ..super::Outcome::success(vec![CtxRecord::from(report)])
    })
}

fn with_build(mut ctx: Ctx, build: CtxBuildOptions) -> rlm_assemble::Result<Ctx> {
    if let Some(tokenizer) = build.tokenizer {
        ctx = ctx.with_tokenizer(tokenizer);
    }
    if let Some(budget) = build.budget {
        ctx = ctx.with_budget(Some(budget));
    }
    Ok(ctx)
}

fn to_cli_error(error: rlm_assemble::Error) -> AppError {
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
    AppError::classified(error, input, hint)
}

/// A report that prints as text or as one JSON line, and warnings for stderr.
struct Printable {
    print: Box<dyn Fn(bool) -> anyhow::Result<()>>,
    warnings: Vec<String>,
}

impl Printable {
    fn print(&self, json: bool) -> anyhow::Result<()> {
        (self.print)(json)
    }
}

/// A plan, with a warning when parts that `status` calls stale go into the prompt.
fn output_plan(report: PlanReport) -> Printable {
    let warnings = stale_warnings(&report);
    let text = report.to_string();
    let record = CtxRecord::from(report);
    let print = Box::new(move |json| {
        if json {
            crate::output::print_json(&record)
        } else {
            let mut out = crate::output::stdout();
            write!(out, "{}", crate::output::for_stdout(&text))?;
            out.flush()?;
            Ok(())
        }
    });
    Printable { print, warnings }
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

fn output<T: Serialize + Display + 'static>(report: T) -> Printable {
    let print = Box::new(move |json| {
        if json {
            crate::output::print_json(&report)
        } else {
            let mut out = crate::output::stdout();
            write!(out, "{}", crate::output::for_stdout(&report.to_string()))?;
            out.flush()?;
            Ok(())
        }
    });
    Printable {
        print,
        warnings: Vec::new(),
    }
}
