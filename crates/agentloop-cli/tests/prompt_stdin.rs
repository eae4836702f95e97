//! `agentloop run` takes its prompt from stdin when stdin is not a
//! terminal: piped text alone, `-`, or after a PROMPT argument past a blank
//! line. A terminal stdin is never read as the prompt: it is the person,
//! who answers approvals there; piped input leaves no one to approve.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::piped;
use rexpect::process::wait::WaitStatus;
use rexpect::session::spawn_command;

/// `agentloop ARGS` in `home` with no provider from the environment.
fn command(home: &Path, args: &[&str]) -> Command {
    let mut command = common::agentloop();
    command
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `agentloop run ARGS --base-url URL --model m` with `stdin` piped;
/// returns its output.
async fn run_against(base_url: String, args: Vec<String>, stdin: String) -> Output {
    tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        let mut all = vec!["run".to_owned()];
        all.extend(args);
        all.extend([
            "--base-url".to_owned(),
            base_url,
            "--model".to_owned(),
            "m".to_owned(),
        ]);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        piped(command(home.path(), &all), &stdin)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_comes_from_the_argument_stdin_or_both() {
    let server = common::openai::start(None, "answered").await;
    // (arguments, piped stdin, the user message the model gets)
    let cases = [
        (vec![], "What is 2+2?\n", "What is 2+2?"),
        (vec!["-"], "What is 3+3?\n\n", "What is 3+3?"),
        (
            vec!["Summarise these notes"],
            "# Notes\n\n- one\n- two\n",
            "Summarise these notes\n\n# Notes\n\n- one\n- two",
        ),
        // An empty pipe (or /dev/null) adds nothing.
        (vec!["Just this"], "", "Just this"),
    ];
    for (n, (args, stdin, sent)) in cases.iter().enumerate() {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let output = run_against(server.base_url.clone(), args.clone(), (*stdin).to_owned()).await;
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert_eq!(String::from_utf8_lossy(&output.stdout), "answered\n");
        assert_eq!(server.user_text(n).await, *sent, "{args:?} with {stdin:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_prompt_at_all_is_a_usage_error() {
    let server = common::openai::start(None, "answered").await;
    for (args, needle) in [
        (
            vec!["-"],
            "the prompt - means \"read it from stdin\", and stdin was empty",
        ),
        (vec![], "no prompt: give it as an argument"),
    ] {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let output = run_against(server.base_url.clone(), args.clone(), " \n".to_owned()).await;
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(needle), "{args:?}: {text}");
    }
    assert!(server.completions().await.is_empty(), "nothing was sent");
}

/// One turn writing `/notes.txt`, then a closing text.
const WRITE: &str = r#"[
  {"steps": [{"type": "tool_call", "id": "t1", "name": "fs", "fragments": ["{\"command\": \"create\", \"path\": \"/notes.txt\", \"file_text\": \"hello\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Done."]}]}
]"#;

#[test]
fn a_piped_prompt_leaves_no_one_to_approve_a_write() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(&script, WRITE).unwrap();
    let provider = format!("scripted:{}", script.display());
    let root = home.path().display().to_string();
    let args = [
        "run",
        "--tools",
        "fs",
        "--root",
        &root,
        "--provider",
        &provider,
    ];
    let output = piped(command(home.path(), &args), "write the notes\n");
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("fs create needs approval; rerun with --approve fs or in a terminal"),
        "{text}"
    );
    assert!(!home.path().join("notes.txt").exists());
    let mut approved = args.to_vec();
    approved.extend(["--approve", "fs"]);
    let output = piped(command(home.path(), &approved), "write the notes\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(home.path().join("notes.txt").exists());
}

#[test]
fn a_terminal_stdin_is_never_read_as_the_prompt() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["answered"]}]}]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    for (args, needle) in [
        (vec!["run", "-"], "stdin is a terminal"),
        (vec!["run"], "no prompt: give it as an argument"),
    ] {
        let mut all = args.clone();
        all.extend(["--provider", &provider]);
        // Generous: a slow CI machine, not a performance bound.
        let mut p = spawn_command(command(home.path(), &all), Some(30_000)).unwrap();
        let shown = p.exp_eof().unwrap();
        assert!(shown.contains(needle), "{args:?}: {shown}");
        assert!(!shown.contains("answered"), "{args:?}: {shown}");
        match p.process.wait().unwrap() {
            WaitStatus::Exited(_, code) => assert_eq!(code, 2, "{args:?}"),
            other => panic!("not exited: {other:?}"),
        }
    }
    // With a PROMPT, a run on a terminal goes on without waiting for input.
    let mut p = spawn_command(
        command(home.path(), &["run", "hi", "--provider", &provider]),
        Some(30_000),
    )
    .unwrap();
    p.exp_string("answered").unwrap();
    p.exp_eof().unwrap();
}
