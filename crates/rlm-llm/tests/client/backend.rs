//! A provider that is not an HTTP service ([`ChatBackend`]) behind the same client: model
//! strings, checks, prices, stop sequences, estimated usage, limiter and recordings.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rlm_llm::{
    BackendReply, Budget, ChatBackend, ChatRequest, Error, ErrorKind, Ledger, LlmClient,
    ModelCapabilities, Price, ToolDefinition,
};

/// Answers from a script, in order, and remembers what it was asked.
#[derive(Debug, Default)]
struct Scripted {
    replies: Mutex<Vec<BackendReply>>,
    asked: Mutex<Vec<(String, ChatRequest)>>,
    refuse_model: Option<&'static str>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

impl Scripted {
    fn new(replies: &[&str]) -> Arc<Self> {
        let replies = replies
            .iter()
            .rev()
            .map(|text| BackendReply {
                text: (*text).to_owned(),
                finish_reason: Some("end_turn".to_owned()),
                ..BackendReply::default()
            })
            .collect();
        Arc::new(Self {
            replies: Mutex::new(replies),
            ..Self::default()
        })
    }
}

impl ChatBackend for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        model: &'a str,
    ) -> Pin<Box<dyn Future<Output = rlm_llm::Result<BackendReply>> + Send + 'a>> {
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            // Let the other calls of a batch start if the limiter allows them.
            tokio::task::yield_now().await;
            self.asked
                .lock()
                .unwrap()
                .push((model.to_owned(), request.clone()));
            let reply = self.replies.lock().unwrap().pop();
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            reply.ok_or_else(|| Error::Backend {
                provider: "scripted".into(),
                model: model.into(),
                message: "the script is used up".into(),
                kind: ErrorKind::Fatal,
            })
        })
    }

    fn check(&self, model: &str) -> rlm_llm::Result<()> {
        match self.refuse_model {
            Some(refused) if refused == model => Err(Error::Backend {
                provider: "scripted".into(),
                model: model.into(),
                message: "not offered".into(),
                kind: ErrorKind::Input,
            }),
            _ => Ok(()),
        }
    }

    fn price(&self, _model: &str) -> Option<Price> {
        Some(Price {
            input_per_mtok: 0.0,
            output_per_mtok: 0.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        })
    }

    fn capabilities(&self, _model: &str) -> ModelCapabilities {
        ModelCapabilities {
            tools: false,
            ..ModelCapabilities::default()
        }
    }
}

