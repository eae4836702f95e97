//! The page served by `agentloop serve`, driven in headless Chromium
//! through ChromeDriver: sign in, create a project and a task, start an
//! implementation run against a scripted model, watch it stream and chain
//! to review, open the conversation (model output with script payloads
//! shows as text and never runs), reload mid-run without gaps or
//! duplicates, a 409 naming the running agent, cancel, Mark Done, and a
//! phone-width layout. Screenshots go to `target/screenshots/`.
//!
//! Needs `chromium` and `chromedriver` (`.ci/run` installs Debian's
//! `chromium` and `chromium-driver`). Without them the test says so loudly
//! and skips — except under CI, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Killed, create_user};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

fn chromedriver_path() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("AGENTLOOP_CHROMEDRIVER").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/chromedriver")),
    ];
    candidates.into_iter().flatten().find(|p| p.exists())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start_chromedriver(path: &Path) -> (Killed, String) {
    agentloop_providers::ensure_crypto_provider();
    let port = free_port();
    let child = Command::new(path)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let status = format!("{url}/status");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(response) = reqwest::get(&status).await
            && response.status().is_success()
        {
            break;
        }
        assert!(Instant::now() < deadline, "chromedriver did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (Killed(child), url)
}

async fn browser(webdriver: &str) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({ "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                          "--disable-gpu", "--window-size=1280,900"] }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(webdriver)
        .await
        .expect("a Chromium session")
}

fn serve(db: &str, script: &Path, root: &Path) -> (Killed, String) {
    let provider = format!("scripted:{}", script.display());
    let root = root.display().to_string();
    let (server, base, _) = common::serve(&[
        "--db",
        db,
        "--provider",
        &provider,
        "--projects-root",
        &root,
        "--minion",
        // Task 4 approves a write on the page.
        "--approvals",
        "ask",
    ]);
    (server, base)
}

fn text_turn(chunks: &[&str], delay_ms: u64) -> Value {
    let mut steps = Vec::new();
    for chunk in chunks {
        steps.push(json!({ "type": "text", "chunks": [chunk] }));
        if delay_ms > 0 {
            steps.push(json!({ "type": "delay", "ms": delay_ms }));
        }
    }
    json!({ "steps": steps, "usage": { "input_tokens": 50, "output_tokens": 10 } })
}

const PAYLOAD: &str = "Done. <script>window.__xss = 1</script> \
<img src=x onerror=\"window.__xss = 2\"> [click me](javascript:window.__xss=3) **bold** `code`";

fn script() -> Value {
    let finish = json!({ "steps": [
        { "type": "tool_call", "id": "cw1", "name": "complete_workflow", "fragments": ["{}"] }
    ] });
    json!([
        // Task 1, implementation: thinks, reads the folder, answers.
        { "steps": [
            { "type": "thinking", "chunks": ["I should look first."], "signature": "sig" },
            { "type": "text", "chunks": ["Let me look."] },
            { "type": "tool_call", "id": "v1", "name": "fs", "fragments": ["{\"command\":\"view\",\"path\":\"/\"}"] }
        ], "usage": { "input_tokens": 100, "output_tokens": 20, "cost": 0.001 } },
        text_turn(&[PAYLOAD], 0),
        // Task 1, review: ends the chain, then says so.
        finish.clone(),
        text_turn(&["Reviewed."], 0),
        // Task 2, implementation: slow, for a reload in the middle.
        text_turn(&["alpha ", "beta ", "gamma"], 1200),
        finish.clone(),
        text_turn(&["Reviewed."], 0),
        // Task 3, implementation: never answers, to be cancelled.
        { "steps": [{ "type": "text", "chunks": ["thinking it over"] }, { "type": "hang" }] },
        // Task 4, implementation: a write that waits for the person's
        // approval; then the chain goes on to review.
        { "steps": [
            { "type": "tool_call", "id": "w1", "name": "fs",
              "fragments": ["{\"command\":\"create\",\"path\":\"approved.md\",\"file_text\":\"yes\"}"] }
        ] },
        text_turn(&["Written after approval."], 0),
        finish.clone(),
        text_turn(&["Reviewed."], 0),
        // Task 5, implementation: hands a task to a minion, whose own turn
        // comes next; then review.
        { "steps": [
            { "type": "tool_call", "id": "m1", "name": "minion",
              "fragments": ["{\"task\":\"Summarise the notes\"}"] }
        ] },
        text_turn(&["Minion summary: all good."], 0),
        text_turn(&["The minion summarised."], 0),
        finish,
        text_turn(&["Reviewed."], 0)
    ])
}

async fn wait_for(client: &Client, css: &str) -> fantoccini::elements::Element {
    client
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} did not appear: {e}"))
}

/// Waits until `script` (a JS expression) is true.
async fn wait_until(client: &Client, script: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let value = client
            .execute(
                &format!("try {{ return !!({script}); }} catch (e) {{ return false; }}"),
                vec![],
            )
            .await
            .unwrap();
        if value == json!(true) {
            return;
        }
        assert!(Instant::now() < deadline, "never true: {script}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn text_of(client: &Client, css: &str) -> String {
    wait_for(client, css).await.text().await.unwrap()
}

async fn screenshot(client: &Client, name: &str) {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/screenshots");
    std::fs::create_dir_all(&folder).unwrap();
    let png = client.screenshot().await.unwrap();
    std::fs::write(folder.join(format!("{name}.png")), png).unwrap();
}

async fn fill(client: &Client, css: &str, text: &str) {
    let field = wait_for(client, css).await;
    field.clear().await.unwrap();
    field.send_keys(text).await.unwrap();
}

/// Clicks the element `css` names. Lists re-render when a notice arrives,
/// so an element found may be replaced before the click: it is looked up
/// again then.
async fn click(client: &Client, css: &str) {
    let mut attempts = 0;
    loop {
        match wait_for(client, css).await.click().await {
            Ok(()) => return,
            Err(fantoccini::error::CmdError::Standard(e))
                if e.error == fantoccini::error::ErrorStatus::StaleElementReference
                    && attempts < 10 =>
            {
                attempts += 1;
            }
            Err(e) => panic!("clicking {css}: {e}"),
        }
    }
}

/// The id in the page's address after `#/kind/`.
async fn id_in_hash(client: &Client, kind: &str) -> String {
    wait_until(client, &format!("location.hash.startsWith('#/{kind}/')")).await;
    let hash = client
        .execute("return location.hash;", vec![])
        .await
        .unwrap();
    hash.as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned()
}

async fn new_task(client: &Client, project_url: &str, title: &str) -> String {
    client.goto(project_url).await.unwrap();
    fill(client, "#task-title", title).await;
    click(client, "form button[type=submit]").await;
    id_in_hash(client, "tasks").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_runs_and_watches_agents_in_chromium() {
    let Some(driver_path) = chromedriver_path() else {
        let message = "chromedriver not found: install Debian's chromium and chromium-driver \
                       (.ci/run does) to run the browser test";
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("\n!!!!!!!! SKIPPED: {message} !!!!!!!!\n");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agentloop.db").display().to_string();
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script().to_string()).unwrap();
    let root = dir.path().join("projects");
    std::fs::create_dir_all(&root).unwrap();
    let token = create_user(&db, "ada");
    let (_server, base) = serve(&db, &script_path, &root);
    let (_driver, webdriver) = start_chromedriver(&driver_path).await;
    let client = browser(&webdriver).await;

    // Sign in: the token field has the focus.
    client.goto(&format!("{base}/")).await.unwrap();
    wait_for(&client, "#token").await;
    wait_until(
        &client,
        "document.activeElement && document.activeElement.id === 'token'",
    )
    .await;
    fill(&client, "#token", "al_wrong").await;
    click(&client, "form button[type=submit]").await;
    assert!(text_of(&client, "[role=alert]").await.contains("not valid"));
    fill(&client, "#token", &token).await;
    click(&client, "form button[type=submit]").await;
    wait_until(
        &client,
        "document.querySelector('h1') && document.querySelector('h1').textContent === 'Projects'",
    )
    .await;
    // The session lives in an HttpOnly cookie: the page's script cannot read it.
    let cookies = client
        .execute("return document.cookie;", vec![])
        .await
        .unwrap();
    assert_eq!(cookies, json!(""));

    // A folder outside the projects root is a clear form error.
    fill(&client, "#project-name", "demo").await;
    fill(&client, "#project-folder", "../escape").await;
    click(&client, "form button[type=submit]").await;
    assert!(!text_of(&client, "[role=alert]").await.is_empty());
    fill(&client, "#project-folder", "demo").await;
    click(&client, "form button[type=submit]").await;
    let project_id = id_in_hash(&client, "projects").await;
    let project_url = format!("{base}/#/projects/{project_id}");

    // Task 1: the document is edited and saved; then an implementation run
    // streams, chains to review, completes.
    let task1 = new_task(&client, &project_url, "Read the folder").await;
    fill(&client, "#task-doc", "# Plan\n\nRead the folder.").await;
    click(&client, "#save-doc").await;
    wait_until(&client, "document.body.textContent.includes('Saved.')").await;
    client.refresh().await.unwrap();
    wait_until(
        &client,
        "document.getElementById('task-doc').value === '# Plan\\n\\nRead the folder.'",
    )
    .await;
    click(&client, "button[data-agent=implementation]").await;
    wait_until(
        &client,
        "document.getElementById('toast').textContent === 'Implementation agent started'",
    )
    .await;
    wait_until(&client, "location.hash.startsWith('#/tasks/')").await;
    // The runs list updates live (WebSocket notices): review follows.
    wait_until(
        &client,
        "[...document.querySelectorAll('tr[data-run]')].length === 2 && \
         [...document.querySelectorAll('tr[data-run] .badge')].every(b => b.textContent.includes('completed'))",
    )
    .await;
    // Each run shows what it spent.
    let spent = text_of(&client, "tr[data-run]:first-child td:nth-child(5)").await;
    assert!(spent.contains("$0.0010"), "{spent}");
    screenshot(&client, "task-page").await;

    // The conversation: thinking collapsed, the tool call with its result,
    // model output shown as text, never run.
    client
        .goto(&format!("{base}/#/tasks/{task1}"))
        .await
        .unwrap();
    click(&client, "tr[data-run]:first-child a").await;
    wait_until(&client, "document.body.textContent.includes('Run ended')").await;
    wait_for(&client, "details.thinking:not([open])").await;
    let tool = text_of(&client, ".tool[data-tool=v1]").await;
    assert!(tool.contains("fs") && tool.contains("done"), "{tool}");
    wait_for(&client, ".tool[data-tool=v1] .result.ok").await;
    let conversation = text_of(&client, "#conversation").await;
    assert!(
        conversation.contains("<script>window.__xss = 1</script>"),
        "{conversation}"
    );
    assert!(conversation.contains("onerror"), "{conversation}");
    let attacked = client
        .execute(
            "return [window.__xss === undefined, \
                     document.querySelectorAll('#conversation script, #conversation img').length, \
                     [...document.querySelectorAll('#conversation a')].filter(a => !/^https?:/.test(a.href)).length];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        attacked,
        json!([true, 0, 0]),
        "model output must not become markup"
    );
    assert!(
        text_of(&client, "#conversation strong")
            .await
            .contains("bold")
    );
    assert!(text_of(&client, ".totals").await.contains("Tokens"));
    screenshot(&client, "run-view").await;

    // Task 2: reload in the middle of a streaming run; the conversation
    // ends whole, each word once.
    let task2 = new_task(&client, &project_url, "Stream slowly").await;
    click(&client, "button[data-agent=implementation]").await;
    click(&client, "tr[data-run] a").await;
    wait_until(
        &client,
        "document.getElementById('conversation').textContent.includes('alpha')",
    )
    .await;
    client.refresh().await.unwrap();
    wait_until(&client, "document.body.textContent.includes('Run ended')").await;
    let words = client
        .execute(
            "const t = document.getElementById('conversation').textContent; \
             return ['alpha', 'beta', 'gamma'].map(w => t.split(w).length - 1);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        words,
        json!([1, 1, 1]),
        "no gap and no duplicate after the reload"
    );
    let _ = task2;

    // Task 3: a second start while one runs is a 409 naming it; cancel
    // stops it; Mark Done is a toggle.
    let task3 = new_task(&client, &project_url, "Hang").await;
    click(&client, "button[data-agent=implementation]").await;
    wait_for(&client, "tr[data-run]").await;
    click(&client, "button[data-agent=review]").await;
    let conflict = text_of(&client, "[role=alert]").await;
    assert!(
        conflict.contains("already running: implementation"),
        "{conflict}"
    );
    click(&client, "tr[data-run] button.danger").await;
    wait_until(
        &client,
        "document.querySelector('tr[data-run] .badge').textContent.includes('cancelled')",
    )
    .await;
    click(&client, "#mark-done").await;
    wait_until(
        &client,
        "document.getElementById('toast').textContent.startsWith('Marked done')",
    )
    .await;
    let (status, task) = {
        let response = reqwest::Client::new()
            .get(format!("{base}/api/tasks/{task3}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        (
            response.status().as_u16(),
            response.json::<Value>().await.unwrap(),
        )
    };
    assert_eq!(status, 200);
    assert_eq!(task["workflow_complete"], true);

    // Task 4: a write waits; the person approves it on the run's page, the
    // run completes, the page shows the rest of its log, and the chain
    // moves on to review.
    let task4 = new_task(&client, &project_url, "Write a file").await;
    click(&client, "button[data-agent=implementation]").await;
    wait_until(
        &client,
        "document.querySelector('tr[data-run] .badge').textContent.includes('waiting')",
    )
    .await;
    assert!(!root.join("demo").join("approved.md").exists());
    click(&client, "tr[data-run]:first-child a").await;
    let pending = text_of(&client, ".tool[data-tool=w1] .pending").await;
    assert!(pending.contains("Needs approval"), "{pending}");
    screenshot(&client, "run-waiting").await;
    click(&client, ".tool[data-tool=w1] .pending button").await;
    wait_until(
        &client,
        "document.querySelector('h1 .badge').textContent.includes('completed')",
    )
    .await;
    wait_until(
        &client,
        "document.getElementById('conversation').textContent.includes('Written after approval.')",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(root.join("demo").join("approved.md")).unwrap(),
        "yes"
    );
    client
        .goto(&format!("{base}/#/tasks/{task4}"))
        .await
        .unwrap();
    wait_until(
        &client,
        "[...document.querySelectorAll('tr[data-run]')].map(r => r.querySelector('a').textContent + ':' + \
         r.querySelector('.badge').textContent).join() === 'implementation:✓ completed,review:✓ completed'",
    )
    .await;

    // Task 5: a minion's task shows in a blue box with Copy All, its own
    // work nested in pink inside the call.
    let task5 = new_task(&client, &project_url, "Delegate").await;
    click(&client, "button[data-agent=implementation]").await;
    click(&client, "tr[data-run]:first-child a").await;
    wait_until(&client, "document.body.textContent.includes('Run ended')").await;
    let info = text_of(&client, ".tool[data-tool=m1] .info").await;
    assert!(
        info.contains("Summarise the notes") && info.contains("Copy All"),
        "{info}"
    );
    let nested = text_of(&client, ".tool[data-tool=m1] .nested").await;
    assert!(nested.contains("Minion summary: all good."), "{nested}");
    let outcome = text_of(&client, ".tool[data-tool=m1] .result.ok").await;
    assert!(outcome.contains("Minion summary: all good."), "{outcome}");
    screenshot(&client, "run-minion").await;
    let _ = task5;

    // A phone's width: nothing scrolls sideways.
    client.set_window_size(390, 844).await.unwrap();
    client
        .goto(&format!("{base}/#/tasks/{task1}"))
        .await
        .unwrap();
    wait_for(&client, "tr[data-run]").await;
    let fits = client
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(fits, json!(true), "the task page fits a phone's width");
    screenshot(&client, "task-page-phone").await;

    // Sign out: the session ends and the sign-in form is back.
    click(&client, "#sign-out").await;
    wait_for(&client, "#token").await;
    client.close().await.unwrap();
}
