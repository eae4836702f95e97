//! `agentloop runs list|show|fork` on a temporary database: a chat's run
//! of many tool steps keeps each step; forked at a middle step, the fork
//! is a run of its own whose history is the run's up to the step, the run
//! is untouched, and `chat --chat FORK` takes the fork to its own end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn agentloop_status(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(args)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("AGENTLOOP_MODEL")
        .env_remove("AGENTLOOP_KEEP_STEPS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn agentloop(args: &[&str], stdin: &str) -> Output {
    let output = agentloop_status(args, stdin);
    assert!(
        output.status.success(),
        "agentloop {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

/// `calls` turns each viewing the root folder, then `answer`.
fn script(prefix: &str, calls: usize, answer: &str) -> String {
    let mut turns: Vec<Value> = (0..calls)
        .map(|i| {
            let input = json!({ "command": "view", "path": "/" }).to_string();
            json!({ "steps": [
                { "type": "text", "chunks": [format!("{prefix} step {i}")] },
                { "type": "tool_call", "id": format!("{prefix}{i}"), "name": "fs", "fragments": [input] }
            ], "usage": { "input_tokens": 100, "output_tokens": 5 } })
        })
        .collect();
    turns.push(json!({ "steps": [{ "type": "text", "chunks": [answer] }],
                       "usage": { "input_tokens": 100, "output_tokens": 5 } }));
    Value::Array(turns).to_string()
}

/// A chat's messages as stored, without their seqs.
fn messages(db: &str, chat: &str) -> Vec<Value> {
    json_of(&agentloop(
        &["chats", "show", chat, "--db", db, "--json"],
        "",
    ))["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message"].clone())
        .collect()
}

#[test]
fn a_run_forked_at_a_middle_step_has_the_prefix_and_goes_on_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "milk\n").unwrap();
    let root = root.to_string_lossy().into_owned();
    let db = dir.path().join("a.db").to_string_lossy().into_owned();
    let chat = |chat: &str, script_text: String, stdin: &str| {
        let path = dir.path().join(format!("{chat}-{}.json", stdin.len()));
        std::fs::write(&path, script_text).unwrap();
        let provider = format!("scripted:{}", path.display());
        let args = [
            "chat",
            "--db",
            &db,
            "--chat",
            chat,
            "--provider",
            &provider,
            "--tools",
            "fs",
            "--root",
            &root,
        ];
        String::from_utf8_lossy(&agentloop(&args, stdin).stdout).into_owned()
    };
    let said = chat("c1", script("a", 10, "Looked ten times."), "look around\n");
    assert!(said.contains("Looked ten times."), "{said}");

    let runs = json_of(&agentloop(
        &["runs", "list", "--chat", "c1", "--db", &db, "--json"],
        "",
    ));
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run_id = runs[0]["id"].as_str().unwrap().to_owned();
    let shown = json_of(&agentloop(
        &["runs", "show", &run_id, "--steps", "--db", &db, "--json"],
        "",
    ));
    let steps = shown["steps"].as_array().unwrap().clone();
    assert!(steps.len() >= 10, "every step kept: {shown}");
    assert!(
        steps.iter().all(|s| s["tokens"]["input_tokens"].is_u64()),
        "{shown}"
    );
    // The run has ended: each step says how long it took, the last to
    // the run's end.
    assert!(steps.iter().all(|s| s["duration_ms"].is_i64()), "{shown}");
    let text = String::from_utf8_lossy(
        &agentloop(&["runs", "show", &run_id, "--steps", "--db", &db], "").stdout,
    )
    .into_owned();
    assert!(text.contains("tool calls"), "{text}");
    assert!(text.lines().nth(1).unwrap().contains("\ttook\t"), "{text}");
    assert!(
        text.lines()
            .skip(2)
            .all(|line| line.split('\t').nth(2).unwrap().ends_with(" s")),
        "{text}"
    );
    assert_eq!(text.lines().count(), steps.len() + 2, "{text}");

    let original = messages(&db, "c1");
    let model_steps: Vec<&Value> = steps.iter().filter(|s| s["next"] == "model").collect();
    let middle = model_steps[model_steps.len() / 2];
    let at = middle["seq"].as_u64().unwrap();
    let prefix = usize::try_from(middle["messages"].as_u64().unwrap()).unwrap();
    assert!(prefix > 2 && prefix < original.len(), "{middle}");

    // A seq that is no step: a usage error naming where the steps are.
    let seqs: Vec<u64> = steps.iter().map(|s| s["seq"].as_u64().unwrap()).collect();
    let gap = (seqs[0]..).find(|s| !seqs.contains(s)).unwrap();
    let refused = agentloop_status(
        &[
            "runs",
            "fork",
            &run_id,
            "--at",
            &gap.to_string(),
            "--db",
            &db,
        ],
        "",
    );
    assert_eq!(refused.status.code(), Some(2));
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains(&format!("from {} to {}", seqs[0], seqs[seqs.len() - 1])),
        "{why}"
    );

    let forked = json_of(&agentloop(
        &[
            "runs",
            "fork",
            &run_id,
            "--at",
            &at.to_string(),
            "--db",
            &db,
            "--json",
        ],
        "",
    ));
    let fork_chat = forked["chat_id"].as_str().unwrap().to_owned();
    let fork_run = forked["run_id"].as_str().unwrap().to_owned();
    assert_ne!(fork_run, run_id);
    assert_eq!(messages(&db, &fork_chat), original[..prefix], "the prefix");

    let said = chat(&fork_chat, script("b", 2, "Forked and done."), "");
    assert!(said.contains("Forked and done."), "{said}");
    let after = messages(&db, &fork_chat);
    assert_eq!(after[..prefix], original[..prefix]);
    assert_eq!(after.len(), prefix + 2 * 2 + 1);
    let fork_runs = json_of(&agentloop(
        &["runs", "list", "--chat", &fork_chat, "--db", &db, "--json"],
        "",
    ));
    let fork_runs = fork_runs.as_array().unwrap();
    assert_eq!(
        fork_runs.len(),
        1,
        "the fork ran in its own record: {fork_runs:?}"
    );
    assert_eq!(fork_runs[0]["id"], fork_run.as_str());
    assert_eq!(fork_runs[0]["status"], "completed");
    let fork_steps = json_of(&agentloop(
        &["runs", "show", &fork_run, "--steps", "--db", &db, "--json"],
        "",
    ));
    assert!(
        fork_steps["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["seq"].as_u64().unwrap() >= at),
        "{fork_steps}"
    );

    // The run itself is untouched.
    assert_eq!(messages(&db, "c1"), original);
    let again = json_of(&agentloop(
        &["runs", "show", &run_id, "--steps", "--db", &db, "--json"],
        "",
    ));
    assert_eq!(again, shown);
}
