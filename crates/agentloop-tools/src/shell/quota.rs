//! The write quota: how far the command's writes have grown the write
//! roots (the project folder and the temporary folder), in allocated
//! blocks and in files, measured from outside the sandbox.
//!
//! The launcher measures the roots before the command starts and again
//! while it runs, as often as keeps the measuring under a tenth of the
//! time (every 50 ms for a small tree); the first measurement past a
//! limit ends the command. Blocks are counted, not sizes, so sparse
//! files count what they take; files the command's processes hold open
//! after removing them count too.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::protocol::LaunchStop;

/// The shortest and longest pause between two measurements.
const SHORTEST: Duration = Duration::from_millis(50);
const LONGEST: Duration = Duration::from_secs(2);

/// What the write roots hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Usage {
    /// Allocated bytes (`st_blocks` × 512).
    pub bytes: u64,
    /// Files, folders and links (each inode once).
    pub files: u64,
}

/// The command's quota and where it stands.
pub(super) struct Quota {
    roots: Vec<PathBuf>,
    baseline: Usage,
    max_bytes: u64,
    max_files: u64,
    next: Instant,
}

impl Quota {
    /// Measures the roots as they are before the command runs.
    pub(super) fn new(roots: &[PathBuf], max_bytes: u64, max_files: u64) -> Self {
        let roots: Vec<PathBuf> = roots.iter().filter(|p| p.is_dir()).cloned().collect();
        let started = Instant::now();
        let baseline = measure(&roots, &mut HashSet::new());
        Self {
            roots,
            baseline,
            max_bytes,
            max_files,
            next: Instant::now() + pause(started.elapsed()),
        }
    }

    /// When the next measurement is due.
    pub(super) fn due(&self) -> Instant {
        self.next
    }

    /// Measures when due; the limit passed, if one is.
    pub(super) fn check(&mut self) -> Option<LaunchStop> {
        if Instant::now() < self.next {
            return None;
        }
        self.check_now()
    }

    /// Measures now; the limit passed, if one is.
    pub(super) fn check_now(&mut self) -> Option<LaunchStop> {
        let started = Instant::now();
        let mut seen = HashSet::new();
        let mut now = measure(&self.roots, &mut seen);
        let unlinked = open_unlinked(&mut seen);
        now.bytes += unlinked.bytes;
        now.files += unlinked.files;
        self.next = Instant::now() + pause(started.elapsed());
        let grown_bytes = now.bytes.saturating_sub(self.baseline.bytes);
        let grown_files = now.files.saturating_sub(self.baseline.files);
        if grown_bytes > self.max_bytes {
            Some(LaunchStop::WriteBytes)
        } else if grown_files > self.max_files {
            Some(LaunchStop::WriteFiles)
        } else {
            None
        }
    }
}

/// Ten times the last measurement, within bounds.
fn pause(took: Duration) -> Duration {
    (took * 10).clamp(SHORTEST, LONGEST)
}

/// Blocks and inodes below `roots`, each inode counted once (`seen`
/// holds the ones already counted). Symbolic links are counted, never
/// followed.
fn measure(roots: &[PathBuf], seen: &mut HashSet<(u64, u64)>) -> Usage {
    let mut usage = Usage::default();
    let mut folders: Vec<PathBuf> = roots.to_vec();
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if count(&meta, seen, &mut usage) && meta.is_dir() {
                folders.push(entry.path());
            }
        }
    }
    usage
}

/// Adds `meta` to `usage` unless its inode was seen; true when it was new.
fn count(meta: &std::fs::Metadata, seen: &mut HashSet<(u64, u64)>, usage: &mut Usage) -> bool {
    if !seen.insert((meta.dev(), meta.ino())) {
        return false;
    }
    usage.bytes += meta.blocks() * 512;
    usage.files += 1;
    true
}

/// Files removed from every folder but held open by the sandbox's
/// processes (those in this process's PID namespace for children): they
/// keep their blocks until closed.
fn open_unlinked(seen: &mut HashSet<(u64, u64)>) -> Usage {
    let mut usage = Usage::default();
    let Ok(sandbox) = std::fs::read_link("/proc/self/ns/pid_for_children") else {
        return usage;
    };
    // Outside a launcher (no new PID namespace) there is no sandbox.
    if std::fs::read_link("/proc/self/ns/pid").ok().as_ref() == Some(&sandbox) {
        return usage;
    }
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return usage;
    };
    for process in processes.flatten() {
        let dir = process.path();
        let is_pid = process
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        if !is_pid || std::fs::read_link(dir.join("ns/pid")).ok().as_ref() != Some(&sandbox) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(meta) = std::fs::metadata(fd.path())
                && meta.is_file()
                && meta.nlink() == 0
            {
                count(&meta, seen, &mut usage);
            }
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_files_are_counted_once_and_growth_past_a_limit_stops() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a"), vec![1u8; 64 * 1024]).unwrap();
        std::fs::hard_link(root.join("sub/a"), root.join("b")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
        let usage = measure(std::slice::from_ref(&root), &mut HashSet::new());
        assert_eq!(usage.files, 3, "sub, a (once, with its hard link), link");
        assert!(usage.bytes >= 64 * 1024, "{usage:?}");

        let mut quota = Quota::new(std::slice::from_ref(&root), 256 * 1024, 10);
        quota.next = Instant::now();
        assert_eq!(quota.check(), None);
        std::fs::write(root.join("big"), vec![1u8; 512 * 1024]).unwrap();
        quota.next = Instant::now();
        assert_eq!(quota.check(), Some(LaunchStop::WriteBytes));
        std::fs::remove_file(root.join("big")).unwrap();
        for i in 0..11 {
            std::fs::write(root.join(format!("f{i}")), "").unwrap();
        }
        quota.next = Instant::now();
        assert_eq!(quota.check(), Some(LaunchStop::WriteFiles));
    }
}
