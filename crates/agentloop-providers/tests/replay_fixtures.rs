//! Every recorded stream, served by a mock server and decoded by the real
//! provider, pinned as a snapshot of the normalised turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_providers::{HttpProvider, replay_sse};
use agentloop_types::ModelChunk;
use common::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

async fn replay_fixture(name: &str) -> Vec<serde_json::Value> {
    let api = fixture_api(name);
    let mut rendered = Vec::new();
    let bodies = fixture_bodies(name);
    if bodies.len() == 1 {
        let recording = std::fs::read_to_string(fixture_path(name)).unwrap();
        assert_eq!(
            agentloop_providers::sse_from_json_lines(api, &recording),
            bodies[0]
        );
    }
    for body in bodies {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(endpoint_path(api)))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "text/event-stream")
                    .insert_header("request-id", "req_test")
                    .set_body_string(body.clone()),
            )
            .expect(1)
            .mount(&server)
            .await;
        let provider = HttpProvider::new(config(api, &server.uri())).unwrap();
        let turn = run(&provider, request("test-model")).await;
        assert_eq!(turn.after_end, 0, "nothing after the end of the turn");
        if turn.error.is_none() {
            assert!(
                matches!(turn.chunks.last(), Some(ModelChunk::Finish { .. })),
                "a successful turn ends with one finish"
            );
            let finishes = turn
                .chunks
                .iter()
                .filter(|c| matches!(c, ModelChunk::Finish { .. }))
                .count();
            assert_eq!(finishes, 1);
        }
        // The replay entry point takes the same code path.
        let replay = replay_sse(api, body.as_bytes());
        assert_eq!(replay.chunks, turn.chunks);
        assert_eq!(
            replay.error.as_ref().map(|e| &e.message),
            turn.error.as_ref().map(|e| &e.message)
        );
        rendered.push(render(&turn.chunks, turn.error.as_ref()));
    }
    rendered
}

macro_rules! fixture_test {
    ($test:ident, $file:literal) => {
        #[tokio::test]
        async fn $test() {
            let rendered = replay_fixture($file).await;
            insta::assert_json_snapshot!(rendered);
        }
    };
}

fixture_test!(anthropic_text, "anthropic-text.chunks.txt");
fixture_test!(
    anthropic_clear_thinking,
    "anthropic-clear-thinking.1.chunks.txt"
);
fixture_test!(anthropic_json_tool, "anthropic-json-tool.1.chunks.txt");
fixture_test!(
    anthropic_web_search_tool,
    "anthropic-web-search-tool.1.chunks.txt"
);
fixture_test!(
    anthropic_code_execution_prompt_cache,
    "anthropic-code-execution-20260120-prompt-cache.1.chunks.txt"
);
fixture_test!(
    anthropic_web_fetch_tool,
    "anthropic-web-fetch-tool.1.chunks.txt"
);
fixture_test!(anthropic_mcp, "anthropic-mcp.1.chunks.txt");
fixture_test!(anthropic_compaction, "anthropic-compaction.1.chunks.txt");
fixture_test!(openai_chat_text, "openai-text.chunks.txt");
fixture_test!(azure_model_router, "azure-model-router.1.chunks.txt");
fixture_test!(
    openai_responses_reasoning_encrypted_content,
    "openai-reasoning-encrypted-content.1.chunks.txt"
);
fixture_test!(openai_responses_error, "openai-error.1.chunks.txt");
fixture_test!(
    openai_responses_web_search_tool,
    "openai-web-search-tool.1.chunks.txt"
);
fixture_test!(gemini_text, "google-text.chunks.txt");
fixture_test!(gemini_tool_call, "google-tool-call.chunks.txt");
fixture_test!(
    gemini_text_then_call_with_id,
    "google-issue-10781.1.chunks.txt"
);
fixture_test!(
    gemini_no_args_and_streamed_args_calls,
    "google-stream-no-args-tool-call.chunks.txt"
);
fixture_test!(
    gemini_parallel_streamed_calls,
    "google-stream-tool-call-arguments.chunks.txt"
);
fixture_test!(
    gemini_nested_streamed_arguments,
    "google-vertex-stream-tool-call-arguments-nested.1.chunks.txt"
);
fixture_test!(
    gemma_thoughts_and_usage,
    "google-gemma-4-output-usage.chunks.txt"
);
fixture_test!(
    gemini_search_tool_usage,
    "google-issue-19822-google-search-live.chunks.txt"
);
