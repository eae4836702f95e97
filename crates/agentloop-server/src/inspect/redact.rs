//! Secrets taken out of what the run inspector shows: text that looks
//! like an API key or token (the shapes providers and code hosts give
//! theirs, this server's own `al_` tokens, `Bearer` credentials, long hex or base64 after `key=`), and
//! every string value of a JSON field named like a secret.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shapes of keys and tokens, one alternative each.
static SECRET: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}",
        r"|\bal_[0-9a-f]{32,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
        r"|xox[abposr]-[A-Za-z0-9\-]{10,}",
        r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}",
        r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        r"|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*",
        r"|(?i:(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd|token)\s*[=:]\s*)",
        r#"["']?[^\s"',;]{8,}"#,
    ))
    .ok()
});

/// Whether a JSON field named `name` holds a secret.
fn secret_field(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace(['-', '_'], "");
    [
        "apikey",
        "secret",
        "password",
        "passwd",
        "authorization",
        "accesstoken",
        "authtoken",
    ]
    .iter()
    .any(|s| name.contains(s))
        || name == "token"
        || (name.ends_with("token") && !name.ends_with("maxtoken"))
}

/// `text` with every secret in it replaced.
pub fn redact_text(text: &str) -> String {
    match SECRET.as_ref() {
        Some(secret) => secret.replace_all(text, REDACTED).into_owned(),
        // The pattern is a constant; were it refused, nothing would be
        // shown rather than a secret.
        None => REDACTED.to_owned(),
    }
}

/// Replaces the secrets in `value`, in place: every string value of a
/// field named like a secret, and secrets inside every other string.
pub fn redact_value(value: &mut Value) {
    match value {
        Value::String(text) => *text = redact_text(text),
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                if field.is_string() && secret_field(name) {
                    *field = Value::String(REDACTED.to_owned());
                } else {
                    redact_value(field);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `item` with its secrets replaced, through its JSON form; `None` when
/// the redacted form no longer reads as one (then it is not shown).
pub fn redacted<T: serde::Serialize + serde::de::DeserializeOwned>(item: &T) -> Option<T> {
    let mut value = serde_json::to_value(item).ok()?;
    redact_value(&mut value);
    serde_json::from_value(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_and_tokens_are_replaced_and_the_rest_kept() {
        let text = "use sk-ant-api03-abcdefghijklmnopqrstuv and ghp_abcdefghijklmnopqrstuvwxyz0123 \
                    with Authorization: Bearer abc.def-ghi_jkl012 and api_key=ZXhhbXBsZXNlY3JldA== please";
        let shown = redact_text(text);
        for secret in ["sk-ant", "ghp_", "abc.def", "ZXhhbXBs"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(
            shown.starts_with("use [redacted] and [redacted]"),
            "{shown}"
        );
        assert!(shown.ends_with("please"), "{shown}");
        assert_eq!(
            redact_text("max_tokens: 4096, a plain sentence"),
            "max_tokens: 4096, a plain sentence"
        );
    }

    #[test]
    fn fields_named_like_secrets_are_replaced() {
        let mut value = json!({"headers": {"Authorization": "x"}, "api_key": "short",
            "input_tokens": 5, "max_tokens": 10, "note": "token-free"});
        redact_value(&mut value);
        assert_eq!(
            value,
            json!({"headers": {"Authorization": REDACTED}, "api_key": REDACTED,
            "input_tokens": 5, "max_tokens": 10, "note": "token-free"})
        );
    }
}
