//! `agentloop run` on a real terminal (a pty): colour, rendered markdown
//! and the spinner appear there on their own, and `NO_COLOR` turns them
//! off.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use rexpect::session::spawn_command;

const SCRIPT: &str = r#"[
  {"steps": [{"type": "delay", "ms": 700}, {"type": "text", "chunks": ["the answer is **bold", "** and `code`\n\n- one\n- two\n"]}]}
]"#;

/// Runs the script on a pty and returns everything it showed.
fn run_on_a_terminal(home: &Path, no_color: bool) -> String {
    let script = home.join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let provider = format!("scripted:{}", script.display());
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .args(["run", "hi", "--provider", &provider])
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TERM", "xterm")
        .env_remove("NO_COLOR");
    if no_color {
        command.env("NO_COLOR", "1");
    }
    // Generous: a slow CI machine, not a performance bound.
    let mut p = spawn_command(command, Some(30_000)).unwrap();
    let shown = p.exp_string("complete").unwrap();
    p.exp_eof().unwrap();
    shown
}

#[test]
fn a_terminal_gets_colour_and_a_spinner_with_elapsed_time() {
    let home = tempfile::tempdir().unwrap();
    let shown = run_on_a_terminal(home.path(), false);
    assert!(shown.contains("the answer"), "{shown:?}");
    // The spinner counts tenths of seconds while the model is silent.
    assert!(
        shown.contains("0.1s") || shown.contains("0.2s"),
        "{shown:?}"
    );
    assert!(
        shown.contains("\x1b[2K"),
        "the spinner clears its line: {shown:?}"
    );
    assert!(
        shown.contains("\x1b[2m"),
        "the status line is dimmed: {shown:?}"
    );
    // The answer's markdown is rendered, not shown raw.
    assert!(shown.contains("\x1b[1mbold\x1b[0m"), "{shown:?}");
    assert!(shown.contains("\x1b[36mcode\x1b[0m"), "{shown:?}");
    assert!(
        !shown.contains("- one") && shown.contains(" one"),
        "a bullet: {shown:?}"
    );
    assert!(!shown.contains("**"), "{shown:?}");
}

#[test]
fn no_color_turns_colour_and_the_spinner_off_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let shown = run_on_a_terminal(home.path(), true);
    assert!(shown.contains("the answer"), "{shown:?}");
    assert!(!shown.contains('\x1b'), "{shown:?}");
    assert!(!shows_elapsed_time(&shown), "{shown:?}");
    // Without colour the markdown stays as the model wrote it.
    assert!(shown.contains("**bold**"), "{shown:?}");
}

/// Whether `text` holds a spinner's `N.Ns`.
fn shows_elapsed_time(text: &str) -> bool {
    text.as_bytes()
        .windows(4)
        .any(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit() && w[3] == b's')
}
