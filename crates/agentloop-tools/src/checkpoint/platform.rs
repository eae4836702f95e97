//! What a checkpoint reads of a file, and makes again, that the platform
//! decides: permission bits, the stamp that tells a changed file, links.
//! On Unix they are the file system's own; elsewhere a file is read-only or
//! not, its stamp is its length and modification time, and a link cannot
//! be made again.

use std::fs::Metadata;
use std::path::Path;

/// Permission bits of `metadata`.
#[cfg(unix)]
pub(crate) fn mode(metadata: &Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
pub(crate) fn mode(metadata: &Metadata) -> u32 {
    if metadata.permissions().readonly() {
        0o444
    } else {
        0o644
    }
}

/// Permissions of bits `mode`, on top of `current`.
#[cfg(unix)]
pub(crate) fn permissions(_current: std::fs::Permissions, mode: u32) -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(mode)
}

#[cfg(not(unix))]
pub(crate) fn permissions(mut current: std::fs::Permissions, mode: u32) -> std::fs::Permissions {
    current.set_readonly(mode & 0o200 == 0);
    current
}

/// Length, modification and change times (seconds, nanoseconds) and
/// inode of `metadata`.
#[cfg(unix)]
pub(crate) fn stamp(metadata: &Metadata) -> [i64; 5] {
    use std::os::unix::fs::MetadataExt;
    [
        metadata.mtime(),
        metadata.mtime_nsec(),
        metadata.ctime(),
        metadata.ctime_nsec(),
        metadata.ino() as i64,
    ]
}

#[cfg(not(unix))]
pub(crate) fn stamp(metadata: &Metadata) -> [i64; 5] {
    let modified = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    [
        modified.as_secs() as i64,
        i64::from(modified.subsec_nanos()),
        0,
        0,
        0,
    ]
}

/// Makes a link at `at` pointing to `target`.
#[cfg(unix)]
pub(crate) fn symlink(target: &str, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

#[cfg(not(unix))]
pub(crate) fn symlink(_target: &str, _at: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "links are made again on Unix only",
    ))
}
