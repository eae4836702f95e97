//! The pure rules of what a run sends of its tools and tool results
//! beside compaction: the tool index and its search, results shortened to
//! their tool's budget, older results cleared, and reading a stored result
//! back. The run core decides when (`run_core::context`); this module only
//! computes.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use agentloop_types::{
    ContentBlock, Message, READ_TOOL_RESULT_TOOL, TOOL_SEARCH_TOOL, ToolDefinition, ToolResultBlock,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::protocol::OfferedTool;

/// Characters per estimated token, as the compaction estimate counts.
pub(crate) const CHARS_PER_TOKEN: usize = 4;

/// Tools a search finds when the model names no limit, and at most.
const DEFAULT_FOUND: usize = 5;
const MAX_FOUND: usize = 20;

/// Characters `read_tool_result` returns when the model names no limit and
/// the tool has no budget.
const DEFAULT_READ: usize = 8_000;

/// Characters of a description kept in the index.
const INDEX_DESCRIPTION: usize = 100;

/// What a run changed in what it sends, stored with the strategy phase so
/// a resumed run sends the same requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ContextEdits {
    /// Tools tool search loaded, in the order they are appended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) loaded: Vec<String>,
    /// Results sent shortened: call id to the characters sent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) shortened: BTreeMap<String, usize>,
    /// The last history message whose tool results are sent cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cleared_through: Option<String>,
}

impl ContextEdits {
    /// Whether what is sent of the history is changed at all.
    pub(crate) fn edits_history(&self) -> bool {
        !self.shortened.is_empty() || self.cleared_through.is_some()
    }
}

/// The first sentence of `description`'s first line, cut to the index's
/// length.
fn one_line(description: &str) -> String {
    let line = description.lines().next().unwrap_or_default().trim();
    let line = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    if line.chars().count() <= INDEX_DESCRIPTION {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(INDEX_DESCRIPTION - 1).collect();
    cut.push('…');
    cut
}

/// The search tool, its description holding the index of `tools`: one
/// line each, name and the first line of its description.
pub(crate) fn search_definition(tools: &[OfferedTool]) -> ToolDefinition {
    let mut description = String::from(
        "Loads tools of this run by keywords. Only the tools below marked as loaded \
         have their definitions sent; search for others by name or purpose, and \
         the tools found can be called from the next turn on. Tools:\n",
    );
    for tool in tools {
        description.push_str("- ");
        description.push_str(&tool.definition.name);
        description.push_str(": ");
        description.push_str(&one_line(&tool.definition.description));
        description.push('\n');
    }
    ToolDefinition {
        name: TOOL_SEARCH_TOOL.to_owned(),
        description,
        input_schema: Arc::new(json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Tool names or words of what the tools do."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_FOUND,
                    "description": "Most tools to load (default 5)."
                }
            },
            "required": ["query"]
        })),
    }
}

/// The tool that reads a stored tool result.
pub(crate) fn read_definition() -> ToolDefinition {
    ToolDefinition {
        name: READ_TOOL_RESULT_TOOL.to_owned(),
        description: "Reads a tool result that was shortened or cleared from the context, \
                      from a character offset."
            .to_owned(),
        input_schema: Arc::new(json!({
            "type": "object",
            "properties": {
                "call_id": {"type": "string", "description": "The id of the tool call."},
                "offset": {"type": "integer", "minimum": 0, "description": "First character (default 0)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Characters to read."}
            },
            "required": ["call_id"]
        })),
    }
}

/// Lower-case words of `text`, split at anything not a letter or digit.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The indices of the tools `query` finds, best first, at most `limit`:
/// a tool named exactly first, then by how many of the query's words its
/// name (three points each) and description (one) hold; ties keep the
/// tools' order.
pub(crate) fn search(tools: &[OfferedTool], query: &str, limit: usize) -> Vec<usize> {
    let terms = words(query);
    let exact: Vec<&str> = query
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
        .collect();
    let mut scored: Vec<(usize, usize)> = tools
        .iter()
        .enumerate()
        .filter_map(|(i, tool)| {
            let name = tool.definition.name.to_lowercase();
            let description = tool.definition.description.to_lowercase();
            let mut score = 0;
            if exact.contains(&tool.definition.name.as_str()) {
                score += 1_000;
            }
            for term in &terms {
                if name.contains(term.as_str()) {
                    score += 3;
                }
                if description.contains(term.as_str()) {
                    score += 1;
                }
            }
            (score > 0).then_some((i, score))
        })
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limit.clamp(1, MAX_FOUND));
    scored.into_iter().map(|(i, _)| i).collect()
}

