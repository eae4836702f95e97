//! Runs the built `xtask` binary the way `cargo xtask` does.

use std::process::Command;

fn xtask(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("could not run xtask {args:?}: {err}"))
}

#[test]
fn layers_passes_on_the_real_workspace() {
    let output = xtask(&["layers"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("layers ok"), "{stdout}");
}

#[test]
fn an_unknown_command_prints_usage_and_exits_2() {
    let output = xtask(&["frobnicate"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown command `frobnicate`"), "{stderr}");
    assert!(stderr.contains("usage: cargo xtask"), "{stderr}");
}

#[test]
fn ci_rejects_nextest_arguments_without_double_dash() {
    let output = xtask(&["ci", "--no-fail-fast"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn package_takes_only_verify() {
    let output = xtask(&["package", "--frobnicate"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`package` takes only `--verify`"),
        "{stderr}"
    );
}
