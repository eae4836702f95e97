//! The command's mount namespace: every mount read-only but bind mounts
//! of the write roots, and those `nosuid` and `nodev`.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};

use super::protocol::SandboxError;

/// In the new mount namespace: every mount read-only except bind mounts
/// of the write roots, which are `nosuid` and `nodev` (a setuid file there
/// grants nothing inside). Landlock does not govern `chmod`, `utimes` or
/// extended attributes; a read-only mount refuses them outside the write
/// roots. Mount flags already set (`nosuid`, `nodev`, `noexec`, atime) are
/// kept, as the kernel requires of a user namespace.
pub(super) fn confine(write: &[PathBuf]) -> Result<(), SandboxError> {
    let failed = |what: String, e: nix::Error| SandboxError::Namespaces {
        message: format!("{what}: {e}"),
    };
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| failed("making / private".to_owned(), e))?;
    let roots: Vec<&PathBuf> = write.iter().filter(|p| p.is_dir()).collect();
    for root in &roots {
        mount(
            Some(root.as_path()),
            root.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| failed(format!("binding {}", root.display()), e))?;
    }
    let table =
        std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| SandboxError::Namespaces {
            message: format!("reading mountinfo: {e}"),
        })?;
    for line in table.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(point), Some(options)) = (fields.get(4), fields.get(5)) else {
            continue;
        };
        let point = PathBuf::from(unescape(point));
        let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT;
        flags |= if roots.iter().any(|root| point.starts_with(root)) {
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV
        } else {
            MsFlags::MS_RDONLY
        };
        for option in options.split(',') {
            flags |= match option {
                "nosuid" => MsFlags::MS_NOSUID,
                "nodev" => MsFlags::MS_NODEV,
                "noexec" => MsFlags::MS_NOEXEC,
                "noatime" => MsFlags::MS_NOATIME,
                "nodiratime" => MsFlags::MS_NODIRATIME,
                "relatime" => MsFlags::MS_RELATIME,
                "strictatime" => MsFlags::MS_STRICTATIME,
                "ro" => MsFlags::MS_RDONLY,
                _ => MsFlags::empty(),
            };
        }
        match mount(None::<&str>, &point, None::<&str>, flags, None::<&str>) {
            Ok(()) => {}
            // A mount hidden under another one, or gone: nothing reaches
            // it by path.
            Err(nix::Error::ENOENT) | Err(nix::Error::EACCES) if !Path::new(&point).exists() => {
                continue;
            }
            Err(e) => return Err(failed(format!("remounting {}", point.display()), e)),
        }
    }
    Ok(())
}

/// A mount point as mountinfo writes it (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(code) = field
                .get(i + 1..i + 4)
                .and_then(|digits| u8::from_str_radix(digits, 8).ok())
        {
            out.push(code);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
