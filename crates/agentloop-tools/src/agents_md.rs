//! A project folder's `AGENTS.md` files, read into a run's instructions.
//!
//! `AGENTS.md` is the instructions file many coding agents read: one at a
//! project's root, and more in sub-folders, each for the files below it,
//! the nearest one winning where they disagree. [`read`] finds them all
//! (root first, then deeper ones by path), never following a symbolic
//! link and skipping hidden folders, `node_modules` and `target`, and
//! [`ProjectInstructions::text`] joins them, each under a heading naming
//! the folder it governs, cut at a size cap ([`MAX_BYTES`] unless told)
//! with [`ProjectInstructions::warning`] saying so.

use std::path::{Path, PathBuf};

/// The name of the file read.
pub const FILE_NAME: &str = "AGENTS.md";

/// The default cap on the instructions' size, in bytes.
pub const MAX_BYTES: usize = 32 * 1024;

/// The most folders a search looks into, so a huge tree costs little.
const MAX_FOLDERS: usize = 2_000;

/// Folders a search never enters besides hidden ones: dependencies and
/// build output, which hold other projects' files.
const SKIPPED: [&str; 2] = ["node_modules", "target"];

/// One `AGENTS.md` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionsFile {
    /// Its folder relative to the project folder (`""` for the root), with
    /// `/` separators.
    pub folder: String,
    /// Its text (invalid UTF-8 replaced).
    pub text: String,
}

impl InstructionsFile {
    /// Its path relative to the project folder.
    pub fn path(&self) -> String {
        if self.folder.is_empty() {
            FILE_NAME.to_owned()
        } else {
            format!("{}/{FILE_NAME}", self.folder)
        }
    }
}

/// The `AGENTS.md` files of a project folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectInstructions {
    /// The files, the root's first, then the deeper ones (by depth, then
    /// folder), so the nearest comes last.
    pub files: Vec<InstructionsFile>,
    /// The cap the text is cut at, in bytes.
    pub max_bytes: usize,
}

impl ProjectInstructions {
    /// Whether no file was found.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The files' size together, in bytes.
    pub fn size(&self) -> usize {
        self.files.iter().map(|f| f.text.len()).sum()
    }

    /// Whether the files together are over the cap, so the text is cut.
    pub fn over_cap(&self) -> bool {
        self.size() > self.max_bytes
    }

    /// What to tell the person when the files are over the cap.
    pub fn warning(&self) -> Option<String> {
        self.over_cap().then(|| {
            format!(
                "the project's AGENTS.md files hold {} bytes, over the cap of {} bytes: \
                 the run reads them cut at the cap",
                self.size(),
                self.max_bytes
            )
        })
    }

    /// The instructions a run reads: every file under a heading naming
    /// the folder it governs, the rule of precedence first, cut at the cap
    /// (at a character boundary, with a note); empty when there are none.
    pub fn text(&self) -> String {
        if self.files.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "# Project instructions (AGENTS.md)\n\
             Each file below applies to the files in its folder and every folder \
             under it; where two disagree, the one nearest to the file being worked \
             on wins.\n",
        );
        let mut budget = self.max_bytes;
        for file in &self.files {
            let heading = if file.folder.is_empty() {
                format!("\n## {FILE_NAME} (the project folder)\n")
            } else {
                format!("\n## {} (the folder {}/)\n", file.path(), file.folder)
            };
            text.push_str(&heading);
            if file.text.len() > budget {
                let mut cut = budget;
                while !file.text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.push_str(&file.text[..cut]);
                text.push_str(&format!(
                    "\n\n[AGENTS.md instructions cut here: they are over the cap of {} bytes]\n",
                    self.max_bytes
                ));
                return text;
            }
            budget -= file.text.len();
            text.push_str(&file.text);
            if !file.text.ends_with('\n') {
                text.push('\n');
            }
        }
        text
    }

    /// `system` with the instructions after it (the instructions alone
    /// when there is no system prompt); `system` as it is when there are
    /// none.
    pub fn after_system(&self, system: Option<String>) -> Option<String> {
        if self.files.is_empty() {
            return system;
        }
        Some(match system {
            Some(system) => format!("{system}\n\n{}", self.text()),
            None => self.text(),
        })
    }
}

/// Finds the `AGENTS.md` files of the project folder `root`, their text to
/// be cut at `max_bytes`. A folder that cannot be read is skipped; a root
/// that is not a folder has none.
pub fn read(root: &Path, max_bytes: usize) -> ProjectInstructions {
    let mut files = Vec::new();
    let mut queue: std::collections::VecDeque<(PathBuf, String)> =
        [(root.to_owned(), String::new())].into();
    let mut visited = 0;
    while let Some((dir, folder)) = queue.pop_front() {
        visited += 1;
        if visited > MAX_FOLDERS {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children = Vec::new();
        for entry in entries.flatten() {
            // The entry's own type: a symbolic link is neither a file nor
            // a folder here, so nothing outside the project is read.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_file() && name == FILE_NAME {
                if let Ok(bytes) = std::fs::read(entry.path()) {
                    files.push(InstructionsFile {
                        folder: folder.clone(),
                        text: String::from_utf8_lossy(&bytes).into_owned(),
                    });
                }
            } else if kind.is_dir() && !name.starts_with('.') && !SKIPPED.contains(&name.as_str()) {
                let child = if folder.is_empty() {
                    name
                } else {
                    format!("{folder}/{name}")
                };
                children.push((entry.path(), child));
            }
        }
        children.sort_by(|a, b| a.1.cmp(&b.1));
        queue.extend(children);
    }
    files.sort_by(|a, b| {
        let depth = |f: &InstructionsFile| f.folder.split('/').filter(|s| !s.is_empty()).count();
        (depth(a), &a.folder).cmp(&(depth(b), &b.folder))
    });
    ProjectInstructions { files, max_bytes }
}
