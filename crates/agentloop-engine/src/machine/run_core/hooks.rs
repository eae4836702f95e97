//! Lifecycle hooks as machine inputs. At a moment some hook wants, the
//! core stops with [`Step::Hook`] and stores what it was about to do
//! ([`PendingHook`]); the driver asks the hooks and answers
//! [`Input::Hooked`](crate::machine::Input::Hooked); the core records each
//! answer as a `hook` event, combines them (see [`agentloop_types::hook`])
//! and goes on. A tool step asks in rounds: `before_tool_call`, then
//! `before_subagent` for calls of tools that run a sub-agent; once every
//! call has a result, `after_tool_call`, then `after_subagent` (both
//! sub-agent rounds reuse the tool stages: their decisions apply the same
//! way). What a decision changed is stored with the run (the tool
//! step's [`Waiting`] record, committed messages, the continue count), so
//! a resumed run never asks again for a decision it already has; a stored
//! [`PendingHook`] is asked again, since its answers never arrived.

use agentloop_types::{
    ContentBlock, EventKind, HookAnswer, HookDecision, HookEvent, HookInput, HookPoint, LoopError,
    LoopStatus, Role, StopReason, ToolResult, ToolUseBlock,
};
use serde_json::Value;

use super::{Env, ModelCall, RunCore, ToolOffer};
use crate::machine::compaction::PlannedCompaction;
use crate::machine::hook_steps::{AfterHooks, HookStage, PendingHook};
use crate::machine::protocol::Step;
use crate::machine::waits::Waiting;

/// The answers about one moment, combined.
#[derive(Debug, Default)]
struct Combined {
    /// The first block: who blocked (`hook` or `guardrail`), its name and
    /// reason.
    block: Option<(&'static str, String, String)>,
    ask: Option<String>,
    rewrite: Option<Value>,
    context: Vec<String>,
    replace: Option<(String, bool)>,
    continues: Vec<String>,
}

impl RunCore {
    fn ask_hooks(&mut self, stage: HookStage, requests: Vec<HookInput>) -> Step {
        self.hook = Some(Box::new(PendingHook {
            stage,
            requests: requests.clone(),
        }));
        Step::Hook { requests }
    }

    /// The hook step in flight when a stored run resumes.
    pub(crate) fn resume_hook(&self) -> Option<Step> {
        let pending = self.hook.as_ref()?;
        Some(Step::Hook {
            requests: pending.requests.clone(),
        })
    }

    /// At the start of a fresh top-level run: the `run_start` and
    /// `user_prompt_submitted` hooks, when some are registered.
    pub(crate) fn start_hooks(&mut self, env: &Env) -> Option<Step> {
        let fresh = !self.hooks_started
            && self.state.iteration == 0
            && self.state.created_messages == 0
            && self.hook.is_none();
        if !fresh {
            return None;
        }
        self.hooks_started = true;
        let run_id = self.state.run_id.clone();
        let mut requests = Vec::new();
        if env.hooks.wants(HookPoint::RunStart) {
            requests.push(HookInput::RunStart {
                run_id: run_id.clone(),
            });
        }
        if env.hooks.wants(HookPoint::UserPromptSubmitted)
            && let Some(last) = self.state.messages.last()
            && last.role == Role::User
            && last.tool_results().next().is_none()
        {
            requests.push(HookInput::UserPromptSubmitted {
                run_id,
                prompt: last.text(),
            });
        }
        if requests.is_empty() {
            return None;
        }
        Some(self.ask_hooks(HookStage::Start, requests))
    }

    /// Before the model call just decided goes out: the
    /// `before_model_call` hooks, when some are registered and it is not
    /// a retry of a failed call.
    pub(crate) fn model_call_hooks(&mut self, env: &Env, iteration: u32) -> Option<Step> {
        if !env.hooks.wants(HookPoint::BeforeModelCall) {
            return None;
        }
        let requests = vec![HookInput::BeforeModelCall {
            run_id: self.state.run_id.clone(),
            iteration,
        }];
        Some(self.ask_hooks(HookStage::ModelCall, requests))
    }

    /// Before `plan` compacts `call`'s request: the `before_compaction`
    /// hooks, when some are registered. The call is stored beside the
    /// step (by `send`), so a resumed run sends it without asking again.
    pub(crate) fn compaction_hooks(
        &mut self,
        env: &Env,
        call: &ModelCall,
        plan: &PlannedCompaction,
    ) -> Option<Step> {
        if !env.hooks.wants(HookPoint::BeforeCompaction) {
            return None;
        }
        let requests = vec![HookInput::BeforeCompaction {
            run_id: self.state.run_id.clone(),
            iteration: call.iteration,
            strategy: plan.strategy,
            tokens_before: plan.tokens_before,
            messages_compacted: self.compacted_by(plan),
        }];
        let stage = HookStage::Compaction { plan: plan.clone() };
        Some(self.ask_hooks(stage, requests))
    }

