//! Bad flags and inputs are refused before anything runs, each with an
//! error that names what is allowed: tool names, approvals, limits, script
//! files, server timings, user names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Output, Stdio};

/// `agentloop ARGS` in `home`, with no provider from the environment and
/// nothing on stdin.
fn agentloop(home: &Path, args: &[&str]) -> Output {
    common::agentloop()
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A script that would answer, so a refusal is the flag's doing.
fn script(home: &Path) -> String {
    let path = home.join("script.json");
    std::fs::write(
        &path,
        r#"[{"steps": [{"type": "text", "chunks": ["answered"]}]}]"#,
    )
    .unwrap();
    format!("scripted:{}", path.display())
}

#[test]
fn each_bad_flag_is_a_usage_error_naming_what_is_allowed() {
    let home = tempfile::tempdir().unwrap();
    let provider = script(home.path());
    let empty = home.path().join("empty.json");
    std::fs::write(&empty, "[]").unwrap();
    let empty = format!("scripted:{}", empty.display());
    let tools = "fs, memory, javascript, shell, return, ask_user, minion";
    // (arguments, what the error must say)
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["run", "hi", "--approve", "nosuch", "--provider", &provider],
            vec!["--approve: unknown tool \"nosuch\"", "all, none", tools],
        ),
        (
            vec!["run", "hi", "--approve", "fs,,js", "--provider", &provider],
            vec!["--approve \"fs,,js\" has an empty", tools],
        ),
        (
            vec!["chat", "--approve", "nosuch", "--provider", &provider],
            vec!["--approve: unknown tool \"nosuch\"", tools],
        ),
        (
            vec![
                "run",
                "hi",
                "--max-iterations",
                "0",
                "--provider",
                &provider,
            ],
            vec!["--max-iterations", "1.."],
        ),
        (
            vec!["run", "hi", "--max-tokens", "0", "--provider", &provider],
            vec!["--max-tokens", "1.."],
        ),
        (
            vec!["run", "hi", "--timeout", "0s", "--provider", &provider],
            vec!["--timeout", "greater than zero"],
        ),
        (
            vec!["run", "hi", "--timeout", "3 days", "--provider", &provider],
            vec!["--timeout", "unknown unit \"days\""],
        ),
        (
            vec!["run", "hi", "--mcp-timeout", "0", "--provider", &provider],
            vec!["--mcp-timeout", "1.."],
        ),
        (
            vec!["run", "hi", "--tools", "", "--provider", &provider],
            vec!["--tools holds an empty tool name", tools],
        ),
        (
            vec!["run", "hi", "--tools", "fs,,fs", "--provider", &provider],
            vec!["--tools holds an empty tool name", tools],
        ),
        (
            vec![
                "run",
                "hi",
                "--tools",
                "fs,js,javascript",
                "--provider",
                &provider,
            ],
            vec!["--tools names the tool javascript twice", tools],
        ),
        (
            vec!["run", "hi", "--tools", "nope", "--provider", &provider],
            vec!["--tools: unknown tool \"nope\"", tools],
        ),
        (
            vec!["chat", "--tools", "fs,fs", "--provider", &provider],
            vec!["--tools names the tool fs twice", tools],
        ),
        (
            vec!["run", "hi", "--provider", "scripted:"],
            vec![
                "--provider scripted: needs the script's path",
                "scripted:FILE",
            ],
        ),
        (
            vec!["run", "hi", "--provider", ""],
            vec![
                "unknown provider \"\"",
                "anthropic, openai-chat",
                "scripted:FILE",
            ],
        ),
        (
            vec!["run", "hi", "--provider", &empty],
            vec!["has no turns: it needs at least one"],
        ),
        (
            vec!["run", "hi", "--strategy", "", "--provider", &provider],
            vec!["--strategy <STRATEGY>", "none was supplied"],
        ),
        (
            vec!["run", "hi", "--mcp-stdio", "", "--provider", &provider],
            vec!["--mcp-stdio \"\"", "empty MCP server command line"],
        ),
        (
            vec!["chat", "--db", "", "--provider", &provider],
            vec!["--db is empty", "sqlite:PATH, postgres://HOST/DB or memory"],
        ),
        (
            vec!["chat", "--chat", "", "--provider", &provider],
            vec!["--chat <CHAT>", "none was supplied"],
        ),
        (
            vec!["tool", "call", "", "--input", "{}"],
            vec!["unknown tool \"\"", tools],
        ),
        (
            vec!["tool", "call", "fs", "--input", "{}", "--option", ""],
            vec!["--option \"\" is not key=value"],
        ),
        (
            vec!["complete-workflow", ""],
            vec!["<TASK_ID>", "none was supplied"],
        ),
        (
            vec!["serve", "--bind", ""],
            vec!["--bind <BIND>", "none was supplied"],
        ),
        (
            vec!["serve", "--max-iterations", "0"],
            vec!["--max-iterations", "1.."],
        ),
        (
            vec!["serve", "--max-connections", "0"],
            vec!["--max-connections", "at least 1"],
        ),
        (vec!["serve", "--lease-ms", "0"], vec!["--lease-ms", "1.."]),
        (
            vec!["serve", "--lease-ms", "1000", "--heartbeat-ms", "1000"],
            vec!["--heartbeat-ms 1000 must be shorter than --lease-ms 1000"],
        ),
    ];
    for (args, needles) in cases {
        let output = agentloop(home.path(), &args);
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {text}");
        for needle in needles {
            assert!(text.contains(needle), "{args:?}: {needle:?} not in {text}");
        }
        assert!(!text.contains("answered"), "{args:?} ran: {text}");
        assert!(!text.contains("panicked"), "{args:?}: {text}");
        assert!(output.stdout.is_empty(), "{args:?} printed an answer");
    }
    assert!(
        !home.path().join("data").exists(),
        "no refused command made a database"
    );
}

#[test]
fn a_user_name_is_taken_once() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("users.db").display().to_string();
    let first = agentloop(home.path(), &["users", "create", "alice", "--db", &db]);
    assert!(first.status.success(), "{}", stderr(&first));
    let second = agentloop(home.path(), &["users", "create", "alice", "--db", &db]);
    let text = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("a user named \"alice\" already exists") && text.contains("users list"),
        "{text}"
    );
    assert!(second.stdout.is_empty(), "no token printed");
    let blank = agentloop(home.path(), &["users", "create", "  ", "--db", &db]);
    assert_eq!(blank.status.code(), Some(2), "{}", stderr(&blank));
    assert!(stderr(&blank).contains("name that is not empty"));
    let listed = agentloop(home.path(), &["users", "list", "--db", &db]);
    let names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|line| line.split('\t').nth(1).unwrap().to_owned())
        .collect();
    assert_eq!(names, ["alice"], "nothing else was created");
}
