//! Skills (seed 002): named prompts the model calls like tools, each
//! running a child cycle of the loop with its own scoped tools and
//! sub-skills.
//!
//! - The root run gets a skill list as its second system message (after
//!   the agent prompt): names and descriptions only, never skill prompts.
//!   No skills, no list.
//! - A skill call takes [`SkillCallArgs`] (`{task, history?}`). Invalid
//!   arguments, or a prompt that is empty once sanitised to markdown, give
//!   an error result and no child cycle.
//! - The child history is built from scratch: system(agent prompt),
//!   system(skill prompt + allowed sub-skills), the optional history, then
//!   user(task). The parent's conversation is never passed down.
//! - The child offers only the skill's tools and its allowed sub-skills, and
//!   runs through the same [`run`] driver; its events are forwarded, so a
//!   skill call of the root has depth 1 and each nesting adds one.

mod args;
mod sanitize;
mod tool;

use std::sync::Arc;

use agentloop_types::{LoopOptions, Message, Role, Tool};

pub use args::{HistoryRole, SkillCallArgs, SkillError, SkillHistoryMessage};
pub use sanitize::sanitize_prompt;
pub use tool::SkillTool;

use crate::{RunDeps, RunStream, run};

/// Id of the root skill list system message.
pub const SKILL_LIST_MESSAGE_ID: &str = "skills";
/// Id given to the agent prompt when a skill run moves it into the history.
pub const AGENT_PROMPT_MESSAGE_ID: &str = "agent-prompt";

/// A skill: a prompt the model runs as a child cycle by calling it by name.
#[derive(Clone)]
pub struct Skill {
    /// Name the model calls it by.
    pub name: String,
    /// What it is for, shown in skill lists. May be empty.
    pub description: String,
    /// Instructions for the child cycle; markdown (HTML is stripped).
    pub prompt: String,
    /// Skills the child cycle may call in turn.
    pub allowed_skills: Vec<Arc<Skill>>,
    /// Tools the child cycle may call; no other tool is offered to it.
    pub tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for Skill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skill")
            .field("name", &self.name)
            .field("description", &self.description)
            .field(
                "allowed_skills",
                &self
                    .allowed_skills
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Skill {
    /// A skill with no description, sub-skills or tools.
    pub fn new(name: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            prompt: prompt.into(),
            allowed_skills: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Adds skills the child cycle may call.
    pub fn with_skills(mut self, skills: impl IntoIterator<Item = Arc<Skill>>) -> Self {
        self.allowed_skills.extend(skills);
        self
    }

    /// Adds tools the child cycle may call.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }
}

/// The list of `skills` as markdown bullets (`- name: description`), or
/// `None` when there are none.
pub fn skill_list(skills: &[Arc<Skill>]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let lines: Vec<String> = skills
        .iter()
        .map(|s| {
            if s.description.trim().is_empty() {
                format!("- {}", s.name)
            } else {
                format!("- {}: {}", s.name, s.description.trim())
            }
        })
        .collect();
    Some(lines.join("\n"))
}

/// The root skill list message text.
fn root_list_text(skills: &[Arc<Skill>]) -> Option<String> {
    skill_list(skills).map(|list| {
        format!(
            "You can call these skills like tools, with {{\"task\": \"...\"}} and optionally \
             {{\"history\": [{{\"role\": \"user\", \"content\": \"...\"}}]}}:\n{list}"
        )
    })
}

/// What a run with skills starts from: the options, history and deps to
/// hand to [`run`] (or to a strategy).
pub struct SkillRun {
    /// Options with the agent prompt moved into the history.
    pub options: LoopOptions,
    /// The history: agent prompt, skill list, then the caller's context.
    pub context: Vec<Message>,
    /// Deps with one tool per skill added.
    pub deps: RunDeps,
}

/// Prepares a root run with `skills`.
///
/// The agent prompt is `options.system_prompt` when set (it moves into the
/// history as the first system message so the list can follow it), else the
/// first message of `context` when that is a system message. The skill list
/// goes right after it; with no agent prompt, first.
pub fn prepare(
    mut options: LoopOptions,
    mut context: Vec<Message>,
    mut deps: RunDeps,
    skills: &[Arc<Skill>],
) -> SkillRun {
    let agent_prompt = match options.system_prompt.take() {
        Some(prompt) => {
            context.insert(
                0,
                Message::system_text(AGENT_PROMPT_MESSAGE_ID, prompt.clone()),
            );
            Some(prompt)
        }
        None => context
            .first()
            .filter(|m| m.role == Role::System)
            .map(Message::text),
    };
    if let Some(list) = root_list_text(skills) {
        let at = usize::from(agent_prompt.is_some());
        context.insert(at, Message::system_text(SKILL_LIST_MESSAGE_ID, list));
    }
    let env = Arc::new(tool::SkillEnv {
        provider: deps.provider.clone(),
        attachments: deps.attachments.clone(),
        // A skill's child run answers in prose; only the root run is held
        // to the output schema.
        options: LoopOptions {
            enabled_tools: Vec::new(),
            output_schema: None,
            ..options.clone()
        },
        agent_prompt,
    });
    if !options.enabled_tools.is_empty() {
        options
            .enabled_tools
            .extend(skills.iter().map(|s| s.name.clone()));
    }
    deps.tools.extend(
        skills
            .iter()
            .map(|s| Arc::new(SkillTool::new(s.clone(), env.clone())) as Arc<dyn Tool>),
    );
    SkillRun {
        options,
        context,
        deps,
    }
}

/// Runs the loop with `skills` offered to the model (see [`prepare`]).
pub fn run_with_skills(
    options: LoopOptions,
    context: Vec<Message>,
    deps: RunDeps,
    skills: &[Arc<Skill>],
) -> RunStream {
    let SkillRun {
        options,
        context,
        deps,
    } = prepare(options, context, deps, skills);
    run(options, context, deps)
}
