//! The launcher: a fresh, single-threaded process that builds the sandbox
//! around itself and then starts the command as PID 1 of a new PID
//! namespace. Everything it sets (namespaces, rlimits, Landlock domain,
//! seccomp filter, `no_new_privs`) is inherited by the command and all its
//! descendants; nothing runs in the tool's multi-threaded process between
//! fork and exec.
//!
//! Order, each step refusing to go on when it fails:
//! 1. join the cgroups the tool made (pids when the caller is root;
//!    memory where the controller is at hand);
//! 2. mark itself not dumpable, so the command cannot read its memory;
//! 3. `unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS [| CLONE_NEWNET])`,
//!    map the caller's uid and gid to one non-root id inside, and make
//!    every mount read-only but bind mounts of the write roots (Landlock
//!    does not cover `chmod`, `utimes` or extended attributes; a read-only
//!    mount refuses them);
//! 4. rlimits: processes, data memory, file size, open files, no core;
//! 5. Landlock: reads (and execution) only below the read list, writes
//!    only below the write list, no signals to or abstract sockets of
//!    processes outside the sandbox (ABI 6, when the kernel has it);
//! 6. seccomp: the refused system calls (see [`DENIED`]);
//! 7. spawn a shell as PID 1 (a plain fork) that runs `/bin/sh -c COMMAND`
//!    as its child, and relay their stdout and stderr as frames, until it
//!    ends, the wall time runs out or the tool closes the control pipe
//!    (stdin). Killing PID 1 kills every process of the namespace,
//!    detached ones included.
//!
//! A process whose PID-namespace-for-children differs from its own cannot
//! start threads, so the relay is one `poll` loop over the two output
//! pipes, the control pipe and a signalfd for `SIGCHLD`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};
use nix::mount::{MsFlags, mount};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, unshare};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::{Pid, getgid, getpid, getuid};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::protocol::{
    LAUNCHER_ARG, LaunchExit, LaunchSpec, LaunchStop, SandboxError, TAG_EXIT, TAG_FAILURE,
    TAG_STARTED, TAG_STDERR, TAG_STDOUT, frame,
};

/// The id the command has inside its user namespace when the caller is
/// root (any other caller keeps its own id).
const INNER_ID_FOR_ROOT: u32 = 1000;

/// System calls the command may not make (they fail with `EPERM`):
/// debugging other processes, mounting, the kernel keyring, BPF,
/// performance counters, kernel modules and kexec, leaving or making
/// namespaces, userfaultfd, handle-based opens that bypass paths, and
/// system administration, io_uring. `clone` with a namespace flag is
/// refused too, and so is `socket(AF_UNIX, …)` (named Unix sockets are
/// reached by path and Landlock up to ABI 7 does not check that;
/// `socketpair` stays allowed); `clone3` fails with `ENOSYS` so libc falls
/// back to `clone`, whose flags a filter can read.
pub const DENIED: &[(&str, i64)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("syslog", libc::SYS_syslog),
    ("vhangup", libc::SYS_vhangup),
    // io_uring runs operations (sockets, opens) the filter never sees.
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
];

/// PID 1 of the namespace: a shell that runs the command's shell as its
/// child and exits with its status. The command's own shell is not PID 1,
/// whose signal rules (no default action for signals sent from inside)
/// would keep its `wait` builtin from ever waking.
const INIT_SCRIPT: &str = "/bin/sh -c \"$1\"; exit $?";

/// Namespace flags `clone` may not carry.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// True when this process was started as the launcher.
pub fn is_launcher_invocation() -> bool {
    std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == LAUNCHER_ARG)
}

