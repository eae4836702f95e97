//! A person in the loop: which calls wait for approval, what a suspended
//! run waits for, and what the person decided.
//!
//! A run whose turn holds calls that need approval runs the others, then
//! ends `suspended` with every [`PendingCall`] (approvals and questions
//! alike) and its state. Resuming it with one [`Decision`] per pending call
//! goes on in place: approved calls run, rejected ones are answered with
//! the reason, answers become the question's result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::ToolUseBlock;
use crate::run_path::RunPath;
use crate::state::RunState;

/// When a tool's calls wait for a person's approval.
///
/// In JSON: `"never"`, `"always"`, `{"when": {"pointer": "/command",
/// "any_of": ["create"]}}` or `{"unless": {...}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// Calls run without asking.
    #[default]
    Never,
    /// Every call waits.
    Always,
    /// Calls whose argument matches wait.
    When(ArgumentMatch),
    /// Calls whose argument does not match wait (a missing argument does
    /// not match), so what is not known to be harmless is asked.
    Unless(ArgumentMatch),
}

/// A test on one argument of a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ArgumentMatch {
    /// JSON pointer into the call's arguments (`/command`).
    pub pointer: String,
    /// The argument matches when it equals one of these.
    #[serde(default)]
    pub any_of: Vec<Value>,
    /// The argument, a shell command, also matches when it starts with
    /// one of these commands and chains nothing else (see
    /// [`command_has_prefix`]): `cargo test` matches `cargo test -p core`,
    /// not `cargo test; rm -rf ~` nor `cargo testing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_prefixes: Vec<String>,
}

/// Characters that let one shell command line run more than one command,
/// substitute output or redirect: a line holding any of them matches no
/// command prefix.
const SHELL_CONTROL: &[char] = &[';', '&', '|', '`', '$', '(', ')', '<', '>', '\n', '\r'];

/// Whether `command` is `prefix`, or `prefix` followed by whitespace and
/// arguments, and holds no shell control character (`; & | ` `` ` `` `$ ( )
/// < >` or a line break), so approving the prefix approves nothing
/// chained to it.
pub fn command_has_prefix(command: &str, prefix: &str) -> bool {
    let command = command.trim();
    let prefix = prefix.trim();
    if prefix.is_empty() || command.contains(SHELL_CONTROL) {
        return false;
    }
    command
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

impl ArgumentMatch {
    fn matches(&self, arguments: &Value) -> bool {
        arguments.pointer(&self.pointer).is_some_and(|value| {
            self.any_of.contains(value)
                || value.as_str().is_some_and(|command| {
                    self.command_prefixes
                        .iter()
                        .any(|prefix| command_has_prefix(command, prefix))
                })
        })
    }

    fn argument(&self, arguments: &Value) -> String {
        match arguments.pointer(&self.pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => "missing".to_owned(),
        }
    }
}

impl ApprovalPolicy {
    /// Why a call of `tool` with `arguments` needs approval; `None` when it
    /// runs without asking.
    pub fn requires(&self, tool: &str, arguments: &Value) -> Option<String> {
        match self {
            Self::Never => None,
            Self::Always => Some(format!("every {tool} call needs approval")),
            Self::When(test) => test.matches(arguments).then(|| {
                format!(
                    "{tool} calls with {} {} need approval",
                    test.pointer.trim_start_matches('/'),
                    test.argument(arguments)
                )
            }),
            Self::Unless(test) => (!test.matches(arguments)).then(|| {
                format!(
                    "{tool} calls with {} {} need approval",
                    test.pointer.trim_start_matches('/'),
                    test.argument(arguments)
                )
            }),
        }
    }
}

/// Approval policies by tool name, over each tool's own default; the key
/// `"*"` applies to every tool without an entry of its own.
pub type ApprovalPolicies = BTreeMap<String, ApprovalPolicy>;

/// The policy for `tool`: its entry in `policies`, the `"*"` entry, or the
/// tool's own default.
pub fn approval_policy<'a>(
    policies: &'a ApprovalPolicies,
    tool: &str,
    tool_default: &'a ApprovalPolicy,
) -> &'a ApprovalPolicy {
    policies
        .get(tool)
        .or_else(|| policies.get("*"))
        .unwrap_or(tool_default)
}

/// One call a suspended run waits on a person for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingCall {
    /// The call, as the model made it.
    pub call: ToolUseBlock,
    /// The tool-call ids from the root run to the nested run (a minion's,
    /// a skill's) that made the call; empty for the root run.
    #[serde(default, skip_serializing_if = "RunPath::is_root")]
    pub path: RunPath,
    /// What it waits for.
    #[serde(flatten)]
    pub wait: Wait,
}

