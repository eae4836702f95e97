//! The README example: Anthropic, the fs tool and streamed text.
use agentloop::prelude::*;
use agentloop::tools::{FsTool, vfs::DirJail};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = Agent::builder()
        .provider(agentloop::anthropic_from_env()?)
        .model("claude-sonnet-4-5")
        .tool(FsTool::new(std::sync::Arc::new(DirJail::new(".")?)))
        .build()?;
    let mut text = agent.stream("Summarise README.md").text();
    while let Some(delta) = text.next().await {
        print!("{}", delta?);
    }
    Ok(())
}
