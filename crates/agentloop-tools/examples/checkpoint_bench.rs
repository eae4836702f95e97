//! Benchmark of file checkpoints on a 10,000-file project (100 folders of
//! 100 files of 1–4 KiB): the first checkpoint (every file read and
//! stored), a checkpoint when nothing changed, and one after 10 and after
//! 1,000 files changed; then a restore of 1,000 files. The floor beside
//! it: `git status` on the same folder (its index as fresh as it gets),
//! the same walk with its stat cache, measured in the same run. Prints one
//! markdown table row per figure; `cargo xtask bench` runs it in release
//! mode.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentloop_tools::checkpoint::FileCheckpoints;

const FOLDERS: usize = 100;
const FILES: usize = 100;
const UNCHANGED_SAMPLES: usize = 50;

fn make_project(root: &Path) -> std::io::Result<()> {
    for folder in 0..FOLDERS {
        let dir = root.join(format!("module{folder:03}"));
        std::fs::create_dir_all(&dir)?;
        for file in 0..FILES {
            let line = format!("fn item_{folder}_{file}() -> u32 {{ {file} }}\n");
            let size = 1024 + (folder * FILES + file) % 3072;
            std::fs::write(
                dir.join(format!("f{file:03}.rs")),
                line.repeat(size / line.len()),
            )?;
        }
    }
    Ok(())
}

/// Appends a line to `count` files spread over the project.
fn change(root: &Path, count: usize, round: usize) -> std::io::Result<()> {
    for i in 0..count {
        let n = i * (FOLDERS * FILES / count);
        let path = root.join(format!("module{:03}/f{:03}.rs", n / FILES, n % FILES));
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(&format!("// round {round}\n"));
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// Runs git with `args` in `root`; `None` when git is not there or fails.
fn git(root: &Path, args: &[&str]) -> Option<()> {
    Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@localhost")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@localhost")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()
        .filter(|s| s.success())
        .map(|_| ())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

fn p90(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples
        .get(samples.len() * 9 / 10)
        .copied()
        .unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("project");
    make_project(&root)?;
    let store = FileCheckpoints::open(dir.path().join("store"))?;

    let start = Instant::now();
    let first = store.take(&root)?;
    let first_took = start.elapsed();
    assert_eq!(first.entries, FOLDERS * FILES + FOLDERS);

    // `git status` beside each sample, so both see the same load.
    let has_git = git(&root, &["init", "-q"])
        .and_then(|()| git(&root, &["add", "-A"]))
        .and_then(|()| git(&root, &["commit", "-q", "-m", "bench"]))
        .and_then(|()| git(&root, &["status", "--porcelain"]))
        .is_some();
    let mut unchanged = Vec::with_capacity(UNCHANGED_SAMPLES);
    let mut status = Vec::with_capacity(UNCHANGED_SAMPLES);
    for _ in 0..UNCHANGED_SAMPLES {
        let start = Instant::now();
        let again = store.take(&root)?;
        unchanged.push(start.elapsed());
        assert_eq!((again.read, &again.id), (0, &first.id));
        if has_git {
            let start = Instant::now();
            git(&root, &["status", "--porcelain"]).ok_or("git status failed")?;
            status.push(start.elapsed());
        }
    }
    let unchanged_p90 = p90(unchanged.clone());
    let unchanged = median(unchanged);

    change(&root, 10, 1)?;
    let start = Instant::now();
    let ten = store.take(&root)?;
    let ten_took = start.elapsed();
    assert_eq!(ten.read, 10);

    change(&root, 1000, 2)?;
    let start = Instant::now();
    let thousand = store.take(&root)?;
    let thousand_took = start.elapsed();
    assert_eq!(thousand.read, 1000);

    let start = Instant::now();
    let restored = store.restore(&ten.id, None)?;
    let restore_took = start.elapsed();
    assert_eq!(restored.written.len(), 1000);

    let files = FOLDERS * FILES;
    println!(
        "| checkpoints, {files} files | first checkpoint (all read and stored) | {} |",
        ms(first_took)
    );
    println!(
        "| checkpoints, {files} files | nothing changed, median of {UNCHANGED_SAMPLES} | {} |",
        ms(unchanged)
    );
    println!(
        "| checkpoints, {files} files | nothing changed, p90 | {} |",
        ms(unchanged_p90)
    );
    if has_git {
        let status = median(status);
        println!(
            "| checkpoints, {files} files | floor: `git status`, median of {UNCHANGED_SAMPLES} | {} |",
            ms(status)
        );
        println!(
            "| checkpoints, {files} files | nothing changed ÷ `git status` | {:.2} |",
            unchanged.as_secs_f64() / status.as_secs_f64()
        );
    } else {
        println!("| checkpoints, {files} files | floor: `git status` | git not found |");
    }
    println!(
        "| checkpoints, {files} files | 10 files changed | {} |",
        ms(ten_took)
    );
    println!(
        "| checkpoints, {files} files | 1,000 files changed | {} |",
        ms(thousand_took)
    );
    println!(
        "| checkpoints, {files} files | restore of 1,000 files | {} |",
        ms(restore_took)
    );
    Ok(())
}
