//! Text helpers shared by the file-editing tools.

/// `1 line`, `3 lines`: a count with its noun in the right number.
pub(crate) fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Numbers `lines` starting at `first` (1-based), `cat -n` style.
pub(crate) fn number_lines<'a>(lines: impl IntoIterator<Item = &'a str>, first: usize) -> String {
    let mut out = String::new();
    for (i, line) in lines.into_iter().enumerate() {
        out.push_str(&format!("{:>6}\t{line}\n", first + i));
    }
    out
}

/// 1-based line numbers on which `needle` starts, one per occurrence.
pub(crate) fn occurrence_lines(haystack: &str, needle: &str) -> Vec<usize> {
    if needle.is_empty() {
        return Vec::new();
    }
    haystack
        .match_indices(needle)
        .map(|(at, _)| haystack[..at].matches('\n').count() + 1)
        .collect()
}

/// The lines of `text` (a final newline does not start another line).
pub(crate) fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    text.strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect()
}

/// Inserts `insert` after line `after` (0 = at the top). `None` when `after`
/// is past the last line.
pub(crate) fn insert_after_line(text: &str, after: usize, insert: &str) -> Option<String> {
    let mut all = lines(text);
    let count = all.len();
    if after > count {
        return None;
    }
    let new_lines = lines(insert);
    let new_lines = if new_lines.is_empty() {
        vec![""]
    } else {
        new_lines
    };
    all.splice(after..after, new_lines);
    let mut out = all.join("\n");
    if text.is_empty() || text.ends_with('\n') || after == count {
        out.push('\n');
    }
    Some(out)
}

/// A byte count in `du -h` style (`512`, `1.5K`, `4.0M`).
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["K", "M", "G", "T"];
    if bytes < 1024 {
        return bytes.to_string();
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1}{}", UNITS[unit])
}

/// A few numbered lines around line `around` (1-based) of `text`.
pub(crate) fn snippet(text: &str, around: usize, radius: usize) -> String {
    let all = lines(text);
    let start = around.saturating_sub(radius + 1);
    let end = (around + radius).min(all.len());
    number_lines(all[start.min(end)..end].iter().copied(), start + 1)
}

/// Turns a `view_range` into 1-based inclusive line bounds.
pub(crate) fn view_range(range: Option<&[i64]>, count: usize) -> Result<(usize, usize), String> {
    let Some(range) = range else {
        return Ok((1, count));
    };
    let [start, end] = range else {
        return Err("Error: Invalid `view_range`: it should be a list of two integers".to_owned());
    };
    let bad = |why: &str| format!("Error: Invalid `view_range` parameter: {range:?}. {why}");
    let first = usize::try_from(*start)
        .ok()
        .filter(|s| *s >= 1 && *s <= count.max(1))
        .ok_or_else(|| {
            bad(&format!(
                "Its first element should be within the range of lines of the file: [1, {count}]"
            ))
        })?;
    let last = if *end == -1 {
        count
    } else {
        usize::try_from(*end)
            .ok()
            .filter(|e| *e >= first && *e <= count)
            .ok_or_else(|| {
                bad(&format!(
                    "Its second element should be -1 or within [{first}, {count}]"
                ))
            })?
    };
    Ok((first, last.max(first - 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_and_occurrences() {
        assert_eq!(number_lines(["a", "b"], 9), "     9\ta\n    10\tb\n");
        assert_eq!(occurrence_lines("x\nab\nab ab", "ab"), [2, 3, 3]);
        assert!(occurrence_lines("abc", "").is_empty());
    }

    #[test]
    fn inserting() {
        assert_eq!(insert_after_line("a\nb\n", 0, "x").unwrap(), "x\na\nb\n");
        assert_eq!(
            insert_after_line("a\nb\n", 1, "x\ny").unwrap(),
            "a\nx\ny\nb\n"
        );
        assert_eq!(insert_after_line("a\nb", 2, "x").unwrap(), "a\nb\nx\n");
        assert_eq!(insert_after_line("", 0, "x").unwrap(), "x\n");
        assert!(insert_after_line("a\n", 2, "x").is_none());
    }

    #[test]
    fn sizes_and_snippets() {
        assert_eq!(human_size(512), "512");
        assert_eq!(human_size(1536), "1.5K");
        assert_eq!(human_size(4 * 1024 * 1024), "4.0M");
        assert_eq!(
            snippet("a\nb\nc\nd\n", 2, 1),
            "     1\ta\n     2\tb\n     3\tc\n"
        );
    }
}
