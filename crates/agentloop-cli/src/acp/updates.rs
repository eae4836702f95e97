//! What an editor is shown of a run: the engine's events, and a stored
//! chat's messages when a session is loaded, as ACP session updates. Tool
//! calls become ACP tool calls with a kind, a title, their render blocks
//! as content and, for the fs tool's edits, a diff of the file.

use std::collections::{BTreeMap, BTreeSet};

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, ContentChunk, Diff, SessionUpdate, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agentloop_tools::vfs::DirJail;
use agentloop_types::stream::StreamDelta;
use agentloop_types::{
    ContentBlock, EventKind, LoopEvent, Message, Role, StreamingChunkEvent, ToolResultBlock,
};
use serde_json::Value;

/// How many characters of a tool's input a title keeps.
const TITLE_CHARS: usize = 80;

/// The largest file an edit's diff shows.
const DIFF_BYTES: u64 = 256 * 1024;

/// The updates of one prompt turn, and which of its tool calls the editor
/// was told of but not yet how they ended.
pub struct Updates<'a> {
    /// The folder the tools work in, to show an edit's file and diff.
    jail: Option<&'a DirJail>,
    /// Calls announced, with the diff shown for each (kept, since a later
    /// content update replaces the whole of a call's content).
    announced: BTreeMap<String, Vec<ToolCallContent>>,
    /// Announced calls not yet completed or failed.
    open: BTreeSet<String>,
}

impl<'a> Updates<'a> {
    pub fn new(jail: Option<&'a DirJail>) -> Self {
        Self {
            jail,
            announced: BTreeMap::new(),
            open: BTreeSet::new(),
        }
    }

