//! Benchmark: the cost of a 30-step tool run on Anthropic with and without
//! prompt caching, against a mock applying the API's documented caching
//! rules (`support/cache_mock.rs`). Prints markdown table rows; `cargo
//! xtask bench` runs it.

#[path = "support/cache_mock.rs"]
mod cache_mock;

use agentloop_providers::PromptCache;

const STEPS: usize = 30;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let cached = runtime.block_on(cache_mock::run(STEPS, PromptCache::default()))?;
    let plain = runtime.block_on(cache_mock::run(STEPS, PromptCache::disabled()))?;
    let label =
        format!("providers: prompt caching, {STEPS}-step tool run (claude-sonnet-4-5, mock cache)");
    println!("| {label} | cost without caching | ${:.4} |", plain.cost);
    println!(
        "| {label} | cost with caching | ${:.4} ({} tokens read, {} written) |",
        cached.cost, cached.cache_read_tokens, cached.cache_creation_tokens
    );
    println!(
        "| {label} | cost with / without | {:.2} |",
        cached.cost / plain.cost
    );
    Ok(())
}
