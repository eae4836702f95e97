//! Snapshots of the request bodies each adapter sends, and the headers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_providers::{HttpProvider, ProviderConfig};
use agentloop_types::{
    ApiKind, AttachmentError, AttachmentLoader, AttachmentSource, ContentBlock, LoadedAttachment,
    Message, ModelRequest, ProviderErrorKind, ReasoningEffort, ReasoningSummary, RequestOptions,
    ResponseFormat, Role, ToolDefinition, ToolResultBlock, ToolUseBlock,
};
use common::*;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

struct Loader;

#[async_trait::async_trait]
impl AttachmentLoader for Loader {
    async fn load(&self, id: &str) -> Result<LoadedAttachment, AttachmentError> {
        match id {
            "img-1" => Ok(LoadedAttachment {
                media_type: "image/png".into(),
                data: vec![0x89, b'P', b'N', b'G'],
            }),
            "notes" => Ok(LoadedAttachment {
                media_type: "text/plain".into(),
                data: b"meeting notes".to_vec(),
            }),
            other => Err(AttachmentError::NotFound(other.into())),
        }
    }
}

fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: "calculator".into(),
            description: "Adds two numbers.".into(),
            input_schema: json!({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}).into(),
        },
        ToolDefinition {
            name: "now".into(),
            description: "Current time.".into(),
            input_schema: json!({}).into(),
        },
    ]
}

/// A history touching every block kind, produced by all three APIs.
fn history() -> Vec<Message> {
    vec![
        Message::system_text("s1", "Answer briefly."),
        Message::new(
            "u1",
            Role::User,
            vec![
                ContentBlock::text("What is in these?"),
                ContentBlock::Image {
                    source: AttachmentSource::Stored { id: "img-1".into() },
                },
                ContentBlock::Image {
                    source: AttachmentSource::Url {
                        url: "https://example.com/cat.jpg".into(),
                    },
                },
                ContentBlock::Document {
                    source: AttachmentSource::Base64 {
                        media_type: "application/pdf".into(),
                        data: "JVBERi0=".into(),
                    },
                    name: Some("report.pdf".into()),
                },
                ContentBlock::Document {
                    source: AttachmentSource::Stored { id: "notes".into() },
                    name: Some("notes.txt".into()),
                },
            ],
        ),
        Message::new(
            "a1",
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    thinking: "Let me add.".into(),
                    signature: Some("sig-abc".into()),
                },
                ContentBlock::RedactedThinking {
                    data: "opaque-redacted".into(),
                },
                ContentBlock::Thinking {
                    thinking: "Summary from OpenAI.".into(),
                    signature: None,
                },
                ContentBlock::Provider {
                    api: ApiKind::OpenaiResponses,
                    block: json!({"id":"rs_1","type":"reasoning","encrypted_content":"gAAA","summary":[]}),
                },
                ContentBlock::Provider {
                    api: ApiKind::AnthropicMessages,
                    block: json!({"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}),
                },
                ContentBlock::text(""),
                ContentBlock::Text {
                    text: "I will calculate.".into(),
                    citations: vec![
                        json!({"type":"web_search_result_location","url":"https://example.com","cited_text":"x","encrypted_index":"e","title":"t"}),
                    ],
                },
                ContentBlock::ToolUse(ToolUseBlock {
                    id: "call_1".into(),
                    name: "calculator".into(),
                    input: json!({"a": 1, "b": 2}).into(),
                }),
                ContentBlock::ToolUse(ToolUseBlock {
                    id: "call_2".into(),
                    name: "now".into(),
                    input: json!("{\"cut").into(),
                }),
            ],
        ),
        Message::new(
            "u2",
            Role::User,
            vec![
                ContentBlock::ToolResult(ToolResultBlock::ok("call_1", "3")),
                ContentBlock::ToolResult(ToolResultBlock::error("call_2", "Invalid input: EOF")),
                ContentBlock::text("Thanks, continue."),
            ],
        ),
        Message::system_text("s2", "Be precise."),
    ]
}

fn full_request(api: ApiKind, model: &str) -> ModelRequest {
    ModelRequest {
        options: RequestOptions {
            model: model.into(),
            system_prompt: Some("You are a test assistant.".into()),
            temperature: Some(0.5),
            max_tokens: 2048,
            stop_sequences: if api == ApiKind::OpenaiResponses {
                vec![]
            } else {
                vec!["STOP".into()]
            },
            ..RequestOptions::default()
        },
        response_format: None,
        messages: history().into(),
        tools: tools().into(),
        attachments: Some(Arc::new(Loader)),
    }
}