/// The limit a search call asks for.
pub(crate) fn found_limit(input: &serde_json::Value) -> usize {
    input
        .get("limit")
        .and_then(serde_json::Value::as_u64)
        .map_or(DEFAULT_FOUND, |n| usize::try_from(n).unwrap_or(MAX_FOUND))
}

/// The text of a search's answer.
pub(crate) fn found_answer(tools: &[OfferedTool], found: &[usize], query: &str) -> String {
    if found.is_empty() {
        return format!(
            "No tool matches \"{query}\". The index in this tool's description lists every tool."
        );
    }
    let mut text = String::from("Loaded; call them from the next turn on:\n");
    for tool in found.iter().filter_map(|&i| tools.get(i)) {
        text.push_str("- ");
        text.push_str(&tool.definition.name);
        text.push_str(": ");
        text.push_str(&one_line(&tool.definition.description));
        text.push('\n');
    }
    text
}

/// The characters of a result a budget of `tokens` sends.
pub(crate) fn budget_chars(tokens: u32) -> usize {
    usize::try_from(tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(CHARS_PER_TOKEN)
}

/// The first `chars` characters of `text`.
fn head(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The text sent in place of a result past its budget.
fn shortened(block: &ToolResultBlock, chars: usize) -> String {
    let total = block.content.chars().count();
    let mut text = head(&block.content, chars).to_owned();
    text.push_str(&format!(
        "\n\n[Shortened: the first {chars} of {total} characters of this result are shown. \
         Call {READ_TOOL_RESULT_TOOL} with {{\"call_id\": \"{}\", \"offset\": {chars}}} \
         to read the rest.]",
        block.tool_use_id
    ));
    text
}

/// The text sent in place of a cleared result.
fn cleared(block: &ToolResultBlock) -> String {
    format!(
        "[Cleared from the context to save space: this result had {} characters. \
         Call {READ_TOOL_RESULT_TOOL} with {{\"call_id\": \"{}\"}} to read it again.]",
        block.content.chars().count(),
        block.tool_use_id
    )
}

/// The calls whose results the messages up to and including `through`
/// hold (none when `through` is not in `history`).
pub(crate) fn cleared_calls(history: &[Message], through: Option<&str>) -> HashSet<String> {
    let Some(end) = through.and_then(|id| history.iter().position(|m| m.id == id)) else {
        return HashSet::new();
    };
    history[..=end]
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.tool_use_id.clone())
        .collect()
}

/// `messages` as sent: cleared results as a note, shortened ones cut to
/// their budget with a note.
pub(crate) fn shape(
    mut messages: Vec<Message>,
    edits: &ContextEdits,
    cleared_ids: &HashSet<String>,
) -> Vec<Message> {
    for message in &mut messages {
        let touched = message.tool_results().any(|r| {
            cleared_ids.contains(&r.tool_use_id) || edits.shortened.contains_key(&r.tool_use_id)
        });
        if !touched {
            continue;
        }
        for block in &mut message.content {
            let ContentBlock::ToolResult(result) = block else {
                continue;
            };
            if cleared_ids.contains(&result.tool_use_id) {
                result.content = cleared(result);
            } else if let Some(&chars) = edits.shortened.get(&result.tool_use_id) {
                result.content = shortened(result, chars);
            }
        }
    }
    messages
}

/// The stored result of call `call_id` in `history`.
pub(crate) fn find_result<'h>(
    history: &'h [Message],
    call_id: &str,
) -> Option<&'h ToolResultBlock> {
    history
        .iter()
        .rev()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == call_id)
}

