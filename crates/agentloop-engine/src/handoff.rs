//! The agents of a run that hands off, as the driver needs them: each
//! one's instructions, model, provider and tools. The machine decides who
//! speaks ([`HandoffPlan`]); the driver asks that agent's model with its
//! instructions and runs its tools.

use std::sync::Arc;

use agentloop_types::{
    HandoffError, HandoffHistory, MAX_HANDOFFS, ModelProvider, Tool, check_agent_name,
};

use crate::machine::{AgentSpec, HandoffPlan, OfferedTool};

/// An agent a run may hand the conversation to.
#[derive(Clone)]
pub struct AgentProfile {
    /// Its name: `[A-Za-z0-9_-]{1,48}`; the model hands to it with the
    /// tool `transfer_to_{name}`.
    pub name: String,
    /// What it is for, as a model handing to it reads it.
    pub description: String,
    /// Its system prompt (the run's own is not sent while it speaks).
    pub instructions: Option<String>,
    /// Its model; the run's when `None`.
    pub model: Option<String>,
    /// Its provider; the run's when `None`.
    pub provider: Option<Arc<dyn ModelProvider>>,
    /// Its tools (the run's tools are the root agent's).
    pub tools: Vec<Arc<dyn Tool>>,
    /// The agents it may hand to (the run's own agent among them, by its
    /// name, to hand back).
    pub handoffs: Vec<String>,
    /// What of the history before the handoff it sees.
    pub history: HandoffHistory,
}

impl std::fmt::Debug for AgentProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("AgentProfile")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("tools", &tools)
            .field("handoffs", &self.handoffs)
            .field("history", &self.history)
            .finish_non_exhaustive()
    }
}

impl AgentProfile {
    /// An agent named `name`, described by `description`, with no
    /// instructions, tools or handoffs of its own, on the run's model.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            instructions: None,
            model: None,
            provider: None,
            tools: Vec::new(),
            handoffs: Vec::new(),
            history: HandoffHistory::Full,
        }
    }

    /// Sets its system prompt.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets its model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets its provider.
    pub fn provider(mut self, provider: Arc<dyn ModelProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Lets it hand to `agent`.
    pub fn handoff(mut self, agent: impl Into<String>) -> Self {
        self.handoffs.push(agent.into());
        self
    }

    /// Sets what of the history it sees.
    pub fn history(mut self, history: HandoffHistory) -> Self {
        self.history = history;
        self
    }
}

/// The agents of a run that hands off: the run's own agent (the root: the
/// run's provider, options, system prompt and tools), whom it hands to,
/// and the other agents.
#[derive(Debug, Clone)]
pub struct Handoffs {
    root: String,
    root_description: String,
    handoffs: Vec<String>,
    agents: Vec<AgentProfile>,
    max_handoffs: u32,
}

impl Handoffs {
    /// The run's own agent is `root` and hands to `handoffs`; `agents`
    /// are the others. At most [`MAX_HANDOFFS`] handoffs a run (see
    /// [`with_max_handoffs`](Self::with_max_handoffs)). Refused when a
    /// name is invalid or taken twice, or a handoff names no agent.
    pub fn new(
        root: impl Into<String>,
        handoffs: Vec<String>,
        agents: Vec<AgentProfile>,
    ) -> Result<Self, HandoffError> {
        let handoffs = Self {
            root: root.into(),
            root_description: String::new(),
            handoffs,
            agents,
            max_handoffs: MAX_HANDOFFS,
        };
        check_agent_name(&handoffs.root)?;
        handoffs.plan()?;
        Ok(handoffs)
    }

    /// Describes the root agent to agents that hand back to it.
    pub fn with_root_description(mut self, description: impl Into<String>) -> Self {
        self.root_description = description.into();
        self
    }

    /// Ends a run `limit_exceeded` (limit `handoffs`) when a handoff past
    /// the `max`th is taken.
    pub fn with_max_handoffs(mut self, max: u32) -> Self {
        self.max_handoffs = max;
        self
    }

    /// The same agents with each one's tools passed through `wrap`: a host
    /// that wraps the run's tools (to hold each call until it has recorded
    /// it, say) wraps the other agents' tools the same way.
    pub fn map_tools(&self, wrap: impl Fn(&[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>>) -> Self {
        let mut mapped = self.clone();
        for agent in &mut mapped.agents {
            agent.tools = wrap(&agent.tools);
        }
        mapped
    }

    /// The root agent's name.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The agent named `name` other than the root.
    pub fn agent(&self, name: &str) -> Option<&AgentProfile> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// What the machine decides with.
    pub fn plan(&self) -> Result<HandoffPlan, HandoffError> {
        let agents = self
            .agents
            .iter()
            .map(|a| AgentSpec {
                name: a.name.clone(),
                description: a.description.clone(),
                tools: a
                    .tools
                    .iter()
                    .map(|t| OfferedTool::of(t.as_ref()))
                    .collect(),
                handoffs: a.handoffs.clone(),
                history: a.history,
            })
            .collect();
        HandoffPlan::new(
            self.root.clone(),
            self.root_description.clone(),
            self.handoffs.clone(),
            agents,
            self.max_handoffs,
        )
    }
}
