//! The `rlm` binary end to end: one test binary (it links once) with a module per area and
//! the helpers they share in `support`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod answers;
mod basics;
mod chat;
mod ctx;
mod doc_blocks;
mod doctor;
mod embed_on_load;
mod gzip;
mod inspect;
mod llama;
mod mcp;
mod mcp_http;
mod mcp_root;
mod mcp_sampling;
mod mcp_session;
mod mcp_tasks;
mod models;
mod output;
mod postgres;
mod prompt;
mod prompt_window;
mod query;
mod query_slots;
mod readme;
mod run;
mod run_limits;
mod run_store;
mod run_tools;
mod sandbox_worker;
mod secrets;
mod sessions;
mod store;
mod view;
mod view_query;
