//! Shared test helpers: finding the installed third-party servers, running
//! a tool to completion.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_types::{
    CancellationToken, RunPath, Tool, ToolContext, ToolOutput, ToolResult, ToolStreamEvent,
};
use futures::StreamExt;
use serde_json::Value;

/// Where `scripts/install-mcp-servers.sh` installs the npm packages.
pub fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp-servers/node_modules/@modelcontextprotocol")
}

/// The entry script of an installed `@modelcontextprotocol/<package>`, or
/// `None` (after saying so loudly) when it is not installed. Under CI a
/// missing server fails the test instead.
pub fn installed_server(package: &str) -> Option<PathBuf> {
    let script = servers_dir().join(package).join("dist/index.js");
    if script.is_file() {
        return Some(script);
    }
    let message = format!(
        "SKIPPED: @modelcontextprotocol/{package} is not installed at {}; run scripts/install-mcp-servers.sh",
        script.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message} (CI is set, so this is a failure)");
    }
    eprintln!("\n{0}\n{message}\n{0}\n", "*".repeat(72));
    None
}

/// The test's own fake server script.
pub fn fake_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_server.py")
}

/// A context for one call.
pub fn context(cancel: CancellationToken) -> ToolContext {
    ToolContext {
        run_id: "run-1".into(),
        project_id: "p".into(),
        chat_id: None,
        tool_use_id: "call-1".into(),
        path: RunPath::default(),
        options: Default::default(),
        cancel,
        resume: None,
        budget: None,
    }
}

/// The tool named `name` among `tools`.
pub fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no tool {name} among {:?}",
                tools.iter().map(|t| t.name()).collect::<Vec<_>>()
            )
        })
}

/// Runs a call to the end: the progress lines and the result.
pub async fn run(tool: Arc<dyn Tool>, input: Value) -> (Vec<String>, ToolResult) {
    run_with(tool, input, CancellationToken::new()).await
}

/// Like [`run`], with the call's cancellation token.
pub async fn run_with(
    tool: Arc<dyn Tool>,
    input: Value,
    cancel: CancellationToken,
) -> (Vec<String>, ToolResult) {
    let mut stream = tool.execute(input, context(cancel));
    let mut progress = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            ToolOutput::Event(event) => progress.push(progress_text(&event)),
            ToolOutput::Done(result) => return (progress, result),
        }
    }
    panic!("the stream ended without a result")
}

/// The text of a progress event.
pub fn progress_text(event: &ToolStreamEvent) -> String {
    match event {
        ToolStreamEvent::GroupsUpdate { groups } => {
            serde_json::to_value(groups).unwrap()[0]["blocks"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        }
        other => panic!("unexpected event {other:?}"),
    }
}
