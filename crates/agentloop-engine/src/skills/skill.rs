//! A [`Skill`] and the list the model reads of skills.

use std::sync::Arc;

use agentloop_types::Tool;

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
