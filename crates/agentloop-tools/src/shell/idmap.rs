//! What keeps a root caller's command an ordinary user on the host.
//!
//! A command started by root would otherwise make its accesses as host
//! root (its id inside the user namespace maps to the caller's), so every
//! root-only file Landlock lets it read — a key below a toolchain's
//! folder, a `0600` file in the project — would be open to it. When the
//! caller is root the launcher therefore, while still root:
//! - binds each write root again through an **idmapped mount** that shows
//!   the root's owner as [`HOST_ID`], so the command, running as that id,
//!   may write there, and what it creates is stored as the owner's;
//! - hides every folder on the way to a read or write root that an
//!   ordinary user may not search (`/root`, mode `0700`) under a read-only
//!   `tmpfs` that holds only the roots, bound back in place — the rest of
//!   the folder stays out of sight;
//! - then, its mounts made read-only, drops to [`HOST_ID`] (no
//!   supplementary groups) before it makes the user namespace, whose maps
//!   it writes through a copy of `/proc` taken before `/proc` was made
//!   read-only ([`writable_proc`]).
//!
//! An idmapped mount needs a user namespace that carries the mapping: a
//! short-lived child ([`hold_namespace`], this binary started with
//! [`USERNS_ARG`]) makes one, the launcher writes its map and keeps a
//! descriptor of it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
use rustix::mount::{MoveMountFlags, OpenTreeFlags, move_mount, open_tree};

use super::protocol::{SandboxError, USERNS_ARG};

/// The host id (user and group) a root caller's command runs as: one no
/// account uses (above the ranges container managers hand out, below the
/// ids that read as negative).
pub(super) const HOST_ID: u32 = 2_000_000_000;

/// The child that holds a user namespace for its parent to map: it
/// unshares one, says so with one byte on stdout, and lives until its
/// stdin closes.
pub(super) fn hold_namespace() -> ExitCode {
    if unshare(CloneFlags::CLONE_NEWUSER).is_err() {
        return ExitCode::FAILURE;
    }
    let mut out = std::io::stdout();
    if out.write_all(b"1").and_then(|()| out.flush()).is_err() {
        return ExitCode::FAILURE;
    }
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    ExitCode::SUCCESS
}

/// In the launcher's fresh mount namespace, as root: the write roots
/// bound again with their owner shown as [`HOST_ID`], and the folders an
/// ordinary user cannot search on the way to any root hidden (the
/// read-only pass of [`super::mounts::confine`] that follows makes their
/// `tmpfs` read-only).
pub(super) fn shift_to_host_id(
    read: &[PathBuf],
    write: &[PathBuf],
    owners: &Owners,
) -> Result<(), SandboxError> {
    // Each bind: where it goes, whether it is a folder, the mount.
    let mut binds: Vec<(PathBuf, bool, OwnedFd)> = Vec::new();
    for root in write.iter().filter(|p| p.is_dir()) {
        let namespace = owners.namespace_of(root)?;
        let tree = clone_tree(root)?;
        idmap(tree.as_fd(), namespace).map_err(|e| failed(root, "idmapping", &e))?;
        binds.push((root.clone(), true, tree));
    }
    let hidden = unsearchable_tops(read.iter().chain(write));
    for root in read.iter().filter(|p| under_any(p, &hidden)) {
        if binds.iter().any(|(path, ..)| path == root) || !root.exists() {
            continue;
        }
        binds.push((root.clone(), root.is_dir(), clone_tree(root)?));
    }
    for top in &hidden {
        mount(
            Some("tmpfs"),
            top.as_path(),
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("mode=0755,size=1m"),
        )
        .map_err(|e| failed(top, "hiding", &e))?;
    }
    // Parents before children: a root inside another is bound on top.
    binds.sort_by_key(|(path, ..)| path.components().count());
    for (path, folder, tree) in &binds {
        if under_any(path, &hidden) {
            make_mount_point(path, *folder)?;
        }
        move_mount(
            tree.as_fd(),
            "",
            rustix::fs::CWD,
            path.as_path(),
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )
        .map_err(|e| failed(path, "binding", &e))?;
    }
    Ok(())
}

/// For each owner (uid, gid) of a write root, a user namespace that shows
/// it as [`HOST_ID`]. Made before the launcher's mount namespace, whose
/// read-only `/proc` would refuse the maps.
pub(super) struct Owners(BTreeMap<(u32, u32), File>);

impl Owners {
    /// The namespaces for the owners of `write`'s folders.
    pub(super) fn of(write: &[PathBuf]) -> Result<Self, SandboxError> {
        let mut namespaces = BTreeMap::new();
        for root in write.iter().filter(|p| p.is_dir()) {
            if let std::collections::btree_map::Entry::Vacant(slot) = namespaces.entry(owner(root)?)
            {
                let (uid, gid) = *slot.key();
                slot.insert(mapping_namespace(uid, gid)?);
            }
        }
        Ok(Self(namespaces))
    }

    fn namespace_of(&self, root: &Path) -> Result<BorrowedFd<'_>, SandboxError> {
        let key = owner(root)?;
        self.0
            .get(&key)
            .map(AsFd::as_fd)
            .ok_or_else(|| failed(root, "finding the id map of", &"its owner changed"))
    }
}

fn owner(root: &Path) -> Result<(u32, u32), SandboxError> {
    let meta = std::fs::metadata(root).map_err(|e| failed(root, "reading", &e))?;
    Ok((meta.uid(), meta.gid()))
}

