//! The `shell` tool run in the editor's terminal (ACP `terminal/*`) when
//! the client offers one: the person watches the command in the editor,
//! which runs it outside agentloop's sandbox, so every call is asked
//! unless `--approve` says otherwise. The command's folder is checked by
//! the session's jail; its time limit is the sandboxed tool's.

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest, SessionId,
    SessionNotification, SessionUpdate, Terminal, TerminalExitStatus, TerminalId,
    TerminalOutputRequest, TerminalOutputResponse, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields, WaitForTerminalExitRequest,
};
use agentloop_tools::schema::{definition_of, shared_input_schema};
use agentloop_tools::shell::{ShellInput, ShellLimits};
use agentloop_tools::vfs::DirJail;
use agentloop_types::{
    ApprovalPolicy, Tool, ToolContext, ToolDefinition, ToolResult, ToolStream, parse_input,
    single_result,
};
use serde_json::Value;

const DESCRIPTION: &str = "Run a shell command (`/bin/sh -c`) in the editor's terminal, in a \
folder of the project; the person sees it run. The result gives the exit code (or the signal, or \
that the command was stopped at its time limit) and its output (the editor may cut long output, \
and says so).";

/// Output the editor is asked to keep of one command.
const OUTPUT_LIMIT: u64 = 64 * 1024;

/// `shell` on the editor's terminal.
pub struct EditorShell {
    pub jail: Arc<DirJail>,
    pub cx: ConnectionTo<Client>,
    pub session: SessionId,
}

impl Tool for EditorShell {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_input_schema::<ShellInput>())
    }

    fn definition(&self) -> ToolDefinition {
        definition_of::<ShellInput>(self)
    }

    /// A command can do anything the person's account can: every call is
    /// asked.
    fn approval(&self) -> ApprovalPolicy {
        ApprovalPolicy::Always
    }

    fn may_write(&self, _input: &Value) -> bool {
        true
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        single_result(async move {
            let input: ShellInput = match parse_input(input) {
                Ok(input) => input,
                Err(refused) => return refused,
            };
            self.run(input, &context)
                .await
                .unwrap_or_else(|e| ToolResult::error(format!("the editor's terminal failed: {e}")))
        })
    }
}

/// How a command run in the terminal ended.
enum Ended {
    Exited(TerminalExitStatus),
    Stopped(&'static str),
}

impl EditorShell {
    async fn run(
        &self,
        input: ShellInput,
        context: &ToolContext,
    ) -> Result<ToolResult, agent_client_protocol::Error> {
        let folder = input.cwd.as_deref().unwrap_or("/");
        let cwd = match self.jail.resolve_host(folder, true) {
            Ok(cwd) => cwd,
            Err(e) => return Ok(ToolResult::error(e.to_string())),
        };
        let created = self
            .cx
            .send_request(
                CreateTerminalRequest::new(self.session.clone(), "/bin/sh")
                    .args(vec!["-c".to_owned(), input.command])
                    .cwd(cwd)
                    .output_byte_limit(OUTPUT_LIMIT),
            )
            .block_task()
            .await?;
        let id = created.terminal_id;
        // The call shows the terminal while the command runs.
        self.cx.send_notification(SessionNotification::new(
            self.session.clone(),
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                context.tool_use_id.clone(),
                ToolCallUpdateFields::new()
                    .content(vec![ToolCallContent::Terminal(Terminal::new(id.clone()))]),
            )),
        ))?;
        let watched = self.watch(&id, input.timeout_secs, context).await;
        // Released whatever happened, so the editor frees the terminal.
        let released = self
            .cx
            .send_request(ReleaseTerminalRequest::new(self.session.clone(), id))
            .block_task()
            .await;
        let (ended, output) = watched?;
        released?;
        let mut text = match &ended {
            Ended::Exited(status) => match (status.exit_code, &status.signal) {
                (Some(code), _) => format!("exit code {code}"),
                (None, Some(signal)) => format!("killed by {signal}"),
                (None, None) => "ended".to_owned(),
            },
            Ended::Stopped(why) => format!("stopped: {why}"),
        };
        if output.truncated {
            text.push_str(" (the output's start was cut)");
        }
        text.push('\n');
        text.push_str(&output.output);
        let failed = !matches!(&ended, Ended::Exited(status) if status.exit_code == Some(0));
        Ok(if failed {
            ToolResult::error(text)
        } else {
            ToolResult::ok(text)
        })
    }

    /// How the command ended, and its output.
    async fn watch(
        &self,
        id: &TerminalId,
        timeout_secs: Option<u64>,
        context: &ToolContext,
    ) -> Result<(Ended, TerminalOutputResponse), agent_client_protocol::Error> {
        let ended = self.wait(id, timeout_secs, context).await?;
        let output = self
            .cx
            .send_request(TerminalOutputRequest::new(self.session.clone(), id.clone()))
            .block_task()
            .await?;
        Ok((ended, output))
    }

    /// Waits for the command's end; kills it at the time limit or when the
    /// run is cancelled.
    async fn wait(
        &self,
        id: &TerminalId,
        timeout_secs: Option<u64>,
        context: &ToolContext,
    ) -> Result<Ended, agent_client_protocol::Error> {
        let limit = ShellLimits::default().timeout;
        let timeout = timeout_secs
            .map(std::time::Duration::from_secs)
            .map_or(limit, |asked| asked.min(limit));
        let exited = self
            .cx
            .send_request(WaitForTerminalExitRequest::new(
                self.session.clone(),
                id.clone(),
            ))
            .block_task();
        let stopped = tokio::select! {
            exited = exited => return Ok(Ended::Exited(exited?.exit_status)),
            () = context.cancel.cancelled() => "cancelled",
            () = tokio::time::sleep(timeout) => "time limit",
        };
        self.cx
            .send_request(KillTerminalRequest::new(self.session.clone(), id.clone()))
            .block_task()
            .await?;
        Ok(Ended::Stopped(stopped))
    }
}
