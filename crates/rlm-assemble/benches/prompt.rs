//! `rlm prompt` build time: a ~200k-token history whose summary is cached and 2,000 generated
//! source files, error-fixing stage, exact o200k counts. Printed as medians.
//!
//! Run: `cargo bench -p rlm-assemble --features summarize --bench prompt`. Figures:
//! - first build: token counts empty, one (fake, local) summary call,
//! - warm build with a fresh assembler (token counts and summary read from the cache
//!   directory, as each `rlm prompt build` process does),
//! - warm build reusing one assembler (an agent calling the library every turn),
//! - the same warm build with the history's last message changed (tail recounted).
//!
//! Reading the files from disk is not included (the library is handed texts). Wall time and,
//! in brackets, the process's CPU time (all threads, getrusage).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(unsafe_code, reason = "getrusage for CPU time")]

use std::time::{Duration, Instant};

use rlm_assemble::prompt::{
    ChatMessage, ContextItem, HistoryAction, ItemKind, PromptAssembler, PromptInputs,
    PromptOptions, Stage, Summarizer,
};
use rlm_context::tokens::Tokenizer;
use rlm_fake::{FakeReply, FakeServer};

const FILES: usize = 2_000;
const MESSAGES: usize = 2_500;
const RUNS: usize = 7;

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(FakeServer::start()).unwrap();
    server.respond_with(|_| FakeReply::text("## Requirements\n- keep the retry policy\n"));
    let client = rlm_llm::testing::client_builder(server.address())
        .build()
        .unwrap();
    let summarizer = Summarizer::new(client, "summarizer");
    let cache = tempfile::tempdir().unwrap();
    let options = PromptOptions {
        tokenizer: Tokenizer::O200k,
        cache_dir: Some(cache.path().to_path_buf()),
        ..PromptOptions::default()
    };
    let inputs = inputs();
    let history_tokens: usize = Tokenizer::O200k
        .count_many(
            &inputs
                .history
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>(),
        )
        .iter()
        .sum();
    let bytes: usize = inputs.items.iter().map(|item| item.text.len()).sum();
    println!(
        "history: {MESSAGES} messages, {history_tokens} tokens; sources: {FILES} files, {:.1} MB",
        bytes as f64 / 1e6
    );
    Tokenizer::O200k.warm_up();

    let build = |assembler: &mut PromptAssembler, inputs: &PromptInputs| {
        let built = runtime
            .block_on(assembler.build(inputs, Some(&summarizer)))
            .unwrap();
        assembler.save_cache().unwrap();
        built
    };
    let before = cpu_time();
    let started = Instant::now();
    let mut first = PromptAssembler::new(options.clone()).unwrap();
    let built = build(&mut first, &inputs);
    show(
        "first build (counts all, summary calls):",
        (started.elapsed(), cpu_time().saturating_sub(before)),
    );
    assert_eq!(built.plan.history.action, HistoryAction::Summarized);
    assert!(!built.plan.model_calls.is_empty());
    // The older part of the history is larger than the summarizing model's window, so it is
    // summarized in pieces and then merged: several calls, all cached for the next builds.
    println!("  ({} summary calls)", built.plan.model_calls.len());
    println!(
        "  ({} tokens in the prompt, {} items in, {} summarized messages)",
        built.plan.tokens_total,
        built
            .plan
            .items
            .iter()
            .filter(|i| i.used_tokens > 0)
            .count(),
        built.plan.history.summarized_messages
    );

    let fresh = median_with_cpu(RUNS, || {
        let started = Instant::now();
        let mut assembler = PromptAssembler::new(options.clone()).unwrap();
        let again = build(&mut assembler, &inputs);
        assert!(again.plan.history.cache_hit);
        assert_eq!(again.plan.digest, built.plan.digest);
        started.elapsed()
    });
    show("warm build, fresh assembler (cache dir):", fresh);

    let mut reused = PromptAssembler::new(options.clone()).unwrap();
    build(&mut reused, &inputs);
    let same = median_with_cpu(RUNS, || {
        let started = Instant::now();
        let again = build(&mut reused, &inputs);
        assert!(again.plan.history.cache_hit);
        started.elapsed()
    });
    show("warm build, reused assembler:", same);

    let mut changed = inputs.clone();
    let last = changed.history.len() - 1;
    let mut turn = 0;
    let next = median_with_cpu(RUNS, || {
        turn += 1;
        changed.history[last].content = format!("turn {turn}: the build fails again");
        let started = Instant::now();
        let again = build(&mut reused, &changed);
        assert_eq!(again.plan.history.action, HistoryAction::Summarized);
        started.elapsed()
    });
    show("warm build, last message changed:", next);
    println!("summary calls in all: {}", server.request_count());
}

fn inputs() -> PromptInputs {
    let history = (0..MESSAGES)
        .map(|index| {
            let role = if index % 2 == 0 { "user" } else { "assistant" };
            let text = format!(
                "Turn {index}: the retry policy in src/module_{}.rs backs off {} ms; \
                 we decided to cap it because the pod restarted. {}",
                index % FILES,
                index * 7,
                "Checked the logs and the test output again. ".repeat(6)
            );
            ChatMessage::new(role, text)
        })
        .collect();
    let mut items: Vec<ContextItem> = (0..FILES)
        .map(|index| ContextItem {
            kind: ItemKind::SourceFiles,
            name: format!("src/module_{index}.rs"),
            text: (0..40)
                .map(|line| {
                    format!("pub fn item_{index}_{line}(value: u64) -> u64 {{ value * {line} }}\n")
                })
                .collect(),
        })
        .collect();
    items.push(ContextItem {
        kind: ItemKind::Notes,
        name: "NOTES.md".into(),
        text: "Keep the retry policy configurable.\n".into(),
    });
    items.push(ContextItem {
        kind: ItemKind::BuildLogs,
        name: "ci.log".into(),
        text: (0..20_000)
            .map(|line| format!("[{line}] compiling crate {line}\n"))
            .collect::<String>()
            + "error[E0308]: mismatched types\n",
    });
    PromptInputs {
        stage: Stage::ErrorFixing,
        history,
        items,
    }
}

fn median_with_cpu(runs: usize, mut run: impl FnMut() -> Duration) -> (Duration, Duration) {
    let mut walls = Vec::with_capacity(runs);
    let mut cpus = Vec::with_capacity(runs);
    for _ in 0..runs {
        let before = cpu_time();
        walls.push(run());
        cpus.push(cpu_time().saturating_sub(before));
    }
    walls.sort();
    cpus.sort();
    (walls[runs / 2], cpus[runs / 2])
}

/// User + system CPU time of this process, all threads (including finished ones).
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn show(label: &str, (wall, cpu): (Duration, Duration)) {
    println!(
        "{label:<44} {:>8.1} ms  [cpu {:>7.1} ms]",
        wall.as_secs_f64() * 1000.0,
        cpu.as_secs_f64() * 1000.0
    );
}
