//! A person in the loop on the command line: which calls ask
//! (`--approve` and the configuration file), the prompt that asks about a
//! suspended run's pending calls on a terminal, and the rejections given
//! when no person can answer (stdin is not a terminal).
//!
//! On a terminal each pending call is shown (tool, why it waits, its
//! arguments one per line) and asked in turn: `y` runs it, `n` rejects it
//! with an optional reason the model reads, `a` runs it and every later
//! call of the tool, `e` edits its arguments first. A question
//! (`ask_user`) takes the next line as its answer.

use std::collections::BTreeSet;
use std::io::Write;

use agentloop_types::{
    ApprovalPolicies, ApprovalPolicy, Decision, Decisions, PendingCall, ToolUseBlock, Wait,
};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use serde_json::Value;

use crate::config::Config;
use crate::out::{Failure, Style, note, sanitize};

/// The approval policies of a run: the configuration's `[approvals]`,
/// then `--approve` (else the configuration's `approve`): `all` (nothing
/// asks), `none` (ask per policy), or tool names that never ask.
pub fn policies(flag: Option<&str>, config: &Config) -> Result<ApprovalPolicies, Failure> {
    let mut policies = config.approvals.clone();
    let (approve, origin) = match (flag, config.approve.as_deref()) {
        (Some(flag), _) => (flag, "--approve"),
        (None, Some(configured)) => (configured, "the configuration's approve"),
        (None, None) => return Ok(policies),
    };
    match approve.trim() {
        "all" => {
            // Named entries win over `*`: drop them so nothing asks.
            policies.clear();
            policies.insert("*".to_owned(), ApprovalPolicy::Never);
        }
        "none" | "" => {}
        list => {
            for name in list.split(',').map(str::trim) {
                if name.is_empty() || name == "all" || name == "none" {
                    return Err(Failure::usage(format!(
                        "{origin} {:?} has an empty or misplaced name; it takes {}",
                        sanitize(list),
                        approvable()
                    )));
                }
                // An MCP tool is `SERVER__TOOL`; its servers start later.
                let known = crate::tools::NAMES.contains(&name) || name == "js";
                if !known && !name.contains("__") {
                    return Err(Failure::usage(format!(
                        "{origin}: unknown tool {:?}; it takes {}",
                        sanitize(name),
                        approvable()
                    )));
                }
                let name = if name == "js" { "javascript" } else { name };
                policies.insert(name.to_owned(), ApprovalPolicy::Never);
            }
        }
    }
    Ok(policies)
}

/// What `--approve` accepts, for its errors.
fn approvable() -> String {
    format!(
        "all, none, or tool names separated by commas: {} (js for javascript; \
         an MCP tool as SERVER__TOOL)",
        crate::tools::NAMES.join(", ")
    )
}

/// What the person said about a suspended run's pending calls.
pub enum Reply {
    /// One decision per pending call.
    Decided(Decisions),
    /// Ctrl-C: cancel the waiting run.
    Cancel,
    /// Ctrl-D: leave the run waiting.
    Leave,
}

/// `fs create`: the tool and, when it has one, its `command` argument.
pub fn describe(call: &ToolUseBlock) -> String {
    match call.input.value().get("command").and_then(Value::as_str) {
        Some(command) => format!("{} {command}", call.name),
        None => call.name.clone(),
    }
}

/// The decisions when no person can answer: each approval is rejected
/// (with a note on stderr saying how to allow it), each question declined.
pub fn without_person(pending: &[PendingCall]) -> Decisions {
    pending
        .iter()
        .map(|item| {
            let reason = match &item.wait {
                Wait::Approval { .. } => {
                    note(format!(
                        "{} needs approval; rerun with --approve {} or in a terminal",
                        sanitize(&describe(&item.call)),
                        sanitize(&item.call.name)
                    ));
                    format!(
                        "no person could approve it, as agentloop ran without a terminal; \
                         the user can allow {} calls with --approve {}",
                        item.call.name, item.call.name
                    )
                }
                Wait::Question { question } => {
                    // The question as asked, its lines kept: quoting it
                    // with `{:?}` would show its new lines as `\n`.
                    note(format!(
                        "the model asked a question, and without a terminal nobody can answer; \
                         run in a terminal or use `agentloop chat` to answer questions. It \
                         asked:\n{}",
                        sanitize(question)
                    ));
                    "no person could answer, as agentloop ran without a terminal".to_owned()
                }
            };
            (item.call.id.clone(), Decision::Reject { reason })
        })
        .collect()
}

