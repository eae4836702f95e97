//! Glob patterns, translated to anchored regular expressions.

use regex::Regex;

/// Why a glob pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    /// A `[` without its `]`.
    #[error("unclosed '[' in glob pattern")]
    UnclosedClass,
    /// A `{` without its `}`, or braces nested.
    #[error("unclosed or nested '{{' in glob pattern")]
    BadBraces,
    /// The translated expression was refused.
    #[error("glob pattern too complex: {0}")]
    Regex(String),
}

/// Translates a glob into a regex matching whole `/`-separated paths:
/// `*` and `?` stay within one component, `**` crosses components
/// (`**/` may match nothing), `[...]` is a class (`[!...]` negated), and
/// `{a,b}` is an alternation.
pub fn glob_to_regex(pattern: &str) -> Result<Regex, GlobError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut re = String::from("^");
    let mut in_braces = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                if chars.get(i + 2) == Some(&'/') {
                    re.push_str("(?:.*/)?");
                    i += 3;
                } else {
                    re.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                let end = chars[i + 1..]
                    .iter()
                    .skip(1)
                    .position(|&c| c == ']')
                    .map(|p| p + i + 2)
                    .ok_or(GlobError::UnclosedClass)?;
                let mut body: String = chars[i + 1..end].iter().collect();
                if let Some(rest) = body.strip_prefix('!') {
                    body = format!("^{rest}");
                }
                let body = body.replace('\\', "\\\\").replace('[', "\\[");
                re.push('[');
                re.push_str(&body);
                re.push(']');
                i = end + 1;
                continue;
            }
            '{' if !in_braces => {
                in_braces = true;
                re.push_str("(?:");
            }
            '{' => return Err(GlobError::BadBraces),
            ',' if in_braces => re.push('|'),
            '}' if in_braces => {
                in_braces = false;
                re.push(')');
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    if in_braces {
        return Err(GlobError::BadBraces);
    }
    re.push('$');
    regex::RegexBuilder::new(&re)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| GlobError::Regex(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        glob_to_regex(p).unwrap().is_match(s)
    }

    #[test]
    fn globs() {
        assert!(m("*.md", "a.md"));
        assert!(!m("*.md", "d/a.md"));
        assert!(m("**/*.md", "a.md"));
        assert!(m("**/*.md", "d/e/a.md"));
        assert!(m("src/**", "src/a/b.rs"));
        assert!(m("a?c", "abc"));
        assert!(!m("a?c", "a/c"));
        assert!(m("[ab].txt", "b.txt"));
        assert!(!m("[!ab].txt", "b.txt"));
        assert!(m("*.{js,ts}", "x.ts"));
        assert!(m("a+b(1).txt", "a+b(1).txt"));
        assert!(glob_to_regex("[abc").is_err());
        assert!(glob_to_regex("{a,b").is_err());
        assert!(glob_to_regex("{a,{b}}").is_err());
    }
}