    /// The updates one event makes; events of minions' runs are not shown.
    pub fn event(&mut self, event: &LoopEvent) -> Vec<SessionUpdate> {
        if !event.path.is_root() {
            return Vec::new();
        }
        match &event.kind {
            EventKind::StreamingChunk(StreamingChunkEvent { delta }) => match delta {
                StreamDelta::Text { text, .. } if !text.is_empty() => {
                    vec![SessionUpdate::AgentMessageChunk(chunk(text))]
                }
                StreamDelta::Thinking { thinking, .. } if !thinking.is_empty() => {
                    vec![SessionUpdate::AgentThoughtChunk(chunk(thinking))]
                }
                _ => Vec::new(),
            },
            EventKind::ApprovalRequested(asked) => {
                vec![self.announce(
                    &asked.tool_use_id,
                    &asked.tool,
                    &asked.arguments,
                    ToolCallStatus::Pending,
                )]
            }
            EventKind::ToolStart(start) => {
                if self.announced.contains_key(&start.tool_use_id) {
                    vec![status(&start.tool_use_id, ToolCallStatus::InProgress)]
                } else {
                    vec![self.announce(
                        &start.tool_use_id,
                        &start.name,
                        &start.input.value(),
                        ToolCallStatus::InProgress,
                    )]
                }
            }
            EventKind::ToolBlockUpdate(update) => {
                let block = &update.block;
                let text = block.rendered_content.as_deref().unwrap_or(&block.content);
                vec![self.content(&update.tool_use_id, text, None)]
            }
            EventKind::ToolEnd(end) => {
                self.open.remove(&end.tool_use_id);
                let ended = if end.is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                vec![status(&end.tool_use_id, ended)]
            }
            EventKind::MessageCreated(created) => created
                .message
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::ToolResult(result) => Some(self.result(result)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A failed status for every call announced whose end the editor was
    /// not told (a cancelled turn's), so none is left running.
    pub fn close_unanswered(&mut self) -> Vec<SessionUpdate> {
        let open = std::mem::take(&mut self.open);
        open.iter()
            .map(|id| {
                self.content(
                    id,
                    "cancelled before it finished",
                    Some(ToolCallStatus::Failed),
                )
            })
            .collect()
    }

    /// The tool call the editor is first told of.
    fn announce(
        &mut self,
        id: &str,
        name: &str,
        input: &Value,
        status: ToolCallStatus,
    ) -> SessionUpdate {
        let diff = self.diff(name, input);
        self.announced.insert(id.to_owned(), diff.clone());
        self.open.insert(id.to_owned());
        let locations = self
            .host_path(name, input)
            .map(|path| vec![ToolCallLocation::new(path)])
            .unwrap_or_default();
        SessionUpdate::ToolCall(
            ToolCall::new(id.to_owned(), title(name, input))
                .name(name.to_owned())
                .kind(kind(name, input))
                .status(status)
                .content(diff)
                .locations(locations)
                .raw_input(input.clone()),
        )
    }

    /// A call's result: its text (after any diff) and how it ended.
    fn result(&mut self, result: &ToolResultBlock) -> SessionUpdate {
        self.open.remove(&result.tool_use_id);
        let ended = if result.is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        self.content(&result.tool_use_id, &result.content, Some(ended))
    }

    /// `text` as a call's content, after the diff shown for it.
    fn content(&self, id: &str, text: &str, ended: Option<ToolCallStatus>) -> SessionUpdate {
        let mut content = self.announced.get(id).cloned().unwrap_or_default();
        if !text.is_empty() {
            content.push(ToolCallContent::from(text.to_owned()));
        }
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_owned(),
            ToolCallUpdateFields::new().content(content).status(ended),
        ))
    }

    /// The file an fs call works on, on the host.
    fn host_path(&self, name: &str, input: &Value) -> Option<std::path::PathBuf> {
        if name != "fs" {
            return None;
        }
        let path = input.get("path")?.as_str()?;
        self.jail?.resolve_host(path, true).ok()
    }

    /// What an fs call that writes a file changes in it: the whole new
    /// file for `create`, the file before and after for `str_replace`.
    fn diff(&self, name: &str, input: &Value) -> Vec<ToolCallContent> {
        let Some(path) = self.host_path(name, input) else {
            return Vec::new();
        };
        let field = |key: &str| input.get(key).and_then(Value::as_str);
        // A file too large or not text to show whole gets no diff.
        let before = match std::fs::metadata(&path) {
            Err(_) => None,
            Ok(meta) if meta.len() > DIFF_BYTES => return Vec::new(),
            Ok(_) => match std::fs::read_to_string(&path) {
                Ok(text) => Some(text),
                Err(_) => return Vec::new(),
            },
        };
        let diff = match field("command") {
            Some("create") => field("file_text").map(|new| Diff::new(&path, new).old_text(before)),
            Some("str_replace") => match (before, field("old_str"), field("new_str")) {
                (Some(before), Some(old), new) if before.contains(old) => {
                    let after = before.replacen(old, new.unwrap_or_default(), 1);
                    Some(Diff::new(&path, after).old_text(before))
                }
                _ => None,
            },
            _ => None,
        };
        diff.map(ToolCallContent::Diff).into_iter().collect()
    }
}

/// The updates replaying a stored conversation to an editor loading it:
/// the person's messages, the agent's text and thinking, and each tool
/// call with its result (no diffs: the files have changed since).
pub fn history(messages: &[Message]) -> Vec<SessionUpdate> {
    let mut updates = Updates::new(None);
    let mut replay = Vec::new();
    for message in messages {
        for block in &message.content {
            match (message.role, block) {
                (Role::User, ContentBlock::Text { text, .. }) => {
                    replay.push(SessionUpdate::UserMessageChunk(chunk(text)));
                }
                (Role::Assistant, ContentBlock::Text { text, .. }) => {
                    replay.push(SessionUpdate::AgentMessageChunk(chunk(text)));
                }
                (Role::Assistant, ContentBlock::Thinking { thinking, .. }) => {
                    replay.push(SessionUpdate::AgentThoughtChunk(chunk(thinking)));
                }
                (_, ContentBlock::ToolUse(call)) => {
                    replay.push(updates.announce(
                        &call.id,
                        &call.name,
                        &call.input.value(),
                        ToolCallStatus::Pending,
                    ));
                }
                (_, ContentBlock::ToolResult(result)) => replay.push(updates.result(result)),
                _ => {}
            }
        }
    }
    replay
}

fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(AcpBlock::from(text.to_owned()))
}

