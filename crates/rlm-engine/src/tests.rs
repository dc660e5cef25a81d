//! Loop tests against the in-memory fakes (model routed by name: `root` vs `sub`).

use std::sync::Arc;

use serde_json::Value;

use crate::testing::{FakeRepl, ScriptedModel};
use rlm_llm::Role;

use crate::{ContextPart, Rlm, RunLimits, RunResult, Status};

fn rlm(model: &Arc<ScriptedModel>, limits: RunLimits, log: Option<&std::path::Path>) -> Rlm {
    let mut builder = Rlm::builder()
        .client(Arc::clone(model) as _)
        .repl(Arc::new(FakeRepl))
        .model("root")
        .subcall_model("sub")
        .limits(limits);
    if let Some(dir) = log {
        builder = builder.log_dir(dir.to_path_buf());
    }
    builder.build().unwrap()
}

async fn run(model: &Arc<ScriptedModel>, limits: RunLimits) -> RunResult {
    rlm(model, limits, None)
        .completion(
            "what is the code?",
            vec![ContextPart::new("alpha\nsecret=XYZ\n")],
        )
        .await
        .unwrap()
}

fn read_log(result: &RunResult) -> Vec<Value> {
    let path = result.trajectory.as_ref().unwrap();
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn answers_after_code_and_logs_every_turn() {
    let model = Arc::new(ScriptedModel::default().replies(
        "root",
        &[
            "Let me look.\n```repl\nprint(context)\n```",
            "FINAL(XYZ) (found on line 2)",
        ],
    ));
    let dir = tempfile::tempdir().unwrap();
    let result = rlm(&model, RunLimits::default(), Some(dir.path()))
        .completion(
            "what is the code?",
            vec![ContextPart::new("alpha\nsecret=XYZ\n").with_name("c.txt")],
        )
        .await
        .unwrap();
    assert_eq!(result.outcome.status, Status::Answered);
    assert_eq!(result.outcome.answer.as_deref(), Some("XYZ"));
    assert_eq!(result.outcome.iterations, 2);
    assert_eq!(result.outcome.usage.models["root"].calls, 2);

    let calls = model.calls();
    let first = &calls[0].1;
    assert_eq!(first[0].role, Role::System);
    assert!(first[0].content.contains("llm_query_batched"));
    assert!(
        first[1]
            .content
            .contains("[context_0] c.txt: 17 chars, 2 lines")
    );
    assert!(first[1].content.contains("Turn 1/30"));
    // The second request carries the REPL output, fenced, and the next turn marker.
    let second = &calls[1].1;
    let feedback = &second.last().unwrap().content;
    assert!(
        feedback.contains("Output of block 1:\n```\nalpha\nsecret=XYZ\n```"),
        "{feedback}"
    );
    assert!(feedback.contains("Turn 2/30"));
    // The stop sequence cut the closing fence; the history copy has it back.
    assert!(second[2].content.ends_with("```"));

    // The conversation a session keeps: no system prompt, the answering reply last.
    let roles: Vec<Role> = result.conversation.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    assert_eq!(
        result.conversation[3].content,
        "FINAL(XYZ) (found on line 2)"
    );
    assert!(result.variables.is_some());

    let lines = read_log(&result);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["metadata", "iteration", "iteration", "variables", "result"]
    );
    assert_eq!(lines[0]["root_model"], "root");
    assert_eq!(lines[1]["code_blocks"][0]["code"], "print(context)\n");
    assert_eq!(
        lines[1]["code_blocks"][0]["result"]["stdout"],
        "alpha\nsecret=XYZ\n\n"
    );
    assert_eq!(lines[2]["final_answer"], "XYZ");
    assert!(lines[3]["variables"].is_array(), "{}", lines[3]);
    assert_eq!(lines[4]["status"], "answered");
}

