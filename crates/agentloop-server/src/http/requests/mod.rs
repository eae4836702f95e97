//! The request bodies of the API, one type each, as they arrive on the
//! wire (seed 004's names: `agentType`, `repoFolder`, ...). Deserializing
//! checks the shape; what depends on the server or the store (a folder, a
//! project MCP server, a length) is checked by the use case after.
//!
//! A body the server owns refuses unknown fields; the bodies seed 004
//! and earlier clients send (a run's start, a task, a project, a sign-in,
//! a document, Mark Done) ignore them, as they always have.

mod accounts;
mod body;
mod decisions;
mod projects;
mod runs;
mod tasks;

pub use accounts::*;
pub use body::*;
pub use decisions::*;
pub use projects::*;
pub use runs::*;
pub use tasks::*;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use serde_json::Value;

    use super::super::extract::from_body;
    use super::*;

    fn refused<T: RequestBody + std::fmt::Debug>(body: Value) -> String {
        from_body::<T>(body)
            .expect_err("refused")
            .message()
            .to_owned()
    }

    #[test]
    fn a_refused_body_names_the_field_and_what_it_must_be_in_the_apis_words() {
        assert_eq!(
            refused::<NewTask>(json!({"title": 3})),
            "title must be a string"
        );
        assert_eq!(
            refused::<NewTask>(json!({"title": "t", "description": []})),
            "description must be a string"
        );
        assert_eq!(
            refused::<WebhooksChange>(json!({"urls": "x"})),
            "urls must be an array"
        );
        assert_eq!(
            refused::<WebhooksChange>(json!({"urls": [1]})),
            "urls[0] must be a string"
        );
        assert!(
            refused::<WebhooksChange>(json!({"urls": [], "colour": 1}))
                .starts_with("unknown field `colour`")
        );
        assert_eq!(
            refused::<Decisions>(json!({"decisions": [{"decision": "approve"}]})),
            "decisions[0]: call_id is required"
        );
        assert!(
            refused::<Decisions>(json!({"decisions": [{"call_id": "c", "decision": "maybe"}]}))
                .starts_with("decisions[0]: decision: unknown decision `maybe`")
        );
        assert_eq!(
            refused::<Decisions>(
                json!({"decisions": [{"call_id": "c", "decision": "approve", "arguments": [1]}]})
            ),
            "decisions[0]: arguments must be a JSON object"
        );
        assert!(
            refused::<Decisions>(
                json!({"decisions": [{"call_id": "c", "decision": "approve", "x": 1}]})
            )
            .starts_with("decisions[0]: unknown field `x`")
        );
        assert!(
            refused::<ProjectChange>(json!({"shell_quota": {"max_write_mb": -1}}))
                .starts_with("shell_quota: max_write_mb")
        );
        assert!(
            refused::<ProjectChange>(json!({"approvals": "sometimes"}))
                .starts_with("approvals must be \"ask\"")
        );
        // A nested struct is an object, never an array.
        assert_eq!(
            refused::<ProjectChange>(json!({"shell_quota": [null, null]})),
            "shell_quota must be a JSON object"
        );
        assert_eq!(
            refused::<Decisions>(json!({"decisions": [["c", "approve"]]})),
            "decisions[0] must be a JSON object"
        );
        // The seed's bodies keep the seed's messages.
        assert_eq!(
            refused::<NewAgentRun>(json!({"agentType": "x"})),
            INVALID_AGENT_TYPE
        );
        assert_eq!(
            refused::<WorkflowComplete>(json!({"complete": "yes"})),
            "complete must be a boolean"
        );
    }

    #[test]
    fn a_refusal_names_no_rust_type() {
        for message in [
            refused::<NewProject>(json!({"shell_quota": 3})),
            refused::<Decisions>(json!({"decisions": [3]})),
            refused::<NewProject>(json!({"shell_quota": {"max_write_files": 1.5}})),
        ] {
            for rust in ["struct", "ShellQuota", "DecisionInput", "u64", "Option"] {
                assert!(!message.contains(rust), "{message}");
            }
        }
    }

    #[test]
    fn a_change_tells_absent_from_null() {
        let change: ProjectChange = from_body(json!({"shell_quota": null})).unwrap();
        assert_eq!(change.shell_quota, Change::Clear);
        assert_eq!(change.agents, Change::Keep);
        let created: NewProject =
            from_body(json!({"name": "p", "repo_folder": "r", "extra": 1})).unwrap();
        assert_eq!(created.repo_folder.as_deref(), Some("r"));
    }
}
