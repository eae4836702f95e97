//! Properties of the path rules and the jail over generated paths.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;

use agentloop_tools::vfs::DirJail;
use agentloop_types::{Vfs, normalize_path};
use proptest::prelude::*;

/// Path pieces chosen to hit the rules: dots, separators, encodings,
/// look-alikes, control characters and the names of planted symlinks.
fn piece() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "a",
        "b",
        ".",
        "..",
        "...",
        "/",
        "//",
        "\\",
        "%2e",
        "%2f",
        "%25",
        "%",
        "\0",
        "\n",
        "~",
        "C:",
        " ",
        "\u{FF0E}",
        "\u{2215}",
        "é",
        "out",
        "up",
        "sub",
        "secret.txt",
    ])
    .prop_map(str::to_owned)
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..8).prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn normalised_paths_are_canonical(p in path()) {
        if let Ok(n) = normalize_path(&p) {
            prop_assert!(n.starts_with('/'));
            prop_assert!(n == "/" || !n.ends_with('/'));
            prop_assert!(!n.contains("//"));
            prop_assert!(!n.contains('\\') && !n.contains('\0'));
            prop_assert!(n.split('/').all(|c| c != ".." && c != "."));
            prop_assert_eq!(normalize_path(&n).unwrap(), n);
        }
    }

    #[test]
    fn arbitrary_strings_never_panic(p in any::<String>()) {
        let _ = normalize_path(&p);
    }
}

#[test]
fn jail_never_reads_outside_for_generated_paths() {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let jail_dir = base.join("jail");
    std::fs::create_dir_all(jail_dir.join("sub")).unwrap();
    std::fs::write(base.join("secret.txt"), "TOP SECRET").unwrap();
    symlink("..", jail_dir.join("out")).unwrap();
    symlink("../..", jail_dir.join("sub/up")).unwrap();
    let jail = DirJail::new(&jail_dir).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(256));
    runner
        .run(&path(), |p| {
            let read = runtime.block_on(jail.read(&p));
            if let Ok(bytes) = read {
                prop_assert!(
                    !String::from_utf8_lossy(&bytes).contains("TOP SECRET"),
                    "{:?}",
                    p
                );
            }
            let listed = runtime.block_on(jail.list(&p));
            if let Ok(entries) = listed {
                prop_assert!(
                    entries
                        .iter()
                        .all(|e| e.name != "secret.txt" && e.name != "jail"),
                    "{:?}",
                    p
                );
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(base.join("secret.txt")).unwrap(),
        "TOP SECRET"
    );
}
