//! A person decides what a waiting run waits for, on the run's page:
//! approve once, always, or with edited arguments (checked as a JSON
//! object before sending); answer a question. The waiting notice goes
//! once the run goes on, and starting another run meanwhile says a run
//! waits for a decision.

use serde_json::{Value, json};

use crate::driver::Page;
use crate::site::{Site, call_turn, finish_turn, text_turn};

fn create(id: &str, path: &str, text: &str) -> Value {
    call_turn(
        id,
        "fs",
        json!({ "command": "create", "path": path, "file_text": text }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_approved_always_or_with_edited_arguments() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(
        json!([
            // Implementation: two writes; the first is approved for every
            // later fs call of the run, so the second does not wait.
            create("a1", "one.md", "one"),
            create("a2", "two.md", "two"),
            text_turn(&["Both written."], 0),
            // Review: a write approved with arguments the person edited.
            create("e1", "three.md", "from the model"),
            finish_turn("cw1"),
            text_turn(&["Reviewed."], 0)
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "asks", "asks").await;
    page.select("#project-approvals", "ask").await;
    page.wait_until("document.getElementById('approvals-policy').textContent.includes('Ask')")
        .await;
    let folder = site.root.join("asks");
    let task = site.new_task(&page, &project, "Write files").await;
    page.click("button[data-agent=implementation]").await;
    page.wait_until(
        "document.querySelector('tr[data-run] .badge').textContent.includes('waiting')",
    )
    .await;
    let implementation = site.runs(&task).await[0]["id"].as_str().unwrap().to_owned();

    // Run Review meanwhile: the page says a run waits for a decision and
    // links it; the API's 409 names the run and its status.
    page.click("button[data-agent=review]").await;
    let conflict = page.text_of("[role=alert]").await;
    assert!(
        conflict.contains("waiting for your decision: implementation")
            && !conflict.contains("already running"),
        "{conflict}"
    );
    let (status, body) = site
        .api(
            "POST",
            &format!("/api/tasks/{task}/agent-runs"),
            Some(json!({ "agentType": "review" })),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["runningAgent"]["id"],
        implementation.as_str(),
        "{body}"
    );
    assert_eq!(body["runningAgent"]["status"], "waiting", "{body}");
    page.click("[role=alert] a").await;
    page.wait_until(&format!("location.hash === '#/runs/{implementation}'"))
        .await;

    // Approve always: the notice goes, the run goes on, the second write
    // runs without asking.
    page.wait_for("#waiting-notice").await;
    page.click(".tool[data-tool=a1] button[data-decision=approve_always]")
        .await;
    page.wait_until("!document.getElementById('waiting-notice')")
        .await;
    page.wait_until(
        "document.getElementById('conversation').textContent.includes('Both written.')",
    )
    .await;
    page.wait_for(".tool[data-tool=a2] .result.ok").await;
    assert_eq!(
        std::fs::read_to_string(folder.join("one.md")).unwrap(),
        "one"
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("two.md")).unwrap(),
        "two"
    );
    let notices = page
        .run("return document.querySelectorAll('#waiting-notice, .pending').length;")
        .await;
    assert_eq!(notices, json!(0), "nothing waits any more");

    // The review asks for its write; it is approved with edited arguments,
    // after two refused edits that say what is wrong.
    page.click("#chain-next a").await;
    page.wait_for(".tool[data-tool=e1] .pending").await;
    page.click(".tool[data-tool=e1] button[data-decision=edit]")
        .await;
    page.fill(".tool[data-tool=e1] textarea.edit-args", "{oops")
        .await;
    page.click(".tool[data-tool=e1] button[data-decision=approve_edited]")
        .await;
    let invalid = page.text_of(".tool[data-tool=e1] [role=alert]").await;
    assert!(invalid.contains("not valid JSON"), "{invalid}");
    page.fill(".tool[data-tool=e1] textarea.edit-args", "[1, 2]")
        .await;
    page.click(".tool[data-tool=e1] button[data-decision=approve_edited]")
        .await;
    page.wait_until(
        "document.querySelector('.tool[data-tool=e1] [role=alert]').textContent.includes('must be a JSON object')",
    )
    .await;
    page.screenshot("run-edit-arguments").await;
    assert!(!folder.join("three.md").exists(), "nothing ran yet");
    let edited = r#"{"command": "create", "path": "three.md", "file_text": "edited by a person"}"#;
    page.fill(".tool[data-tool=e1] textarea.edit-args", edited)
        .await;
    page.click(".tool[data-tool=e1] button[data-decision=approve_edited]")
        .await;
    page.wait_until("document.querySelector('h1 .badge').textContent.includes('completed')")
        .await;
    assert_eq!(
        std::fs::read_to_string(folder.join("three.md")).unwrap(),
        "edited by a person"
    );
    page.close().await;
}

/// The choices the scripted model offers; one is markup, shown as text.
const CHOICES: [&str; 3] = [
    "Red",
    "Blue, like the sky",
    "<b onclick=\"window.__xss = 1\">Green</b>",
];

/// A site whose implementation asks a question (`ask_user` with `input`),
/// then says `after`; `page` signed in and on the run's page, the question
/// waiting. Returns the site and the task.
async fn asked(page: &Page, input: Value, after: &str) -> (Site, String) {
    let site = Site::start(
        json!([
            call_turn("q1", "ask_user", input),
            text_turn(&[after], 0),
            finish_turn("cw1"),
            text_turn(&["Reviewed."], 0)
        ]),
        &[],
    );
    site.sign_in(page).await;
    let project = site.new_project(page, "questions", "questions").await;
    let task = site.new_task(page, &project, "Ask me").await;
    page.click("button[data-agent=implementation]").await;
    page.click("tr[data-run] a").await;
    page.wait_for(".tool[data-tool=q1] .pending").await;
    (site, task)
}

/// Answers the question with `text`, which the page must refuse.
async fn refused_answer(page: &Page, text: &str) {
    page.fill(".tool[data-tool=q1] .pending textarea", text)
        .await;
    page.click(".tool[data-tool=q1] button[data-decision=answer]")
        .await;
    let refused = page.text_of(".tool[data-tool=q1] [role=alert]").await;
    assert!(refused.contains("Write an answer"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_on_the_page_by_a_choice() {
    let Some(page) = Page::open().await else {
        return;
    };
    let question = "Which colour should the button be?\nIt is the only one.";
    let input = json!({ "question": question, "choices": CHOICES });
    let (site, task) = asked(&page, input, "Blue it is.").await;

    // The question, its line break kept; one button a choice, each the
    // model's text as text; the arguments stay folded.
    let shown = page.text_of(".tool[data-tool=q1] .pending .question").await;
    assert_eq!(shown, format!("Question: {question}"));
    let choices = page
        .run(
            "return [...document.querySelectorAll('.tool[data-tool=q1] button.choice')] \
               .map(b => [b.textContent, b.children.length]);",
        )
        .await;
    assert_eq!(
        choices,
        json!(CHOICES.map(|c| json!([c, 0]))),
        "one plain-text button per choice"
    );
    let folded = page
        .run("return document.querySelector('.tool[data-tool=q1] details').open;")
        .await;
    assert_eq!(folded, json!(false), "the raw arguments stay folded");
    page.screenshot("run-question").await;

    // An empty answer, or only spaces, is refused with a message; the run
    // still waits, nothing decided.
    refused_answer(&page, "").await;
    refused_answer(&page, "   ").await;
    page.screenshot("run-question-empty").await;
    let runs = site.runs(&task).await;
    assert_eq!(runs[0]["status"], "waiting", "{runs:?}");
    let run = runs[0]["id"].as_str().unwrap();
    let (_, record) = site
        .api("GET", &format!("/api/agent-runs/{run}"), None)
        .await;
    assert_eq!(record["pending"][0]["decision"], Value::Null, "{record}");

    // A choice answers with its text: the call's result, and the run goes
    // on to its end.
    page.click(".tool[data-tool=q1] button.choice:nth-child(2)")
        .await;
    page.wait_until(
        "document.querySelector('.tool[data-tool=q1] .result.ok')?.textContent.includes('Blue, like the sky')",
    )
    .await;
    page.wait_until("document.getElementById('conversation').textContent.includes('Blue it is.')")
        .await;
    page.wait_until("!document.getElementById('waiting-notice')")
        .await;
    page.wait_until("document.querySelector('h1 .badge').textContent.includes('completed')")
        .await;
    assert_eq!(
        page.run("return window.__xss === undefined;").await,
        json!(true)
    );
    let runs = site.runs(&task).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_without_choices_is_answered_in_words() {
    let Some(page) = Page::open().await else {
        return;
    };
    let input = json!({ "question": "What is the button for?" });
    let (_site, _task) = asked(&page, input, "Noted.").await;
    let buttons = page
        .run("return document.querySelectorAll('.tool[data-tool=q1] button.choice').length;")
        .await;
    assert_eq!(buttons, json!(0));
    refused_answer(&page, "").await;
    page.fill(".tool[data-tool=q1] .pending textarea", "To send the form")
        .await;
    page.click(".tool[data-tool=q1] button[data-decision=answer]")
        .await;
    page.wait_until(
        "document.querySelector('.tool[data-tool=q1] .result.ok')?.textContent.includes('To send the form')",
    )
    .await;
    page.wait_until("document.getElementById('conversation').textContent.includes('Noted.')")
        .await;
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_is_cancelled_from_its_page() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(json!([create("w1", "never.md", "no")]), &[]);
    site.sign_in(&page).await;
    let project = site.new_project(&page, "cancels", "cancels").await;
    page.select("#project-approvals", "ask").await;
    page.wait_until("document.getElementById('approvals-policy').textContent.includes('Ask')")
        .await;
    let task = site.new_task(&page, &project, "Write, then not").await;
    page.click("button[data-agent=implementation]").await;
    page.click("tr[data-run] a").await;
    page.wait_for(".tool[data-tool=w1] .pending").await;
    page.wait_for("#waiting-notice").await;

    page.click("#cancel-run").await;
    page.wait_until("document.querySelector('h1 .badge').textContent.includes('cancelled')")
        .await;
    let ended = page.text_of("#run-ended").await;
    assert!(ended.contains("Cancelled by a person"), "{ended}");
    // Nothing on the page still offers a decision.
    page.wait_until("!document.querySelector('#waiting-notice, .pending, #cancel-run')")
        .await;
    assert!(!site.root.join("cancels").join("never.md").exists());
    assert_eq!(site.runs(&task).await[0]["status"], "cancelled");
    page.close().await;
}
