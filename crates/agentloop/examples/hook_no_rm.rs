//! A hook that blocks fs deletes outside `tmp/`: the model (scripted here,
//! so no key is needed) asks to delete a note and a scratch file; the hook
//! blocks the first with a reason the model reads and lets the second run.
//!
//! `cargo run -p agentloop --example hook_no_rm`
use std::sync::Arc;

use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop::prelude::*;
use agentloop::tools::{FsTool, vfs::MemoryVfs};
use agentloop::types::ApprovalPolicy;
use agentloop::types::vfs::is_within;
use agentloop::types::{EventKind, HookDecision, HookInput, HookPoint, hook_fn, normalize_path};
use serde_json::json;

/// Whether `call` deletes (or moves away) something outside `tmp/`.
fn deletes_outside_tmp(tool: &str, arguments: &serde_json::Value) -> bool {
    let command = arguments["command"].as_str().unwrap_or_default();
    if tool != "fs" || !matches!(command, "delete" | "rename") {
        return false;
    }
    let path = arguments["path"]
        .as_str()
        .or_else(|| arguments["old_path"].as_str())
        .unwrap_or_default();
    // A path that does not normalise is refused by the tool anyway; one
    // that does is judged by where it really points (`tmp/../x` is `x`).
    match normalize_path(path) {
        Ok(path) => path == "/tmp" || !is_within(&path, "/tmp"),
        Err(_) => true,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let vfs = Arc::new(MemoryVfs::with_files([
        ("notes.txt", "keep me"),
        ("tmp/scratch.txt", "throw me away"),
    ])?);
    let no_rm = hook_fn(
        "no-rm-outside-tmp",
        [HookPoint::BeforeToolCall],
        |input: HookInput| async move {
            Ok(match &input {
                HookInput::BeforeToolCall {
                    tool, arguments, ..
                } if deletes_outside_tmp(tool, arguments) => HookDecision::Block {
                    reason: "only files under tmp/ may be deleted".into(),
                },
                _ => HookDecision::Pass,
            })
        },
    );
    let model = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call(
                "d1",
                "fs",
                json!({"command": "delete", "path": "notes.txt"}),
            )
            .tool_call(
                "d2",
                "fs",
                json!({"command": "delete", "path": "tmp/scratch.txt"}),
            ),
        ScriptedTurn::new().text("Deleted the scratch file; the note is protected."),
    ]);
    let agent = Agent::builder()
        .provider(model)
        .model("scripted")
        .tool(FsTool::new(vfs.clone()))
        // The fs tool holds deletes for a person's approval by default;
        // here the hook is the guard.
        .approval("fs", ApprovalPolicy::Never)
        .hook(no_rm)
        .build()?;
    let mut events = agent.stream("Clean up the workspace");
    while let Some(event) = events.next().await {
        match &event.kind {
            EventKind::Hook(hook) => println!(
                "hook {} on {:?}: {}",
                hook.hook,
                hook.tool_use_id,
                hook.decision.name()
            ),
            EventKind::MessageCreated(created) => {
                for result in created.message.tool_results() {
                    println!("{}: {}", result.tool_use_id, result.content);
                }
            }
            _ => {}
        }
        if let Some(result) = event.root_result() {
            println!(
                "{}: {}",
                result.status.name(),
                result.final_text().unwrap_or_default()
            );
        }
    }
    use agentloop::types::Vfs;
    println!(
        "notes.txt still there: {}",
        vfs.stat("notes.txt").await?.is_some()
    );
    println!(
        "tmp/scratch.txt still there: {}",
        vfs.stat("tmp/scratch.txt").await?.is_some()
    );
    Ok(())
}
