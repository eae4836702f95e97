//! Whether the process that holds a lease is gone, as far as this machine
//! can tell.
//!
//! A server's default instance id ends with the identity of its process on
//! its kernel (`@BOOT_ID:PID_NAMESPACE:PID:START_TIME`). A server started
//! again on the same machine after a crash reads that identity off the
//! leases its predecessor left: when the same kernel and PID namespace
//! have no process with that pid and start time, the holder is gone, and
//! its runs are taken over at once rather than when their leases expire.
//! A lease held from another machine, container or PID namespace is
//! never judged: it is waited out.

use std::path::Path;

/// The identity of this process on this kernel, to append to an
/// instance id; `None` where `/proc` does not tell.
pub fn this_process() -> Option<String> {
    let pid = std::process::id();
    let start = start_time(pid)?;
    Some(format!(
        "@{}:{}:{pid}:{start}",
        boot_id()?,
        pid_namespace()?
    ))
}

/// Whether the holder named by `owner` (an instance id) is a process of
/// this kernel and PID namespace that no longer runs. `false` whenever
/// that cannot be told.
pub fn is_gone(owner: &str) -> bool {
    let Some((_, identity)) = owner.rsplit_once('@') else {
        return false;
    };
    let mut parts = identity.split(':');
    let (Some(boot), Some(namespace), Some(pid), Some(start), None) = (
        parts.next(),
        parts.next(),
        parts.next().and_then(|p| p.parse::<u32>().ok()),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    if Some(boot) != boot_id().as_deref() || Some(namespace) != pid_namespace().as_deref() {
        return false;
    }
    match start_time(pid) {
        Some(now) => now != start,
        // No such process, if /proc says so at all.
        None => Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists(),
    }
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_owned())
}

/// The inode of this process's PID namespace (`pid:[N]` → `N`).
fn pid_namespace() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let link = link.to_string_lossy();
    let inode = link.strip_prefix("pid:[")?.strip_suffix(']')?;
    Some(inode.to_owned())
}

/// A process's start time in clock ticks since boot (the 22nd field of
/// `/proc/PID/stat`, counted after the command name, which may hold
/// spaces and parentheses).
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn this_process_is_not_gone_and_a_finished_one_is() {
        let Some(me) = this_process() else {
            return;
        };
        assert!(!is_gone(&format!("instance-1{me}")));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid);
        child.wait().unwrap();
        let (boot, namespace) = (boot_id().unwrap(), pid_namespace().unwrap());
        let start = start.unwrap_or_else(|| "1".to_owned());
        assert!(is_gone(&format!("x@{boot}:{namespace}:{pid}:{start}")));
        // A live pid with another start time is another process.
        let pid = std::process::id();
        assert!(is_gone(&format!("x@{boot}:{namespace}:{pid}:0")));
    }

    #[test]
    fn holders_of_other_machines_and_namespaces_or_unnamed_are_never_gone() {
        let (boot, namespace) = (boot_id().unwrap(), pid_namespace().unwrap());
        assert!(!is_gone("instance-without-identity"));
        assert!(!is_gone(&format!("x@other-boot:{namespace}:4000000:1")));
        assert!(!is_gone(&format!("x@{boot}:1:4000000:1")));
        assert!(!is_gone("x@a:b:not-a-pid:1"));
    }
}
