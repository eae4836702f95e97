//! The `agentloop` binary, driven as a user would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn agentloop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(args)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_API_KEY")
        .env_remove("AGENTLOOP_MODEL")
        .output()
        .unwrap()
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Writes `events` (one JSON object a line) as the SSE body `api` sends.
fn sse_file(dir: &Path, name: &str, api: &str, lines: &[&str]) -> String {
    let mut body = String::new();
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        if api == "openai-chat" || api == "gemini" {
            body.push_str(&format!("data: {line}\n\n"));
        } else {
            let event: Value = serde_json::from_str(line).unwrap();
            body.push_str(&format!(
                "event: {}\ndata: {line}\n\n",
                event["type"].as_str().unwrap()
            ));
        }
    }
    if api == "openai-chat" {
        body.push_str("data: [DONE]\n\n");
    }
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path.to_string_lossy().into_owned()
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agentloop-providers/tests/fixtures")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn replay_stream_reads_a_recorded_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture("anthropic-json-tool.1.chunks.txt");
    let lines: Vec<&str> = text.lines().collect();
    let file = sse_file(dir.path(), "tool.sse", "anthropic-messages", &lines);
    let output = agentloop(&["replay-stream", "--api", "anthropic-messages", &file]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = stdout_json(&output);
    assert_eq!(report["stop_reason"], "tool_use");
    let tool = report["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("a tool_use block");
    assert_eq!(tool["id"], "toolu_01KFbKqPYSuAKujiL6mTfzYA");
    assert!(tool["input"].is_object(), "arguments are parsed: {tool}");
    assert!(report["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert!(report.get("error").is_none());
}

#[test]
fn replay_stream_handles_parallel_calls_several_choices_and_a_cut_call() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"fs","arguments":""}}]},"finish_reason":null},{"index":1,"delta":{"content":"second choice"},"finish_reason":null}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"/a\"}"}},{"index":1,"id":"call_b","type":"function","function":{"name":"js","arguments":"{\"code\": \"1+"}}]},"finish_reason":null}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}"#,
    ];
    let file = sse_file(dir.path(), "chat.sse", "openai-chat", &lines);
    let output = agentloop(&["replay-stream", "--api", "openai-chat", &file]);
    let report = stdout_json(&output);
    assert_eq!(report["stop_reason"], "max_tokens");
    let content = report["content"].as_array().unwrap();
    let calls: Vec<&Value> = content.iter().filter(|b| b["type"] == "tool_use").collect();
    assert_eq!(calls.len(), 2, "both parallel calls: {report}");
    assert_eq!(calls[0]["input"]["path"], "/a");
    assert!(
        calls[1]["input"].is_string(),
        "the cut call keeps its raw text: {}",
        calls[1]
    );
    assert!(
        !content.iter().any(|b| b["text"] == "second choice"),
        "only the first choice is used"
    );
    assert_eq!(report["usage"]["input_tokens"], 11);
}

#[test]
fn replay_stream_reports_a_mid_stream_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture("openai-error.1.chunks.txt");
    let lines: Vec<&str> = text.lines().collect();
    let file = sse_file(dir.path(), "error.sse", "openai-responses", &lines);
    let output = agentloop(&["replay-stream", "--api", "openai-responses", &file]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_json(&output);
    assert_eq!(report["error"]["type"], "insufficient_quota");
}

#[test]
fn replay_stream_reads_gemini_parallel_streamed_calls() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture("google-stream-tool-call-arguments.chunks.txt");
    let lines: Vec<&str> = text.lines().collect();
    let file = sse_file(dir.path(), "gemini.sse", "gemini", &lines);
    let output = agentloop(&["replay-stream", "--api", "gemini", &file]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = stdout_json(&output);
    assert_eq!(report["stop_reason"], "tool_use");
    let calls: Vec<&Value> = report["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1]["input"]["location"], "San Francisco");
    assert_eq!(report["usage"]["reasoning_tokens"], 132);
}

#[test]
fn replay_stream_keeps_the_usage_of_a_cut_stream() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture("anthropic-code-execution-20260120-prompt-cache.1.chunks.txt");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("message_stop"))
        .collect();
    let file = sse_file(dir.path(), "cut.sse", "anthropic-messages", &lines);
    let output = agentloop(&["replay-stream", "--api", "anthropic-messages", &file]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_json(&output);
    assert_eq!(report["error"]["kind"], "truncated");
    assert_eq!(report["stop_reason"], "end_turn");
    assert_eq!(report["usage"]["cache_read_tokens"], 6289);
    assert_eq!(report["error"]["partial"]["usage"]["output_tokens"], 198);
}

#[test]
fn run_with_a_scripted_provider_prints_json_events() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"[
          {"steps": [{"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"]}], "usage": {"input_tokens": 10, "output_tokens": 4}},
          {"steps": [{"type": "text", "chunks": ["The folder ", "holds notes.txt."]}], "usage": {"input_tokens": 20, "output_tokens": 6}}
        ]"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let provider = format!("scripted:{}", script.display());
    let root = dir.path().to_string_lossy().into_owned();
    let output = agentloop(&[
        "run",
        "List the folder",
        "--provider",
        &provider,
        "--tools",
        "fs",
        "--root",
        &root,
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "finished");
    assert_eq!(last["result"]["status"], "complete");
    assert_eq!(last["result"]["tokens"]["input_tokens"], 30);
    let tool_result = events
        .iter()
        .find(|e| {
            e["type"] == "message_created" && e["message"]["content"][0]["type"] == "tool_result"
        })
        .unwrap();
    let listing = tool_result["message"]["content"][0]["content"]
        .as_str()
        .unwrap();
    assert!(listing.contains("notes.txt"), "{listing}");
}

#[test]
fn run_without_a_key_plays_the_demo_and_says_how_to_configure_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_string_lossy().into_owned();
    let output = agentloop(&["run", "--demo", "--root", &root]);
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("this is a demo")
            && stderr.contains("ANTHROPIC_API_KEY")
            && stderr.contains("OPENAI_API_KEY"),
        "{stderr}"
    );
    // The view (the demo's tool call) is progress on stderr; stdout holds
    // the answer alone.
    assert!(stderr.contains("→ fs"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("→ fs"), "{stdout}");
    assert!(stdout.contains("scripted demo"), "{stdout}");
}

#[test]
fn an_unknown_provider_is_a_usage_error() {
    let output = agentloop(&["run", "hello", "--provider", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown provider \"nope\""), "{stderr}");
}

#[test]
fn tool_call_refuses_hostile_paths_without_crashing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_string_lossy().into_owned();
    for path in [
        "../../etc/passwd",
        "/etc/passwd",
        "a/../../x",
        "nul\u{0}byte",
    ] {
        let input = serde_json::json!({"command": "view", "path": path}).to_string();
        let output = agentloop(&["tool", "call", "fs", "--input", &input, "--root", &root]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "path {path:?} must be refused"
        );
        let line: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(line["type"], "result");
        assert_eq!(line["result"]["is_error"], true);
    }
    let output = agentloop(&[
        "tool",
        "call",
        "js",
        "--input",
        r#"{"code": "while(true){}"}"#,
        "--root",
        &root,
    ]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "endless JavaScript is stopped"
    );
}

#[test]
fn tool_list_names_every_tool() {
    let output = agentloop(&["tool", "list"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for name in ["fs", "memory", "javascript", "return", "ask_user"] {
        assert!(
            text.lines().any(|l| l.starts_with(name)),
            "{name} missing from {text}"
        );
    }
}