/// What a pending call waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Wait {
    /// Approval to run.
    Approval {
        /// Why it needs one.
        reason: String,
    },
    /// An answer: the call asked the person something.
    Question {
        /// What it asked.
        question: String,
    },
}

/// What a person decided for one pending call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call, with `arguments` in place of the model's when given.
    Approve {
        /// Edited arguments (a JSON object).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Value>,
    },
    /// Run it, and every later call of the same tool in this run without
    /// asking.
    ApproveAlways,
    /// Do not run it (or decline to answer); the model reads `reason` as
    /// the call's error result and the loop goes on.
    Reject {
        /// Why, for the model.
        #[serde(default)]
        reason: String,
    },
    /// The answer to a question.
    Answer {
        /// The answer text.
        text: String,
    },
}

/// Decisions by call id.
pub type Decisions = BTreeMap<String, Decision>;

/// Decisions that do not fit what a run waits for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The run does not wait for a person.
    #[error("the run is not waiting for a decision")]
    NotWaiting,
    /// A decision for a call the run does not wait on.
    #[error("the run does not wait on call {id}")]
    UnknownCall {
        /// The call id.
        id: String,
    },
    /// Pending calls left without a decision.
    #[error("no decision for call(s) {}", ids.join(", "))]
    Missing {
        /// Their ids.
        ids: Vec<String>,
    },
    /// A decision that does not fit the call (an answer to an approval,
    /// an approval of a question, edited arguments that are not an object).
    #[error("call {id}: {reason}")]
    Unfit {
        /// The call id.
        id: String,
        /// What does not fit.
        reason: String,
    },
}

/// Checks that `decisions` decide each of `pending` exactly and fit it.
pub fn check_decisions(
    pending: &[PendingCall],
    decisions: &Decisions,
) -> Result<(), DecisionError> {
    if pending.is_empty() {
        return Err(DecisionError::NotWaiting);
    }
    for id in decisions.keys() {
        if !pending.iter().any(|p| &p.call.id == id) {
            return Err(DecisionError::UnknownCall { id: id.clone() });
        }
    }
    let missing: Vec<String> = pending
        .iter()
        .filter(|p| !decisions.contains_key(&p.call.id))
        .map(|p| p.call.id.clone())
        .collect();
    if !missing.is_empty() {
        return Err(DecisionError::Missing { ids: missing });
    }
    for item in pending {
        let Some(decision) = decisions.get(&item.call.id) else {
            continue;
        };
        check_fit(item, decision).map_err(|reason| DecisionError::Unfit {
            id: item.call.id.clone(),
            reason: reason.to_owned(),
        })?;
    }
    Ok(())
}

/// Whether `decision` can decide `item`.
pub fn check_fit(item: &PendingCall, decision: &Decision) -> Result<(), &'static str> {
    match (&item.wait, decision) {
        (Wait::Approval { .. }, Decision::Answer { .. }) => {
            Err("it waits for approval, not an answer")
        }
        (Wait::Question { .. }, Decision::Approve { .. } | Decision::ApproveAlways) => {
            Err("it asks a question: answer it or reject it")
        }
        (
            _,
            Decision::Approve {
                arguments: Some(args),
            },
        ) if !args.is_object() => Err("edited arguments must be a JSON object"),
        _ => Ok(()),
    }
}

/// What a tool that drives a child run reports when that run suspended:
/// what it waits for and its state, so it resumes in place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChildSuspension {
    /// What the child waits for (paths relative to the child).
    pub pending: Vec<PendingCall>,
    /// The child's state.
    pub state: RunState,
}

