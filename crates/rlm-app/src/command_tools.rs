//! Custom tools for `rlm run` from the configuration: commands declared in `[run.tools.NAME]`
//! that model code calls like functions. They are the same host functions
//! ([`rlm_engine::HostFunctions`]) the Python package's callables are: each call runs the
//! command with the arguments as a JSON object on stdin, its stdout (JSON) is the result, and a
//! failure is an exception in model code.
//!
//! ```toml
//! [run.tools.word_count]
//! command = ["python3", "tools/word_count.py"]
//! description = "Counts the words of a text"
//! parameters = ["text", "lang"]
//! defaults = { lang = "en" }
//! timeout = 10
//! ```
//!
//! The command runs as the user, outside the sandbox, in the current directory, with rlm's
//! environment: it is the user's own program. A reply is read up to [`MAX_REPLY_BYTES`].

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rlm_engine::{
    FunctionError, FunctionParameter, FunctionSpec, HostFunctions, RaisedKind, Tool, Toolbox,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::input_error;

/// Seconds a call may take when the tool sets no `timeout`.
pub const DEFAULT_TOOL_TIMEOUT: f64 = 30.0;
/// Bytes of a command's stdout read as its reply; more is an error.
pub const MAX_REPLY_BYTES: usize = 10_000_000;
/// Bytes of a failed command's stderr shown to model code (its end).
const STDERR_TAIL_BYTES: usize = 2_000;

/// One `[run.tools.NAME]` table.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CommandToolConfig {
    /// The program and its arguments (no shell).
    pub command: Vec<String>,
    /// What the system prompt says the tool does.
    #[serde(default)]
    pub description: Option<String>,
    /// The parameters, in positional order.
    #[serde(default)]
    pub parameters: Vec<String>,
    /// Defaults that make parameters optional.
    #[serde(default)]
    pub defaults: BTreeMap<String, toml::Value>,
    /// Seconds a call may take (default [`DEFAULT_TOOL_TIMEOUT`]).
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// The toolbox of the configured commands, or `None` when there are none.
pub fn toolbox(configs: BTreeMap<String, CommandToolConfig>) -> anyhow::Result<Option<Toolbox>> {
    if configs.is_empty() {
        return Ok(None);
    }
    let mut tools = Vec::new();
    let mut commands = BTreeMap::new();
    for (name, config) in configs {
        let where_ = format!("[run.tools.{name}]");
        if config
            .command
            .first()
            .is_none_or(|program| program.is_empty())
        {
            return Err(input_error(format!("{where_}: `command` names no program")).into());
        }
        let timeout = config.timeout.unwrap_or(DEFAULT_TOOL_TIMEOUT);
        if !(timeout.is_finite() && timeout > 0.0 && timeout <= 86_400.0) {
            return Err(input_error(format!(
                "{where_}: timeout = {timeout} is not a number of seconds above 0 (at most a day)"
            ))
            .into());
        }
        if let Some(unknown) = config
            .defaults
            .keys()
            .find(|key| !config.parameters.contains(key))
        {
            return Err(input_error(format!(
                "{where_}: the default of `{unknown}` is for no parameter (parameters: {})",
                config.parameters.join(", ")
            ))
            .into());
        }
        let mut parameters = Vec::new();
        for parameter in &config.parameters {
            parameters.push(match config.defaults.get(parameter) {
                None => FunctionParameter::required(parameter),
                Some(default) => {
                    let default = serde_json::to_value(default).map_err(|err| {
                        input_error(format!("{where_}: the default of `{parameter}`: {err}"))
                    })?;
                    FunctionParameter::optional(parameter, default)
                }
            });
        }
        tools.push(Tool::function(
            FunctionSpec::new(name.clone(), parameters),
            config.description.clone(),
        ));
        commands.insert(
            name,
            Declared {
                argv: config.command,
                timeout: Duration::from_secs_f64(timeout),
            },
        );
    }
    let host = Arc::new(CommandTools { commands });
    let toolbox = Toolbox::new(tools, Some(host))
        .map_err(|err| input_error(format!("[run.tools]: {err}")))?;
    Ok(Some(toolbox))
}

#[derive(Debug)]
struct Declared {
    argv: Vec<String>,
    timeout: Duration,
}

/// The configured commands, answering model code's calls.
#[derive(Debug)]
pub struct CommandTools {
    commands: BTreeMap<String, Declared>,
}

impl HostFunctions for CommandTools {
    fn functions(&self) -> Vec<FunctionSpec> {
        // The toolbox's tools carry the specifications.
        Vec::new()
    }

    fn call(&self, name: &str, arguments: &Map<String, Value>) -> Result<Value, FunctionError> {
        let Some(declared) = self.commands.get(name) else {
            return Err(FunctionError::new(
                RaisedKind::NameError,
                format!("name '{name}' is not defined"),
            ));
        };
        run(name, declared, arguments)
    }
}

/// Runs one call: arguments on stdin, the reply on stdout, killed at its time limit.
fn run(
    name: &str,
    declared: &Declared,
    arguments: &Map<String, Value>,
) -> Result<Value, FunctionError> {
    let failed = |message: String| FunctionError::new(RaisedKind::RuntimeError, message);
    let (program, rest) = declared
        .argv
        .split_first()
        .ok_or_else(|| failed(format!("{name}(): no command")))?;
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| {
            FunctionError::new(
                RaisedKind::OSError,
                format!("{name}(): cannot start {program:?}: {err}"),
            )
        })?;
    let input = Value::Object(arguments.clone()).to_string();
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        // A command that exits without reading its input closes the pipe: not an error.
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(input.as_bytes());
        }
    });
    let stdout = child
        .stdout
        .take()
        .map(|out| read_capped(out, MAX_REPLY_BYTES + 1));
    let stderr = child.stderr.take().map(|err| read_capped(err, usize::MAX));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= declared.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(FunctionError::new(
                    RaisedKind::TimeoutError,
                    format!(
                        "{name}() took longer than its time limit of {} s",
                        declared.timeout.as_secs_f64()
                    ),
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(err) => return Err(failed(format!("{name}(): waiting for it failed: {err}"))),
        }
    };
    let _ = writer.join();
    let stdout = stdout
        .and_then(|reader| reader.join().ok())
        .unwrap_or_default();
    let stderr = stderr
        .and_then(|reader| reader.join().ok())
        .unwrap_or_default();
    if stdout.len() > MAX_REPLY_BYTES {
        return Err(failed(format!(
            "{name}() printed more than {} of JSON",
            rlm_sandbox::format_size(MAX_REPLY_BYTES)
        )));
    }
    let reply = String::from_utf8_lossy(&stdout);
    if !status.success() {
        return Err(raised(name, &reply, &stderr, &status.to_string()));
    }
    if reply.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&reply).map_err(|err| {
        failed(format!(
            "{name}() printed something that is not JSON ({err}): {}",
            reply.chars().take(200).collect::<String>()
        ))
    })
}

