//! Steering from a run's page: the message box stays usable while the
//! agent works; a message sent then shows as queued until the run takes
//! it at its next step, then in the transcript, before the answer that
//! read it. A message to a run that has ended starts the task's next run.
//! A strategy picked for one message: `reject` is refused in the page
//! (the text kept), `rollback` ends the run and follows the one started.

use serde_json::json;

use crate::driver::Page;
use crate::site::{Site, text_turn};

const STEER: &str = "Mind the **staging** database <script>x()</script>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_while_the_run_works_is_queued_then_delivered() {
    let Some(page) = Page::open().await else {
        return;
    };
    let view = json!({ "command": "view", "path": "/" }).to_string();
    let site = Site::start(
        json!([
            // A planification run of several steps: it streams, takes its
            // time, calls a tool, then answers.
            { "steps": [
                { "type": "text", "chunks": ["Looking around"] },
                { "type": "delay", "ms": 4000 },
                { "type": "tool_call", "id": "v1", "name": "fs", "fragments": [view] }
            ] },
            text_turn(&["Noted: staging it is."], 0),
            // The run the message to the ended run starts.
            text_turn(&["Started again."], 0)
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "steer", "steer").await;
    let task = site.new_task(&page, &project, "Steer it").await;
    page.click("button[data-agent=planification]").await;
    page.click("tr[data-run] a").await;
    let run = page.id_in_hash("runs").await;
    page.wait_for_text("Looking around").await;

    // While the agent works, the box is there and usable.
    let usable = page
        .run(
            "const t = document.getElementById('message-text'); \
             const b = document.getElementById('send-message'); \
             return !!t && !t.disabled && !!b && !b.disabled;",
        )
        .await;
    assert_eq!(usable, json!(true));
    let hint = page.text_of("#message-hint").await;
    assert!(hint.contains("working"), "{hint}");
    page.fill("#message-text", STEER).await;
    page.click("#send-message").await;

    // Queued, as text, until the run's next step takes it.
    let queued = page.text_of("#steer-queued [data-pending]").await;
    assert!(queued.contains(STEER), "{queued}");
    assert!(queued.to_lowercase().contains("queued"), "{queued}");
    page.screenshot("steer-queued").await;
    page.wait_until(
        "!document.querySelector('#steer-queued [data-pending]') && \
         [...document.querySelectorAll('#conversation .msg.user')] \
           .some((m) => m.textContent.includes('<script>x()</script>'))",
    )
    .await;
    page.wait_for_text("Noted: staging it is.").await;
    // In the transcript after the tool's result and before the answer
    // that read it; its markup is text, not elements.
    let order = page
        .run(
            "const user = [...document.querySelectorAll('#conversation .msg.user')] \
               .find((m) => m.textContent.includes('staging')); \
             const tool = document.querySelector('#conversation .tool[data-tool=v1]'); \
             const answer = [...document.querySelectorAll('#conversation .msg.assistant')] \
               .find((m) => m.textContent.includes('Noted')); \
             return [ \
               !!(tool.compareDocumentPosition(user) & Node.DOCUMENT_POSITION_FOLLOWING), \
               !!(user.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING), \
               user.querySelectorAll('script').length, \
               user.querySelectorAll('strong').length];",
        )
        .await;
    assert_eq!(order, json!([true, true, 0, 1]));
    page.wait_for("#run-ended").await;
    page.screenshot("steer-delivered").await;

    // The run's stored history holds the message once.
    let (status, messages) = site
        .api("GET", &format!("/api/agent-runs/{run}/messages"), None)
        .await;
    assert_eq!(status, 200, "{messages}");
    let said = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["message"]["role"] == "user" && m.to_string().contains("staging"))
        .count();
    assert_eq!(said, 1, "{messages}");

    // A phone's width: the box fits, nothing scrolls sideways.
    page.client.set_window_size(390, 844).await.unwrap();
    page.wait_for("#message-form").await;
    assert!(!page.scrolls_sideways().await, "the run page at 390 px");
    page.screenshot("phone-steer").await;
    page.client.set_window_size(1280, 900).await.unwrap();

    // The run has ended: a message starts the task's next run, shown.
    let hint = page.text_of("#message-hint").await;
    assert!(hint.contains("ended"), "{hint}");
    page.fill("#message-text", "Once more, please.").await;
    page.click("#send-message").await;
    page.wait_until(&format!(
        "location.hash.startsWith('#/runs/') && !location.hash.endsWith('{run}')"
    ))
    .await;
    page.wait_for_text("Started again.").await;
    let next = page.id_in_hash("runs").await;
    let runs = site.runs(&task).await;
    let started = runs.iter().find(|r| r["id"] == next.as_str()).unwrap();
    assert_eq!(started["agent_type"], "implementation", "{started}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picked_strategy_refuses_or_restarts_the_run() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(
        json!([
            // The run works for a minute; the restarted one answers.
            { "steps": [
                { "type": "text", "chunks": ["Working on it"] },
                { "type": "delay", "ms": 60000 }
            ] },
            text_turn(&["Restarted with your message."], 0)
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "picked", "picked").await;
    site.new_task(&page, &project, "Pick").await;
    page.click("button[data-agent=planification]").await;
    page.click("tr[data-run] a").await;
    let run = page.id_in_hash("runs").await;
    page.wait_for_text("Working on it").await;

    // Refused while it works: said in the page, the text kept.
    page.select("#message-strategy", "reject").await;
    page.fill("#message-text", "Stop and do this instead.")
        .await;
    page.click("#send-message").await;
    let refused = page.text_of("#message-form .error").await;
    assert!(refused.contains("rejected"), "{refused}");
    let kept = page
        .run("return document.getElementById('message-text').value;")
        .await;
    assert_eq!(kept, json!("Stop and do this instead."));
    assert!(
        page.run("return !document.querySelector('#steer-queued [data-pending]');")
            .await
            == json!(true)
    );

    // Restart: the run ends and the page follows the run started with it.
    page.select("#message-strategy", "rollback").await;
    page.click("#send-message").await;
    page.wait_until(&format!(
        "location.hash.startsWith('#/runs/') && !location.hash.endsWith('{run}')"
    ))
    .await;
    page.wait_for_text("Restarted with your message.").await;
    let (_, old) = site
        .api("GET", &format!("/api/agent-runs/{run}"), None)
        .await;
    assert_eq!(old["status"], "cancelled", "{old}");
    page.close().await;
}
