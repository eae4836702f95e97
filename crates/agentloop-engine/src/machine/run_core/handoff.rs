//! Handoffs in the run core: which agent speaks, what it offers, and the
//! handoff itself, made before the model call that follows the tool step
//! that took it (see [`handoffs`](crate::machine::handoffs)).

use std::sync::Arc;

use agentloop_types::{
    EventKind, HandoffEvent, HandoffHistory, LimitKind, LoopStatus, Message, ToolDefinition,
    ToolUseBlock,
};

use super::{Env, RunCore, ToolOffer};
use crate::machine::handoffs::{AgentTools, TakenHandoff, filter_history};
use crate::machine::protocol::Step;

impl RunCore {
    /// What the agent speaking offers.
    pub(crate) fn speaking<'e>(&self, env: &'e Env) -> &'e AgentTools {
        env.agent(self.agent.as_deref())
    }

    /// The name of the agent speaking, in a run that hands off.
    pub(crate) fn speaker(&self, env: &Env) -> Option<String> {
        let plan = env.handoffs.as_deref()?;
        Some(self.agent.clone().unwrap_or_else(|| plan.root().to_owned()))
    }

    /// The tools a model call offers.
    pub(crate) fn offered_tools(&self, env: &Env, offer: &ToolOffer) -> Arc<[ToolDefinition]> {
        match offer {
            ToolOffer::RunTools => self.context_tools(env, &self.speaking(env).offered),
            ToolOffer::Nothing => Arc::new([]),
            ToolOffer::Control { tool } => Arc::new([tool.clone()]),
        }
    }

    /// Notes the handoff a tool step about to run takes: its first call of
    /// a handoff tool of the agent speaking.
    pub(crate) fn note_handoff(&mut self, env: &Env, calls: &[ToolUseBlock]) {
        let agent = self.speaking(env);
        self.handoff_to = calls.iter().find_map(|call| {
            let to = agent.handoff(&call.name)?;
            Some(Box::new(TakenHandoff {
                to: to.to_owned(),
                tool_use_id: call.id.clone(),
                reason: call
                    .input
                    .value()
                    .get("reason")
                    .and_then(|r| r.as_str())
                    .filter(|r| !r.trim().is_empty())
                    .map(str::to_owned),
            }))
        });
    }

    /// Makes the handoff the last tool step took, if any: the target speaks
    /// from the next model call on. Past the run's handoff limit the run
    /// ends `limit_exceeded` instead (`Some`: that step).
    pub(super) fn hand_off(&mut self, env: &Env) -> Option<Step> {
        let taken = self.handoff_to.take()?;
        let plan = env.handoffs.clone()?;
        if self.handoffs >= plan.max_handoffs {
            return Some(self.finish(LoopStatus::LimitExceeded {
                limit: LimitKind::Handoffs,
                budget: None,
            }));
        }
        let from = self.speaker(env).unwrap_or_default();
        self.handoffs += 1;
        self.agent = plan.has(&taken.to).then(|| taken.to.clone());
        self.handoff_point = self.state.messages.last().map(|m| m.id.clone());
        self.emit(EventKind::Handoff(Box::new(HandoffEvent {
            from,
            to: taken.to,
            tool_use_id: taken.tool_use_id,
            reason: taken.reason,
            handoffs: self.handoffs,
        })));
        None
    }

    /// Whether what a model call sends is filtered for the agent speaking.
    pub(super) fn filters_history(&self, env: &Env) -> bool {
        self.handoff_point.is_some() && self.speaking(env).history != HandoffHistory::Full
    }

    /// `messages` as the agent speaking sees them.
    pub(super) fn filter_for_speaker(&self, env: &Env, messages: Vec<Message>) -> Vec<Message> {
        match &self.handoff_point {
            Some(point) => filter_history(messages, point, self.speaking(env).history),
            None => messages,
        }
    }

    /// Why a resumed run cannot go on with the agent its state names.
    pub(crate) fn unknown_speaker(&self, env: &Env) -> Option<String> {
        let agent = self.agent.as_deref()?;
        let known = env.handoffs.as_deref().is_some_and(|p| p.has(agent));
        (!known).then(|| format!("the run's agent `{agent}` is not among the agents given"))
    }
}