/// Runs the launcher with this process's arguments (`LAUNCHER_ARG SPEC`).
/// A binary that offers the shell tool calls this first thing in `main`
/// when [`is_launcher_invocation`] says so, and returns its exit code.
pub fn launcher_main() -> ExitCode {
    let spec = std::env::args_os()
        .nth(2)
        .ok_or_else(|| "missing".to_owned())
        .and_then(|raw: OsString| {
            serde_json::from_str::<LaunchSpec>(&raw.to_string_lossy()).map_err(|e| e.to_string())
        });
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
    for cgroup in &spec.cgroups {
        std::fs::write(cgroup.join("cgroup.procs"), getpid().to_string()).map_err(|e| {
            SandboxError::Limits {
                message: format!("joining the cgroup {}: {e}", cgroup.display()),
            }
        })?;
    }
    nix::sys::prctl::set_dumpable(false).map_err(|e| SandboxError::Limits {
        message: format!("prctl(PR_SET_DUMPABLE): {e}"),
    })?;
    let (inner_uid, inner_gid) = enter_namespaces(spec)?;
    set_limits(spec)?;
    // SIGCHLD is read through a signalfd, so it is blocked here; the
    // command starts with an empty signal mask (std resets it).
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&chld), None).map_err(|e| SandboxError::Limits {
        message: format!("blocking SIGCHLD: {e}"),
    })?;
    let signals = SignalFd::with_flags(&chld, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| SandboxError::Limits {
            message: format!("signalfd: {e}"),
        })?;
    restrict_files(spec)?;
    apply_seccomp()?;
    let (out_read, out_write) = std::io::pipe().map_err(spawn_error)?;
    let (err_read, err_write) = std::io::pipe().map_err(spawn_error)?;
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(INIT_SCRIPT)
        .arg("agentloop-init")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out_write)
        .stderr(err_write)
        // Setting the ids makes std fork rather than posix_spawn (a vfork
        // that the kernel refuses across PID namespaces).
        .uid(inner_uid)
        .gid(inner_gid);
    let child = command.spawn().map_err(spawn_error)?;
    drop(command);
    emit(TAG_STARTED, &child.id().to_le_bytes());
    Ok(relay(spec, child, out_read, err_read, &signals))
}

fn spawn_error(e: std::io::Error) -> SandboxError {
    SandboxError::Spawn {
        message: e.to_string(),
    }
}

/// New user, PID and (unless the network is allowed) network namespaces,
/// with the caller's ids mapped to one id inside. Returns that id pair.
fn enter_namespaces(spec: &LaunchSpec) -> Result<(u32, u32), SandboxError> {
    let uid = getuid().as_raw();
    let gid = getgid().as_raw();
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNS;
    if !spec.network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    let refused = |what: &str, e: &dyn std::fmt::Display| SandboxError::Namespaces {
        message: format!("{what}: {e}"),
    };
    unshare(flags).map_err(|e| refused("unshare", &e))?;
    let inner_uid = if uid == 0 { INNER_ID_FOR_ROOT } else { uid };
    let inner_gid = if gid == 0 { INNER_ID_FOR_ROOT } else { gid };
    std::fs::write("/proc/self/setgroups", "deny").map_err(|e| refused("setgroups", &e))?;
    std::fs::write("/proc/self/uid_map", format!("{inner_uid} {uid} 1"))
        .map_err(|e| refused("uid_map", &e))?;
    std::fs::write("/proc/self/gid_map", format!("{inner_gid} {gid} 1"))
        .map_err(|e| refused("gid_map", &e))?;
    read_only_mounts(&spec.write)?;
    Ok((inner_uid, inner_gid))
}

