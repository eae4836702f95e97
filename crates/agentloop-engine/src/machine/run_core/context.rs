//! The core's context edits (see [`context_edits`](crate::machine::context_edits)
//! for the rules): which tools a request sends under tool search, the
//! calls of `tool_search` and `read_tool_result` it answers itself, and,
//! before each model call and before compaction, results shortened to
//! their tool's budget and older results cleared. Each edit is stored
//! with the strategy phase and reported as `context_edited`, so a resumed
//! run sends the same requests; the history stays whole.

use std::collections::HashMap;
use std::sync::Arc;

use agentloop_types::{
    ContextEdit, ContextEditedEvent, EventKind, READ_TOOL_RESULT_TOOL, TOOL_SEARCH_TOOL,
    ToolDefinition, ToolResult, ToolUseBlock,
};

use super::{Env, ModelCall, RunCore};
use crate::machine::context_edits::{
    budget_chars, cleared_calls, find_result, found_answer, found_limit, read_definition,
    read_part, search, search_definition,
};

impl RunCore {
    /// Whether the agent speaking offers its tools through tool search:
    /// it has more than the configured threshold.
    fn searches(&self, env: &Env) -> bool {
        env.options
            .context
            .tool_search_threshold
            .and_then(|t| usize::try_from(t).ok())
            .is_some_and(|t| self.speaking(env).tools.len() > t)
    }

