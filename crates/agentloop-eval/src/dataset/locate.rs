//! Finding the line a case starts on, for errors found after parsing (the
//! parsers keep no positions in the values they build). A heuristic over
//! the text: each case's `name` key, in order.

/// The line (1-based) each case's name is written on, where found; `names`
/// in the dataset's order.
pub(super) fn case_lines<'a>(
    text: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<Option<usize>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    names
        .into_iter()
        .map(|name| {
            let found = (from..lines.len()).find(|&i| names_case(lines[i], name));
            if let Some(i) = found {
                from = i + 1;
            }
            found.map(|i| i + 1)
        })
        .collect()
}

/// The name of the case whose text holds `line` (1-based): the nearest
/// `name` key at or above it.
pub(super) fn case_around(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line)
        .collect::<Vec<_>>()
        .iter()
        .rev()
        .find_map(|l| name_in_line(l))
}

/// The value of a `name` key written on this line (`name: x`,
/// `- name: "x"`, `"name": "x"`).
pub(super) fn name_in_line(line: &str) -> Option<String> {
    let key = line.find("\"name\"").map(|at| at + 6).or_else(|| {
        let trimmed = line.trim_start().trim_start_matches("- ").trim_start();
        trimmed
            .starts_with("name:")
            .then(|| line.len() - trimmed.len() + 4)
    })?;
    let rest = line[key..].trim_start().strip_prefix(':')?.trim_start();
    let value = if let Some(quoted) = rest.strip_prefix('"') {
        quoted.split('"').next()?
    } else if let Some(quoted) = rest.strip_prefix('\'') {
        quoted.split('\'').next()?
    } else {
        rest.split([',', '}', '#']).next()?.trim()
    };
    (!value.is_empty()).then(|| value.to_owned())
}

fn names_case(line: &str, name: &str) -> bool {
    name_in_line(line).as_deref() == Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_in_yaml_and_json_lines() {
        assert_eq!(name_in_line("  - name: first").as_deref(), Some("first"));
        assert_eq!(name_in_line("    name: 'two'").as_deref(), Some("two"));
        assert_eq!(
            name_in_line(r#"{"name": "three", "prompt": "x"}"#).as_deref(),
            Some("three")
        );
        assert_eq!(name_in_line("prompt: name: no"), None);
    }

    #[test]
    fn the_case_around_a_line_is_the_nearest_name_above() {
        let text = "cases:\n  - name: a\n    prompt: x\n  - name: b\n    prompt: y\n";
        assert_eq!(case_around(text, 3).as_deref(), Some("a"));
        assert_eq!(case_around(text, 5).as_deref(), Some("b"));
        assert_eq!(case_around(text, 1), None);
    }
}
