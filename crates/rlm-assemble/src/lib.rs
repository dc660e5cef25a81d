//! Evidence-based context assembly: ranked evidence, budgets, `prompt.mdctx` and `ctxplan.json`.
//!
//! A *ctx directory* holds the parts of a prompt as files named `<rank>_<kind>.<slot>.md`:
//! a system policy, a user request and evidence (whole files or line/byte ranges of files,
//! each carrying its provenance). `.md.skip` files are kept but left out; `.link` symlinks are
//! read at build time, always current and always active. [`Ctx::assemble`] writes
//! `build/prompt.mdctx` (the prompt) and `build/ctxplan.json` (what went in, at what cost, and
//! a digest), fitting a token budget by rank. Builds are byte-identical for identical inputs,
//! and token counts are cached by content hash, so a rebuild only counts what changed.
//!
//! ```
//! use rlm_assemble::{AddOptions, Ctx, InitOptions, Slot};
//! use rlm_context::tokens::Tokenizer;
//!
//! let work = tempfile::tempdir()?;
//! std::fs::write(work.path().join("flow.sh"), "deploy() {\n  echo go\n}\n")?;
//! let options = InitOptions { tokenizer: Tokenizer::Approx, ..InitOptions::default() };
//! let (ctx, _) = Ctx::init(&work.path().join("ctx"), options)?;
//! ctx.ask("What does deploy do?")?;
//! let add = AddOptions { rank: None, slot: Slot::Evidence, link: false, base: work.path().into(), follow: false };
//! ctx.add(&["flow.sh::1,3#deploy".to_owned()], &add)?;
//! let built = ctx.assemble()?;
//! assert_eq!(built.plan.totals.included, 3);
//! let prompt = std::fs::read_to_string(work.path().join("ctx/build/prompt.mdctx"))?;
//! assert!(prompt.contains("## Evidence: flow.sh"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod add;
mod cache;
mod coverage;
mod ctx;
mod ctxdir;
mod deps;
mod edit;
mod error;
mod focus;
mod fresh;
mod part;
mod plan;
pub mod prompt;
mod provenance;
mod render;
mod report;
mod selector;

pub use add::AddOptions;
pub use ctx::{Ctx, InitOptions};
pub use ctxdir::{BUILD_DIR, CONFIG_FILE, CtxConfig, EVIDENCE_DIR};
pub use deps::{DepsReport, Mention};
pub use edit::EnvReport;
pub use error::{Error, Result};
pub use focus::{Bm25, FocusOptions};
pub use fresh::{Freshness, StalePart, StatusPart, StatusReport};
pub use part::{PartName, Rank, Slot, State};
pub use plan::{BudgetRoom, OverBudget, PartStatus, Plan, PlanPart, Shortfall, Totals};
pub use provenance::Provenance;
pub use report::{Change, PlanReport, Report, Summary};
pub use selector::{Selector, Span, SpanSpec};
