//! The `rlm` binary end to end: one test binary (it links once) with a module per area and
//! the helpers they share in `support`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod basics;
mod chat;
mod ctx;
mod inspect;
mod models;
mod output;
mod query;
mod run;
mod sandbox_worker;
mod store;
