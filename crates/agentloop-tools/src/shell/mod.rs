//! `shell`: runs a command in a Linux sandbox, in a working folder inside
//! the project folder, and streams its output.
//!
//! # How a call runs
//!
//! The tool never forks a sandboxed child from its own (multi-threaded)
//! process. It starts a **launcher**: a binary that, invoked with
//! [`LAUNCHER_ARG`] and a JSON [`LaunchSpec`], calls [`launcher_main`]
//! (the `agentloop` binary does this first thing in `main`; the crate's
//! own `agentloop-shell-launcher` bin target does nothing else). The
//! launcher is a fresh, single-threaded process: it enters new user, PID
//! and network namespaces, sets rlimits, Landlock and seccomp on itself,
//! and starts `/bin/sh -c COMMAND` under a shell that is PID 1 of the new
//! PID namespace (see
//! [`launcher`] for the steps). It relays the command's stdout and stderr
//! to the tool as frames and ends with the exit status. The command is
//! given as one string to `/bin/sh -c`, so pipes, `&&` and redirections
//! work as in a terminal.
//!
//! Killing PID 1 of a PID namespace kills every process in it, so when the
//! wall time runs out, the call is cancelled (the run's cancel token, or
//! the tool's stream dropped: the tool closes the launcher's stdin), or the
//! output exceeds its limit, the whole tree dies at once, including
//! processes that called `setsid`, ignore `SIGTERM` or were started with
//! `nohup … &`. When the command's shell exits on its own, its detached
//! descendants die with the namespace too: nothing outlives the call.
//!
//! # The sandbox
//!
//! - **Files** (Landlock, filesystem rights of ABI 3 required): read and
//!   write below the project folder and a private temporary folder (the
//!   command's `HOME` and `TMPDIR`, removed after the call); read and
//!   execute below [`policy::SYSTEM_READ`], the toolchains of
//!   [`policy::toolchain_read`] and the configured extra read paths;
//!   nothing else. Symlinks and `/proc/*/root` paths are checked as the
//!   files they lead to; hard links to files outside cannot be made.
//!   Landlock does not cover `stat`, `readlink` or path walking: the
//!   command can learn that a path exists, not read it. Nor does it cover
//!   `chmod`, `utimes` or extended attributes: in the command's own mount
//!   namespace every mount is read-only except bind mounts of the write
//!   roots, which refuses those outside.
//! - **Processes**: new user namespace (the caller's ids mapped to one
//!   non-root id, so the command holds no capability), new PID namespace,
//!   `no_new_privs` (setuid binaries do not gain privileges), not dumpable
//!   launcher, Landlock signal scoping (ABI 6) when the kernel has it.
//! - **Network**: a new, empty network namespace (no interface but a
//!   down loopback) unless [`ShellConfig::with_network`] allows it.
//! - **System calls**: the seccomp filter of [`launcher::DENIED`], plus
//!   namespace flags on `clone`, `socket(AF_UNIX, …)` (a named socket, a
//!   database's say, is reached by path and Landlock does not check
//!   connect; `socketpair` works), `clone3` (so libc uses `clone`) and
//!   `TIOCSTI`.
//! - **Limits**: wall time, output size, processes (`RLIMIT_NPROC`; a pids
//!   cgroup when the caller is root, whom that rlimit does not bind), data
//!   memory per process (and of all processes together where a memory
//!   cgroup can be made), file size, open files.
//! - **Environment**: only `PATH`, `HOME`, `TMPDIR`, `TERM`, `LANG`, the
//!   toolchain homes, [`policy::PASSED_ENV`] and the variables named with
//!   [`ShellConfig::with_env`]; a name that looks like a secret
//!   ([`policy::is_secret_name`]) is refused.
//!
//! When the kernel lacks a piece (no Landlock, namespaces refused, no
//! seccomp) the call fails with the [`SandboxError`] that says which; the
//! command never runs unsandboxed. Known limits: `/proc` lists the host's
//! processes and their command lines; programs that need named Unix
//! sockets of their own (a test starting a server on one) fail.

