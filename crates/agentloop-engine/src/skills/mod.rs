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
mod skill;
mod tool;

use std::sync::Arc;

use agentloop_types::{LoopOptions, Message, ModelProvider, Role, Tool};

pub use args::{HistoryRole, SkillCallArgs, SkillError, SkillHistoryMessage};
pub use sanitize::sanitize_prompt;
pub use skill::{Skill, skill_list};
pub use tool::SkillTool;

use crate::{RunDeps, RunStream, run};

/// Id of the root skill list system message.
pub const SKILL_LIST_MESSAGE_ID: &str = "skills";
/// Id given to the agent prompt when a skill run moves it into the history.
pub const AGENT_PROMPT_MESSAGE_ID: &str = "agent-prompt";

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
/// The agent prompt is `options.request.system_prompt` when set (it moves into the
/// history as the first system message so the list can follow it), else the
/// first message of `context` when that is a system message. The skill list
/// goes right after it; with no agent prompt, first.
pub fn prepare(
    mut options: LoopOptions,
    mut context: Vec<Message>,
    mut deps: RunDeps,
    skills: &[Arc<Skill>],
) -> SkillRun {
    let agent_prompt = match options.request.system_prompt.take() {
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
        clock: deps.clock.clone(),
        // A child run: every tool it is given, and no output schema.
        options: options.for_child(),
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

/// The tools offering `skills` to a run a host keeps itself (a stored
/// chat's run, resumed from its stored history and options): one tool per
/// skill, its name and description all the model sees of it until it
/// calls it, and no skill list added to the history. Each call runs a
/// child cycle with `provider`, the run's `options` made a child's
/// ([`LoopOptions::for_child`], without the system prompt) and the run's
/// system prompt as its agent prompt.
pub fn offer(
    skills: &[Arc<Skill>],
    provider: Arc<dyn ModelProvider>,
    options: &LoopOptions,
) -> Vec<Arc<dyn Tool>> {
    let mut child = options.for_child();
    let agent_prompt = child.request.system_prompt.take();
    let env = Arc::new(tool::SkillEnv {
        provider,
        attachments: None,
        clock: Arc::new(crate::SystemClock),
        options: child,
        agent_prompt,
    });
    skills
        .iter()
        .map(|s| Arc::new(SkillTool::new(s.clone(), env.clone())) as Arc<dyn Tool>)
        .collect()
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
