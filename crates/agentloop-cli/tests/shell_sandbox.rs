//! Hostile black-box tests of the shell tool through `agentloop tool call
//! shell`: each escape attempt is checked by its effect (no file written,
//! no secret read, no connection received, no process left), not only by
//! the exit code. The sandbox needs Landlock and unprivileged user
//! namespaces; where the kernel lacks them these tests fail (the tool
//! refuses to run), they never skip.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A scratch place: a project folder, a folder outside it with secrets,
/// another project, and an empty configuration folder.
struct Scene {
    _dir: tempfile::TempDir,
    project: PathBuf,
    outside: PathBuf,
    other_project: PathBuf,
    config: PathBuf,
}

const SSH_KEY: &str = "BEGIN-PRIVATE-KEY-marker-7f3a";
const OTHER_SECRET: &str = "other-project-secret-91c2";

fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let outside = dir.path().join("home");
    let other_project = dir.path().join("other-project");
    let config = dir.path().join("config");
    for folder in [&project, &outside, &other_project, &config] {
        std::fs::create_dir_all(folder).unwrap();
    }
    std::fs::create_dir_all(outside.join(".ssh")).unwrap();
    std::fs::write(outside.join(".ssh/id_ed25519"), SSH_KEY).unwrap();
    std::fs::write(outside.join("notes.txt"), "unchanged\n").unwrap();
    std::fs::write(other_project.join("secret.txt"), OTHER_SECRET).unwrap();
    Scene {
        project: project.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        other_project: other_project.canonicalize().unwrap(),
        config: config.canonicalize().unwrap(),
        _dir: dir,
    }
}

/// What one call printed: its exit code, the result's text, how many
/// progress lines came, and how long it took.
struct Called {
    code: Option<i32>,
    content: String,
    is_error: bool,
    progress: Vec<String>,
    took: Duration,
}

fn call(scene: &Scene, input: Value) -> Called {
    call_with_env(scene, input, &[])
}

fn call_with_env(scene: &Scene, input: Value, env: &[(&str, &str)]) -> Called {
    let mut command = common::agentloop();
    for (name, value) in env {
        command.env(name, value);
    }
    call_as(scene, input, command)
}

/// `agentloop tool call shell` run as `program` (the binary, or a wrapper
/// that starts it) says; `program` gets the call's arguments.
fn call_as(scene: &Scene, input: Value, mut command: std::process::Command) -> Called {
    let started = Instant::now();
    let output = tool_call(&mut command, scene, &input)
        .current_dir(&scene.outside)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut progress = Vec::new();
    let mut result = None;
    for line in stdout.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        match value["type"].as_str() {
            Some("groups_update") => progress.push(
                value["groups"][0]["blocks"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ),
            Some("result") => result = Some(value["result"].clone()),
            _ => {}
        }
    }
    let result = result.unwrap_or_else(|| {
        panic!(
            "no result; stdout {stdout}, stderr {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let content = result["content"].as_str().unwrap_or_default().to_owned();
    assert!(
        !content.starts_with("sandbox error"),
        "the sandbox could not be set up on this machine (Landlock and unprivileged user \
         namespaces are required): {content}"
    );
    Called {
        code: output.status.code(),
        is_error: result["is_error"].as_bool().unwrap_or(false),
        content,
        progress,
        took,
    }
}

/// `command` given the arguments of `agentloop tool call shell` in `scene`.
fn tool_call<'a>(
    command: &'a mut std::process::Command,
    scene: &Scene,
    input: &Value,
) -> &'a mut std::process::Command {
    command
        .args([
            "tool",
            "call",
            "shell",
            "--input",
            &input.to_string(),
            "--root",
        ])
        .arg(&scene.project)
        .env("XDG_CONFIG_HOME", &scene.config)
}

/// Whether any process's command line holds `token`.
fn process_with(token: &str) -> Option<String> {
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(token)
        {
            return Some(pid.to_owned());
        }
    }
    None
}

