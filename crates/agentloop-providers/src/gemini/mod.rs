//! Google Gemini `generateContent` / `streamGenerateContent`: request
//! bodies, stream decoding and the streamed function-call arguments.

mod args;
pub(crate) mod decode;
pub(crate) mod request;

/// Type of the provider block that carries a thought signature.
pub(crate) const SIGNATURE: &str = "thought_signature";
/// Type of the provider block that carries a Gemini part kept verbatim.
pub(crate) const PART: &str = "part";
/// Prefix of call ids made up here for calls Gemini sent without an id;
/// such ids are not sent back.
pub(crate) const LOCAL_ID_PREFIX: &str = "gemini-call-";
