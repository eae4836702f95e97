//! A project's memories on the page: listed with the run that wrote each
//! (a link to it), edited, and deleted after a question; the audit log
//! shows those changes, the project's and the user's own, filtered by
//! time. A viewer reads them without the controls. Both pages fit a
//! phone's width.

use serde_json::json;

use crate::driver::Page;
use crate::site::{Site, call_turn, text_turn};

/// What the model remembers: markup in it stays text.
const FACT: &str = "Staging listens on 6543 <img src=x onerror=alert(1)>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memories_are_listed_edited_and_deleted_and_the_audit_log_shows_it() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(
        json!([
            call_turn(
                "m1",
                "memory",
                json!({ "command": "create", "path": "/memories/facts.md", "file_text": FACT })
            ),
            text_turn(&["Noted."], 0)
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "remember", "remember").await;
    site.new_task(&page, &project, "Learn").await;
    page.click("button[data-agent=planification]").await;
    page.click("tr[data-run] a").await;
    let run = page.id_in_hash("runs").await;
    page.wait_for("#run-ended").await;

    // The project links its memories; the one the run wrote is there.
    page.goto(&site.url(&format!("#/projects/{project}"))).await;
    page.click("#project-memories").await;
    let path = page.text_of("li[data-memory] .memory-path").await;
    assert_eq!(path, "/memories/facts.md");
    let text = page
        .run("return document.querySelector('li[data-memory] .memory-text').value;")
        .await;
    assert_eq!(text, json!(FACT));
    let images = page
        .run("return document.querySelectorAll('main img').length;")
        .await;
    assert_eq!(images, json!(0), "the memory's markup is text");
    // The question to delete shows only once asked.
    let asking = page
        .run("return document.querySelector('li[data-memory] .memory-confirm-delete').offsetParent === null;")
        .await;
    assert_eq!(asking, json!(true), "the question waits for Delete…");
    page.screenshot("memories").await;

    // Its source is the run that wrote it.
    page.click("li[data-memory] a.memory-source").await;
    page.wait_until(&format!("location.hash === '#/runs/{run}'"))
        .await;
    page.wait_for("#conversation").await;
    page.client.back().await.unwrap();
    page.wait_until("!document.getElementById('conversation')")
        .await;

    // Edited: the API reads the new text.
    page.fill("li[data-memory] .memory-text", "Staging listens on 7000.")
        .await;
    page.click("li[data-memory] .memory-save").await;
    page.wait_for_text("Memory saved").await;
    let (status, listed) = site
        .api("GET", &format!("/api/projects/{project}/memories"), None)
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["memories"][0]["text"], "Staging listens on 7000.");
    assert_eq!(listed["memories"][0]["source_run"], run.as_str());

    // At a phone's width the list fits.
    page.client.set_window_size(390, 844).await.unwrap();
    page.wait_for("li[data-memory]").await;
    assert!(!page.scrolls_sideways().await, "memories at 390 px");
    page.screenshot("phone-memories").await;
    page.client.set_window_size(1280, 900).await.unwrap();

    // A viewer of the project reads the memory: its text is read-only and
    // neither Save nor Delete… shows (the server refuses them anyway).
    let viewer = site.add_user("vic");
    let (status, added) = site
        .api(
            "POST",
            &format!("/api/projects/{project}/members"),
            Some(json!({ "name": "vic", "role": "viewer" })),
        )
        .await;
    assert_eq!(status, 201, "{added}");
    page.click("#sign-out").await;
    site.sign_in_with(&page, &viewer).await;
    page.goto(&site.url(&format!("#/projects/{project}/memories")))
        .await;
    page.wait_for("li[data-memory]").await;
    let viewed = page
        .run(
            "const li = document.querySelector('li[data-memory]'); \
             const shown = (css) => [...li.querySelectorAll(css)].filter((e) => e.getClientRects().length > 0).length; \
             return [li.querySelector('.memory-text').readOnly, li.querySelector('.memory-expires').readOnly, \
                     shown('.memory-save'), shown('.memory-delete'), li.querySelector('.memory-text').value];",
        )
        .await;
    assert_eq!(
        viewed,
        json!([true, true, 0, 0, "Staging listens on 7000."]),
        "a viewer's memories"
    );
    page.click("#sign-out").await;
    site.sign_in(&page).await;
    page.goto(&site.url(&format!("#/projects/{project}/memories")))
        .await;
    page.wait_for("li[data-memory] .memory-save").await;

    // Deleted after a question: gone from the page and the API.
    page.click("li[data-memory] .memory-delete").await;
    page.click("li[data-memory] .memory-confirm-delete").await;
    page.wait_for("#no-memories").await;
    let (_, listed) = site
        .api("GET", &format!("/api/projects/{project}/memories"), None)
        .await;
    assert_eq!(listed["memories"], json!([]));

    // The project's audit log: the run started, the memory edited and
    // deleted, newest first, with links to what still exists.
    page.goto(&site.url(&format!("#/projects/{project}"))).await;
    page.click("#project-audit").await;
    page.wait_for("tr[data-action='memory.delete']").await;
    let actions = page
        .run(
            "return [...document.querySelectorAll('tr[data-audit]')].map((r) => r.dataset.action);",
        )
        .await;
    let actions: Vec<String> = serde_json::from_value(actions).unwrap();
    let at = |action: &str| {
        actions
            .iter()
            .position(|a| a == action)
            .unwrap_or(usize::MAX)
    };
    assert!(at("memory.delete") < at("memory.edit"), "{actions:?}");
    assert!(at("memory.edit") < at("run.start"), "{actions:?}");
    assert!(at("run.start") < at("task.create"), "{actions:?}");
    let started = page.text_of("tr[data-action='run.start']").await;
    assert!(started.contains("ada (you)"), "{started}");
    page.click("tr[data-action='run.start'] a").await;
    page.wait_until(&format!("location.hash === '#/runs/{run}'"))
        .await;
    page.wait_for("#conversation").await;
    page.client.back().await.unwrap();

    // Filtered to a time after every entry: none.
    page.wait_until(
        "!document.getElementById('conversation') && document.getElementById('audit-since')",
    )
    .await;
    page.run(
        "const f = document.getElementById('audit-since'); \
         f.value = '2999-01-01T00:00'; \
         document.getElementById('audit-filter').click();",
    )
    .await;
    page.wait_for("#audit-empty").await;

    // The user's own log, from the bar, at a phone's width.
    page.client.set_window_size(390, 844).await.unwrap();
    page.click("#audit-link").await;
    page.wait_for("tr[data-action='task.create']").await;
    let heading = page.text_of("h1").await;
    assert_eq!(heading, "Your audit log");
    assert!(!page.scrolls_sideways().await, "the audit log at 390 px");
    page.screenshot("phone-audit").await;
    page.close().await;
}
