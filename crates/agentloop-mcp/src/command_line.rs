//! `--mcp-stdio 'cmd args'`: one shell-like command line → a named stdio server.

use crate::McpError;
use crate::config::StdioConfig;

/// Programs that run another program named by a later word; the server's
/// name comes from that word instead.
const LAUNCHERS: &[&str] = &[
    "npx", "node", "uvx", "uv", "python", "python3", "deno", "bun", "bunx", "pipx", "run",
];

/// Parses `[NAME=]program args…` (single and double quotes group words,
/// backslash escapes the next character outside single quotes). Without
/// `NAME=` the name is derived from the program or, for launchers such as
/// `npx` and `node`, from the script or package they run.
pub fn parse_stdio_command(line: &str) -> Result<(String, StdioConfig), McpError> {
    let (explicit_name, rest) = split_name(line);
    let mut words = split_words(rest)?;
    if words.is_empty() {
        return Err(McpError::Config {
            message: format!("empty MCP server command line `{line}`"),
        });
    }
    let command = words.remove(0);
    let name = match explicit_name {
        Some(name) => name.to_owned(),
        None => derive_name(&command, &words),
    };
    Ok((
        name,
        StdioConfig {
            command,
            args: words,
            ..StdioConfig::default()
        },
    ))
}

/// `name=cmd …` when the text before the first `=` is a bare name.
fn split_name(line: &str) -> (Option<&str>, &str) {
    let line = line.trim();
    if let Some((name, rest)) = line.split_once('=') {
        let bare = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if bare {
            return (Some(name), rest);
        }
    }
    (None, line)
}

fn split_words(line: &str) -> Result<Vec<String>, McpError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unclosed(line)),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => return Err(unclosed(line)),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unclosed(line)),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

fn unclosed(line: &str) -> McpError {
    McpError::Config {
        message: format!("unclosed quote in `{line}`"),
    }
}

fn derive_name(command: &str, args: &[String]) -> String {
    let program = base_name(command);
    let subject = if LAUNCHERS.contains(&program.as_str()) {
        args.iter()
            .find(|a| !a.starts_with('-') && !LAUNCHERS.contains(&a.as_str()))
            .map_or(program.clone(), |a| subject_name(a))
    } else {
        program
    };
    let trimmed = ["mcp-server-", "server-", "mcp-"]
        .iter()
        .find_map(|prefix| subject.strip_prefix(prefix))
        .unwrap_or(&subject);
    let trimmed = ["-mcp-server", "-server", "-mcp"]
        .iter()
        .find_map(|suffix| trimmed.strip_suffix(suffix))
        .unwrap_or(trimmed);
    let name: String = trimmed
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "mcp".to_owned()
    } else {
        name
    }
}

/// The last path component without its extension.
fn base_name(word: &str) -> String {
    let last = word.rsplit(['/', '\\']).next().unwrap_or(word);
    match last.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_owned(),
        _ => last.to_owned(),
    }
}

/// What a launcher's argument names: a package (`@scope/name@1.2`) or a
/// script path (`…/server-everything/dist/index.js` names `server-everything`).
fn subject_name(word: &str) -> String {
    if word.starts_with('@') || !word.contains('/') {
        let package = word.rsplit('/').next().unwrap_or(word);
        let package = package.split('@').next().unwrap_or(package);
        return package.to_owned();
    }
    let parts: Vec<&str> = word.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
    let generic = [
        "index", "main", "server", "cli", "dist", "build", "src", "lib", "bin",
    ];
    parts
        .iter()
        .rev()
        .map(|p| base_name(p))
        .find(|p| !generic.contains(&p.as_str()))
        .unwrap_or_else(|| base_name(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(line: &str) -> String {
        parse_stdio_command(line).unwrap().0
    }

    #[test]
    fn splits_quoted_words() {
        let (_, config) = parse_stdio_command(r#"prog "a b" 'c d' e\ f "g\"h""#).unwrap();
        assert_eq!(config.command, "prog");
        assert_eq!(config.args, ["a b", "c d", "e f", "g\"h"]);
        assert!(parse_stdio_command("prog 'open").is_err());
        assert!(parse_stdio_command("  ").is_err());
    }

    #[test]
    fn names_come_from_the_prefix_or_the_program() {
        assert_eq!(
            name_of("files=npx -y @modelcontextprotocol/server-filesystem /tmp"),
            "files"
        );
        assert_eq!(
            name_of("npx -y @modelcontextprotocol/server-everything"),
            "everything"
        );
        assert_eq!(
            name_of("npx @modelcontextprotocol/server-everything@2026.8.31 stdio"),
            "everything"
        );
        assert_eq!(
            name_of(
                "node target/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio"
            ),
            "everything"
        );
        assert_eq!(name_of("python3 tools/weather_server.py"), "weather_server");
        assert_eq!(name_of("/usr/local/bin/mcp-server-git --repo ."), "git");
        assert_eq!(name_of("uvx mcp-server-fetch"), "fetch");
    }

    #[test]
    fn an_equals_sign_inside_an_argument_is_not_a_name() {
        let (name, config) = parse_stdio_command("prog --opt=a=b").unwrap();
        assert_eq!(name, "prog");
        assert_eq!(config.args, ["--opt=a=b"]);
    }
}