async fn body(config: ProviderConfig, request: &ModelRequest) -> Value {
    HttpProvider::new(config)
        .unwrap()
        .request_body(request)
        .await
        .unwrap()
}

#[tokio::test]
async fn anthropic_full_history() {
    let request = full_request(ApiKind::AnthropicMessages, "claude-sonnet-4-5");
    insta::assert_json_snapshot!(body(ProviderConfig::anthropic("k"), &request).await);
}

#[tokio::test]
async fn anthropic_thinking_prefill_and_web_search() {
    let mut request = request("claude-sonnet-4-5");
    request.options.enable_reasoning = true;
    request.options.reasoning_budget_tokens = 4000;
    request.options.max_tokens = 1000;
    request.options.temperature = Some(0.2);
    request.options.prefill_response = Some("{\"answer\": ".into());
    request.options.web_search_enabled = true;
    // The engine offers only the run's enabled tools.
    request.tools = tools().into_iter().filter(|t| t.name == "now").collect();
    request.options.disable_stream = true;
    insta::assert_json_snapshot!(body(ProviderConfig::anthropic("k"), &request).await);
}

#[tokio::test]
async fn openai_chat_full_history() {
    let request = full_request(ApiKind::OpenaiChat, "gpt-4.1");
    insta::assert_json_snapshot!(body(ProviderConfig::openai_chat("k"), &request).await);
}

#[tokio::test]
async fn openai_compatible_reasoning_effort() {
    let mut request = request("qwen3:8b");
    request.options.reasoning_effort = Some(ReasoningEffort::Low);
    request.options.reasoning_summary = Some(ReasoningSummary::Auto);
    request.options.temperature = Some(0.2);
    let config = ProviderConfig::openai_compatible("http://localhost:11434/v1", None);
    insta::assert_json_snapshot!(body(config, &request).await);
}

#[tokio::test]
async fn openai_responses_full_history() {
    let request = full_request(ApiKind::OpenaiResponses, "gpt-5");
    insta::assert_json_snapshot!(body(ProviderConfig::openai_responses("k"), &request).await);
}

#[tokio::test]
async fn openai_responses_reasoning_and_web_search() {
    let mut request = request("gpt-5");
    request.options.reasoning_effort = Some(ReasoningEffort::High);
    request.options.reasoning_summary = Some(ReasoningSummary::Detailed);
    request.options.web_search_enabled = true;
    insta::assert_json_snapshot!(body(ProviderConfig::openai_responses("k"), &request).await);
}

#[tokio::test]
async fn gemini_full_history() {
    let mut request = full_request(ApiKind::Gemini, "gemini-2.5-flash");
    request.options.web_search_enabled = true;
    request.options.enable_reasoning = true;
    request.options.reasoning_budget_tokens = 2048;
    insta::assert_json_snapshot!(body(ProviderConfig::gemini("k"), &request).await);
}

#[tokio::test]
async fn unsupported_options_are_typed_errors() {
    let cases = [
        (ProviderConfig::openai_chat("k"), "prefill"),
        (ProviderConfig::openai_responses("k"), "prefill"),
        (ProviderConfig::openai_responses("k"), "stop"),
        (ProviderConfig::openai_chat("k"), "web_search"),
    ];
    for (config, what) in cases {
        let mut request = request("m");
        match what {
            "prefill" => request.options.prefill_response = Some("{".into()),
            "stop" => request.options.stop_sequences = vec!["END".into()],
            _ => request.options.web_search_enabled = true,
        }
        let provider = HttpProvider::new(config).unwrap();
        let error = provider.request_body(&request).await.unwrap_err();
        assert_eq!(
            error.kind,
            ProviderErrorKind::Unsupported,
            "{what}: {error:?}"
        );
        // The stream reports the same error without any network call.
        let turn = run(&provider, request).await;
        assert_eq!(turn.error.unwrap().kind, ProviderErrorKind::Unsupported);
    }
}

#[tokio::test]
async fn missing_attachment_is_an_invalid_request() {
    let mut request = request("m");
    request.messages.push(Message::new(
        "u9",
        Role::User,
        vec![ContentBlock::Image {
            source: AttachmentSource::Stored { id: "gone".into() },
        }],
    ));
    request.attachments = Some(Arc::new(Loader));
    let provider = HttpProvider::new(ProviderConfig::anthropic("k")).unwrap();
    let error = provider.request_body(&request).await.unwrap_err();
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    request.attachments = None;
    assert_eq!(
        provider.request_body(&request).await.unwrap_err().kind,
        ProviderErrorKind::InvalidRequest
    );
}

