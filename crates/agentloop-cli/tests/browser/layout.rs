//! The page at a phone's width (390 px) with 300-character unbroken
//! names, folder paths and model output: nothing scrolls sideways. The
//! Mark Done checkbox sits by its label at any width.

use serde_json::json;

use crate::driver::Page;
use crate::site::{Site, finish_turn, text_turn};

/// The gap between the Mark Done checkbox and the start of its label, in
/// pixels; asserts they share a line and the checkbox's box is no wider
/// than a checkbox (Chromium draws the mark in the middle of its box, so a
/// wide box puts the mark far from its label).
async fn mark_done_gap(page: &Page) -> f64 {
    page.wait_for("label[for=mark-done] span").await;
    let measured = page
        .run(
            "const box = document.getElementById('mark-done').getBoundingClientRect(); \
             const text = document.querySelector('label[for=mark-done] span').getBoundingClientRect(); \
             return [text.left - box.right, box.top < text.bottom && text.top < box.bottom, box.width];",
        )
        .await;
    assert_eq!(
        measured[1],
        json!(true),
        "the checkbox and its label share a line"
    );
    let width = measured[2].as_f64().unwrap();
    assert!(width <= 24.0, "the checkbox's box is {width}px wide");
    measured[0].as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_never_scrolls_sideways_and_mark_done_sits_by_its_label() {
    let Some(page) = Page::open().await else {
        return;
    };
    let word = "x".repeat(300);
    let output = format!(
        "{word}\n\nIn code: `{word}`\n\n```\n{word}\n```\n\n[{word}](https://example.com/{word})"
    );
    let site = Site::start(
        json!([
            text_turn(&[output.as_str()], 0),
            finish_turn("cw1"),
            text_turn(&[word.as_str()], 0)
        ]),
        &[],
    );
    site.sign_in(&page).await;
    // A folder path of 300 characters with no space: three long names.
    let folder = format!(
        "{}/{}/{}",
        "a".repeat(100),
        "b".repeat(100),
        "c".repeat(100)
    );
    let project = site.new_project(&page, &word, &folder).await;
    let task = site.new_task(&page, &project, &word).await;

    // At a desktop's width the checkbox sits right by its label.
    let gap = mark_done_gap(&page).await;
    assert!(
        (0.0..=16.0).contains(&gap),
        "checkbox {gap}px from its label"
    );

    page.click("button[data-agent=implementation]").await;
    page.wait_until(
        "[...document.querySelectorAll('tr[data-run] .badge')].map(b => b.textContent).join() === '✓ completed,✓ completed'",
    )
    .await;
    let run = site.runs(&task).await[0]["id"].as_str().unwrap().to_owned();

    page.client.set_window_size(390, 844).await.unwrap();
    let width = page
        .run("return document.documentElement.clientWidth;")
        .await;
    assert!(width.as_f64().unwrap() <= 390.0, "{width}");
    let folder_end = "c".repeat(100);
    for (name, hash, text) in [
        ("phone-projects", "#/".to_owned(), word.as_str()),
        (
            "phone-project",
            format!("#/projects/{project}"),
            folder_end.as_str(),
        ),
        ("phone-task", format!("#/tasks/{task}"), word.as_str()),
        ("phone-run", format!("#/runs/{run}"), word.as_str()),
    ] {
        page.goto(&site.url(&hash)).await;
        page.wait_for_text(text).await;
        if name == "phone-run" {
            page.wait_for("#run-ended").await;
        }
        page.screenshot(name).await;
        assert!(
            !page.scrolls_sideways().await,
            "{name} scrolls sideways at 390 px"
        );
    }

    page.goto(&site.url(&format!("#/tasks/{task}"))).await;
    page.wait_for("#mark-done").await;
    let gap = mark_done_gap(&page).await;
    assert!(
        (0.0..=16.0).contains(&gap),
        "checkbox {gap}px from its label at 390 px"
    );
    page.close().await;
}