/// `limit` characters of `block` from `offset` (`limit` defaulting to
/// `budget`, else a fixed size), with a note when more remains.
pub(crate) fn read_part(
    block: &ToolResultBlock,
    offset: usize,
    limit: Option<usize>,
    budget: Option<usize>,
) -> String {
    let total = block.content.chars().count();
    let limit = limit.or(budget).unwrap_or(DEFAULT_READ).max(1);
    let part: String = block.content.chars().skip(offset).take(limit).collect();
    let end = offset.saturating_add(limit).min(total);
    if end < total {
        format!(
            "{part}\n\n[Characters {offset} to {end} of {total}. Call {READ_TOOL_RESULT_TOOL} \
             with {{\"call_id\": \"{}\", \"offset\": {end}}} to read more.]",
            block.tool_use_id
        )
    } else if offset >= total {
        format!("[The result has {total} characters; nothing from offset {offset}.]")
    } else {
        part
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use agentloop_types::Role;

    fn tool(name: &str, description: &str) -> OfferedTool {
        OfferedTool::from(ToolDefinition {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: Arc::new(json!({"type": "object"})),
        })
    }

    #[test]
    fn search_ranks_exact_names_then_name_words_then_descriptions() {
        let tools = [
            tool("files_read", "Reads a file from the weather station."),
            tool("weather_now", "Current conditions."),
            tool("forecast", "The weather for the next days."),
            tool("mail_send", "Sends mail."),
        ];
        assert_eq!(search(&tools, "weather", 5), vec![1, 0, 2]);
        assert_eq!(search(&tools, "forecast", 5), vec![2]);
        assert_eq!(search(&tools, "mail_send, forecast", 5)[..2], [3, 2]);
        assert_eq!(search(&tools, "weather", 1), vec![1]);
        assert!(search(&tools, "database", 5).is_empty());
    }

    #[test]
    fn the_index_holds_every_tool_on_one_line() {
        let tools = [
            tool("a", "First sentence. Second one.\nSecond line."),
            tool("b", &"long ".repeat(100)),
        ];
        let definition = search_definition(&tools);
        assert_eq!(definition.name, TOOL_SEARCH_TOOL);
        assert!(definition.description.contains("- a: First sentence.\n"));
        assert!(!definition.description.contains("Second line."));
        let b = definition.description.lines().last().unwrap();
        assert_eq!(b.chars().count(), "- b: ".len() + INDEX_DESCRIPTION);
    }

    fn results(id: &str, call: &str, text: &str) -> Message {
        Message::new(
            id,
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::ok(call, text))],
        )
    }

    #[test]
    fn shaping_shortens_and_clears_what_is_sent_only() {
        let history = vec![
            results("m1", "c1", "first result"),
            results("m2", "c2", &"x".repeat(50)),
            results("m3", "c3", "last"),
        ];
        let edits = ContextEdits {
            shortened: [("c2".to_owned(), 10)].into(),
            cleared_through: Some("m1".to_owned()),
            ..ContextEdits::default()
        };
        let cleared = cleared_calls(&history, edits.cleared_through.as_deref());
        let sent = shape(history.clone(), &edits, &cleared);
        let text = |m: &Message| m.tool_results().next().unwrap().content.clone();
        assert!(text(&sent[0]).starts_with("[Cleared"));
        assert!(text(&sent[0]).contains("\"call_id\": \"c1\""));
        assert!(text(&sent[1]).starts_with("xxxxxxxxxx\n\n[Shortened: the first 10 of 50"));
        assert!(text(&sent[1]).contains("\"offset\": 10"));
        assert_eq!(text(&sent[2]), "last");
        assert_eq!(text(&history[1]), "x".repeat(50), "the history is whole");
    }

    #[test]
    fn reading_a_stored_result_goes_on_from_an_offset() {
        let block = ToolResultBlock::ok("c", "abcdefghij");
        assert!(
            read_part(&block, 0, Some(4), None).starts_with("abcd\n\n[Characters 0 to 4 of 10")
        );
        assert_eq!(read_part(&block, 4, None, Some(100)), "efghij");
        assert_eq!(read_part(&block, 8, Some(4), None), "ij");
        assert!(read_part(&block, 20, None, None).contains("nothing from offset 20"));
        let wide = ToolResultBlock::ok("w", "ééééé");
        assert!(read_part(&wide, 3, None, None) == "éé");
    }
}
