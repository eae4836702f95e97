//! Loading skills for `agentloop run --skills FILE|DIR`, and `agentloop
//! skills list`.
//!
//! A folder holds Agent Skills (`SKILL.md` folders, see
//! [`agentloop_tools::agent_skills`]); so do a run folder's
//! `.agents/skills/` and `skills/`, which every run reads. Only a skill's
//! name and description are in the run's prompt until the model calls
//! it; the call runs its instructions as a child cycle (seed 002) with the
//! run's tools (those its `allowed-tools` names, when it names some), so
//! its scripts run only through the sandboxed `shell` tool.
//!
//! A file is a JSON array of skills:
//! `[{"name": "...", "description": "...", "prompt": "...", "allowed_skills": ["other"], "tools": ["fs"]}]`.
//! `allowed_skills` and `tools` name other skills of the file and tools given
//! with `--tools`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_engine::skills::Skill;
use agentloop_tools::agent_skills;
use agentloop_tools::project_skills;
use agentloop_types::Tool;
use clap::{Args, Subcommand};
use serde::Deserialize;
use serde_json::json;

use crate::out::{Failure, Outcome, Stdout, sanitize};

#[derive(Subcommand)]
pub enum SkillsCommand {
    /// List the Agent Skills a run here reads (`--skills DIR`, the
    /// folder's `.agents/skills/` and `skills/`) and the folders refused,
    /// with why.
    List(ListArgs),
}

#[derive(Args)]
pub struct ListArgs {
    /// A folder of skills besides the run folder's own.
    #[arg(long)]
    pub skills: Option<PathBuf>,
    /// The run folder (default: the current folder).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `agentloop skills list`.
pub fn list(command: SkillsCommand) -> Outcome {
    let SkillsCommand::List(args) = command;
    let mut skills = Vec::new();
    let mut refused = Vec::new();
    for dir in folders(args.skills.as_deref(), args.root.as_deref()).map_err(Failure::Usage)? {
        let found = agent_skills::find(&dir);
        skills.extend(found.skills);
        refused.extend(found.refused);
    }
    let mut out = Stdout::new();
    if args.json {
        let skills: Vec<_> = skills
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description, "dir": s.dir, "allowed_tools": s.allowed_tools}))
            .collect();
        let refused: Vec<_> = refused
            .iter()
            .map(|r| json!({"dir": r.dir, "reason": r.reason}))
            .collect();
        out.line(json!({"skills": skills, "refused": refused}))?;
        return Ok(ExitCode::SUCCESS);
    }
    for skill in &skills {
        out.line(format!(
            "{}  {}  ({})",
            sanitize(&skill.name),
            sanitize(&skill.description),
            sanitize(&skill.dir.display().to_string())
        ))?;
    }
    for refusal in &refused {
        out.line(format!(
            "refused  {}: {}",
            sanitize(&refusal.dir.display().to_string()),
            sanitize(&refusal.reason)
        ))?;
    }
    if skills.is_empty() && refused.is_empty() {
        out.line("no skills: give --skills DIR, or add .agents/skills/ or skills/ to the folder")?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillSpec {
    name: String,
    #[serde(default)]
    description: String,
    prompt: String,
    #[serde(default)]
    allowed_skills: Vec<String>,
    #[serde(default)]
    tools: Vec<String>,
}

/// The skills a run in `root` (default: the current folder) offers:
/// those of `--skills` (a file or a folder) and of the folder's
/// `.agents/skills/` and `skills/`. A refused skill folder is named on
/// stderr with its reason; two skills of one name are refused.
pub fn for_run(
    flag: Option<&Path>,
    root: Option<&Path>,
    tools: &[Arc<dyn Tool>],
) -> Result<Vec<Arc<Skill>>, String> {
    let mut skills = match flag {
        Some(path) if !path.is_dir() => load(path, tools)?,
        _ => Vec::new(),
    };
    for dir in folders(flag, root)? {
        let found = agent_skills::find(&dir);
        // A folder with no SKILL.md at all is no skill anybody wrote: only
        // the skills that fail their checks are named.
        let failed = found
            .refused
            .iter()
            .filter(|r| r.reason != format!("no {}", agent_skills::SKILL_FILE));
        for refused in failed {
            crate::out::note(format!(
                "skill folder {} refused: {}",
                crate::out::sanitize(&refused.dir.display().to_string()),
                crate::out::sanitize(&refused.reason)
            ));
        }
        for folder in &found.skills {
            if skills.iter().any(|s| s.name == folder.name) {
                return Err(format!(
                    "two skills are named {} (the second in {})",
                    folder.name,
                    folder.dir.display()
                ));
            }
            skills.push(Arc::new(project_skills::skill(folder, tools)));
        }
    }
    Ok(skills)
}

/// The skill folders a run in `root` reads: `--skills` when it is a
/// folder, then the run folder's `.agents/skills/` and `skills/`.
fn folders(flag: Option<&Path>, root: Option<&Path>) -> Result<Vec<PathBuf>, String> {
    let root = match root {
        Some(root) => root.to_owned(),
        None => std::env::current_dir().map_err(|e| format!("no current folder: {e}"))?,
    };
    let mut dirs: Vec<PathBuf> = flag
        .filter(|p| p.is_dir())
        .map(Path::to_owned)
        .into_iter()
        .collect();
    for project in project_skills::folders(&root) {
        if !dirs.contains(&project) {
            dirs.push(project);
        }
    }
    Ok(dirs)
}

/// Reads the skills of the JSON file `path`, resolving sub-skill and tool
/// names.
pub fn load(path: &Path, tools: &[Arc<dyn Tool>]) -> Result<Vec<Arc<Skill>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the skills file {}: {e}", path.display()))?;
    let specs: Vec<SkillSpec> = serde_json::from_str(&text).map_err(|e| {
        format!(
            "the skills file {} is not a JSON array of skills: {e}",
            path.display()
        )
    })?;
    let by_name: HashMap<&str, &SkillSpec> = specs.iter().map(|s| (s.name.as_str(), s)).collect();
    if by_name.len() != specs.len() {
        return Err("the skills file names a skill twice".to_owned());
    }
    let mut built: HashMap<String, Arc<Skill>> = HashMap::new();
    specs
        .iter()
        .map(|spec| build(spec, &by_name, tools, &mut built, &mut Vec::new()))
        .collect()
}

