//! The shell tool through its own launcher binary: output, limits and
//! the sandbox's refusals, each checked by its effect.
#![cfg(all(feature = "shell", target_os = "linux"))]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentloop_tools::shell::{Launcher, ShellConfig, ShellLimits, ShellTool};
use agentloop_types::{CancellationToken, RunPath, Tool, ToolContext, ToolOutput, ToolResult};
use futures::StreamExt;
use serde_json::json;

fn tool(root: &Path, limits: ShellLimits) -> Arc<ShellTool> {
    let launcher = Launcher::binary(env!("CARGO_BIN_EXE_agentloop-shell-launcher"));
    let config = ShellConfig::new(root, launcher)
        .map(|c| c.with_limits(limits))
        .unwrap_or_else(|e| panic!("{e}"));
    Arc::new(ShellTool::new(config))
}

fn context(cancel: CancellationToken) -> ToolContext {
    ToolContext {
        run_id: "r".to_owned(),
        project_id: "p".to_owned(),
        chat_id: None,
        tool_use_id: "c".to_owned(),
        path: RunPath::root(),
        options: Default::default(),
        cancel,
        resume: None,
        budget: None,
    }
}

/// Runs one call; returns the progress count and the result.
async fn call(
    tool: Arc<ShellTool>,
    input: serde_json::Value,
    cancel: CancellationToken,
) -> (usize, ToolResult) {
    let mut stream = tool.execute(input, context(cancel));
    let mut progress = 0;
    while let Some(output) = stream.next().await {
        match output {
            ToolOutput::Event(_) => progress += 1,
            ToolOutput::Done(result) => return (progress, result),
        }
    }
    panic!("the stream ended without a result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_in_the_project_folder_and_reports_its_output() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("sub")).unwrap();
    let (_, result) = call(
        tool(project.path(), ShellLimits::default()),
        json!({"command": "pwd; echo out; echo err >&2; echo made > file.txt; exit 3", "cwd": "sub"}),
        CancellationToken::new(),
    )
    .await;
    assert!(result.is_error, "{}", result.content);
    assert!(
        result.content.starts_with("exit code: 3\n"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("folder: ./sub"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("stdout (") && result.content.contains("\nout\n"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("stderr (4 bytes):\nerr\n"),
        "{}",
        result.content
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("sub/file.txt")).unwrap(),
        "made\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_project_are_refused() {
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let (_, result) = call(
        tool(project.path(), ShellLimits::default()),
        json!({"command": format!("echo x > {}", target.display())}),
        CancellationToken::new(),
    )
    .await;
    assert!(result.is_error, "{}", result.content);
    assert!(!target.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_stops_it_once_it_has_started() {
    let project = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let tool = tool(project.path(), ShellLimits::default());
    let mut stream = tool.execute(
        json!({"command": "echo started; sleep 1000"}),
        context(cancel.clone()),
    );
    let mut result = None;
    while let Some(output) = stream.next().await {
        match output {
            // The first progress says the command runs: cancel it.
            ToolOutput::Event(_) => cancel.cancel(),
            ToolOutput::Done(done) => {
                result = Some(done);
                break;
            }
        }
    }
    let result = result.expect("no result");
    assert!(result.is_error);
    assert!(
        result.content.starts_with("stopped: cancelled"),
        "{}",
        result.content
    );
    assert!(result.content.contains("started"), "{}", result.content);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_refusal_is_a_typed_error_and_nothing_runs() {
    // A launcher that cannot be started stands for a machine without the
    // sandbox: the call fails, it never runs the command some other way.
    let project = tempfile::tempdir().unwrap();
    let config = ShellConfig::new(project.path(), Launcher::binary("/nonexistent/launcher"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, result) = call(
        Arc::new(ShellTool::new(config)),
        json!({"command": "touch ran"}),
        CancellationToken::new(),
    )
    .await;
    assert!(result.is_error);
    assert!(
        result.content.contains("cannot start the sandbox launcher"),
        "{}",
        result.content
    );
    assert!(!project.path().join("ran").exists());
}
