//! `agentloop runs rewind|diff` and `runs fork --restore-files`, from
//! outside: a chat whose `shell` and `fs` steps create, edit, re-permission
//! and delete files is rewound step by step, and the project folder is
//! compared byte for byte (with permissions) with what it was.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};

use common::folders::{call, listing};
use serde_json::{Value, json};

fn agentloop_status(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(args)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENTLOOP_MODEL")
        .env_remove("AGENTLOOP_KEEP_STEPS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn agentloop(args: &[&str]) -> Output {
    agentloop_with(args, "")
}

fn agentloop_with(args: &[&str], stdin: &str) -> Output {
    let output = agentloop_status(args, stdin);
    assert!(
        output.status.success(),
        "agentloop {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_run_rewound_to_each_step_gets_its_folder_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("keep.txt"), "keep\n").unwrap();
    std::fs::write(root.join("edit.txt"), "one\n").unwrap();
    std::fs::write(root.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(root.join("sub/deep.txt"), "deep\n").unwrap();
    std::fs::set_permissions(
        root.join("keep.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let at_start = listing(&root);

    let turns = json!([
        call("t1", "shell", json!({ "command": "echo new > made.txt; mkdir -p out/inner; echo x > out/inner/x.txt; rm -r sub" })),
        call("t2", "fs", json!({ "command": "str_replace", "path": "/edit.txt", "old_str": "one", "new_str": "two" })),
        call("t3", "shell", json!({ "command": "rm gone.txt; chmod 700 keep.txt; printf 'three\\n' >> edit.txt" })),
        { "steps": [{ "type": "text", "chunks": ["Done."] }] }
    ]);
    let script = dir.path().join("script.json");
    std::fs::write(&script, turns.to_string()).unwrap();
    let provider = format!("scripted:{}", script.display());
    let db = dir.path().join("a.db").display().to_string();
    let root_arg = root.display().to_string();
    let said = agentloop_with(
        &[
            "chat",
            "--db",
            &db,
            "--chat",
            "c1",
            "--provider",
            &provider,
            "--tools",
            "fs,shell",
            "--approve",
            "all",
            "--root",
            &root_arg,
        ],
        "work\n",
    );
    assert!(stdout(&said).contains("Done."), "{}", stdout(&said));
    let at_end = listing(&root);
    assert_eq!(at_end["edit.txt"], "644 \"two\\nthree\\n\"");
    assert!(!at_end.contains_key("gone.txt") && !at_end.contains_key("sub"));

    let runs: Value = serde_json::from_slice(
        &agentloop(&["runs", "list", "--chat", "c1", "--db", &db, "--json"]).stdout,
    )
    .unwrap();
    let run = runs[0]["id"].as_str().unwrap().to_owned();
    let shown: Value = serde_json::from_slice(
        &agentloop(&["runs", "show", &run, "--steps", "--db", &db, "--json"]).stdout,
    )
    .unwrap();
    // The first step before each of the three tool steps (a tool step is
    // kept twice: before and after its calls' hooks are asked).
    let steps = shown["steps"].as_array().unwrap();
    let tool_steps: Vec<String> = steps
        .windows(2)
        .filter(|pair| pair[0]["next"] != "tools" && pair[1]["next"] == "tools")
        .map(|pair| pair[1]["seq"].as_u64().unwrap().to_string())
        .collect();
    assert_eq!(tool_steps.len(), 3, "{shown}");

    // What the second and third steps changed, as a patch.
    let diff = stdout(&agentloop(&[
        "runs",
        "diff",
        &run,
        "--at",
        &tool_steps[1],
        "--db",
        &db,
    ]));
    for line in [
        "--- a/edit.txt",
        "-one",
        "+two",
        "+three",
        "+++ /dev/null",
        "-bye",
        "changed keep.txt: permissions 644 → 700",
    ] {
        assert!(diff.lines().any(|l| l == line), "{line:?} in:\n{diff}");
    }
    assert!(
        !diff.contains("made.txt"),
        "the first step's change is before it:\n{diff}"
    );
    let between: Value = serde_json::from_slice(
        &agentloop(&[
            "runs",
            "diff",
            &run,
            "--at",
            &tool_steps[1],
            "--to",
            &tool_steps[2],
            "--db",
            &db,
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    let paths: Vec<&str> = between
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["edit.txt"], "{between}");

    // Rewound to the third step: as the first two left it.
    let rewound = agentloop(&["runs", "rewind", &run, "--to", &tool_steps[2], "--db", &db]);
    let mut expected = at_start.clone();
    expected.remove("sub");
    expected.remove("sub/deep.txt");
    expected.insert("made.txt".into(), "644 \"new\\n\"".into());
    expected.insert("out".into(), "folder".into());
    expected.insert("out/inner".into(), "folder".into());
    expected.insert("out/inner/x.txt".into(), "644 \"x\\n\"".into());
    expected.insert("edit.txt".into(), "644 \"two\\n\"".into());
    assert_eq!(
        listing(&root),
        expected,
        "{}",
        String::from_utf8_lossy(&rewound.stderr)
    );
    assert!(
        stdout(&rewound).lines().any(|l| l == "+ gone.txt"),
        "{}",
        stdout(&rewound)
    );

    // Rewound to the first: the folder the chat started with.
    agentloop(&[
        "runs",
        "rewind",
        &run,
        "--to",
        &tool_steps[0],
        "--db",
        &db,
        "--json",
    ]);
    assert_eq!(listing(&root), at_start);

    // After the last tool step nothing that writes ran: nothing to do.
    let last = shown["steps"].as_array().unwrap().last().unwrap()["seq"].to_string();
    let nothing = agentloop(&["runs", "rewind", &run, "--to", &last, "--db", &db]);
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("no file to restore"));
    assert_eq!(listing(&root), at_start);

    // A fork at the third step with its files: the fork's chat and the
    // folder as the third step found it.
    let forked = agentloop(&[
        "runs",
        "fork",
        &run,
        "--at",
        &tool_steps[2],
        "--restore-files",
        "--db",
        &db,
    ]);
    assert_eq!(
        listing(&root),
        expected,
        "{}",
        String::from_utf8_lossy(&forked.stderr)
    );

    // Another folder can be given; a run that is not there is one line.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    agentloop(&[
        "runs",
        "rewind",
        &run,
        "--to",
        &tool_steps[0],
        "--root",
        &elsewhere.display().to_string(),
        "--db",
        &db,
    ]);
    assert_eq!(listing(&elsewhere), at_start);
    let missing = agentloop_status(
        &["runs", "rewind", "run-nope", "--to", "1", "--db", &db],
        "",
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no run run-nope"));
}