mod config;
mod domain;
mod idmap;
mod init;
mod kept;
pub mod launcher;
mod mounts;
pub mod policy;
pub mod protocol;
mod quota;
pub mod seccomp;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentloop_types::{
    ApprovalPolicy, BlockCategory, CancellationToken, RenderingBlockGroup, RenderingContentBlock,
    Tool, ToolContext, ToolDefinition, ToolOutput, ToolResult, ToolStream, ToolStreamEvent,
    parse_input,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::schema::{definition_of, shared_input_schema};
use kept::Kept;

pub use config::{Launcher, ShellConfig, ShellConfigError, ShellLimits};
pub use launcher::{is_launcher_invocation, launcher_main};
pub use protocol::{LAUNCHER_ARG, LaunchExit, LaunchSpec, LaunchStop, SandboxError};

const DESCRIPTION: &str = "Run a shell command (`/bin/sh -c`) in a sandbox, in a folder of the project.
The command can read and write the project folder and a private temporary folder ($HOME, $TMPDIR), \
and read system programs, libraries and toolchains; nothing else. There is no network unless the \
operator allowed it. The result gives the exit code, whether the command was stopped (time or output \
limit), how long it ran, and stdout and stderr (the middle of long output is cut and says so). \
Processes the command leaves behind are killed when it ends.";

/// The shell tool.
pub struct ShellTool {
    config: ShellConfig,
}

impl ShellTool {
    /// A shell tool with this configuration.
    pub fn new(config: ShellConfig) -> Self {
        Self { config }
    }

    /// The configuration.
    pub fn config(&self) -> &ShellConfig {
        &self.config
    }
}

/// Input of the shell tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellInput {
    /// The command, run by `/bin/sh -c`.
    pub command: String,
    /// Working folder, relative to the project folder (default: the
    /// project folder).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Wall time in seconds (at most the configured limit).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl Tool for ShellTool {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_input_schema::<ShellInput>())
    }

    fn definition(&self) -> ToolDefinition {
        definition_of::<ShellInput>(self)
    }

    /// A command can do anything the sandbox allows: every call is asked.
    fn approval(&self) -> ApprovalPolicy {
        ApprovalPolicy::Always
    }

    fn may_write(&self, _input: &Value) -> bool {
        true
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        let started = match start(&self.config, input, context.cancel) {
            Ok(running) => running,
            Err(result) => return agentloop_types::single_result(async move { result }),
        };
        Box::pin(futures::stream::unfold(started, |mut running| async move {
            let output = running.next().await?;
            Some((output, running))
        }))
    }
}

/// Why the tool stopped a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    Cancelled,
    OutputLimit,
    WriteBytes,
    WriteFiles,
}

/// How often progress is reported at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);
/// The live view: the end of the output so far.
const LIVE_BYTES: usize = 4096;
/// Time the launcher gets past the wall time before the tool kills it.
const LAUNCHER_GRACE: Duration = Duration::from_secs(5);

fn start(
    config: &ShellConfig,
    input: Value,
    cancel: CancellationToken,
) -> Result<Running, ToolResult> {
    let input: ShellInput = parse_input(input)?;
    if input.command.trim().is_empty() {
        return Err(ToolResult::error("Invalid input: the command is empty"));
    }
    let cwd = working_folder(&config.root, input.cwd.as_deref()).map_err(ToolResult::error)?;
    let timeout = input
        .timeout_secs
        .map(Duration::from_secs)
        .map_or(config.limits.timeout, |t| t.min(config.limits.timeout));
    let temp = TempFolder::new().map_err(|e| {
        ToolResult::error(format!("cannot make the command's temporary folder: {e}"))
    })?;
    let mut cgroups = Vec::new();
    if nix::unistd::geteuid().is_root() {
        cgroups.push(Cgroup::pids(config.limits.max_processes).map_err(ToolResult::error)?);
        // Best effort: each process's data memory is bounded by its rlimit
        // either way.
        if let Some(memory) = Cgroup::memory(config.limits.max_total_memory_bytes) {
            cgroups.push(memory);
        }
    }
    let mut write = vec![config.root.clone(), temp.path.clone()];
    write.extend(policy::DEVICE_WRITE.iter().map(PathBuf::from));
    let spec = LaunchSpec {
        command: input.command.clone(),
        cwd: cwd.clone(),
        read: config.read_paths(),
        write,
        network: config.network,
        env: config.environment(&temp.path),
        timeout_ms: timeout.as_millis() as u64,
        max_processes: config.limits.max_processes,
        max_memory_bytes: config.limits.max_memory_bytes,
        max_file_bytes: config.limits.max_file_bytes,
        max_open_files: config.limits.max_open_files,
        max_write_bytes: config.limits.max_write_bytes,
        max_write_files: config.limits.max_write_files,
        cgroups: cgroups.iter().map(|c| c.path.clone()).collect(),
    };
    let spec_json = serde_json::to_string(&spec)
        .map_err(|e| ToolResult::error(format!("cannot encode the launch spec: {e}")))?;
    let mut child = tokio::process::Command::new(&config.launcher.program)
        .args(&config.launcher.args)
        .arg(spec_json)
        .env_clear()
        .current_dir(&config.root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            ToolResult::error(format!(
                "cannot start the sandbox launcher {}: {e}",
                config.launcher.program.display()
            ))
        })?;
    let (Some(control), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ToolResult::error("the sandbox launcher has no pipes"));
    };
    let now = Instant::now();
    let folder = cwd
        .strip_prefix(&config.root)
        .map(|p| format!("./{}", p.display()))
        .unwrap_or_else(|_| cwd.display().to_string());
    Ok(Running {
        child,
        control: Some(control),
        stdout,
        frames: Vec::new(),
        eof: false,
        stdout_kept: Kept::new(config.limits.kept_output_bytes),
        stderr_kept: Kept::new(config.limits.kept_output_bytes),
        live: VecDeque::new(),
        total: 0,
        dirty: false,
        last_progress: now,
        started: now,
        timeout,
        hard_deadline: tokio::time::Instant::from_std(now + timeout + LAUNCHER_GRACE),
        launcher_killed: false,
        command_pid: None,
        cancel,
        stop: None,
        exit: None,
        failure: None,
        max_output: config.limits.max_output_bytes,
        max_write_bytes: config.limits.max_write_bytes,
        max_write_files: config.limits.max_write_files,
        command: input.command,
        folder,
        finished: false,
        _cgroups: cgroups,
        _temp: temp,
    })
}