/// Polls until no process holds `token`, for at most `within`.
fn no_process_with(token: &str, within: Duration) -> bool {
    let until = Instant::now() + within;
    loop {
        if process_with(token).is_none() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn unique(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{label}{}x{nanos}", std::process::id())
}

#[test]
fn a_command_runs_and_reports_exit_status_output_and_duration() {
    let scene = scene();
    let called = call(
        &scene,
        json!({"command": "echo hello; echo oops >&2; echo kept > made.txt; exit 4"}),
    );
    assert_eq!(called.code, Some(1), "a failing command is an error result");
    assert!(called.is_error);
    assert!(
        called.content.starts_with("exit code: 4\nduration: "),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("stdout (6 bytes):\nhello\n"),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("stderr (5 bytes):\noops\n"),
        "{}",
        called.content
    );
    assert_eq!(
        std::fs::read_to_string(scene.project.join("made.txt")).unwrap(),
        "kept\n"
    );
}

#[test]
fn background_jobs_can_be_waited_for() {
    let scene = scene();
    let called = call(
        &scene,
        json!({"command": "sleep 0.2 & a=$!; (exit 3) & b=$!; wait $a; echo a=$?; wait $b; echo b=$?; wait", "timeout_secs": 20}),
    );
    assert_eq!(called.code, Some(0), "{}", called.content);
    assert!(called.content.contains("a=0\nb=3\n"), "{}", called.content);
}

#[test]
fn writes_outside_the_project_fail_by_absolute_path_dotdot_symlink_and_hard_link() {
    let scene = scene();
    std::os::unix::fs::symlink(&scene.outside, scene.project.join("door")).unwrap();
    let absolute = scene.outside.join("absolute.txt");
    let before = std::fs::metadata(scene.outside.join("notes.txt")).unwrap();
    let command = format!(
        "echo x > {abs}; echo x > ../home/dotdot.txt; echo x > door/symlinked.txt; \
         echo x >> door/notes.txt; ln ../home/notes.txt hard; ln door/notes.txt hard2; \
         mkdir ../home/newdir; mv made ../home/moved 2>/dev/null; \
         cp /bin/sh ../home/sh; touch /tmp/escaped-{pid}; \
         chmod 600 ../home/notes.txt; touch -d 2001-01-01 door/notes.txt; \
         python3 -c \"import os; os.setxattr('../home/notes.txt', 'user.mark', b'1')\"; true",
        abs = absolute.display(),
        pid = std::process::id()
    );
    let called = call(&scene, json!({"command": command}));
    assert_eq!(called.code, Some(0), "{}", called.content);
    for escaped in [
        "absolute.txt",
        "dotdot.txt",
        "symlinked.txt",
        "newdir",
        "moved",
        "sh",
    ] {
        assert!(
            !scene.outside.join(escaped).exists(),
            "{escaped} was written outside: {}",
            called.content
        );
    }
    assert_eq!(
        std::fs::read_to_string(scene.outside.join("notes.txt")).unwrap(),
        "unchanged\n"
    );
    assert!(
        !scene.project.join("hard").exists(),
        "a hard link to an outside file was made"
    );
    assert!(
        !scene.project.join("hard2").exists(),
        "a hard link through the symlink was made"
    );
    assert!(!Path::new(&format!("/tmp/escaped-{}", std::process::id())).exists());
    let notes = std::fs::metadata(scene.outside.join("notes.txt")).unwrap();
    assert_eq!(
        notes.permissions().mode() & 0o777,
        before.permissions().mode() & 0o777,
        "chmod outside"
    );
    assert_eq!(
        notes.modified().unwrap(),
        before.modified().unwrap(),
        "utimes outside"
    );
    let xattrs = std::process::Command::new("python3")
        .args(["-c", "import os, sys; print(os.listxattr(sys.argv[1]))"])
        .arg(scene.outside.join("notes.txt"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&xattrs.stdout),
        "[]\n",
        "an extended attribute was set outside"
    );
    // The read-only mounts refuse first; Landlock stands behind them.
    assert!(
        called.content.contains("Read-only file system"),
        "{}",
        called.content
    );
}

#[test]
fn files_outside_the_project_cannot_be_read_directly_or_through_links_or_proc() {
    let scene = scene();
    std::os::unix::fs::symlink(&scene.outside, scene.project.join("door")).unwrap();
    let key = scene.outside.join(".ssh/id_ed25519");
    let other = scene.other_project.join("secret.txt");
    let command = format!(
        "cat {key}; cat door/.ssh/id_ed25519; cat {other}; cp {key} ./copied; \
         cat /proc/self/root{key}; ls {home}; \
         read -r s < /proc/self/stat; set -- $s; launcher=$4; \
         read -r s < /proc/$launcher/stat; set -- $s; caller=$4; \
         cat /proc/$caller/cwd/.ssh/id_ed25519; ls /proc/$caller/cwd/; \
         cat /proc/$launcher/environ /proc/$caller/environ; \
         tar cf - /proc/$caller/root{home} 2>/dev/null | wc -c; true",
        key = key.display(),
        other = other.display(),
        home = scene.outside.display(),
    );
    let called = call_with_env(
        &scene,
        json!({"command": command}),
        &[("HIDDEN_API_KEY", "sk-hidden-env-marker-55")],
    );
    assert_eq!(called.code, Some(0), "{}", called.content);
    for secret in [
        SSH_KEY,
        OTHER_SECRET,
        "sk-hidden-env-marker-55",
        "notes.txt",
    ] {
        assert!(
            !called.content.contains(secret),
            "{secret} leaked: {}",
            called.content
        );
        for line in &called.progress {
            assert!(!line.contains(secret), "{secret} leaked in progress");
        }
    }
    assert!(!scene.project.join("copied").exists());
}

#[test]
fn the_environment_is_scrubbed_of_keys_and_tokens() {
    let scene = scene();
    let called = call_with_env(
        &scene,
        json!({"command": "env; echo home=$HOME"}),
        &[
            ("OPENAI_API_KEY", "sk-env-marker-1"),
            ("GITHUB_TOKEN", "ghp-env-marker-2"),
            ("SOME_SECRET", "env-marker-3"),
        ],
    );
    assert_eq!(called.code, Some(0), "{}", called.content);
    for marker in ["sk-env-marker-1", "ghp-env-marker-2", "env-marker-3"] {
        assert!(
            !called.content.contains(marker),
            "{marker}: {}",
            called.content
        );
    }
    assert!(called.content.contains("PATH="), "{}", called.content);
    assert!(
        !called.content.contains("home=/root\n"),
        "{}",
        called.content
    );
}

#[test]
fn a_secret_variable_named_in_the_configuration_is_refused() {
    let scene = scene();
    std::fs::create_dir_all(scene.config.join("agentloop")).unwrap();
    std::fs::write(
        scene.config.join("agentloop/config.toml"),
        "[shell]\nenv = [\"ANTHROPIC_API_KEY\"]\n",
    )
    .unwrap();
    let output = common::agentloop()
        .args([
            "tool",
            "call",
            "shell",
            "--input",
            r#"{"command":"true"}"#,
            "--root",
        ])
        .arg(&scene.project)
        .env("XDG_CONFIG_HOME", &scene.config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("never passes ANTHROPIC_API_KEY"),
        "{stderr}"
    );
}

#[test]
fn no_connection_leaves_the_sandbox_and_names_do_not_resolve() {
    let scene = scene();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)\"; \
         echo tcp=$?; \
         python3 -c \"import socket; print(socket.getaddrinfo('localhost', 80)); print(socket.getaddrinfo('example.com', 80))\"; \
         echo dns=$?; \
         python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"; echo out=$?"
    );
    let called = call(&scene, json!({"command": command}));
    assert_eq!(called.code, Some(0), "{}", called.content);
    assert!(called.content.contains("tcp=1"), "{}", called.content);
    assert!(called.content.contains("dns=1"), "{}", called.content);
    assert!(called.content.contains("out=1"), "{}", called.content);
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the listener was reached: {other:?}"),
    }
}

#[test]
fn named_unix_sockets_outside_cannot_be_reached() {
    // A listener's socket file in a folder the command may not read: a
    // database's socket, say, which Landlock does not check on connect.
    let scene = scene();
    let socket = scene.outside.join("db.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let command = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'x')\"; \
         echo unix=$?; python3 -c \"import socket; a, b = socket.socketpair(); a.sendall(b'ok'); print(b.recv(2))\"",
        socket.display()
    );
    let called = call(&scene, json!({"command": command}));
    assert!(called.content.contains("unix=1"), "{}", called.content);
    assert!(
        called.content.contains("b'ok'"),
        "socket pairs work: {}",
        called.content
    );
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the socket was reached: {other:?}"),
    }
}

