//! Command hooks from the configuration file (`[[hooks]]`): a shell
//! command asked at a lifecycle moment of `run`, and `agentloop hooks
//! list`.
//!
//! A hook's command gets one JSON object on stdin — the moment
//! (`agentloop_types::HookInput`, tagged by `event`: for the sub-agent
//! moments `before_subagent` and `after_subagent`, the call's `tool`,
//! `tool_use_id` and `arguments` — the sub-agent's task — and after it
//! ends its `result` and `is_error`) plus `cwd` — and
//! answers by its exit code: 0 passes (or, with a JSON object on stdout,
//! decides: `{"decision": "block", "reason": ...}`, `{"decision":
//! "rewrite", "arguments": {...}}`, `{"decision": "add_context", "text":
//! ...}` ...), 2 blocks with its stderr as the reason. Any other end — another
//! exit code, a signal, more output than `max_output_bytes`, no answer
//! within `timeout_ms`, a stdout that is not a decision — is reported in
//! the run's `hook` event and answered with the hook's `on_error` (`pass`
//! unless set to `block`).

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agentloop_types::{Hook, HookDecision, HookError, HookInput, HookPoint, Hooks};
use clap::Subcommand;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::out::{Failure, Outcome, Stdout};

/// One `[[hooks]]` entry of the configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// The moment: `run_start`, `user_prompt_submitted`,
    /// `before_model_call`, `before_compaction`, `before_tool_call`,
    /// `before_subagent`, `after_tool_call`, `after_subagent` or `run_end`.
    /// The sub-agent moments are asked about calls of tools that start a
    /// sub-agent (`minion`), after the tool-call moment of the same call.
    pub event: String,
    /// Tool names it is asked about (tool and sub-agent moments only): `*`
    /// any run of characters, `|` between alternatives; every tool when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The command, run with `/bin/sh -c` in the current folder; a
    /// relative program path as its first word (`./scripts/check.sh`) is
    /// taken from the configuration file's folder.
    pub command: String,
    /// The name its decisions are recorded under (the command by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How long it may take, in milliseconds (10,000 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// How much it may write on stdout and on stderr, in bytes (64 KiB by
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<usize>,
    /// What a hook that fails decides: `pass` (the default) or `block`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
}

/// What a failed command hook decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The moment passes.
    Pass,
    /// The moment is blocked, the failure as the reason.
    Block,
}

const DEFAULT_TIMEOUT_MS: u64 = 10_000;
const DEFAULT_MAX_OUTPUT: usize = 64 * 1024;

/// A configured command as a [`Hook`].
#[derive(Debug, Clone)]
pub struct CommandHook {
    name: String,
    point: HookPoint,
    tool: Option<String>,
    command: String,
    timeout: Duration,
    max_output: usize,
    on_error: OnError,
    cwd: PathBuf,
}

/// The hooks the configuration's `[[hooks]]` entries make, in file order;
/// an entry naming no known moment, or with an empty command, is refused.
/// `config_dir` is the configuration file's folder, where relative
/// program paths are taken from.
pub fn from_config(entries: &[HookEntry], config_dir: &Path) -> Result<Hooks, Failure> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut hooks = Hooks::default();
    for (n, entry) in entries.iter().enumerate() {
        hooks.push(Arc::new(
            CommandHook::new(entry, cwd.clone(), config_dir).map_err(|reason| {
                Failure::usage(format!("the configuration's hooks[{n}]: {reason}"))
            })?,
        ));
    }
    Ok(hooks)
}

/// The program a command starts: its first word, when it is a relative
/// path (`./check.sh`, `scripts/check.sh`) rather than a name the shell
/// looks up or an absolute path.
fn relative_program(command: &str) -> Option<&str> {
    let first = command.split_whitespace().next()?;
    (first.contains('/') && !first.starts_with('/') && !first.contains(['\'', '"', '$', '`']))
        .then_some(first)
}

/// `command` with a relative program path taken from `dir`, quoted for
/// the shell.
fn resolved(command: &str, dir: &Path) -> String {
    let Some(program) = relative_program(command) else {
        return command.to_owned();
    };
    let path = dir
        .join(program)
        .display()
        .to_string()
        .replace('\'', "'\\''");
    let rest = command
        .trim_start()
        .strip_prefix(program)
        .unwrap_or_default();
    format!("'{path}'{rest}")
}