/// Gives up root, once the mounts are made: no supplementary groups, then [`HOST_ID`] as group and
/// user (real, effective and saved).
pub(super) fn drop_ids() -> Result<(), SandboxError> {
    let refused = |what: &str, e: nix::Error| SandboxError::Namespaces {
        message: format!("dropping to id {HOST_ID}: {what}: {e}"),
    };
    setgroups(&[]).map_err(|e| refused("setgroups", e))?;
    let gid = Gid::from_raw(HOST_ID);
    setresgid(gid, gid, gid).map_err(|e| refused("setresgid", e))?;
    let uid = Uid::from_raw(HOST_ID);
    setresuid(uid, uid, uid).map_err(|e| refused("setresuid", e))?;
    // Leaving root made the launcher non-dumpable, which gives its /proc
    // files to root: it could not write its user namespace's maps. It is
    // made non-dumpable again once they are written.
    nix::sys::prctl::set_dumpable(true).map_err(|e| refused("PR_SET_DUMPABLE", e))?;
    Ok(())
}

/// A user namespace in which `uid` and `gid` (a write root's owner) are
/// [`HOST_ID`]: an idmapped mount through it shows the owner's files as
/// [`HOST_ID`]'s and stores [`HOST_ID`]'s new files as the owner's.
fn mapping_namespace(uid: u32, gid: u32) -> Result<File, SandboxError> {
    let refused = |what: &str, e: &dyn std::fmt::Display| SandboxError::Namespaces {
        message: format!("the id-mapping namespace: {what}: {e}"),
    };
    let program = std::env::current_exe().map_err(|e| refused("finding this program", &e))?;
    let mut child = Command::new(program)
        .arg(USERNS_ARG)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| refused("starting its holder", &e))?;
    let opened = (|| {
        let mut ready = [0u8; 1];
        if let Some(out) = child.stdout.as_mut() {
            out.read_exact(&mut ready)
                .map_err(|e| refused("its holder", &e))?;
        }
        let proc = PathBuf::from(format!("/proc/{}", child.id()));
        std::fs::write(proc.join("uid_map"), format!("{uid} {HOST_ID} 1"))
            .map_err(|e| refused("uid_map", &e))?;
        std::fs::write(proc.join("gid_map"), format!("{gid} {HOST_ID} 1"))
            .map_err(|e| refused("gid_map", &e))?;
        File::open(proc.join("ns/user")).map_err(|e| refused("opening it", &e))
    })();
    // Closing its stdin ends the holder; the namespace lives on in the
    // descriptor.
    drop(child.stdin.take());
    let _ = child.wait();
    opened
}

/// A detached copy of the `/proc` mount, which the read-only pass does
/// not reach: the launcher writes its user namespace's maps through it
/// (`/proc/self/fd/N/self/uid_map`) once it is no longer root.
pub(super) fn writable_proc() -> Result<OwnedFd, SandboxError> {
    clone_tree(Path::new("/proc"))
}

/// A detached copy of the mount at `path` (that folder only, not the
/// mounts below it).
fn clone_tree(path: &Path) -> Result<OwnedFd, SandboxError> {
    open_tree(
        rustix::fs::CWD,
        path,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )
    .map_err(|e| failed(path, "copying the mount of", &e))
}

/// The topmost folder on the way to each of `roots` that an ordinary user
/// may not search (no execute bit for others), once each.
fn unsearchable_tops<'a>(roots: impl Iterator<Item = &'a PathBuf>) -> Vec<PathBuf> {
    let mut tops: Vec<PathBuf> = Vec::new();
    for root in roots {
        let top = root
            .ancestors()
            .skip(1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .find(|folder| {
                std::fs::metadata(folder).is_ok_and(|m| m.permissions().mode() & 0o001 == 0)
            });
        if let Some(top) = top
            && !tops.iter().any(|known| known == top)
        {
            tops.push(top.to_path_buf());
        }
    }
    tops
}

fn under_any(path: &Path, tops: &[PathBuf]) -> bool {
    tops.iter().any(|top| path.starts_with(top) && path != top)
}

/// The folders (or, for a file, an empty file) a bind is mounted on,
/// made in the hiding `tmpfs`.
fn make_mount_point(path: &Path, folder: bool) -> Result<(), SandboxError> {
    let made = if folder {
        std::fs::create_dir_all(path)
    } else if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).and_then(|()| File::create(path).map(drop))
    } else {
        Ok(())
    };
    made.map_err(|e| failed(path, "making a mount point for", &e))
}

fn failed(path: &Path, what: &str, e: &dyn std::fmt::Display) -> SandboxError {
    SandboxError::Namespaces {
        message: format!("{what} {}: {e}", path.display()),
    }
}

/// `struct mount_attr`, version 0.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Marks the detached mount `tree` as idmapped through `namespace`.
///
/// The one system call here that neither `nix` nor `rustix` wraps
/// (`mount_setattr`, Linux 5.12), hence the crate's only `unsafe`.
#[allow(unsafe_code)]
fn idmap(tree: BorrowedFd<'_>, namespace: BorrowedFd<'_>) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: libc::MOUNT_ATTR_IDMAP,
        attr_clr: 0,
        propagation: 0,
        userns_fd: namespace.as_raw_fd() as u64,
    };
    // SAFETY: every argument is valid for the call's duration: `tree` is
    // an open descriptor, the path is an empty C string (with
    // `AT_EMPTY_PATH`, the descriptor itself is meant), and `attr` is a
    // live `struct mount_attr` whose size is passed with it. The kernel
    // only reads `attr`.
    let done = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
