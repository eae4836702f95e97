//! The core's compaction step: before a model call, whether what it would
//! send exceeds the configured fraction of the context window, and what
//! then stands in for the older history (see [`super::compaction`] for
//! the rules). Only what is sent changes; the history stays whole.

use agentloop_types::{
    CompactionStrategy, EventKind, History, LoopError, TokenTotals, validate_history,
};

use super::{Env, ModelCall, RunCore};
use crate::machine::answers::trim_thinking;
use crate::machine::compaction::{self, Compaction, PendingSummary, PlannedCompaction};
use crate::machine::context_edits;
use crate::machine::protocol::Step;
use agentloop_types::{AgentErrorEvent, ContextCompactedEvent};

impl RunCore {
    /// What `call` sends under `compaction`: thinking trimmed, the older
    /// history compacted, the call's extra messages appended.
    pub(super) fn sent_messages(
        &self,
        env: &Env,
        call: &ModelCall,
        compaction: Option<&Compaction>,
    ) -> History {
        let keep = env.options.thinking_keep_turns;
        let filtered = self.filters_history(env);
        let edits = self.context.as_deref().filter(|c| c.edits_history());
        if keep.is_none()
            && compaction.is_none()
            && call.extra.is_empty()
            && !filtered
            && edits.is_none()
        {
            // The common case shares the history instead of copying it.
            return self.state.messages.clone();
        }
        let trimmed = trim_thinking(&self.state.messages, keep);
        let shaped = compaction::shape(trimmed, compaction, &self.state.run_id);
        let mut messages = self.filter_for_speaker(env, shaped);
        if let Some(edits) = edits {
            let cleared = context_edits::cleared_calls(
                &self.state.messages,
                edits.cleared_through.as_deref(),
            );
            messages = context_edits::shape(messages, edits, &cleared);
        }
        messages.extend(call.extra.iter().cloned());
        messages.into()
    }

    /// Estimated tokens of `call` under `compaction`.
    pub(super) fn estimate(
        &self,
        env: &Env,
        call: &ModelCall,
        compaction: Option<&Compaction>,
    ) -> u64 {
        compaction::estimate_tokens(
            env.options.request.system_prompt.as_deref(),
            &self.sent_messages(env, call, compaction),
            &self.offered_tools(env, &call.offer),
        )
    }

    /// Compacts what `call` sends when its estimate exceeds the configured
    /// fraction of the context window: leaves the oldest turns out at once
    /// (`drop_oldest`, as few as bring it under), or returns the
    /// summarising call to make first (`summarise`, everything before the
    /// kept turns). Nothing happens when no cut is left to make. When
    /// `before_compaction` hooks are registered, the planned compaction
    /// waits for their answers (see [`RunCore::compaction_hooks`]).
    pub(super) fn compact(&mut self, env: &Env, call: &ModelCall) -> Option<Step> {
        let plan = self.plan_compaction(env, call)?;
        if let Some(step) = self.compaction_hooks(env, call, &plan) {
            return Some(step);
        }
        self.carry_out(env, call, plan, None)
    }

    /// The compaction `call`'s request needs, if any.
    fn plan_compaction(&self, env: &Env, call: &ModelCall) -> Option<PlannedCompaction> {
        let options = &env.options;
        let window = options.context_window?;
        let policy = &options.compaction;
        if policy.strategy == CompactionStrategy::None {
            return None;
        }
        let limit = (f64::from(window) * f64::from(policy.threshold.clamp(0.0, 1.0))) as u64;
        let before = self.estimate(env, call, self.compaction.as_deref());
        if before <= limit {
            return None;
        }
        let messages = &self.state.messages;
        let current = self
            .compaction
            .as_ref()
            .and_then(|c| compaction::position(messages, &c.kept_from));
        let left_out = |kept: usize| Compaction {
            kept_from: messages[kept].id.clone(),
            summary: None,
            context: None,
        };
        let fits = |kept: usize| {
            validate_history(&self.sent_messages(env, call, Some(&left_out(kept))), false).is_ok()
        };
        let cuts: Vec<usize> = compaction::cut_points(messages, current, policy.keep_last_turns)
            .into_iter()
            .filter(|&kept| fits(kept))
            .collect();
        let kept = match policy.strategy {
            CompactionStrategy::None => return None,
            CompactionStrategy::DropOldest => {
                let under = cuts
                    .iter()
                    .copied()
                    .find(|&kept| self.estimate(env, call, Some(&left_out(kept))) <= limit);
                under.or_else(|| cuts.last().copied())?
            }
            CompactionStrategy::Summarise => *cuts.last()?,
        };
        Some(PlannedCompaction {
            strategy: policy.strategy,
            kept_from: messages[kept].id.clone(),
            tokens_before: before,
        })
    }

