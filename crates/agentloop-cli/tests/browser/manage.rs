//! A project's approval policy shown and changed on its page; tasks and
//! projects deleted from the page after a confirmation, refused with a
//! clear message while one of their runs is active.

use serde_json::json;

use crate::driver::Page;
use crate::site::{Site, hanging_turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_shows_its_approval_policy_and_the_owner_changes_it() {
    let Some(page) = Page::open().await else {
        return;
    };
    // No run starts here; the server still needs a script with a turn.
    let site = Site::start(
        json!([{ "steps": [{ "type": "text", "chunks": ["unused"] }] }]),
        &[],
    );
    site.sign_in(&page).await;
    // A name is the owner's text, shown as text: markup in it stays inert.
    let name = "<img src=x onerror=\"window.__xss = 1\"> policy";
    let project = site.new_project(&page, name, "policy").await;
    let path = format!("/api/projects/{project}");
    page.wait_until(&format!(
        "document.querySelector('h1')?.textContent === {}",
        json!(name)
    ))
    .await;
    let inert = page
        .run("return [window.__xss === undefined, document.querySelectorAll('main img').length];")
        .await;
    assert_eq!(
        inert,
        json!([true, 0]),
        "a project's name must not become markup"
    );

    // The server's default: agents work unattended in their folder.
    let shown = page.text_of("#approvals-policy").await;
    assert!(
        shown.contains("Unattended") && shown.contains("the server's default"),
        "{shown}"
    );
    page.screenshot("project-policy").await;

    // The ask option names every tool the policy gates.
    let option = page
        .run("return document.querySelector('#project-approvals option[value=ask]').textContent;")
        .await;
    assert_eq!(
        option,
        json!("Ask before file changes, JavaScript and shell commands")
    );

    // The owner makes the project ask; it stays so after a reload.
    page.select("#project-approvals", "ask").await;
    page.wait_until(
        "document.getElementById('approvals-policy').textContent.includes('set for this project')",
    )
    .await;
    let (_, stored) = site.api("GET", &path, None).await;
    assert_eq!(stored["approvals"], "ask", "{stored}");
    assert_eq!(stored["approvals_source"], "project", "{stored}");
    page.client.refresh().await.unwrap();
    page.wait_until("document.getElementById('approvals-policy').textContent.includes('Ask')")
        .await;
    let chosen = page
        .run("return document.getElementById('project-approvals').value;")
        .await;
    assert_eq!(chosen, json!("ask"));

    // Back to the server's default.
    page.select("#project-approvals", "").await;
    page.wait_until("document.getElementById('approvals-policy').textContent.includes(\"the server's default\")")
        .await;
    let (_, stored) = site.api("GET", &path, None).await;
    assert_eq!(stored["approvals"], "unattended", "{stored}");
    assert_eq!(stored["approvals_source"], "server", "{stored}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_and_projects_are_deleted_after_a_confirmation() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(json!([hanging_turn()]), &[]);
    site.sign_in(&page).await;
    let project = site.new_project(&page, "doomed", "doomed").await;
    let task = site.new_task(&page, &project, "Busy").await;
    page.click("button[data-agent=implementation]").await;
    page.wait_for("tr[data-run]").await;
    let run = site.runs(&task).await[0]["id"].as_str().unwrap().to_owned();

    // Asked first; "Keep it" keeps it.
    page.click("#delete-task").await;
    let question = page.text_of(".confirm").await;
    assert!(question.contains("Delete this task"), "{question}");
    page.click(".confirm button.secondary").await;
    page.wait_until("!document.querySelector('.confirm')").await;
    let (status, _) = site.api("GET", &format!("/api/tasks/{task}"), None).await;
    assert_eq!(status, 200);

    // While its run is active, the delete is refused, naming the run.
    page.click("#delete-task").await;
    page.click("#confirm-delete-task").await;
    let refused = page.text_of("[role=alert]").await;
    assert!(
        refused.starts_with("Not deleted") && refused.contains(&run),
        "{refused}"
    );
    page.screenshot("task-delete-refused").await;
    page.goto(&site.url(&format!("#/projects/{project}"))).await;
    page.click("#delete-project").await;
    page.click("#confirm-delete-project").await;
    let refused = page.text_of("[role=alert]").await;
    assert!(
        refused.starts_with("Not deleted") && refused.contains(&run),
        "{refused}"
    );

    // Once the run is cancelled, the task goes, then the project.
    let (status, body) = site
        .api("POST", &format!("/api/agent-runs/{run}/cancel"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    page.goto(&site.url(&format!("#/tasks/{task}"))).await;
    page.click("#delete-task").await;
    page.click("#confirm-delete-task").await;
    page.wait_until(&format!("location.hash === '#/projects/{project}'"))
        .await;
    page.wait_for_text("No tasks yet.").await;
    let (status, _) = site.api("GET", &format!("/api/tasks/{task}"), None).await;
    assert_eq!(status, 404);
    let (status, _) = site
        .api("GET", &format!("/api/agent-runs/{run}"), None)
        .await;
    assert_eq!(status, 404, "the task's runs went with it");

    // The deleted task's address (back in the history) says it is gone
    // and leads back to its project; so does its run's, to its task.
    page.client.back().await.unwrap();
    page.wait_until(&format!("location.hash === '#/tasks/{task}'"))
        .await;
    page.wait_for("#not-found").await;
    let shown = page.text_of("main").await;
    assert!(
        shown.contains("This task was deleted") && !shown.contains("Something went wrong"),
        "{shown}"
    );
    page.screenshot("task-deleted").await;
    page.click("main a[href^='#/projects/']").await;
    page.wait_until(&format!("location.hash === '#/projects/{project}'"))
        .await;
    page.wait_for_text("No tasks yet.").await;
    page.goto(&site.url(&format!("#/runs/{run}"))).await;
    page.wait_for("#not-found").await;
    assert!(
        page.text_of("main")
            .await
            .contains("This agent run was deleted")
    );
    let back = page
        .run("return document.querySelector('main a').getAttribute('href');")
        .await;
    assert_eq!(back, json!(format!("#/tasks/{task}")));
    // Opened afresh, the page knows no project to lead back to: the
    // projects list.
    page.goto(&site.url(&format!("#/tasks/{task}"))).await;
    page.client.refresh().await.unwrap();
    page.wait_for("#not-found").await;
    assert!(page.text_of("main").await.contains("This task was deleted"));
    page.click("main a[href='#/']").await;
    page.wait_until("document.querySelector('h1')?.textContent === 'Projects'")
        .await;

    page.goto(&site.url(&format!("#/projects/{project}"))).await;
    page.click("#delete-project").await;
    page.click("#confirm-delete-project").await;
    page.wait_until("location.hash === '#/'").await;
    page.wait_for_text("No projects yet.").await;
    let (status, _) = site
        .api("GET", &format!("/api/projects/{project}"), None)
        .await;
    assert_eq!(status, 404);
    page.close().await;
}
