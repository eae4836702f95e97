//! `AGENTS.md` in a server project's folder: every agent run of the
//! project gets the root's and the nested files' instructions after its
//! system prompt (root first, nearest last); a project without one gets
//! none of another project's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::create_user;
use common::openai::system_text;
use common::served::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_runs_read_its_agents_md_files() {
    let model = common::openai::start(None, "Done.").await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("docs")).unwrap();
    std::fs::write(repo.join("AGENTS.md"), "Write British English.\n").unwrap();
    std::fs::write(
        repo.join("docs/AGENTS.md"),
        "Docs: one sentence per line.\n",
    )
    .unwrap();
    let ada = create_user(&db, "ada");
    let base_url = model.base_url.clone();
    let root = dir.path().to_owned();
    let (ours, theirs) = tokio::task::spawn_blocking(move || {
        let served = serve_provider(
            &db,
            &[
                "--provider",
                "openai-compatible",
                "--base-url",
                &base_url,
                "--model",
                "mock",
            ],
            &root,
            "agents-md",
            &[],
        );
        let address = served.address.clone();
        let task_id = task(&address, &ada, &root.join("repo"));
        let run = start_run(&address, &ada, &task_id, "planification");
        until_status(&address, &ada, &run, "completed");
        let other = task(&address, &ada, &root.join("plain"));
        let run = start_run(&address, &ada, &other, "planification");
        until_status(&address, &ada, &run, "completed");
        (task_id, other)
    })
    .await
    .unwrap();
    let requests = model.completions().await;
    assert_eq!(requests.len(), 2, "{ours} {theirs}");
    let system = system_text(&requests[0]);
    assert!(
        system.starts_with("You are the planification agent"),
        "{system}"
    );
    let root_at = system.find("Write British English.").expect(&system);
    let nested_at = system.find("one sentence per line").expect(&system);
    assert!(root_at < nested_at, "{system}");
    assert!(
        system.contains("docs/AGENTS.md (the folder docs/)"),
        "{system}"
    );
    let plain = system_text(&requests[1]);
    assert!(!plain.contains("AGENTS.md"), "{plain}");
    assert!(!plain.contains("British"), "{plain}");
}