    /// What a request offering the run's tools sends, from `base` (every
    /// definition the agent speaking offers): under tool search, the tools
    /// that are not the agent's own (handoff and output tools), the search
    /// tool with the index, then each tool loaded, in the order loaded —
    /// so a request only ever appends to the one before; with results
    /// that may be edited, `read_tool_result` before the search tool.
    pub(super) fn context_tools(
        &self,
        env: &Env,
        base: &Arc<[ToolDefinition]>,
    ) -> Arc<[ToolDefinition]> {
        let reads = env.options.context.edits_results();
        let searching = self.searches(env);
        if !reads && !searching {
            return base.clone();
        }
        let agent = self.speaking(env);
        let mut tools: Vec<ToolDefinition> = if searching {
            base.iter()
                .filter(|d| agent.find(&d.name).is_none())
                .cloned()
                .collect()
        } else {
            base.to_vec()
        };
        if reads {
            tools.push(read_definition());
        }
        if searching {
            tools.push(search_definition(&agent.tools));
            let loaded = self.context.as_deref().map(|c| c.loaded.as_slice());
            tools.extend(
                loaded
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|name| agent.find(name))
                    .map(|t| t.definition.clone()),
            );
        }
        tools.into()
    }

    /// The core's answer to a call of `tool_search` (under tool search) or
    /// `read_tool_result` (when results may be edited); `None` for any
    /// other call.
    pub(super) fn context_answer(&self, env: &Env, call: &ToolUseBlock) -> Option<ToolResult> {
        if call.name == TOOL_SEARCH_TOOL && self.searches(env) {
            let input = call.input.value();
            let Some(query) = input.get("query").and_then(|q| q.as_str()) else {
                return Some(ToolResult::error("`query` must be a string."));
            };
            let tools = &self.speaking(env).tools;
            let found = search(tools, query, found_limit(&input));
            return Some(ToolResult::ok(found_answer(tools, &found, query)));
        }
        if call.name == READ_TOOL_RESULT_TOOL && env.options.context.edits_results() {
            return Some(self.read_result(env, call));
        }
        None
    }

    fn read_result(&self, env: &Env, call: &ToolUseBlock) -> ToolResult {
        let input = call.input.value();
        let Some(id) = input.get("call_id").and_then(|q| q.as_str()) else {
            return ToolResult::error("`call_id` must be a string.");
        };
        let number = |key: &str| {
            input
                .get(key)
                .and_then(serde_json::Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
        };
        let Some(block) = find_result(&self.state.messages, id) else {
            return ToolResult::error(format!("No stored result of a call `{id}`."));
        };
        let budget = self
            .tool_of(id)
            .and_then(|name| env.options.context.budget_of(&name))
            .map(budget_chars);
        ToolResult::ok(read_part(
            block,
            number("offset").unwrap_or(0),
            number("limit"),
            budget,
        ))
    }

    /// The name of the tool call `id` called.
    fn tool_of(&self, id: &str) -> Option<String> {
        self.state
            .messages
            .iter()
            .rev()
            .flat_map(|m| m.tool_uses())
            .find(|c| c.id == id)
            .map(|c| c.name.clone())
    }

    /// Under tool search, loads what a tool step finds (its `tool_search`
    /// calls) or calls without having loaded it, and reports it.
    pub(super) fn load_found_tools(&mut self, env: &Env, calls: &[ToolUseBlock]) {
        if !self.searches(env) {
            return;
        }
        let agent = self.speaking(env);
        let loaded = self.context.as_deref().map(|c| c.loaded.as_slice());
        let loaded = loaded.unwrap_or_default();
        let mut new: Vec<String> = Vec::new();
        for call in calls {
            let names: Vec<&str> = if call.name == TOOL_SEARCH_TOOL {
                let input = call.input.value();
                let query = input.get("query").and_then(|q| q.as_str());
                search(&agent.tools, query.unwrap_or_default(), found_limit(&input))
                    .into_iter()
                    .filter_map(|i| agent.tools.get(i))
                    .map(|t| t.definition.name.as_str())
                    .collect()
            } else if agent.find(&call.name).is_some() {
                vec![call.name.as_str()]
            } else {
                Vec::new()
            };
            for name in names {
                if !loaded.iter().any(|l| l == name) && !new.iter().any(|n| n == name) {
                    new.push(name.to_owned());
                }
            }
        }
        if new.is_empty() {
            return;
        }
        self.context
            .get_or_insert_default()
            .loaded
            .extend(new.iter().cloned());
        self.emit_edit(ContextEdit::ToolsLoaded { tools: new });
    }

    /// Before a model call (and its compaction): results over their
    /// tool's budget are sent shortened, and older results are cleared
    /// once the request passes the clearing threshold.
    pub(super) fn edit_context(&mut self, env: &Env, call: &ModelCall) {
        self.shorten_results(env);
        self.clear_results(env, call);
    }

    fn shorten_results(&mut self, env: &Env) {
        let options = &env.options.context;
        if options.tool_output_budget.is_none() && options.tool_output_budgets.is_empty() {
            return;
        }
        let names: HashMap<&str, &str> = self
            .state
            .messages
            .iter()
            .flat_map(|m| m.tool_uses())
            .map(|c| (c.id.as_str(), c.name.as_str()))
            .collect();
        let known = self.context.as_deref().map(|c| &c.shortened);
        let mut new: Vec<(String, usize)> = Vec::new();
        for result in self.state.messages.iter().flat_map(|m| m.tool_results()) {
            let id = result.tool_use_id.as_str();
            let Some(name) = names.get(id) else { continue };
            if *name == TOOL_SEARCH_TOOL || *name == READ_TOOL_RESULT_TOOL {
                continue;
            }
            let Some(chars) = options.budget_of(name).map(budget_chars) else {
                continue;
            };
            // Bytes bound characters: most results are ruled out unread.
            if result.content.len() <= chars
                || known.is_some_and(|k| k.contains_key(id))
                || result.content.chars().count() <= chars
            {
                continue;
            }
            new.push((id.to_owned(), chars));
        }
        if new.is_empty() {
            return;
        }
        let calls = new.iter().map(|(id, _)| id.clone()).collect();
        self.context.get_or_insert_default().shortened.extend(new);
        self.emit_edit(ContextEdit::ResultsShortened { calls });
    }

    fn clear_results(&mut self, env: &Env, call: &ModelCall) {
        let (Some(policy), Some(window)) = (
            env.options.context.clear_tool_results.as_ref(),
            env.options.context_window,
        ) else {
            return;
        };
        let limit = (f64::from(window) * f64::from(policy.threshold.clamp(0.0, 1.0))) as u64;
        let before = self.estimate(env, call, self.compaction.as_deref());
        if before <= limit {
            return;
        }
        let messages = &self.state.messages;
        let holding: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.tool_results().next().is_some())
            .map(|(i, _)| i)
            .collect();
        let keep = usize::try_from(policy.keep_last).unwrap_or(usize::MAX);
        let Some(&through) = holding
            .len()
            .checked_sub(keep + 1)
            .and_then(|i| holding.get(i))
        else {
            return;
        };
        let current = self
            .context
            .as_deref()
            .and_then(|c| c.cleared_through.as_deref())
            .and_then(|id| messages.iter().position(|m| m.id == id));
        if current.is_some_and(|c| c >= through) {
            return;
        }
        let through = messages[through].id.clone();
        self.context.get_or_insert_default().cleared_through = Some(through.clone());
        let tokens_after = self.estimate(env, call, self.compaction.as_deref());
        let calls = cleared_calls(&self.state.messages, Some(&through)).len();
        self.emit_edit(ContextEdit::ResultsCleared {
            calls: u32::try_from(calls).unwrap_or(u32::MAX),
            through,
            tokens_before: before,
            tokens_after,
        });
    }

    fn emit_edit(&mut self, edit: ContextEdit) {
        self.emit(EventKind::ContextEdited(Box::new(ContextEditedEvent {
            edit,
        })));
    }
}