fn build(
    spec: &SkillSpec,
    by_name: &HashMap<&str, &SkillSpec>,
    tools: &[Arc<dyn Tool>],
    built: &mut HashMap<String, Arc<Skill>>,
    stack: &mut Vec<String>,
) -> Result<Arc<Skill>, String> {
    if let Some(skill) = built.get(&spec.name) {
        return Ok(skill.clone());
    }
    if stack.contains(&spec.name) {
        stack.push(spec.name.clone());
        return Err(format!(
            "skills call each other in a cycle: {}",
            stack.join(" -> ")
        ));
    }
    stack.push(spec.name.clone());
    let mut allowed = Vec::with_capacity(spec.allowed_skills.len());
    for name in &spec.allowed_skills {
        let sub = by_name
            .get(name.as_str())
            .ok_or_else(|| format!("skill {} allows unknown skill {name}", spec.name))?;
        allowed.push(build(sub, by_name, tools, built, stack)?);
    }
    stack.pop();
    let mut own_tools = Vec::with_capacity(spec.tools.len());
    for name in &spec.tools {
        let tool = tools
            .iter()
            .find(|t| t.name() == name || (name == "js" && t.name() == "javascript"))
            .ok_or_else(|| {
                format!(
                    "skill {} uses tool {name}, which is not among --tools",
                    spec.name
                )
            })?;
        own_tools.push(tool.clone());
    }
    let skill = Arc::new(
        Skill::new(&spec.name, &spec.prompt)
            .with_description(&spec.description)
            .with_skills(allowed)
            .with_tools(own_tools),
    );
    built.insert(spec.name.clone(), skill.clone());
    Ok(skill)
}
