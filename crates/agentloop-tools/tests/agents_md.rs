//! `AGENTS.md` files of a project folder: found at the root and in
//! sub-folders (root first, nearest last), never through a symbolic link
//! or in hidden, `node_modules` or `target` folders, and cut at the cap
//! with a warning.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use agentloop_tools::agents_md::{self, MAX_BYTES};

#[test]
fn nested_files_are_read_root_first_and_nearest_last() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("api/v2")).unwrap();
    fs::create_dir_all(root.join("web")).unwrap();
    fs::write(root.join("AGENTS.md"), "Use tabs.\n").unwrap();
    fs::write(root.join("api/AGENTS.md"), "Use spaces in the API.").unwrap();
    fs::write(root.join("api/v2/AGENTS.md"), "v2: two spaces.\n").unwrap();
    fs::write(root.join("web/README.md"), "not instructions").unwrap();

    let found = agents_md::read(root, MAX_BYTES);
    let paths: Vec<String> = found.files.iter().map(|f| f.path()).collect();
    assert_eq!(paths, ["AGENTS.md", "api/AGENTS.md", "api/v2/AGENTS.md"]);
    assert_eq!(found.warning(), None);
    let text = found.text();
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle} in {text}"))
    };
    assert!(at("Use tabs.") < at("Use spaces in the API.") && at("Use spaces") < at("v2: two"));
    assert!(
        text.contains("## api/v2/AGENTS.md (the folder api/v2/)"),
        "{text}"
    );
    assert!(
        text.contains("nearest to the file being worked on wins"),
        "{text}"
    );
    assert_eq!(
        found.after_system(Some("Be brief.".into())).unwrap(),
        format!("Be brief.\n\n{text}")
    );
}

#[test]
fn links_hidden_and_dependency_folders_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("AGENTS.md"), "secret from outside").unwrap();
    let root = dir.path();
    for folder in [".git", "node_modules/pkg", "target/debug"] {
        fs::create_dir_all(root.join(folder)).unwrap();
        fs::write(root.join(folder).join("AGENTS.md"), "not ours").unwrap();
    }
    std::os::unix::fs::symlink(outside.path(), root.join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("AGENTS.md"), root.join("AGENTS.md")).unwrap();

    let found = agents_md::read(root, MAX_BYTES);
    assert!(found.is_empty(), "{:?}", found.files);
    assert_eq!(found.text(), "");
    assert_eq!(found.after_system(None), None);
    assert!(agents_md::read(&root.join("missing"), MAX_BYTES).is_empty());
}

#[test]
fn over_the_cap_the_text_is_cut_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir(root.join("deep")).unwrap();
    // Multi-byte characters across the cut: it falls on a boundary.
    fs::write(root.join("AGENTS.md"), "é".repeat(30)).unwrap();
    fs::write(root.join("deep/AGENTS.md"), "never reached").unwrap();

    let found = agents_md::read(root, 41);
    assert!(found.over_cap());
    let warning = found.warning().unwrap();
    assert!(
        warning.contains("73 bytes") && warning.contains("cap of 41"),
        "{warning}"
    );
    let text = found.text();
    assert!(
        text.contains(&"é".repeat(20)) && !text.contains(&"é".repeat(21)),
        "{text}"
    );
    assert!(text.contains("cut here"), "{text}");
    assert!(!text.contains("never reached"), "{text}");
}