#[tokio::test]
async fn subcalls_go_to_the_subcall_model_and_usage_adds_up() {
    let model = Arc::new(
        ScriptedModel::default()
            .replies(
                "root",
                &[
                    "```repl\nx = llm_query(\"summarize\")\nys = llm_query_batched([\"a\", \"b\", \"c\"])\nprint(ys)\n```",
                    "FINAL_VAR(x)",
                ],
            )
            .responder(|model, messages| {
                (model == "sub").then(|| format!("sub saw {}", messages[0].content))
            }),
    );
    let result = run(&model, RunLimits::default()).await;
    assert_eq!(result.outcome.answer.as_deref(), Some("sub saw summarize"));
    assert_eq!(result.outcome.subcalls, 4);
    assert_eq!(result.outcome.usage.models["sub"].calls, 4);
    assert_eq!(result.outcome.usage.models["root"].calls, 2);
    assert_eq!(result.outcome.usage.total.usage.total(), 6 * 15);
    let feedback = &model
        .calls()
        .last()
        .unwrap()
        .1
        .last()
        .unwrap()
        .content
        .clone();
    assert!(feedback.contains("(4 sub-calls)"), "{feedback}");
    assert!(feedback.contains("sub saw c"));
}

#[tokio::test]
async fn missing_final_var_is_reported_back_not_returned() {
    let model = Arc::new(ScriptedModel::default().replies(
        "root",
        &[
            "FINAL_VAR(result)",
            // The code-block stop sequence ends this reply at the closing fence.
            "```repl\nresult = \"42\"\n```\nFINAL_VAR(result)",
            "FINAL_VAR(result)",
        ],
    ));
    let result = run(&model, RunLimits::default()).await;
    assert_eq!(result.outcome.status, Status::Answered);
    assert_eq!(result.outcome.answer.as_deref(), Some("42"));
    assert_eq!(result.outcome.iterations, 3);
    let note = &model.calls()[1].1.last().unwrap().content.clone();
    assert!(note.contains("no variable named `result` exists"), "{note}");
}

#[tokio::test]
async fn code_errors_are_fed_back_and_too_many_end_the_run() {
    let model = Arc::new(ScriptedModel::default().replies(
        "root",
        &[
            "```repl\nraise ValueError(\"bad\")\n```",
            "```repl\nraise KeyError(\"worse\")\n```",
            "unused",
        ],
    ));
    let result = run(
        &model,
        RunLimits {
            max_consecutive_errors: 2,
            ..RunLimits::default()
        },
    )
    .await;
    assert_eq!(result.outcome.status, Status::ErrorLimit);
    assert_eq!(result.outcome.answer, None);
    assert_eq!(result.outcome.iterations, 2);
    let feedback = &model.calls()[1].1.last().unwrap().content.clone();
    assert!(
        feedback.contains("[error]\nValueError(\"bad\") (line 1)"),
        "{feedback}"
    );
}

#[tokio::test]
async fn iteration_limit_asks_once_for_a_final_answer() {
    let model = Arc::new(ScriptedModel::default().replies(
        "root",
        &[
            "```repl\nprint(\"one\")\n```",
            "```repl\nprint(\"two\")\n```",
            "Based on what I saw:\nFINAL(two things)",
        ],
    ));
    let result = run(
        &model,
        RunLimits {
            max_iterations: 2,
            ..RunLimits::default()
        },
    )
    .await;
    assert_eq!(result.outcome.status, Status::ForcedAnswer);
    assert_eq!(result.outcome.answer.as_deref(), Some("two things"));
    assert_eq!(result.outcome.iterations, 3);
    let last = model
        .calls()
        .last()
        .unwrap()
        .1
        .last()
        .unwrap()
        .content
        .clone();
    assert!(last.contains("You have used all 2 turns"), "{last}");

    // A prose reply to the last request is the answer; an empty one is not.
    let model =
        Arc::new(ScriptedModel::default().replies("root", &["```repl\nprint(1)\n```", "It is 7."]));
    let result = run(
        &model,
        RunLimits {
            max_iterations: 1,
            ..RunLimits::default()
        },
    )
    .await;
    assert_eq!(result.outcome.answer.as_deref(), Some("It is 7."));
    let model =
        Arc::new(ScriptedModel::default().replies("root", &["```repl\nprint(1)\n```", "  "]));
    let result = run(
        &model,
        RunLimits {
            max_iterations: 1,
            ..RunLimits::default()
        },
    )
    .await;
    assert_eq!(result.outcome.status, Status::IterationLimit);
    assert_eq!(result.outcome.answer, None);
}

