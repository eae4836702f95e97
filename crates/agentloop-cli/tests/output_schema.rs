//! `agentloop run --output-schema FILE --json` prints the validated answer
//! alone, and fails with a typed error when no answer fits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use serde_json::{Value, json};

fn run(dir: &std::path::Path, script: &str) -> Output {
    run_with(dir, script, &[])
}

fn run_with(dir: &std::path::Path, script: &str, extra: &[&str]) -> Output {
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script).unwrap();
    let schema = dir.join("city.json");
    std::fs::write(
        &schema,
        json!({
            "title": "City",
            "type": "object",
            "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
            "required": ["name", "population"]
        })
        .to_string(),
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args([
            "run",
            "The capital of Norway?",
            "--provider",
            &format!("scripted:{}", script_path.display()),
            "--output-schema",
            &schema.to_string_lossy(),
            "--json",
        ])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn json_prints_the_output_value_alone() {
    let dir = tempfile::tempdir().unwrap();
    // The scripted provider names no wire API: the answer comes through
    // the final_output tool, after one answer that did not fit.
    let output = run(
        dir.path(),
        r#"[
          {"steps": [{"type": "text", "chunks": ["Oslo"]}]},
          {"steps": [{"type": "tool_call", "id": "t1", "name": "final_output", "fragments": ["{\"name\": \"Oslo\", ", "\"population\": 709000}"]}]}
        ]"#,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let value: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(value, json!({"name": "Oslo", "population": 709000}));
}

#[test]
fn no_fitting_answer_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let never = r#"{"steps": [{"type": "text", "chunks": ["Oslo"]}]}"#;
    let output = run(dir.path(), &format!("[{never}, {never}, {never}]"));
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("output_invalid"), "{stderr}");
}

/// Every strategy but the native one answers in free text: asked for an
/// output schema, the run is refused before it starts (a usage error, exit
/// 2, with the typed error's message), never run with the schema dropped.
#[test]
fn only_the_native_strategy_takes_an_output_schema() {
    for strategy in ["react", "llm-only", "tool-first", "plan-and-execute"] {
        let dir = tempfile::tempdir().unwrap();
        let output = run_with(
            dir.path(),
            r#"[{"steps": [{"type": "text", "chunks": ["not reached"]}]}]"#,
            &["--strategy", strategy],
        );
        assert_eq!(output.status.code(), Some(2), "{strategy}");
        assert!(output.stdout.is_empty(), "{strategy}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!(
                "--output-schema: an output schema needs the native strategy; the {strategy} \
                 strategy cannot hold its answer to one"
            )),
            "{strategy}: {stderr}"
        );
    }
    // The native strategy, named, takes it.
    let dir = tempfile::tempdir().unwrap();
    let output = run_with(
        dir.path(),
        r#"[{"steps": [{"type": "tool_call", "id": "t1", "name": "final_output", "fragments": ["{\"name\": \"Oslo\", \"population\": 709000}"]}]}]"#,
        &["--strategy", "native"],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
