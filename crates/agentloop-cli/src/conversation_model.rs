//! The model a conversation command (`chat`, `acp`) answers with, from the
//! flags they share: the shipped demo (asked for, or nothing configured),
//! the local model (started or reused), or a configured provider; and the
//! tools it is offered with the minion's model.

use agentloop_types::{LoopOptions, RequestOptions};

use crate::out::Failure;
use crate::providers::Chosen;
use crate::{demo, out, providers, tools};

/// The flags a conversation command chooses its model with; `--local`
/// fills the provider, base URL, model and system prompt it leaves unset.
pub struct Flags<'a> {
    pub demo: bool,
    pub local: bool,
    pub provider: &'a mut Option<String>,
    pub model: &'a mut Option<String>,
    pub base_url: &'a mut Option<String>,
    pub system: &'a mut Option<String>,
    pub tools: &'a [String],
}

/// The model chosen and what goes with it.
pub struct ConversationModel {
    pub chosen: Chosen,
    /// The output cap per turn `--local` sets, if any.
    pub max_tokens: Option<u32>,
    /// Whether the demo plays.
    pub demo: bool,
    /// The tools to offer: the demo's when it plays and none are named.
    pub tool_names: Vec<String>,
    /// The model a minion's child loops run on.
    pub minion: tools::MinionModel,
}

pub async fn choose(flags: Flags<'_>) -> Result<ConversationModel, Failure> {
    let mut max_tokens = None;
    if flags.local {
        crate::local_model::setup(crate::local_model::Flags {
            model_flag: flags.model.is_some(),
            provider: flags.provider,
            base_url: flags.base_url,
            model: flags.model,
            system: Some(flags.system),
            max_tokens: &mut max_tokens,
            tools: flags.tools,
        })
        .await?;
    }
    let demo = demo::wanted(
        flags.demo,
        flags.provider.as_deref(),
        flags.base_url.as_deref(),
    );
    let mut chosen = if demo {
        out::note(demo::NOTICE);
        demo::provider(flags.model.as_deref())?
    } else {
        providers::choose(
            flags.provider.as_deref(),
            flags.model.as_deref(),
            flags.base_url.as_deref(),
        )
        .await?
    };
    if flags.local {
        chosen.provider = crate::local_model::guarded(chosen.provider);
    }
    let tool_names: Vec<String> = if demo && flags.tools.is_empty() {
        demo::TOOLS.iter().map(|t| (*t).to_owned()).collect()
    } else {
        flags.tools.to_vec()
    };
    let minion = tools::MinionModel {
        provider: chosen.provider.clone(),
        options: LoopOptions {
            request: RequestOptions {
                model: chosen.model.clone(),
                ..RequestOptions::default()
            },
            ..LoopOptions::default()
        },
    };
    Ok(ConversationModel {
        chosen,
        max_tokens,
        demo,
        tool_names,
        minion,
    })
}
