//! How a run with an output schema finishes (see
//! [`output`](crate::machine::output)): the run core checks the final
//! answer and completes, retries or ends the run.

use agentloop_types::{
    ContentBlock, FINAL_OUTPUT_TOOL, LoopError, LoopStatus, Role, StopReason, ToolResultBlock,
    ToolUseBlock,
};

use super::{Env, RunCore, ToolOffer};
use crate::machine::output::{Check, check_text, check_value, feedback};
use crate::machine::protocol::Step;

impl RunCore {
    /// The run's answer turn ended with `text` and no tool call: completes
    /// the run, with the validated `output` when it has an output schema.
    /// An answer that does not fit is sent back with `retry` offered.
    pub(crate) fn finish_answer(
        &mut self,
        env: &Env,
        text: &str,
        stop_reason: &StopReason,
        retry: ToolOffer,
    ) -> Step {
        // With an output schema the hooks see the answer once it is
        // validated (in `complete_answer`).
        if env.output.is_none()
            && !matches!(stop_reason, StopReason::Refusal { .. })
            && let Some(step) = self.end_hooks(env, text, None, stop_reason, &retry)
        {
            return step;
        }
        self.complete_answer(env, text, stop_reason, retry)
    }

    /// Completes with the validated `output`, once the `run_end` hooks
    /// (output guardrails among them) let it.
    fn complete_output(
        &mut self,
        env: &Env,
        text: &str,
        output: serde_json::Value,
        stop_reason: &StopReason,
        retry: &ToolOffer,
    ) -> Step {
        if let Some(step) = self.end_hooks(env, text, Some(&output), stop_reason, retry) {
            return step;
        }
        self.finish(LoopStatus::Complete {
            return_value: None,
            output: Some(output),
        })
    }

    /// [`finish_answer`](Self::finish_answer) once the `run_end` hooks let
    /// the run end.
    pub(crate) fn complete_answer(
        &mut self,
        env: &Env,
        text: &str,
        stop_reason: &StopReason,
        retry: ToolOffer,
    ) -> Step {
        let Some(rules) = &env.output else {
            return self.finish(LoopStatus::Complete {
                return_value: None,
                output: None,
            });
        };
        if let StopReason::Refusal { details } = stop_reason {
            let error = LoopError::Refused {
                details: details.clone(),
            };
            return self.finish(LoopStatus::Error { error });
        }
        match check_text(&rules.schema, text) {
            Check::Valid(value) => self.complete_output(env, text, value, stop_reason, &retry),
            Check::Invalid { answer, errors } => {
                if self.output_retries >= rules.schema.max_retries {
                    return self.output_invalid(answer, errors);
                }
                self.output_retries += 1;
                let text = feedback(rules, &errors);
                self.commit(Role::User, vec![ContentBlock::text(text)]);
                self.call_model(env, Vec::new(), retry, true)
            }
        }
    }

    /// A committed turn whose calls include `final_output` (in tool mode):
    /// every call of the turn is answered without running, and the call's
    /// input is the answer. `None` when the turn did not call it.
    pub(crate) fn final_output_called(
        &mut self,
        env: &Env,
        calls: &[ToolUseBlock],
        stop_reason: &StopReason,
    ) -> Option<Step> {
        let rules = env.output.as_deref().filter(|r| r.tool().is_some())?;
        let call = calls.iter().find(|c| c.name == FINAL_OUTPUT_TOOL)?.clone();
        let refused = matches!(stop_reason, StopReason::Refusal { .. });
        let answer = serde_json::to_string(&call.input).unwrap_or_default();
        let check = check_value(&rules.schema, call.input.value(), answer.clone());
        let own_result = match &check {
            _ if refused => ToolResultBlock::error(&call.id, "Not accepted: the model refused."),
            Check::Valid(_) => ToolResultBlock::ok(&call.id, "Output accepted."),
            Check::Invalid { errors, .. } => {
                ToolResultBlock::error(&call.id, feedback(rules, errors))
            }
        };
        let other = if matches!(check, Check::Valid(_)) {
            "Not run: the run ended with its final output."
        } else {
            "Not run: the turn called final_output; call it alone once its input fits."
        };
        let results = calls
            .iter()
            .map(|c| {
                if c.id == call.id {
                    own_result.clone()
                } else {
                    ToolResultBlock::error(&c.id, other)
                }
            })
            .collect();
        let id = self.next_id();
        self.commit_results(id, results);
        if let StopReason::Refusal { details } = stop_reason {
            let error = LoopError::Refused {
                details: details.clone(),
            };
            return Some(self.finish(LoopStatus::Error { error }));
        }
        Some(match check {
            Check::Valid(value) => {
                self.complete_output(env, &answer, value, stop_reason, &ToolOffer::RunTools)
            }
            Check::Invalid { answer, errors } => {
                if self.output_retries >= rules.schema.max_retries {
                    self.output_invalid(answer, errors)
                } else {
                    self.output_retries += 1;
                    self.call_model(env, Vec::new(), ToolOffer::RunTools, true)
                }
            }
        })
    }

    fn output_invalid(&mut self, answer: String, errors: Vec<String>) -> Step {
        let error = LoopError::OutputInvalid { answer, errors };
        self.finish(LoopStatus::Error { error })
    }
}
