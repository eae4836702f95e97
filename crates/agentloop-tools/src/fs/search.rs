//! The fs commands that search: glob and grep.

use std::collections::VecDeque;

use agentloop_types::{DirEntry, EntryKind, Metadata};
use regex::Regex;

use super::edit::{Fs, Outcome, checked, not_found, require, vfs_error};
use super::glob::glob_to_regex;
use super::input::{FsCommand, FsInput};
use crate::text::counted;

/// Longest line grep shows, in characters.
const MAX_LINE_CHARS: usize = 300;

/// Files found under a directory, and whether the walk stopped early.
struct Walk {
    files: Vec<DirEntry>,
    truncated: bool,
}

/// The part of `path` below `base` (both normalised).
fn relative<'p>(path: &'p str, base: &str) -> &'p str {
    if base == "/" {
        path.trim_start_matches('/')
    } else {
        path.strip_prefix(base)
            .unwrap_or(path)
            .trim_start_matches('/')
    }
}

impl Fs<'_> {
    async fn walk(&self, base: &str) -> Result<Walk, String> {
        let mut files = Vec::new();
        let mut queue = VecDeque::from([base.to_owned()]);
        let mut seen = 0usize;
        let mut truncated = false;
        'walk: while let Some(dir) = queue.pop_front() {
            for entry in self.vfs.list(&dir).await.map_err(vfs_error)? {
                seen += 1;
                if seen > self.limits.max_walk {
                    truncated = true;
                    break 'walk;
                }
                match entry.kind {
                    EntryKind::Directory => queue.push_back(entry.path),
                    EntryKind::File => files.push(entry),
                }
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Walk { files, truncated })
    }

    /// The normalised search path and what it is.
    async fn search_root(&self, path: Option<String>) -> Result<(String, Metadata), String> {
        let base = checked(path.as_deref().unwrap_or("/"))?;
        match self.vfs.stat(&base).await.map_err(vfs_error)? {
            Some(meta) => Ok((base, meta)),
            None => Err(not_found(&base)),
        }
    }

    pub(super) async fn glob(&self, input: FsInput) -> Outcome {
        let pattern = require(input.pattern, "pattern", FsCommand::Glob)?;
        let (base, _) = self.search_root(input.path).await?;
        let (matcher, anchored) = match pattern.strip_prefix('/') {
            Some(abs) => (glob_to_regex(abs), true),
            None => (glob_to_regex(&pattern), false),
        };
        let matcher = matcher.map_err(|e| format!("Error: Invalid glob `{pattern}`: {e}"))?;
        let walk = self.walk(&base).await?;
        let hits: Vec<&str> = walk
            .files
            .iter()
            .map(|f| f.path.as_str())
            .filter(|p| {
                let subject = if anchored {
                    relative(p, "/")
                } else {
                    relative(p, &base)
                };
                matcher.is_match(subject)
            })
            .collect();
        if hits.is_empty() {
            let none = format!("No files under {base} match `{pattern}`.");
            return Ok(with_notes(none, 0, walk.truncated));
        }
        let mut out = format!(
            "{} under {base} {} `{pattern}`:\n",
            counted(hits.len(), "file", "files"),
            if hits.len() == 1 { "matches" } else { "match" }
        );
        for hit in hits.iter().take(self.limits.max_results) {
            out.push_str(hit);
            out.push('\n');
        }
        if hits.len() > self.limits.max_results {
            out.push_str(&format!(
                "[Output cut: showed {} of {} files. Use a narrower pattern.]\n",
                self.limits.max_results,
                hits.len()
            ));
        }
        Ok(with_notes(out, 0, walk.truncated))
    }

    pub(super) async fn grep(&self, input: FsInput) -> Outcome {
        let pattern = require(input.pattern, "pattern", FsCommand::Grep)?;
        let regex = regex::RegexBuilder::new(&pattern)
            .case_insensitive(input.case_insensitive.unwrap_or(false))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("Error: Invalid regular expression `{pattern}`: {e}"))?;
        let include = match input.include.as_deref() {
            Some(g) => Some(
                glob_to_regex(g).map_err(|e| format!("Error: Invalid include glob `{g}`: {e}"))?,
            ),
            None => None,
        };
        let (base, meta) = self.search_root(input.path).await?;
        let (files, truncated) = match meta.kind {
            EntryKind::File => {
                let name = base.rsplit('/').next().unwrap_or_default().to_owned();
                (
                    vec![DirEntry {
                        name,
                        path: base.clone(),
                        kind: EntryKind::File,
                        size: meta.size,
                    }],
                    false,
                )
            }
            EntryKind::Directory => {
                let walk = self.walk(&base).await?;
                (walk.files, walk.truncated)
            }
        };
        let mut matches = Vec::new();
        let mut skipped = 0usize;
        let mut total = 0usize;
        for file in &files {
            if include
                .as_ref()
                .is_some_and(|g| !matches_include(g, &file.path, &base))
            {
                continue;
            }
            if file.size > self.limits.max_grep_file_bytes {
                skipped += 1;
                continue;
            }
            let Ok(text) = self.vfs.read_to_string(&file.path).await else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                if regex.is_match(line) {
                    total += 1;
                    if matches.len() < self.limits.max_results {
                        matches.push(format!("{}:{}: {}", file.path, n + 1, shorten(line)));
                    }
                }
            }
        }
        if total == 0 {
            let none = format!("No matches for `{pattern}` under {base}.");
            return Ok(with_notes(none, skipped, truncated));
        }
        let mut out = format!("{total} match(es) for `{pattern}` under {base}:\n");
        for m in &matches {
            out.push_str(m);
            out.push('\n');
        }
        if total > matches.len() {
            out.push_str(&format!(
                "[Output cut: showed {} of {total} matches. Narrow the pattern, path or include.]\n",
                matches.len()
            ));
        }
        Ok(with_notes(out, skipped, truncated))
    }
}

/// Appends what a search left out, so an empty answer does not read as
/// "nothing there" when files went unsearched.
fn with_notes(mut out: String, skipped: usize, truncated: bool) -> String {
    if (skipped > 0 || truncated) && !out.ends_with('\n') {
        out.push('\n');
    }
    if skipped > 0 {
        out.push_str(&format!(
            "[{} too large to search {} skipped.]\n",
            counted(skipped, "file", "files"),
            if skipped == 1 { "was" } else { "were" }
        ));
    }
    if truncated {
        out.push_str("[Search stopped early: too many files; search a smaller directory.]\n");
    }
    out
}

fn matches_include(glob: &Regex, path: &str, base: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    glob.is_match(name) || glob.is_match(relative(path, base))
}

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{cut}…")
}
