//! PID 1 of the command's PID namespace: this binary again, started by
//! the launcher with [`INIT_ARG`](super::protocol::INIT_ARG), already
//! inside the namespaces and under the non-root id. It locks itself down
//! and runs `/bin/sh -c COMMAND` as its child, then waits.
//!
//! It ends, and with it every process of the namespace, when the
//! command's shell ends, and as soon as the launcher is gone for any
//! reason: the parent-death signal kills it, and its stdin (the read end
//! of a pipe only the launcher holds open) reports the hang-up. Signals
//! sent from inside the namespace do not reach a PID 1 that set no
//! handler, and it is not dumpable, so the command can neither kill nor
//! debug it.

use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::process::{Command, ExitCode, Stdio};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::domain::landlock_rules;
use super::protocol::{LaunchSpec, SandboxError, TAG_FAILURE, TAG_STARTED, frame};
use super::seccomp;

/// Runs PID 1 for `spec`. Its stdin is a socket to the launcher: it says
/// there whether the command started (or why not), and learns there that
/// the launcher is gone.
pub(super) fn main(spec: &LaunchSpec) -> ExitCode {
    let report = |tag: u8, payload: &[u8]| {
        let launcher = std::io::stdin().as_fd().try_clone_to_owned();
        if let Ok(launcher) = launcher {
            let _ = UnixStream::from(launcher).write_all(&frame(tag, payload));
        }
    };
    let shell = match lock_down(spec).and_then(|()| spawn(spec)) {
        Ok(shell) => shell,
        Err(error) => {
            report(TAG_FAILURE, &serde_json::to_vec(&error).unwrap_or_default());
            return ExitCode::FAILURE;
        }
    };
    report(TAG_STARTED, &[]);
    wait(shell)
}

/// Everything the command inherits: the launcher's death kills this
/// process, only stdin/stdout/stderr stay open, not dumpable, the
/// Landlock domain and the seccomp filters.
fn lock_down(spec: &LaunchSpec) -> Result<(), SandboxError> {
    let limits = |what: &str, e: &dyn std::fmt::Display| SandboxError::Limits {
        message: format!("{what}: {e}"),
    };
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| limits("PR_SET_PDEATHSIG", &e))?;
    // The launcher may have died before the line above: then its socket
    // has already hung up.
    if launcher_gone(0) {
        return Err(limits("launcher", &"gone before the command started"));
    }
    close_inherited_files();
    nix::sys::prctl::set_dumpable(false).map_err(|e| limits("PR_SET_DUMPABLE", &e))?;
    landlock_rules(spec)?;
    seccomp::apply()
}

/// Closes every descriptor but stdin, stdout and stderr.
pub(super) fn close_inherited_files() {
    let open: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .filter(|fd| *fd > 2)
                .collect()
        })
        .unwrap_or_default();
    for fd in open {
        // The listing's own descriptor is among them, already closed.
        let _ = nix::unistd::close(fd);
    }
}

/// Whether stdin (the launcher's socket) has hung up, waiting at most
/// `millis`.
fn launcher_gone(millis: u16) -> bool {
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::from(millis)) {
        Ok(0) | Err(_) => false,
        Ok(_) => fds[0].revents().is_some_and(|r| !r.is_empty()),
    }
}

/// The command's shell, started with an empty signal mask (std keeps the
/// one in force, and the launcher blocked SIGCHLD: a shell that inherits
/// it blocked never wakes from `wait`). SIGCHLD is blocked here only
/// afterwards and read through a signalfd; a child that ended before is
/// reaped by the first round of [`wait`].
fn spawn(spec: &LaunchSpec) -> Result<(Pid, SignalFd), SandboxError> {
    let failed = |e: &dyn std::fmt::Display| SandboxError::Spawn {
        message: e.to_string(),
    };
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None).map_err(|e| failed(&e))?;
    let shell = Command::new("/bin/sh")
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| failed(&e))?;
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&chld), None).map_err(|e| failed(&e))?;
    let signals = SignalFd::with_flags(&chld, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| failed(&e))?;
    Ok((Pid::from_raw(shell.id() as i32), signals))
}

/// Waits for the shell, reaping every orphan the namespace hands to PID 1;
/// returns its exit code (128 + the signal that killed it). Ends at once
/// when the launcher is gone.
fn wait((shell, signals): (Pid, SignalFd)) -> ExitCode {
    let stdin = std::io::stdin();
    loop {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == shell => {
                    return ExitCode::from(code as u8);
                }
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == shell => {
                    return ExitCode::from(128 + signal as u8);
                }
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let mut fds = [
            PollFd::new(signals.as_fd(), PollFlags::POLLIN),
            PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
        ];
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            continue;
        }
        if fds[1].revents().is_some_and(|r| !r.is_empty()) {
            // The launcher is gone: ending here ends the namespace.
            return ExitCode::FAILURE;
        }
        while let Ok(Some(_)) = signals.read_signal() {}
    }
}
