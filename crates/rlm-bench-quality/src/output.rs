//! Stdout for the task lines and JSON records, and the loop's turns on stderr with `-v`.

use std::io::Write as _;

/// Prints one JSON value as a line on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// Stdout for the task lines.
pub fn stdout() -> std::io::StdoutLock<'static> {
    std::io::stdout().lock()
}

/// Each run's turns and code on stderr, one line each (`-v`).
#[derive(Debug)]
pub struct RunLines;

impl rlm_engine::EventSink for RunLines {
    fn event(&self, event: &rlm_engine::Event<'_>) {
        use rlm_engine::Event;
        let line = match event {
            Event::IterationStarted {
                depth, iteration, ..
            } => format!("{}turn {iteration}", "  ".repeat(*depth as usize)),
            Event::RunFinished {
                depth,
                status,
                iterations,
                ..
            } => format!(
                "{}{status} after {iterations} turns",
                "  ".repeat(*depth as usize)
            ),
            _ => return,
        };
        eprintln!("{}", rlm_app::text::neutralize(&line));
    }
}
