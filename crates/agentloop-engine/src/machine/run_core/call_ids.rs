//! Call ids a turn arrives with: a provider may reuse one (twice in a turn,
//! or an id an earlier turn of the history already has). Each call must
//! keep an id of its own, or its result could not be told apart and the
//! history would fail validation on every later request. So before a turn
//! is committed, a reused id is renamed: `w1` becomes `w1_2` (or `w1_3`,
//! … the first one used nowhere in the history or the turn); the first
//! call of the turn with an id not used before keeps it. The renamed call, its result and every later
//! request then agree, and the provider gets back ids it accepts: suffixes
//! use only `_` and digits (Anthropic's id pattern) and keep the id within
//! 40 characters (OpenAI Chat's limit), truncating the original when it
//! must; ids are compared byte for byte.

use std::collections::HashSet;

use agentloop_types::ContentBlock;

use super::RunCore;

/// Longest id a renamed call gets: OpenAI Chat rejects longer ones.
const MAX_RENAMED_LEN: usize = 40;

/// Up to this many calls in a turn, reused ids are looked for pairwise.
const FEW_CALLS: usize = 16;

fn call_id(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::ToolUse(call) => Some(&call.id),
        _ => None,
    }
}

/// The stem a renamed call keeps when the reused id was empty.
const EMPTY_ID_STEM: &str = "call";

impl RunCore {
    /// `content` with every tool call whose id the history or an earlier
    /// call of the same turn already uses renamed to a free id.
    /// Deterministic: the same history and turn give the same ids.
    pub(crate) fn unique_call_ids(&self, mut content: Vec<ContentBlock>) -> Vec<ContentBlock> {
        // The history's ids come from the pairing check's record of the
        // prefix it passed, so a turn costs its own calls, not the history.
        let in_history = |id: &str| self.history_check.0.has_call_id(&self.state.messages, id);
        // The usual turn reuses no id: that is found without building the
        // sets below, comparing its calls pairwise while they are few.
        let ids = || content.iter().filter_map(call_id);
        let may_reuse = ids()
            .enumerate()
            .any(|(i, id)| i >= FEW_CALLS || in_history(id) || ids().take(i).any(|e| e == id));
        if !may_reuse {
            return content;
        }
        // A new name avoids every id the turn arrived with, so a call whose
        // id was unique keeps it.
        let arrived: HashSet<String> = content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolUse(call) => Some(call.id.clone()),
                _ => None,
            })
            .collect();
        let mut given: HashSet<String> = HashSet::new();
        for block in &mut content {
            let ContentBlock::ToolUse(call) = block else {
                continue;
            };
            if in_history(&call.id) || given.contains(&call.id) {
                call.id = free_id(&call.id, |id| {
                    in_history(id) || arrived.contains(id) || given.contains(id)
                });
            }
            given.insert(call.id.clone());
        }
        content
    }
}

/// The first of `{id}_2`, `{id}_3`, … not `taken`, its stem cut so the
/// whole stays within [`MAX_RENAMED_LEN`].
fn free_id(id: &str, taken: impl Fn(&str) -> bool) -> String {
    let stem = if id.is_empty() { EMPTY_ID_STEM } else { id };
    // Finitely many ids are taken, so some suffix is free.
    (2u64..)
        .map(|n| {
            let suffix = format!("_{n}");
            let room = MAX_RENAMED_LEN.saturating_sub(suffix.len());
            format!("{}{suffix}", prefix_within(stem, room))
        })
        .find(|candidate| !taken(candidate))
        .unwrap_or_default()
}

/// The longest prefix of `text` of at most `bytes` bytes that ends on a
/// character boundary.
fn prefix_within(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken<'a>(ids: &'a [&'a str]) -> impl Fn(&str) -> bool + 'a {
        move |id| ids.contains(&id)
    }

    #[test]
    fn the_first_free_suffix_is_used() {
        assert_eq!(free_id("w1", taken(&["w1"])), "w1_2");
        assert_eq!(free_id("w1", taken(&["w1", "w1_2", "w1_3"])), "w1_4");
    }

    #[test]
    fn a_renamed_id_stays_within_forty_characters() {
        let long = "c".repeat(40);
        let renamed = free_id(&long, taken(&[&long]));
        assert_eq!(renamed.len(), 40);
        assert!(renamed.ends_with("_2"));
        let multibyte = "é".repeat(20);
        let renamed = free_id(&multibyte, taken(&[&multibyte]));
        assert!(renamed.len() <= 40 && renamed.ends_with("_2"), "{renamed}");
    }

    #[test]
    fn an_empty_id_gets_a_stem() {
        assert_eq!(free_id("", taken(&[""])), "call_2");
    }
}