/// The working folder: `cwd` below `root`, which it may not leave.
fn working_folder(root: &Path, cwd: Option<&str>) -> Result<PathBuf, String> {
    let Some(cwd) = cwd.filter(|c| !c.is_empty()) else {
        return Ok(root.to_path_buf());
    };
    let joined = root.join(cwd.trim_start_matches('/'));
    let canonical = joined
        .canonicalize()
        .map_err(|e| format!("Invalid input: working folder {cwd:?}: {e}"))?;
    if !canonical.starts_with(root) {
        return Err(format!(
            "Invalid input: working folder {cwd:?} is outside the project folder"
        ));
    }
    if !canonical.is_dir() {
        return Err(format!(
            "Invalid input: working folder {cwd:?} is not a folder"
        ));
    }
    Ok(canonical)
}

/// A call in flight.
struct Running {
    child: Child,
    /// The launcher's stdin: closing it stops the command.
    control: Option<ChildStdin>,
    stdout: ChildStdout,
    frames: Vec<u8>,
    eof: bool,
    stdout_kept: Kept,
    stderr_kept: Kept,
    live: VecDeque<u8>,
    total: u64,
    dirty: bool,
    last_progress: Instant,
    started: Instant,
    timeout: Duration,
    hard_deadline: tokio::time::Instant,
    launcher_killed: bool,
    /// The command's PID 1, once the launcher has said it.
    command_pid: Option<i32>,
    cancel: CancellationToken,
    stop: Option<Stop>,
    exit: Option<LaunchExit>,
    failure: Option<SandboxError>,
    max_output: u64,
    max_write_bytes: u64,
    max_write_files: u64,
    command: String,
    folder: String,
    finished: bool,
    // Dropped after the child: the cgroups can go once the launcher is gone.
    _cgroups: Vec<Cgroup>,
    _temp: TempFolder,
}