#[tokio::test]
async fn wire_body_and_headers() {
    let cases = [
        (ApiKind::AnthropicMessages, "x-api-key", "test-key"),
        (ApiKind::OpenaiChat, "authorization", "Bearer test-key"),
        (ApiKind::OpenaiResponses, "authorization", "Bearer test-key"),
    ];
    for (api, name, value) in cases {
        let server = MockServer::start().await;
        let body = match api {
            ApiKind::AnthropicMessages => fixture_bodies("anthropic-text.chunks.txt").remove(0),
            ApiKind::OpenaiChat => fixture_bodies("openai-text.chunks.txt").remove(0),
            ApiKind::OpenaiResponses => {
                fixture_bodies("openai-reasoning-encrypted-content.1.chunks.txt").remove(3)
            }
            ApiKind::Gemini => unreachable!("covered by gemini_wire_body_url_and_key"),
        };
        let mut mock = Mock::given(method("POST"))
            .and(path(endpoint_path(api)))
            .and(header(name, value));
        if api == ApiKind::AnthropicMessages {
            mock = mock.and(header("anthropic-version", "2023-06-01"));
        }
        mock.respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .expect(1)
        .mount(&server)
        .await;
        let provider = HttpProvider::new(config(api, &server.uri())).unwrap();
        let request = request("gpt-5");
        let expected = provider.request_body(&request).await.unwrap();
        let turn = run(&provider, request).await;
        assert!(turn.error.is_none(), "{api:?}: {:?}", turn.error);
        let received = &server.received_requests().await.unwrap()[0];
        let sent: Value = serde_json::from_slice(&received.body).unwrap();
        assert_eq!(sent, expected);
        assert_eq!(sent["stream"], json!(true));
    }
}

#[tokio::test]
async fn azure_uses_api_key_header_and_api_version() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/router/chat/completions"))
        .and(query_param("api-version", "2025-04-01-preview"))
        .and(header("api-key", "azure-key"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(fixture_bodies("azure-model-router.1.chunks.txt").remove(0)),
        )
        .expect(1)
        .mount(&server)
        .await;
    let config = ProviderConfig::azure_openai(
        format!("{}/openai/deployments/router", server.uri()),
        "azure-key",
        "2025-04-01-preview",
    );
    let provider = HttpProvider::new(config).unwrap();
    let turn = run(&provider, request("model-router")).await;
    assert!(turn.error.is_none(), "{:?}", turn.error);
}

#[tokio::test]
async fn anthropic_thinking_round_trip_is_byte_exact() {
    let body = fixture_bodies("anthropic-clear-thinking.1.chunks.txt").remove(0);
    let outcome = agentloop_providers::replay_sse(ApiKind::AnthropicMessages, body.as_bytes());
    let ContentBlock::Thinking {
        signature: Some(signature),
        thinking,
    } = &outcome.content[0]
    else {
        panic!("thinking expected");
    };
    let mut request = request("claude-sonnet-4-5");
    request
        .messages
        .push(Message::new("a1", Role::Assistant, outcome.content.clone()));
    request.messages.push(Message::user_text("u2", "And now?"));
    let sent = body_of(ApiKind::AnthropicMessages, &request).await;
    let block = &sent["messages"][1]["content"][0];
    assert_eq!(block["type"], "thinking");
    assert_eq!(block["signature"].as_str(), Some(signature.as_str()));
    assert_eq!(block["thinking"].as_str(), Some(thinking.as_str()));
}

