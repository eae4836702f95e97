//! What an agent knows of handoffs: its name, whom it hands to, and how
//! the agents it reaches become one set for the engine.

use agentloop_engine::{AgentProfile, Handoffs};
use agentloop_types::{HandoffError, HandoffHistory};

/// An agent handed to, as the set of agents needs it: what it answers
/// with and whom it hands to in turn.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub(crate) profile: AgentProfile,
    pub(crate) team: Team,
}

/// An agent an agent hands off to.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// An agent given whole.
    Agent(Box<Member>),
    /// An agent given elsewhere in the set, by name.
    Name(String),
}

/// An agent's part in a set of agents that hand off to each other.
#[derive(Clone, Debug)]
pub(crate) struct Team {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) targets: Vec<Target>,
    pub(crate) history: HandoffHistory,
    pub(crate) max_handoffs: Option<u32>,
}

impl Default for Team {
    fn default() -> Self {
        Self {
            name: "agent".to_owned(),
            description: String::new(),
            targets: Vec::new(),
            history: HandoffHistory::Full,
            max_handoffs: None,
        }
    }
}

impl Team {
    /// The names of the agents it hands to.
    pub(crate) fn handoff_names(&self) -> Vec<String> {
        self.targets
            .iter()
            .map(|t| match t {
                Target::Agent(member) => member.team.name.clone(),
                Target::Name(name) => name.clone(),
            })
            .collect()
    }

    /// The set of agents this team's agent hands off between: every agent
    /// reachable from it, each once. `None` when it hands to none.
    /// A target given by name that the set does not hold is left out: such
    /// a name resolves only where this agent is itself handed to.
    pub(crate) fn handoffs(&self) -> Result<Option<Handoffs>, HandoffError> {
        let mut agents: Vec<AgentProfile> = Vec::new();
        let mut queue: Vec<&Member> = self.given();
        while let Some(member) = queue.pop() {
            if member.team.name == self.name {
                // Only by name may an agent hand back to the root; a second
                // agent of the root's name is a different one.
                return Err(HandoffError::Duplicate {
                    name: member.team.name.clone(),
                });
            }
            if agents.iter().any(|a| a.name == member.team.name) {
                continue;
            }
            agents.push(member.profile.clone());
            queue.extend(member.team.given());
        }
        let mut names: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
        names.push(self.name.clone());
        let mut targets = self.handoff_names();
        targets.retain(|to| names.contains(to));
        if targets.is_empty() {
            // Checked all the same: a bad name is refused at build time.
            agentloop_types::check_agent_name(&self.name)?;
            return Ok(None);
        }
        for agent in &mut agents {
            agent.handoffs.retain(|to| names.contains(to));
        }
        let handoffs = Handoffs::new(self.name.clone(), targets, agents)?
            .with_root_description(self.description.clone());
        Ok(Some(match self.max_handoffs {
            Some(max) => handoffs.with_max_handoffs(max),
            None => handoffs,
        }))
    }

    fn given(&self) -> Vec<&Member> {
        self.targets
            .iter()
            .filter_map(|t| match t {
                Target::Agent(member) => Some(member.as_ref()),
                Target::Name(_) => None,
            })
            .collect()
    }
}
