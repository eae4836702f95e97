//! The launcher: a fresh, single-threaded process that builds the
//! namespaces around itself and then starts the command's PID 1 (this
//! binary again, see `shell::init`) inside them. It stays outside the
//! command's reach: in the parent PID namespace (no PID inside names it),
//! in a process group of its own, outside the Landlock domain and the
//! seccomp filters, and not dumpable.
//!
//! Order, each step refusing to go on when it fails:
//! 1. close every inherited descriptor but stdin, stdout and stderr;
//! 2. join the cgroups the tool made (pids when the caller is root;
//!    memory where the controller is at hand);
//! 3. `unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS [| CLONE_NEWNET])`,
//!    map the caller's uid and gid to one non-root id inside (`setgroups`
//!    denied first, as an unprivileged user namespace requires), then mark
//!    itself not dumpable (a non-dumpable process cannot write its own
//!    maps), and make every mount read-only but bind mounts of the write
//!    roots, which are `nosuid` (see `shell::mounts`). A root caller
//!    makes the mount namespace first, as root, shows the write roots to
//!    an unprivileged host id through idmapped mounts, hides the folders
//!    that id cannot search, and drops to it before the user namespace
//!    (see `shell::idmap`): its command is an ordinary user on the host;
//! 4. rlimits: processes, data memory, file size, open files, no core;
//! 5. measure the write roots for the write quota (see `shell::quota`);
//! 6. start PID 1 under the non-root id, in a new process group, with a
//!    socket to it as its stdin: PID 1 sets the parent-death signal,
//!    Landlock and seccomp on itself, starts `/bin/sh -c COMMAND` and
//!    says on the socket whether it did;
//! 7. relay the command's stdout and stderr as frames until PID 1 ends,
//!    the wall time or the write quota runs out, or the tool closes the
//!    control pipe (stdin). Killing PID 1 kills every process of the
//!    namespace, detached ones included; so does the end of the launcher
//!    (PID 1's parent-death signal, and its socket hanging up).
//!
//! A process whose PID-namespace-for-children differs from its own cannot
//! start threads, so the relay is one `poll` loop over the two output
//! pipes, the control pipe and a signalfd for `SIGCHLD`.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, unshare};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::{Pid, getgid, getpid, getuid};

use super::domain;
use super::idmap;
use super::init::close_inherited_files;
use super::protocol::{
    INIT_ARG, LAUNCHER_ARG, LaunchExit, LaunchSpec, LaunchStop, SandboxError, TAG_EXIT,
    TAG_FAILURE, TAG_STARTED, TAG_STDERR, TAG_STDOUT, USERNS_ARG, frame, take_frame,
};
use super::quota::Quota;
use super::{init, mounts};

pub use super::seccomp::DENIED;

/// The id the command has inside its user namespace when the caller is
/// root (any other caller keeps its own id).
const INNER_ID_FOR_ROOT: u32 = 1000;

/// How long PID 1 gets to say whether the command started.
const INIT_REPORT_WITHIN: Duration = Duration::from_secs(30);

/// True when this process was started as the launcher.
pub fn is_launcher_invocation() -> bool {
    std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == LAUNCHER_ARG || a == INIT_ARG || a == USERNS_ARG)
}

