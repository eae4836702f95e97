//! A project's budgets and schedules on the page: a budget edited (a
//! refused change shows the server's words), its spend shown once a run
//! spent against it; a schedule created (a bad expression refused with
//! the server's words), paused, resumed and deleted; a schedule's last
//! tick shown with the run it started. What users wrote stays text, and
//! both pages fit a phone's width.

use serde_json::{Value, json};

use crate::driver::Page;
use crate::site::Site;

/// Markup in what a person typed stays text.
const TITLE: &str = "Nightly <b>check</b>";
const PROMPT: &str = "Look again <img src=x onerror=alert(1)>";

/// A model turn that answers and costs 0.01 USD.
fn priced_turn() -> Value {
    json!({
        "steps": [{ "type": "text", "chunks": ["done"] }],
        "usage": { "input_tokens": 100, "output_tokens": 50, "cost": 0.01 }
    })
}

/// No element the page's data could have injected, and no missing value
/// shown as `null` or `undefined`.
async fn no_markup(page: &Page) {
    let injected = page
        .run("return document.querySelectorAll('main b, main img, main script').length;")
        .await;
    assert_eq!(injected, json!(0), "text from the server stays text");
    let text = page
        .run("return document.querySelector('main').textContent;")
        .await;
    let text = text.as_str().unwrap();
    assert!(
        !text.contains("null") && !text.contains("undefined"),
        "{text}"
    );
}