/// What a tool is given to resume the child run it reported suspended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildResume {
    /// The child's state, as it was reported.
    pub state: RunState,
    /// The decisions for the child's pending calls.
    pub decisions: Decisions,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fs_writes() -> ApprovalPolicy {
        ApprovalPolicy::Unless(ArgumentMatch {
            pointer: "/command".into(),
            any_of: vec![json!("view"), json!("glob")],
            command_prefixes: Vec::new(),
        })
    }

    #[test]
    fn a_command_prefix_matches_plain_commands_and_nothing_chained() {
        for (command, expected) in [
            ("cargo test", true),
            ("  cargo test -p core --lib ", true),
            ("cargo\ttest", false),
            ("cargo testing", false),
            ("cargo", false),
            ("cargo test; rm -rf ~", false),
            ("cargo test && curl x", false),
            ("cargo test | sh", false),
            ("cargo test $(rm -rf ~)", false),
            ("cargo test `id`", false),
            ("cargo test > /etc/passwd", false),
            ("cargo test\nrm -rf ~", false),
            ("cargo test & sleep 1", false),
        ] {
            assert_eq!(
                command_has_prefix(command, "cargo test"),
                expected,
                "{command:?}"
            );
        }
        assert!(!command_has_prefix("anything", " "));
        let policy: ApprovalPolicy = serde_json::from_value(json!({
            "unless": {"pointer": "/command", "command_prefixes": ["cargo test", "ls"]}
        }))
        .unwrap();
        assert_eq!(
            policy.requires("shell", &json!({"command": "ls -la src"})),
            None
        );
        assert_eq!(
            policy
                .requires("shell", &json!({"command": "ls; rm -rf src"}))
                .as_deref(),
            Some("shell calls with command ls; rm -rf src need approval")
        );
    }

    #[test]
    fn a_policy_reads_the_arguments() {
        let policy = fs_writes();
        assert_eq!(policy.requires("fs", &json!({"command": "view"})), None);
        assert_eq!(
            policy
                .requires("fs", &json!({"command": "create"}))
                .as_deref(),
            Some("fs calls with command create need approval")
        );
        assert!(policy.requires("fs", &json!({})).is_some());
        assert!(ApprovalPolicy::Always.requires("js", &json!({})).is_some());
        assert_eq!(ApprovalPolicy::Never.requires("js", &json!({})), None);
        let json = serde_json::to_value(&policy).unwrap();
        assert_eq!(
            json,
            json!({"unless": {"pointer": "/command", "any_of": ["view", "glob"]}})
        );
        assert_eq!(
            serde_json::from_value::<ApprovalPolicy>(json!("always")).unwrap(),
            ApprovalPolicy::Always
        );
    }

    #[test]
    fn the_wildcard_overrides_tool_defaults_and_names_override_it() {
        let mut policies = ApprovalPolicies::new();
        let default = ApprovalPolicy::Always;
        assert_eq!(approval_policy(&policies, "js", &default), &default);
        policies.insert("*".into(), ApprovalPolicy::Never);
        assert_eq!(
            approval_policy(&policies, "js", &default),
            &ApprovalPolicy::Never
        );
        policies.insert("js".into(), fs_writes());
        assert_eq!(approval_policy(&policies, "js", &default), &fs_writes());
    }

    #[test]
    fn decisions_are_checked_against_what_waits() {
        let pending = vec![
            PendingCall {
                call: ToolUseBlock {
                    id: "a".into(),
                    name: "fs".into(),
                    input: json!({}).into(),
                },
                path: RunPath::root(),
                wait: Wait::Approval { reason: "r".into() },
            },
            PendingCall {
                call: ToolUseBlock {
                    id: "q".into(),
                    name: "ask_user".into(),
                    input: json!({}).into(),
                },
                path: RunPath::root(),
                wait: Wait::Question {
                    question: "?".into(),
                },
            },
        ];
        let approve = Decision::Approve { arguments: None };
        let answer = Decision::Answer { text: "yes".into() };
        let ok: Decisions = [("a".into(), approve.clone()), ("q".into(), answer.clone())].into();
        assert_eq!(check_decisions(&pending, &ok), Ok(()));
        let missing: Decisions = [("a".into(), approve.clone())].into();
        assert_eq!(
            check_decisions(&pending, &missing),
            Err(DecisionError::Missing {
                ids: vec!["q".into()]
            })
        );
        let unknown: Decisions = [("zz".into(), approve.clone())].into();
        assert!(matches!(
            check_decisions(&pending, &unknown),
            Err(DecisionError::UnknownCall { .. })
        ));
        let swapped: Decisions = [("a".into(), answer), ("q".into(), approve)].into();
        assert!(matches!(
            check_decisions(&pending, &swapped),
            Err(DecisionError::Unfit { .. })
        ));
        let bad_args: Decisions = [
            (
                "a".into(),
                Decision::Approve {
                    arguments: Some(json!([1])),
                },
            ),
            (
                "q".into(),
                Decision::Reject {
                    reason: String::new(),
                },
            ),
        ]
        .into();
        assert!(matches!(
            check_decisions(&pending, &bad_args),
            Err(DecisionError::Unfit { .. })
        ));
        assert_eq!(check_decisions(&[], &ok), Err(DecisionError::NotWaiting));
    }
}
