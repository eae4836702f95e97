//! The encoded runs read by the `ai` package's own client code (its chat
//! transport's parsing, which validates every chunk, then
//! `readUIMessageStream`, which builds the message as `useChat` does),
//! installed by `scripts/install-ai-sdk-client.sh`; and a control stream
//! it must refuse, so the check can fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod runs;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agentloop_aisdk::Encoder;
use serde_json::{Map, Value, json};

/// The installed `ai` package's `node_modules`, or `None` (said loudly)
/// when it is not installed; under CI that is a failure.
fn client_modules() -> Option<PathBuf> {
    let modules =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ai-sdk-client/node_modules");
    if modules.join("ai/package.json").is_file() {
        return Some(modules);
    }
    let message = format!(
        "SKIPPED: the ai package is not installed at {}; run scripts/install-ai-sdk-client.sh",
        modules.display()
    );
    assert!(
        std::env::var_os("CI").is_none(),
        "{message} (CI is set, so this is a failure)"
    );
    eprintln!("\n{0}\n{message}\n{0}\n", "*".repeat(72));
    None
}

/// Each named stream read by the client: its message and errors.
fn read(modules: &Path, streams: &Map<String, Value>) -> Value {
    let mut child = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/read.cjs"))
        .env("NODE_PATH", modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::Object(streams.clone()).to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "the client printed no result ({e}); stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn parts<'a>(read: &'a Value, kind: &str) -> Vec<&'a Value> {
    read["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["type"] == kind)
        .collect()
}

#[tokio::test]
async fn the_ai_sdk_reads_every_encoded_run() {
    let Some(modules) = client_modules() else {
        return;
    };
    let mut streams = Map::new();
    for (name, events) in runs::cases().await {
        let mut encoder = Encoder::new("msg-1").with_metadata(json!({ "agentRunId": "msg-1" }));
        let mut chunks = encoder.start();
        for event in &events {
            chunks.extend(encoder.encode(event));
        }
        chunks.extend(encoder.end());
        let chunks = chunks.iter().map(|chunk| chunk.to_json()).collect();
        streams.insert(name.to_owned(), Value::Array(chunks));
    }
    // A control the client must refuse: a text delta naming no part.
    streams.insert(
        "control".to_owned(),
        json!([{ "type": "start" }, { "type": "text-delta", "delta": "x" }]),
    );
    let out = read(&modules, &streams);

    let text = &out["text_answer"];
    assert_eq!(text["errors"], json!([]), "{text}");
    assert_eq!(text["message"]["id"], "msg-1");
    assert_eq!(parts(text, "text")[0]["text"], "Hello, Oslo.");
    assert_eq!(text["message"]["metadata"]["status"], "complete", "{text}");

    let tool = &out["tool_call_with_thinking"];
    assert_eq!(tool["errors"], json!([]), "{tool}");
    assert_eq!(
        parts(tool, "reasoning")[0]["text"],
        "The user wants the weather."
    );
    let call = parts(tool, "dynamic-tool")[0];
    assert_eq!(call["toolName"], "weather");
    assert_eq!(call["input"], json!({ "city": "Oslo" }));
    assert_eq!(call["state"], "output-available");
    assert_eq!(call["output"], "Sunny, 21 °C.");
    assert_eq!(parts(tool, "step-start").len(), 2, "{tool}");

    let asking = &out["approval_requested"];
    assert_eq!(asking["errors"], json!([]), "{asking}");
    let call = parts(asking, "dynamic-tool")[0];
    assert_eq!(call["state"], "approval-requested", "{call}");
    assert_eq!(call["approval"]["id"], "call-1");
    assert_eq!(
        asking["message"]["metadata"]["status"], "suspended",
        "{asking}"
    );

    let failed = &out["provider_error"];
    assert!(
        failed["errors"][0].as_str().unwrap().contains("bad model"),
        "{failed}"
    );
    let limited = &out["turn_limit"];
    assert!(
        limited["errors"][0].as_str().unwrap().contains("limit"),
        "{limited}"
    );

    let control = &out["control"];
    assert!(
        control["errors"][0]
            .as_str()
            .unwrap()
            .contains("Type validation failed"),
        "{control}"
    );
}