impl Running {
    async fn next(&mut self) -> Option<ToolOutput> {
        if self.finished {
            return None;
        }
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            while let Some((tag, payload)) = protocol::take_frame(&mut self.frames) {
                self.take(tag, payload);
            }
            if self.total > self.max_output && self.stop.is_none() {
                self.stop = Some(Stop::OutputLimit);
                self.control = None;
            }
            if self.eof && self.dirty {
                // The live view ends with the last output.
                self.dirty = false;
                return Some(ToolOutput::Event(self.progress()));
            }
            if self.eof {
                let _ = self.child.wait().await;
                self.finished = true;
                return Some(ToolOutput::Done(self.result()));
            }
            if self.dirty && self.last_progress.elapsed() >= PROGRESS_EVERY {
                self.dirty = false;
                self.last_progress = Instant::now();
                return Some(ToolOutput::Event(self.progress()));
            }
            let tick = tokio::time::Instant::from_std(self.last_progress + PROGRESS_EVERY);
            let watching_cancel = self.control.is_some();
            tokio::select! {
                read = self.stdout.read(&mut chunk) => match read {
                    Ok(0) | Err(_) => self.eof = true,
                    Ok(n) => self.frames.extend_from_slice(&chunk[..n]),
                },
                _ = self.cancel.cancelled(), if watching_cancel => {
                    self.stop.get_or_insert(Stop::Cancelled);
                    self.control = None;
                }
                _ = tokio::time::sleep_until(self.hard_deadline), if !self.launcher_killed => {
                    // The launcher missed its own deadline: kill the
                    // command's PID 1 (and with it the namespace) from
                    // here, then the launcher.
                    if let Some(pid) = self.command_pid {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(pid),
                            nix::sys::signal::Signal::SIGKILL,
                        );
                    }
                    let _ = self.child.start_kill();
                    self.launcher_killed = true;
                    self.stop.get_or_insert(Stop::Timeout);
                }
                _ = tokio::time::sleep_until(tick), if self.dirty => {}
            }
        }
    }

    fn take(&mut self, tag: u8, payload: Vec<u8>) {
        match tag {
            protocol::TAG_STDOUT | protocol::TAG_STDERR => {
                self.total += payload.len() as u64;
                if tag == protocol::TAG_STDOUT {
                    self.stdout_kept.push(&payload);
                } else {
                    self.stderr_kept.push(&payload);
                }
                self.live.extend(payload.iter());
                let excess = self.live.len().saturating_sub(LIVE_BYTES);
                self.live.drain(..excess);
                self.dirty = true;
            }
            protocol::TAG_STARTED => {
                if let Ok(bytes) = <[u8; 4]>::try_from(payload.as_slice()) {
                    self.command_pid = Some(i32::from_le_bytes(bytes));
                }
            }
            protocol::TAG_EXIT => {
                self.exit = serde_json::from_slice(&payload).ok();
                let stop = match self.exit.as_ref().and_then(|e| e.stopped) {
                    Some(LaunchStop::Timeout) => Some(Stop::Timeout),
                    Some(LaunchStop::WriteBytes) => Some(Stop::WriteBytes),
                    Some(LaunchStop::WriteFiles) => Some(Stop::WriteFiles),
                    Some(LaunchStop::ControlClosed) | None => None,
                };
                if let Some(stop) = stop {
                    self.stop.get_or_insert(stop);
                }
            }
            protocol::TAG_FAILURE => {
                self.failure =
                    Some(
                        serde_json::from_slice(&payload).unwrap_or_else(|e| SandboxError::Spec {
                            message: format!("unreadable failure report: {e}"),
                        }),
                    );
            }
            _ => {}
        }
    }

    fn progress(&self) -> ToolStreamEvent {
        let (front, back) = self.live.as_slices();
        let mut bytes = front.to_vec();
        bytes.extend_from_slice(back);
        let text = format!("$ {}\n{}", self.command, String::from_utf8_lossy(&bytes));
        ToolStreamEvent::GroupsUpdate {
            groups: vec![RenderingBlockGroup {
                category: BlockCategory::Text,
                blocks: vec![RenderingContentBlock::Text { text }],
                is_tool_generated: true,
            }],
        }
    }

    fn result(&self) -> ToolResult {
        if let Some(failure) = &self.failure {
            return ToolResult::error(format!("sandbox error: {failure}"));
        }
        let duration = self.started.elapsed();
        let mut text = String::new();
        let ok = match (&self.exit, self.stop) {
            (_, Some(stop)) => {
                let why = match stop {
                    Stop::Timeout => format!("timed out after {}s", self.timeout.as_secs_f64()),
                    Stop::Cancelled => "cancelled".to_owned(),
                    Stop::OutputLimit => {
                        format!("output passed {} bytes", self.max_output)
                    }
                    Stop::WriteBytes => format!(
                        "write quota: the command added more than {} bytes to the project \
                         and temporary folders",
                        self.max_write_bytes
                    ),
                    Stop::WriteFiles => format!(
                        "file quota: the command added more than {} files to the project \
                         and temporary folders",
                        self.max_write_files
                    ),
                };
                text.push_str(&format!(
                    "stopped: {why}; every process of the command was killed\n"
                ));
                false
            }
            (Some(exit), None) => {
                match (exit.code, exit.signal) {
                    (Some(code), _) => text.push_str(&format!("exit code: {code}\n")),
                    (None, Some(signal)) => text.push_str(&format!("killed by signal {signal}\n")),
                    (None, None) => text.push_str("exit status unknown\n"),
                }
                exit.code == Some(0)
            }
            (None, None) => {
                text.push_str("stopped: the sandbox launcher ended without a status\n");
                false
            }
        };
        text.push_str(&format!(
            "duration: {:.3}s\nfolder: {}\n",
            duration.as_secs_f64(),
            self.folder
        ));
        for (name, kept) in [("stdout", &self.stdout_kept), ("stderr", &self.stderr_kept)] {
            text.push_str(&kept.render(name));
        }
        if ok {
            ToolResult::ok(text)
        } else {
            ToolResult::error(text)
        }
    }
}

