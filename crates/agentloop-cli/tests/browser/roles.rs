//! Roles on the page: the owner invites a viewer by name from the
//! project's members panel; the viewer's page shows the project, its
//! tasks, runs and the call a run waits for, but none of the controls to
//! start, decide, send a message, cancel, mark done, edit or delete. The
//! owner's page, the same views, shows them all.

use serde_json::{Value, json};

use crate::driver::Page;
use crate::site::{Site, call_turn};

/// How many elements matching `css` are shown (laid out, not hidden).
async fn shown(page: &Page, css: &str) -> u64 {
    let script = format!(
        "return [...document.querySelectorAll({})].filter((e) => e.getClientRects().length > 0).length;",
        json!(css)
    );
    page.run(&script).await.as_u64().unwrap()
}

/// The controls of each view that act on the project, its tasks or runs.
const PROJECT_CONTROLS: &[&str] = &[
    "#task-title",
    "#delete-project",
    "#project-approvals",
    "#invite",
];
const TASK_CONTROLS: &[&str] = &[
    "button[data-agent]",
    "#mark-done",
    "#save-doc",
    "#delete-task",
];
const RUN_CONTROLS: &[&str] = &["button[data-decision]", "#cancel-run", "textarea"];

async fn controls_shown(page: &Page, controls: &[&str]) -> Vec<(String, u64)> {
    let mut counts = Vec::new();
    for css in controls {
        counts.push(((*css).to_owned(), shown(page, css).await));
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_sees_the_project_and_its_runs_without_the_controls() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(
        json!([call_turn(
            "w1",
            "fs",
            json!({ "command": "create", "path": "plan.md", "file_text": "plan" })
        )]),
        &[],
    );
    let viewer = site.add_user("vic");
    // A project that asks before writes, a task, and a run waiting for
    // approval of its write.
    let (status, project) = site
        .api(
            "POST",
            "/api/projects",
            Some(json!({ "name": "shared", "repoFolder": "shared", "approvals": "ask" })),
        )
        .await;
    assert_eq!(status, 201, "{project}");
    let project = project["id"].as_str().unwrap().to_owned();
    let (status, task) = site
        .api(
            "POST",
            &format!("/api/projects/{project}/tasks"),
            Some(json!({ "title": "Plan it" })),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    let task = task["id"].as_str().unwrap().to_owned();
    let (status, run) = site
        .api(
            "POST",
            &format!("/api/tasks/{task}/agent-runs"),
            Some(json!({ "agentType": "planification" })),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    let run = run["id"].as_str().unwrap().to_owned();

    // The owner invites vic as a viewer from the members panel.
    site.sign_in(&page).await;
    page.goto(&site.url(&format!("#/projects/{project}"))).await;
    page.fill("#invite-name", "vic").await;
    page.select("#invite-role", "viewer").await;
    page.click("#invite button[type=submit]").await;
    page.wait_for("tr[data-member='vic']").await;
    let (_, members) = site
        .api("GET", &format!("/api/projects/{project}/members"), None)
        .await;
    assert_eq!(members["members"][1]["name"], "vic", "{members}");
    assert_eq!(members["members"][1]["role"], "viewer", "{members}");
    let all_shown = |counts: &[(String, u64)]| counts.iter().all(|(_, n)| *n > 0);
    let owner_project = controls_shown(&page, PROJECT_CONTROLS).await;
    assert!(all_shown(&owner_project), "{owner_project:?}");
    page.goto(&site.url(&format!("#/tasks/{task}"))).await;
    page.wait_for("tr[data-run]").await;
    let owner_task = controls_shown(&page, TASK_CONTROLS).await;
    assert!(all_shown(&owner_task), "{owner_task:?}");
    page.goto(&site.url(&format!("#/runs/{run}"))).await;
    page.wait_for("button[data-decision=approve]").await;
    let owner_run = controls_shown(&page, RUN_CONTROLS).await;
    assert!(all_shown(&owner_run), "{owner_run:?}");

    // vic signs in: the project is listed, with vic's role.
    page.click("#sign-out").await;
    site.sign_in_with(&page, &viewer).await;
    page.wait_for(&format!("a[href='#/projects/{project}']"))
        .await;
    page.goto(&site.url(&format!("#/projects/{project}"))).await;
    page.wait_for("tr[data-member='vic']").await;
    let role = page.text_of("#my-role").await;
    assert_eq!(role, "Your role: viewer");
    let nothing = |counts: &[(String, u64)]| counts.iter().all(|(_, n)| *n == 0);
    let viewer_project = controls_shown(&page, PROJECT_CONTROLS).await;
    assert!(nothing(&viewer_project), "{viewer_project:?}");
    assert_eq!(
        shown(&page, "#members select").await,
        0,
        "no role to change"
    );
    page.screenshot("roles-viewer-project").await;

    // The task: its runs listed, the document read-only, no controls.
    page.goto(&site.url(&format!("#/tasks/{task}"))).await;
    page.wait_for("tr[data-run]").await;
    let viewer_task = controls_shown(&page, TASK_CONTROLS).await;
    assert!(nothing(&viewer_task), "{viewer_task:?}");
    assert_eq!(
        page.run("return document.getElementById('task-doc').readOnly;")
            .await,
        Value::Bool(true)
    );

    // The run: what it waits for shows, the decisions do not.
    page.goto(&site.url(&format!("#/runs/{run}"))).await;
    page.wait_for_text("Waits for your approval").await;
    let viewer_run = controls_shown(&page, RUN_CONTROLS).await;
    assert!(nothing(&viewer_run), "{viewer_run:?}");
    page.screenshot("roles-viewer-run").await;

    // What the page hides the server refuses too.
    let (status, refused) =
        reqwest_post(&site, &viewer, &format!("/api/tasks/{task}/agent-runs")).await;
    assert_eq!(status, 403, "{refused}");
}

async fn reqwest_post(site: &Site, token: &str, path: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", site.base))
        .bearer_auth(token)
        .json(&json!({ "agentType": "planification" }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}
