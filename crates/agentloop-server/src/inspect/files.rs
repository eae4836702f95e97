//! The files a tool step changed, read from its fs calls' arguments in
//! the log: the log keeps what a call was asked, not the folder, so a
//! change shows as a diff only where the call carries both sides
//! (`str_replace`: the text replaced and its replacement); a `create` or
//! `insert` carries the new text only, and a `delete` or `rename` no text.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::redact::redact_text;

/// The name of the tool whose calls change files.
const FS_TOOL: &str = "fs";

/// One change a step made to a file.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FileChange {
    /// The file, as the call named it (in the project folder).
    pub path: String,
    /// `create`, `str_replace`, `insert`, `delete` or `rename`.
    pub action: String,
    /// The text the change replaced, when the log carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// The text the change wrote, when the log carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Where a rename moved the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_path: Option<String>,
    /// Whether `before` and `after` make a diff (both sides are known);
    /// otherwise the change is listed with what the log carries.
    pub diff: bool,
}

fn text_field(input: &Value, name: &str) -> Option<String> {
    input.get(name).and_then(Value::as_str).map(redact_text)
}

/// The change an fs call named `tool` with `input` made, if it writes and
/// succeeded (`failed` is its result's error flag).
pub fn change_of(tool: &str, input: &Value, failed: bool) -> Option<FileChange> {
    if tool != FS_TOOL || failed {
        return None;
    }
    let action = input.get("command")?.as_str()?;
    let path = text_field(input, "path").or_else(|| text_field(input, "old_path"))?;
    let (before, after, new_path) = match action {
        "create" => (None, text_field(input, "file_text"), None),
        "str_replace" => (
            text_field(input, "old_str"),
            Some(text_field(input, "new_str").unwrap_or_default()),
            None,
        ),
        "insert" => (
            None,
            text_field(input, "insert_text").or_else(|| text_field(input, "new_str")),
            None,
        ),
        "delete" => (None, None, None),
        "rename" => (None, None, text_field(input, "new_path")),
        _ => return None,
    };
    Some(FileChange {
        path,
        action: action.to_owned(),
        diff: before.is_some() && after.is_some(),
        before,
        after,
        new_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_replacement_is_a_diff_a_creation_its_text_a_view_nothing() {
        let replaced = change_of(
            "fs",
            &json!({"command": "str_replace", "path": "a.txt", "old_str": "x", "new_str": "y"}),
            false,
        )
        .unwrap();
        assert!(replaced.diff);
        assert_eq!(
            (replaced.before.as_deref(), replaced.after.as_deref()),
            (Some("x"), Some("y"))
        );
        let created = change_of(
            "fs",
            &json!({"command": "create", "path": "b", "file_text": "hi"}),
            false,
        )
        .unwrap();
        assert!(!created.diff);
        assert_eq!(created.after.as_deref(), Some("hi"));
        assert_eq!(
            change_of("fs", &json!({"command": "view", "path": "b"}), false),
            None
        );
        assert_eq!(
            change_of("fs", &json!({"command": "delete", "path": "b"}), true),
            None
        );
        assert_eq!(
            change_of("memory", &json!({"command": "create", "path": "b"}), false),
            None
        );
    }
}
