//! The npm packages the install scripts put under `target/` for the tests
//! that drive a reference client: finding one, and saying so when it is
//! missing — a failure under `CI`, a loud skip otherwise.

use std::path::{Path, PathBuf};

/// The `node_modules` of `target/FOLDER` when `package` is installed in
/// it, or `None` after saying that `scripts/SCRIPT` installs it; under CI
/// that is a failure.
pub fn modules(folder: &str, package: &str, script: &str) -> Option<PathBuf> {
    let modules = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target")
        .join(folder)
        .join("node_modules");
    if modules.join(package).join("package.json").is_file() {
        return Some(modules);
    }
    let message = format!(
        "SKIPPED: {package} is not installed at {}; run scripts/{script}",
        modules.display()
    );
    assert!(
        std::env::var_os("CI").is_none(),
        "{message} (CI is set, so this is a failure)"
    );
    eprintln!("\n{0}\n{message}\n{0}\n", "*".repeat(72));
    None
}