#[test]
fn a_fork_bomb_is_bounded_and_the_run_stops_within_its_time() {
    let scene = scene();
    let token = unique("bomb");
    // The shell either waits in `sleep` until the time limit, or cannot
    // fork `sleep` at all and ends: both end the whole namespace.
    let command = format!(": {token}; bomb() {{ bomb | bomb & }}; bomb; sleep 100");
    let called = call(&scene, json!({"command": command, "timeout_secs": 5}));
    assert_eq!(called.code, Some(1));
    assert!(
        called.content.starts_with("stopped: timed out after 5s")
            || called.content.starts_with("exit code: "),
        "{}",
        called.content
    );
    assert!(
        called.took < Duration::from_secs(20),
        "took {:?}",
        called.took
    );
    assert!(
        called.content.to_lowercase().contains("fork"),
        "the process limit was never hit: {}",
        called.content
    );
    assert!(
        no_process_with(&token, Duration::from_secs(5)),
        "a bomb process outlived the call"
    );
}

#[test]
fn a_process_ignoring_sigterm_is_killed_at_the_time_limit() {
    let scene = scene();
    let token = unique("stubborn");
    let command = format!(": {token}; trap '' TERM INT HUP; echo ready; while :; do sleep 1; done");
    let called = call(&scene, json!({"command": command, "timeout_secs": 2}));
    assert!(
        called.content.starts_with("stopped: timed out after 2s"),
        "{}",
        called.content
    );
    assert!(called.content.contains("ready"), "{}", called.content);
    assert!(
        called.took < Duration::from_secs(15),
        "took {:?}",
        called.took
    );
    assert!(no_process_with(&token, Duration::from_secs(5)));
}

/// Reads a host pid the sandboxed command wrote, polling until it is there.
fn written_pid(path: &Path) -> u32 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{} holds no pid: {text:?}", path.display()))
}

/// Whether host process `pid` is gone (or is no longer the process that
/// ran `marker`), polling for at most five seconds.
fn gone(pid: u32, marker: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker));
        if !alive {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn detached_processes_do_not_outlive_the_call() {
    let scene = scene();
    let marker = unique("detached");
    let daemon = format!(
        "import os, sys, time; open(sys.argv[1], 'w').write(os.readlink('/proc/self')); time.sleep(1000) # {marker}"
    );
    let command = format!(
        "nohup python3 -c \"{daemon}\" nohup.pid >/dev/null 2>&1 & \
         setsid python3 -c \"{daemon}\" setsid.pid >/dev/null 2>&1 & \
         while [ ! -s nohup.pid ] || [ ! -s setsid.pid ]; do sleep 0.05; done; echo detached"
    );
    let called = call(&scene, json!({"command": command, "timeout_secs": 20}));
    assert_eq!(called.code, Some(0), "{}", called.content);
    for file in ["nohup.pid", "setsid.pid"] {
        let pid = written_pid(&scene.project.join(file));
        assert!(
            gone(pid, &marker),
            "{file}: process {pid} outlived the call"
        );
    }
}

#[test]
fn killing_agentloop_mid_call_kills_the_command() {
    let scene = scene();
    let marker = unique("orphan");
    let command = format!(
        "python3 -c \"import os, time; open('alive.pid', 'w').write(os.readlink('/proc/self')); time.sleep(1000) # {marker}\""
    );
    let mut child = tool_call(
        &mut common::agentloop(),
        &scene,
        &json!({"command": command}),
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let pid_file = scene.project.join("alive.pid");
    let until = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&pid_file)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(Instant::now() < until, "the command never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = written_pid(&pid_file);
    let caller = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(gone(pid, &marker), "process {pid} outlived agentloop");
    // The killed process could not remove its temporary folder or cgroup;
    // the next call sweeps them (a call of a test running alongside may
    // sweep them first).
    let left = |base: &Path| {
        std::fs::read_dir(base).map_or(0, |entries| {
            entries
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("agentloop-shell-{caller}-"))
                })
                .count()
        })
    };
    let temp = std::env::temp_dir();
    // The orphaned launcher ends on its own once it has killed the command;
    // until then its cgroup is busy.
    let until = Instant::now() + Duration::from_secs(10);
    while let Ok(entries) = std::fs::read_dir("/sys/fs/cgroup/pids") {
        let busy = entries.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("agentloop-shell-{caller}-"))
                && !std::fs::read_to_string(e.path().join("cgroup.procs"))
                    .unwrap_or_default()
                    .trim()
                    .is_empty()
        });
        if !busy {
            break;
        }
        assert!(Instant::now() < until, "the orphaned launcher did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
    let next = call(&scene, json!({"command": "true"}));
    assert_eq!(next.code, Some(0), "{}", next.content);
    assert_eq!(left(&temp), 0, "a stale temporary folder was not swept");
    assert_eq!(
        left(Path::new("/sys/fs/cgroup/pids")),
        0,
        "a stale cgroup was not swept"
    );
}

#[test]
fn an_output_flood_is_stopped_and_the_cut_is_said() {
    let scene = scene();
    let called = call(
        &scene,
        json!({"command": "yes flood-line", "timeout_secs": 60}),
    );
    assert_eq!(called.code, Some(1));
    assert!(
        called.content.starts_with("stopped: output passed"),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("bytes cut ...]"),
        "{}",
        called.content
    );
    assert!(
        called.content.len() < 40 * 1024,
        "{} bytes kept",
        called.content.len()
    );
    assert!(called.progress.iter().all(|p| p.len() < 5 * 1024));
    assert!(
        called.took < Duration::from_secs(50),
        "took {:?}",
        called.took
    );
}

#[test]
fn no_privilege_can_be_gained() {
    let scene = scene();
    let command = "id -u; grep -E '^(NoNewPrivs|CapEff|Seccomp):' /proc/self/status; \
         python3 -c 'import os; os.setuid(0); print(\"became-root\")' 2>&1 | tail -1; \
         su -c 'touch /tmp/su-was-here' root </dev/null; echo su=$?; \
         unshare -r true; echo unshare=$?; \
         python3 -c 'import ctypes; print(\"mount\", ctypes.CDLL(None, use_errno=True).mount(b\"none\", b\"/tmp\", b\"tmpfs\", 0, None), ctypes.get_errno())'";
    let called = call(&scene, json!({"command": command}));
    assert!(
        called.content.contains("\n1000\n") || called.content.contains(":\n1000\n"),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("NoNewPrivs:\t1"),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("CapEff:\t0000000000000000"),
        "{}",
        called.content
    );
    assert!(called.content.contains("Seccomp:\t2"), "{}", called.content);
    assert!(
        !called.content.contains("became-root"),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("Error: [Errno"),
        "setuid(0) fails: {}",
        called.content
    );
    assert!(!called.content.contains("su=0"), "{}", called.content);
    assert!(!called.content.contains("unshare=0"), "{}", called.content);
    assert!(
        called.content.contains("mount -1 1"),
        "mount is refused with EPERM: {}",
        called.content
    );
    assert!(!Path::new("/tmp/su-was-here").exists());
}

