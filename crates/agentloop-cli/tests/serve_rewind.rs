//! `agentloop serve` as a process: an implementation run whose `shell`
//! and `fs` steps create, edit, re-permission and delete files is rewound
//! (`POST /api/agent-runs/{id}/rewind`) to each of its steps, and the
//! project's folder is compared byte for byte, with permissions, with what
//! it was; `GET …/file-changes` shows a step's changes as a patch; a fork
//! with `restoreFiles` starts from the step's folder. Another user's run
//! is a 404, a run that is still going a 409. On SQLite and PostgreSQL.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::create_user;
use common::folders::{call, listing};
use common::served::*;
use serde_json::{Value, json};

/// Waits (bounded) until the task has `runs` agent runs, none going.
fn until_chain_ends(address: &str, token: &str, task_id: &str, runs: usize) {
    let path = format!("/api/tasks/{task_id}/agent-runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (_, listed) = http(address, token, "GET", &path, None);
        let listed = listed.as_array().cloned().unwrap_or_default();
        if listed.len() == runs && listed.iter().all(|r| r["status"] == "completed") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the chain did not end: {listed:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn a_run_is_rewound_with_its_files(db: &str, dir: &Path) {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("keep.txt"), "keep\n").unwrap();
    std::fs::write(repo.join("edit.txt"), "one\n").unwrap();
    std::fs::write(repo.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(repo.join("sub/deep.txt"), "deep\n").unwrap();
    std::fs::set_permissions(
        repo.join("keep.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let at_start = listing(&repo);

    let script = dir.join("script.json");
    write_script(
        &script,
        json!([
            // The run that waits for a person, in a project that asks.
            fs_create("w1", "waiting.txt", "not yet"),
            call(
                "s1",
                "shell",
                json!({ "command": "echo new > made.txt; mkdir -p out/inner; echo x > out/inner/x.txt; rm -r sub" })
            ),
            call(
                "s2",
                "fs",
                json!({ "command": "str_replace", "path": "/edit.txt", "old_str": "one", "new_str": "two" })
            ),
            call(
                "s3",
                "shell",
                json!({ "command": "rm gone.txt; chmod 700 keep.txt; printf 'three\\n' >> edit.txt" })
            ),
            text("Implemented."),
            call("r1", "complete_workflow", json!({})),
            text("Reviewed."),
            // The fork's turn.
            text("Forked and done."),
        ]),
    );
    let token = create_user(db, "ada");
    let other = create_user(db, "bob");
    let checkpoints = dir.join("checkpoints").display().to_string();
    let served = serve_with(
        db,
        &script,
        "one",
        &["--allow-shell", "--file-checkpoints", &checkpoints],
    );
    let address = served.address.clone();
    // A run waiting for a person: its folder is not rewound under it.
    let asking = task_with(
        &address,
        &token,
        &dir.join("asking"),
        json!({ "approvals": "ask" }),
    );
    let waiting = start_run(&address, &token, &asking, "implementation");
    until_status(&address, &token, &waiting, "waiting");
    let (status, refused) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{waiting}/rewind"),
        Some(json!({ "to": 0 })),
    );
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["agentRun"]["id"], waiting.as_str(), "{refused}");
    let (status, cancelled) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{waiting}/cancel"),
        None,
    );
    assert_eq!(status, 200, "{cancelled}");

    let task_id = task_with(&address, &token, &repo, json!({ "shell": true }));
    let run_id = start_run(&address, &token, &task_id, "implementation");
    until_status(&address, &token, &run_id, "completed");
    // The chain's review ends it and marks the task done.
    until_chain_ends(&address, &token, &task_id, 2);
    let at_end = listing(&repo);
    assert_eq!(at_end["edit.txt"], "644 \"two\\nthree\\n\"", "{at_end:?}");
    assert!(!at_end.contains_key("gone.txt") && !at_end.contains_key("sub"));

    let (status, steps) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/steps"),
        None,
    );
    assert_eq!(status, 200, "{steps}");
    let steps = steps.as_array().unwrap().clone();
    // The first step before each of the three tool steps.
    let tool_steps: Vec<u64> = steps
        .windows(2)
        .filter(|pair| pair[0]["next"] != "tools" && pair[1]["next"] == "tools")
        .map(|pair| pair[1]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(tool_steps.len(), 3, "{steps:?}");

    // The inspector shows what the first shell command changed.
    let (status, inspection) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/inspection"),
        None,
    );
    assert_eq!(status, 200, "{inspection}");
    let first = inspection["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["seq"].as_u64() == Some(tool_steps[0]))
        .unwrap();
    let shown: Vec<(&str, &str)> = first["folder_changes"]["changes"]
        .as_array()
        .unwrap_or_else(|| panic!("{first}"))
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["change"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            ("made.txt", "added"),
            ("out/inner/x.txt", "added"),
            ("sub/deep.txt", "removed")
        ],
        "{first}"
    );
    assert_eq!(
        first["folder_changes"]["until"].as_u64(),
        Some(tool_steps[1])
    );

    // The second and third steps' changes, as patches.
    let changes_path = format!("/api/agent-runs/{run_id}/file-changes?at={}", tool_steps[1]);
    let (status, changes) = http(&address, &token, "GET", &changes_path, None);
    assert_eq!(status, 200, "{changes}");
    let by_path: BTreeMap<&str, &Value> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c))
        .collect();
    assert_eq!(
        by_path.keys().copied().collect::<Vec<_>>(),
        ["edit.txt", "gone.txt", "keep.txt"],
        "{changes}"
    );
    assert!(
        by_path["edit.txt"]["diff"]
            .as_str()
            .unwrap()
            .contains("-one\n+two\n+three\n"),
        "{changes}"
    );
    assert_eq!(by_path["gone.txt"]["change"], "removed");
    assert_eq!(by_path["keep.txt"]["summary"], "permissions 644 → 700");
    let (status, _) = http(&address, &other, "GET", &changes_path, None);
    assert_eq!(status, 404, "another user's run");
    let (status, refused) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/file-changes?at=x"),
        None,
    );
    assert_eq!(status, 400, "{refused}");

    let rewind = format!("/api/agent-runs/{run_id}/rewind");
    let (status, _) = http(
        &address,
        &other,
        "POST",
        &rewind,
        Some(json!({ "to": tool_steps[0] })),
    );
    assert_eq!(status, 404, "another user's run");
    assert_eq!(listing(&repo), at_end, "nothing restored for another user");

    // To the third step: as the first two left it.
    let (status, restored) = http(
        &address,
        &token,
        "POST",
        &rewind,
        Some(json!({ "to": tool_steps[2] })),
    );
    assert_eq!(status, 200, "{restored}");
    assert_eq!(restored["restored"], true);
    let mut after_two = at_start.clone();
    after_two.remove("sub");
    after_two.remove("sub/deep.txt");
    after_two.insert("made.txt".into(), "644 \"new\\n\"".into());
    after_two.insert("out".into(), "folder".into());
    after_two.insert("out/inner".into(), "folder".into());
    after_two.insert("out/inner/x.txt".into(), "644 \"x\\n\"".into());
    after_two.insert("edit.txt".into(), "644 \"two\\n\"".into());
    assert_eq!(listing(&repo), after_two, "{restored}");

    // To the first: the folder the run started with.
    let (status, restored) = http(
        &address,
        &token,
        "POST",
        &rewind,
        Some(json!({ "to": tool_steps[0] })),
    );
    assert_eq!(status, 200, "{restored}");
    assert_eq!(listing(&repo), at_start, "{restored}");

    // A fork at the third step with its files runs on that folder (the
    // task reopened first: the review marked it done).
    let (status, reopened) = http(
        &address,
        &token,
        "PUT",
        &format!("/api/tasks/{task_id}/workflow-complete"),
        Some(json!({ "complete": false })),
    );
    assert_eq!(status, 200, "{reopened}");
    let (status, fork) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/fork"),
        Some(json!({ "at": tool_steps[2], "restoreFiles": true })),
    );
    assert_eq!(status, 201, "{fork}");
    let fork_id = fork["id"].as_str().unwrap().to_owned();
    // The fork goes on with its third call, then ends.
    until_status(&address, &token, &fork_id, "completed");
    let mut after_fork = after_two.clone();
    after_fork.remove("gone.txt");
    after_fork.insert("keep.txt".into(), "700 \"keep\\n\"".into());
    after_fork.insert("edit.txt".into(), "644 \"two\\nthree\\n\"".into());
    assert_eq!(listing(&repo), after_fork);
}

#[test]
fn a_run_is_rewound_with_its_files_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    a_run_is_rewound_with_its_files(&db, dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_rewound_with_its_files_on_postgres() {
    on_scratch_postgres("agentloop_cli_rewind", a_run_is_rewound_with_its_files).await;
}