/// Runs the launcher with this process's arguments (`LAUNCHER_ARG SPEC`),
/// or the command's PID 1 (`INIT_ARG SPEC`, which the launcher starts). A
/// binary that offers the shell tool calls this first thing in `main` when
/// [`is_launcher_invocation`] says so, and returns its exit code.
pub fn launcher_main() -> ExitCode {
    let role = std::env::args_os().nth(1);
    if role.as_ref().is_some_and(|a| a == USERNS_ARG) {
        return idmap::hold_namespace();
    }
    let as_init = role.is_some_and(|a| a == INIT_ARG);
    let spec = std::env::args_os()
        .nth(2)
        .ok_or_else(|| "missing".to_owned())
        .and_then(|raw: OsString| {
            serde_json::from_str::<LaunchSpec>(&raw.to_string_lossy()).map_err(|e| e.to_string())
        });
    if as_init {
        return match spec {
            Ok(spec) => init::main(&spec),
            Err(_) => ExitCode::FAILURE,
        };
    }
    let outcome = match spec {
        Ok(spec) => run(&spec),
        Err(message) => Err(SandboxError::Spec { message }),
    };
    match outcome {
        Ok(exit) => {
            let payload = serde_json::to_vec(&exit).unwrap_or_default();
            emit(TAG_EXIT, &payload);
            ExitCode::SUCCESS
        }
        Err(error) => {
            let payload = serde_json::to_vec(&error).unwrap_or_default();
            emit(TAG_FAILURE, &payload);
            ExitCode::from(3)
        }
    }
}

/// Writes one frame to stdout; a tool that went away is not an error here
/// (the command is killed when the control pipe closes).
fn emit(tag: u8, payload: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&frame(tag, payload));
    let _ = out.flush();
}

fn run(spec: &LaunchSpec) -> Result<LaunchExit, SandboxError> {
    close_inherited_files();
    for cgroup in &spec.cgroups {
        std::fs::write(cgroup.join("cgroup.procs"), getpid().to_string()).map_err(|e| {
            SandboxError::Limits {
                message: format!("joining the cgroup {}: {e}", cgroup.display()),
            }
        })?;
    }
    // Opened while the launcher may still read its own path: a root
    // caller's launcher gives up root below, and PID 1 is started from
    // this descriptor.
    let program = std::env::current_exe()
        .and_then(std::fs::File::open)
        .map_err(spawn_error)?;
    let (inner_uid, inner_gid) = enter_namespaces(spec)?;
    set_limits(spec)?;
    // SIGCHLD is read through a signalfd, so it is blocked here; PID 1
    // starts with an empty signal mask (std resets it).
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&chld), None).map_err(|e| SandboxError::Limits {
        message: format!("blocking SIGCHLD: {e}"),
    })?;
    let signals = SignalFd::with_flags(&chld, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| SandboxError::Limits {
            message: format!("signalfd: {e}"),
        })?;
    // Fails here, typed, on a kernel without Landlock, before anything
    // starts; PID 1 applies the same rules to itself.
    domain::landlock_ruleset(spec)?;
    let quota = Quota::new(&spec.write, spec.max_write_bytes, spec.max_write_files);
    let (out_read, out_write) = std::io::pipe().map_err(spawn_error)?;
    let (err_read, err_write) = std::io::pipe().map_err(spawn_error)?;
    let (mut to_init, init_end) = UnixStream::pair().map_err(spawn_error)?;
    let spec_json = serde_json::to_string(spec).map_err(spawn_error)?;
    let mut command = Command::new(format!("/proc/self/fd/{}", program.as_raw_fd()));
    command
        .arg(INIT_ARG)
        .arg(spec_json)
        .current_dir(&spec.cwd)
        .env_clear()
        .stdin(Stdio::from(OwnedFd::from(init_end)))
        .stdout(out_write)
        .stderr(err_write)
        // Out of the launcher's process group: `kill 0` inside reaches
        // only the command's own processes.
        .process_group(0)
        // Setting the ids makes std fork rather than posix_spawn (a vfork
        // that the kernel refuses across PID namespaces).
        .uid(inner_uid)
        .gid(inner_gid);
    let mut child = command.spawn().map_err(spawn_error)?;
    drop(command);
    if let Err(error) = init_report(&mut to_init) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(error);
    }
    emit(TAG_STARTED, &child.id().to_le_bytes());
    let exit = relay(spec, child, out_read, err_read, &signals, quota);
    drop(to_init);
    Ok(exit)
}

