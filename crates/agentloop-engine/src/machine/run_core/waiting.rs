//! A tool step that waits for a person: calls held for approval, questions
//! a tool asked, calls waiting inside a nested run. The step's other calls
//! run first; then the run ends `suspended` with every pending call, and
//! the decisions resume the same step in place. Strategies never see a
//! step that waits: they get its results once every call has one.

use agentloop_types::{
    ApprovalPolicy, ApprovalRequestedEvent, BreakLoop, ChildResume, Decision, Decisions, EventKind,
    FinishedEvent, LoopResult, LoopStatus, PendingCall, RunPath, RunPhase, TokenTotals, ToolResult,
    ToolUseBlock, Wait, approval_policy,
};

use super::{Env, RunCore};
use crate::machine::answers::ToolOutcome;
use crate::machine::protocol::{Input, Step, ToolCall};
use crate::machine::waits::Waiting;

/// The result a rejected call (or a question declined) gets.
fn rejected(wait: &Wait, reason: &str) -> ToolResult {
    let what = match wait {
        Wait::Approval { .. } => "The user rejected this call",
        Wait::Question { .. } => "The user declined to answer",
    };
    if reason.trim().is_empty() {
        ToolResult::error(format!("{what}."))
    } else {
        ToolResult::error(format!("{what}: {}", reason.trim()))
    }
}

impl RunCore {
    /// The tool step's waiting record, taken out to be worked on (a fresh
    /// one when the step has none).
    pub(crate) fn take_waiting(&mut self) -> Waiting {
        self.waiting.take().map(|w| *w).unwrap_or_default()
    }

    /// Why `call` must wait for approval before it runs; `None` when it
    /// runs at once.
    fn needs_approval(&self, env: &Env, call: &ToolUseBlock) -> Option<String> {
        if self.state.approved_tools.contains(&call.name) {
            return None;
        }
        let never = ApprovalPolicy::Never;
        let default = self
            .speaking(env)
            .find(&call.name)
            .map_or(&never, |t| &t.approval);
        match approval_policy(&env.options.approvals, &call.name, default) {
            // Most calls: no need to read the arguments.
            ApprovalPolicy::Never => None,
            policy => policy.requires(&call.name, &call.input.value()),
        }
    }

    /// The calls of the pending tool step that run now: those without a
    /// result that do not wait. A call that needs approval is held (and
    /// `approval_requested` emitted); an approved call runs with its
    /// arguments; a call whose child run was decided resumes that run.
    pub(crate) fn plan_step(&mut self, env: &Env, calls: &[ToolUseBlock]) -> Step {
        let mut waiting = self.take_waiting();
        let open: Vec<ToolUseBlock> = calls
            .iter()
            .filter(|c| !waiting.has(&c.id))
            .map(|c| {
                let rewritten = waiting.hooked.get(&c.id).and_then(|v| v.arguments.as_ref());
                match waiting.approved.get(&c.id).or(rewritten) {
                    Some(arguments) => ToolUseBlock {
                        input: arguments.clone().into(),
                        ..c.clone()
                    },
                    None => c.clone(),
                }
            })
            .collect();
        let planned = self.plan_calls(env, open);
        // Calls that will run (not answered by the core, not resuming a
        // child run) go past the `before_tool_call` hooks first.
        let asked: Vec<&ToolUseBlock> = planned
            .iter()
            .filter(|p| p.answer.is_none() && !waiting.children.contains_key(&p.call.id))
            .map(|p| &p.call)
            .collect();
        if let Some(step) = self
            .tool_hooks(env, &waiting, &asked)
            .or_else(|| self.subagent_hooks(env, &waiting, &asked))
        {
            self.waiting = Some(Box::new(waiting));
            return step;
        }
        let mut run: Vec<ToolCall> = Vec::with_capacity(planned.len());
        for mut planned in planned {
            let id = &planned.call.id;
            if let Some(verdict) = waiting.hooked.get(id)
                && verdict.blocked
            {
                continue;
            }
            let hook_asks = waiting.hooked.get(id).and_then(|v| v.ask.clone());
            if let Some(child) = waiting.children.get(id) {
                planned.resume = Some(child.clone());
            } else if planned.answer.is_none()
                && !waiting.approved.contains_key(id)
                && let Some(reason) = hook_asks.or_else(|| self.needs_approval(env, &planned.call))
            {
                self.emit(EventKind::ApprovalRequested(Box::new(
                    ApprovalRequestedEvent {
                        tool_use_id: id.clone(),
                        tool: planned.call.name.clone(),
                        arguments: planned.call.input.value(),
                        reason: reason.clone(),
                    },
                )));
                waiting.pending.push(PendingCall {
                    call: planned.call,
                    path: RunPath::root(),
                    wait: Wait::Approval { reason },
                });
                continue;
            }
            run.push(planned);
        }
        if waiting != Waiting::default() {
            self.waiting = Some(Box::new(waiting));
        }
        Step::RunTools { calls: run }
    }

