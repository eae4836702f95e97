//! `agentloop run --strategy` and `--skills`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Output};

use common::events;

fn agentloop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(args)
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY")
        .output()
        .unwrap()
}

#[test]
fn unknown_strategy_lists_the_valid_ones() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["not reached"]}]}]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let output = agentloop(&["run", "hi", "--provider", &provider, "--strategy", "yolo"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for name in [
        "yolo",
        "native",
        "react",
        "llm-only",
        "tool-first",
        "plan-and-execute",
    ] {
        assert!(stderr.contains(name), "{name} missing from: {stderr}");
    }
}

#[test]
fn llm_only_strategy_runs_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["Plain answer."]}]}]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let output = agentloop(&[
        "run",
        "hi",
        "--provider",
        &provider,
        "--strategy",
        "llm-only",
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output);
    assert!(events.iter().any(|e| e["type"] == "agent_start"));
    let last = events.last().unwrap();
    assert_eq!(last["result"]["status"], "complete");
}

#[test]
fn skills_file_offers_skills_that_run_child_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills.json");
    std::fs::write(
        &skills,
        r#"[{"name": "summarise", "description": "Summarises text.", "prompt": "<p>Summarise <b>briefly</b>.</p><script>alert(1)</script>"}]"#,
    )
    .unwrap();
    let script = dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"[
          {"steps": [{"type": "tool_call", "id": "t1", "name": "summarise", "fragments": ["{\"task\": \"the text\"}"]}]},
          {"steps": [{"type": "text", "chunks": ["A summary."]}]},
          {"steps": [{"type": "text", "chunks": ["Done."]}]}
        ]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let skills_arg = skills.to_string_lossy().into_owned();
    let output = agentloop(&[
        "run",
        "summarise it",
        "--provider",
        &provider,
        "--skills",
        &skills_arg,
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output);
    let start = events
        .iter()
        .find(|e| e["type"] == "tool_start" && e["name"] == "summarise")
        .expect("the skill was called");
    assert_eq!(start["is_skill"], true);
    assert_eq!(start["depth"], 1);
    assert!(
        events
            .iter()
            .any(|e| e["path"] == serde_json::json!(["t1"]) && e["type"] == "finished"),
        "the child cycle ran and finished under the call's path"
    );
    assert_eq!(events.last().unwrap()["result"]["status"], "complete");
}

#[test]
fn skills_file_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["not reached"]}]}]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let cases = [
        (
            r#"[{"name": "a", "prompt": "x", "allowed_skills": ["b"]}, {"name": "b", "prompt": "y", "allowed_skills": ["a"]}]"#,
            "cycle",
        ),
        (
            r#"[{"name": "a", "prompt": "x", "tools": ["fs"]}]"#,
            "not among --tools",
        ),
        (
            r#"[{"name": "a", "prompt": "x", "allowed_skills": ["zzz"]}]"#,
            "unknown skill zzz",
        ),
        (r#"{"name": "a"}"#, "not a JSON array"),
    ];
    for (text, expected) in cases {
        let skills = dir.path().join("skills.json");
        std::fs::write(&skills, text).unwrap();
        let skills_arg = skills.to_string_lossy().into_owned();
        let output = agentloop(&["run", "x", "--provider", &provider, "--skills", &skills_arg]);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(expected),
            "expected {expected:?} in {stderr}"
        );
    }
}

#[test]
fn strategy_comes_from_the_settings_file() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["ok"]}]}]"#,
    )
    .unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, r#"{"agent.loop.strategy": "llm-only"}"#).unwrap();
    let provider = format!("scripted:{}", script.display());
    let settings_arg = settings.to_string_lossy().into_owned();
    let output = agentloop(&[
        "run",
        "hi",
        "--provider",
        &provider,
        "--config",
        &settings_arg,
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        events(&output).iter().any(|e| e["type"] == "agent_start"),
        "llm-only emits agent events"
    );

    std::fs::write(&settings, r#"{"agent.loop.strategy": "nope"}"#).unwrap();
    let output = agentloop(&[
        "run",
        "hi",
        "--provider",
        &provider,
        "--config",
        &settings_arg,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown loop strategy `nope`"));
}

#[test]
fn a_toml_settings_file_sets_the_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["ok"]}]}]"#,
    )
    .unwrap();
    let settings = dir.path().join("settings.toml");
    std::fs::write(
        &settings,
        "# the loop\n[agent.loop]\nstrategy = \"llm-only\"\n",
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let settings_arg = settings.to_string_lossy().into_owned();
    let run = || {
        agentloop(&[
            "run",
            "hi",
            "--provider",
            &provider,
            "--config",
            &settings_arg,
            "--json",
        ])
    };
    let output = run();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        events(&output).iter().any(|e| e["type"] == "agent_start"),
        "llm-only emits agent events"
    );

    // A broken file is named, with where it breaks.
    std::fs::write(&settings, "[agent.loop]\nstrategy = \"llm-only\n").unwrap();
    let output = run();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "the settings file {settings_arg} is not valid TOML: line 2, column "
        )),
        "{stderr}"
    );
    assert!(events(&output).is_empty(), "nothing ran: {stderr}");
}

#[test]
fn a_broken_json_settings_file_says_where_it_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, "{\n  \"agent.loop.strategy\": react\n}").unwrap();
    let settings_arg = settings.to_string_lossy().into_owned();
    let output = agentloop(&["run", "hi", "--demo", "--config", &settings_arg]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "the settings file {settings_arg} is not valid JSON: line 2, column 26"
        )),
        "{stderr}"
    );
}
