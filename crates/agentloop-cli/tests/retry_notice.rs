//! A retried model request is announced on stderr, in words a person reads:
//! what failed (once), how long until the next try, which try of how many.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const STREAM: &str = "event: message_start
data: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}

event: content_block_start
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello.\"}}

event: content_block_stop
data: {\"type\":\"content_block_stop\",\"index\":0}

event: message_delta
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}

event: message_stop
data: {\"type\":\"message_stop\"}

";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_request_is_announced_and_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "50")
                .set_body_string(
                    r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
                ),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(STREAM),
        )
        .mount(&server)
        .await;
    let home = tempfile::tempdir().unwrap();
    let base = server.uri();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .args(["run", "hi", "--provider", "anthropic", "--base-url", &base])
            .env("ANTHROPIC_API_KEY", "sk-test")
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("Hello."));
    let notice = stderr
        .lines()
        .find(|l| l.contains("retrying in"))
        .unwrap_or_else(|| panic!("no retry notice in: {stderr}"));
    assert!(notice.contains("rate_limit_error"), "{notice}");
    assert!(notice.contains("(1/"), "{notice}");
    // Said once, with no fields restating it.
    assert_eq!(notice.matches("slow down").count(), 1, "{notice}");
    assert!(!notice.contains("retry="), "{notice}");
    assert!(!notice.contains("wait_ms="), "{notice}");
    assert!(
        !notice.contains("agentloop_providers"),
        "no module path: {notice}"
    );
    assert!(!stderr.contains("sk-test"));
}
