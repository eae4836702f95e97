//! The page at a phone's width (390 px) with 300-character unbroken
//! names, folder paths and model output: nothing scrolls sideways. The
//! Mark Done checkbox sits by its label at any width.

use serde_json::json;

use crate::driver::Page;
use crate::site::{Site, finish_turn, hanging_turn, text_turn};

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

/// A failure's reason of 300 characters: words, and a path with no space.
fn long_reason() -> String {
    let words = "the model provider refused the request because the prompt is too long for this model; \
                 shorten the task document or choose a model with a larger context window, then start the run again: ";
    let path = format!("/projects/{}", "n".repeat(300));
    let reason: String = format!("{words}{path}").chars().take(300).collect();
    assert_eq!(reason.chars().count(), 300);
    reason
}

/// What the runs table must keep whole: its headings, each run's agent,
/// status, dates, tokens and Cancel button.
const RUN_WORDS: &str = "table th, tr[data-run] > td:first-child, tr[data-run] .badge, \
     tr[data-run] > td:nth-child(n + 3):nth-child(-n + 5), tr[data-run] button";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_table_keeps_words_whole_beside_a_long_failure() {
    let Some(page) = Page::open().await else {
        return;
    };
    let reason = long_reason();
    let site = Site::start(
        json!([
            // The first implementation fails with the long reason; the
            // second never answers, so its row offers Cancel.
            { "steps": [{ "type": "error", "error": { "kind": "invalid_request", "message": reason } }] },
            hanging_turn()
        ]),
        &[],
    );
    site.sign_in(&page).await;
    let project = site.new_project(&page, "runs", "runs").await;
    let task = site.new_task(&page, &project, "Long failure").await;
    page.click("button[data-agent=implementation]").await;
    page.wait_until(
        "document.querySelector('tr[data-run] .badge')?.textContent.includes('failed')",
    )
    .await;
    page.click("button[data-agent=implementation]").await;
    page.wait_until(
        "[...document.querySelectorAll('tr[data-run] .badge')].map(b => b.textContent).join() === '✗ failed,● running'",
    )
    .await;
    page.wait_for("tr[data-run] button.danger").await;

    for (name, width, height) in [
        ("runs-table-desktop", 1280, 900),
        ("runs-table-phone", 390, 844),
    ] {
        page.client.set_window_size(width, height).await.unwrap();
        page.goto(&site.url(&format!("#/tasks/{task}"))).await;
        page.wait_for("tr[data-run] button.danger").await;
        page.screenshot(name).await;
        let broken = page.broken_words(RUN_WORDS).await;
        assert!(
            broken.is_empty(),
            "{name}: words broken across lines: {broken:?}"
        );
        // The reason is whole, in a cell of its own across the table, and
        // the measure above sees words broken there (its path is wider
        // than a phone).
        let note = page.text_of("tr.run-note td").await;
        assert!(note.ends_with(&reason), "{name}: {note}");
        let spans = page
            .run("return document.querySelector('tr.run-note td').colSpan;")
            .await;
        assert_eq!(spans, json!(6), "{name}");
        if width == 390 {
            let wrapped = page.broken_words("tr.run-note td").await;
            assert!(!wrapped.is_empty(), "the path wraps on a phone");
        }
        assert!(!page.scrolls_sideways().await, "{name} scrolls sideways");
    }
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_draws_no_focus_frame_and_the_keyboard_focus_shows() {
    let Some(page) = Page::open().await else {
        return;
    };
    let site = Site::start(json!([text_turn(&["unused"], 0)]), &[]);
    site.sign_in(&page).await;
    site.new_project(&page, "focus", "focus").await;
    page.client.refresh().await.unwrap();
    page.wait_until("document.querySelector('h1')?.textContent === 'focus'")
        .await;
    // The view's heading has the focus (a screen reader reads it) and
    // draws no frame.
    page.wait_until("document.activeElement === document.querySelector('main h1')")
        .await;
    let (focused, framed) = page.focus_frame().await;
    assert!(!framed, "{focused} draws a focus frame after a reload");
    page.screenshot("focus-after-reload").await;
    // The keyboard's next stop is a control, and its focus shows.
    page.client
        .active_element()
        .await
        .unwrap()
        .send_keys("\u{E004}")
        .await
        .unwrap();
    page.wait_until("document.activeElement !== document.querySelector('main h1')")
        .await;
    let (focused, framed) = page.focus_frame().await;
    assert!(
        framed && focused != "main#main",
        "{focused} has the keyboard focus without a frame"
    );
    page.screenshot("focus-keyboard").await;
    page.close().await;
}
