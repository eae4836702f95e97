//! Loading skills for `agentloop run --skills FILE`.
//!
//! The file is a JSON array of skills:
//! `[{"name": "...", "description": "...", "prompt": "...", "allowed_skills": ["other"], "tools": ["fs"]}]`.
//! `allowed_skills` and `tools` name other skills of the file and tools given
//! with `--tools`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use agentloop_engine::skills::Skill;
use agentloop_types::Tool;
use serde::Deserialize;

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

/// Reads the skills of `path`, resolving sub-skill and tool names.
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