fn client_with(backend: Arc<Scripted>, max_concurrency: usize) -> LlmClient {
    LlmClient::builder()
        // The built-in providers need keys; none is given.
        .builtin_providers(&|_| None)
        .backend("scripted", backend, max_concurrency)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_backend_answers_without_a_key_with_usage_estimated_and_stops_applied() {
    let backend = Scripted::new(&["print(1)\n```\nmore text the model wrote", "plain"]);
    let client = client_with(backend.clone(), 4);
    client.check_model("scripted:any-model").unwrap();
    assert!(matches!(
        client.check_model("openai:gpt-4o"),
        Err(Error::MissingApiKey { .. })
    ));
    let unknown = client.check_model("nope:m").unwrap_err().to_string();
    assert!(unknown.contains("scripted"), "{unknown}");
    assert_eq!(client.max_concurrency("scripted"), Some(4));
    // The price table knows gpt-4o; through the backend the backend's price counts.
    assert_eq!(client.price("scripted:gpt-4o").unwrap().input_per_mtok, 0.0);
    assert!(!client.capabilities("scripted:m").unwrap().tools);

    let request = ChatRequest::new("scripted:hinted")
        .system("sys")
        .user("question?")
        .stop("\n```\n");
    let answer = client.chat(&request).await.unwrap();
    assert_eq!(answer.text, "print(1)");
    assert_eq!(answer.finish_reason.as_deref(), Some("stop_sequence"));
    assert_eq!(answer.model, "scripted:hinted");
    assert!(answer.usage_estimated);
    assert_eq!(answer.usage.input_tokens, 4, "12 bytes of input");
    assert_eq!(answer.usage.output_tokens, 3, "8 bytes of answer");
    assert_eq!(answer.cost_usd, Some(0.0));

    let mut streamed = String::new();
    let second = client
        .chat_streaming(&ChatRequest::new("scripted:m").user("x"), &mut |piece| {
            streamed.push_str(piece)
        })
        .await
        .unwrap();
    assert_eq!(
        (second.text.as_str(), streamed.as_str()),
        ("plain", "plain")
    );

    let asked = backend.asked.lock().unwrap();
    assert_eq!(asked[0].0, "hinted", "the backend gets the model name part");
    assert_eq!(asked[0].1.stop, ["\n```\n"]);
    let report = client.ledger().report();
    assert_eq!(report.total.calls, 2);
    assert_eq!(report.total.estimated_calls, 2);
    assert!(!report.total.cost_is_partial());
    let shown = serde_json::to_value(&report.total).unwrap();
    assert_eq!(shown["estimated_calls"], 2);
}

#[tokio::test]
async fn backend_refusals_keep_their_kind_and_are_counted_as_failures() {
    let backend = Arc::new(Scripted {
        refuse_model: Some("off"),
        ..Scripted::default()
    });
    let client = client_with(backend, 1);
    let refused = client.check_model("scripted:off").unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Input);
    assert!(refused.to_string().contains("not offered"), "{refused}");

    // Nothing scripted: the backend's own error comes back unchanged, not retried.
    let failed = client
        .chat(&ChatRequest::new("scripted:m").user("x"))
        .await
        .unwrap_err();
    assert_eq!(failed.kind(), ErrorKind::Fatal);
    assert!(failed.to_string().contains("used up"), "{failed}");
    assert_eq!(client.ledger().report().total.failures, 1);

    let tools = ChatRequest::new("scripted:m")
        .user("x")
        .tool(ToolDefinition::new(
            "t",
            "a tool",
            serde_json::json!({"type": "object"}),
        ));
    let err = client.chat(&tools).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Input);
    assert!(err.to_string().contains("tools"), "{err}");
}

#[tokio::test]
async fn backend_calls_respect_its_limiter_and_the_budget() {
    let backend = Scripted::new(&["a", "b", "c", "d"]);
    let client = client_with(backend.clone(), 2);
    let requests: Vec<ChatRequest> = (0..4)
        .map(|n| ChatRequest::new("scripted:m").user(format!("q{n}")))
        .collect();
    let answers = client.chat_batch(&requests).await;
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    assert_eq!(backend.most_in_flight.load(Ordering::SeqCst), 2);

    let limited = client.with_ledger(Ledger::with_budget(Budget {
        max_calls: Some(0),
        ..Budget::default()
    }));
    let err = limited
        .chat(&ChatRequest::new("scripted:m").user("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::BudgetExhausted { .. }), "{err}");
}

/// A backend reporting 1,000,000 output tokens for a call capped at 50: the calls of a batch
/// waiting for its one slot are refused when their turn comes, not asked.
#[tokio::test]
async fn backend_calls_waiting_for_a_slot_are_not_asked_after_an_over_report() {
    let backend = Arc::new(Scripted {
        replies: Mutex::new(
            (0..8)
                .map(|_| BackendReply {
                    text: "ok".to_owned(),
                    usage: Some(rlm_llm::Usage {
                        input_tokens: 10,
                        output_tokens: 1_000_000,
                        ..rlm_llm::Usage::default()
                    }),
                    ..BackendReply::default()
                })
                .collect(),
        ),
        ..Scripted::default()
    });
    let client = client_with(backend.clone(), 1).with_ledger(Ledger::with_budget(Budget {
        max_tokens: Some(100_000),
        ..Budget::default()
    }));
    let requests: Vec<ChatRequest> = (0..8)
        .map(|n| {
            ChatRequest::new("scripted:m")
                .user(format!("q{n}"))
                .max_tokens(50)
        })
        .collect();
    let answers = client.chat_batch(&requests).await;
    assert_eq!(backend.asked.lock().unwrap().len(), 1);
    assert!(answers[0].is_ok());
    for refused in &answers[1..] {
        assert!(
            matches!(refused, Err(Error::BudgetExhausted { .. })),
            "{refused:?}"
        );
    }
    assert_eq!(client.ledger().total().failures, 0);
}