impl CommandHook {
    fn new(entry: &HookEntry, cwd: PathBuf, config_dir: &Path) -> Result<Self, String> {
        let point = HookPoint::from_name(&entry.event).ok_or_else(|| {
            let names: Vec<&str> = HookPoint::ALL.iter().map(|p| p.name()).collect();
            format!(
                "unknown event {:?}; one of {}",
                entry.event,
                names.join(", ")
            )
        })?;
        if entry.command.trim().is_empty() {
            return Err("the command is empty".to_owned());
        }
        let about_tools = matches!(
            point,
            HookPoint::BeforeToolCall
                | HookPoint::AfterToolCall
                | HookPoint::BeforeSubagent
                | HookPoint::AfterSubagent
        );
        if entry.tool.is_some() && !about_tools {
            return Err(format!(
                "`tool` applies to before_tool_call, after_tool_call, before_subagent and \
                 after_subagent, not {}",
                point.name()
            ));
        }
        Ok(Self {
            name: entry.name.clone().unwrap_or_else(|| entry.command.clone()),
            point,
            tool: entry.tool.clone(),
            command: resolved(&entry.command, config_dir),
            timeout: Duration::from_millis(entry.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)),
            max_output: entry.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT),
            on_error: entry.on_error.unwrap_or(OnError::Pass),
            cwd,
        })
    }

    /// Runs the command over `input` and reads its answer.
    async fn ask(&self, input: &HookInput) -> Result<HookDecision, HookError> {
        let mut payload = serde_json::to_value(input).map_err(|e| HookError::new(e.to_string()))?;
        if let Some(object) = payload.as_object_mut() {
            object.insert(
                "cwd".to_owned(),
                serde_json::Value::String(self.cwd.display().to_string()),
            );
        }
        let mut child = tokio::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&self.command)
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // A group of its own, so a hook that times out is stopped with
            // everything it started.
            .process_group(0)
            .spawn()
            .map_err(|e| HookError::new(format!("cannot start the hook command: {e}")))?;
        let group = child.id();
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(HookError::new("the hook command has no pipes"));
        };
        let line = format!("{payload}\n");
        let limit = self.max_output;
        let answer = async {
            // A command that never reads its stdin must not hold the hook.
            let write = async move {
                let _ = stdin.write_all(line.as_bytes()).await;
                drop(stdin);
            };
            let (_, out, err, status) = tokio::join!(
                write,
                read_limited(stdout, limit),
                read_limited(stderr, limit),
                child.wait()
            );
            (out, err, status)
        };
        let (out, err, status) = match tokio::time::timeout(self.timeout, answer).await {
            Ok(done) => done,
            Err(_) => {
                if let Some(group) = group.and_then(|g| i32::try_from(g).ok()) {
                    // The group may be gone already; nothing else to do then.
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(group),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                return Err(HookError::new(format!(
                    "no answer within {} ms",
                    self.timeout.as_millis()
                )));
            }
        };
        let (Some(out), Some(err)) = (out, err) else {
            return Err(HookError::new(format!(
                "the hook wrote more than {limit} bytes"
            )));
        };
        let status = status.map_err(|e| HookError::new(format!("the hook command failed: {e}")))?;
        match status.code() {
            Some(0) => {
                let text = String::from_utf8_lossy(&out);
                let text = text.trim();
                if text.is_empty() {
                    return Ok(HookDecision::Pass);
                }
                serde_json::from_str(text)
                    .map_err(|e| HookError::new(format!("its stdout is not a decision: {e}")))
            }
            Some(2) => {
                let reason = String::from_utf8_lossy(&err).trim().to_owned();
                Ok(HookDecision::Block {
                    reason: if reason.is_empty() {
                        "blocked by a hook command".to_owned()
                    } else {
                        reason
                    },
                })
            }
            // The shell's own code for a command it cannot find or run.
            Some(code @ (126 | 127)) => {
                let said = String::from_utf8_lossy(&err);
                let said = said.trim();
                Err(HookError::new(format!(
                    "exited with status {code}: the shell could not {} `{}`{}",
                    if code == 127 { "find" } else { "run" },
                    self.command,
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(" ({said})")
                    }
                )))
            }
            Some(code) => Err(HookError::new(format!("exited with status {code}"))),
            None => Err(HookError::new("killed by a signal")),
        }
    }
}

/// Everything `reader` writes, or `None` past `limit` bytes.
async fn read_limited(reader: impl AsyncRead + Unpin, limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut limited = reader.take(limit as u64 + 1);
    if limited.read_to_end(&mut out).await.is_err() {
        return Some(out);
    }
    (out.len() <= limit).then_some(out)
}

#[agentloop_types::async_trait]
impl Hook for CommandHook {
    fn name(&self) -> &str {
        &self.name
    }

    fn points(&self) -> Vec<HookPoint> {
        vec![self.point]
    }

    fn matches(&self, input: &HookInput) -> bool {
        match (&self.tool, input.tool()) {
            (Some(pattern), Some(tool)) => pattern.split('|').any(|p| glob(p.trim(), tool)),
            _ => true,
        }
    }

    async fn call(&self, input: &HookInput) -> Result<HookDecision, HookError> {
        self.ask(input).await
    }

    fn on_error(&self) -> HookDecision {
        match self.on_error {
            OnError::Pass => HookDecision::Pass,
            OnError::Block => HookDecision::Block {
                reason: format!("the hook `{}` failed", self.name),
            },
        }
    }
}

/// Whether `name` fits `pattern`, where `*` stands for any run of
/// characters.
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == name;
    };
    if parts.len() == 1 {
        return pattern == name;
    }
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// `agentloop hooks ...`.
#[derive(Subcommand)]
pub enum HooksCommand {
    /// List the configured command hooks: event, tool pattern, limits,
    /// on-error decision and command.
    List,
}

/// `agentloop hooks list`.
pub fn command(command: HooksCommand, entries: &[HookEntry], config_dir: &Path) -> Outcome {
    let HooksCommand::List = command;
    from_config(entries, config_dir)?;
    let mut out = Stdout::new();
    if entries.is_empty() {
        crate::out::note("no hooks are configured ([[hooks]] in the configuration file)");
    }
    for entry in entries {
        let timeout = entry.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        let max = entry.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT);
        let on_error = match entry.on_error.unwrap_or(OnError::Pass) {
            OnError::Pass => "pass",
            OnError::Block => "block",
        };
        out.line(format!(
            "{}\ttool={}\ttimeout={timeout}ms\tmax_output={max}\ton_error={on_error}\t{}",
            entry.event,
            entry.tool.as_deref().unwrap_or("*"),
            crate::out::sanitize(&entry.command)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_names() {
        assert!(glob("*", "fs"));
        assert!(glob("fs", "fs"));
        assert!(!glob("fs", "fsx"));
        assert!(glob("mcp__*", "mcp__search"));
        assert!(glob("*__delete", "files__delete"));
        assert!(glob("a*b*c", "aXbYc"));
        assert!(!glob("a*b*c", "aXbY"));
        assert!(!glob("ab*ba", "aba"));
    }
}