/// At a phone's width the view fits; screenshots at both widths.
async fn fits(page: &Page, ready: &str, name: &str) {
    page.screenshot(name).await;
    page.client.set_window_size(390, 844).await.unwrap();
    page.wait_for(ready).await;
    assert!(!page.scrolls_sideways().await, "{name} at 390 px");
    page.screenshot(&format!("phone-{name}")).await;
    page.client.set_window_size(1280, 900).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_and_schedules_are_shown_and_edited() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(json!([priced_turn()]), &["--budget-estimate-usd", "0.01"]);
    site.sign_in(&page).await;
    let project = site.new_project(&page, "nightly", "nightly").await;
    let task = site.new_task(&page, &project, TITLE).await;

    // Budgets, from the project's page.
    page.goto(&site.url(&format!("#/projects/{project}"))).await;
    page.click("#project-budgets").await;
    let section = "section[data-scope=project]";
    page.wait_for(&format!("{section} .no-budgets")).await;
    page.wait_for("section[data-scope=user]").await;
    page.wait_for(&format!("section[data-scope=task][data-scope-id='{task}']"))
        .await;
    page.click(&format!("{section} details.budget-edit summary"))
        .await;
    // Two budgets of cost per month: the server refuses, in its words.
    page.click(&format!("{section} .budget-add")).await;
    page.click(&format!("{section} .budget-add")).await;
    page.run(&format!(
        "document.querySelectorAll('{section} .budget-limit').forEach((f) => {{ f.value = '5'; }});"
    ))
    .await;
    page.click(&format!("{section} .budget-save")).await;
    page.wait_for(&format!("{section} p.error")).await;
    let refused = page.text_of(&format!("{section} p.error")).await;
    assert!(
        refused.contains("two budgets of cost per month"),
        "{refused}"
    );
    let (_, shown) = site
        .api("GET", &format!("/api/projects/{project}/budgets"), None)
        .await;
    assert_eq!(shown["budgets"], json!([]), "nothing was saved");
    // One of them removed: saved.
    page.click(&format!("{section} .budget-remove")).await;
    page.click(&format!("{section} .budget-save")).await;
    page.wait_for(&format!("{section} li[data-budget=cost-month]"))
        .await;
    let (_, shown) = site
        .api("GET", &format!("/api/projects/{project}/budgets"), None)
        .await;
    assert_eq!(shown["budgets"][0]["limit"], 5.0, "{shown}");
    assert_eq!(shown["budgets"][0]["metric"], "cost", "{shown}");
    no_markup(&page).await;

    // Schedules, from the project's page.
    page.goto(&site.url(&format!("#/projects/{project}"))).await;
    page.click("#project-schedules").await;
    page.wait_for("#no-schedules").await;
    page.fill("#schedule-cron", "every night").await;
    page.fill("#schedule-zone", "Europe/Paris").await;
    page.click("#schedule-create").await;
    page.wait_for("form.schedule-form p.error").await;
    let refused = page.text_of("form.schedule-form p.error").await;
    assert!(refused.to_lowercase().contains("cron"), "{refused}");
    page.fill("#schedule-cron", "0 3 * * *").await;
    page.fill("#schedule-zone", "Mars/Olympus").await;
    page.click("#schedule-create").await;
    page.wait_until(
        "document.querySelector('form.schedule-form p.error')?.textContent.includes('Mars/Olympus')",
    )
    .await;
    page.fill("#schedule-zone", "Europe/Paris").await;
    page.select("#schedule-agent", "review").await;
    page.fill("#schedule-prompt", PROMPT).await;
    page.click("#schedule-create").await;
    page.wait_for("li[data-schedule]").await;
    let (_, listed) = site
        .api("GET", &format!("/api/projects/{project}/schedules"), None)
        .await;
    let nightly = listed["schedules"][0].clone();
    assert_eq!(nightly["cron"], "0 3 * * *", "{listed}");
    assert_eq!(nightly["time_zone"], "Europe/Paris", "{listed}");
    assert_eq!(nightly["agent"], "review", "{listed}");
    assert_eq!(nightly["prompt"], PROMPT, "{listed}");
    let id = nightly["id"].as_str().unwrap().to_owned();
    let item = format!("li[data-schedule='{id}']");
    let prompt = page.text_of(&format!("{item} .schedule-prompt")).await;
    assert!(prompt.contains(PROMPT), "{prompt}");
    let next = page.text_of(&format!("{item} .schedule-next")).await;
    assert!(!next.contains('—'), "a next tick is shown: {next}");
    no_markup(&page).await;

    // Paused, then resumed.
    page.click(&format!("{item} .schedule-toggle")).await;
    page.wait_for(&format!("{item}[data-paused=true]")).await;
    let (_, shown) = site.api("GET", &format!("/api/schedules/{id}"), None).await;
    assert_eq!(shown["paused"], true, "{shown}");
    page.click(&format!("{item} .schedule-toggle")).await;
    page.wait_for(&format!("{item}[data-paused=false]")).await;
    let (_, shown) = site.api("GET", &format!("/api/schedules/{id}"), None).await;
    assert_eq!(shown["paused"], false, "{shown}");

    // A schedule that ticks every second, with room in its own budget
    // for one run, starts a run, which spends against the project's
    // budget too; then it is paused.
    let (status, ticking) = site
        .api(
            "POST",
            &format!("/api/projects/{project}/schedules"),
            Some(json!({
                "task_id": task, "cron": "* * * * * *", "agent": "planification",
                "paused": true
            })),
        )
        .await;
    assert_eq!(status, 201, "{ticking}");
    let ticking = ticking["id"].as_str().unwrap().to_owned();
    let (status, shown) = site
        .api(
            "PUT",
            &format!("/api/schedules/{ticking}/budgets"),
            Some(json!({ "budgets": [{ "metric": "cost", "period": "total", "limit": 0.015 }] })),
        )
        .await;
    assert_eq!(status, 200, "{shown}");
    let (status, _) = site
        .api(
            "PATCH",
            &format!("/api/schedules/{ticking}"),
            Some(json!({ "paused": false })),
        )
        .await;
    assert_eq!(status, 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let run = loop {
        let (_, shown) = site
            .api("GET", &format!("/api/schedules/{ticking}"), None)
            .await;
        if let Some(run) = shown["last_outcome"]["agent_run_id"].as_str() {
            break run.to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never ticked: {shown}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let (status, _) = site
        .api(
            "PATCH",
            &format!("/api/schedules/{ticking}"),
            Some(json!({ "paused": true })),
        )
        .await;
    assert_eq!(status, 200);
    page.goto(&site.url(&format!("#/runs/{run}"))).await;
    page.wait_for("#run-ended").await;

    // The schedules page shows the tick and links its run.
    page.goto(&site.url(&format!("#/projects/{project}/schedules")))
        .await;
    let ticked = format!("li[data-schedule='{ticking}']");
    page.wait_for(&format!("{ticked} .schedule-outcome")).await;
    let outcome = page
        .run(&format!(
            "return document.querySelector(\"{ticked} .schedule-outcome\").dataset.outcome;"
        ))
        .await;
    assert!(
        outcome == json!("started") || outcome == json!("skipped"),
        "{outcome}"
    );
    page.wait_for(&format!("{ticked}[data-paused=true]")).await;
    fits(&page, "li[data-schedule]", "schedules").await;

    // Deleted after a question.
    page.click(&format!("{item} .schedule-delete")).await;
    page.click(&format!("{item} .schedule-confirm-delete"))
        .await;
    page.wait_until(&format!("!document.querySelector(\"{item}\")"))
        .await;
    let (status, _) = site.api("GET", &format!("/api/schedules/{id}"), None).await;
    assert_eq!(status, 404);

    // The budgets page shows the run's spend (settled just after its
    // call), and the schedule's own budgets beside the others.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, shown) = site
            .api("GET", &format!("/api/projects/{project}/budgets"), None)
            .await;
        let budget = &shown["budgets"][0];
        if budget["spent"] == 0.01 && budget["reserved"] == 0.0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never settled: {shown}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    page.goto(&site.url(&format!("#/projects/{project}/budgets")))
        .await;
    page.wait_for(&format!(
        "section[data-scope=schedule][data-scope-id='{ticking}']"
    ))
    .await;
    page.wait_until(&format!(
        "document.querySelector(\"{section} li[data-budget=cost-month] .budget-spent\")?.textContent.startsWith('0.0100 USD spent of 5.00 USD')"
    ))
    .await;
    no_markup(&page).await;
    fits(&page, "section[data-scope=project]", "budgets").await;
    page.close().await;
}