    /// Puts `plan` in effect, with the context hooks added: at once
    /// (`drop_oldest`), or through the summarising call it returns
    /// (`summarise`).
    pub(in crate::machine) fn carry_out(
        &mut self,
        env: &Env,
        call: &ModelCall,
        plan: PlannedCompaction,
        context: Option<String>,
    ) -> Option<Step> {
        match plan.strategy {
            CompactionStrategy::None => None,
            CompactionStrategy::DropOldest => {
                let dropped = Compaction {
                    kept_from: plan.kept_from,
                    summary: None,
                    context,
                };
                self.apply_compaction(
                    env,
                    call,
                    dropped,
                    plan.tokens_before,
                    CompactionStrategy::DropOldest,
                );
                None
            }
            CompactionStrategy::Summarise => {
                self.summary = Some(Box::new(PendingSummary {
                    kept_from: plan.kept_from,
                    tokens_before: plan.tokens_before,
                    context,
                }));
                let step = self.summary_step();
                if step.is_none() {
                    self.summary = None;
                }
                step
            }
        }
    }

    /// The history messages `plan` would stand in for.
    pub(in crate::machine) fn compacted_by(&self, plan: &PlannedCompaction) -> u32 {
        let planned = Compaction {
            kept_from: plan.kept_from.clone(),
            summary: None,
            context: None,
        };
        compaction::compacted_count(&self.state.messages, &planned)
    }

    /// Puts `compaction` in effect and reports it.
    fn apply_compaction(
        &mut self,
        env: &Env,
        call: &ModelCall,
        compaction: Compaction,
        tokens_before: u64,
        strategy: CompactionStrategy,
    ) {
        let tokens_after = self.estimate(env, call, Some(&compaction));
        let messages_compacted = compaction::compacted_count(&self.state.messages, &compaction);
        self.compaction = Some(Box::new(compaction));
        self.emit(EventKind::ContextCompacted(ContextCompactedEvent {
            strategy,
            tokens_before,
            tokens_after,
            messages_compacted,
        }));
    }

    /// The summarising request of the summary in flight: the summary in
    /// effect (if any) and the history from where it ends to the new cut.
    pub(super) fn summary_step(&self) -> Option<Step> {
        let pending = self.summary.as_ref()?;
        let messages = &self.state.messages;
        let end = compaction::position(messages, &pending.kept_from)?;
        let (start, previous) = match &self.compaction {
            Some(c) => (
                compaction::position(messages, &c.kept_from).unwrap_or(0),
                c.summary.as_deref(),
            ),
            None => (0, None),
        };
        Some(Step::Summarise {
            messages: compaction::summary_request(
                previous,
                &messages[start.min(end)..end],
                &self.state.run_id,
            ),
        })
    }

    /// The summarising call answered: its tokens count in the run's, the
    /// summary takes the place of the older turns, and the model call
    /// decided before it goes out. A failed or empty summary leaves the
    /// older turns out instead, reported as `agent_error`.
    pub(crate) fn summarised(
        &mut self,
        env: &Env,
        summary: Result<(String, TokenTotals), LoopError>,
    ) -> Step {
        let (Some(pending), Some(call)) = (self.summary.take(), self.model_call.clone()) else {
            return self.invalid("a summary with no summarising call in flight");
        };
        let (summary, strategy) = match summary {
            Ok((text, usage)) => {
                self.consume(usage);
                if text.trim().is_empty() {
                    self.summary_failed(&call, "the summary was empty");
                    (None, CompactionStrategy::DropOldest)
                } else {
                    (Some(text), CompactionStrategy::Summarise)
                }
            }
            Err(error) => {
                self.summary_failed(&call, &error.to_string());
                (None, CompactionStrategy::DropOldest)
            }
        };
        let compaction = Compaction {
            kept_from: pending.kept_from,
            summary,
            context: pending.context,
        };
        self.apply_compaction(env, &call, compaction, pending.tokens_before, strategy);
        self.request(env, &call)
    }

    fn summary_failed(&mut self, call: &ModelCall, why: &str) {
        self.emit(EventKind::AgentError(AgentErrorEvent {
            message: format!(
                "Summarising the context failed ({why}); the oldest turns are left out instead."
            ),
            step: call.iteration,
        }));
    }
}
