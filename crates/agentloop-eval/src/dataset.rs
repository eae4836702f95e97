//! Datasets: cases read from YAML, JSON or JSON Lines, checked before any
//! run starts. A bad dataset is a [`DatasetError`] naming the file, the line
//! and the case.

mod locate;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use agentloop_types::{Message, Role};
use serde::{Deserialize, Serialize};

use crate::expect::Expect;

/// A set of cases run against one agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    /// Shown in reports; the file's stem when the file names none.
    #[serde(default)]
    pub name: String,
    /// The cases, in the order they are reported.
    pub cases: Vec<Case>,
}

/// One case: what the agent is asked and what its run must show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique within the dataset; names the case in reports.
    pub name: String,
    /// The user's message. Exactly one of `prompt` and `messages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A conversation to continue (ending with a user message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<CaseMessage>,
    /// Files laid in the case's folder before it runs (the fs tool's
    /// root): relative path → text content.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// Labels to select cases by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// A JSON Schema the run's answer is asked to fit (structured output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// How many times this case runs (overrides the runner's repeats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// What the run must show.
    #[serde(default)]
    pub expect: Expect,
}

/// One message of a case's conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseMessage {
    /// `user`, `assistant` or `system`.
    pub role: CaseRole,
    /// Its text.
    pub content: String,
}

/// Who wrote a [`CaseMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseRole {
    /// The person.
    User,
    /// The model.
    Assistant,
    /// Instructions.
    System,
}

impl Case {
    /// The messages the run starts from.
    pub fn context(&self) -> Vec<Message> {
        match &self.prompt {
            Some(prompt) => vec![Message::user_text("eval-user-1", prompt.clone())],
            None => self
                .messages
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let id = format!("eval-{}", i + 1);
                    match m.role {
                        CaseRole::User => Message::user_text(id, m.content.clone()),
                        CaseRole::Assistant => Message::assistant_text(id, m.content.clone()),
                        CaseRole::System => Message::system_text(id, m.content.clone()),
                    }
                })
                .collect(),
        }
    }

    /// How many assistant messages the context already holds (not the run's
    /// steps).
    pub fn context_turns(&self) -> usize {
        self.context()
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count()
    }
}

/// The formats a dataset file may be in, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.yaml`, `.yml`: an object with `cases`.
    Yaml,
    /// `.json`: an object with `cases`.
    Json,
    /// `.jsonl`: one case object a line.
    JsonLines,
}

impl Format {
    /// The format a path's extension names.
    pub fn of(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "yaml" | "yml" => Some(Self::Yaml),
            "json" => Some(Self::Json),
            "jsonl" | "ndjson" => Some(Self::JsonLines),
            _ => None,
        }
    }
}

/// Why a dataset cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file cannot be read.
    #[error("cannot read the dataset {}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The extension names no known format.
    #[error("{}: unknown dataset format; use .yaml, .yml, .json or .jsonl", file.display())]
    Format {
        /// The file.
        file: PathBuf,
    },
    /// The text or a case in it is wrong.
    #[error("{}{}: {}{message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default(), case.as_ref().map(|c| format!("case {c:?}: ")).unwrap_or_default())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// The line (1-based), when known.
        line: Option<usize>,
        /// The case's name (or `#N` when it has none yet), when one is at fault.
        case: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// Reads and checks a dataset file.
pub fn load(path: &Path) -> Result<Dataset, DatasetError> {
    let format = Format::of(path).ok_or_else(|| DatasetError::Format {
        file: path.to_owned(),
    })?;
    let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Read {
        file: path.to_owned(),
        source,
    })?;
    let mut dataset = parse(&text, format, path)?;
    if dataset.name.trim().is_empty() {
        dataset.name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "dataset".to_owned());
    }
    Ok(dataset)
}

