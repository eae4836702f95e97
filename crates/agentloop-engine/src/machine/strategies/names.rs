//! The built-in strategies' names.

/// Name of the native strategy.
pub const NATIVE: &str = "native";
/// Name of the ReAct strategy.
pub const REACT: &str = "react";
/// Name of the LLM-only strategy.
pub const LLM_ONLY: &str = "llm-only";
/// Name of the tool-first strategy.
pub const TOOL_FIRST: &str = "tool-first";
/// Name of the plan-and-execute strategy.
pub const PLAN_AND_EXECUTE: &str = "plan-and-execute";
