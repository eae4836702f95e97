//! The MCP side of the server: the one tool, its arguments and result, and
//! a cancelled request cancelling the run.

use std::sync::Arc;

use agentloop_types::CancellationToken;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value, json};

use super::caller::Caller;
use super::host::{AgentHost, AskOutcome, AskRequest};
use super::rounds::{Call, Parked, Round};

/// The name of the tool that asks the agent.
pub const ASK_TOOL: &str = "ask";

/// An [`AgentHost`] as an MCP server handler.
#[derive(Clone)]
pub struct AgentServer {
    host: Arc<dyn AgentHost>,
    /// Calls waiting for the client's next round; shared by the clones
    /// that serve each HTTP request.
    parked: Parked,
}

impl AgentServer {
    /// Serves `host`.
    pub fn new(host: Arc<dyn AgentHost>) -> Self {
        Self {
            host,
            parked: Parked::default(),
        }
    }

    fn ask_tool(&self) -> Tool {
        let (_, description) = self.host.describe();
        let input = json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The message to the agent."},
                "chat_id": {
                    "type": "string",
                    "description": "The conversation to continue (from an earlier answer's chat_id, or an id of your own for a new one); leave out to start one. While a call on this chat still runs, the prompt is queued for it: the agent reads it at its next step, and this call answers at once with status `queued`."
                }
            },
            "required": ["prompt"],
            "additionalProperties": false
        });
        let output = json!({
            "type": "object",
            "properties": {
                "chat_id": {"type": "string"},
                "status": {"type": "string"},
                "answer": {"type": "string"},
                "output": {},
                "refused": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["chat_id", "status"]
        });
        let mut tool = Tool::new(ASK_TOOL, description, object(input));
        tool.output_schema = Some(Arc::new(object(output)));
        tool
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The request's arguments, or what is wrong with them.
fn parse(arguments: Option<&Map<String, Value>>) -> Result<AskRequest, String> {
    let empty = Map::new();
    let arguments = arguments.unwrap_or(&empty);
    if let Some(unknown) = arguments
        .keys()
        .find(|k| k.as_str() != "prompt" && k.as_str() != "chat_id")
    {
        return Err(format!(
            "unknown argument `{unknown}`: the ask tool takes `prompt` and `chat_id`"
        ));
    }
    let prompt = match arguments.get("prompt") {
        Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
        Some(Value::String(_)) => return Err("`prompt` is empty".to_owned()),
        Some(_) => return Err("`prompt` must be a string".to_owned()),
        None => return Err("`prompt` is required".to_owned()),
    };
    let chat_id = match arguments.get("chat_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if !id.trim().is_empty() => Some(id.clone()),
        Some(_) => return Err("`chat_id` must be a non-empty string".to_owned()),
    };
    Ok(AskRequest { prompt, chat_id })
}

fn result(outcome: AskOutcome, refusals: Vec<String>) -> CallToolResult {
    let text = outcome
        .answer
        .clone()
        .unwrap_or_else(|| match &outcome.output {
            Some(value) => value.to_string(),
            None => format!("the run ended: {}", outcome.status),
        });
    let mut structured = json!({"chat_id": outcome.chat_id, "status": outcome.status});
    if let Some(answer) = outcome.answer {
        structured["answer"] = Value::String(answer);
    }
    if let Some(output) = outcome.output {
        structured["output"] = output;
    }
    let mut content = vec![ContentBlock::text(text)];
    if !refusals.is_empty() {
        content.push(ContentBlock::text(refusals.join("\n")));
        structured["refused"] = json!(refusals);
    }
    let mut result = if outcome.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = Some(structured);
    result
}

fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

impl ServerHandler for AgentServer {
    fn get_info(&self) -> InitializeResult {
        let (name, description) = self.host.describe();
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(name, env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "{description} Call `{ASK_TOOL}` with a prompt; pass the answer's chat_id to go on with the conversation."
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.ask_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != ASK_TOOL {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`: this server offers `{ASK_TOOL}`",
                    request.name
                ),
                None,
            ));
        }
        let round = match &request.request_state {
            Some(handle) => self
                .parked
                .resume(
                    handle,
                    request.input_responses.clone().unwrap_or_default(),
                    &context,
                )
                .await
                .ok_or_else(|| {
                    ErrorData::invalid_params(
                        "unknown requestState: the call it continued has ended or was left too long",
                        None,
                    )
                })?,
            None => {
                let ask = match parse(request.arguments.as_ref()) {
                    Ok(ask) => ask,
                    Err(message) => return Ok(failure(message).into()),
                };
                let (rounds, inputs) = tokio::sync::mpsc::channel(1);
                let caller = Arc::new(Caller::new(&context, rounds, CancellationToken::new()));
                let run = self.host.ask(ask, caller.clone());
                self.parked
                    .first(Call::start(run, caller, inputs), &context)
                    .await
            }
        };
        Ok(match round {
            Round::InputRequired(forms) => forms.into(),
            Round::Done(Ok(outcome), caller) => result(outcome, caller.refusals()).into(),
            Round::Done(Err(error), _) => failure(error.message).into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        object(value)
    }

    #[test]
    fn a_prompt_and_a_chat_are_read() {
        let ask = parse(Some(&args(json!({"prompt": "hi", "chat_id": "c1"})))).ok();
        assert_eq!(
            ask,
            Some(AskRequest {
                prompt: "hi".into(),
                chat_id: Some("c1".into())
            })
        );
    }

    #[test]
    fn bad_arguments_are_named() {
        assert_eq!(parse(None), Err("`prompt` is required".to_owned()));
        assert_eq!(
            parse(Some(&args(json!({"prompt": 3})))),
            Err("`prompt` must be a string".to_owned())
        );
        let unknown = parse(Some(&args(json!({"prompt": "x", "model": "y"}))));
        assert!(unknown.is_err_and(|e| e.contains("`model`")));
    }
}
