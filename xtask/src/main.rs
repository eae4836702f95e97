//! Project automation for the agentloop workspace, run as `cargo xtask <command>`.
//!
//! Commands:
//!
//! - `layers`: checks the design card's crate layering from `cargo metadata`
//!   (no crate below `agentloop-storage` depends on it, and every edge between
//!   workspace crates is one the card allows), and the module rules inside
//!   crates read from their sources (no import cycle among the engine's
//!   modules; its sans-IO machine reaches nothing outside itself; only its
//!   clock module reads the clock);
//! - `ci`: formatting, clippy, layers, the schema, the fuzz targets' build,
//!   packaging, nextest, doctests and docs, stopping at the first failure;
//!   arguments after `--` go to `cargo nextest run`;
//! - `package`: checks that every publishable crate's manifest, README,
//!   LICENSE, docs.rs metadata and rust-version are in order and that it
//!   packages (`--verify` also builds each package);
//! - `bench`: runs the registered benchmarks;
//! - `soak`: the 10-minute soak of the HTTP API on PostgreSQL;
//! - `schema`: writes or checks the event stream's JSON Schema.
//!
//! Each command lives in its own module; this file only parses the command
//! line and holds the helpers they share.

mod bench;
mod boundaries;
mod ci;
mod layers;
mod modules;
mod package;
mod schema;
mod soak;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};

const USAGE: &str = "\
usage: cargo xtask <command> [args]

commands:
  layers              check the crate layering rules of the design card and module rules
  ci [-- <args>...]   fmt, clippy, layers, schema, fuzz build, package, nextest (extra args
                      passed through), doctests, docs
  package [--verify]  check that every publishable crate packages (and with --verify builds)
  bench [args...]     run the benchmarks
  soak                soak the HTTP API on PostgreSQL for 10 minutes (200 users)
  schema [--check]    write (or check) docs/events.schema.json and docs/inputs.schema.json
  help                print this message";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Usage(message)) => {
            eprintln!("xtask: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(err) => {
            eprintln!("xtask: error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(args: &[String]) -> Result<(), Error> {
    let Some((command, rest)) = args.split_first() else {
        return Err(Error::Usage("missing command".to_owned()));
    };
    match command.as_str() {
        "layers" => {
            if let Some(extra) = rest.first() {
                return Err(Error::Usage(format!(
                    "`layers` takes no arguments, got `{extra}`"
                )));
            }
            layers::run()
        }
        "ci" => ci::run(rest),
        "package" => package::run(rest),
        "bench" => bench::run(rest),
        "schema" => schema::run(rest),
        "soak" => soak::run(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(Error::Usage(format!("unknown command `{other}`"))),
    }
}

/// Why an xtask command failed.
#[derive(Debug)]
pub enum Error {
    /// The command line could not be understood.
    Usage(String),
    /// A program could not be started.
    Spawn {
        /// The command line that was attempted.
        command: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A step ran and exited unsuccessfully.
    StepFailed {
        /// The step's name, as printed before it ran.
        step: String,
        /// How the step's process ended.
        status: ExitStatus,
    },
    /// `cargo metadata` failed or printed something unusable.
    Metadata(String),
    /// The workspace breaks the design card's layering rules.
    Layers(Vec<layers::Violation>),
    /// A crate's sources break the module rules.
    Modules(Vec<modules::Violation>),
    /// Publishable crates are not ready to publish.
    Package(Vec<package::Problem>),
    /// Any other failure, described by its message.
    Failed(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(message) => write!(f, "{message}"),
            Error::Spawn { command, source } => {
                write!(f, "could not start `{command}`: {source}")
            }
            Error::StepFailed { step, status } => {
                write!(f, "step `{step}` failed ({status})")
            }
            Error::Metadata(message) => write!(f, "cargo metadata: {message}"),
            Error::Layers(violations) => {
                write!(
                    f,
                    "{} layering violation(s) of the design card:",
                    violations.len()
                )?;
                for violation in violations {
                    write!(f, "\n  - {violation}")?;
                }
                Ok(())
            }
            Error::Package(problems) => {
                write!(
                    f,
                    "{} packaging problem(s) of publishable crates:",
                    problems.len()
                )?;
                for problem in problems {
                    write!(f, "\n  - {problem}")?;
                }
                Ok(())
            }
            Error::Modules(violations) => {
                write!(f, "{} module rule violation(s):", violations.len())?;
                for violation in violations {
                    write!(f, "\n  - {violation}")?;
                }
                Ok(())
            }
            Error::Failed(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The cargo executable driving this run: `$CARGO` when cargo set it, the one
/// that built xtask otherwise, and `cargo` from `PATH` as a last resort.
pub fn cargo_program() -> OsString {
    std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(OsString::from))
        .unwrap_or_else(|| OsString::from("cargo"))
}

/// The workspace root: the directory holding the workspace `Cargo.toml`.
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// A `cargo` command with `args`, run from the workspace root.
pub fn cargo(args: &[&str]) -> Command {
    let mut command = Command::new(cargo_program());
    command.args(args).current_dir(workspace_root());
    command
}

/// Renders a command as a shell-like line for messages.
pub fn describe(command: &Command) -> String {
    let mut line = Path::new(command.get_program())
        .file_name()
        .unwrap_or(command.get_program())
        .to_string_lossy()
        .into_owned();
    for arg in command.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// What `command` prints on stdout; a failure to start is `Error::Spawn`,
/// a failed exit `failed` with the command, its status and its stderr.
pub fn stdout_of(command: &mut Command, failed: fn(String) -> Error) -> Result<Vec<u8>, Error> {
    let output = command.output().map_err(|source| Error::Spawn {
        command: describe(command),
        source,
    })?;
    if !output.status.success() {
        return Err(failed(format!(
            "`{}` failed ({}):\n{}",
            describe(command),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    Ok(output.stdout)
}

/// The workspace as `cargo metadata --format-version 1` describes it, with
/// the resolved dependency graph of the lockfile.
pub fn cargo_metadata() -> Result<serde_json::Value, Error> {
    let manifest = workspace_root().join("Cargo.toml");
    let mut command = cargo(&["metadata", "--format-version", "1", "--manifest-path"]);
    command.arg(&manifest);
    let stdout = stdout_of(&mut command, Error::Metadata)?;
    serde_json::from_slice(&stdout)
        .map_err(|err| Error::Metadata(format!("output is not valid JSON: {err}")))
}

/// Runs `command` with inherited stdio as the step called `step`; fails
/// unless it exits successfully.
pub fn run_step(step: &str, command: &mut Command) -> Result<(), Error> {
    let status = command.status().map_err(|source| Error::Spawn {
        command: describe(command),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::StepFailed {
            step: step.to_owned(),
            status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn missing_and_unknown_commands_are_usage_errors() {
        assert!(matches!(dispatch(&[]), Err(Error::Usage(_))));
        assert!(matches!(
            dispatch(&args(&["frobnicate"])),
            Err(Error::Usage(m)) if m.contains("frobnicate")
        ));
        assert!(matches!(
            dispatch(&args(&["layers", "extra"])),
            Err(Error::Usage(_))
        ));
    }

    #[test]
    fn workspace_root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
        assert!(manifest.contains("[workspace]"));
    }

    #[test]
    fn describe_renders_program_and_arguments() {
        let mut command = Command::new("/usr/bin/cargo");
        command.args(["fmt", "--all", "--check"]);
        assert_eq!(describe(&command), "cargo fmt --all --check");
    }
}