    /// Before the planned calls run: the `before_tool_call` hooks for the
    /// calls no hook has decided yet. `waiting` is stored when they are
    /// asked.
    pub(crate) fn tool_hooks(
        &mut self,
        env: &Env,
        waiting: &Waiting,
        calls: &[&ToolUseBlock],
    ) -> Option<Step> {
        if !env.hooks.wants(HookPoint::BeforeToolCall) {
            return None;
        }
        let requests: Vec<HookInput> = calls
            .iter()
            .filter(|c| {
                !waiting.hooked.contains_key(&c.id) && !waiting.approved.contains_key(&c.id)
            })
            .map(|c| HookInput::BeforeToolCall {
                run_id: self.state.run_id.clone(),
                tool_use_id: c.id.clone(),
                tool: c.name.clone(),
                arguments: c.input.value(),
            })
            .collect();
        if requests.is_empty() {
            return None;
        }
        Some(self.ask_hooks(HookStage::Tools, requests))
    }

    /// After the `before_tool_call` hooks decided: the `before_subagent`
    /// hooks for the calls of tools that run a sub-agent, when some are
    /// registered, for the calls they have not been asked about that no
    /// hook blocked and no person approved.
    pub(crate) fn subagent_hooks(
        &mut self,
        env: &Env,
        waiting: &Waiting,
        calls: &[&ToolUseBlock],
    ) -> Option<Step> {
        if !env.hooks.wants(HookPoint::BeforeSubagent) {
            return None;
        }
        let agent = self.speaking(env);
        let requests: Vec<HookInput> = calls
            .iter()
            .filter(|c| agent.find(&c.name).is_some_and(|t| t.subagent))
            .filter(|c| {
                !waiting.subagents_asked.contains(&c.id)
                    && !waiting.approved.contains_key(&c.id)
                    && !waiting.hooked.get(&c.id).is_some_and(|v| v.blocked)
            })
            .map(|c| HookInput::BeforeSubagent {
                run_id: self.state.run_id.clone(),
                tool_use_id: c.id.clone(),
                tool: c.name.clone(),
                arguments: c.input.value(),
            })
            .collect();
        if requests.is_empty() {
            return None;
        }
        Some(self.ask_hooks(HookStage::Tools, requests))
    }

    /// Once every call of the step has a result: the `after_tool_call`
    /// hooks, then the `after_subagent` hooks for the calls of tools that
    /// run a sub-agent, each round when some hook is registered for it and
    /// has not seen the results. What a round saw is noted in `waiting`,
    /// which the caller stores.
    pub(crate) fn result_hooks(
        &mut self,
        env: &Env,
        calls: &[ToolUseBlock],
        waiting: &mut Waiting,
    ) -> Option<Step> {
        if env.hooks.wants(HookPoint::AfterToolCall) && !waiting.reviewed {
            waiting.reviewed = true;
            let requests = self.result_requests(env, HookPoint::AfterToolCall, calls, waiting);
            if !requests.is_empty() {
                return Some(self.ask_hooks(HookStage::Results, requests));
            }
        }
        if env.hooks.wants(HookPoint::AfterSubagent) && !waiting.subagents_reviewed {
            waiting.subagents_reviewed = true;
            let requests = self.result_requests(env, HookPoint::AfterSubagent, calls, waiting);
            if !requests.is_empty() {
                return Some(self.ask_hooks(HookStage::Results, requests));
            }
        }
        None
    }

    /// The `after_tool_call` (or `after_subagent`) requests for the step's
    /// results: every call with a result that no hook blocked before it
    /// ran (`after_subagent`: of the calls of tools that run a sub-agent).
    fn result_requests(
        &self,
        env: &Env,
        point: HookPoint,
        calls: &[ToolUseBlock],
        waiting: &Waiting,
    ) -> Vec<HookInput> {
        let agent = self.speaking(env);
        calls
            .iter()
            .filter(|c| !waiting.hooked.get(&c.id).is_some_and(|v| v.blocked))
            .filter(|c| {
                point != HookPoint::AfterSubagent || agent.find(&c.name).is_some_and(|t| t.subagent)
            })
            .filter_map(|c| {
                let result = waiting.result(&c.id)?;
                let arguments = waiting
                    .approved
                    .get(&c.id)
                    .or_else(|| waiting.hooked.get(&c.id).and_then(|v| v.arguments.as_ref()))
                    .cloned()
                    .unwrap_or_else(|| c.input.value());
                let (run_id, tool_use_id, tool) =
                    (self.state.run_id.clone(), c.id.clone(), c.name.clone());
                let (result, is_error) = (result.content.clone(), result.is_error);
                Some(if point == HookPoint::AfterSubagent {
                    HookInput::AfterSubagent {
                        run_id,
                        tool_use_id,
                        tool,
                        arguments,
                        result,
                        is_error,
                    }
                } else {
                    HookInput::AfterToolCall {
                        run_id,
                        tool_use_id,
                        tool,
                        arguments,
                        result,
                        is_error,
                    }
                })
            })
            .collect()
    }

