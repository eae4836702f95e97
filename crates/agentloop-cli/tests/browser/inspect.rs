//! The run inspector (`#/runs/ID/inspect`): a finished run's timeline of
//! steps; a model step's request (messages, tools, options), its response
//! as text (markup in it is never an element) and its tokens; a tool
//! step's files, from its call and from the folder's checkpoints; "save as eval case" gives a dataset `agentloop eval`
//! runs; "fork from here" makes a new run whose page opens. At a desktop's
//! width and at 390 px nothing scrolls sideways. On the run's page, a
//! message the run has not taken yet shows as queued again after a reload.

use serde_json::{Value, json};

use crate::common::agentloop;
use crate::driver::Page;
use crate::site::{Site, text_turn};

const MARKUP: &str = "<img src=x onerror=\"window.__injected = 1\">";

fn create_call() -> Value {
    let input = json!({ "command": "create", "path": "/notes.txt", "file_text": "one\ntwo\n" });
    json!({ "steps": [
        { "type": "text", "chunks": ["Writing it down"] },
        { "type": "tool_call", "id": "c1", "name": "fs", "fragments": [input.to_string()] }
    ], "usage": { "input_tokens": 30, "output_tokens": 7 } })
}

/// The timeline's buttons' labels, in order.
async fn timeline(page: &Page) -> Vec<String> {
    let labels = page
        .run("return [...document.querySelectorAll('#timeline button.step .step-kind')].map((b) => b.textContent);")
        .await;
    serde_json::from_value(labels).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_shows_each_step_saves_a_case_and_forks() {
    let Some(page) = Page::open().await else {
        return;
    };
    let answer = format!("Noted {MARKUP} for you");
    let site = Site::start(
        json!([
            create_call(),
            text_turn(&[answer.as_str()], 0),
            // The fork's turn.
            text_turn(&["Forked and answered."], 0)
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "inspect", "inspect").await;
    let task = site.new_task(&page, &project, "Inspect it").await;
    page.click("button[data-agent=planification]").await;
    page.click("tr[data-run] a").await;
    let run = page.id_in_hash("runs").await;
    page.wait_for("#run-ended").await;

    // The timeline: model call, tool calls, model call.
    page.click("#inspect-link").await;
    page.wait_until(&format!("location.hash === '#/runs/{run}/inspect'"))
        .await;
    page.wait_for("#timeline button.step").await;
    let steps = timeline(&page).await;
    assert!(steps.len() >= 3, "{steps:?}");
    assert!(steps[0].ends_with("Model call"), "{steps:?}");
    assert!(steps[1].ends_with("Tool calls"), "{steps:?}");
    assert!(steps[2].ends_with("Model call"), "{steps:?}");

    // The tool step: its call and the file it created (its new text).
    page.click("#timeline li:nth-child(2) button.step").await;
    let files = page.text_of("#step-files").await;
    assert!(
        files.contains("/notes.txt") && files.contains("create"),
        "{files}"
    );
    assert!(files.contains("+ one"), "{files}");
    // The call's own duration, from its `tool_end` event.
    let call = page.text_of("#step-tools .tool-call").await;
    assert!(call.contains("took ") && call.contains(" s"), "{call}");
    // The same change as the folder's checkpoint saw it.
    let folder = page.text_of("#step-folder").await;
    assert!(
        folder.contains("notes.txt") && folder.contains("added") && folder.contains("+one"),
        "{folder}"
    );

    // The last model step: its request, its response as text, its tokens.
    page.click("#timeline li:nth-child(3) button.step").await;
    page.wait_for("#step-request").await;
    let request = page.text_of("#step-request summary").await;
    assert!(request.contains("Request (recorded)"), "{request}");
    let tokens = page.text_of("#step-tokens").await;
    assert!(
        tokens.contains("50 in") && tokens.contains("10 out"),
        "{tokens}"
    );
    let shown = page
        .run(
            "for (const d of document.querySelectorAll('#step-detail details')) d.open = true; \
             const text = (id) => document.getElementById(id).textContent; \
             return [text('request-messages'), text('request-tools'), text('request-options'), \
                     text('step-response'), document.querySelectorAll('#step-detail img').length, \
                     window.__injected === undefined];",
        )
        .await;
    let request_messages = shown[0].as_str().unwrap();
    assert!(
        request_messages.contains("Writing it down"),
        "{request_messages}"
    );
    assert!(request_messages.contains("calls fs"), "{request_messages}");
    assert!(shown[1].as_str().unwrap().contains("fs"), "{shown}");
    assert!(
        shown[2].as_str().unwrap().contains("system_prompt"),
        "{shown}"
    );
    assert!(shown[3].as_str().unwrap().contains(MARKUP), "{shown}");
    assert_eq!(
        (&shown[4], &shown[5]),
        (&json!(0), &json!(true)),
        "markup stays text"
    );
    assert!(!page.scrolls_sideways().await, "the inspector at 1280 px");
    page.screenshot("inspector-desktop").await;

    page.client.set_window_size(390, 844).await.unwrap();
    page.wait_for("#step-detail").await;
    assert!(!page.scrolls_sideways().await, "the inspector at 390 px");
    page.run("document.getElementById('step-detail').scrollIntoView(); return true;")
        .await;
    page.screenshot("inspector-phone").await;
    page.client.set_window_size(1280, 900).await.unwrap();

    // Save as eval case: the dataset shown is one `agentloop eval` runs.
    page.click("#save-eval").await;
    page.wait_until("!document.getElementById('eval-case').hidden")
        .await;
    let case = page.text_of("#eval-case").await;
    let dataset: Value = serde_json::from_str(&case).unwrap();
    assert_eq!(dataset["cases"].as_array().unwrap().len(), 1, "{dataset}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("case.json");
    std::fs::write(&file, &case).unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!([{ "steps": [{ "type": "text", "chunks": ["ok"] }] }]).to_string(),
    )
    .unwrap();
    let output = agentloop()
        .arg("eval")
        .arg(&file)
        .arg("--provider")
        .arg(format!("scripted:{}", script.display()))
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    // Fork from here: a new run of the task, whose page opens.
    page.click("#fork-here").await;
    page.wait_until(&format!(
        "location.hash.startsWith('#/runs/') && !location.hash.endsWith('{run}/inspect')"
    ))
    .await;
    let fork = page.id_in_hash("runs").await;
    assert_ne!(fork, run);
    page.wait_for_text("Forked and answered.").await;
    let runs = site.runs(&task).await;
    let ids: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [run.as_str(), fork.as_str()], "{runs:?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_message_shows_again_after_a_reload() {
    let Some(page) = Page::open().await else {
        return;
    };
    let said = format!("Mind the staging database {MARKUP}");
    let view = json!({ "command": "view", "path": "/" }).to_string();
    let site = Site::start(
        json!([
            // A turn that takes its time, then calls a tool: the run
            // takes the message at the step after it.
            { "steps": [
                { "type": "text", "chunks": ["Working on it"] },
                { "type": "delay", "ms": 15000 },
                { "type": "tool_call", "id": "v1", "name": "fs", "fragments": [view] }
            ] },
            text_turn(&["Staging it is."], 0)
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "queued", "queued").await;
    site.new_task(&page, &project, "Queue it").await;
    page.click("button[data-agent=planification]").await;
    page.click("tr[data-run] a").await;
    let run = page.id_in_hash("runs").await;
    page.wait_for_text("Working on it").await;
    page.fill("#message-text", &said).await;
    page.click("#send-message").await;
    page.wait_for("#steer-queued [data-pending]").await;

    // Reloaded while the run works: the message shows as queued again,
    // as text.
    page.run("location.reload(); return true;").await;
    page.wait_for("#message-form").await;
    let queued = page.text_of("#steer-queued [data-pending]").await;
    assert!(queued.contains(&said), "{queued}");
    assert!(queued.to_lowercase().contains("queued"), "{queued}");
    let images = page
        .run("return document.querySelectorAll('#steer-queued img').length;")
        .await;
    assert_eq!(images, json!(0));
    page.screenshot("steer-queued-after-reload").await;

    // Taken at the run's next step: no longer queued, in the transcript.
    page.wait_until(
        "!document.querySelector('#steer-queued [data-pending]') && \
         [...document.querySelectorAll('#conversation .msg.user')] \
           .some((m) => m.textContent.includes('staging database'))",
    )
    .await;
    page.wait_for_text("Staging it is.").await;
    let (_, queued) = site
        .api(
            "GET",
            &format!("/api/agent-runs/{run}/queued-messages"),
            None,
        )
        .await;
    assert_eq!(queued["messages"], json!([]), "{queued}");
    page.close().await;
}
