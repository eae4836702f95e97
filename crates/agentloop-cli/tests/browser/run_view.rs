//! A run's page says how the run ended: why it failed, who stopped it,
//! and which run the chain started after it; a running run is cancelled
//! from its own page.

use serde_json::json;

use crate::driver::Page;
use crate::site::{Site, call_turn, hanging_turn, text_turn};

/// What the scripted model says when its request is refused.
const REFUSAL: &str = "the prompt is too long for this model (300000 tokens, at most 200000)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_shows_why_it_failed() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(
        json!([
            // A turn of a tool call only (no text of its own), then a turn
            // the provider refuses before any content.
            call_turn("v1", "fs", json!({ "command": "view", "path": "/" })),
            // A call the tool refuses, its text saying "Error: …" itself.
            call_turn("v2", "fs", json!({ "command": "view", "path": "/missing.md" })),
            { "steps": [{ "type": "error", "error": { "kind": "invalid_request", "message": REFUSAL } }] }
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "failing", "failing").await;
    let task = site.new_task(&page, &project, "Fail").await;
    page.click("button[data-agent=implementation]").await;
    page.click("tr[data-run] a").await;

    let reason = page.text_of("#run-ended #run-error").await;
    assert!(reason.contains(REFUSAL), "{reason}");
    let ended = page.text_of("#run-ended").await;
    assert!(ended.contains("Run ended: ✗ failed"), "{ended}");
    page.wait_for(".tool[data-tool=v1] .result.ok").await;
    let refused = page.text_of(".tool[data-tool=v2] .result.bad").await;
    assert!(
        refused.starts_with("Error: The path /missing.md does not exist"),
        "{refused}"
    );
    // Neither the tool-call turn nor the refused one leaves an empty
    // assistant heading.
    let headings = page
        .run("return document.querySelectorAll('#conversation .msg.assistant').length;")
        .await;
    assert_eq!(headings, json!(0), "no assistant message had content");
    let shown = page.text_of("main").await;
    assert!(
        !shown.contains("null") && !shown.contains("undefined"),
        "{shown}"
    );
    page.screenshot("run-failed").await;

    // The record says the same.
    let runs = site.runs(&task).await;
    assert_eq!(runs[0]["status"], "failed");
    assert!(
        runs[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains(REFUSAL),
        "{}",
        runs[0]
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_a_server_with_no_model_says_how_to_configure_one() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::without_a_model();
    site.sign_in(&page).await;
    let project = site.new_project(&page, "first", "first").await;
    site.new_task(&page, &project, "Try it").await;
    page.click("button[data-agent=implementation]").await;
    page.click("tr[data-run] a").await;
    let reason = page.text_of("#run-ended #run-error").await;
    assert!(
        reason.contains("ANTHROPIC_API_KEY") && reason.contains("--demo"),
        "{reason}"
    );
    let headings = page
        .run("return document.querySelectorAll('#conversation .msg.assistant').length;")
        .await;
    assert_eq!(headings, json!(0), "no empty assistant heading");
    page.screenshot("run-no-model").await;
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_links_the_next_run_and_a_running_one_is_cancelled_or_marked_done() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(
        json!([
            // Implementation answers; the review it chains to never does.
            text_turn(&["Implemented."], 0),
            hanging_turn(),
            // A second implementation, stopped by Mark Done.
            hanging_turn()
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "chain", "chain").await;
    let task = site.new_task(&page, &project, "Chain").await;
    page.click("button[data-agent=implementation]").await;
    page.click("tr[data-run] a").await;
    let implementation = page.id_in_hash("runs").await;

    // The finished implementation says review has started, with a link.
    let next = page.text_of("#chain-next").await;
    assert!(next.contains("Review has started"), "{next}");
    let runs = site.runs(&task).await;
    let review = runs
        .iter()
        .find(|r| r["agent_type"] == "review")
        .unwrap_or_else(|| panic!("no review run: {runs:?}"));
    let review_id = review["id"].as_str().unwrap();
    let href = page
        .run("return document.querySelector('#chain-next a').getAttribute('href');")
        .await;
    assert_eq!(href, json!(format!("#/runs/{review_id}")));
    page.screenshot("run-chained").await;

    // The review runs: its page has a Cancel control, and the page shows
    // the end once it is cancelled.
    page.click("#chain-next a").await;
    page.wait_until(&format!("location.hash === '#/runs/{review_id}'"))
        .await;
    page.wait_until(
        "document.getElementById('conversation').textContent.includes('thinking it over')",
    )
    .await;
    page.click("#cancel-run").await;
    page.wait_until("document.querySelector('h1 .badge').textContent.includes('cancelled')")
        .await;
    let ended = page.text_of("#run-ended").await;
    assert!(
        ended.contains("cancelled") && ended.contains("Cancelled by a person"),
        "{ended}"
    );
    let cancel_buttons = page
        .run("return document.querySelectorAll('#cancel-run').length;")
        .await;
    assert_eq!(cancel_buttons, json!(0), "an ended run has no Cancel");
    let (_, record) = site
        .api("GET", &format!("/api/agent-runs/{review_id}"), None)
        .await;
    assert_eq!(record["status"], "cancelled", "{record}");
    assert_eq!(record["stopped_by"], "cancel", "{record}");
    assert_ne!(review_id, implementation);

    // Mark Done stops a running implementation: it is recorded completed,
    // stopped by the workflow's end; its page and the runs table show it
    // stopped, in words, never as a green "completed".
    page.goto(&site.url(&format!("#/tasks/{task}"))).await;
    page.click("button[data-agent=implementation]").await;
    page.wait_until("document.querySelectorAll('tr[data-run]').length === 3")
        .await;
    let runs = site.runs(&task).await;
    let third = runs
        .iter()
        .find(|r| r["id"] != implementation.as_str() && r["id"] != review_id)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    page.click("#mark-done").await;
    page.wait_until("document.getElementById('toast').textContent.startsWith('Marked done')")
        .await;
    page.wait_until(&format!(
        "document.querySelector(\"tr[data-run='{third}'] .badge\")?.textContent === '■ stopped' && \
         document.querySelector(\"tr[data-note-of='{third}']\")?.textContent === 'stopped: the task was marked done'"
    ))
    .await;
    page.goto(&site.url(&format!("#/runs/{third}"))).await;
    page.wait_until("document.querySelector('h1 .badge').textContent === '■ stopped'")
        .await;
    let ended = page.text_of("#run-ended").await;
    assert!(
        ended.contains("Run ended: ■ stopped")
            && ended.contains("Stopped: the task was marked done."),
        "{ended}"
    );
    let shown = page.text_of("main").await;
    assert!(
        !shown.contains("completed") && !shown.contains("workflow_complete"),
        "{shown}"
    );
    page.screenshot("run-stopped").await;
    let (_, record) = site
        .api("GET", &format!("/api/agent-runs/{third}"), None)
        .await;
    assert_eq!(record["status"], "completed", "{record}");
    assert_eq!(record["stopped_by"], "workflow_complete", "{record}");
    page.close().await;
}