    /// Before completing with `text`: the `run_end` hooks, when some are
    /// registered on a top-level run.
    pub(crate) fn end_hooks(
        &mut self,
        env: &Env,
        text: &str,
        output: Option<&Value>,
        stop_reason: &StopReason,
        retry: &ToolOffer,
    ) -> Option<Step> {
        if !env.hooks.wants(HookPoint::RunEnd) || self.nested {
            return None;
        }
        let requests = vec![HookInput::RunEnd {
            run_id: self.state.run_id.clone(),
            answer: text.to_owned(),
            output: output.cloned(),
            continued: self.continues,
        }];
        let stage = HookStage::End {
            text: text.to_owned(),
            output: output.cloned(),
            stop_reason: stop_reason.clone(),
            retry: retry.clone(),
        };
        Some(self.ask_hooks(stage, requests))
    }

    /// Records the hooks' answers and applies them; returns what comes
    /// next.
    pub(crate) fn hooked(&mut self, env: &Env, answers: Vec<HookAnswer>) -> AfterHooks {
        let Some(PendingHook { stage, requests }) = self.hook.take().map(|h| *h) else {
            return AfterHooks::Step(self.invalid("hook answers with no hook step in flight"));
        };
        // One combined verdict per moment asked, in the order asked.
        let mut combined: Vec<(HookInput, Combined)> = requests
            .into_iter()
            .map(|r| (r, Combined::default()))
            .collect();
        for answer in answers {
            let Some((input, verdict)) = combined.iter_mut().find(|(input, _)| {
                input.point() == answer.point
                    && input.tool_use_id() == answer.tool_use_id.as_deref()
            }) else {
                // An answer about nothing asked: not a decision of this run.
                continue;
            };
            let point = input.point();
            let applies = answer.decision.applies_at(point)
                && !(matches!(answer.decision, HookDecision::Continue { .. })
                    && self.continues >= env.hooks.max_continues);
            self.emit(EventKind::Hook(Box::new(HookEvent {
                hook: answer.hook.clone(),
                point,
                tool_use_id: answer.tool_use_id.clone(),
                decision: answer.decision.clone(),
                ignored: !applies,
                error: answer.error.clone(),
                guardrail: answer.guardrail,
                note: answer.note.clone(),
            })));
            if applies {
                let by = if answer.guardrail {
                    "guardrail"
                } else {
                    "hook"
                };
                verdict.add(by, answer.hook, answer.decision);
            }
        }
        match stage {
            HookStage::Start | HookStage::ModelCall => {
                let mut context = Vec::new();
                for (_, verdict) in combined {
                    if let Some((by, name, reason)) = verdict.block {
                        return AfterHooks::Step(self.blocked(by, name, reason));
                    }
                    context.extend(verdict.context);
                }
                if !context.is_empty() {
                    self.commit(Role::User, vec![ContentBlock::text(context.join("\n\n"))]);
                }
                match stage {
                    HookStage::ModelCall => match self.model_call.take() {
                        Some(call) => AfterHooks::Step(self.send(env, call)),
                        None => AfterHooks::Step(self.invalid("hook answers with no model call")),
                    },
                    _ => AfterHooks::StartStrategy,
                }
            }
            HookStage::Compaction { plan } => {
                // A block sends the request uncompacted; added contexts
                // are kept in what stands in for the compacted turns.
                let Some(call) = self.model_call.clone() else {
                    return AfterHooks::Step(self.invalid("compaction hooks with no model call"));
                };
                let mut context = Vec::new();
                for (_, verdict) in combined {
                    if verdict.block.is_some() {
                        return AfterHooks::Step(self.request(env, &call));
                    }
                    context.extend(verdict.context);
                }
                let context = (!context.is_empty()).then(|| context.join("\n\n"));
                let step = self
                    .carry_out(env, &call, plan, context)
                    .unwrap_or_else(|| self.request(env, &call));
                AfterHooks::Step(step)
            }
            HookStage::Tools => {
                // `before_tool_call` answers come first; `before_subagent`
                // answers about the same call are merged into its verdict.
                let mut waiting = self.take_waiting();
                for (input, verdict) in combined {
                    let Some(id) = input.tool_use_id().map(str::to_owned) else {
                        continue;
                    };
                    if input.point() == HookPoint::BeforeSubagent {
                        waiting.subagents_asked.insert(id.clone());
                    }
                    let merged = waiting.hooked.entry(id.clone()).or_default();
                    if let Some((by, name, reason)) = verdict.block
                        && !merged.blocked
                    {
                        merged.blocked = true;
                        let text = format!("Blocked by {by} `{name}`: {reason}");
                        waiting.done.push((id, ToolResult::error(text)));
                    }
                    if merged.ask.is_none() {
                        merged.ask = verdict.ask;
                    }
                    if verdict.rewrite.is_some() {
                        merged.arguments = verdict.rewrite;
                    }
                    let context: Vec<String> = merged
                        .context
                        .take()
                        .into_iter()
                        .chain(verdict.context)
                        .collect();
                    merged.context = (!context.is_empty()).then(|| context.join("\n\n"));
                }
                self.waiting = Some(Box::new(waiting));
                let calls = match &self.state.phase {
                    agentloop_types::RunPhase::RunTools { calls, .. } => calls.clone(),
                    _ => return AfterHooks::Step(self.invalid("tool hooks with no tool step")),
                };
                AfterHooks::Step(self.plan_step(env, &calls))
            }
            HookStage::Results => {
                let mut waiting = self.take_waiting();
                for (input, verdict) in combined {
                    let Some(id) = input.tool_use_id() else {
                        continue;
                    };
                    let Some((_, result)) = waiting.done.iter_mut().find(|(done, _)| done == id)
                    else {
                        continue;
                    };
                    if let Some((by, name, reason)) = verdict.block {
                        *result = ToolResult::error(format!(
                            "The result was withheld by {by} `{name}`: {reason}"
                        ));
                        continue;
                    }
                    if let Some((text, is_error)) = verdict.replace {
                        let break_loop = result.break_loop.take();
                        *result = if is_error {
                            ToolResult::error(text)
                        } else {
                            ToolResult::ok(text)
                        };
                        result.break_loop = break_loop;
                    }
                    if !verdict.context.is_empty() {
                        result.content =
                            format!("{}\n\n{}", result.content, verdict.context.join("\n\n"));
                    }
                }
                self.waiting = Some(Box::new(waiting));
                AfterHooks::Settle
            }
            HookStage::End {
                text,
                output,
                stop_reason,
                retry,
            } => {
                // A block withholds the answer; else a continue sends the
                // run back to the model; else it completes.
                let mut reasons: Vec<String> = Vec::new();
                for (_, verdict) in combined {
                    if let Some((by, name, reason)) = verdict.block {
                        return AfterHooks::Step(self.blocked(by, name, reason));
                    }
                    reasons.extend(verdict.continues);
                }
                if reasons.is_empty() {
                    return AfterHooks::Step(match output {
                        Some(output) => self.finish(LoopStatus::Complete {
                            return_value: None,
                            output: Some(output),
                        }),
                        None => self.complete_answer(env, &text, &stop_reason, retry),
                    });
                }
                self.continues += 1;
                self.commit(Role::User, vec![ContentBlock::text(reasons.join("\n\n"))]);
                AfterHooks::Step(self.call_model(env, Vec::new(), retry, true))
            }
        }
    }

    /// The run ends `error`: hook or guardrail `name` blocked it.
    fn blocked(&mut self, by: &str, name: String, reason: String) -> Step {
        let error = LoopError::Blocked {
            by: by.to_owned(),
            name,
            reason,
        };
        self.finish(LoopStatus::Error { error })
    }
}

impl Combined {
    fn add(&mut self, by: &'static str, hook: String, decision: HookDecision) {
        match decision {
            HookDecision::Pass => {}
            HookDecision::Block { reason } => {
                if self.block.is_none() {
                    self.block = Some((by, hook, reason));
                }
            }
            HookDecision::Ask { reason } => {
                if self.ask.is_none() {
                    self.ask = Some(reason);
                }
            }
            HookDecision::Rewrite { arguments } => self.rewrite = Some(arguments),
            HookDecision::AddContext { text } => self.context.push(text),
            HookDecision::Replace { result, is_error } => self.replace = Some((result, is_error)),
            HookDecision::Continue { reason } => self.continues.push(reason),
        }
    }
}
