//! Ids, tokens, token hashes and timestamps.

use sha2::{Digest, Sha256};

/// `n` random bytes as lowercase hex. Falls back to a time- and
/// counter-derived value if the system source fails, so ids stay unique
/// within a process.
fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if getrandom::getrandom(&mut bytes).is_err() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let seed = format!(
            "{}-{}-{}",
            agentloop_storage::model::now_millis(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let digest = Sha256::digest(seed.as_bytes());
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = digest[i % digest.len()];
        }
    }
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// A new record id (16 hex characters).
pub fn new_id() -> String {
    random_hex(8)
}

/// A new bearer token (`al_` and 64 hex characters).
pub fn new_token() -> String {
    format!("al_{}", random_hex(32))
}

/// The SHA-256 of a token, as hex: what the store keeps.
pub fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Whether an id from a URL is acceptable: 1 to 64 ASCII letters, digits,
/// `-` or `_` (it becomes part of a file name).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

pub use agentloop_storage::time::rfc3339;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_tokens() {
        assert_ne!(new_id(), new_id());
        assert!(valid_id(&new_id()));
        assert!(!valid_id("../x"));
        assert!(!valid_id(""));
        let token = new_token();
        assert_eq!(token_hash(&token).len(), 64);
        assert_ne!(token_hash(&token), token);
    }
}