/// Asks a person on a terminal. Remembers the tools approved with `a`, so
/// later calls of them (in this batch, and for a chat's later turns) run
/// without asking.
pub struct Asker {
    style: Style,
    always: BTreeSet<String>,
    /// Shell command prefixes approved with `a` (see [`shell_prefix`]).
    always_commands: BTreeSet<String>,
}

/// The tool whose `a` approves a command prefix rather than the tool.
const SHELL: &str = "shell";

/// The prefix `a` approves for a shell command: its program, and its
/// subcommand when the second word looks like one (`cargo test`, `npm
/// run`; `touch` for `touch a.txt`). None for a command that chains or
/// redirects (`;`, `&&`, `|`, `$(…)`, `>`, …): such a command is approved
/// once at most.
pub fn shell_prefix(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    let program = words.next()?;
    let subcommand = words.next().filter(|word| {
        !word.starts_with('-')
            && word
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    });
    let prefix = match subcommand {
        Some(subcommand) => format!("{program} {subcommand}"),
        None => program.to_owned(),
    };
    agentloop_types::command_has_prefix(command, &prefix).then_some(prefix)
}

impl Asker {
    /// An asker writing its details to stderr with `style`.
    pub fn new(style: Style) -> Self {
        Self {
            style,
            always: BTreeSet::new(),
            always_commands: BTreeSet::new(),
        }
    }

    /// Asks about every pending call in turn.
    pub fn ask(
        &mut self,
        editor: &mut DefaultEditor,
        pending: &[PendingCall],
    ) -> Result<Reply, Failure> {
        let mut decisions = Decisions::new();
        for item in pending {
            let decision = match &item.wait {
                Wait::Approval { reason } => self.approval(editor, item, reason)?,
                Wait::Question { question } => self.question(editor, question)?,
            };
            match decision {
                Asked::Decided(decision) => {
                    decisions.insert(item.call.id.clone(), decision);
                }
                Asked::Cancel => return Ok(Reply::Cancel),
                Asked::Leave => return Ok(Reply::Leave),
            }
        }
        Ok(Reply::Decided(decisions))
    }

    fn approval(
        &mut self,
        editor: &mut DefaultEditor,
        item: &PendingCall,
        reason: &str,
    ) -> Result<Asked, Failure> {
        let Style {
            dim, cyan, reset, ..
        } = self.style;
        let call = &item.call;
        let what = sanitize(&describe(call)).into_owned();
        if self.always.contains(&call.name) {
            say(&format!(
                "{cyan}✓ {what}{reset} {dim}approved: always for {}{reset}",
                sanitize(&call.name)
            ));
            return Ok(Asked::Decided(Decision::ApproveAlways));
        }
        let arguments = call.input.value();
        let command = (call.name == SHELL)
            .then(|| arguments.get("command").and_then(Value::as_str))
            .flatten();
        if let Some(prefix) = command.and_then(|command| {
            self.always_commands
                .iter()
                .find(|prefix| agentloop_types::command_has_prefix(command, prefix))
        }) {
            say(&format!(
                "{cyan}✓ {what}{reset} {dim}approved: always for `{}`{reset}",
                sanitize(prefix)
            ));
            return Ok(Asked::Decided(Decision::Approve { arguments: None }));
        }
        // For shell, `a` holds for the command's prefix, not every command.
        let prefix = command.and_then(shell_prefix);
        let always = match (call.name == SHELL, &prefix) {
            (true, Some(prefix)) => format!("`{}`", sanitize(prefix)),
            (true, None) => "this call only (it chains commands)".to_owned(),
            (false, _) => sanitize(&call.name).into_owned(),
        };
        let nested = if item.path.is_root() {
            ""
        } else {
            " (in a nested run)"
        };
        let mut shown = format!(
            "{cyan}? {what}{reset}{nested} {dim}({}){reset}\n",
            sanitize(reason)
        );
        shown.push_str(&arguments_lines(&call.input.value(), dim, reset));
        say(shown.trim_end());
        let question =
            format!("allow? [y]es / [n]o (+ reason) / [a]lways for {always} / [e]dit arguments: ");
        loop {
            let line = match read(editor, &question, "")? {
                Line::Text(line) => line,
                Line::Interrupted => return Ok(Asked::Cancel),
                Line::Eof => return Ok(Asked::Leave),
            };
            let line = line.trim();
            let (word, rest) = line
                .split_once(char::is_whitespace)
                .map_or((line, ""), |(w, r)| (w, r.trim()));
            match word.to_lowercase().as_str() {
                "y" | "yes" => return Ok(Asked::Decided(Decision::Approve { arguments: None })),
                "a" | "always" if call.name == SHELL => {
                    if let Some(prefix) = &prefix {
                        self.always_commands.insert(prefix.clone());
                    }
                    return Ok(Asked::Decided(Decision::Approve { arguments: None }));
                }
                "a" | "always" => {
                    self.always.insert(call.name.clone());
                    return Ok(Asked::Decided(Decision::ApproveAlways));
                }
                "n" | "no" => {
                    let reason = if rest.is_empty() {
                        match read(editor, "reason for the model (Enter for none): ", "")? {
                            Line::Text(reason) => reason.trim().to_owned(),
                            Line::Interrupted => return Ok(Asked::Cancel),
                            Line::Eof => return Ok(Asked::Leave),
                        }
                    } else {
                        rest.to_owned()
                    };
                    return Ok(Asked::Decided(Decision::Reject { reason }));
                }
                "e" | "edit" => match edit(editor, &call.input.value())? {
                    Edited::Arguments(arguments) => {
                        return Ok(Asked::Decided(Decision::Approve {
                            arguments: Some(arguments),
                        }));
                    }
                    Edited::Kept => {}
                    Edited::Cancel => return Ok(Asked::Cancel),
                    Edited::Leave => return Ok(Asked::Leave),
                },
                _ => say("answer y, n (optionally followed by a reason), a or e"),
            }
        }
    }

