//! The server killed mid-run (SIGKILL) and started again on the same
//! database and address: the page says it cannot reach the server, then
//! reconnects by itself; the run, taken over, shows its answer once, with
//! no cut-off partial left above it.

use serde_json::json;

use crate::driver::Page;
use crate::site::{Site, finish_turn, text_turn};

/// The words the implementation streams, slowly enough to be cut off.
const WORDS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_off_by_a_killed_server_shows_once_after_the_restart() {
    let Some(page) = Page::open().await else {
        return;
    };
    let chunks = WORDS.map(|w| format!("{w} "));
    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
    // The restarted process plays its script from the start: the cut-off
    // turn is streamed again whole. Short leases, so the run is taken over
    // soon after the restart.
    let mut site = Site::start(
        json!([
            text_turn(&chunks, 1500),
            finish_turn("cw1"),
            text_turn(&["Reviewed."], 0)
        ]),
        &[
            "--lease-ms",
            "2000",
            "--heartbeat-ms",
            "200",
            "--claim-interval-ms",
            "200",
        ],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "restart", "restart").await;
    let task = site.new_task(&page, &project, "Survive").await;
    page.click("button[data-agent=implementation]").await;
    page.click("tr[data-run] a").await;
    page.wait_until("document.getElementById('conversation').textContent.includes('beta')")
        .await;

    site.kill();
    page.wait_until("!document.getElementById('offline').hidden")
        .await;
    let notice = page.text_of("#offline").await;
    assert!(notice.contains("cannot be reached"), "{notice}");
    page.screenshot("restart-server-down").await;

    site.restart();
    page.wait_until("document.getElementById('offline').hidden")
        .await;
    page.wait_until("document.querySelector('h1 .badge').textContent === '✓ completed'")
        .await;
    page.wait_for("#run-ended").await;
    let counts = page
        .run(&format!(
            "const t = document.getElementById('conversation').textContent; \
             return [{}.map(w => t.split(w).length - 1), \
                     document.querySelectorAll('#conversation .msg.assistant').length];",
            json!(WORDS)
        ))
        .await;
    assert_eq!(
        counts,
        json!([[1, 1, 1, 1], 1]),
        "one answer, each word once, no partial left"
    );
    page.screenshot("restart-run-recovered").await;
    let runs = site.runs(&task).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");

    // Down again, and the person goes to the task meanwhile: the page says
    // the server cannot be reached, then shows the task by itself.
    site.kill();
    page.click("main a[href^='#/tasks/']").await;
    page.wait_until("document.querySelector('h1')?.textContent === 'The server cannot be reached'")
        .await;
    let shown = page.text_of("main").await;
    assert!(
        !shown.contains("Failed to fetch") && !shown.contains("Something went wrong"),
        "{shown}"
    );
    page.screenshot("restart-task-unreachable").await;
    site.restart();
    page.wait_until("document.querySelector('h1')?.textContent === 'Survive'")
        .await;
    page.wait_for("tr[data-run]").await;
    page.wait_until("document.getElementById('offline').hidden")
        .await;
    page.close().await;
}