/// A small model that keeps writing code when asked for its final answer: the code is not an
/// answer (it would be printed raw as one), and the run ends at the iteration limit with the
/// `answer` variable as the partial answer.
#[tokio::test]
async fn code_in_reply_to_the_last_request_is_not_an_answer() {
    for last in [
        "```repl\nprint(len(context))\n```",
        "```python\nanswer = 1\n",
        "```\nx = 2\n```",
    ] {
        let model = Arc::new(ScriptedModel::default().replies(
            "root",
            &[
                "```repl\nanswer = {\"content\": \"so far 3\", \"ready\": False}\n```",
                last,
            ],
        ));
        let result = run(
            &model,
            RunLimits {
                max_iterations: 1,
                ..RunLimits::default()
            },
        )
        .await;
        assert_eq!(result.outcome.status, Status::IterationLimit, "{last}");
        assert_eq!(result.outcome.answer, None, "{last}");
        assert_eq!(
            result.outcome.partial_answer.as_deref(),
            Some("so far 3"),
            "{last}"
        );
    }
}

/// A reply to the last request that is only an answer call written as code (Qwen2.5-Coder-1.5B
/// ended three runs so, each with the right count) is run for its answer; more code is not.
#[tokio::test]
async fn a_lone_answer_call_in_reply_to_the_last_request_is_run() {
    for (last, expected) in [
        ("```repl\nFINAL_VAR(\"count\")\n```", Some("58")),
        ("```repl\nfinal_var(\"count\")\n```", Some("58")),
        ("```repl\nFINAL_VAR(\"missing\")\n```", None),
        ("```repl\nFINAL_VAR(\"count\")\nprint(count)\n```", None),
    ] {
        let model =
            Arc::new(ScriptedModel::default().replies("root", &["```repl\ncount = 58\n```", last]));
        let result = run(
            &model,
            RunLimits {
                max_iterations: 1,
                ..RunLimits::default()
            },
        )
        .await;
        assert_eq!(result.outcome.answer.as_deref(), expected, "{last}");
        let status = if expected.is_some() {
            Status::ForcedAnswer
        } else {
            Status::IterationLimit
        };
        assert_eq!(result.outcome.status, status, "{last}");
    }
}

#[tokio::test]
async fn token_budget_stops_with_the_partial_answer() {
    let model = Arc::new(ScriptedModel::default().replies(
        "root",
        &[
            "```repl\nanswer = {\"content\": \"maybe XYZ\", \"ready\": False}\n```",
            "```repl\nprint(\"more\")\n```",
        ],
    ));
    let result = run(
        &model,
        RunLimits {
            spend: rlm_llm::Budget {
                max_tokens: Some(20),
                ..rlm_llm::Budget::default()
            },
            ..RunLimits::default()
        },
    )
    .await;
    assert_eq!(result.outcome.status, Status::TokenBudget);
    assert_eq!(result.outcome.answer, None);
    assert_eq!(result.outcome.partial_answer.as_deref(), Some("maybe XYZ"));
    assert_eq!(result.outcome.iterations, 2);
}

#[tokio::test]
async fn ready_answer_variable_finishes() {
    let model = Arc::new(ScriptedModel::default().replies(
        "root",
        &["```repl\nanswer = {\"content\": \"done\", \"ready\": True}\n```"],
    ));
    let result = run(&model, RunLimits::default()).await;
    assert_eq!(result.outcome.status, Status::Answered);
    assert_eq!(result.outcome.answer.as_deref(), Some("done"));
}

#[tokio::test]
async fn subcall_budget_refuses_calls_and_stops() {
    let model = Arc::new(
        ScriptedModel::default()
            .replies(
                "root",
                &["```repl\nys = llm_query_batched([\"a\", \"b\", \"c\"])\nprint(ys)\n```"],
            )
            .responder(|model, _| (model == "sub").then(|| "ok".to_owned())),
    );
    let result = run(
        &model,
        RunLimits {
            max_subcalls: Some(2),
            ..RunLimits::default()
        },
    )
    .await;
    assert_eq!(result.outcome.status, Status::SubcallBudget);
    assert_eq!(result.outcome.usage.models["sub"].calls, 2);
}

#[tokio::test]
async fn zero_timeout_stops_before_any_call() {
    let model = Arc::new(ScriptedModel::default());
    let result = run(
        &model,
        RunLimits {
            timeout: Some(std::time::Duration::ZERO),
            ..RunLimits::default()
        },
    )
    .await;
    assert_eq!(result.outcome.status, Status::Timeout);
    assert!(model.calls().is_empty());
}

