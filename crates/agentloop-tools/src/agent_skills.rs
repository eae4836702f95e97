//! Agent Skills: folders holding a `SKILL.md` (YAML front matter with
//! `name` and `description`, then the instructions in Markdown) beside
//! scripts and other resources, the format many coding agents read.
//!
//! [`find`] reads the skill folders of a folder (each sub-folder with a
//! `SKILL.md`, or the folder itself when it holds one) and says for each
//! folder it refuses why. A skill's name is 1 to 64 lowercase letters,
//! digits and single inner hyphens, and is its folder's name; its
//! description is 1 to 1,024 characters. Front matter fields of other
//! agents (`license`, `metadata`, `compatibility`, ...) are read past;
//! `allowed-tools` (separated by spaces or commas, or a list) narrows the tools a skill
//! gets. Symbolic links are never followed.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// Longest name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Largest `SKILL.md` read, in bytes.
const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// One skill found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFolder {
    /// Its name (its folder's).
    pub name: String,
    /// When to use it: all a model sees of it until it is activated.
    pub description: String,
    /// The instructions: `SKILL.md` past its front matter.
    pub instructions: String,
    /// Its folder.
    pub dir: PathBuf,
    /// The tools it asks for (`allowed-tools`); `None` when it names none.
    pub allowed_tools: Option<Vec<String>>,
}

/// A folder that is not a usable skill, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The folder.
    pub dir: PathBuf,
    /// Why it is refused, for people.
    pub reason: String,
}

/// What [`find`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The skills, by name.
    pub skills: Vec<SkillFolder>,
    /// The folders refused, by path.
    pub refused: Vec<Refusal>,
}

#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    #[serde(rename = "allowed-tools")]
    allowed_tools: Option<AllowedTools>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    Spaced(String),
    Listed(Vec<String>),
}

/// The skills of `dir`: the folder itself when it holds a `SKILL.md`,
/// else each of its sub-folders (a sub-folder without one is refused). A
/// second skill of a name already found is refused.
pub fn find(dir: &Path) -> Found {
    let mut found = Found::default();
    if dir.join(SKILL_FILE).is_file() {
        read_into(dir, &mut found);
        return found;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        found.refused.push(Refusal {
            dir: dir.to_owned(),
            reason: "the folder cannot be read".to_owned(),
        });
        return found;
    };
    let mut folders: Vec<(PathBuf, bool)> = entries
        .flatten()
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|entry| {
            let kind = entry.file_type().ok()?;
            (kind.is_dir() || kind.is_symlink()).then(|| (entry.path(), kind.is_symlink()))
        })
        .collect();
    folders.sort();
    for (folder, linked) in folders {
        if linked {
            found.refused.push(Refusal {
                dir: folder,
                reason: "a symbolic link; skills are read only from real folders".to_owned(),
            });
        } else {
            read_into(&folder, &mut found);
        }
    }
    found.skills.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

fn read_into(dir: &Path, found: &mut Found) {
    match read_one(dir) {
        Ok(skill) if found.skills.iter().any(|s| s.name == skill.name) => {
            found.refused.push(Refusal {
                dir: dir.to_owned(),
                reason: format!("another folder already holds a skill named {}", skill.name),
            });
        }
        Ok(skill) => found.skills.push(skill),
        Err(reason) => found.refused.push(Refusal {
            dir: dir.to_owned(),
            reason,
        }),
    }
}

fn read_one(dir: &Path) -> Result<SkillFolder, String> {
    let file = dir.join(SKILL_FILE);
    let meta = std::fs::symlink_metadata(&file).map_err(|_| format!("no {SKILL_FILE}"))?;
    if !meta.is_file() {
        return Err(format!("{SKILL_FILE} is not a regular file"));
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(format!(
            "{SKILL_FILE} is {} bytes, over the {MAX_SKILL_BYTES} bytes read",
            meta.len()
        ));
    }
    let bytes = std::fs::read(&file).map_err(|e| format!("{SKILL_FILE} cannot be read: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{SKILL_FILE} is not UTF-8 text"))?;
    let folder_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse(&folder_name, &text).map(|(front, instructions)| SkillFolder {
        name: front.0,
        description: front.1,
        instructions,
        dir: dir.to_owned(),
        allowed_tools: front.2,
    })
}

type Front = (String, String, Option<Vec<String>>);

/// Reads a `SKILL.md` of the folder `folder_name`: its name, description
/// and allowed tools, and the instructions after the front matter.
fn parse(folder_name: &str, text: &str) -> Result<(Front, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| format!("{SKILL_FILE} does not start with front matter (a --- line)"))?;
    let (yaml, body) = split_front_matter(rest)
        .ok_or_else(|| format!("{SKILL_FILE}'s front matter has no closing --- line"))?;
    let front: FrontMatter = serde_norway::from_str(yaml)
        .map_err(|e| format!("{SKILL_FILE}'s front matter is not a YAML mapping: {e}"))?;
    let name = front
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "the front matter has no name".to_owned())?;
    check_name(&name)?;
    if name != folder_name {
        return Err(format!(
            "the name {name} is not the folder's name ({folder_name})"
        ));
    }
    let description = front
        .description
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
        .ok_or_else(|| "the front matter has no description".to_owned())?;
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "the description is {chars} characters, over {MAX_DESCRIPTION_CHARS}"
        ));
    }
    let allowed = front.allowed_tools.map(|tools| match tools {
        // The format separates them with spaces; some skills use commas.
        AllowedTools::Spaced(text) => text
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|tool| !tool.is_empty())
            .map(str::to_owned)
            .collect(),
        AllowedTools::Listed(list) => list,
    });
    Ok(((name, description, allowed), body.trim().to_owned()))
}

/// The front matter and what follows its closing `---` line.
fn split_front_matter(rest: &str) -> Option<(&str, &str)> {
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

fn check_name(name: &str) -> Result<(), String> {
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "the name is {chars} characters, over {MAX_NAME_CHARS}"
        ));
    }
    let allowed = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !allowed || name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "the name {name:?} is not lowercase letters, digits and single hyphens inside"
        ));
    }
    Ok(())
}