/// What PID 1 said: the command started, or why it did not.
fn init_report(socket: &mut UnixStream) -> Result<(), SandboxError> {
    let ended = || SandboxError::Spawn {
        message: "the sandbox's first process ended before the command started".to_owned(),
    };
    socket
        .set_read_timeout(Some(INIT_REPORT_WITHIN))
        .map_err(spawn_error)?;
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some((tag, payload)) = take_frame(&mut buffer) {
            return match tag {
                TAG_STARTED => Ok(()),
                _ => Err(serde_json::from_slice(&payload).unwrap_or_else(|_| ended())),
            };
        }
        match socket.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(ended()),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

fn spawn_error(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Spawn {
        message: e.to_string(),
    }
}

/// New user, PID, mount and (unless the network is allowed) network
/// namespaces, with the caller's ids mapped to one id inside. Returns that
/// id pair. A root caller first makes the mount namespace as root and
/// gives up root for [`HOST_ID`] (see [`idmap`]).
fn enter_namespaces(spec: &LaunchSpec) -> Result<(u32, u32), SandboxError> {
    let refused = |what: &str, e: &dyn std::fmt::Display| SandboxError::Namespaces {
        message: format!("{what}: {e}"),
    };
    let as_root = getuid().is_root();
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID;
    let mut proc_copy = None;
    if as_root {
        let owners = idmap::Owners::of(&spec.write)?;
        unshare(CloneFlags::CLONE_NEWNS).map_err(|e| refused("unshare", &e))?;
        idmap::shift_to_host_id(&spec.read, &spec.write, &owners)?;
        proc_copy = Some(idmap::writable_proc()?);
        mounts::confine(&spec.write)?;
        idmap::drop_ids()?;
    } else {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    let proc = match &proc_copy {
        Some(copy) => std::path::PathBuf::from(format!("/proc/self/fd/{}", copy.as_raw_fd())),
        None => std::path::PathBuf::from("/proc"),
    };
    if !spec.network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    let uid = getuid().as_raw();
    let gid = getgid().as_raw();
    unshare(flags).map_err(|e| refused("unshare", &e))?;
    let inner_uid = if as_root { INNER_ID_FOR_ROOT } else { uid };
    let inner_gid = if as_root { INNER_ID_FOR_ROOT } else { gid };
    // An unprivileged user namespace may write its gid map only once
    // `setgroups` is denied in it.
    std::fs::write(proc.join("self/setgroups"), "deny").map_err(|e| refused("setgroups", &e))?;
    std::fs::write(proc.join("self/uid_map"), format!("{inner_uid} {uid} 1"))
        .map_err(|e| refused("uid_map", &e))?;
    std::fs::write(proc.join("self/gid_map"), format!("{inner_gid} {gid} 1"))
        .map_err(|e| refused("gid_map", &e))?;
    // Only now: the maps of a non-dumpable process belong to root, which
    // an ordinary caller cannot write.
    nix::sys::prctl::set_dumpable(false).map_err(|e| SandboxError::Limits {
        message: format!("prctl(PR_SET_DUMPABLE): {e}"),
    })?;
    if !as_root {
        mounts::confine(&spec.write)?;
    }
    Ok((inner_uid, inner_gid))
}

fn set_limits(spec: &LaunchSpec) -> Result<(), SandboxError> {
    let limits = [
        (Resource::RLIMIT_NPROC, spec.max_processes, "processes"),
        (Resource::RLIMIT_DATA, spec.max_memory_bytes, "memory"),
        (Resource::RLIMIT_FSIZE, spec.max_file_bytes, "file size"),
        (Resource::RLIMIT_NOFILE, spec.max_open_files, "open files"),
        (Resource::RLIMIT_CORE, 0, "core dumps"),
    ];
    for (resource, value, what) in limits {
        // Never above the hard limit in force: raising it needs a
        // privilege the launcher does not have.
        let (_, hard) = getrlimit(resource).map_err(|e| SandboxError::Limits {
            message: format!("{what}: {e}"),
        })?;
        let value = value.min(hard);
        setrlimit(resource, value, value).map_err(|e| SandboxError::Limits {
            message: format!("{what}: {e}"),
        })?;
    }
    Ok(())
}

/// Relays output until the command has ended and both pipes are closed.
fn relay(
    spec: &LaunchSpec,
    mut child: Child,
    mut out: std::io::PipeReader,
    mut err: std::io::PipeReader,
    signals: &SignalFd,
    mut quota: Quota,
) -> LaunchExit {
    let deadline = Instant::now() + Duration::from_millis(spec.timeout_ms);
    let pid = Pid::from_raw(child.id() as i32);
    let mut stdin = std::io::stdin();
    let mut stopped: Option<LaunchStop> = None;
    let mut status = None;
    let (mut out_open, mut err_open, mut control_open) = (true, true, true);
    let mut buffer = vec![0u8; 64 * 1024];
    // After the command ended, pipes still open (a descendant that kept
    // them is being torn down with the namespace) get this long.
    let mut drain_until: Option<Instant> = None;
    loop {
        if status.is_none()
            && let Ok(Some(ended)) = child.try_wait()
        {
            status = Some(ended);
            drain_until = Some(Instant::now() + Duration::from_secs(2));
        }
        if status.is_some() && !(out_open || err_open) {
            break;
        }
        if let Some(until) = drain_until
            && Instant::now() >= until
        {
            break;
        }
        let now = Instant::now();
        if status.is_none() && stopped.is_none() {
            let over = if now >= deadline {
                Some(LaunchStop::Timeout)
            } else {
                quota.check()
            };
            if let Some(over) = over {
                let _ = kill(pid, Signal::SIGKILL);
                stopped = Some(over);
            }
        }
        let wait_until = match (drain_until, stopped) {
            (Some(until), _) => until,
            (None, None) => deadline.min(quota.due()),
            // Killed: SIGCHLD wakes the loop.
            (None, Some(_)) => now + Duration::from_secs(1),
        };
        let millis = wait_until
            .saturating_duration_since(now)
            .as_millis()
            .min(60_000) as u16;
        let mut fds = Vec::with_capacity(4);
        fds.push(PollFd::new(signals.as_fd(), PollFlags::POLLIN));
        let control_at = control_open.then(|| {
            fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let out_at = out_open.then(|| {
            fds.push(PollFd::new(out.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let err_at = err_open.then(|| {
            fds.push(PollFd::new(err.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        if poll(&mut fds, PollTimeout::from(millis)).is_err() {
            continue;
        }
        let ready = |at: Option<usize>| {
            at.and_then(|i| fds.get(i))
                .and_then(|fd| fd.revents())
                .is_some_and(|r| !r.is_empty())
        };
        let (signal_ready, control_ready, out_ready, err_ready) = (
            ready(Some(0)),
            ready(control_at),
            ready(out_at),
            ready(err_at),
        );
        drop(fds);
        if signal_ready {
            while let Ok(Some(_)) = signals.read_signal() {}
        }
        if control_ready {
            let mut sink = [0u8; 256];
            if matches!(stdin.read(&mut sink), Ok(0) | Err(_)) {
                control_open = false;
                if status.is_none() && stopped.is_none() {
                    let _ = kill(pid, Signal::SIGKILL);
                    stopped = Some(LaunchStop::ControlClosed);
                }
            }
        }
        if out_ready {
            out_open = forward(&mut out, TAG_STDOUT, &mut buffer);
        }
        if err_ready {
            err_open = forward(&mut err, TAG_STDERR, &mut buffer);
        }
    }
    let status = match status {
        Some(status) => Some(status),
        None => child.wait().ok(),
    };
    // What a command wrote in its last moments counts too.
    if stopped.is_none() {
        stopped = quota.check_now();
    }
    LaunchExit {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        stopped,
    }
}

/// Reads what is there and sends it on; false at end of file.
fn forward(pipe: &mut std::io::PipeReader, tag: u8, buffer: &mut [u8]) -> bool {
    match pipe.read(buffer) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            emit(tag, &buffer[..n]);
            true
        }
    }
}

/// Whether `path` exists, for building rule lists.
pub(crate) fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}
