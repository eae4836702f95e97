//! The reference AG-UI client (`@ag-ui/client`, `@ag-ui/core`, installed
//! by `scripts/install-agui-client.sh`) checks every encoded run: each
//! event parses with the protocol's schema and each run passes the
//! client's own event-order verification.

mod runs;

use std::path::{Path, PathBuf};
use std::process::Command;

use agentloop_agui::AgUiEvent;
use runs::{cases, encode};
use serde_json::{Map, Value, json};

/// The installed client's `node_modules`, or `None` (said loudly) when it
/// is not installed; under CI that is a failure.
fn client_modules() -> Option<PathBuf> {
    let modules =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/agui-client/node_modules");
    if modules.join("@ag-ui/client/package.json").is_file() {
        return Some(modules);
    }
    let message = format!(
        "SKIPPED: @ag-ui/client is not installed at {}; run scripts/install-agui-client.sh",
        modules.display()
    );
    assert!(
        std::env::var_os("CI").is_none(),
        "{message} (CI is set, so this is a failure)"
    );
    eprintln!("\n{0}\n{message}\n{0}\n", "*".repeat(72));
    None
}

/// What the verifier said of each run: name → `None` for ok, or why not.
fn verify(modules: &Path, runs: &Map<String, Value>) -> Vec<(String, Option<String>)> {
    let dir = std::env::temp_dir().join(format!("agentloop-agui-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("runs.json");
    std::fs::write(&file, serde_json::to_vec(runs).unwrap()).unwrap();
    let output = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verify.cjs"))
        .arg(&file)
        .env("NODE_PATH", modules)
        .output()
        .expect("node runs");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let verdicts: Vec<(String, Option<String>)> = stdout
        .lines()
        .map(|line| match line.strip_prefix("ok ") {
            Some(name) => (name.to_owned(), None),
            None => {
                let rest = line.strip_prefix("error ").unwrap_or(line);
                let (name, why) = rest.split_once(": ").unwrap_or((rest, ""));
                (name.to_owned(), Some(why.to_owned()))
            }
        })
        .collect();
    assert_eq!(
        verdicts.len(),
        runs.len(),
        "one verdict per run; stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    verdicts
}

#[tokio::test]
async fn the_reference_client_accepts_every_encoded_run() {
    let Some(modules) = client_modules() else {
        return;
    };
    let mut runs = Map::new();
    for case in cases().await {
        runs.insert(case.name.to_owned(), json!(encode(&case.events)));
    }
    // A run cut after its first events: the encoder closes it itself.
    let text = cases().await.remove(0);
    runs.insert("cut_short".to_owned(), json!(encode(&text.events[..4])));
    // A control the client must refuse, so a verifier that accepts
    // anything fails this test.
    runs.insert(
        "control_content_without_start".to_owned(),
        json!([
            AgUiEvent::RunStarted {
                thread_id: "t".into(),
                run_id: "r".into()
            },
            AgUiEvent::TextMessageContent {
                message_id: "m".into(),
                delta: "orphan".into()
            },
        ]),
    );
    for (name, verdict) in verify(&modules, &runs) {
        if name.starts_with("control_") {
            assert!(verdict.is_some(), "the client accepted the control {name}");
        } else {
            assert_eq!(verdict, None, "the client refused {name}");
        }
    }
}
