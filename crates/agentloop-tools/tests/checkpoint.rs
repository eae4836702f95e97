//! File checkpoints over real folders: a folder changed every way a
//! command can change it comes back byte for byte; a checkpoint of an
//! unchanged folder reads no file; ignored files and links out of the
//! folder are left alone; the diff of a step reads as a patch.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agentloop_tools::checkpoint::{Change, FileCheckpoints};

/// Every path under `root` (but `.git`) with what it is: folder, link
/// target, or content and permission bits.
fn listing(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, at: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(at).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(
                    name,
                    format!("link {}", std::fs::read_link(&path).unwrap().display()),
                );
            } else if meta.is_dir() {
                out.insert(name, "folder".to_owned());
                walk(root, &path, out);
            } else {
                let content = std::fs::read(&path).unwrap();
                let mode = meta.permissions().mode() & 0o7777;
                out.insert(name, format!("{mode:o} {content:?}"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn project() -> (tempfile::TempDir, std::path::PathBuf, FileCheckpoints) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::write(root.join("README.md"), "# Notes\n\nmilk\neggs\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("src/deep/data.bin"), [0u8, 159, 146, 150]).unwrap();
    std::fs::write(root.join("run.sh"), "echo hi\n").unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("README.md", root.join("link")).unwrap();
    let store = FileCheckpoints::open(dir.path().join("store")).unwrap();
    (dir, root, store)
}

#[test]
fn a_folder_changed_every_way_comes_back_byte_for_byte() {
    let (_dir, root, store) = project();
    let before = listing(&root);
    let checkpoint = store.take(&root).unwrap();
    assert_eq!(checkpoint.read, 4, "every file read the first time");

    // Created, edited, deleted, renamed, re-permissioned, relinked, a file
    // where a folder was and a folder where a file was.
    std::fs::write(root.join("new.txt"), "new\n").unwrap();
    std::fs::create_dir_all(root.join("made/inner")).unwrap();
    std::fs::write(root.join("made/inner/x"), "x").unwrap();
    std::fs::write(root.join("README.md"), "# Notes\n\nmilk\nbread\n").unwrap();
    std::fs::remove_file(root.join("src/main.rs")).unwrap();
    std::fs::rename(root.join("src/deep/data.bin"), root.join("data.bin")).unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(root.join("link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
    std::fs::remove_dir(root.join("empty")).unwrap();
    std::fs::write(root.join("empty"), "now a file").unwrap();
    std::fs::remove_dir_all(root.join("src/deep")).unwrap();
    std::fs::write(root.join("src/deep"), "now a file too").unwrap();
    assert_ne!(listing(&root), before);

    let restored = store.restore(&checkpoint.id, None).unwrap();
    assert_eq!(listing(&root), before);
    assert!(
        restored.removed.contains(&"new.txt".to_owned()),
        "{restored:?}"
    );
    assert!(
        restored.removed.contains(&"made".to_owned()),
        "{restored:?}"
    );
    assert!(
        !restored.removed.iter().any(|p| p.starts_with("made/")),
        "a removed folder counts once: {restored:?}"
    );

    // Restored again, nothing is left to do.
    assert!(store.restore(&checkpoint.id, None).unwrap().is_empty());
}

#[test]
fn an_unchanged_folder_is_checkpointed_without_reading_a_file() {
    let (_dir, root, store) = project();
    let first = store.take(&root).unwrap();
    let again = store.take(&root).unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(again.read, 0);

    std::fs::write(root.join("README.md"), "changed\n").unwrap();
    let changed = store.take(&root).unwrap();
    assert_ne!(changed.id, first.id);
    assert_eq!(changed.read, 1, "only the changed file is read");

    // A second store handle (another process) starts from the folder's
    // last tree as stored.
    let reopened = FileCheckpoints::open(store.dir()).unwrap();
    let after_reopen = reopened.take(&root).unwrap();
    assert_eq!(after_reopen.id, changed.id);
    assert_eq!(after_reopen.read, 0);
}

#[test]
fn ignored_files_are_left_alone_and_links_are_not_written_through() {
    let (dir, root, store) = project();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir(root.join("target")).unwrap();
    std::fs::write(root.join("target/big.o"), "object").unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let checkpoint = store.take(&root).unwrap();
    let tree = store.tree(&checkpoint.id).unwrap();
    assert!(tree.get("target/big.o").is_none() && tree.get(".git/HEAD").is_none());

    std::fs::write(root.join("target/big.o"), "rebuilt").unwrap();
    std::fs::write(root.join("build.log"), "log").unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/other\n").unwrap();
    // A folder the checkpoint holds, swapped for a link out of the project.
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::remove_dir_all(root.join("src")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("src")).unwrap();

    store.restore(&checkpoint.id, None).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("target/big.o")).unwrap(),
        "rebuilt"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("build.log")).unwrap(),
        "log"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/HEAD")).unwrap(),
        "ref: refs/heads/other\n"
    );
    assert!(
        std::fs::symlink_metadata(root.join("src"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

#[test]
fn a_step_diff_reads_as_a_patch() {
    let (_dir, root, store) = project();
    let before = store.take(&root).unwrap();
    std::fs::write(root.join("README.md"), "# Notes\n\nmilk\nbread\n").unwrap();
    std::fs::write(root.join("new.txt"), "hello\n").unwrap();
    std::fs::remove_file(root.join("src/deep/data.bin")).unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o700)).unwrap();

    let now = store.diff(&before.id, None, None).unwrap();
    let after = store.take(&root).unwrap();
    let stored = store.diff(&before.id, Some(&after.id), None).unwrap();
    assert_eq!(
        now, stored,
        "the folder now and its checkpoint read the same"
    );

    let shown: Vec<String> = stored
        .iter()
        .map(|c| {
            format!(
                "{:?} {}\n{}",
                c.change,
                c.path,
                c.diff.clone().or(c.summary.clone()).unwrap_or_default()
            )
        })
        .collect();
    insta::assert_snapshot!(shown.join("\n"));
    assert_eq!(
        stored.iter().map(|c| c.change).collect::<Vec<_>>(),
        [
            Change::Modified,
            Change::Added,
            Change::Modified,
            Change::Removed
        ]
    );
}

#[test]
fn ids_and_damaged_trees_are_refused_with_what_is_wrong() {
    let (_dir, root, store) = project();
    let error = "../../etc/passwd".parse::<agentloop_tools::checkpoint::CheckpointId>();
    assert!(
        error
            .unwrap_err()
            .to_string()
            .contains("is not a file checkpoint id")
    );

    let checkpoint = store.take(&root).unwrap();
    let path = store
        .dir()
        .join("trees")
        .join(format!("{}.json", checkpoint.id));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"README.md\"", "\"../README.md\"")).unwrap();
    let error = store.restore(&checkpoint.id, None).unwrap_err().to_string();
    assert!(error.contains("leaves the folder"), "{error}");
}
