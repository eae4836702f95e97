//! The directory jail against a corpus of hostile paths: nothing outside the
//! root is ever read, written, listed, moved or deleted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::Path;

use agentloop_tools::vfs::DirJail;
use agentloop_types::{Vfs, VfsError};

const SECRET: &str = "TOP SECRET";

/// Every file and directory under `dir` (following nothing), with contents.
fn snapshot(dir: &Path, skip: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p == skip {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let key = p.display().to_string();
            if m.is_dir() {
                stack.push(p);
                out.insert(key, None);
            } else if m.is_file() {
                out.insert(key, Some(std::fs::read(&p).unwrap()));
            } else {
                out.insert(
                    key,
                    Some(
                        std::fs::read_link(&p)
                            .unwrap()
                            .display()
                            .to_string()
                            .into_bytes(),
                    ),
                );
            }
        }
    }
    out
}

struct Setup {
    _temp: tempfile::TempDir,
    base: std::path::PathBuf,
    jail_dir: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn setup() -> Setup {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let outside = base.join("outside");
    let jail_dir = base.join("jail");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(jail_dir.join("sub")).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(base.join("sibling.txt"), SECRET).unwrap();
    std::fs::write(jail_dir.join("sub/inside.txt"), "inside").unwrap();
    symlink("../outside", jail_dir.join("out")).unwrap();
    symlink("../outside/secret.txt", jail_dir.join("secret_link")).unwrap();
    symlink(&outside, jail_dir.join("abs_link")).unwrap();
    symlink(outside.join("secret.txt"), jail_dir.join("abs_file_link")).unwrap();
    symlink("../outside/not_yet_there", jail_dir.join("dangling")).unwrap();
    symlink("../..", jail_dir.join("sub/up")).unwrap();
    symlink("loop2", jail_dir.join("loop1")).unwrap();
    symlink("loop1", jail_dir.join("loop2")).unwrap();
    symlink("sub/../../outside", jail_dir.join("tricky")).unwrap();
    symlink("sub", jail_dir.join("inner_link")).unwrap();
    symlink("/dev/zero", jail_dir.join("dev_zero")).unwrap();
    symlink("/proc/self/root", jail_dir.join("proc_root")).unwrap();
    Setup {
        _temp: temp,
        base,
        jail_dir,
        outside,
    }
}

fn hostile_paths(s: &Setup) -> Vec<String> {
    let mut paths: Vec<String> = [
        "..",
        "../",
        "/..",
        "/../",
        "../outside/secret.txt",
        "/../outside/secret.txt",
        "./../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "sub/../..",
        "a/b/../../../outside",
        "....//outside",
        "..\\outside\\secret.txt",
        "sub\\..\\..\\outside",
        "..%2foutside%2fsecret.txt",
        "%2e%2e/outside/secret.txt",
        "%2E%2E%2Foutside",
        "%252e%252e/outside",
        "..%c0%afoutside",
        "..%5coutside",
        "%00",
        "secret.txt%00.png",
        "\u{FF0E}\u{FF0E}/outside/secret.txt",
        "..\u{2215}outside",
        "..\u{2044}outside",
        "\u{FEFF}../outside",
        "sub/\u{202E}txt.exe",
        "secret.txt\0.png",
        "\0",
        "sub\0/../..",
        "a\nb",
        "a\rb",
        "\t",
        "out",
        "out/",
        "out/secret.txt",
        "out/new.txt",
        "/out/../secret_link",
        "secret_link",
        "abs_link",
        "abs_link/secret.txt",
        "abs_file_link",
        "dangling",
        "dangling/x",
        "sub/up",
        "sub/up/outside/secret.txt",
        "sub/up/sibling.txt",
        "sub/up/new.txt",
        "loop1",
        "loop1/x",
        "tricky",
        "tricky/secret.txt",
        "dev_zero",
        "proc_root/etc/passwd",
        "proc_root",
        "C:\\Windows\\system32",
        "C:/Windows",
        "\\\\server\\share",
        "~/.ssh/id_rsa",
        "~root",
        "",
        "...",
        " ",
        "sub/ . /x",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    paths.push("../".repeat(64) + "etc/passwd");
    paths.push("a/".repeat(3000));
    paths.push("x".repeat(300));
    paths.push(format!("..{}", "/".repeat(10)));
    let _ = s;
    paths
}

/// Host-absolute paths name places inside the jail, never the host file.
fn rooted_paths(s: &Setup) -> Vec<String> {
    vec![
        s.outside.join("secret.txt").display().to_string(),
        s.base.join("sibling.txt").display().to_string(),
        "/etc/passwd".to_owned(),
        "/proc/self/root/etc/passwd".to_owned(),
    ]
}

fn is_refusal(e: &VfsError) -> bool {
    matches!(e, VfsError::InvalidPath { .. } | VfsError::Escape { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_corpus_never_escapes() {
    let s = setup();
    let jail = DirJail::new(&s.jail_dir).unwrap();
    let before = snapshot(&s.base, &s.jail_dir);
    let corpus = hostile_paths(&s);
    assert!(corpus.len() >= 40, "corpus has {} paths", corpus.len());

    let mut escapes = Vec::new();
    for path in &corpus {
        let victim = "/victim.txt";
        jail.write(victim, b"victim").await.unwrap();
        let results: Vec<(&str, Result<String, VfsError>)> = vec![
            (
                "read",
                jail.read(path)
                    .await
                    .map(|b| String::from_utf8_lossy(&b).into_owned()),
            ),
            ("stat", jail.stat(path).await.map(|m| format!("{m:?}"))),
            ("list", jail.list(path).await.map(|l| format!("{l:?}"))),
            (
                "write",
                jail.write(path, b"PWNED").await.map(|()| String::new()),
            ),
            (
                "create_dir",
                jail.create_dir(path).await.map(|()| String::new()),
            ),
            (
                "rename_to",
                jail.rename(victim, path).await.map(|()| String::new()),
            ),
            (
                "rename_from",
                jail.rename(path, "/moved").await.map(|()| String::new()),
            ),
            ("delete", jail.delete(path).await.map(|()| String::new())),
        ];
        for (op, result) in results {
            match result {
                Ok(v) => escapes.push(format!("{op}({path:?}) succeeded: {v:.60}")),
                Err(e) if !is_refusal(&e) => {
                    escapes.push(format!("{op}({path:?}) failed without refusing: {e}"))
                }
                Err(e) => {
                    let text = e.to_string();
                    assert!(
                        !text.contains(&s.base.display().to_string()),
                        "host path leaked: {text}"
                    );
                }
            }
        }
    }
    assert!(
        escapes.is_empty(),
        "{} escapes:\n{}",
        escapes.len(),
        escapes.join("\n")
    );
    assert_eq!(
        before,
        snapshot(&s.base, &s.jail_dir),
        "something outside the jail changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_absolute_paths_stay_inside() {
    let s = setup();
    let jail = DirJail::new(&s.jail_dir).unwrap();
    let before = snapshot(&s.base, &s.jail_dir);
    for path in rooted_paths(&s) {
        assert!(
            matches!(jail.read(&path).await, Err(VfsError::NotFound(_))),
            "{path}"
        );
        jail.write(&path, b"PWNED").await.unwrap();
        assert_eq!(jail.read(&path).await.unwrap(), b"PWNED");
        jail.delete(&path).await.unwrap();
    }
    assert_eq!(before, snapshot(&s.base, &s.jail_dir));
    assert!(
        std::fs::read_to_string("/etc/passwd")
            .map(|t| !t.contains("PWNED"))
            .unwrap_or(true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_hides_links_that_lead_out() {
    let s = setup();
    let jail = DirJail::new(&s.jail_dir).unwrap();
    let names: Vec<String> = jail
        .list("/")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["inner_link", "sub"]);
    let sub: Vec<String> = jail
        .list("/sub")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(sub, ["inside.txt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_operations_and_inner_links_work() {
    let s = setup();
    let jail = DirJail::new(&s.jail_dir).unwrap();
    assert_eq!(
        jail.read_to_string("/inner_link/inside.txt").await.unwrap(),
        "inside"
    );
    jail.write("/new/deep/file.txt", b"x").await.unwrap();
    assert!(jail.stat("/new/deep").await.unwrap().unwrap().is_dir());
    jail.rename("/new", "/renamed").await.unwrap();
    assert_eq!(jail.read("/renamed/deep/file.txt").await.unwrap(), b"x");
    assert!(matches!(
        jail.read("/renamed").await,
        Err(VfsError::IsADirectory(_))
    ));
    assert!(matches!(
        jail.rename("/renamed", "/sub").await,
        Err(VfsError::AlreadyExists(_))
    ));
    jail.delete("/inner_link").await.unwrap();
    assert!(
        s.jail_dir.join("sub/inside.txt").exists(),
        "deleting a link keeps its target"
    );
    jail.delete("/renamed").await.unwrap();
    assert!(jail.stat("/renamed").await.unwrap().is_none());
    assert!(jail.delete("/").await.is_err());
    let small = DirJail::new(&s.jail_dir).unwrap().with_max_read(3);
    assert!(matches!(
        small.read("/sub/inside.txt").await,
        Err(VfsError::TooLarge { .. })
    ));
    assert!(DirJail::new(s.jail_dir.join("sub/inside.txt")).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_over_the_jail_never_escape() {
    use agentloop_tools::{FsTool, MemoryTool};
    use serde_json::json;
    use std::sync::Arc;

    let s = setup();
    std::fs::create_dir_all(s.jail_dir.join("memories")).unwrap();
    symlink("../../outside", s.jail_dir.join("memories/out")).unwrap();
    let jail: Arc<dyn Vfs> = Arc::new(DirJail::new(&s.jail_dir).unwrap());
    let fs = FsTool::new(jail.clone());
    let memory = MemoryTool::new(jail);
    let before = snapshot(&s.base, &s.jail_dir);
    let mut paths = hostile_paths(&s);
    paths.extend(
        [
            "/memories/out/secret.txt",
            "/memories/out",
            "/memories/../outside/secret.txt",
        ]
        .map(String::from),
    );
    for path in &paths {
        let mp = if path.starts_with("/memories") {
            path.clone()
        } else {
            format!("/memories/{path}")
        };
        let inputs = [
            (true, json!({"command": "view", "path": path})),
            (
                true,
                json!({"command": "create", "path": path, "file_text": "PWNED"}),
            ),
            (
                true,
                json!({"command": "str_replace", "path": path, "old_str": "SECRET", "new_str": "PWNED"}),
            ),
            (
                true,
                json!({"command": "insert", "path": path, "insert_line": 0, "insert_text": "PWNED"}),
            ),
            (true, json!({"command": "delete", "path": path})),
            (
                true,
                json!({"command": "rename", "path": path, "new_path": "/moved"}),
            ),
            (
                true,
                json!({"command": "grep", "pattern": "SECRET", "path": path}),
            ),
            (
                true,
                json!({"command": "glob", "pattern": "**", "path": path}),
            ),
            (false, json!({"command": "view", "path": mp})),
            (
                false,
                json!({"command": "create", "path": mp, "file_text": "PWNED"}),
            ),
            (
                false,
                json!({"command": "str_replace", "path": mp, "old_str": "SECRET", "new_str": "PWNED"}),
            ),
            (false, json!({"command": "delete", "path": mp})),
            (
                false,
                json!({"command": "rename", "old_path": mp, "new_path": "/memories/moved"}),
            ),
        ];
        for (is_fs, input) in inputs {
            let r = if is_fs {
                fs.run(input.clone(), &Default::default()).await
            } else {
                memory.run(input.clone()).await
            };
            assert!(!r.content.contains(SECRET), "{input} leaked: {}", r.content);
        }
    }
    let grep = fs
        .run(
            json!({"command": "grep", "pattern": "SECRET"}),
            &Default::default(),
        )
        .await;
    assert!(!grep.content.contains(SECRET), "{}", grep.content);
    assert_eq!(
        before,
        snapshot(&s.base, &s.jail_dir),
        "something outside the jail changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_files_are_not_read() {
    let s = setup();
    let fifo = s.jail_dir.join("sub/fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|st| st.success()) {
        return;
    }
    let jail = DirJail::new(&s.jail_dir).unwrap();
    assert!(matches!(
        jail.read("/sub/fifo").await,
        Err(VfsError::PermissionDenied(_))
    ));
    assert!(matches!(
        jail.write("/sub/fifo", b"x").await,
        Err(VfsError::PermissionDenied(_))
    ));
    let names: Vec<String> = jail
        .list("/sub")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["inside.txt"]);
}
