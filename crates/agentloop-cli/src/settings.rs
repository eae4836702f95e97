//! The settings file `--config` names: loop settings such as
//! `agent.loop.strategy`, as JSON (`{"agent.loop.strategy": "react"}`) or,
//! for a file ending in `.toml`, as TOML (`[agent.loop]` then
//! `strategy = "react"`, or `"agent.loop.strategy" = "react"`). Nested
//! tables or objects are flattened into dotted names; values are strings
//! (numbers and booleans are read as their text).
//!
//! Not the configuration file (`config.toml`, read from the configuration
//! folder): one given here by mistake is named as such.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The two formats a settings file is read in, chosen by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

impl Format {
    fn of(path: &Path) -> Self {
        let toml = path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("toml"));
        if toml { Self::Toml } else { Self::Json }
    }

    fn example(self) -> &'static str {
        match self {
            Self::Json => r#"{"agent.loop.strategy": "react"}"#,
            Self::Toml => "[agent.loop] strategy = \"react\"",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Json => "JSON",
            Self::Toml => "TOML",
        })
    }
}

/// Why a settings file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file cannot be read.
    #[error("cannot read the settings file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid in its format.
    #[error(
        "the settings file {} is not valid {format}: line {line}, column {column}: {message}{}",
        path.display(),
        hint.as_deref().unwrap_or_default()
    )]
    Syntax {
        path: PathBuf,
        format: Format,
        line: usize,
        column: usize,
        message: String,
        /// What else the text might be (`"; it reads as TOML: ..."`).
        hint: Option<String>,
    },
    /// The file holds something other than a table of settings.
    #[error(
        "the settings file {} must hold {}, such as {}; {what}",
        path.display(),
        match format { Format::Json => "a JSON object of string settings", Format::Toml => "TOML settings" },
        format.example()
    )]
    Shape {
        path: PathBuf,
        format: Format,
        what: String,
    },
    /// The file is the configuration file (or like it), given by mistake.
    #[error(
        "the settings file {} sets `{key}`, which belongs in the configuration file: --config \
         takes loop settings such as {}; the configuration file (provider, model, tools, \
         approvals, ...) is read from {config} (set XDG_CONFIG_HOME to read it from another \
         folder)",
        path.display(),
        Format::Toml.example()
    )]
    ConfigurationFile {
        path: PathBuf,
        key: String,
        config: String,
    },
}

/// The configuration file's top-level keys (besides `agent`, which is a
/// settings table as well as the configuration's starting agent).
const CONFIGURATION_KEYS: [&str; 12] = [
    "provider",
    "model",
    "base_url",
    "tools",
    "approve",
    "approvals",
    "mcp_servers",
    "a2a_agents",
    "serve",
    "shell",
    "hooks",
    "agents",
];

/// Reads the settings file at `path`.
pub fn read(path: &Path) -> Result<HashMap<String, String>, SettingsError> {
    let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
        path: path.to_owned(),
        source,
    })?;
    let format = Format::of(path);
    let tree = match format {
        Format::Json => parse_json(path, &text)?,
        Format::Toml => parse_toml(path, &text)?,
    };
    let Value::Object(top) = tree else {
        return Err(SettingsError::Shape {
            path: path.to_owned(),
            format,
            what: format!("it holds {}", kind(&tree)),
        });
    };
    if let Some(key) = top.iter().find_map(|(key, value)| {
        let configuration =
            CONFIGURATION_KEYS.contains(&key.as_str()) || (key == "agent" && value.is_string());
        configuration.then(|| key.clone())
    }) {
        let config = crate::config::path().map_or_else(
            |_| "~/.config/agentloop/config.toml".to_owned(),
            |p| p.display().to_string(),
        );
        return Err(SettingsError::ConfigurationFile {
            path: path.to_owned(),
            key,
            config,
        });
    }
    let mut settings = HashMap::new();
    flatten(path, format, "", Value::Object(top), &mut settings)?;
    Ok(settings)
}

fn parse_json(path: &Path, text: &str) -> Result<Value, SettingsError> {
    serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let hint = toml::from_str::<toml::Table>(text).is_ok().then(|| {
            "; it reads as TOML: name the file with a .toml extension to read it as TOML".to_owned()
        });
        SettingsError::Syntax {
            path: path.to_owned(),
            format: Format::Json,
            line: e.line(),
            column: e.column(),
            message: message.strip_suffix(&suffix).unwrap_or(&message).to_owned(),
            hint,
        }
    })
}

fn parse_toml(path: &Path, text: &str) -> Result<Value, SettingsError> {
    let table = toml::from_str::<toml::Table>(text).map_err(|e| {
        let at = e.span().map_or(0, |span| span.start).min(text.len());
        let (line, column) = line_and_column(text, at);
        SettingsError::Syntax {
            path: path.to_owned(),
            format: Format::Toml,
            line,
            column,
            message: e.message().trim().to_owned(),
            hint: None,
        }
    })?;
    serde_json::to_value(table).map_err(|e| SettingsError::Shape {
        path: path.to_owned(),
        format: Format::Toml,
        what: e.to_string(),
    })
}

/// The 1-based line and column (in characters) of byte `at` in `text`.
fn line_and_column(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |start| start.chars().count())
        + 1;
    (line, column)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a table",
    }
}

/// Adds `value`'s settings under `prefix` (tables become dotted names).
fn flatten(
    path: &Path,
    format: Format,
    prefix: &str,
    value: Value,
    into: &mut HashMap<String, String>,
) -> Result<(), SettingsError> {
    let text = match value {
        Value::Object(table) => {
            for (key, value) in table {
                let name = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(path, format, &name, value, into)?;
            }
            return Ok(());
        }
        Value::String(text) => text,
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        other @ (Value::Null | Value::Array(_)) => {
            return Err(SettingsError::Shape {
                path: path.to_owned(),
                format,
                what: format!("`{prefix}` is {}, not a string", kind(&other)),
            });
        }
    };
    into.insert(prefix.to_owned(), text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_tables_and_json_objects_flatten_to_dotted_names() {
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("s.toml");
        std::fs::write(&toml, "[agent.loop]\nstrategy = \"react\"\nsteps = 3\n").unwrap();
        let settings = read(&toml).unwrap();
        assert_eq!(settings["agent.loop.strategy"], "react");
        assert_eq!(settings["agent.loop.steps"], "3");
        let json = dir.path().join("s.json");
        std::fs::write(&json, r#"{"agent": {"loop": {"strategy": "react"}}}"#).unwrap();
        assert_eq!(read(&json).unwrap()["agent.loop.strategy"], "react");
    }

    #[test]
    fn syntax_errors_name_the_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("s.toml");
        std::fs::write(&toml, "# settings\nstrategy = \n").unwrap();
        match read(&toml) {
            Err(SettingsError::Syntax {
                format: Format::Toml,
                line: 2,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        let json = dir.path().join("s.json");
        std::fs::write(&json, "{\n  \"a\": }").unwrap();
        match read(&json) {
            Err(SettingsError::Syntax {
                format: Format::Json,
                line: 2,
                column: 8,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
}
