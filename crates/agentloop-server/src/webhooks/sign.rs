//! The signature a receiver checks: HMAC-SHA256 with the project's secret
//! over `"{timestamp}.{body}"`, sent as `X-Agentloop-Signature:
//! sha256=<hex>` beside `X-Agentloop-Timestamp` (Unix seconds). Signing the
//! timestamp with the body lets a receiver refuse an old delivery replayed.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "x-agentloop-signature";
/// The header carrying the timestamp (Unix seconds) that was signed.
pub const TIMESTAMP_HEADER: &str = "x-agentloop-timestamp";
/// The header naming the event.
pub const EVENT_HEADER: &str = "x-agentloop-event";
/// The header carrying the delivery's id (the same on every attempt).
pub const DELIVERY_HEADER: &str = "x-agentloop-delivery";

/// `sha256=<hex of HMAC-SHA256(secret, "{timestamp}.{body}")>`.
pub fn signature(secret: &str, timestamp: u64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let mut out = String::from("sha256=");
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_covers_the_timestamp_and_the_body() {
        let a = signature("secret", 1_700_000_000, b"{}");
        assert!(a.starts_with("sha256=") && a.len() == 7 + 64, "{a}");
        assert_ne!(a, signature("secret", 1_700_000_001, b"{}"));
        assert_ne!(a, signature("secret", 1_700_000_000, b"{ }"));
        assert_ne!(a, signature("other", 1_700_000_000, b"{}"));
        assert_eq!(a, signature("secret", 1_700_000_000, b"{}"));
    }

    #[test]
    fn it_matches_a_known_value() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let mut mac = Hmac::<Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