/// Parses and checks a dataset's text; `file` names it in errors.
pub fn parse(text: &str, format: Format, file: &Path) -> Result<Dataset, DatasetError> {
    let invalid =
        |line: Option<usize>, case: Option<String>, message: String| DatasetError::Invalid {
            file: file.to_owned(),
            line,
            case,
            message,
        };
    let (dataset, lines) = match format {
        Format::JsonLines => {
            let mut cases = Vec::new();
            let mut lines = Vec::new();
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let case: Case = serde_json::from_str(line).map_err(|e| {
                    invalid(
                        Some(i + 1),
                        locate::name_in_line(line)
                            .or_else(|| Some(format!("#{}", cases.len() + 1))),
                        e.to_string(),
                    )
                })?;
                cases.push(case);
                lines.push(Some(i + 1));
            }
            (
                Dataset {
                    name: String::new(),
                    cases,
                },
                lines,
            )
        }
        Format::Json => {
            let dataset: Dataset = serde_json::from_str(text).map_err(|e| {
                let line = (e.line() > 0).then_some(e.line());
                invalid(
                    line,
                    line.and_then(|l| locate::case_around(text, l)),
                    strip_position(&e.to_string()),
                )
            })?;
            let lines = locate::case_lines(text, dataset.cases.iter().map(|c| c.name.as_str()));
            (dataset, lines)
        }
        Format::Yaml => {
            let dataset: Dataset = serde_norway::from_str(text).map_err(|e| {
                let line = e.location().map(|l| l.line());
                invalid(
                    line,
                    line.and_then(|l| locate::case_around(text, l)),
                    strip_position(&e.to_string()),
                )
            })?;
            let lines = locate::case_lines(text, dataset.cases.iter().map(|c| c.name.as_str()));
            (dataset, lines)
        }
    };
    check(&dataset).map_err(|(index, message)| {
        let case = dataset.cases.get(index);
        invalid(
            lines.get(index).copied().flatten(),
            case.map(|c| {
                if c.name.is_empty() {
                    format!("#{}", index + 1)
                } else {
                    c.name.clone()
                }
            }),
            message,
        )
    })?;
    Ok(dataset)
}

/// Drops the parser's own "at line N column M" (the error names the line
/// already).
fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// Checks what the parsers cannot: returns the index of the first bad case
/// and what is wrong with it.
fn check(dataset: &Dataset) -> Result<(), (usize, String)> {
    if dataset.cases.is_empty() {
        return Err((0, "the dataset has no cases".to_owned()));
    }
    let mut names = BTreeSet::new();
    for (i, case) in dataset.cases.iter().enumerate() {
        let fail = |message: String| Err((i, message));
        if case.name.trim().is_empty() {
            return fail("a case needs a name".to_owned());
        }
        if !names.insert(case.name.as_str()) {
            return fail("another case has the same name".to_owned());
        }
        match (&case.prompt, case.messages.is_empty()) {
            (Some(_), false) => return fail("give either prompt or messages, not both".to_owned()),
            (None, true) => return fail("a case needs a prompt or messages".to_owned()),
            (None, false) => {
                if case.messages.last().map(|m| m.role) != Some(CaseRole::User) {
                    return fail("messages must end with a user message".to_owned());
                }
            }
            (Some(_), true) => {}
        }
        if case.repeat == Some(0) {
            return fail("repeat must be at least 1".to_owned());
        }
        for path in case.files.keys() {
            check_file_path(path).map_err(|message| (i, message))?;
        }
        if let Some(schema) = &case.output_schema
            && let Err(e) = jsonschema::validator_for(schema)
        {
            return fail(format!("output_schema is not a valid JSON Schema: {e}"));
        }
        case.expect.check().map_err(|message| (i, message))?;
    }
    Ok(())
}

/// A file of a case must stay inside its folder.
fn check_file_path(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    let inside = !path.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if inside {
        Ok(())
    } else {
        Err(format!(
            "files: {path:?} must be a relative path inside the case's folder (no .., no leading /)"
        ))
    }
}
