//! An output guardrail that withholds answers holding personal data (an
//! email address or a phone number): the run ends `error`, blocked by the
//! guardrail, instead of completing with the answer. The model is scripted,
//! so no key is needed.
//!
//! `cargo run -p agentloop --example pii_guardrail`
use std::sync::Arc;

use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop::prelude::*;
use agentloop::types::{GuardrailVerdict, HookError, LoopError, OutputGuardrail};
use serde_json::Value;

/// Trips on a word that looks like an email address or a run of seven or
/// more digits (spaces and dashes between them allowed).
struct Pii;

fn has_email(text: &str) -> bool {
    text.split_whitespace().any(|word| {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        match word.split_once('@') {
            Some((user, domain)) => !user.is_empty() && domain.contains('.'),
            None => false,
        }
    })
}

fn has_phone(text: &str) -> bool {
    let mut digits = 0;
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits += 1;
            if digits >= 7 {
                return true;
            }
        } else if !matches!(c, ' ' | '-' | '(' | ')' | '+') {
            digits = 0;
        }
    }
    false
}

#[agentloop::types::async_trait]
impl OutputGuardrail for Pii {
    fn name(&self) -> &str {
        "pii"
    }

    async fn check(
        &self,
        answer: &str,
        _output: Option<&Value>,
    ) -> Result<GuardrailVerdict, HookError> {
        let found = if has_email(answer) {
            Some("an email address")
        } else if has_phone(answer) {
            Some("a phone number")
        } else {
            None
        };
        Ok(match found {
            Some(what) => GuardrailVerdict::Trip {
                reason: format!("the answer holds {what}"),
            },
            None => GuardrailVerdict::Pass,
        })
    }
}

async fn ask(answer: &str) -> Result<(), Box<dyn std::error::Error>> {
    let agent = Agent::builder()
        .provider(ScriptedProvider::new([ScriptedTurn::new().text(answer)]))
        .model("scripted")
        .output_guardrail(Arc::new(Pii))
        .build()?;
    let result = agent.run("How do I reach support?").await;
    match &result.status {
        LoopStatus::Error {
            error: LoopError::Blocked { by, name, reason },
        } => println!("withheld by {by} `{name}`: {reason}"),
        status => println!(
            "{}: {}",
            status.name(),
            result.final_text().unwrap_or_default()
        ),
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ask("Use the contact form on the support page.").await?;
    ask("Write to jane.doe@example.com.").await?;
    ask("Call +1 (555) 010-2030.").await?;
    Ok(())
}
