//! A project folder as the rewind tests compare it.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every path under `root` with what it is: folder, or permission bits and
/// content. `.agentloop` (the server's task documents, which no checkpoint
/// holds) is left out.
pub fn listing(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, at: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(at).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            if name == ".agentloop" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.insert(name, "folder".to_owned());
                walk(root, &path, out);
            } else {
                let mode = meta.permissions().mode() & 0o7777;
                let content = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                out.insert(name, format!("{mode:o} {content:?}"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A scripted model turn that calls `tool` with `input`.
pub fn call(id: &str, tool: &str, input: serde_json::Value) -> serde_json::Value {
    serde_json::json!({ "steps": [
        { "type": "tool_call", "id": id, "name": tool, "fragments": [input.to_string()] }
    ] })
}