/// The exception of a command that failed: the one it printed as `{"error": {"type",
/// "message"}}`, else a `RuntimeError` with the end of its stderr.
fn raised(name: &str, reply: &str, stderr: &[u8], status: &str) -> FunctionError {
    if let Ok(Value::Object(printed)) = serde_json::from_str::<Value>(reply)
        && let Some(Value::Object(error)) = printed.get("error")
    {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("failed")
            .to_owned();
        let kind = error
            .get("type")
            .and_then(Value::as_str)
            .and_then(RaisedKind::from_name)
            .unwrap_or(RaisedKind::RuntimeError);
        return FunctionError::new(kind, message);
    }
    let stderr = String::from_utf8_lossy(stderr);
    let tail: String = {
        let chars: Vec<char> = stderr.trim_end().chars().collect();
        let start = chars.len().saturating_sub(STDERR_TAIL_BYTES);
        chars[start..].iter().collect()
    };
    let detail = if tail.is_empty() {
        String::new()
    } else {
        format!(": {tail}")
    };
    FunctionError::new(
        RaisedKind::RuntimeError,
        format!("{name}() failed ({status}){detail}"),
    )
}

/// Reads a pipe on a thread of its own, keeping at most `cap` bytes (the rest is drained).
fn read_capped(
    mut pipe: impl Read + Send + 'static,
    cap: usize,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buffer = [0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => {
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&buffer[..read.min(room)]);
                }
            }
        }
        kept
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(command: &[&str]) -> CommandToolConfig {
        CommandToolConfig {
            command: command.iter().map(|part| (*part).to_owned()).collect(),
            description: None,
            parameters: vec!["text".into()],
            defaults: BTreeMap::new(),
            timeout: Some(2.0),
        }
    }

    fn call(config: CommandToolConfig, text: &str) -> Result<Value, FunctionError> {
        let declared = Declared {
            argv: config.command,
            timeout: Duration::from_secs_f64(config.timeout.unwrap()),
        };
        let mut arguments = Map::new();
        arguments.insert("text".into(), Value::from(text));
        run("tool", &declared, &arguments)
    }

    #[test]
    fn the_arguments_go_in_as_json_and_the_reply_comes_back() {
        let upper = config(&[
            "python3",
            "-c",
            "import json,sys; a=json.load(sys.stdin); print(json.dumps({'up': a['text'].upper()}))",
        ]);
        assert_eq!(call(upper, "hi").unwrap(), serde_json::json!({"up": "HI"}));
        assert_eq!(call(config(&["true"]), "x").unwrap(), Value::Null);
    }

    #[test]
    fn failures_are_exceptions_with_their_message() {
        let typed = config(&[
            "sh",
            "-c",
            r#"echo '{"error": {"type": "ValueError", "message": "bad text"}}'; exit 1"#,
        ]);
        let error = call(typed, "x").unwrap_err();
        assert_eq!(
            (error.kind, error.message.as_str()),
            (RaisedKind::ValueError, "bad text")
        );
        let crashed = config(&["sh", "-c", "echo boom >&2; exit 3"]);
        let error = call(crashed, "x").unwrap_err();
        assert_eq!(error.kind, RaisedKind::RuntimeError);
        assert!(
            error.message.contains("boom") && error.message.contains('3'),
            "{}",
            error.message
        );
        let not_json = call(config(&["echo", "hello"]), "x").unwrap_err();
        assert!(
            not_json.message.contains("not JSON"),
            "{}",
            not_json.message
        );
        let missing = call(config(&["/nonexistent/tool"]), "x").unwrap_err();
        assert_eq!(missing.kind, RaisedKind::OSError);
    }

    #[test]
    fn a_command_that_hangs_is_killed_at_its_limit() {
        let mut hangs = config(&["sleep", "30"]);
        hangs.timeout = Some(0.3);
        let started = Instant::now();
        let error = call(hangs, "x").unwrap_err();
        assert_eq!(error.kind, RaisedKind::TimeoutError);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn bad_tables_are_input_errors_naming_the_tool() {
        let mut empty = config(&[]);
        empty.command.clear();
        let err = toolbox(BTreeMap::from([("t".to_owned(), empty)])).unwrap_err();
        assert!(err.to_string().contains("[run.tools.t]"), "{err}");
        let mut stray = config(&["true"]);
        stray.defaults.insert("other".into(), toml::Value::from(1));
        let err = toolbox(BTreeMap::from([("t".to_owned(), stray)])).unwrap_err();
        assert!(err.to_string().contains("`other`"), "{err}");
        let reserved =
            toolbox(BTreeMap::from([("context".to_owned(), config(&["true"]))])).unwrap_err();
        assert!(reserved.to_string().contains("reserved"), "{reserved}");
        let fine = toolbox(BTreeMap::from([("shout".to_owned(), config(&["true"]))]))
            .unwrap()
            .unwrap();
        assert_eq!(fine.tools().len(), 1);
    }
}
