//! A skill offered to the model as a tool: each call validates, builds the
//! child history and drives a child run, forwarding its events.

use std::sync::Arc;

use agentloop_types::{
    AttachmentLoader, ChildSuspension, LoopOptions, LoopResult, LoopStatus, Message, ModelProvider,
    Tool, ToolContext, ToolOutput, ToolResult, ToolStream, ToolStreamEvent,
};
use futures::StreamExt;
use serde_json::Value;

use super::args::{SkillCallArgs, SkillError};
use super::sanitize::sanitize_prompt;
use super::skill::{Skill, skill_list};
use crate::{Clock, RunDeps, RunStream, decide, run};

/// What every skill call of one root run shares.
pub(crate) struct SkillEnv {
    pub(crate) provider: Arc<dyn ModelProvider>,
    pub(crate) attachments: Option<Arc<dyn AttachmentLoader>>,
    /// The root run's clock, handed down to child runs.
    pub(crate) clock: Arc<dyn Clock>,
    /// Options of child runs (no system prompt, no tool filter).
    pub(crate) options: LoopOptions,
    /// The root's agent prompt, the first system message of every child.
    pub(crate) agent_prompt: Option<String>,
}

/// A [`Skill`] as a tool; [`Tool::is_skill`] is true.
pub struct SkillTool {
    skill: Arc<Skill>,
    env: Arc<SkillEnv>,
}

impl SkillTool {
    pub(crate) fn new(skill: Arc<Skill>, env: Arc<SkillEnv>) -> Self {
        Self { skill, env }
    }

    /// The skill this tool runs.
    pub fn skill(&self) -> &Arc<Skill> {
        &self.skill
    }

    /// The child history of a call, or why there is none.
    pub fn child_history(
        &self,
        input: &Value,
        id_prefix: &str,
    ) -> Result<Vec<Message>, SkillError> {
        let prompt = sanitize_prompt(&self.skill.prompt);
        if prompt.is_empty() {
            return Err(SkillError::EmptyPrompt {
                skill: self.skill.name.clone(),
            });
        }
        let args = SkillCallArgs::parse(&self.skill.name, input)?;
        let mut skill_message = prompt;
        if let Some(list) = skill_list(&self.skill.allowed_skills) {
            skill_message.push_str("\n\nSkills you can call:\n");
            skill_message.push_str(&list);
        }
        let mut history = Vec::new();
        if let Some(agent) = &self.env.agent_prompt {
            history.push(Message::system_text(
                format!("{id_prefix}-agent-prompt"),
                agent.clone(),
            ));
        }
        history.push(Message::system_text(
            format!("{id_prefix}-skill-prompt"),
            skill_message,
        ));
        history.extend(args.messages(id_prefix));
        Ok(history)
    }

    fn child_deps(&self, context: &ToolContext, run_id: String) -> RunDeps {
        let sub_skills = self
            .skill
            .allowed_skills
            .iter()
            .map(|s| Arc::new(SkillTool::new(s.clone(), self.env.clone())) as Arc<dyn Tool>);
        RunDeps {
            provider: self.env.provider.clone(),
            tools: self.skill.tools.iter().cloned().chain(sub_skills).collect(),
            attachments: self.env.attachments.clone(),
            cancel: context.cancel.clone(),
            run_id: Some(run_id),
            retriever: None,
            clock: self.env.clock.clone(),
            // A skill's run is part of its call: the parent's hooks saw
            // the call and see its result.
            hooks: Default::default(),
            guardrails: Vec::new(),
            handoffs: None,
            // Messages to the run go to the parent, not to a skill's run.
            inbox: None,
            interrupt: None,
            // A skill's model calls spend against the run's budgets.
            budget: context.budget.clone(),
        }
    }
}

impl Tool for SkillTool {
    fn name(&self) -> &str {
        &self.skill.name
    }

    fn description(&self) -> &str {
        &self.skill.description
    }

    fn input_schema(&self) -> Value {
        SkillCallArgs::schema()
    }

    fn is_skill(&self) -> bool {
        true
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        let run_id = format!("{}.{}", context.run_id, context.tool_use_id);
        let options = self.env.options.clone();
        // A child run that waited for a person goes on where it stopped.
        if let Some(resume) = context.resume.clone() {
            let deps = self.child_deps(&context, run_id);
            return match decide(options, resume.state, resume.decisions, deps) {
                Ok(child) => forward(child, self.skill.name.clone()),
                Err(error) => immediate(ToolResult::error(format!(
                    "Skill {} cannot resume: {error}",
                    self.skill.name
                ))),
            };
        }
        let history = match self.child_history(&input, &run_id) {
            Ok(history) => history,
            Err(error) => return immediate(ToolResult::error(error.to_string())),
        };
        let deps = self.child_deps(&context, run_id);
        forward(run(options, history, deps), self.skill.name.clone())
    }
}

fn immediate(result: ToolResult) -> ToolStream {
    Box::pin(futures::stream::once(
        async move { ToolOutput::Done(result) },
    ))
}

/// Forwards the child's events and ends with a result made of its outcome.
fn forward(child: RunStream, skill: String) -> ToolStream {
    Box::pin(futures::stream::unfold(
        Some((child, None::<LoopResult>)),
        move |state| {
            let skill = skill.clone();
            async move {
                let (mut child, mut last) = state?;
                match child.next().await {
                    Some(event) => {
                        if let Some(result) = event.root_result() {
                            last = Some(result.clone());
                        }
                        let item = ToolOutput::Event(ToolStreamEvent::ChildEvent(Box::new(event)));
                        Some((item, Some((child, last))))
                    }
                    None => Some((ToolOutput::Done(outcome(&skill, last)), None)),
                }
            }
        },
    ))
}

/// The parent's view of a child run's result.
fn outcome(skill: &str, result: Option<LoopResult>) -> ToolResult {
    let Some(result) = result else {
        return ToolResult::error(format!("Skill {skill} ended without a result."));
    };
    match &result.status {
        LoopStatus::Complete {
            return_value: Some(value),
            ..
        } => ToolResult::ok(match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }),
        LoopStatus::Complete {
            return_value: None, ..
        } => ToolResult::ok(result.final_text().unwrap_or_default()),
        LoopStatus::Suspended { pending, state } => match state {
            Some(state) => ToolResult::child_suspended(
                format!("Skill {skill} waits for the user."),
                ChildSuspension {
                    pending: pending.clone(),
                    state: (**state).clone(),
                },
            ),
            None => ToolResult::error(format!("Skill {skill} suspended without its state.")),
        },
        LoopStatus::Error { error } => ToolResult::error(format!("Skill {skill} failed: {error}")),
        LoopStatus::MaxIterations => {
            ToolResult::error(format!("Skill {skill} reached its turn limit."))
        }
        LoopStatus::Cancelled => ToolResult::error(format!("Skill {skill} was cancelled.")),
        LoopStatus::LimitExceeded { limit, budget } => {
            let which = budget
                .as_deref()
                .map_or_else(String::new, |budget| format!(" ({budget})"));
            ToolResult::error(format!(
                "Skill {skill} reached its {} limit{which}.",
                limit.name()
            ))
        }
    }
}
