//! `rlm chat`: one question to one model, the answer streamed to stdout.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;
use rlm_llm::{ChatResponse, FinishReason};

use crate::cli::{ChatRequest, GlobalArgs};
use crate::error::{AppError, input_error, llm_error};
use crate::settings::{ChatSettings, Sources};

pub fn run(global: &GlobalArgs, sources: &Sources, args: ChatRequest) -> anyhow::Result<ExitCode> {
    let settings = ChatSettings::resolve(&args, sources)?;
    let prompt = if args.prompt == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("failed to read the prompt from stdin")?;
        text
    } else {
        args.prompt.clone()
    };
    if prompt.trim().is_empty() {
        return Err(input_error("the prompt is empty").into());
    }
    let request = settings.request(prompt);

    let client = settings.llm.build_client()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let json = global.json;
    let outcome = runtime.block_on(async {
        let call = async {
            if json {
                return client.chat(&request).await.map_err(llm_error);
            }
            // Unlocked stdout: the callback must be `Send`. The answer is data: byte-exact into
            // a pipe, its control characters neutralised on a terminal.
            let mut out = crate::output::raw_stdout_unlocked();
            let mut write_error: Option<std::io::Error> = None;
            let result = client
                .chat_streaming(&request, &mut |piece: &str| {
                    if write_error.is_none()
                        && let Err(err) = out
                            .write_all(crate::output::for_stdout(piece).as_bytes())
                            .and_then(|()| out.flush())
                    {
                        write_error = Some(err);
                    }
                })
                .await;
            // A closed stdout (e.g. `| head`) ends the command quietly via error::report.
            if let Some(err) = write_error {
                return Err(anyhow::Error::from(err));
            }
            result.map_err(llm_error)
        };
        tokio::select! {
            result = call => Ok(result),
            signal = crate::signals::stop_requested() => Err(signal),
        }
    });
    let response = outcome.map_err(AppError::stopped)??;
    if json {
        crate::output::print_json(&ChatRecord::Answer {
            text: &response.text,
            model: &response.model,
            finish_reason: response.finish_reason.as_deref(),
            usage: &response.usage,
            cost_usd: response.cost_usd,
            latency_ms: u64::try_from(response.latency.as_millis()).unwrap_or(u64::MAX),
            retries: response.retries,
            replayed: response.replayed,
        })?;
    } else {
        writeln!(crate::output::raw_stdout())?;
        // A warning, printed even with `--quiet`: the answer on stdout is not all of it.
        if let Some(warning) = cut_warning(&response, settings.max_tokens) {
            eprintln!("warning: {warning}");
        }
        if !global.quiet {
            // The model name comes from the provider's reply.
            eprintln!("{}", crate::output::neutralize(&usage_line(&response)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What to say when the output cap cut the answer (finish reason `length`); `None` otherwise.
/// `--json` carries the reason as `finish_reason` instead.
fn cut_warning(response: &ChatResponse, max_tokens: Option<u32>) -> Option<String> {
    if response.finish() != FinishReason::Length {
        return None;
    }
    let limit = max_tokens.map_or_else(
        || "the output limit".to_owned(),
        |cap| format!("the output limit ({cap} tokens)"),
    );
    Some(format!(
        "the answer was cut at {limit}; raise --max-output-tokens (or --max-tokens) for the rest"
    ))
}

/// One line for stderr: model, tokens, cost (or "unknown"), time, retries.
fn usage_line(response: &ChatResponse) -> String {
    let usage = &response.usage;
    let cost = response
        .cost_usd
        .map_or_else(|| "cost unknown".to_owned(), |cost| format!("${cost:.6}"));
    let source = if response.replayed { " (replayed)" } else { "" };
    format!(
        "{}{source}: {} in, {} out, {} cache read, {} cache write tokens; {cost}; {:.2} s; {} retries",
        response.model,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        response.latency.as_secs_f64(),
        response.retries,
    )
}

/// What `rlm chat --json` prints: one record with the answer and what it cost.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatRecord<'a> {
    Answer {
        text: &'a str,
        model: &'a str,
        finish_reason: Option<&'a str>,
        usage: &'a rlm_llm::Usage,
        cost_usd: Option<f64>,
        latency_ms: u64,
        retries: u32,
        /// Whether the answer came from a `--replay` cassette.
        replayed: bool,
    },
}