#[test]
fn toolchains_run_inside_and_a_python_test_suite_reports_its_result() {
    let scene = scene();
    let called = call(
        &scene,
        json!({"command": "cargo --version && python3 --version"}),
    );
    assert_eq!(called.code, Some(0), "{}", called.content);
    assert!(called.content.contains("cargo 1."), "{}", called.content);
    assert!(called.content.contains("Python 3"), "{}", called.content);

    let app = scene.project.join("calc");
    std::fs::create_dir(&app).unwrap();
    std::fs::write(app.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        app.join("test_calc.py"),
        "import unittest\nfrom calc import add\n\nclass AddTest(unittest.TestCase):\n    \
         def test_small(self):\n        self.assertEqual(add(2, 3), 5)\n\n    \
         def test_negative(self):\n        self.assertEqual(add(-2, -3), -5)\n",
    )
    .unwrap();
    let passed = call(
        &scene,
        json!({"command": "python3 -m unittest -v", "cwd": "calc"}),
    );
    assert_eq!(passed.code, Some(0), "{}", passed.content);
    assert!(
        passed.content.starts_with("exit code: 0\n"),
        "{}",
        passed.content
    );
    assert!(passed.content.contains("Ran 2 tests"), "{}", passed.content);
    assert!(passed.content.contains("\nOK"), "{}", passed.content);

    // A different size, so Python's bytecode cache does not hide the change.
    std::fs::write(
        app.join("calc.py"),
        "def add(a, b):\n    return a - b  # wrong\n",
    )
    .unwrap();
    let failed = call(
        &scene,
        json!({"command": "python3 -m unittest", "cwd": "calc"}),
    );
    assert_eq!(failed.code, Some(1));
    assert!(
        failed.content.starts_with("exit code: 1\n"),
        "{}",
        failed.content
    );
    assert!(
        failed.content.contains("FAILED (failures=2)"),
        "{}",
        failed.content
    );
}

#[test]
fn a_rust_test_suite_runs_inside_and_its_result_is_reported() {
    let scene = scene();
    let crate_dir = scene.project.join("calc");
    std::fs::create_dir_all(crate_dir.join("src")).unwrap();
    std::fs::write(
        crate_dir.join("Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        crate_dir.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n\
         \n    #[test]\n    fn overflows_are_caught() { assert_eq!(super::add(-2, -3), -1); }\n}\n",
    )
    .unwrap();
    let called = call(
        &scene,
        json!({"command": "cargo test --offline --lib", "cwd": "calc", "timeout_secs": 240}),
    );
    assert_eq!(called.code, Some(1), "{}", called.content);
    assert!(
        called.content.starts_with("exit code: 101\n"),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("test tests::adds ... ok"),
        "{}",
        called.content
    );
    assert!(
        called
            .content
            .contains("test tests::overflows_are_caught ... FAILED"),
        "{}",
        called.content
    );
    assert!(
        called
            .content
            .contains("test result: FAILED. 1 passed; 1 failed"),
        "{}",
        called.content
    );
    assert!(
        crate_dir.join("target").is_dir(),
        "the build stays in the project"
    );
}

#[test]
fn a_working_folder_outside_the_project_is_refused() {
    let scene = scene();
    let called = call(&scene, json!({"command": "pwd", "cwd": "../home"}));
    assert!(called.is_error);
    assert!(
        called.content.contains("outside the project folder"),
        "{}",
        called.content
    );
}

/// One turn calling shell, then a closing text.
const SHELL_TURN: &str = r#"[
  {"steps": [{"type": "tool_call", "id": "t1", "name": "shell", "fragments": ["{\"command\": \"echo ran > marker.txt; cat marker.txt\"}"]}]},
  {"steps": [{"type": "text", "chunks": ["Done."]}]}
]"#;

/// `agentloop run --tools shell` on a scripted model, in `scene.project`.
fn run_command(scene: &Scene, extra: &[&str]) -> std::process::Command {
    run_script(scene, SHELL_TURN, extra)
}

/// `agentloop run --tools shell` on the scripted model `turns`.
fn run_script(scene: &Scene, turns: &str, extra: &[&str]) -> std::process::Command {
    let script = scene.config.join("script.json");
    std::fs::write(&script, turns).unwrap();
    let mut command = common::agentloop();
    command
        .args(["run", "run it", "--tools", "shell", "--root"])
        .arg(&scene.project)
        .args(["--provider", &format!("scripted:{}", script.display())])
        .args(extra)
        .env("XDG_CONFIG_HOME", &scene.config)
        .env("XDG_DATA_HOME", scene.config.join("data"))
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    command
}