    fn question(&mut self, editor: &mut DefaultEditor, question: &str) -> Result<Asked, Failure> {
        let Style { cyan, reset, .. } = self.style;
        say(&format!("{cyan}? {}{reset}", sanitize(question)));
        loop {
            match read(editor, "answer> ", "")? {
                Line::Text(text) if text.trim().is_empty() => {}
                Line::Text(text) => return Ok(Asked::Decided(Decision::Answer { text })),
                Line::Interrupted => return Ok(Asked::Cancel),
                Line::Eof => return Ok(Asked::Leave),
            }
        }
    }
}

/// What one pending call got.
enum Asked {
    Decided(Decision),
    Cancel,
    Leave,
}

/// What editing the arguments gave.
enum Edited {
    Arguments(Value),
    /// Given up: back to the question.
    Kept,
    Cancel,
    Leave,
}

/// One line read from the person.
enum Line {
    Text(String),
    Interrupted,
    Eof,
}

fn read(editor: &mut DefaultEditor, prompt: &str, initial: &str) -> Result<Line, Failure> {
    match editor.readline_with_initial(prompt, (initial, "")) {
        Ok(line) => Ok(Line::Text(line)),
        Err(ReadlineError::Interrupted) => Ok(Line::Interrupted),
        Err(ReadlineError::Eof) => Ok(Line::Eof),
        Err(e) => Err(Failure::Runtime(format!("cannot read the terminal: {e}"))),
    }
}

/// Writes a line for the person to stderr.
fn say(text: &str) {
    let mut stderr = std::io::stderr();
    let _ = writeln!(stderr, "{text}");
    let _ = stderr.flush();
}