#[tokio::test]
async fn responses_reasoning_item_goes_back_before_its_call() {
    let body = fixture_bodies("openai-reasoning-encrypted-content.1.chunks.txt").remove(0);
    let outcome = agentloop_providers::replay_sse(ApiKind::OpenaiResponses, body.as_bytes());
    let ContentBlock::Provider {
        block: reasoning, ..
    } = &outcome.content[1]
    else {
        panic!("reasoning item expected");
    };
    let request = after_tool_turn(
        "gpt-5.1-codex-max",
        &outcome.content,
        "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
        "19",
    );
    let sent = body_of(ApiKind::OpenaiResponses, &request).await;
    let input = sent["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(&input[1], reasoning, "reasoning item sent back verbatim");
    assert!(
        input[1]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );
    assert_eq!(input[2]["arguments"], r#"{"a":12,"b":7,"op":"add"}"#);
}

/// A request for `model` after an assistant turn of `content` whose call
/// `call_id` was answered with `result`.
fn after_tool_turn(
    model: &str,
    content: &[ContentBlock],
    call_id: &str,
    result: &str,
) -> ModelRequest {
    let mut request = request(model);
    request
        .messages
        .push(Message::new("a1", Role::Assistant, content.to_vec()));
    request.messages.push(Message::new(
        "u2",
        Role::User,
        vec![ContentBlock::ToolResult(ToolResultBlock::ok(
            call_id, result,
        ))],
    ));
    request
}

async fn body_of(api: ApiKind, request: &ModelRequest) -> Value {
    HttpProvider::new(config(api, "http://unused.invalid"))
        .unwrap()
        .request_body(request)
        .await
        .unwrap()
}

fn city_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["name", "population"],
        "additionalProperties": false
    })
}

/// A request whose answer the provider is asked to hold to a schema with
/// the API's own structured-output field.
fn with_output_schema(model: &str) -> ModelRequest {
    let mut request = request(model);
    request.response_format = Some(Arc::new(ResponseFormat {
        name: "city".into(),
        schema: city_schema(),
    }));
    request
}

/// A server answering every request with a recorded streamed turn of `api`.
async fn streaming_server(api: ApiKind) -> MockServer {
    let server = MockServer::start().await;
    let body = match api {
        ApiKind::AnthropicMessages => fixture_bodies("anthropic-text.chunks.txt").remove(0),
        ApiKind::OpenaiResponses => {
            fixture_bodies("openai-reasoning-encrypted-content.1.chunks.txt").remove(3)
        }
        ApiKind::Gemini => fixture_bodies("google-text.chunks.txt").remove(0),
        ApiKind::OpenaiChat => fixture_bodies("openai-text.chunks.txt").remove(0),
    };
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn output_schema_native_forms() {
    let chat = with_output_schema("gpt-4.1");
    insta::assert_json_snapshot!(
        "output_schema_openai_chat",
        body(ProviderConfig::openai_chat("k"), &chat).await
    );
    let responses = with_output_schema("gpt-5");
    insta::assert_json_snapshot!(
        "output_schema_openai_responses",
        body(ProviderConfig::openai_responses("k"), &responses).await
    );
    let gemini = with_output_schema("gemini-2.5-flash");
    insta::assert_json_snapshot!(
        "output_schema_gemini",
        body(ProviderConfig::gemini("k"), &gemini).await
    );
    // Anthropic has no such field and sends nothing for one: the engine
    // offers `final_output` instead.
    let mut anthropic = with_output_schema("claude-sonnet-4-5");
    anthropic.tools = vec![agentloop_types::ToolDefinition {
        name: agentloop_types::FINAL_OUTPUT_TOOL.into(),
        description: "Give your final answer as this tool's input.".into(),
        input_schema: city_schema().into(),
    }]
    .into();
    insta::assert_json_snapshot!(
        "output_schema_anthropic_final_output_tool",
        body(ProviderConfig::anthropic("k"), &anthropic).await
    );
}

/// One provider sends a history three times: grown by a turn, then with an
/// earlier message edited. Each body it sends equals the body built afresh,
/// so reusing what it wrote for the shorter history never sends stale or
/// missing messages.
#[tokio::test]
async fn a_growing_history_sends_what_a_fresh_build_would() {
    for api in [
        ApiKind::OpenaiChat,
        ApiKind::OpenaiResponses,
        ApiKind::AnthropicMessages,
        ApiKind::Gemini,
    ] {
        let server = streaming_server(api).await;
        let provider = HttpProvider::new(config(api, &server.uri())).unwrap();
        let mut request = full_request(api, "gpt-5");
        let mut expected = Vec::new();
        for step in 0..3 {
            match step {
                1 => request.messages.extend([
                    Message::new(
                        "a9",
                        Role::Assistant,
                        vec![ContentBlock::ToolUse(ToolUseBlock {
                            id: "call_9".into(),
                            name: "get_weather".into(),
                            input: json!({"city": "Oslo \"north\""}).into(),
                        })],
                    ),
                    Message::new(
                        "u9",
                        Role::User,
                        vec![ContentBlock::ToolResult(ToolResultBlock::ok(
                            "call_9", "cold",
                        ))],
                    ),
                ]),
                2 => request.messages[1] = Message::user_text("u1", "An edited question"),
                _ => {}
            }
            expected.push(provider.request_body(&request).await.unwrap());
            let turn = run(&provider, request.clone()).await;
            assert!(
                turn.error.is_none(),
                "{api:?} step {step}: {:?}",
                turn.error
            );
        }
        let received = server.received_requests().await.unwrap();
        let sent: Vec<Value> = received
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect();
        assert_eq!(sent, expected, "{api:?}");
        let text = |v: &Value| v.to_string();
        assert!(text(&sent[2]).contains("An edited question"), "{api:?}");
        assert!(text(&sent[1]).contains("What is in these?"), "{api:?}");
        assert!(!text(&sent[2]).contains("What is in these?"), "{api:?}");
    }
}

/// Counts the attachments it loads.
#[derive(Default)]
struct CountingLoader(std::sync::atomic::AtomicUsize);

#[async_trait::async_trait]
impl AttachmentLoader for CountingLoader {
    async fn load(&self, id: &str) -> Result<LoadedAttachment, AttachmentError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Loader.load(id).await
    }
}

