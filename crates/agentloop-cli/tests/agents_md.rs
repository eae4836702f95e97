//! `AGENTS.md` in the folder a run works in: `agentloop run` sends the
//! root's and the nested files' instructions (root first, the nearest
//! last, each naming its folder) after its system prompt, as `agentloop
//! eval` does for each case; `agentloop info` names the files, and
//! instructions over the cap are cut with a warning.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use common::openai::system_text;
use common::{in_folder as command, piped};

async fn run_in(folder: &Path, base_url: &str, extra: &[&str]) -> Output {
    let folder = folder.to_owned();
    let mut args: Vec<String> = ["run", "Hello", "--base-url", base_url, "--model", "m"]
        .map(str::to_owned)
        .into();
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        piped(command(&folder, home.path(), &args), "")
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reads_the_folders_agents_md_files_nearest_last() {
    let server = common::openai::start(None, "ok").await;
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::create_dir_all(root.join("services/billing")).unwrap();
    std::fs::create_dir_all(root.join("node_modules/left-pad")).unwrap();
    std::fs::write(
        root.join("AGENTS.md"),
        "# Style\nRun `make check` before you finish.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("services/billing/AGENTS.md"),
        "Amounts are integer cents here; never floats.\n",
    )
    .unwrap();
    std::fs::write(root.join("node_modules/left-pad/AGENTS.md"), "Not ours.\n").unwrap();

    let output = run_in(root, &server.base_url, &["--system", "Be brief."]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let system = system_text(&server.completions().await[0]);
    assert!(system.starts_with("Be brief.\n\n"), "{system}");
    let root_at = system.find("Run `make check`").expect(&system);
    let nested_at = system.find("integer cents").expect(&system);
    assert!(root_at < nested_at, "{system}");
    assert!(
        system.contains("services/billing/AGENTS.md (the folder services/billing/)"),
        "{system}"
    );
    assert!(
        system.contains("nearest to the file being worked on wins"),
        "{system}"
    );
    assert!(!system.contains("Not ours."), "{system}");

    // `--root` names the folder as well as the current folder does.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = run_in(
        elsewhere.path(),
        &server.base_url,
        &["--root", &root.join("services").display().to_string()],
    )
    .await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let system = system_text(&server.completions().await[1]);
    assert!(system.contains("integer cents"), "{system}");
    assert!(!system.contains("make check"), "{system}");

    // `info` names the files a run there reads.
    let home = tempfile::tempdir().unwrap();
    let info = command(root, home.path(), &["info"]).output().unwrap();
    let text = String::from_utf8(info.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("agents:"))
        .expect(&text);
    assert!(
        line.contains("AGENTS.md, services/billing/AGENTS.md") && line.contains("bytes"),
        "{line}"
    );
    let info = command(elsewhere.path(), home.path(), &["info"])
        .output()
        .unwrap();
    let text = String::from_utf8(info.stdout).unwrap();
    assert!(text.contains("agents:   no AGENTS.md"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_over_the_cap_are_cut_with_a_warning() {
    let server = common::openai::start(None, "ok").await;
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    let long = format!(
        "{}THE-END-MARKER\n",
        "Keep every line short.\n".repeat(2_000)
    );
    std::fs::write(root.join("AGENTS.md"), &long).unwrap();

    let output = run_in(root, &server.base_url, &[]).await;
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("over the cap of 32768 bytes"), "{stderr}");
    let system = system_text(&server.completions().await[0]);
    assert!(
        system.contains("Keep every line short."),
        "{}",
        system.len()
    );
    assert!(!system.contains("THE-END-MARKER"));
    assert!(system.contains("cut here"));

    let home = tempfile::tempdir().unwrap();
    let info = command(root, home.path(), &["info"]).output().unwrap();
    let text = String::from_utf8(info.stdout).unwrap();
    assert!(text.contains("warning:"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eval_reads_the_agents_md_of_the_folder_it_runs_in() {
    let server = common::openai::start(None, "ok").await;
    let project = tempfile::tempdir().unwrap();
    let root = project.path().to_owned();
    std::fs::create_dir_all(root.join("api")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "Answer in lowercase.\n").unwrap();
    std::fs::write(root.join("api/AGENTS.md"), "Errors are JSON objects.\n").unwrap();
    let dataset = root.join("cases.yaml");
    std::fs::write(
        &dataset,
        "name: greet\ncases:\n  - name: says-ok\n    prompt: Say ok.\n    expect:\n      contains: ok\n",
    )
    .unwrap();
    let base_url = server.base_url.clone();
    let output = tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        let dataset = dataset.display().to_string();
        piped(
            command(
                &root,
                home.path(),
                &[
                    "eval",
                    &dataset,
                    "--base-url",
                    &base_url,
                    "--model",
                    "m",
                    "--system",
                    "Be brief.",
                ],
            ),
            "",
        )
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.completions().await;
    assert_eq!(requests.len(), 1);
    let system = system_text(&requests[0]);
    assert!(system.starts_with("Be brief.\n\n"), "{system}");
    let root_at = system.find("Answer in lowercase.").expect(&system);
    let nested_at = system.find("Errors are JSON objects.").expect(&system);
    assert!(root_at < nested_at, "{system}");
    assert!(
        system.contains("api/AGENTS.md (the folder api/)"),
        "{system}"
    );
}