#[tokio::test]
async fn model_failure_is_a_status_with_the_error() {
    let model = Arc::new(ScriptedModel::default());
    let result = run(&model, RunLimits::default()).await;
    assert_eq!(result.outcome.status, Status::ModelError);
    // The client's error arrives typed, with its kind, not flattened to text.
    let error = result.error.unwrap();
    assert_eq!(error.kind(), rlm_llm::ErrorKind::Input);
    assert!(error.to_string().contains("no scripted reply"), "{error}");
}

#[tokio::test]
async fn depth_two_runs_a_child_with_its_own_session_and_log() {
    // The child run uses the sub model as its root: it answers the delegated prompt with code,
    // and its own llm_query is a plain call (depth limit reached).
    let model = Arc::new(
        ScriptedModel::default()
            .replies(
                "root",
                &[
                    "```repl\nr = rlm_query(\"count the lines\")\n```",
                    "FINAL_VAR(r)",
                ],
            )
            .responder(|model, messages| {
                if model != "sub" {
                    return None;
                }
                if messages[0].role == Role::System {
                    let turn = messages.len();
                    return Some(if turn == 2 {
                        "```repl\nn = llm_query(\"leaf\")\nprint(context)\n```".to_owned()
                    } else {
                        "FINAL_VAR(n)".to_owned()
                    });
                }
                Some(format!("leaf answer to {}", messages[0].content))
            }),
    );
    let dir = tempfile::tempdir().unwrap();
    let result = Rlm::builder()
        .client(Arc::clone(&model) as _)
        .repl(Arc::new(FakeRepl))
        .model("root")
        .subcall_model("sub")
        .max_depth(2)
        .log_dir(dir.path().to_path_buf())
        .build()
        .unwrap()
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap();
    assert_eq!(
        result.outcome.answer.as_deref(),
        Some("leaf answer to leaf")
    );
    // root: 2 turns; child: 2 root-model turns on "sub" + 1 leaf call on "sub".
    assert_eq!(result.outcome.usage.models["root"].calls, 2);
    assert_eq!(result.outcome.usage.models["sub"].calls, 3);
    assert_eq!(result.outcome.subcalls, 2);

    let parent = read_log(&result);
    let call = &parent[1]["code_blocks"][0]["result"]["rlm_calls"][0];
    assert_eq!(call["kind"], "rlm_query");
    let child_id = call["child_run_id"].as_str().unwrap();
    assert_eq!(child_id, format!("{}.1", result.outcome.run_id));
    assert_eq!(
        call["usage_summary"]["model_usage_summaries"]["sub"]["total_calls"],
        3
    );
    let child_log = call["child_log"].as_str().unwrap();
    let child: Vec<Value> = std::fs::read_to_string(child_log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(child[0]["parent_run_id"], result.outcome.run_id.as_str());
    assert_eq!(child[0]["depth"], 1);
    // The child saw the delegated prompt as its context.
    assert_eq!(
        child[1]["code_blocks"][0]["result"]["stdout"],
        "count the lines\n"
    );
}

#[tokio::test]
async fn child_cannot_outspend_the_parent() {
    // Each call costs 15 tokens. The root has 40: its own turn (15) leaves 25, so the child's
    // first turn (30 total) fits, and its second is refused by the parent's budget.
    let model = Arc::new(
        ScriptedModel::default()
            .replies("root", &["```repl\nr = rlm_query(\"x\")\nprint(r)\n```"])
            .responder(|model, _| (model == "sub").then(|| "```repl\nprint(1)\n```".to_owned())),
    );
    let result = Rlm::builder()
        .client(Arc::clone(&model) as _)
        .repl(Arc::new(FakeRepl))
        .model("root")
        .subcall_model("sub")
        .max_depth(2)
        .limits(RunLimits {
            spend: rlm_llm::Budget {
                max_tokens: Some(40),
                ..rlm_llm::Budget::default()
            },
            ..RunLimits::default()
        })
        .child_limits(RunLimits {
            spend: rlm_llm::Budget {
                max_tokens: Some(10_000),
                ..rlm_llm::Budget::default()
            },
            ..RunLimits::default()
        })
        .build()
        .unwrap()
        .completion("q", vec![ContextPart::new("data")])
        .await
        .unwrap();
    assert_eq!(result.outcome.status, Status::TokenBudget);
    assert_eq!(result.outcome.usage.models["sub"].calls, 2);
    assert_eq!(result.outcome.usage.total.usage.total(), 45);
}

#[tokio::test]
async fn an_answer_cut_by_the_code_block_stop_is_asked_for_again_whole() {
    let answer = "FINAL(Run this:\n```python\nprint(1)\n```\nand read the output.)";
    let model = Arc::new(ScriptedModel::default().replies("root", &[answer, answer]));
    let dir = tempfile::tempdir().unwrap();
    let result = rlm(&model, RunLimits::default(), Some(dir.path()))
        .completion("how?", vec![ContextPart::new("x")])
        .await
        .unwrap();
    assert_eq!(result.outcome.status, Status::Answered);
    assert_eq!(
        result.outcome.answer.as_deref(),
        Some("Run this:\n```python\nprint(1)\n```\nand read the output.")
    );
    assert_eq!(result.outcome.iterations, 1);
    assert_eq!(result.outcome.usage.models["root"].calls, 2);
    let log = read_log(&result);
    let notes = log[1]["notes"].to_string();
    assert!(notes.contains("cut inside FINAL"), "{notes}");
    // The turn's usage counts both calls (10 input tokens each).
    assert_eq!(log[1]["usage"]["input_tokens"], 20, "{}", log[1]);
}

/// A model the run may call but can never reach (sub-call or allowed model without its key,
/// an unknown provider) is refused at build time with the client's typed error; a model whose
/// provider needs no key passes.
#[test]
fn models_the_run_cannot_call_are_refused_before_it_starts() {
    let client = Arc::new(
        rlm_llm::LlmClient::builder()
            .builtin_providers(&|_| None)
            .build()
            .unwrap(),
    );
    let build = |subcall: &str, allowed: &[&str]| {
        Rlm::builder()
            .client(Arc::clone(&client) as _)
            .repl(Arc::new(FakeRepl))
            .model("ollama:root")
            .subcall_model(subcall)
            .allowed_models(allowed.iter().map(|m| (*m).to_owned()).collect())
            .build()
    };
    assert!(build("ollama:sub", &[]).is_ok());
    for (subcall, allowed, refused) in [
        ("openai:sub", &[][..], "openai:sub"),
        ("ollama:sub", &["anthropic:other"][..], "anthropic:other"),
        ("nosuch:sub", &[][..], "nosuch:sub"),
    ] {
        let err = build(subcall, allowed).unwrap_err();
        let crate::Error::Model { model, source } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(model, refused);
        assert_eq!(source.kind(), rlm_llm::ErrorKind::Input, "{source}");
    }
}

/// A one-function table: `lookup(key)` answers from a fixed map, `describe()` names it.
#[derive(Debug)]
struct Lookup;

impl crate::HostFunctions for Lookup {
    fn functions(&self) -> Vec<crate::FunctionSpec> {
        vec![crate::FunctionSpec::new(
            "lookup",
            vec![crate::FunctionParameter::required("key")],
        )]
    }

    fn call(
        &self,
        name: &str,
        arguments: &serde_json::Map<String, Value>,
    ) -> Result<Value, crate::FunctionError> {
        match (name, arguments.get("key").and_then(Value::as_str)) {
            ("lookup", Some("backup")) => Ok(Value::from("falcon")),
            _ => Err(crate::FunctionError::new(
                crate::RaisedKind::LookupError,
                "no such key",
            )),
        }
    }

    fn describe(&self) -> String {
        "The data is a lookup table (store-description-marker).".to_owned()
    }
}

#[tokio::test]
async fn child_runs_inherit_the_host_functions_and_are_told_so() {
    // The root delegates; the child (sub model as its root) calls the host function and
    // answers with its result.
    let model = Arc::new(
        ScriptedModel::default()
            .replies(
                "root",
                &[
                    "```repl\nr = rlm_query(\"find the backup host\")\n```",
                    "FINAL_VAR(r)",
                ],
            )
            .responder(|model, messages| {
                (model == "sub").then(|| {
                    if messages.len() == 2 {
                        "```repl\nh = lookup({\"key\": \"backup\"})\n```".to_owned()
                    } else {
                        "FINAL_VAR(h)".to_owned()
                    }
                })
            }),
    );
    let dir = tempfile::tempdir().unwrap();
    let result = Rlm::builder()
        .client(Arc::clone(&model) as _)
        .repl(Arc::new(FakeRepl))
        .functions(Arc::new(Lookup))
        .model("root")
        .subcall_model("sub")
        .max_depth(2)
        .log_dir(dir.path().to_path_buf())
        .build()
        .unwrap()
        .completion("Where are backups kept?", vec![])
        .await
        .unwrap();
    assert_eq!(result.outcome.status, Status::Answered);
    assert_eq!(result.outcome.answer.as_deref(), Some("falcon"));

    // The child's prompts: the functions' text says what `context` holds in a child, and the
    // first message describes the data and the delegated request.
    let calls = model.calls();
    let (_, child_first) = calls
        .iter()
        .find(|(model, _)| model == "sub")
        .expect("the child run called the model");
    let system = &child_first[0].content;
    assert!(
        system.contains("This is a child run: `context` holds only the request"),
        "{system}"
    );
    assert!(system.contains("get_chunks(ids)"), "{system}");
    let first = &child_first[1].content;
    assert!(first.contains("store-description-marker"), "{first}");
    assert!(first.contains("delegated request"), "{first}");
    // The root's own prompt keeps the root's wording.
    let (_, root_first) = &calls[0];
    assert!(
        root_first[0]
            .content
            .contains("The data is not in `context`.")
    );

    // The child's call is in the child's log.
    let parent = read_log(&result);
    let call = &parent[1]["code_blocks"][0]["result"]["rlm_calls"][0];
    let child: Vec<Value> = std::fs::read_to_string(call["child_log"].as_str().unwrap())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let host_calls = &child[1]["code_blocks"][0]["result"]["host_calls"];
    assert_eq!(host_calls[0]["name"], "lookup");
    assert_eq!(host_calls[0]["result"], "\"falcon\"");
    assert!(parent[1]["code_blocks"][0]["result"]["host_calls"].is_null());
}

/// Counts the sessions it opens; opens none when told the sandbox is broken.
#[derive(Debug, Default)]
struct CountingRepl {
    opened: std::sync::atomic::AtomicUsize,
    broken: bool,
}

impl crate::ReplFactory for CountingRepl {
    fn open(
        &self,
        spec: crate::SessionSpec,
    ) -> futures::future::BoxFuture<'_, Result<Box<dyn crate::ReplSession>, crate::ReplError>> {
        self.opened
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.broken {
            return Box::pin(async { Err(crate::ReplError::new("no sandbox here")) });
        }
        FakeRepl.open(spec)
    }
}