static SERIAL: AtomicU64 = AtomicU64::new(0);

/// A unique name for this process's `n`th folder.
fn unique_name(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    )
}

/// Removes what calls of processes that are gone left in `base` (a
/// process killed mid-call cannot clean up after itself): entries named
/// `agentloop-shell-PID-…` whose PID is not running. Folders are removed
/// with their contents when `recursive`, else only when empty (cgroups).
fn sweep_stale(base: &Path, recursive: bool) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("agentloop-shell-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let _ = if recursive {
            std::fs::remove_dir_all(entry.path())
        } else {
            std::fs::remove_dir(entry.path())
        };
    }
}

/// The command's private temporary folder, removed with its contents.
struct TempFolder {
    path: PathBuf,
}

impl TempFolder {
    fn new() -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        sweep_stale(&std::env::temp_dir(), true);
        let path = std::env::temp_dir().join(unique_name("agentloop-shell"));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self { path })
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A cgroup holding the call's processes, removed when the call ends.
struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// A pids cgroup (v1 `pids` hierarchy or v2 with the `pids`
    /// controller) allowing `max` tasks.
    fn pids(max: u64) -> Result<Self, String> {
        let unified = Path::new("/sys/fs/cgroup");
        let v1 = unified.join("pids");
        let base = if v1.join("cgroup.procs").exists() {
            v1.join(own_cgroup("pids"))
        } else if std::fs::read_to_string(unified.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"))
        {
            unified.to_path_buf()
        } else {
            return Err(
                "sandbox error: running as root, the process limit needs a pids cgroup \
                 (RLIMIT_NPROC does not bind root) and none is available; the command did not run"
                    .to_owned(),
            );
        };
        Self::make(&base, "pids.max", max).map_err(|e| {
            format!(
                "sandbox error: cannot make a pids cgroup in {}: {e}; the command did not run",
                base.display()
            )
        })
    }

    /// A v1 memory cgroup below this process's own, holding all the
    /// command's processes to `max` bytes together; None where there is
    /// none to be had.
    fn memory(max: u64) -> Option<Self> {
        let v1 = Path::new("/sys/fs/cgroup/memory");
        if !v1.join("cgroup.procs").exists() {
            return None;
        }
        Self::make(&v1.join(own_cgroup("memory")), "memory.limit_in_bytes", max).ok()
    }

    fn make(base: &Path, limit_file: &str, max: u64) -> std::io::Result<Self> {
        sweep_stale(base, false);
        let path = base.join(unique_name("agentloop-shell"));
        std::fs::create_dir(&path)?;
        let cgroup = Self { path };
        std::fs::write(cgroup.path.join(limit_file), max.to_string())?;
        Ok(cgroup)
    }
}

/// This process's cgroup in a v1 hierarchy (`/proc/self/cgroup`),
/// relative; empty for the root.
fn own_cgroup(controller: &str) -> PathBuf {
    let table = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    table
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ':');
            fields.next();
            fields.next().zip(fields.next())
        })
        .find(|(controllers, _)| controllers.split(',').any(|c| c == controller))
        .map(|(_, path)| PathBuf::from(path.trim_start_matches('/')))
        .unwrap_or_default()
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_output_keeps_head_and_tail_and_says_what_was_cut() {
        let mut kept = Kept::new(10);
        kept.push(b"0123456789abcdefghij");
        let text = kept.render("stdout");
        assert!(text.starts_with("stdout (20 bytes, 10 cut from the middle):\n01234"));
        assert!(text.contains("[... 10 bytes cut ...]\nfghij"));
        let mut small = Kept::new(10);
        small.push(b"abc");
        assert_eq!(small.render("stderr"), "stderr (3 bytes):\nabc\n");
    }

    #[test]
    fn the_working_folder_stays_inside_the_project() {
        let root = std::env::temp_dir().canonicalize().unwrap_or_default();
        assert_eq!(working_folder(&root, None), Ok(root.clone()));
        let outside = working_folder(&root, Some("..")).unwrap_err();
        assert!(outside.contains("outside the project folder"), "{outside}");
    }

    #[test]
    fn secret_variables_cannot_be_named() {
        let dir = std::env::temp_dir();
        let config = ShellConfig::new(&dir, Launcher::binary("/bin/false")).unwrap_or_else(|e| {
            panic!("{e}");
        });
        let refused = config.with_env(["OPENAI_API_KEY".to_owned()]).unwrap_err();
        assert_eq!(
            refused,
            ShellConfigError::SecretVariable {
                name: "OPENAI_API_KEY".to_owned()
            }
        );
    }
}
