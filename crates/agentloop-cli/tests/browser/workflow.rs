//! A person's whole day on the page: sign in, create a project and a task,
//! start an implementation run, watch it stream and chain to review, open
//! the conversation (model output with script payloads shows as text and
//! never runs), reload mid-run without gaps or duplicates, a 409 naming
//! the running agent, cancel, Mark Done, an approval, a minion, a phone's
//! width, sign out.

use serde_json::{Value, json};

use crate::driver::Page;
use crate::site::{Site, finish_turn, hanging_turn, text_turn};

const PAYLOAD: &str = "Done. <script>window.__xss = 1</script> \
<img src=x onerror=\"window.__xss = 2\"> [click me](javascript:window.__xss=3) **bold** `code`";

fn script() -> Value {
    json!([
        // Task 1, implementation: thinks, reads the folder, answers.
        { "steps": [
            { "type": "thinking", "chunks": ["I should look first."], "signature": "sig" },
            { "type": "text", "chunks": ["Let me look."] },
            { "type": "tool_call", "id": "v1", "name": "fs", "fragments": ["{\"command\":\"view\",\"path\":\"/\"}"] }
        ], "usage": { "input_tokens": 100, "output_tokens": 20, "cost": 0.001 } },
        text_turn(&[PAYLOAD], 0),
        // Task 1, review: ends the chain, then says so.
        finish_turn("cw1"),
        text_turn(&["Reviewed."], 0),
        // Task 2, implementation: slow, for a reload in the middle.
        text_turn(&["alpha ", "beta ", "gamma"], 1200),
        finish_turn("cw2"),
        text_turn(&["Reviewed."], 0),
        // Task 3, implementation: never answers, to be cancelled.
        hanging_turn(),
        // Task 4, implementation: a write that waits for the person's
        // approval (the project asks); then the chain goes on to review.
        { "steps": [
            { "type": "tool_call", "id": "w1", "name": "fs",
              "fragments": ["{\"command\":\"create\",\"path\":\"approved.md\",\"file_text\":\"yes\"}"] }
        ] },
        text_turn(&["Written after approval."], 0),
        finish_turn("cw4"),
        text_turn(&["Reviewed."], 0),
        // Task 5, implementation: hands a task to a minion, whose own turn
        // comes next; then review.
        { "steps": [
            { "type": "tool_call", "id": "m1", "name": "minion",
              "fragments": ["{\"task\":\"Summarise the notes\"}"] }
        ] },
        text_turn(&["Minion summary: all good."], 0),
        text_turn(&["The minion summarised."], 0),
        finish_turn("cw5"),
        text_turn(&["Reviewed."], 0)
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_runs_and_watches_agents_in_chromium() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(script(), &["--minion"]);

    // Sign in: the token field has the focus.
    page.goto(&site.url("")).await;
    page.wait_for("#token").await;
    page.wait_until("document.activeElement && document.activeElement.id === 'token'")
        .await;
    page.fill("#token", "al_wrong").await;
    page.click("form button[type=submit]").await;
    assert!(page.text_of("[role=alert]").await.contains("not valid"));
    page.fill("#token", &site.token).await;
    page.click("form button[type=submit]").await;
    page.wait_until(
        "document.querySelector('h1') && document.querySelector('h1').textContent === 'Projects'",
    )
    .await;
    // The session lives in an HttpOnly cookie: the page's script cannot read it.
    assert_eq!(page.run("return document.cookie;").await, json!(""));

    // A folder outside the projects root is a clear form error.
    page.fill("#project-name", "demo").await;
    page.fill("#project-folder", "../escape").await;
    page.click("form button[type=submit]").await;
    assert!(!page.text_of("[role=alert]").await.is_empty());
    page.fill("#project-folder", "demo").await;
    page.click("form button[type=submit]").await;
    let project_id = page.id_in_hash("projects").await;

    // Task 1: the document is edited and saved; then an implementation run
    // streams, chains to review, completes.
    let task1 = site.new_task(&page, &project_id, "Read the folder").await;
    page.fill("#task-doc", "# Plan\n\nRead the folder.").await;
    page.click("#save-doc").await;
    page.wait_for_text("Saved.").await;
    page.client.refresh().await.unwrap();
    page.wait_until("document.getElementById('task-doc').value === '# Plan\\n\\nRead the folder.'")
        .await;
    page.click("button[data-agent=implementation]").await;
    page.wait_until(
        "document.getElementById('toast').textContent === 'Implementation agent started'",
    )
    .await;
    page.wait_until("location.hash.startsWith('#/tasks/')")
        .await;
    // The runs list updates live (WebSocket notices): review follows.
    page.wait_until(
        "[...document.querySelectorAll('tr[data-run]')].length === 2 && \
         [...document.querySelectorAll('tr[data-run] .badge')].every(b => b.textContent.includes('completed'))",
    )
    .await;
    // Each run shows what it spent.
    let spent = page
        .text_of("tr[data-run]:first-child td:nth-child(5)")
        .await;
    assert!(spent.contains("$0.0010"), "{spent}");
    page.screenshot("task-page").await;

    // The conversation: thinking collapsed, the tool call with its result,
    // model output shown as text, never run.
    page.goto(&site.url(&format!("#/tasks/{task1}"))).await;
    page.click("tr[data-run]:first-child a").await;
    page.wait_for_text("Run ended").await;
    page.wait_for("details.thinking:not([open])").await;
    let tool = page.text_of(".tool[data-tool=v1]").await;
    assert!(tool.contains("fs") && tool.contains("done"), "{tool}");
    page.wait_for(".tool[data-tool=v1] .result.ok").await;
    let conversation = page.text_of("#conversation").await;
    assert!(
        conversation.contains("<script>window.__xss = 1</script>"),
        "{conversation}"
    );
    assert!(conversation.contains("onerror"), "{conversation}");
    let attacked = page
        .run(
            "return [window.__xss === undefined, \
                     document.querySelectorAll('#conversation script, #conversation img').length, \
                     [...document.querySelectorAll('#conversation a')].filter(a => !/^https?:/.test(a.href)).length];",
        )
        .await;
    assert_eq!(
        attacked,
        json!([true, 0, 0]),
        "model output must not become markup"
    );
    assert!(page.text_of("#conversation strong").await.contains("bold"));
    assert!(page.text_of(".totals").await.contains("Tokens"));
    page.screenshot("run-view").await;

    // Task 2: reload in the middle of a streaming run; the conversation
    // ends whole, each word once.
    site.new_task(&page, &project_id, "Stream slowly").await;
    page.click("button[data-agent=implementation]").await;
    page.click("tr[data-run] a").await;
    page.wait_until("document.getElementById('conversation').textContent.includes('alpha')")
        .await;
    page.client.refresh().await.unwrap();
    page.wait_for_text("Run ended").await;
    let words = page
        .run(
            "const t = document.getElementById('conversation').textContent; \
             return ['alpha', 'beta', 'gamma'].map(w => t.split(w).length - 1);",
        )
        .await;
    assert_eq!(
        words,
        json!([1, 1, 1]),
        "no gap and no duplicate after the reload"
    );

    // Task 3: a second start while one runs is a 409 naming it; cancel
    // stops it; Mark Done is a toggle.
    let task3 = site.new_task(&page, &project_id, "Hang").await;
    page.click("button[data-agent=implementation]").await;
    page.wait_for("tr[data-run]").await;
    page.click("button[data-agent=review]").await;
    let conflict = page.text_of("[role=alert]").await;
    assert!(
        conflict.contains("already running: implementation"),
        "{conflict}"
    );
    page.click("tr[data-run] button.danger").await;
    page.wait_until(
        "document.querySelector('tr[data-run] .badge').textContent.includes('cancelled')",
    )
    .await;
    page.click("#mark-done").await;
    page.wait_until("document.getElementById('toast').textContent.startsWith('Marked done')")
        .await;
    let (status, task) = site.api("GET", &format!("/api/tasks/{task3}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(task["workflow_complete"], true);

    // Task 4: the project asks before writes (set on its page); a write
    // waits; the person approves it on the run's page, the run completes,
    // the page shows the rest of its log, and the chain moves on to review.
    page.goto(&site.url(&format!("#/projects/{project_id}")))
        .await;
    page.select("#project-approvals", "ask").await;
    page.wait_until("document.getElementById('approvals-policy').textContent.includes('Ask')")
        .await;
    let task4 = site.new_task(&page, &project_id, "Write a file").await;
    page.click("button[data-agent=implementation]").await;
    page.wait_until(
        "document.querySelector('tr[data-run] .badge').textContent.includes('waiting')",
    )
    .await;
    assert!(!site.root.join("demo").join("approved.md").exists());
    page.click("tr[data-run]:first-child a").await;
    let pending = page.text_of(".tool[data-tool=w1] .pending").await;
    assert!(
        pending.contains("Waits for your approval, because: "),
        "{pending}"
    );
    page.screenshot("run-waiting").await;
    page.click(".tool[data-tool=w1] .pending button").await;
    page.wait_until("document.querySelector('h1 .badge').textContent.includes('completed')")
        .await;
    page.wait_until(
        "document.getElementById('conversation').textContent.includes('Written after approval.')",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(site.root.join("demo").join("approved.md")).unwrap(),
        "yes"
    );
    page.goto(&site.url(&format!("#/tasks/{task4}"))).await;
    page.wait_until(
        "[...document.querySelectorAll('tr[data-run]')].map(r => r.querySelector('a').textContent + ':' + \
         r.querySelector('.badge').textContent).join() === 'implementation:✓ completed,review:✓ completed'",
    )
    .await;

    // Task 5: a minion's task shows in a blue box with Copy All, its own
    // work nested in pink inside the call.
    site.new_task(&page, &project_id, "Delegate").await;
    page.click("button[data-agent=implementation]").await;
    page.click("tr[data-run]:first-child a").await;
    page.wait_for_text("Run ended").await;
    let info = page.text_of(".tool[data-tool=m1] .info").await;
    assert!(
        info.contains("Summarise the notes") && info.contains("Copy All"),
        "{info}"
    );
    let nested = page.text_of(".tool[data-tool=m1] .nested").await;
    assert!(nested.contains("Minion summary: all good."), "{nested}");
    let outcome = page.text_of(".tool[data-tool=m1] .result.ok").await;
    assert!(outcome.contains("Minion summary: all good."), "{outcome}");
    page.screenshot("run-minion").await;

    // A phone's width: nothing scrolls sideways.
    page.client.set_window_size(390, 844).await.unwrap();
    page.goto(&site.url(&format!("#/tasks/{task1}"))).await;
    page.wait_for("tr[data-run]").await;
    assert!(
        !page.scrolls_sideways().await,
        "the task page fits a phone's width"
    );
    page.screenshot("task-page-phone").await;

    // Sign out: the session ends and the sign-in form is back.
    page.click("#sign-out").await;
    page.wait_for("#token").await;
    page.close().await;
}
