//! Agent Skills on the command line: `agentloop skills list` names the
//! skills a run reads and every refused folder with its reason; a run
//! offers only each skill's name and description until the model calls
//! one, and the call runs the skill's instructions as a child cycle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{in_folder as command, piped};
use serde_json::{Value, json};

const BODY_MARKER: &str = "Add the VAT lines last";

fn skill(root: &Path, folder: &str, text: &str) {
    std::fs::create_dir_all(root.join(folder)).unwrap();
    std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
}

/// A folder of skills shaped as public ones are: one good skill with a
/// script beside it, one refused for its name.
fn skills_folder(root: &Path) {
    skill(
        root,
        "invoices",
        &format!(
            "---\nname: invoices\ndescription: Totals invoices in CSV form. Use when asked what \
             invoices add up to.\nlicense: Apache-2.0\nmetadata:\n  author: example\n---\n\n\
             # Invoices\n\nRun `python scripts/total.py FILE`. {BODY_MARKER}.\n"
        ),
    );
    std::fs::create_dir_all(root.join("invoices/scripts")).unwrap();
    std::fs::write(root.join("invoices/scripts/total.py"), "print(42)\n").unwrap();
    skill(
        root,
        "Bad_Name",
        "---\nname: Bad_Name\ndescription: d\n---\nx\n",
    );
}

#[test]
fn skills_list_names_the_skills_and_why_folders_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    skills_folder(&project.join(".agents/skills"));
    let extra = dir.path().join("extra");
    skill(
        &extra,
        "notes",
        "---\nname: notes\ndescription: Takes notes.\n---\nWrite them down.\n",
    );
    skill(
        &extra,
        "no-description",
        "---\nname: no-description\n---\nx\n",
    );

    let home = tempfile::tempdir().unwrap();
    let output = command(
        &project,
        home.path(),
        &[
            "skills",
            "list",
            "--json",
            "--skills",
            &extra.display().to_string(),
        ],
    )
    .output()
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes", "invoices"], "{listed}");
    let refused = listed["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 2, "{listed}");
    assert!(
        refused
            .iter()
            .any(|r| r["dir"].as_str().unwrap().ends_with("Bad_Name")
                && r["reason"].as_str().unwrap().contains("lowercase"))
    );
    assert!(
        refused
            .iter()
            .any(|r| r["dir"].as_str().unwrap().ends_with("no-description")
                && r["reason"] == "the front matter has no description")
    );

    let text = command(&project, home.path(), &["skills", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("invoices  Totals invoices"), "{text}");
    assert!(
        text.contains("refused  ") && text.contains("Bad_Name"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_names_and_descriptions_are_sent_until_a_skill_is_called() {
    let server = common::openai::start(None, "ok").await;
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().to_owned();
    skills_folder(&project.join("skills"));
    let base_url = server.base_url.clone();
    let output = tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        piped(
            command(
                &project,
                home.path(),
                &[
                    "run",
                    "Total my invoices",
                    "--base-url",
                    &base_url,
                    "--model",
                    "m",
                ],
            ),
            "",
        )
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Bad_Name refused"), "{stderr}");
    let request = &server.completions().await[0];
    let sent = request.to_string();
    assert!(sent.contains("Totals invoices in CSV form"), "{sent}");
    assert!(!sent.contains(BODY_MARKER), "{sent}");
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"invoices"), "{tools:?}");
}

#[test]
fn a_called_skill_runs_its_instructions_as_a_child_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("my-skills");
    skills_folder(&skills);
    let script = dir.path().join("script.json");
    let call = json!({ "task": "total march.csv" }).to_string();
    std::fs::write(
        &script,
        json!([
            { "steps": [{ "type": "tool_call", "id": "s1", "name": "invoices", "fragments": [call] }] },
            { "steps": [{ "type": "text", "chunks": ["The invoices add up to 42."] }] },
            { "steps": [{ "type": "text", "chunks": ["42 in all."] }] }
        ])
        .to_string(),
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = command(
        dir.path(),
        home.path(),
        &[
            "run",
            "Total my invoices",
            "--provider",
            &format!("scripted:{}", script.display()),
            "--skills",
            &skills.display().to_string(),
            "--json",
        ],
    )
    .output()
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = common::events(&output);
    let start = events
        .iter()
        .find(|e| e["type"] == "tool_start" && e["name"] == "invoices")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(start["is_skill"], true, "{start}");
    // The child's turn streams under the call's path.
    assert!(
        events
            .iter()
            .any(|e| e["path"].as_array().is_some_and(|p| !p.is_empty())
                && e.to_string().contains("The invoices add up to 42.")),
        "{events:?}"
    );
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_end" && e["tool_use_id"] == "s1")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(
        (end["is_skill"].clone(), end["is_error"].clone()),
        (json!(true), json!(false))
    );
    // The child's answer is the call's result in the root's history.
    assert!(
        events.iter().any(|e| {
            let text = e.to_string();
            e["type"] == "message_created"
                && e["path"].as_array().is_none_or(Vec::is_empty)
                && text.contains("tool_result")
                && text.contains("The invoices add up to 42.")
        }),
        "{events:?}"
    );
}