    /// The outcomes of a round of calls. When a call still waits, the run
    /// ends `suspended` (`Err`: its step); otherwise the strategy gets the
    /// whole step's results, as if every call had run in one round.
    pub(crate) fn settle_tools(
        &mut self,
        env: &Env,
        results: Vec<(String, ToolOutcome)>,
        child_tokens: TokenTotals,
    ) -> Result<Input, Step> {
        // The step's calls are lent out of the phase while they settle
        // (nothing below reads the phase) rather than copied.
        let phase = std::mem::replace(&mut self.state.phase, RunPhase::CallModel);
        let settled = match &phase {
            RunPhase::RunTools { calls, .. } => {
                self.settle_calls(env, calls, results, child_tokens)
            }
            _ => Ok(Input::ToolsDone {
                results,
                child_tokens,
            }),
        };
        self.state.phase = phase;
        settled
    }

    fn settle_calls(
        &mut self,
        env: &Env,
        calls: &[ToolUseBlock],
        results: Vec<(String, ToolOutcome)>,
        child_tokens: TokenTotals,
    ) -> Result<Input, Step> {
        let mut waiting = self.take_waiting();
        for (id, outcome) in results {
            let Some(call) = calls.iter().find(|c| c.id == id) else {
                continue;
            };
            let mut result = outcome.into_result(&call.name);
            waiting.children.remove(&id);
            match result.break_loop.take() {
                Some(BreakLoop::Suspend { child: Some(child) }) => {
                    let under = RunPath::root().child(&id);
                    waiting
                        .pending
                        .extend(child.pending.into_iter().map(|p| PendingCall {
                            path: p.path.under(&under),
                            ..p
                        }));
                    waiting.children.insert(
                        id,
                        ChildResume {
                            state: child.state,
                            decisions: Decisions::new(),
                        },
                    );
                }
                Some(BreakLoop::Suspend { child: None }) => waiting.pending.push(PendingCall {
                    call: call.clone(),
                    path: RunPath::root(),
                    wait: Wait::Question {
                        question: result.content,
                    },
                }),
                other => {
                    result.break_loop = other;
                    if let Some(context) = waiting.hooked.get(&id).and_then(|v| v.context.as_ref())
                    {
                        result.content = format!("{}\n\n{context}", result.content);
                    }
                    if let Some(pos) = waiting.edited.iter().position(|e| *e == id) {
                        waiting.edited.swap_remove(pos);
                        let arguments = waiting.approved.get(&id).cloned().unwrap_or_default();
                        result.content = format!(
                            "(The user edited the arguments before this call ran: {arguments})\n{}",
                            result.content
                        );
                    }
                    waiting.done.push((id, result));
                }
            }
        }
        self.state.totals += child_tokens;
        if waiting.pending.is_empty() {
            if let Some(step) = self.result_hooks(env, calls, &mut waiting) {
                self.waiting = Some(Box::new(waiting));
                return Err(step);
            }
            let results = waiting
                .done
                .into_iter()
                .map(|(id, result)| (id, ToolOutcome::Finished(result)))
                .collect();
            return Ok(Input::ToolsDone {
                results,
                child_tokens: TokenTotals::default(),
            });
        }
        waiting.approved.clear();
        let pending = waiting.pending.clone();
        waiting.suspended = true;
        self.waiting = Some(Box::new(waiting));
        Err(self.suspend(pending, self.state.messages.clone(), self.state.totals))
    }

