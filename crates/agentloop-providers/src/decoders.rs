//! The decoder of each wire format, above the formats and the contract
//! they share in `decode`.

use agentloop_types::ApiKind;

use crate::anthropic::decode::AnthropicDecoder;
use crate::decode::{DecodeContext, Decoder};
use crate::gemini::decode::GeminiDecoder;
use crate::openai_chat::decode::ChatDecoder;
use crate::openai_responses::decode::ResponsesDecoder;

/// A decoder for `api`.
pub(crate) fn decoder_for(api: ApiKind, context: DecodeContext) -> Box<dyn Decoder> {
    match api {
        ApiKind::AnthropicMessages => Box::new(AnthropicDecoder::new(context)),
        ApiKind::OpenaiChat => Box::new(ChatDecoder::new(context)),
        ApiKind::OpenaiResponses => Box::new(ResponsesDecoder::new(context)),
        ApiKind::Gemini => Box::new(GeminiDecoder::new(context)),
    }
}
