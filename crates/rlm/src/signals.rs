//! Ctrl-C and SIGTERM on the command line (`rlm_app::stop::watch_process_signals`): the first
//! asks the running operation to stop — a run or query drops its work and closes its log with
//! `interrupted`, a load aborts its transaction, an embedding keeps the batches it committed —
//! and the command says what it kept. A second signal, or an operation that does not stop in
//! time, ends the process.

use std::sync::{Arc, OnceLock};

use rlm_app::StopHandle;

/// What an interrupted command leaves, said when it ends by a signal.
static KEPT: OnceLock<&'static str> = OnceLock::new();

/// Says `kept` when the command ends by a signal.
pub fn set_kept_note(kept: &'static str) {
    let _ = KEPT.set(kept);
}

/// Prints what an interrupted command kept (if the command said).
pub fn say_what_was_kept() {
    if let Some(kept) = KEPT.get() {
        eprintln!("interrupted: {kept}");
    }
}

/// Watches SIGINT and SIGTERM for the process's life.
pub fn watch(stop: Arc<StopHandle>) {
    rlm_app::stop::watch_process_signals(stop, say_what_was_kept);
}
