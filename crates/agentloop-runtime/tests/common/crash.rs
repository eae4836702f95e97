//! What the SIGKILL tests share: the child process (this test binary
//! again, running its ignored `child_entry`) and killing it once a slow
//! tool has started.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentloop_storage::Store;
use agentloop_storage::model::StoredMessage;

/// The lines the child's tools wrote to `marker`.
pub fn marker_lines(marker: &Path) -> Vec<String> {
    std::fs::read_to_string(marker)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Starts this test binary's ignored `child_entry` with `env`.
pub fn spawn_child(env: &[(&str, &str)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "child_entry", "--ignored", "--test-threads=1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.spawn().unwrap()
}

/// SIGKILLs `child` once the chat holds `committed` messages and a tool
/// wrote a `slow` line to `marker` (a slow call is under way); returns
/// the messages committed by then.
pub async fn kill_in_slow_call(
    mut child: Child,
    store: &dyn Store,
    chat_id: &str,
    committed: usize,
    marker: &Path,
) -> Vec<StoredMessage> {
    let give_up = Instant::now() + Duration::from_secs(120);
    let messages = loop {
        let messages = store.list_messages(chat_id).await.unwrap();
        if messages.len() >= committed && marker_lines(marker).iter().any(|l| l.starts_with("slow"))
        {
            break messages;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the child exited before the slow tool started"
        );
        assert!(Instant::now() < give_up, "the child made no progress");
        // Polling the store and the marker file: the child is another
        // process, with nothing to wake this one.
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    child.kill().unwrap();
    child.wait().unwrap();
    messages
}
