//! A triage agent that hands the conversation to one of two specialists,
//! each with its own instructions, model and tools. The model is scripted
//! (one script shared by the three agents, played in order), so no key is
//! needed; with a real provider each agent may use its own.
//!
//! `cargo run -p agentloop --example triage_handoff`
use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop::prelude::*;
use agentloop::types::{EventKind, HandoffHistory, ToolResult, single_result};
use serde_json::{Value, json};

/// Looks an invoice up (a stand-in for a billing system).
struct Invoice;

impl Tool for Invoice {
    fn name(&self) -> &str {
        "invoice"
    }
    fn description(&self) -> &str {
        "Looks an invoice up by id."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]})
    }
    fn execute(
        self: std::sync::Arc<Self>,
        input: Value,
        _: ToolContext,
    ) -> agentloop::types::ToolStream {
        let id = input["id"].as_str().unwrap_or_default().to_owned();
        single_result(async move { ToolResult::ok(format!("invoice {id}: paid on 3 March")) })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedProvider::new([
        // Triage decides who answers.
        ScriptedTurn::new().tool_call(
            "h1",
            "transfer_to_billing",
            json!({"reason": "an invoice question"}),
        ),
        // Billing looks the invoice up, then answers.
        ScriptedTurn::new().tool_call("i1", "invoice", json!({"id": "INV-42"})),
        ScriptedTurn::new().text("Invoice INV-42 was paid on 3 March."),
    ]);
    let billing = Agent::builder()
        .name("billing")
        .description("Invoices, payments and refunds.")
        .provider(model.clone())
        .model("billing-model")
        .system("You answer billing questions. Look invoices up before answering.")
        .tool(Invoice)
        // Billing sees only the customer's question, not triage's turns.
        .handoff_history(HandoffHistory::LastUserMessage)
        .handoff_to_name("triage")
        .build()?;
    let tech = Agent::builder()
        .name("tech")
        .description("Crashes, errors and how-to questions about the app.")
        .provider(model.clone())
        .model("tech-model")
        .system("You solve technical problems with the app.")
        .handoff_to_name("triage")
        .build()?;
    let triage = Agent::builder()
        .name("triage")
        .provider(model)
        .model("triage-model")
        .system("Hand the customer to the specialist who can answer.")
        .handoff(billing)
        .handoff(tech)
        .build()?;

    let mut events = triage.stream("Was invoice INV-42 paid?");
    while let Some(event) = events.next().await {
        match &event.kind {
            EventKind::StreamingStart(start) => {
                println!("[{} speaks]", start.agent.as_deref().unwrap_or("?"));
            }
            EventKind::Handoff(handoff) => println!(
                "[handoff {} -> {}: {}]",
                handoff.from,
                handoff.to,
                handoff.reason.as_deref().unwrap_or("")
            ),
            EventKind::ToolEnd(end) => println!("[tool {} done]", end.name),
            _ => {}
        }
        if let Some(result) = event.root_result() {
            println!("{}", result.final_text().unwrap_or_default());
        }
    }
    Ok(())
}
