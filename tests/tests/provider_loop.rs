//! The engine runs a two-step tool loop against each real adapter, served
//! by a mock HTTP server speaking the API's recorded streaming format.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_engine::{RunDeps, collect, run};
use agentloop_providers::{HttpProvider, ProviderConfig, RetryPolicy};
use agentloop_types::{
    ApiKind, LoopOptions, LoopStatus, Message, RequestOptions, Tool, ToolContext, ToolResult,
    ToolStream, single_result,
};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

struct Upper;

impl Tool for Upper {
    fn name(&self) -> &str {
        "upper"
    }
    fn description(&self) -> &str {
        "Upper-cases text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    fn execute(self: Arc<Self>, input: Value, _: ToolContext) -> ToolStream {
        let text = input["text"].as_str().unwrap_or_default().to_uppercase();
        single_result(async move { ToolResult::ok(text) })
    }
}

fn sse(api: ApiKind, events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        match api {
            ApiKind::OpenaiChat => body.push_str(&format!("data: {event}\n\n")),
            _ => body.push_str(&format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )),
        }
    }
    if api == ApiKind::OpenaiChat {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

fn anthropic_turns() -> [String; 2] {
    let start = |id: &str| json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 20, "output_tokens": 1}}});
    let delta = |index: u32, delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
    let tool = [
        start("msg_1"),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "upper", "input": {}}}),
        delta(0, json!({"type": "input_json_delta", "partial_json": ""})),
        json!({"type": "ping"}),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"text\": \"qu"}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "iet\"}"}),
        ),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 15}}),
        json!({"type": "message_stop"}),
    ];
    let text = [
        start("msg_2"),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        delta(0, json!({"type": "text_delta", "text": "It is "})),
        delta(0, json!({"type": "text_delta", "text": "QUIET."})),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ];
    [
        sse(ApiKind::AnthropicMessages, &tool),
        sse(ApiKind::AnthropicMessages, &text),
    ]
}

fn chat_turns() -> [String; 2] {
    let chunk = |choices: Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "choices": choices});
    let usage = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}});
    let tool = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "upper", "arguments": ""}}]}, "finish_reason": null}]),
        ),
        chunk(
            json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"text\":"}}]}, "finish_reason": null}]),
        ),
        chunk(
            json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": " \"quiet\"}"}}]}, "finish_reason": null}]),
        ),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])),
        usage.clone(),
    ];
    let text = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": "It is "}, "finish_reason": null}]),
        ),
        chunk(json!([{"index": 0, "delta": {"content": "QUIET."}, "finish_reason": null}])),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
        usage,
    ];
    [
        sse(ApiKind::OpenaiChat, &tool),
        sse(ApiKind::OpenaiChat, &text),
    ]
}

fn responses_turns() -> [String; 2] {
    let created = |id: &str| json!({"type": "response.created", "sequence_number": 0, "response": {"id": id, "object": "response", "created_at": 1, "status": "in_progress", "model": "gpt-4.1", "output": []}});
    let completed = |id: &str, output: Value| json!({"type": "response.completed", "sequence_number": 9, "response": {"id": id, "object": "response", "created_at": 1, "status": "completed", "model": "gpt-4.1", "output": output, "usage": {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 30}}});
    let call = json!({"id": "fc_1", "type": "function_call", "status": "completed", "arguments": "{\"text\":\"quiet\"}", "call_id": "call_1", "name": "upper"});
    let tool = [
        created("resp_1"),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_1", "name": "upper"}}),
        json!({"type": "response.function_call_arguments.delta", "sequence_number": 2, "item_id": "fc_1", "output_index": 0, "delta": "{\"text\":"}),
        json!({"type": "response.function_call_arguments.delta", "sequence_number": 3, "item_id": "fc_1", "output_index": 0, "delta": "\"quiet\"}"}),
        json!({"type": "response.function_call_arguments.done", "sequence_number": 4, "item_id": "fc_1", "output_index": 0, "arguments": "{\"text\":\"quiet\"}"}),
        json!({"type": "response.output_item.done", "sequence_number": 5, "output_index": 0, "item": call.clone()}),
        completed("resp_1", json!([call])),
    ];
    let message = json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "annotations": [], "text": "It is QUIET."}]});
    let text = [
        created("resp_2"),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        json!({"type": "response.content_part.added", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": ""}}),
        json!({"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "It is "}),
        json!({"type": "response.output_text.delta", "sequence_number": 4, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "QUIET."}),
        json!({"type": "response.output_text.done", "sequence_number": 5, "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": "It is QUIET."}),
        json!({"type": "response.content_part.done", "sequence_number": 6, "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": "It is QUIET."}}),
        json!({"type": "response.output_item.done", "sequence_number": 7, "output_index": 0, "item": message.clone()}),
        completed("resp_2", json!([message])),
    ];
    [
        sse(ApiKind::OpenaiResponses, &tool),
        sse(ApiKind::OpenaiResponses, &text),
    ]
}

async fn two_step_loop(api: ApiKind, turns: [String; 2], call_id: &str) {
    let server = MockServer::start().await;
    for body in turns {
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "text/event-stream")
                    .set_body_string(body),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    let config = ProviderConfig::for_api(api, "test-key")
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        });
    let provider = Arc::new(HttpProvider::new(config).unwrap());
    let options = LoopOptions {
        request: RequestOptions {
            model: "test-model".into(),
            ..RequestOptions::default()
        },
        ..LoopOptions::default()
    };
    let deps = RunDeps::new(provider).with_tools([Arc::new(Upper) as Arc<dyn Tool>]);
    let result = collect(run(
        options,
        vec![Message::user_text("u1", "Shout 'quiet'")],
        deps,
    ))
    .await;

    assert!(
        matches!(result.status, LoopStatus::Complete { .. }),
        "{api:?}: {:?}",
        result.status
    );
    assert_eq!(
        result.final_text().as_deref(),
        Some("It is QUIET."),
        "{api:?}"
    );
    assert_eq!(
        result.messages.len(),
        4,
        "{api:?}: user, call, result, answer"
    );
    let call = result.messages[1].tool_uses().next().unwrap();
    assert_eq!(call.id, call_id);
    assert_eq!(call.input, json!({"text": "quiet"}));
    assert_eq!(result.tokens.input_tokens, 40, "{api:?}: both turns' usage");

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2, "{api:?}");
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let second = second.to_string();
    assert!(
        second.contains(call_id) && second.contains("QUIET"),
        "{api:?}: the tool result goes back: {second}"
    );
}

#[tokio::test]
async fn anthropic_messages() {
    two_step_loop(ApiKind::AnthropicMessages, anthropic_turns(), "toolu_1").await;
}

#[tokio::test]
async fn openai_chat() {
    two_step_loop(ApiKind::OpenaiChat, chat_turns(), "call_1").await;
}

#[tokio::test]
async fn openai_responses() {
    two_step_loop(ApiKind::OpenaiResponses, responses_turns(), "call_1").await;
}
