//! What the tool hands the launcher (a [`LaunchSpec`] as one JSON argument)
//! and what the launcher writes back on its stdout: frames of one tag byte,
//! a little-endian `u32` length and the payload.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The argument that turns a binary into the sandbox launcher; the spec
/// follows it as the next argument.
pub const LAUNCHER_ARG: &str = "__agentloop-shell-launcher";

/// The argument that turns the binary into the command's PID 1, which the
/// launcher starts inside the namespaces; the spec follows it.
pub const INIT_ARG: &str = "__agentloop-shell-init";

/// The argument that turns the binary into the holder of a user namespace
/// whose id map a root launcher writes, to shift the owner of the write
/// roots to the command's host id (see the launcher's `idmap` module).
pub const USERNS_ARG: &str = "__agentloop-shell-userns";

/// A chunk of the command's stdout.
pub(crate) const TAG_STDOUT: u8 = b'o';
/// A chunk of the command's stderr.
pub(crate) const TAG_STDERR: u8 = b'e';
/// The command started: its PID (4 bytes, little-endian) as the caller's
/// PID namespace numbers it.
pub(crate) const TAG_STARTED: u8 = b's';
/// The command ended: a JSON [`LaunchExit`].
pub(crate) const TAG_EXIT: u8 = b'x';
/// The sandbox could not be set up: a JSON [`SandboxError`].
pub(crate) const TAG_FAILURE: u8 = b'f';

/// Everything the launcher needs to run one command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// Given to `/bin/sh -c`.
    pub command: String,
    /// Working folder (absolute, inside a write root).
    pub cwd: PathBuf,
    /// Folders and files the command may read and execute.
    pub read: Vec<PathBuf>,
    /// Folders and files the command may read, write, create and remove in.
    pub write: Vec<PathBuf>,
    /// Whether the command keeps the host's network (else a new, empty
    /// network namespace).
    pub network: bool,
    /// The command's whole environment.
    pub env: Vec<(String, String)>,
    /// Wall time, in milliseconds.
    pub timeout_ms: u64,
    /// Most processes (`RLIMIT_NPROC`, and `pids.max` of the pids cgroup).
    pub max_processes: u64,
    /// Most data memory of one process, in bytes (`RLIMIT_DATA`).
    pub max_memory_bytes: u64,
    /// Largest file the command may write, in bytes (`RLIMIT_FSIZE`).
    pub max_file_bytes: u64,
    /// Most open files of one process (`RLIMIT_NOFILE`).
    pub max_open_files: u64,
    /// Most bytes (allocated blocks) the command may add to the write
    /// roots.
    #[serde(default = "unlimited")]
    pub max_write_bytes: u64,
    /// Most files the command may add to the write roots.
    #[serde(default = "unlimited")]
    pub max_write_files: u64,
    /// Cgroups the launcher joins before anything else, made by the tool:
    /// a pids cgroup (needed when the caller is root, whom `RLIMIT_NPROC`
    /// does not bind) and, where the memory controller is at hand, one
    /// bounding the memory of all the command's processes together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<PathBuf>,
}

fn unlimited() -> u64 {
    u64::MAX
}

/// Why the launcher stopped the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchStop {
    /// The wall time ran out.
    Timeout,
    /// The tool closed the control pipe (cancelled, output limit, gone).
    ControlClosed,
    /// The command wrote more bytes than its quota.
    WriteBytes,
    /// The command made more files than its quota.
    WriteFiles,
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchExit {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// Set when the launcher killed it.
    pub stopped: Option<LaunchStop>,
}

/// What the sandbox could not set up; the command did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SandboxError {
    /// The spec argument is missing or not a spec.
    #[error("the sandbox launcher got no valid spec: {message}")]
    Spec {
        /// What is wrong.
        message: String,
    },
    /// User, PID or network namespaces were refused.
    #[error("the kernel refused the sandbox namespaces ({message}); the command did not run")]
    Namespaces {
        /// The system error.
        message: String,
    },
    /// Landlock is missing or too old.
    #[error("Landlock is unavailable or too old ({message}); the command did not run")]
    Landlock {
        /// The system error.
        message: String,
    },
    /// The seccomp filter could not be built or applied.
    #[error("the seccomp filter could not be applied ({message}); the command did not run")]
    Seccomp {
        /// The system error.
        message: String,
    },
    /// A resource limit could not be set.
    #[error("a resource limit could not be set ({message}); the command did not run")]
    Limits {
        /// The system error.
        message: String,
    },
    /// The command could not be started.
    #[error("the command could not be started: {message}")]
    Spawn {
        /// The system error.
        message: String,
    },
}

/// Encodes one frame.
pub(crate) fn frame(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 5);
    out.push(tag);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Takes one whole frame off the front of `buffer`, if there is one.
pub(crate) fn take_frame(buffer: &mut Vec<u8>) -> Option<(u8, Vec<u8>)> {
    let header = buffer.get(..5)?;
    let length = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
    if buffer.len() < 5 + length {
        return None;
    }
    let tag = header[0];
    let payload = buffer[5..5 + length].to_vec();
    buffer.drain(..5 + length);
    Some((tag, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_wait_for_their_whole_payload() {
        let mut buffer = frame(TAG_STDOUT, b"hello");
        buffer.extend(frame(TAG_EXIT, b"{}"));
        let whole = buffer.len();
        let mut partial = buffer[..whole - 1].to_vec();
        assert_eq!(
            take_frame(&mut partial),
            Some((TAG_STDOUT, b"hello".to_vec()))
        );
        assert_eq!(take_frame(&mut partial), None);
        assert_eq!(
            take_frame(&mut buffer),
            Some((TAG_STDOUT, b"hello".to_vec()))
        );
        assert_eq!(take_frame(&mut buffer), Some((TAG_EXIT, b"{}".to_vec())));
        assert!(buffer.is_empty());
    }
}
