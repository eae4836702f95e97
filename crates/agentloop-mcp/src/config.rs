//! The `mcpServers` configuration: which MCP servers to start or reach.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::McpError;

/// A set of named MCP servers, as in the familiar
/// `{"mcpServers": {"name": {...}}}` file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpConfig {
    /// Server name → how to reach it. The name prefixes the server's tool
    /// names (`<name>__<tool>`).
    pub servers: BTreeMap<String, ServerConfig>,
}

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerConfig {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio(StdioConfig),
    /// A streamable HTTP endpoint.
    Http(HttpConfig),
}

/// A server started as a child process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StdioConfig {
    /// Program to run (looked up on `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables added to ours.
    pub env: BTreeMap<String, String>,
    /// Folder the process starts in (default: ours).
    pub cwd: Option<PathBuf>,
}

/// A server reached over streamable HTTP.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HttpConfig {
    /// The MCP endpoint, e.g. `http://localhost:3001/mcp`.
    pub url: String,
    /// Headers sent with every request (e.g. `Authorization`).
    pub headers: BTreeMap<String, String>,
}

/// One entry of the file as written: either shape, checked afterwards so the
/// error can say which fields are wrong.
#[derive(Deserialize)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct RawConfig {
    #[serde(rename = "mcpServers")]
    mcp_servers: BTreeMap<String, RawServer>,
}

impl McpConfig {
    /// Parses a JSON `{"mcpServers": {...}}` document.
    pub fn from_json(text: &str) -> Result<Self, McpError> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| McpError::Config {
            message: format!("not an mcpServers document: {e}"),
        })?;
        Self::from_raw(raw.mcp_servers)
    }

    /// The servers of an `mcpServers` object itself (name → `{command,
    /// args, env, cwd}` or `{url, headers}`), from any serde format (the
    /// CLI's TOML configuration, say).
    pub fn from_servers(value: serde_json::Value) -> Result<Self, McpError> {
        let raw: BTreeMap<String, RawServer> =
            serde_json::from_value(value).map_err(|e| McpError::Config {
                message: format!("not a table of MCP servers: {e}"),
            })?;
        Self::from_raw(raw)
    }

    fn from_raw(raw: BTreeMap<String, RawServer>) -> Result<Self, McpError> {
        let mut servers = BTreeMap::new();
        for (name, server) in raw {
            check_name(&name)?;
            let config = match (server.command, server.url) {
                (Some(command), None) => ServerConfig::Stdio(StdioConfig {
                    command,
                    args: server.args,
                    env: server.env,
                    cwd: server.cwd,
                }),
                (None, Some(url)) => ServerConfig::Http(HttpConfig {
                    url,
                    headers: server.headers,
                }),
                (Some(_), Some(_)) => {
                    return Err(McpError::Config {
                        message: format!("server `{name}` has both `command` and `url`"),
                    });
                }
                (None, None) => {
                    return Err(McpError::Config {
                        message: format!("server `{name}` needs `command` or `url`"),
                    });
                }
            };
            servers.insert(name, config);
        }
        Ok(Self { servers })
    }

    /// Reads and parses a JSON configuration file.
    pub fn load(path: &Path) -> Result<Self, McpError> {
        let text = std::fs::read_to_string(path).map_err(|e| McpError::Config {
            message: format!("cannot read {}: {e}", path.display()),
        })?;
        Self::from_json(&text).map_err(|e| McpError::Config {
            message: format!("{}: {e}", path.display()),
        })
    }

    /// Adds a server under `name`, or under `name_2`, `name_3`… when the
    /// name is taken; returns the name used.
    pub fn add(&mut self, name: &str, server: ServerConfig) -> String {
        let mut chosen = name.to_owned();
        let mut n = 2;
        while self.servers.contains_key(&chosen) {
            chosen = format!("{name}_{n}");
            n += 1;
        }
        self.servers.insert(chosen.clone(), server);
        chosen
    }

    /// Adds every server of `other`, renaming on clashes.
    pub fn merge(&mut self, other: McpConfig) {
        for (name, server) in other.servers {
            self.add(&name, server);
        }
    }
}

/// Server names become tool-name prefixes, which providers restrict to
/// `[A-Za-z0-9_-]`.
fn check_name(name: &str) -> Result<(), McpError> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(McpError::Config {
            message: format!("server name `{name}` may only hold letters, digits, `_` and `-`"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_come_from_any_serde_value() {
        let config = McpConfig::from_servers(serde_json::json!({
            "files": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"]},
            "web": {"url": "http://localhost:3001/mcp"}
        }))
        .unwrap();
        assert!(matches!(config.servers["files"], ServerConfig::Stdio(_)));
        assert!(matches!(config.servers["web"], ServerConfig::Http(_)));
        let bad = McpConfig::from_servers(serde_json::json!({"x": {"args": ["a"]}}));
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("needs `command` or `url`")
        );
        assert!(McpConfig::from_servers(serde_json::json!(["not", "a", "table"])).is_err());
    }

    #[test]
    fn parses_both_shapes() {
        let config = McpConfig::from_json(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"], "env": {"A": "1"}},
                "remote": {"url": "http://localhost:3001/mcp", "headers": {"Authorization": "Bearer x"}, "type": "http"}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            config.servers["fs"],
            ServerConfig::Stdio(StdioConfig {
                command: "npx".into(),
                args: vec!["-y".into(), "server-filesystem".into(), "/tmp".into()],
                env: [("A".to_owned(), "1".to_owned())].into(),
                cwd: None,
            })
        );
        assert_eq!(
            config.servers["remote"],
            ServerConfig::Http(HttpConfig {
                url: "http://localhost:3001/mcp".into(),
                headers: [("Authorization".to_owned(), "Bearer x".to_owned())].into(),
            })
        );
    }

    #[test]
    fn rejects_entries_without_a_way_in() {
        let err = McpConfig::from_json(r#"{"mcpServers": {"x": {"args": []}}}"#).unwrap_err();
        assert!(
            err.to_string().contains("needs `command` or `url`"),
            "{err}"
        );
        let err = McpConfig::from_json(r#"{"mcpServers": {"a b": {"command": "x"}}}"#).unwrap_err();
        assert!(err.to_string().contains("may only hold"), "{err}");
        let err = McpConfig::from_json(r#"{"servers": {}}"#).unwrap_err();
        assert!(err.to_string().contains("mcpServers"), "{err}");
    }

    #[test]
    fn add_renames_on_clash() {
        let mut config = McpConfig::default();
        let server = ServerConfig::Stdio(StdioConfig::default());
        assert_eq!(config.add("x", server.clone()), "x");
        assert_eq!(config.add("x", server.clone()), "x_2");
        assert_eq!(config.add("x", server), "x_3");
    }
}
