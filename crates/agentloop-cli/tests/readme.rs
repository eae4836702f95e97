//! The README as a newcomer follows it: every file it names exists, and
//! every `agentloop` command of its shell blocks (also as
//! `cargo run -p agentloop-cli -- ...`) runs with no key in the
//! environment: it succeeds, or, asking a question, plays the demo in its
//! place and says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(repo_root().join("README.md")).unwrap()
}

/// Lines of the README's ```sh blocks.
fn shell_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside && line.trim() == "```sh";
            continue;
        }
        if inside {
            lines.push(line.to_owned());
        }
    }
    lines
}

/// Splits a shell command into words: double quotes group, nothing else is
/// special (the README's commands need no more).
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in command.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// The `agentloop` argument lists the README runs.
fn agentloop_commands(text: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    for line in shell_lines(text) {
        let code = line.split(" #").next().unwrap_or_default();
        for part in code.split("&&") {
            // The test reads stdout itself: a redirection is dropped.
            let part = part.split(" > ").next().unwrap_or_default().trim();
            let args = part
                .strip_prefix("cargo run -p agentloop-cli -- ")
                .or_else(|| part.strip_prefix("agentloop "));
            if let Some(args) = args {
                commands.push(words(args));
            }
        }
    }
    commands
}

#[test]
fn every_file_the_readme_names_exists() {
    let text = readme();
    let mut checked = 0;
    for token in text.split(|c: char| c.is_whitespace() || "`()[],:;".contains(c)) {
        let token = token.trim_matches(|c: char| c == '.' || c == '"' || c == '\'');
        let named_file = [".md", ".json", ".rs", ".txt", ".sse", ".toml"]
            .iter()
            .any(|ext| token.ends_with(ext))
            || token.starts_with(".ci/");
        // `/api/...` is a server route; `agentloop.db` is made on first use.
        // `~/...` is a path of the reader's machine, and AGENTS.md and
        // SKILL.md are files a run reads in the reader's own folders.
        let readers_own = ["AGENTS.md", "SKILL.md"].contains(&token);
        if !named_file || readers_own || token.starts_with(['/', '~']) || token.contains("://") {
            continue;
        }
        assert!(
            repo_root().join(token).exists(),
            "the README names {token}, which does not exist"
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} files found");
}

#[test]
fn every_agentloop_command_of_the_readme_runs() {
    let commands = agentloop_commands(&readme());
    assert!(commands.len() >= 8, "{commands:?}");
    let home = tempfile::tempdir().unwrap();
    for args in commands {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
        command
            .args(&args)
            .current_dir(repo_root())
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CONFIG_HOME", home.path().join("config"));
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "AGENTLOOP_MODEL",
        ] {
            command.env_remove(name);
        }
        if args[0] == "serve" {
            serve_starts(command);
            continue;
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `chat` reads its messages from stdin.
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"What is in this folder?\n")
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        // A question needs the key the README exports first: without one
        // the demo plays in its place and the run says so (exit 2).
        let demo_in_place = output.status.code() == Some(2)
            && stderr.contains("that was the demo, not an answer to your question");
        assert!(
            output.status.success() || demo_in_place,
            "agentloop {args:?}: {stderr}"
        );
    }
}

/// `serve` (which needs a provider, so it gets a placeholder key) starts
/// and says where it listens; it is then stopped.
fn serve_starts(mut command: Command) {
    let mut child = command
        .args(["--bind", "127.0.0.1:0"])
        .env("ANTHROPIC_API_KEY", "placeholder")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("serving on http://") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(seen.contains("serving on http://"), "{seen}");
}

#[test]
fn words_split_like_a_shell() {
    assert_eq!(
        words(r#"run "What is this?" --tools fs"#),
        ["run", "What is this?", "--tools", "fs"]
    );
}
