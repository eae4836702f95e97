//! Agent Skills on `agentloop serve`: a project's `.agents/skills/` and
//! `skills/` folders are offered to its agent runs, each skill as a tool
//! whose name and description are all the model sees until it calls it;
//! the call runs the skill's instructions as a child cycle, whose request
//! carries them, and its answer is the call's result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::create_user;
use common::openai::{Turn, start_turns};
use common::served::*;
use serde_json::{Value, json};

const BODY_MARKER: &str = "Add the VAT lines last";

fn skill(folder: &std::path::Path, text: &str) {
    std::fs::create_dir_all(folder).unwrap();
    std::fs::write(folder.join("SKILL.md"), text).unwrap();
}

/// The names of the tools a chat completion offers.
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_skills_are_offered_and_run_as_child_cycles() {
    let model = start_turns(&[
        Turn::Call {
            id: "s1",
            name: "invoices",
            arguments: json!({ "task": "total march.csv" }),
        },
        Turn::Text("The invoices add up to 42."),
        Turn::Text("42 in all."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let repo = dir.path().join("repo");
    // Shaped as public skills are: front matter other agents write too,
    // a script beside the instructions; and one refused for its name.
    skill(
        &repo.join(".agents/skills/invoices"),
        &format!(
            "---\nname: invoices\ndescription: Totals invoices in CSV form. Use when asked what \
             invoices add up to.\nlicense: Apache-2.0\nmetadata:\n  author: example\n---\n\n\
             # Invoices\n\nRun `python scripts/total.py FILE`. {BODY_MARKER}.\n"
        ),
    );
    std::fs::create_dir_all(repo.join(".agents/skills/invoices/scripts")).unwrap();
    std::fs::write(
        repo.join(".agents/skills/invoices/scripts/total.py"),
        "print(42)\n",
    )
    .unwrap();
    skill(
        &repo.join("skills/notes"),
        "---\nname: notes\ndescription: Takes meeting notes.\n---\nWrite them down.\n",
    );
    skill(
        &repo.join("skills/Bad_Name"),
        "---\nname: Bad_Name\ndescription: d\n---\nx\n",
    );
    let ada = create_user(&db, "ada");
    let base_url = model.base_url.clone();
    let root = dir.path().to_owned();
    let (run_messages, plain_run) = tokio::task::spawn_blocking(move || {
        let served = serve_provider(
            &db,
            &[
                "--provider",
                "openai-compatible",
                "--base-url",
                &base_url,
                "--model",
                "mock",
            ],
            &root,
            "skills",
            &[],
        );
        let address = served.address.clone();
        let task_id = task(&address, &ada, &root.join("repo"));
        let run = start_run(&address, &ada, &task_id, "planification");
        until_status(&address, &ada, &run, "completed");
        let (_, messages) = http(
            &address,
            &ada,
            "GET",
            &format!("/api/agent-runs/{run}/messages"),
            None,
        );
        let other = task(&address, &ada, &root.join("plain"));
        let plain_run = start_run(&address, &ada, &other, "planification");
        until_status(&address, &ada, &plain_run, "completed");
        (messages, plain_run)
    })
    .await
    .unwrap();

    let requests = model.completions().await;
    assert_eq!(requests.len(), 4, "{plain_run}");
    // The root's first request offers the skills by name and description
    // only; the refused folder is not offered.
    let first = &requests[0];
    let offered = tool_names(first);
    assert!(offered.contains(&"invoices".to_owned()), "{offered:?}");
    assert!(offered.contains(&"notes".to_owned()), "{offered:?}");
    assert!(!offered.iter().any(|n| n == "Bad_Name"), "{offered:?}");
    let sent = first.to_string();
    assert!(sent.contains("Totals invoices in CSV form"), "{sent}");
    assert!(!sent.contains(BODY_MARKER), "{sent}");

    // The call's child cycle: the run's prompt, the skill's instructions
    // with its folder, then the task; no skill tool of its own.
    let child = &requests[1];
    let messages = child["messages"].as_array().unwrap();
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(
        system
            .iter()
            .any(|s| s.starts_with("You are the planification agent")),
        "{system:?}"
    );
    assert!(
        system
            .iter()
            .any(|s| s.contains(BODY_MARKER) && s.contains(".agents/skills/invoices")),
        "{system:?}"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(last.to_string().contains("total march.csv"), "{last}");
    assert!(!tool_names(child).contains(&"invoices".to_owned()));

    // The child's answer is the call's result in the run's history.
    let third = requests[2].to_string();
    assert!(third.contains("The invoices add up to 42."), "{third}");
    let stored = run_messages.to_string();
    assert!(stored.contains("42 in all."), "{stored}");

    // A project with no skill folder offers none.
    let plain = tool_names(&requests[3]);
    assert!(!plain.contains(&"invoices".to_owned()), "{plain:?}");
}