/// A request whose history grew from the last one's loads only the
/// attachments of its new messages: the earlier ones are in the bytes the
/// provider wrote before. When the body needs an earlier one again (the
/// Anthropic cache mark rewrites the last user turns), it loads them all,
/// and every body carries the attachment.
#[tokio::test]
async fn a_grown_history_loads_only_the_attachments_it_has_not_written() {
    for (api, loads) in [(ApiKind::OpenaiChat, 1), (ApiKind::AnthropicMessages, 2)] {
        let server = streaming_server(api).await;
        let provider = HttpProvider::new(config(api, &server.uri())).unwrap();
        let loader = Arc::new(CountingLoader::default());
        let mut request = ModelRequest {
            options: RequestOptions {
                model: "m".into(),
                ..RequestOptions::default()
            },
            response_format: None,
            messages: vec![Message::new(
                "u1",
                Role::User,
                vec![
                    ContentBlock::text("What is this?"),
                    ContentBlock::Image {
                        source: AttachmentSource::Stored { id: "img-1".into() },
                    },
                ],
            )]
            .into(),
            tools: Arc::new([]),
            attachments: Some(loader.clone()),
        };
        let first = run(&provider, request.clone()).await;
        assert!(first.error.is_none(), "{api:?}: {:?}", first.error);
        request
            .messages
            .push(Message::assistant_text("a1", "A logo."));
        request.messages.push(Message::user_text("u2", "Whose?"));
        let second = run(&provider, request).await;
        assert!(second.error.is_none(), "{api:?}: {:?}", second.error);

        assert_eq!(
            loader.0.load(std::sync::atomic::Ordering::SeqCst),
            loads,
            "{api:?}"
        );
        let received = server.received_requests().await.unwrap();
        assert_eq!(received.len(), 2, "{api:?}");
        for request in &received {
            let sent = String::from_utf8_lossy(&request.body);
            assert!(sent.contains("iVBORw=="), "{api:?}: {sent}");
        }
    }
}

/// Arguments a model streamed (its spacing, its key order) go back byte
/// for byte where the API takes them as a string, and as the object they
/// hold where it takes an object.
#[tokio::test]
async fn streamed_arguments_go_back_as_the_model_wrote_them() {
    let written = r#"{"unit": "c",  "city": "Paris"}"#;
    let (first, second) = written.split_at(12);
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({"id": "c1", "object": "chat.completion.chunk", "created": 0,
            "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let stream = [
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "weather", "arguments": first}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": second}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let outcome = agentloop_providers::replay_sse(ApiKind::OpenaiChat, stream.as_bytes());
    let ContentBlock::ToolUse(call) = &outcome.content[0] else {
        panic!("a tool call expected: {:?}", outcome.content);
    };
    assert_eq!(call.input.as_json(), written);
    assert_eq!(call.input, json!({"city": "Paris", "unit": "c"}));

    let request = after_tool_turn("m", &outcome.content, "call_1", "sunny");
    let chat = body_of(ApiKind::OpenaiChat, &request).await;
    assert_eq!(
        chat["messages"][1]["tool_calls"][0]["function"]["arguments"],
        written
    );
    let responses = body_of(ApiKind::OpenaiResponses, &request).await;
    let call_item = responses["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap();
    assert_eq!(call_item["arguments"], written);
    let anthropic = body_of(ApiKind::AnthropicMessages, &request).await;
    assert_eq!(
        anthropic["messages"][1]["content"][0]["input"],
        json!({"city": "Paris", "unit": "c"})
    );
}