/// The arguments one per line (`  path: /a.txt`), multi-line strings
/// indented under their name; not an object: pretty JSON.
fn arguments_lines(arguments: &Value, dim: &str, reset: &str) -> String {
    let Some(object) = arguments.as_object() else {
        let pretty = serde_json::to_string_pretty(arguments).unwrap_or_default();
        return format!("{}\n", indent(&sanitize(&pretty), "  "));
    };
    let mut text = String::new();
    for (name, value) in object {
        let shown = match value {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        let shown = sanitize(&shown);
        if shown.contains('\n') {
            text.push_str(&format!("  {dim}{}:{reset}\n", sanitize(name)));
            text.push_str(&indent(&shown, "    "));
            text.push('\n');
        } else {
            text.push_str(&format!("  {dim}{}:{reset} {shown}\n", sanitize(name)));
        }
    }
    text
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|line| format!("{by}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Edits the arguments: in `$VISUAL`/`$EDITOR` when set, else on one line
/// holding the current JSON. Asks again until the text is a JSON object;
/// an empty text gives up.
fn edit(editor: &mut DefaultEditor, arguments: &Value) -> Result<Edited, Failure> {
    let external = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
    let mut text = match &external {
        Some(_) => serde_json::to_string_pretty(arguments),
        None => serde_json::to_string(arguments),
    }
    .map_err(|e| e.to_string())?;
    loop {
        text = match &external {
            Some(program) => run_editor(program, &text)?,
            None => match read(editor, "arguments (JSON object): ", &text)? {
                Line::Text(line) => line,
                Line::Interrupted => return Ok(Edited::Cancel),
                Line::Eof => return Ok(Edited::Leave),
            },
        };
        if text.trim().is_empty() {
            say("no arguments given: the call is not approved yet");
            return Ok(Edited::Kept);
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Object(_)) => return Ok(Edited::Arguments(value)),
            Ok(_) => say("the arguments must be a JSON object ({...}); edit them again"),
            Err(e) => say(&format!("that is not JSON ({e}); edit it again")),
        }
    }
}

/// Opens `text` in the person's editor and returns what they saved.
fn run_editor(program: &str, text: &str) -> Result<String, Failure> {
    let path = std::env::temp_dir().join(format!(
        "agentloop-arguments-{}-{}.json",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::write(&path, text)
        .map_err(|e| format!("cannot write {} for the editor: {e}", path.display()))?;
    // Through the shell, as git does: `EDITOR="code --wait"` works.
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{program} \"$1\""))
        .arg("sh")
        .arg(&path);
    // The editor draws on the terminal even when stdout is redirected.
    if let Ok(tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
        command.stdout(tty);
    }
    let status = command.status();
    let edited = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => {
            say(&format!(
                "the editor exited with {status}; the edit is dropped"
            ));
            return Ok(String::new());
        }
        Err(e) => return Err(Failure::Runtime(format!("cannot start {program}: {e}"))),
    }
    edited.map_err(|e| Failure::Runtime(format!("cannot read the edited arguments: {e}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shell_prefix_is_the_program_and_a_plain_subcommand_of_an_unchained_command() {
        use super::shell_prefix;
        assert_eq!(
            shell_prefix("cargo test -p core").as_deref(),
            Some("cargo test")
        );
        assert_eq!(shell_prefix("npm run build").as_deref(), Some("npm run"));
        assert_eq!(shell_prefix("touch a.txt").as_deref(), Some("touch"));
        assert_eq!(shell_prefix("ls -la").as_deref(), Some("ls"));
        assert_eq!(
            shell_prefix("python3 -m unittest").as_deref(),
            Some("python3")
        );
        assert_eq!(shell_prefix("cargo test && rm -rf ~"), None);
        assert_eq!(shell_prefix("echo hi > f"), None);
        assert_eq!(shell_prefix("   "), None);
    }

    use super::*;

    #[test]
    fn approve_all_none_or_a_list() {
        let config = Config {
            approvals: [("javascript".to_owned(), ApprovalPolicy::Always)].into(),
            ..Config::default()
        };
        let all = policies(Some("all"), &config).unwrap();
        assert_eq!(all, [("*".to_owned(), ApprovalPolicy::Never)].into());
        assert_eq!(policies(Some("none"), &config).unwrap(), config.approvals);
        assert_eq!(policies(None, &config).unwrap(), config.approvals);
        let listed = policies(Some("fs, js"), &config).unwrap();
        assert_eq!(listed.get("fs"), Some(&ApprovalPolicy::Never));
        assert_eq!(listed.get("javascript"), Some(&ApprovalPolicy::Never));
        let from_file = Config {
            approve: Some("all".to_owned()),
            ..Config::default()
        };
        assert_eq!(policies(None, &from_file).unwrap(), all);
        assert_eq!(
            policies(Some("none"), &from_file).unwrap(),
            Default::default()
        );
        assert!(policies(Some("fs,,js"), &config).is_err());
        assert!(policies(Some("nosuch"), &config).is_err());
        assert!(policies(Some("files__read"), &config).is_ok());
    }

    #[test]
    fn arguments_show_one_per_line_without_escapes() {
        let shown = arguments_lines(
            &serde_json::json!({"path": "/a\x1b[2J", "file_text": "one\ntwo", "n": 3}),
            "",
            "",
        );
        assert_eq!(
            shown,
            "  file_text:\n    one\n    two\n  n: 3\n  path: /a^[[2J\n"
        );
    }
}
