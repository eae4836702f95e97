//! `agentloop run` exports its spans over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set: a receiver in this test decodes
//! them and checks the tree of a two-step tool run with a nested minion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// Accepts OTLP/HTTP trace exports and keeps their spans.
async fn receiver(spans: Arc<Mutex<Vec<Span>>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let spans = spans.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0u8; length];
                    reader.read_exact(&mut body).await.unwrap();
                    let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
                    for resource in request.resource_spans {
                        for scope in resource.scope_spans {
                            spans.lock().unwrap().extend(scope.spans);
                        }
                    }
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if reader.get_mut().write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    address
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            AnyValue::IntValue(i) => Some(i.to_string()),
            other => Some(format!("{other:?}")),
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_exports_its_span_tree_over_otlp() {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let address = receiver(spans.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!([
            { "steps": [{ "type": "tool_call", "id": "m1", "name": "minion",
                          "fragments": ["{\"task\": \"count the files\"}"] }] },
            { "steps": [{ "type": "text", "chunks": ["three files"] }] },
            { "steps": [{ "type": "text", "chunks": ["The minion found three files."] }] }
        ])
        .to_string(),
    )
    .unwrap();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .args(["run", "count", "--tools", "minion", "--provider"])
            .arg(format!("scripted:{}", script.display()))
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{address}"))
            .env_remove("RUST_LOG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let spans = spans.lock().unwrap().clone();
    let by_id: HashMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    let parent = |span: &Span| by_id.get(&span.parent_span_id).copied();
    let runs: Vec<&Span> = spans.iter().filter(|s| s.name == "invoke_agent").collect();
    assert_eq!(
        runs.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let root = runs
        .iter()
        .find(|s| s.parent_span_id.is_empty())
        .expect("a root run");
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool minion")
        .expect("the minion call's span");
    assert_eq!(
        parent(tool).map(|p| p.span_id.clone()),
        Some(root.span_id.clone())
    );
    assert_eq!(
        attribute(tool, "gen_ai.tool.name").as_deref(),
        Some("minion")
    );
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.id").as_deref(),
        Some("m1")
    );
    let child = runs.iter().find(|s| !s.parent_span_id.is_empty()).unwrap();
    assert_eq!(
        parent(child).map(|p| p.name.as_str()),
        Some("execute_tool minion")
    );
    let turns_under = |run: &Span| {
        spans
            .iter()
            .filter(|s| s.name == "agentloop.model_turn" && s.parent_span_id == run.span_id)
            .count()
    };
    assert_eq!(turns_under(root), 2);
    assert_eq!(turns_under(child), 1);
    assert!(
        spans.iter().all(|s| s.trace_id == root.trace_id),
        "one trace"
    );
    assert_eq!(
        attribute(root, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
}

#[test]
fn trace_writes_spans_as_json_lines_and_verbose_prints_them() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!([
            { "steps": [{ "type": "tool_call", "id": "t1", "name": "fs",
                          "fragments": ["{\"command\": \"view\", \"path\": \"/\"}"] }] },
            { "steps": [{ "type": "text", "chunks": ["Done."] }] }
        ])
        .to_string(),
    )
    .unwrap();
    let trace = dir.path().join("trace.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["run", "look", "-v", "--tools", "fs", "--root"])
        .arg(dir.path())
        .arg("--provider")
        .arg(format!("scripted:{}", script.display()))
        .arg("--trace")
        .arg(&trace)
        .env_remove("RUST_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["span"]["name"].as_str())
        .collect();
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == "agentloop.model_turn")
            .count(),
        2,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| **n == "execute_tool").count(),
        1,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| **n == "invoke_agent").count(),
        1,
        "{names:?}"
    );
    let tool = lines
        .iter()
        .find(|l| l["span"]["name"] == "execute_tool")
        .unwrap();
    assert_eq!(tool["span"]["gen_ai.tool.name"], "fs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("execute_tool"),
        "-v prints the spans: {stderr}"
    );
}
