//! The Agent Skills of a project folder as skills a run can call: the
//! skill folders of its `.agents/skills/` and `skills/` (see
//! [`crate::agent_skills`]), each made a seed-002 skill whose call runs
//! its instructions as a child cycle with the run's tools (those its
//! `allowed-tools` names, when it names some). A skill's scripts run only
//! through the run's sandboxed `shell` tool: nothing here runs a program.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_engine::skills::Skill;
use agentloop_types::Tool;

use crate::agent_skills::{self, Refusal, SkillFolder};

/// The folders of a project's own skills that exist: `.agents/skills/`,
/// then `skills/`.
pub fn folders(root: &Path) -> Vec<PathBuf> {
    [root.join(".agents/skills"), root.join("skills")]
        .into_iter()
        .filter(|dir| dir.is_dir())
        .collect()
}

/// What a project folder offers: its skills, and the folders refused
/// (a folder with no `SKILL.md` at all is nobody's skill and is not
/// named). A second skill of a name already found is refused.
#[derive(Default)]
pub struct ProjectSkills {
    /// The skills, in the order found.
    pub skills: Vec<Arc<Skill>>,
    /// The folders refused, with why.
    pub refused: Vec<Refusal>,
}

/// The skills of the project folder `root`, each given those of `tools`
/// it may use.
pub fn find(root: &Path, tools: &[Arc<dyn Tool>]) -> ProjectSkills {
    let mut found = ProjectSkills::default();
    let no_skill = format!("no {}", agent_skills::SKILL_FILE);
    for dir in folders(root) {
        let read = agent_skills::find(&dir);
        found
            .refused
            .extend(read.refused.into_iter().filter(|r| r.reason != no_skill));
        for folder in &read.skills {
            if found.skills.iter().any(|s| s.name == folder.name) {
                found.refused.push(Refusal {
                    dir: folder.dir.clone(),
                    reason: format!("a skill named {} was found first", folder.name),
                });
                continue;
            }
            found.skills.push(Arc::new(skill(folder, tools)));
        }
    }
    found
}

/// An Agent Skill as a seed-002 skill: its instructions with where its
/// files are, and the tools of `tools` it may use.
pub fn skill(folder: &SkillFolder, tools: &[Arc<dyn Tool>]) -> Skill {
    let prompt = format!(
        "{}\n\n---\nThis skill's folder is {}. Read its other files there when the \
         instructions name them; run its scripts only with the shell tool.",
        folder.instructions,
        folder.dir.display()
    );
    let own_tools: Vec<Arc<dyn Tool>> = tools
        .iter()
        .filter(|tool| {
            folder
                .allowed_tools
                .as_ref()
                .is_none_or(|allowed| allowed.iter().any(|name| name == tool.name()))
        })
        .cloned()
        .collect();
    Skill::new(&folder.name, prompt)
        .with_description(&folder.description)
        .with_tools(own_tools)
}
