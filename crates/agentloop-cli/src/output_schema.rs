//! `agentloop run --output-schema FILE`: the answer as a JSON value.

use std::path::Path;

use agentloop_types::{LoopStatus, OutputSchema};
use serde_json::Value;

/// The output schema in `path`, a JSON Schema file. It is named after its
/// `title`, else after the file.
pub fn load(path: &Path) -> Result<OutputSchema, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the output schema {}: {e}", path.display()))?;
    let schema: Value = serde_json::from_str(&text)
        .map_err(|e| format!("the output schema {} is not JSON: {e}", path.display()))?;
    if !schema.is_object() {
        return Err(format!(
            "the output schema {} is not a JSON Schema object",
            path.display()
        ));
    }
    let title = schema.get("title").and_then(Value::as_str);
    let stem = path.file_stem().and_then(|s| s.to_str());
    let name: String = title
        .or(stem)
        .unwrap_or("output")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    Ok(OutputSchema::new(name, schema))
}

/// The line `--json` prints for a run with an output schema: the completed
/// run's output alone. Any other end is said on stderr (the exit code tells
/// the status) and prints nothing.
pub fn value_line(status: Option<&LoopStatus>) -> Result<Option<String>, String> {
    match status {
        Some(LoopStatus::Complete {
            output: Some(value),
            ..
        }) => serde_json::to_string(value)
            .map(Some)
            .map_err(|e| e.to_string()),
        Some(LoopStatus::Error { error }) => {
            crate::out::note(format!("error: {error}"));
            Ok(None)
        }
        Some(other) => {
            crate::out::note(format!("the run ended {} without an output", other.name()));
            Ok(None)
        }
        None => Ok(None),
    }
}