/// In the new mount namespace: every mount read-only except bind mounts
/// of the write roots. Landlock does not govern `chmod`, `utimes` or
/// extended attributes; a read-only mount refuses them outside the write
/// roots. Mount flags already set (`nosuid`, `nodev`, `noexec`, atime) are
/// kept, as the kernel requires of a user namespace.
fn read_only_mounts(write: &[std::path::PathBuf]) -> Result<(), SandboxError> {
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
    let roots: Vec<&std::path::PathBuf> = write.iter().filter(|p| p.is_dir()).collect();
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
        let point = std::path::PathBuf::from(unescape(point));
        if roots.iter().any(|root| point.starts_with(root)) {
            continue;
        }
        let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
        for option in options.split(',') {
            flags |= match option {
                "nosuid" => MsFlags::MS_NOSUID,
                "nodev" => MsFlags::MS_NODEV,
                "noexec" => MsFlags::MS_NOEXEC,
                "noatime" => MsFlags::MS_NOATIME,
                "nodiratime" => MsFlags::MS_NODIRATIME,
                "relatime" => MsFlags::MS_RELATIME,
                "strictatime" => MsFlags::MS_STRICTATIME,
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
            Err(e) => return Err(failed(format!("read-only {}", point.display()), e)),
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

/// The Landlock domain. Filesystem rights of ABI 3 (with `refer` and
/// `truncate`) are required; the ABI 6 scopes are added when the kernel
/// has them.
fn restrict_files(spec: &LaunchSpec) -> Result<(), SandboxError> {
    let landlock = |e: &dyn std::fmt::Display| SandboxError::Landlock {
        message: e.to_string(),
    };
    let fs_abi = ABI::V3;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(fs_abi))
        .map_err(|e| landlock(&e))?
        .set_compatibility(CompatLevel::BestEffort)
        .scope(Scope::from_all(ABI::V6))
        .map_err(|e| landlock(&e))?
        .create()
        .map_err(|e| landlock(&e))?
        .add_rules(path_beneath_rules(&spec.read, AccessFs::from_read(fs_abi)))
        .map_err(|e| landlock(&e))?
        .add_rules(path_beneath_rules(&spec.write, AccessFs::from_all(fs_abi)))
        .map_err(|e| landlock(&e))?
        .restrict_self()
        .map_err(|e| landlock(&e))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError::Landlock {
            message: "the kernel does not enforce the ruleset".to_owned(),
        });
    }
    Ok(())
}

fn apply_seccomp() -> Result<(), SandboxError> {
    let failed = |e: &dyn std::fmt::Display| SandboxError::Seccomp {
        message: e.to_string(),
    };
    let arch: TargetArch = std::env::consts::ARCH.try_into().map_err(|e| failed(&e))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED
        .iter()
        .map(|(_, number)| (*number, Vec::new()))
        .collect();
    let mut clone_rules = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let flag = *flag as u64;
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .map_err(|e| failed(&e))?;
        clone_rules.push(SeccompRule::new(vec![condition]).map_err(|e| failed(&e))?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    // Named Unix sockets are reached by path, which Landlock (up to ABI 7)
    // does not check on connect: a database's or container engine's socket
    // would be an open door. Socket pairs (`socketpair`) stay allowed.
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::AF_UNIX as u64,
    )
    .map_err(|e| failed(&e))?;
    rules.insert(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![unix]).map_err(|e| failed(&e))?],
    );
    // Pushing bytes into a terminal's input is refused. (The constant's
    // type differs between targets.)
    #[allow(clippy::unnecessary_cast)]
    let tiocsti = SeccompCondition::new(
        1,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::TIOCSTI as u64,
    )
    .map_err(|e| failed(&e))?;
    rules.insert(
        libc::SYS_ioctl,
        vec![SeccompRule::new(vec![tiocsti]).map_err(|e| failed(&e))?],
    );
    let denied: BpfProgram = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .and_then(TryInto::try_into)
    .map_err(|e| failed(&e))?;
    let clone3: BpfProgram = SeccompFilter::new(
        [(libc::SYS_clone3, Vec::new())].into(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .and_then(TryInto::try_into)
    .map_err(|e| failed(&e))?;
    seccompiler::apply_filter(&denied).map_err(|e| failed(&e))?;
    seccompiler::apply_filter(&clone3).map_err(|e| failed(&e))?;
    Ok(())
}

/// Relays output until the command has ended and both pipes are closed.
fn relay(
    spec: &LaunchSpec,
    mut child: Child,
    mut out: std::io::PipeReader,
    mut err: std::io::PipeReader,
    signals: &SignalFd,
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
        if status.is_none() && stopped.is_none() && now >= deadline {
            let _ = kill(pid, Signal::SIGKILL);
            stopped = Some(LaunchStop::Timeout);
        }
        let wait_until = match (drain_until, stopped) {
            (Some(until), _) => until,
            (None, None) => deadline,
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