#[test]
fn on_a_terminal_a_shell_call_asks_first_showing_the_command() {
    let scene = scene();
    let mut p = rexpect::session::spawn_command(run_command(&scene, &[]), Some(30_000)).unwrap();
    let shown = p.exp_string("[e]dit arguments: ").unwrap();
    assert!(shown.contains("? shell"), "{shown:?}");
    assert!(
        shown.contains("command: echo ran > marker.txt; cat marker.txt"),
        "{shown:?}"
    );
    assert!(
        !scene.project.join("marker.txt").exists(),
        "nothing runs before the answer"
    );
    p.send_line("y").unwrap();
    p.exp_string("Done.").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(
        std::fs::read_to_string(scene.project.join("marker.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn without_a_terminal_a_shell_call_is_rejected_unless_approved() {
    let scene = scene();
    let output = common::piped(run_command(&scene, &[]), "");
    assert_eq!(output.status.code(), Some(0));
    assert!(
        !scene.project.join("marker.txt").exists(),
        "a rejected call ran"
    );
    let output = common::piped(run_command(&scene, &["--approve", "shell"]), "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Done.\n");
    assert_eq!(
        std::fs::read_to_string(scene.project.join("marker.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn output_streams_as_progress_while_the_command_runs() {
    let scene = scene();
    let called = call(
        &scene,
        json!({"command": "echo first; sleep 1; echo second"}),
    );
    assert_eq!(called.code, Some(0), "{}", called.content);
    let first = called.progress.first().expect("no progress before the end");
    let header = "$ echo first; sleep 1; echo second\n";
    assert_eq!(
        first,
        &format!("{header}first\n"),
        "the first line shows before the second"
    );
    assert_eq!(
        called.progress.last(),
        Some(&format!("{header}first\nsecond\n")),
        "the live view ends with the last output"
    );
}

#[test]
fn the_configuration_can_allow_the_network_and_bound_the_time() {
    let scene = scene();
    std::fs::create_dir_all(scene.config.join("agentloop")).unwrap();
    std::fs::write(
        scene.config.join("agentloop/config.toml"),
        "[shell]\nnetwork = true\ntimeout_secs = 2\n",
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3).sendall(b'hi')\""
    );
    let called = call(&scene, json!({"command": command}));
    assert_eq!(called.code, Some(0), "{}", called.content);
    let (mut stream, _) = listener.accept().unwrap();
    let mut got = String::new();
    std::io::Read::read_to_string(&mut stream, &mut got).unwrap();
    assert_eq!(got, "hi");
    // A call cannot ask for more time than the configuration gives.
    let called = call(&scene, json!({"command": "sleep 30", "timeout_secs": 60}));
    assert!(
        called.content.starts_with("stopped: timed out after 2s"),
        "{}",
        called.content
    );
}

#[test]
fn a_launcher_the_kernel_refuses_namespaces_fails_typed_and_runs_nothing() {
    // Inside the sandbox the seccomp filter refuses unshare: a launcher
    // started there stands for a kernel without user namespaces.
    let scene = scene();
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_agentloop"));
    std::fs::create_dir_all(scene.config.join("agentloop")).unwrap();
    std::fs::write(
        scene.config.join("agentloop/config.toml"),
        format!("[shell]\nread = [{:?}]\n", binary.display().to_string()),
    )
    .unwrap();
    let spec = json!({
        "command": "touch inner-ran",
        "cwd": scene.project,
        "read": ["/usr", "/bin", "/lib", "/lib64"],
        "write": [scene.project],
        "network": false,
        "env": [],
        "timeout_ms": 5000,
        "max_processes": 16,
        "max_memory_bytes": 1_000_000_000u64,
        "max_file_bytes": 1_000_000u64,
        "max_open_files": 64,
    });
    let command = format!(
        "{} __agentloop-shell-launcher '{}' < /dev/zero; echo launcher=$?",
        binary.display(),
        spec
    );
    let called = call(&scene, json!({"command": command}));
    assert!(
        called.content.contains(r#""kind":"namespaces""#),
        "{}",
        called.content
    );
    assert!(called.content.contains("launcher=3"), "{}", called.content);
    assert!(
        !scene.project.join("inner-ran").exists(),
        "the command ran unsandboxed"
    );
}

#[test]
fn always_on_a_terminal_approves_the_command_prefix_not_every_command() {
    let scene = scene();
    let script = scene.config.join("prefix.json");
    std::fs::write(
        &script,
        r#"[
      {"steps": [{"type": "tool_call", "id": "t1", "name": "shell", "fragments": ["{\"command\": \"touch a.txt\"}"]}]},
      {"steps": [{"type": "tool_call", "id": "t2", "name": "shell", "fragments": ["{\"command\": \"touch b.txt\"}"]}]},
      {"steps": [{"type": "tool_call", "id": "t3", "name": "shell", "fragments": ["{\"command\": \"touch c.txt; touch d.txt\"}"]}]},
      {"steps": [{"type": "text", "chunks": ["Done."]}]}
    ]"#,
    )
    .unwrap();
    let mut command = common::agentloop();
    command
        .args(["run", "touch them", "--tools", "shell", "--root"])
        .arg(&scene.project)
        .args(["--provider", &format!("scripted:{}", script.display())])
        .env("XDG_CONFIG_HOME", &scene.config)
        .env("XDG_DATA_HOME", scene.config.join("data"))
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    let mut p = rexpect::session::spawn_command(command, Some(30_000)).unwrap();
    let first = p.exp_string("[e]dit arguments: ").unwrap();
    assert!(first.contains("[a]lways for `touch`"), "{first:?}");
    p.send_line("a").unwrap();
    // `touch b.txt` runs without asking; the chained command asks again.
    let second = p.exp_string("[e]dit arguments: ").unwrap();
    assert!(
        second.contains("approved: always for `touch`"),
        "{second:?}"
    );
    assert!(second.contains("touch c.txt; touch d.txt"), "{second:?}");
    assert!(second.contains("[a]lways for this call only"), "{second:?}");
    assert!(!scene.project.join("c.txt").exists());
    p.send_line("n").unwrap();
    p.exp_string("reason for the model").unwrap();
    p.send_line("").unwrap();
    p.exp_string("Done.").unwrap();
    p.exp_eof().unwrap();
    assert!(scene.project.join("a.txt").exists());
    assert!(scene.project.join("b.txt").exists());
    assert!(
        !scene.project.join("c.txt").exists(),
        "the chained command ran"
    );
}

#[test]
fn an_approvals_policy_can_let_command_prefixes_run_without_asking() {
    let scene = scene();
    std::fs::create_dir_all(scene.config.join("agentloop")).unwrap();
    std::fs::write(
        scene.config.join("agentloop/config.toml"),
        "[approvals]\nshell = { unless = { pointer = \"/command\", command_prefixes = [\"echo\"] } }\n",
    )
    .unwrap();
    // `echo ran > marker.txt; cat marker.txt` chains: it still asks, and
    // without a terminal it is rejected.
    let output = common::piped(run_command(&scene, &[]), "");
    assert_eq!(output.status.code(), Some(0));
    assert!(!scene.project.join("marker.txt").exists());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("needs approval"), "{stderr}");
    // A plain `echo` command runs without asking, even without a terminal.
    let plain = r#"[
      {"steps": [{"type": "tool_call", "id": "t1", "name": "shell", "fragments": ["{\"command\": \"echo plain-ran\"}"]}]},
      {"steps": [{"type": "text", "chunks": ["Done."]}]}
    ]"#;
    let command = run_script(&scene, plain, &[]);
    let output = common::piped(command, "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("needs approval"), "{stderr}");
    assert!(stderr.contains("plain-ran"), "the call ran: {stderr}");
}

#[test]
fn memory_is_bounded_per_process() {
    let scene = scene();
    std::fs::create_dir_all(scene.config.join("agentloop")).unwrap();
    std::fs::write(
        scene.config.join("agentloop/config.toml"),
        "[shell]\nmax_memory_mb = 256\n",
    )
    .unwrap();
    let called = call(
        &scene,
        json!({"command": "python3 -c 'b = bytearray(1024 * 1024 * 1024); print(\"allocated\")'; echo status=$?"}),
    );
    assert!(called.content.contains("MemoryError"), "{}", called.content);
    assert!(!called.content.contains("allocated"), "{}", called.content);
    assert!(called.content.contains("status=1"), "{}", called.content);
}

#[test]
fn memory_of_all_processes_together_is_bounded_where_a_memory_cgroup_can_be_made() {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if !root || !Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists() {
        let why = "the total memory bound needs root and a cgroup v1 memory hierarchy";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("NOT CHECKED HERE: {why}");
        return;
    }
    let scene = scene();
    std::fs::create_dir_all(scene.config.join("agentloop")).unwrap();
    std::fs::write(
        scene.config.join("agentloop/config.toml"),
        "[shell]\nmax_total_memory_mb = 300\n",
    )
    .unwrap();
    let hog = "python3 -c 'import time; b = bytearray(200 * 1024 * 1024); time.sleep(3)'";
    let command = format!(
        "{hog} & a=$!; {hog} & b=$!; {hog} & c=$!; \
         wait $a; echo a=$?; wait $b; echo b=$?; wait $c; echo c=$?"
    );
    let called = call(&scene, json!({"command": command, "timeout_secs": 60}));
    assert!(
        called.content.contains("=137"),
        "one of three 200 MiB processes is killed under a 300 MiB bound: {}",
        called.content
    );
}

/// Who starts `agentloop` for a probe: the test's own user, or an
/// ordinary user. Probes that run both ways hold for root and non-root
/// callers alike.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Identity {
    Caller,
    Unprivileged,
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// The ordinary user a root test run starts `agentloop` as, named by
/// `AGENTLOOP_TEST_UNPRIVILEGED_USER` (`.ci/run` makes one): its uid and gid.
fn unprivileged_user() -> Option<(u32, u32)> {
    let name = std::env::var("AGENTLOOP_TEST_UNPRIVILEGED_USER").ok()?;
    let id = |flag: &str| -> u32 {
        let out = std::process::Command::new("id")
            .args([flag, &name])
            .output()
            .unwrap();
        assert!(out.status.success(), "no user {name}");
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    Some((id("-u"), id("-g")))
}

/// The binary where any user can run it: hard-linked (or copied) into a
/// world-readable folder, since the build's own folder may sit below a
/// home only root can enter.
fn reachable_binary() -> &'static Path {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        use std::os::unix::fs::MetadataExt;
        let built = PathBuf::from(env!("CARGO_BIN_EXE_agentloop"));
        let meta = std::fs::metadata(&built).unwrap();
        // One link per build, shared by the test processes.
        let folder = Path::new("/tmp").join(format!(
            "agentloop-test-bin-{}-{}",
            meta.ino(),
            meta.mtime()
        ));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
        let binary = folder.join("agentloop");
        if !binary.exists() && std::fs::hard_link(&built, &binary).is_err() && !binary.exists() {
            let partial = folder.join(format!("agentloop.{}", std::process::id()));
            std::fs::copy(&built, &partial).unwrap();
            std::fs::rename(&partial, &binary).unwrap();
        }
        binary
    })
}

/// Gives everything below `path` to `uid`/`gid`.
fn hand_over(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            hand_over(&entry.path(), uid, gid);
        }
    }
}

