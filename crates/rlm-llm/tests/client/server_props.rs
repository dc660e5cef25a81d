//! `LlmClient::server_props`: llama.cpp's `GET /props`, asked once per provider, only of a
//! server on this machine.

use rlm_llm::ServerProps;

use crate::server;

#[tokio::test]
async fn a_local_server_is_asked_once_for_its_window_and_slots() {
    let fake = server().await;
    fake.set_props(serde_json::json!({
        "default_generation_settings": {"n_ctx": 8192},
        "total_slots": 2,
    }));
    let client = rlm_llm::testing::client_builder(fake.address())
        .build()
        .unwrap();
    for _ in 0..3 {
        let props: ServerProps = client.server_props("m").await.unwrap();
        assert_eq!(props.context_window, Some(8_192));
        assert_eq!(props.total_slots, Some(2));
    }
    assert_eq!(fake.props_requests(), 1, "asked once per provider");

    // A server without /props (404) reports nothing, and is not asked again.
    let silent = server().await;
    let client = rlm_llm::testing::client_builder(silent.address())
        .build()
        .unwrap();
    assert_eq!(client.server_props("m").await, None);
    assert_eq!(client.server_props("m").await, None);
    assert_eq!(silent.props_requests(), 1);
    // An unknown provider is not asked.
    assert_eq!(client.server_props("nowhere:m").await, None);
}

/// A body over `PROPS_BODY_LIMIT` (a chat template of 2 MiB) is not read: nothing reported.
#[tokio::test]
async fn a_body_past_the_limit_is_not_read() {
    let fake = server().await;
    fake.set_props(serde_json::json!({
        "total_slots": 2,
        "chat_template": "x".repeat(2 << 20),
    }));
    let client = rlm_llm::testing::client_builder(fake.address())
        .build()
        .unwrap();
    assert_eq!(client.server_props("m").await, None);
    assert_eq!(fake.props_requests(), 1);
}