/// A run answered without code starts no sandbox session; one that runs code opens it once;
/// a sandbox that cannot start still ends the run with its error.
#[tokio::test]
async fn the_repl_opens_only_when_code_first_runs() {
    let cases: [(&[&str], usize); 2] = [
        (&["FINAL(at once)"], 0),
        (
            &[
                "```repl\nprint(context)\n```",
                "```repl\nprint(context)\n```",
                "FINAL(x)",
            ],
            1,
        ),
    ];
    for (replies, expected) in cases {
        let model = Arc::new(ScriptedModel::default().replies("root", replies));
        let repl = Arc::new(CountingRepl::default());
        let result = Rlm::builder()
            .client(Arc::clone(&model) as _)
            .repl(Arc::clone(&repl) as _)
            .model("root")
            .build()
            .unwrap()
            .completion("q", vec![ContextPart::new("text")])
            .await
            .unwrap();
        assert_eq!(result.outcome.status, Status::Answered);
        assert_eq!(
            repl.opened.load(std::sync::atomic::Ordering::SeqCst),
            expected,
            "{replies:?}"
        );
    }
    let model = Arc::new(ScriptedModel::default().replies("root", &["```repl\nprint(1)\n```"]));
    let broken = Arc::new(CountingRepl {
        broken: true,
        ..CountingRepl::default()
    });
    let error = Rlm::builder()
        .client(Arc::clone(&model) as _)
        .repl(broken as _)
        .model("root")
        .build()
        .unwrap()
        .completion("q", vec![ContextPart::new("text")])
        .await
        .unwrap_err();
    assert!(
        matches!(&error, crate::Error::Repl(repl) if repl.message == "no sandbox here"),
        "{error:?}"
    );
    assert_eq!(
        model.calls().len(),
        1,
        "the run stops after the turn that needed the REPL"
    );
}