/// `agentloop` started as `identity`, with the scene made that user's; None
/// (said on stderr, refused under CI) where that identity is not at hand.
fn agentloop_as(identity: Identity, scene: &Scene) -> Option<std::process::Command> {
    if identity == Identity::Caller || !running_as_root() {
        // A non-root caller is the unprivileged case already.
        return Some(common::agentloop());
    }
    let Some((uid, gid)) = unprivileged_user() else {
        let why = "set AGENTLOOP_TEST_UNPRIVILEGED_USER to an ordinary user to run this probe \
                   as one (the tests run as root)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("NOT CHECKED HERE: {why}");
        return None;
    };
    hand_over(scene._dir.path(), uid, gid);
    let mut command = std::process::Command::new("setpriv");
    command
        .args([
            &format!("--reuid={uid}"),
            &format!("--regid={gid}"),
            "--clear-groups",
            "--",
        ])
        .arg(reachable_binary())
        .env("HOME", &scene.config);
    common::without_provider_keys(&mut command);
    Some(command)
}

/// `command` started by `bash -c 'SETUP; exec "$@"'`, environment kept.
fn wrapped(setup: &str, command: &std::process::Command) -> std::process::Command {
    let mut bash = std::process::Command::new("bash");
    bash.arg("-c")
        .arg(format!("{setup}; exec \"$@\""))
        .arg("bash")
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => bash.env(name, value),
            None => bash.env_remove(name),
        };
    }
    bash
}

/// Two tests of one probe: as the test's user and as an ordinary one.
macro_rules! both_ways {
    ($probe:ident: $caller:ident, $unprivileged:ident) => {
        #[test]
        fn $caller() {
            $probe(Identity::Caller);
        }
        #[test]
        fn $unprivileged() {
            $probe(Identity::Unprivileged);
        }
    };
}

fn probe_runs_reads_and_writes_only_its_folders(identity: Identity) {
    let scene = scene();
    let Some(agentloop) = agentloop_as(identity, &scene) else {
        return;
    };
    let key = scene.outside.join(".ssh/id_ed25519");
    let command = format!(
        "echo hi; echo kept > made.txt; echo x > {out}/written.txt; cat {key}; \
         cat /proc/self/root{key}; ln {key} hard; cat /etc/ssl/private/* 2>&1 | head -c 300; true",
        out = scene.outside.display(),
        key = key.display()
    );
    let called = call_as(&scene, json!({"command": command}), agentloop);
    assert_eq!(called.code, Some(0), "{}", called.content);
    assert!(called.content.contains("hi\n"), "{}", called.content);
    assert_eq!(
        std::fs::read_to_string(scene.project.join("made.txt")).unwrap(),
        "kept\n"
    );
    assert!(!scene.outside.join("written.txt").exists());
    assert!(!scene.project.join("hard").exists());
    assert!(!called.content.contains(SSH_KEY), "{}", called.content);
    assert!(
        !called.content.contains("PRIVATE KEY"),
        "{}",
        called.content
    );
}
both_ways!(probe_runs_reads_and_writes_only_its_folders:
    as_caller_a_command_runs_and_reaches_only_its_folders,
    as_ordinary_user_a_command_runs_and_reaches_only_its_folders);