    /// Ends this part of the run `suspended` on `pending`: the terminal
    /// event of the run path, while the state keeps the step that waits.
    /// (The machine adds the state to the event.)
    pub(crate) fn suspend(
        &mut self,
        pending: Vec<PendingCall>,
        messages: agentloop_types::History,
        tokens: TokenTotals,
    ) -> Step {
        self.emit(EventKind::Finished(FinishedEvent {
            result: Box::new(LoopResult {
                status: LoopStatus::Suspended {
                    pending,
                    state: None,
                },
                messages,
                tokens,
                stop: None,
            }),
        }));
        Step::Done
    }

    /// Suspends on a question the strategy itself asks (ReAct's
    /// `agent_request_input`): `call` is committed and waits for the
    /// answer as its result.
    pub(crate) fn ask(&mut self, call: ToolUseBlock, question: String) -> Step {
        let result_message_id = self.next_id();
        self.state.phase = RunPhase::RunTools {
            result_message_id,
            calls: vec![call.clone()],
        };
        let pending = vec![PendingCall {
            call,
            path: RunPath::root(),
            wait: Wait::Question { question },
        }];
        self.waiting = Some(Box::new(Waiting {
            pending: pending.clone(),
            suspended: true,
            ..Waiting::default()
        }));
        self.suspend(pending, self.state.messages.clone(), self.state.totals)
    }

    /// What the run waits for, when it has ended `suspended`.
    pub(crate) fn pending(&self) -> Option<&[PendingCall]> {
        self.waiting
            .as_ref()
            .filter(|w| w.suspended)
            .map(|w| w.pending.as_slice())
    }

    /// Applies a person's decisions (checked against [`pending`]
    /// beforehand) and goes on with the step: approved calls run, rejected
    /// ones and answers become results, decided child runs resume.
    ///
    /// [`pending`]: Self::pending
    pub(crate) fn decide(&mut self, env: &Env, decisions: Decisions) -> Step {
        let (Some(mut waiting), RunPhase::RunTools { calls, .. }) =
            (self.waiting.take().map(|w| *w), &self.state.phase)
        else {
            return self.invalid("decisions for a run that does not wait");
        };
        let calls = calls.clone();
        waiting.suspended = false;
        for item in std::mem::take(&mut waiting.pending) {
            let id = item.call.id.clone();
            let Some(decision) = decisions.get(&id).cloned() else {
                waiting.pending.push(item);
                continue;
            };
            if let Some(parent) = item.path.0.first() {
                if let Some(child) = waiting.children.get_mut(parent) {
                    child.decisions.insert(id, decision);
                }
                continue;
            }
            match (decision, &item.wait) {
                (Decision::Approve { arguments }, Wait::Approval { .. }) => {
                    if arguments.is_some() {
                        waiting.edited.push(id.clone());
                    }
                    let arguments = arguments.unwrap_or_else(|| item.call.input.value());
                    waiting.approved.insert(id, arguments);
                }
                (Decision::ApproveAlways, Wait::Approval { .. }) => {
                    if !self.state.approved_tools.contains(&item.call.name) {
                        self.state.approved_tools.push(item.call.name);
                    }
                    waiting.approved.insert(id, item.call.input.value());
                }
                (Decision::Answer { text }, Wait::Question { .. }) => {
                    waiting.done.push((id, ToolResult::ok(text)));
                }
                (Decision::Reject { reason }, wait) => {
                    waiting.done.push((id, rejected(wait, &reason)));
                }
                // `check_fit` keeps these out; should one come, the model
                // is told nothing ran.
                (Decision::Answer { .. }, Wait::Approval { .. })
                | (Decision::Approve { .. } | Decision::ApproveAlways, Wait::Question { .. }) => {
                    waiting.done.push((id, rejected(&item.wait, "")));
                }
            }
        }
        if !waiting.pending.is_empty() {
            // Undecided calls: still waiting.
            let pending = waiting.pending.clone();
            waiting.suspended = true;
            self.waiting = Some(Box::new(waiting));
            return self.suspend(pending, self.state.messages.clone(), self.state.totals);
        }
        self.waiting = Some(Box::new(waiting));
        self.plan_step(env, &calls)
    }
}
