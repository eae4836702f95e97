//! The shell tool's configuration: the folder commands work in, what
//! they may read, the network switch, the environment they get, their
//! limits, and the launcher that sets up the sandbox.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::protocol::LAUNCHER_ARG;
use super::{launcher, policy};

/// Limits of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellLimits {
    /// Wall time of a call (a call may ask for less, never more).
    pub timeout: Duration,
    /// Output kept for the result per stream: half from the start, half
    /// from the end.
    pub kept_output_bytes: usize,
    /// Output (stdout and stderr together) after which the command is
    /// stopped.
    pub max_output_bytes: u64,
    /// Processes and threads at once.
    pub max_processes: u64,
    /// Data memory of one process, in bytes.
    pub max_memory_bytes: u64,
    /// Memory of all the command's processes together, where a memory
    /// cgroup can be made (the caller is root on cgroup v1).
    pub max_total_memory_bytes: u64,
    /// Largest file written, in bytes.
    pub max_file_bytes: u64,
    /// Open files of one process.
    pub max_open_files: u64,
    /// Bytes (allocated blocks) a call may add to the project folder and
    /// its temporary folder together.
    pub max_write_bytes: u64,
    /// Files a call may add to the project folder and its temporary folder
    /// together.
    pub max_write_files: u64,
}

impl Default for ShellLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(300),
            kept_output_bytes: 16 * 1024,
            max_output_bytes: 16 * 1024 * 1024,
            max_processes: 512,
            max_memory_bytes: 8 * 1024 * 1024 * 1024,
            max_total_memory_bytes: 8 * 1024 * 1024 * 1024,
            max_file_bytes: 4 * 1024 * 1024 * 1024,
            max_open_files: 4096,
            max_write_bytes: 4 * 1024 * 1024 * 1024,
            max_write_files: 100_000,
        }
    }
}

/// The program started as the launcher, with the arguments before the
/// spec (normally `[LAUNCHER_ARG]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// The binary.
    pub program: PathBuf,
    /// Its first arguments.
    pub args: Vec<OsString>,
}

impl Launcher {
    /// This very binary, re-executed (it must call [`launcher_main`](super::launcher_main) when
    /// [`is_launcher_invocation`](super::is_launcher_invocation)).
    pub fn current_exe() -> Result<Self, ShellConfigError> {
        let program = std::env::current_exe().map_err(|e| ShellConfigError::Launcher {
            message: e.to_string(),
        })?;
        Ok(Self::binary(program))
    }

    /// A binary that runs [`launcher_main`](super::launcher_main) when given [`LAUNCHER_ARG`].
    pub fn binary(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: vec![OsString::from(LAUNCHER_ARG)],
        }
    }
}

/// A configuration the tool refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellConfigError {
    /// The project folder cannot be used.
    #[error("cannot use {path} as the shell tool's project folder: {message}")]
    Root {
        /// The folder.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A variable named to be passed looks like a secret.
    #[error("the shell tool never passes {name}: its name looks like a secret")]
    SecretVariable {
        /// The name.
        name: String,
    },
    /// A read path is not absolute.
    #[error("shell read paths must be absolute: {path}")]
    RelativeReadPath {
        /// The path.
        path: PathBuf,
    },
    /// The launcher binary cannot be found.
    #[error("cannot find the sandbox launcher: {message}")]
    Launcher {
        /// Why.
        message: String,
    },
}

/// What the shell tool may touch and how long it may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellConfig {
    pub(super) root: PathBuf,
    pub(super) read: Vec<PathBuf>,
    pub(super) network: bool,
    pub(super) env: Vec<String>,
    pub(super) limits: ShellLimits,
    pub(super) launcher: Launcher,
}

impl ShellConfig {
    /// Commands work in `root` (the project folder), with the default read
    /// list, no network and default limits, launched by `launcher`.
    pub fn new(root: impl AsRef<Path>, launcher: Launcher) -> Result<Self, ShellConfigError> {
        let root = root.as_ref();
        let root_error = |message: String| ShellConfigError::Root {
            path: root.to_path_buf(),
            message,
        };
        let canonical = root.canonicalize().map_err(|e| root_error(e.to_string()))?;
        if !canonical.is_dir() {
            return Err(root_error("not a folder".to_owned()));
        }
        Ok(Self {
            root: canonical,
            read: Vec::new(),
            network: false,
            env: Vec::new(),
            limits: ShellLimits::default(),
            launcher,
        })
    }

    /// Adds folders or files the command may read (absolute paths).
    pub fn with_read_paths(
        mut self,
        paths: impl IntoIterator<Item = PathBuf>,
    ) -> Result<Self, ShellConfigError> {
        for path in paths {
            if !path.is_absolute() {
                return Err(ShellConfigError::RelativeReadPath { path });
            }
            self.read.push(path);
        }
        Ok(self)
    }

    /// Lets the command use the host's network.
    pub fn with_network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// Passes these variables from the caller's environment when set;
    /// a name that looks like a secret is refused.
    pub fn with_env(
        mut self,
        names: impl IntoIterator<Item = String>,
    ) -> Result<Self, ShellConfigError> {
        for name in names {
            if policy::is_secret_name(&name) {
                return Err(ShellConfigError::SecretVariable { name });
            }
            self.env.push(name);
        }
        Ok(self)
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: ShellLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The project folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the network is allowed.
    pub fn network(&self) -> bool {
        self.network
    }

    /// The limits.
    pub fn limits(&self) -> &ShellLimits {
        &self.limits
    }

    /// Every path the command may read: the system list, the toolchains
    /// and the extra read paths.
    pub fn read_paths(&self) -> Vec<PathBuf> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let cargo_home = std::env::var_os("CARGO_HOME").map(PathBuf::from);
        let mut paths: Vec<PathBuf> = policy::SYSTEM_READ.iter().map(PathBuf::from).collect();
        paths.extend(policy::toolchain_read(
            home.as_deref(),
            cargo_home.as_deref(),
        ));
        paths.extend(self.read.iter().cloned());
        paths.retain(|p| launcher::exists(p));
        paths
    }

    /// The command's environment, with `temp` as its home.
    pub(super) fn environment(&self, temp: &Path) -> Vec<(String, String)> {
        let get = |name: &str| std::env::var(name).ok();
        let home = get("HOME").map(PathBuf::from);
        let temp = temp.display().to_string();
        let mut env = vec![
            (
                "PATH".to_owned(),
                get("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ),
            ("HOME".to_owned(), temp.clone()),
            ("TMPDIR".to_owned(), temp),
            ("TERM".to_owned(), "dumb".to_owned()),
            (
                "LANG".to_owned(),
                get("LANG").unwrap_or_else(|| "C.UTF-8".to_owned()),
            ),
        ];
        // Toolchains find themselves through these once HOME has moved.
        for (name, default) in [
            ("CARGO_HOME", ".cargo"),
            ("RUSTUP_HOME", ".rustup"),
            ("PYENV_ROOT", ".pyenv"),
        ] {
            let value = get(name).map(PathBuf::from).or_else(|| {
                home.as_ref()
                    .map(|h| h.join(default))
                    .filter(|p| p.exists())
            });
            if let Some(value) = value {
                env.push((name.to_owned(), value.display().to_string()));
            }
        }
        for name in policy::PASSED_ENV
            .iter()
            .map(|n| (*n).to_owned())
            .chain(self.env.iter().cloned())
        {
            if policy::is_secret_name(&name) || env.iter().any(|(n, _)| *n == name) {
                continue;
            }
            if let Some(value) = get(&name) {
                env.push((name, value));
            }
        }
        env
    }
}