fn status(id: &str, status: ToolCallStatus) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        id.to_owned(),
        ToolCallUpdateFields::new().status(status),
    ))
}

/// What kind of work a call does, for the editor's icon.
fn kind(name: &str, input: &Value) -> ToolKind {
    match (name, input.get("command").and_then(Value::as_str)) {
        ("fs", Some("view")) => ToolKind::Read,
        ("fs", Some("create" | "str_replace" | "insert")) => ToolKind::Edit,
        ("fs", Some("delete")) => ToolKind::Delete,
        ("fs", Some("rename")) => ToolKind::Move,
        ("fs", Some("glob" | "grep")) => ToolKind::Search,
        ("shell" | "javascript", _) => ToolKind::Execute,
        ("ask_user", _) | ("minion", _) => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// A call's title: the tool and what it is asked, shortened.
fn title(name: &str, input: &Value) -> String {
    let field = |key: &str| input.get(key).and_then(Value::as_str);
    let detail = match name {
        "fs" => [field("command"), field("path").or(field("pattern"))]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" "),
        "shell" => field("command").unwrap_or_default().to_owned(),
        _ => String::new(),
    };
    let title = if detail.is_empty() {
        name.to_owned()
    } else {
        format!("{name}: {detail}")
    };
    crate::render::shorten(&title.replace('\n', " "), TITLE_CHARS)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agentloop_types::{RunPath, ToolInput, ToolStartEvent};
    use serde_json::json;

    use super::*;

    fn start(id: &str, name: &str, input: &Value) -> LoopEvent {
        LoopEvent {
            seq: 1,
            path: RunPath::root(),
            kind: EventKind::ToolStart(ToolStartEvent {
                tool_use_id: id.to_owned(),
                name: name.to_owned(),
                input: ToolInput::from_model_text(&input.to_string()),
                is_skill: false,
                depth: 0,
            }),
        }
    }

    #[test]
    fn a_replacement_shows_the_file_before_and_after() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one two three").unwrap();
        let jail = DirJail::new(dir.path()).unwrap();
        let mut updates = Updates::new(Some(&jail));
        let input =
            json!({"command": "str_replace", "path": "/a.txt", "old_str": "two", "new_str": "2"});
        let shown = updates.event(&start("c1", "fs", &input));
        let SessionUpdate::ToolCall(call) = &shown[0] else {
            panic!("{shown:?}");
        };
        assert_eq!(call.kind, ToolKind::Edit);
        assert_eq!(call.title, "fs: str_replace /a.txt");
        let ToolCallContent::Diff(diff) = &call.content[0] else {
            panic!("{call:?}");
        };
        assert_eq!(diff.old_text.as_deref(), Some("one two three"));
        assert_eq!(diff.new_text, "one 2 three");
        assert_eq!(
            call.locations[0].path,
            jail.resolve_host("/a.txt", true).unwrap()
        );
    }

    #[test]
    fn a_call_left_running_is_reported_failed_once() {
        let mut updates = Updates::new(None);
        updates.event(&start("c1", "shell", &json!({"command": "sleep 9"})));
        let closed = updates.close_unanswered();
        let [SessionUpdate::ToolCallUpdate(update)] = closed.as_slice() else {
            panic!("{closed:?}");
        };
        assert_eq!(update.fields.status, Some(ToolCallStatus::Failed));
        assert!(updates.close_unanswered().is_empty());
    }
}