/// The length of `path` (0 when missing).
fn length(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Whether `path` stops growing: unchanged for a whole second, within five.
fn stops_growing(path: &Path) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    let mut last = (length(path), Instant::now());
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
        let now = length(path);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() >= Duration::from_secs(1) {
            return true;
        }
    }
    false
}

fn probe_the_launcher_is_out_of_the_commands_reach(identity: Identity) {
    let scene = scene();
    let Some(agentloop) = agentloop_as(identity, &scene) else {
        return;
    };
    let token = unique("reach");
    // Every way a process may name the launcher from inside: its process
    // group, every process it may signal, its parent, and the host PIDs
    // /proc shows.
    let command = format!(
        ": {token}; trap '' TERM HUP INT; \
         (trap '' TERM HUP INT; while :; do echo x >> beat; sleep 0.05; done) & \
         read -r s < /proc/self/stat; set -- $s; launcher=$4; \
         read -r s < /proc/$launcher/stat; set -- $s; caller=$4; \
         kill -TERM 0; kill -HUP 0; kill -TERM -1; kill -KILL $PPID; \
         kill -KILL $launcher; kill -KILL $caller; kill -KILL -$launcher; \
         sleep 1; echo survived"
    );
    let called = call_as(
        &scene,
        json!({"command": command, "timeout_secs": 30}),
        agentloop,
    );
    assert!(
        called.content.starts_with("exit code: 0\n"),
        "the launcher reported the command's end: {}",
        called.content
    );
    assert!(called.content.contains("survived"), "{}", called.content);
    assert!(
        length(&scene.project.join("beat")) > 0,
        "the writer never ran"
    );
    assert!(
        stops_growing(&scene.project.join("beat")),
        "the command wrote after the call returned"
    );
    assert!(no_process_with(&token, Duration::from_secs(5)));
}
both_ways!(probe_the_launcher_is_out_of_the_commands_reach:
    as_caller_the_launcher_is_out_of_the_commands_reach,
    as_ordinary_user_the_launcher_is_out_of_the_commands_reach);

fn probe_the_end_of_the_launcher_ends_the_command(identity: Identity) {
    let scene = scene();
    let Some(mut agentloop) = agentloop_as(identity, &scene) else {
        return;
    };
    let token = unique("orphaned");
    let command = format!(
        ": {token}; trap '' TERM HUP INT; \
         (trap '' TERM HUP INT; while :; do echo x >> beat; sleep 0.05; done) & \
         setsid sh -c 'while :; do echo y >> beat2; sleep 0.05; done' & sleep 300"
    );
    let started = Instant::now();
    let mut child = tool_call(&mut agentloop, &scene, &json!({"command": command}))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while length(&scene.project.join("beat2")) == 0 {
        assert!(Instant::now() < until, "the command never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let launcher = (0..100)
        .find_map(|_| {
            let found = launchers_with(&token);
            if found.is_empty() {
                std::thread::sleep(Duration::from_millis(50));
            }
            found.into_iter().next()
        })
        .expect("no launcher process");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(launcher),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(
        no_process_with(&token, Duration::from_secs(3)),
        "the command outlived its launcher"
    );
    assert!(stops_growing(&scene.project.join("beat")));
    assert!(stops_growing(&scene.project.join("beat2")));
    child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
}
both_ways!(probe_the_end_of_the_launcher_ends_the_command:
    as_caller_the_end_of_the_launcher_ends_the_command,
    as_ordinary_user_the_end_of_the_launcher_ends_the_command);

/// PIDs of launcher processes whose spec holds `token`.
fn launchers_with(token: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline);
            (cmdline.contains("__agentloop-shell-launcher") && cmdline.contains(token))
                .then_some(pid)
        })
        .collect()
}

fn probe_inherited_descriptors_do_not_reach_the_command(identity: Identity) {
    let scene = scene();
    let Some(agentloop) = agentloop_as(identity, &scene) else {
        return;
    };
    let notes = scene.outside.join("notes.txt");
    let key = scene.outside.join(".ssh/id_ed25519");
    let setup = format!(
        "exec 9>>'{}' 8<'{}' 7<'{}'",
        notes.display(),
        key.display(),
        scene.outside.display()
    );
    let command = "echo leaked >&9; cat <&8; ls <&7; cat /proc/self/fd/8; ls /proc/self/fd; \
                   echo fds-done";
    let called = call_as(
        &scene,
        json!({"command": command}),
        wrapped(&setup, &agentloop),
    );
    assert!(called.content.contains("fds-done"), "{}", called.content);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "unchanged\n");
    assert!(!called.content.contains(SSH_KEY), "{}", called.content);
    assert!(
        called.content.contains("Bad file descriptor"),
        "{}",
        called.content
    );
}
both_ways!(probe_inherited_descriptors_do_not_reach_the_command:
    as_caller_inherited_descriptors_do_not_reach_the_command,
    as_ordinary_user_inherited_descriptors_do_not_reach_the_command);

/// Files below `root` with a setuid or setgid bit.
fn privileged_files(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let meta = entry.path().symlink_metadata().unwrap();
        if meta.permissions().mode() & 0o6000 != 0 {
            found.push(format!(
                "{} {:o}",
                entry.path().display(),
                meta.permissions().mode()
            ));
        }
        if meta.is_dir() {
            found.extend(privileged_files(&entry.path()));
        }
    }
    found
}

