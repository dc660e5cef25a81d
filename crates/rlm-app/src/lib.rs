//! rlm's application layer: the operations every front end calls — the `rlm` command line, the
//! MCP server (`rlm-mcp`) and the Python package (`rlm-py`).
//!
//! Each operation takes the settings sources ([`settings::Sources`]: environment,
//! configuration files, and what the front end sets above them), one typed request
//! ([`requests`]) and a [`Context`] (who hears its [`Event`]s, the [`StopHandle`] that stops
//! it), and returns an [`Outcome`] of typed records or an error with a kind
//! ([`error::Kind`]). Operations never print and keep no state between calls; progress is
//! events, and how records look to a person is the front end's business.
//!
//! ```no_run
//! use rlm_app::{Context, operations, requests::SearchRequest, settings::Sources};
//!
//! let sources = Sources::from_process(None).with_store(".rlm".into());
//! let request: SearchRequest = serde_json::from_value(serde_json::json!({
//!     "query": "token refresh", "k": 3
//! }))?;
//! let outcome = operations::search::search(&sources, &request, &Context::silent())?;
//! for record in outcome.records {
//!     println!("{}", serde_json::to_string(&record)?);
//! }
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod command_tools;
pub mod contexts;
pub mod engine;
pub mod error;
pub mod events;
pub mod operations;
pub mod outcome;
pub mod reply;
pub mod requests;
pub mod sandbox;
pub mod session;
pub mod settings;
pub mod stop;
pub mod store_functions;
pub mod text;

pub use error::{AppError, Kind, Shown};
pub use events::{Context, Event, Events, NoEvents};
pub use outcome::{ExitStatus, Outcome};
pub use reply::ReplyLimit;
pub use stop::{Runtime, StopHandle, StopSignal};
