//! The Python test tools `.ci/run` installs into a virtual environment
//! (pinned in `.ci/python-test-tools.txt`): finding them, and saying so
//! when they are missing — a failure under `CI`, a loud skip otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The virtual environment's executables: the folder
/// `AGENTLOOP_TEST_PYTHON_BIN` names, else `target/test-tools/py/bin`.
pub fn tools_bin() -> PathBuf {
    match std::env::var_os("AGENTLOOP_TEST_PYTHON_BIN") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools/py/bin"),
    }
}

/// The virtual environment's Python when it can `import modules` (a
/// comma-separated list), or `None` after [`missing`] said that `what` is
/// not installed; under CI that is a failure.
pub fn python_with(modules: &str, what: &str) -> Option<PathBuf> {
    let python = tools_bin().join("python");
    let importable = Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if importable {
        return Some(python);
    }
    missing(what);
    None
}

/// Says that the test tool `what` is not installed: fails the test under
/// `CI`, else prints a `SKIPPED` line so the skip is seen.
pub fn missing(what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is not installed; .ci/run installs it into target/test-tools/py"
    );
    eprintln!(
        "SKIPPED: {what} is not installed \
         (run .ci/run, or install .ci/python-test-tools.txt into target/test-tools/py)"
    );
}