fn probe_no_setuid_or_setgid_file_is_left(identity: Identity) {
    let scene = scene();
    let Some(agentloop) = agentloop_as(identity, &scene) else {
        return;
    };
    let command = "cp /bin/sh ./x && chmod 4755 ./x; chmod u+s ./x; chmod g+s ./x; \
                   chmod 6755 ./x; install -m 4755 /bin/sh ./y; install -m 2755 /bin/sh ./z; \
                   cp -p /bin/su ./su; cp -a /bin/su ./su2; mkdir d; chmod 2775 d; \
                   mkdir -m 6777 e; cd $TMPDIR && cp /bin/sh t && chmod 4755 t; \
                   ls -l $TMPDIR/t; ls -l; echo probes-done";
    let called = call_as(&scene, json!({"command": command}), agentloop);
    assert!(called.content.contains("probes-done"), "{}", called.content);
    assert!(scene.project.join("x").exists(), "{}", called.content);
    assert_eq!(privileged_files(&scene.project), Vec::<String>::new());
    assert!(
        !called.content.contains("rws"),
        "a setuid file existed inside: {}",
        called.content
    );
    assert!(
        called.content.contains("Operation not permitted"),
        "{}",
        called.content
    );
}
both_ways!(probe_no_setuid_or_setgid_file_is_left:
    as_caller_no_setuid_or_setgid_file_is_left,
    as_ordinary_user_no_setuid_or_setgid_file_is_left);

fn write_quota_scene(identity: Identity) -> Option<(Scene, std::process::Command)> {
    let scene = scene();
    std::fs::create_dir_all(scene.config.join("agentloop")).unwrap();
    std::fs::write(
        scene.config.join("agentloop/config.toml"),
        "[shell]\nmax_write_mb = 64\nmax_write_files = 2000\n",
    )
    .unwrap();
    let command = agentloop_as(identity, &scene)?;
    Some((scene, command))
}

/// Allocated bytes below `root`.
fn allocated(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let meta = entry.path().symlink_metadata().unwrap();
        total += meta.blocks() * 512;
        if meta.is_dir() {
            total += allocated(&entry.path());
        }
    }
    total
}

fn probe_the_write_quota_stops_bytes_files_and_reservations(identity: Identity) {
    let Some((scene, _)) = write_quota_scene(identity) else {
        return;
    };
    let cases = [
        (
            "head -c 1000000000 /dev/zero > big; echo wrote; sleep 30",
            "stopped: write quota: the command added more than 67108864 bytes",
        ),
        (
            "cd $TMPDIR; head -c 1000000000 /dev/zero > big; sleep 30",
            "stopped: write quota",
        ),
        (
            "exec 3>gone; rm gone; head -c 1000000000 /dev/zero >&3; sleep 30",
            "stopped: write quota",
        ),
        (
            "i=0; while [ $i -lt 20000 ]; do : > f$i; i=$((i+1)); done; sleep 30",
            "stopped: file quota: the command added more than 2000 files",
        ),
    ];
    for (command, expected) in cases {
        let agentloop = agentloop_as(identity, &scene).unwrap();
        let called = call_as(
            &scene,
            json!({"command": command, "timeout_secs": 60}),
            agentloop,
        );
        assert!(
            called.content.starts_with(expected),
            "{command}: {}",
            called.content
        );
        assert!(
            called.took < Duration::from_secs(40),
            "{command}: {:?}",
            called.took
        );
        for entry in std::fs::read_dir(&scene.project).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                std::fs::remove_dir_all(path).unwrap();
            } else {
                std::fs::remove_file(path).unwrap();
            }
        }
    }
    // Reserving blocks without writing them is refused outright.
    let agentloop = agentloop_as(identity, &scene).unwrap();
    let called = call_as(
        &scene,
        json!({"command": "fallocate --keep-size -l 5G sparse; echo status=$?; fallocate -l 3G full; echo status=$?"}),
        agentloop,
    );
    assert!(called.content.contains("status=1"), "{}", called.content);
    assert!(
        called.content.contains("Operation not supported"),
        "{}",
        called.content
    );
    assert!(
        allocated(&scene.project) < 1024 * 1024,
        "blocks were reserved"
    );
}
both_ways!(probe_the_write_quota_stops_bytes_files_and_reservations:
    as_caller_the_write_quota_stops_bytes_files_and_reservations,
    as_ordinary_user_the_write_quota_stops_bytes_files_and_reservations);

/// Run as root, the command is an ordinary user on the host: a root-only
/// file below a folder the configuration lets it read stays unreadable,
/// while what it writes in the project is stored as the project's owner.
#[test]
fn as_root_the_command_acts_as_an_ordinary_user_on_the_host() {
    use std::os::unix::fs::MetadataExt;
    if !running_as_root() {
        // An ordinary caller is an ordinary user on the host already.
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI runs the tests as root"
        );
        eprintln!("NOT CHECKED HERE: the tests do not run as root");
        return;
    }
    let scene = scene();
    let shared = scene.outside.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("public.txt"), "public-5e1d\n").unwrap();
    std::fs::write(shared.join("root-only.txt"), "root-only-secret-c07a\n").unwrap();
    std::fs::set_permissions(
        shared.join("root-only.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::fs::create_dir_all(scene.config.join("agentloop")).unwrap();
    std::fs::write(
        scene.config.join("agentloop/config.toml"),
        format!("[shell]\nread = [\"{}\"]\n", shared.display()),
    )
    .unwrap();
    std::fs::write(scene.project.join("own.txt"), "project-file-b2\n").unwrap();
    std::fs::set_permissions(
        scene.project.join("own.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let command = format!(
        "cat {shared}/public.txt; cat {shared}/root-only.txt; cat own.txt; \
         echo made > made.txt; mkdir sub; echo deeper > sub/file; cat /proc/self/uid_map",
        shared = shared.display()
    );
    let called = call(&scene, json!({"command": command}));
    assert!(called.content.contains("public-5e1d"), "{}", called.content);
    assert!(
        !called.content.contains("root-only-secret-c07a"),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("root-only.txt: Permission denied"),
        "{}",
        called.content
    );
    assert!(
        called.content.contains("project-file-b2"),
        "{}",
        called.content
    );
    // The id inside maps to no host root.
    let map_line = called
        .content
        .lines()
        .find(|line| line.trim_start().starts_with("1000"))
        .unwrap_or_else(|| panic!("no uid map line in {}", called.content));
    let host_id: u32 = map_line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_ne!(host_id, 0, "{}", called.content);
    // What the command made belongs to the project's owner on the host.
    for made in ["made.txt", "sub", "sub/file"] {
        let meta = std::fs::metadata(scene.project.join(made)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (0, 0), "{made}");
    }
}
