//! Runs left behind by an `agentloop acp` that was killed mid-turn. Each
//! agent process holds its runs' leases under a name of its own (host and
//! process id); a session loaded later on the same host releases the
//! leases of a process that no longer exists, so the chat's next prompt
//! recovers the interrupted run at once instead of waiting for its lease
//! to run out. Leases of live processes, and of other hosts, are left to
//! expire as usual.

use std::sync::Arc;

use agentloop_storage::Store;
use agentloop_storage::model::RunStatus;
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

const PREFIX: &str = "acp";

fn host() -> String {
    nix::unistd::gethostname()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The lease owner name of this process's runs.
pub fn owner() -> String {
    format!("{PREFIX}:{}:{}", host(), std::process::id())
}

/// Whether `owner` names an agent process of this host that has exited.
fn is_gone(owner: &str, this_host: &str) -> bool {
    let mut parts = owner.rsplitn(2, ':');
    let (Some(pid), Some(rest)) = (parts.next(), parts.next()) else {
        return false;
    };
    if rest != format!("{PREFIX}:{this_host}") {
        return false;
    }
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    // Signal 0 checks that the process exists without touching it.
    pid > 0 && kill(Pid::from_raw(pid), None) == Err(Errno::ESRCH)
}

/// Releases the leases a gone agent process holds on chat `chat_id`'s
/// runs; returns how many.
pub async fn release_orphaned(store: &Arc<dyn Store>, chat_id: &str) -> Result<usize, String> {
    let this_host = host();
    let runs = store
        .list_runs_in(chat_id, &[RunStatus::Running, RunStatus::Pending])
        .await
        .map_err(|e| e.to_string())?;
    let mut released = 0;
    for run in runs {
        let Some(owner) = run.lease_owner.as_deref() else {
            continue;
        };
        if is_gone(owner, &this_host)
            && store
                .release_lease(&run.id, owner)
                .await
                .map_err(|e| e.to_string())?
        {
            released += 1;
        }
    }
    Ok(released)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn only_exited_processes_of_this_host_are_gone() {
        let host = host();
        assert!(!is_gone(&owner(), &host), "this process is alive");
        assert!(!is_gone(&format!("acp:other-host:{}", i32::MAX), &host));
        assert!(!is_gone("worker-123", &host));
        assert!(!is_gone(&format!("acp:{host}:not-a-pid"), &host));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(is_gone(&format!("acp:{host}:{pid}"), &host));
    }
}
