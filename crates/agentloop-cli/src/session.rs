//! One stored conversation of the CLI and its turns: sending a message,
//! resuming a waiting run with decisions, cancelling it, streaming each
//! turn to the terminal view, and Ctrl-C cancelling the turn in progress.
//! `chat` (piped) and `repl` (a terminal) drive it.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use agentloop_engine::strategy::NativeStrategy;
use agentloop_engine::{Handoffs, LoopStrategy};
use agentloop_runtime::{ChatRuntime, ChatSettings};
use agentloop_storage::model::{Chat, Project, now_millis};
use agentloop_storage::{StorageError, Store};
use agentloop_types::{
    CancellationToken, Decisions, Hooks, LoopStatus, Message, ModelProvider, PendingCall,
    Retriever, RunInput, TokenTotals, Tool,
};
use futures::StreamExt;

use crate::out::{Failure, Stdout, Style};
use crate::render;
use crate::typed::TypedLines;

/// Id of the project the CLI keeps its chats in.
pub const CLI_PROJECT: &str = "cli";

/// The title a chat has until its first message names it.
const UNTITLED: &str = "agentloop chat";

/// How many characters of the first message a title keeps.
const TITLE_CHARS: usize = 60;

/// A title from a chat's first message: its first line, shortened.
fn title_from(text: &str) -> String {
    crate::render::shorten(text.trim().lines().next().unwrap_or_default(), TITLE_CHARS)
}

/// The title to show for `chat`: its own, else one from its first user
/// message (chats stored before titles were taken from it).
pub fn title(chat: &Chat, messages: &[agentloop_storage::model::StoredMessage]) -> String {
    if chat.title != UNTITLED {
        return chat.title.clone();
    }
    messages
        .iter()
        .find(|stored| stored.message.role == agentloop_types::Role::User)
        .map(|stored| stored.message.text())
        .filter(|text| !text.trim().is_empty())
        .map_or_else(|| chat.title.clone(), |text| title_from(&text))
}

/// The chat `id` (created when missing), or a new chat.
pub async fn chat_for(
    store: &Arc<dyn Store>,
    id: Option<&str>,
    settings: &ChatSettings,
) -> Result<Chat, String> {
    if let Some(id) = id {
        match store.get_chat(id).await {
            Ok(chat) => return Ok(chat),
            Err(StorageError::NotFound { .. }) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let now = now_millis();
    match store.get_project(CLI_PROJECT).await {
        Ok(_) => {}
        Err(StorageError::NotFound { .. }) => store
            .create_project(&Project {
                id: CLI_PROJECT.to_owned(),
                name: "agentloop cli".to_owned(),
                settings: serde_json::json!({}),
                approval_mode: None,
                created_at: now,
                updated_at: now,
            })
            .await
            .map_err(|e| e.to_string())?,
        Err(e) => return Err(e.to_string()),
    }
    let chat = Chat {
        id: id.map_or_else(|| agentloop_runtime::ids::new_id("chat"), str::to_owned),
        project_id: CLI_PROJECT.to_owned(),
        title: UNTITLED.to_owned(),
        settings: serde_json::to_value(settings).map_err(|e| e.to_string())?,
        totals: Default::default(),
        minion: None,
        created_at: now,
        updated_at: now,
    };
    store.create_chat(&chat).await.map_err(|e| e.to_string())?;
    Ok(chat)
}

/// Titles chat `chat_id`, still untitled after its first message, `text`.
pub async fn name_after(store: &Arc<dyn Store>, chat_id: &str, text: &str) -> Result<(), Failure> {
    let mut chat = store.get_chat(chat_id).await.map_err(|e| e.to_string())?;
    if chat.title != UNTITLED {
        return Ok(());
    }
    chat.title = title_from(text);
    store
        .update_chat(&chat)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))
}

/// What a suspended status waits for; nothing for any other status.
pub fn waiting_on(status: &LoopStatus) -> Vec<PendingCall> {
    match status {
        LoopStatus::Suspended { pending, .. } => pending.clone(),
        _ => Vec::new(),
    }
}

/// One conversation: where it is stored and what its turns run with.
pub struct Session {
    /// The database.
    pub store: Arc<dyn Store>,
    /// The model provider.
    pub provider: Arc<dyn ModelProvider>,
    /// The tools offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The chat.
    pub chat_id: String,
    /// The settings a new chat gets.
    pub settings: ChatSettings,
    /// Command hooks from the configuration, asked by every run.
    pub hooks: Hooks,
    /// The agents runs hand off between (from the configuration's agents).
    pub handoffs: Option<Handoffs>,
    /// What recalls the stored memories a turn's message is about, as the
    /// turn starts.
    pub recall: Option<Arc<dyn Retriever>>,
    /// How many steps each run keeps.
    pub keep_steps: agentloop_storage::StepRetention,
    json: bool,
    /// Stdout is not a terminal: it gets each turn's answer alone, the
    /// view goes to stderr.
    answer_only: bool,
    view: render::View,
    /// Installed at the first need: the line editor sets up its own
    /// signal handling when it starts, and must not replace this one.
    interrupts: Option<Interrupts>,
    /// The MCP servers whose tools are offered (their prompts are the
    /// REPL's); kept for the session, which stops them when it ends.
    pub mcp: agentloop_mcp::McpServers,
}

/// What one turn does.
/// Every Ctrl-C from the moment the chat starts, in order, so none is lost
/// between turns: one during a turn cancels it, one while waiting for input
/// ends a piped chat.
pub struct Interrupts {
    received: futures::channel::mpsc::UnboundedReceiver<()>,
}

impl Interrupts {
    /// Starts listening; returns once the listener is installed.
    async fn listen() -> Self {
        let (sender, received) = futures::channel::mpsc::unbounded();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if sender.unbounded_send(()).is_err() {
                    break;
                }
            }
        });
        // The listener subscribes when first polled: let it run once.
        tokio::task::yield_now().await;
        Self { received }
    }

    /// The next Ctrl-C.
    pub async fn next(&mut self) -> Option<()> {
        self.received.next().await
    }
}

impl Session {
    /// A session on chat `chat_id`; `json` prints every event as a JSON
    /// line instead of the terminal view.
    pub fn new(
        store: Arc<dyn Store>,
        provider: Arc<dyn ModelProvider>,
        tools: Vec<Arc<dyn Tool>>,
        chat_id: String,
        settings: ChatSettings,
        json: bool,
    ) -> Self {
        let answer_only = !std::io::stdout().is_terminal();
        Self {
            store,
            provider,
            tools,
            chat_id,
            settings,
            hooks: Hooks::default(),
            handoffs: None,
            recall: None,
            keep_steps: agentloop_storage::StepRetention::default(),
            json,
            answer_only,
            view: render::View::new(if answer_only {
                Style::stderr()
            } else {
                Style::stdout()
            }),
            interrupts: None,
            mcp: agentloop_mcp::McpServers::default(),
        }
    }

    /// The Ctrl-C listener, installed on first use; give it back with
    /// [`Session::keep_interrupts`].
    pub async fn take_interrupts(&mut self) -> Interrupts {
        match self.interrupts.take() {
            Some(interrupts) => interrupts,
            None => Interrupts::listen().await,
        }
    }

    /// Gives back the Ctrl-C listener taken with
    /// [`Session::take_interrupts`].
    pub fn keep_interrupts(&mut self, interrupts: Interrupts) {
        self.interrupts = Some(interrupts);
    }

    /// Sends one user message and streams the reply; Ctrl-C meanwhile
    /// cancels the turn (the run is then stored `cancelled`).
    pub async fn send(&mut self, text: String) -> Result<LoopStatus, Failure> {
        name_after(&self.store, &self.chat_id, &text).await?;
        let message = Message::user_text(agentloop_runtime::ids::new_id("user"), text);
        self.turn(RunInput::start(message), None).await
    }

    /// [`Session::send`], with the lines typed while the turn runs handed
    /// to its run: each is stored at once and taken at the run's next
    /// step; those the run ended before taking start one more turn.
    pub async fn send_typed(
        &mut self,
        text: String,
        typed: &mut TypedLines,
    ) -> Result<LoopStatus, Failure> {
        name_after(&self.store, &self.chat_id, &text).await?;
        let message = Message::user_text(agentloop_runtime::ids::new_id("user"), text);
        let mut status = self.turn(RunInput::start(message), Some(typed)).await?;
        while matches!(status, LoopStatus::Complete { .. })
            && !self
                .runtime()
                .queued(&self.chat_id)
                .await
                .map_err(|e| Failure::Runtime(e.to_string()))?
                .is_empty()
        {
            status = self.turn(RunInput::start(None), Some(typed)).await?;
        }
        Ok(status)
    }

    /// Resumes the chat's waiting run with a person's decisions and
    /// streams what follows.
    pub async fn resume(&mut self, decisions: Decisions) -> Result<LoopStatus, Failure> {
        self.turn(RunInput::Decide { decisions }, None).await
    }

    /// Continues the chat's interrupted run from its last checkpoint and
    /// streams what follows.
    pub async fn continue_interrupted(&mut self) -> Result<LoopStatus, Failure> {
        self.turn(RunInput::start(None), None).await
    }

    /// Cancels the chat's waiting run: its pending calls are closed.
    pub async fn cancel_waiting(&mut self) -> Result<LoopStatus, Failure> {
        self.turn(RunInput::Cancel {}, None).await
    }

    /// What the chat's waiting run (if any) waits for.
    pub async fn pending(&self) -> Result<Vec<PendingCall>, Failure> {
        self.runtime()
            .pending(&self.chat_id)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))
    }

    /// The runtime a turn runs on: the session's tools, hooks and agents.
    fn runtime(&self) -> ChatRuntime {
        let runtime = ChatRuntime::new(self.store.clone(), self.provider.clone())
            .with_step_retention(self.keep_steps)
            .with_tools(self.tools.clone())
            .with_hooks(self.hooks.clone())
            .with_strategy(strategy(self.recall.clone()));
        match &self.handoffs {
            Some(handoffs) => runtime.with_handoffs(handoffs.clone()),
            None => runtime,
        }
    }

    /// Whether a person is asked about pending calls (the REPL): the view
    /// then leaves them to the prompt.
    pub fn set_asking(&mut self, asking: bool) {
        self.view.set_asking(asking);
    }

    async fn turn(
        &mut self,
        input: RunInput,
        mut typed: Option<&mut TypedLines>,
    ) -> Result<LoopStatus, Failure> {
        // A runtime per turn: its token, once cancelled, stays cancelled.
        let cancel = CancellationToken::new();
        let mut interrupts = self.take_interrupts().await;
        let runtime = self.runtime().with_cancel(cancel.clone());
        let mut stdout = Stdout::new();
        let mut stderr = std::io::stderr();
        let mut failure = None;
        let started = Box::pin(runtime.submit(&self.chat_id, input))
            .await
            .map(|submitted| {
                submitted
                    .into_run()
                    .ok_or_else(|| "the chat has no run to continue".to_owned())
            });
        let mut run = match started {
            Ok(Ok(run)) => run,
            Ok(Err(nothing)) => {
                self.keep_interrupts(interrupts);
                return Err(Failure::Runtime(nothing));
            }
            Err(e) => {
                self.keep_interrupts(interrupts);
                return Err(e.to_string().into());
            }
        };
        let mut status = None;
        let ended = loop {
            // `biased`: a Ctrl-C already received cancels before the run
            // makes any more progress.
            let event = tokio::select! {
                biased;
                Some(()) = interrupts.next(), if !cancel.is_cancelled() => {
                    cancel.cancel();
                    continue;
                }
                line = next_typed(&mut typed) => {
                    let message =
                        Message::user_text(agentloop_runtime::ids::new_id("user"), line);
                    match runtime.enqueue(&self.chat_id, message).await {
                        Ok(()) => crate::out::note("queued: the agent takes it at its next step"),
                        Err(e) => {
                            failure.get_or_insert(Failure::Runtime(e.to_string()));
                        }
                    }
                    continue;
                }
                event = run.next() => event,
            };
            let event = match event {
                None => break Ok(()),
                Some(Err(e)) => break Err(e),
                Some(Ok(event)) => event,
            };
            let written = if self.json {
                serde_json::to_string(&event)
                    .map_err(|e| Failure::Runtime(e.to_string()))
                    .and_then(|l| stdout.line(l))
            } else {
                let sink: &mut dyn Write = if self.answer_only {
                    &mut stderr
                } else {
                    &mut stdout
                };
                self.view
                    .event(&mut render::Sinks::one(sink), &event)
                    .map_err(Failure::from_io)
            };
            if let Err(e) = written {
                failure.get_or_insert(e);
            }
            if let Some(result) = event.into_root_result() {
                if self.answer_only
                    && !self.json
                    && let Some(answer) = crate::run::answer(&result)
                    && let Err(e) = stdout.line(answer)
                {
                    failure.get_or_insert(e);
                }
                status = Some(result.status);
            }
        };
        self.keep_interrupts(interrupts);
        ended.map_err(|e| e.to_string())?;
        if let Some(e) = failure {
            return Err(e);
        }
        stdout.flush().map_err(Failure::from_io)?;
        status.ok_or_else(|| Failure::Runtime("the run ended without a result".to_owned()))
    }

    /// Starts a new chat with the same settings; returns its id.
    pub async fn new_chat(&mut self) -> Result<String, Failure> {
        let chat = chat_for(&self.store, None, &self.settings).await?;
        self.chat_id = chat.id.clone();
        Ok(chat.id)
    }

    /// The model the chat's turns use.
    pub async fn model(&self) -> Result<Option<String>, Failure> {
        let chat = self
            .store
            .get_chat(&self.chat_id)
            .await
            .map_err(|e| e.to_string())?;
        let settings: ChatSettings = serde_json::from_value(chat.settings).unwrap_or_default();
        Ok(settings.loop_settings.model)
    }

    /// Switches the chat's model for the next turns.
    pub async fn set_model(&mut self, model: &str) -> Result<(), Failure> {
        let mut chat = self
            .store
            .get_chat(&self.chat_id)
            .await
            .map_err(|e| e.to_string())?;
        let mut settings: ChatSettings =
            serde_json::from_value(chat.settings.clone()).unwrap_or_default();
        settings.loop_settings.model = Some(model.to_owned());
        self.settings.loop_settings.model = Some(model.to_owned());
        chat.settings = serde_json::to_value(&settings).map_err(|e| e.to_string())?;
        chat.updated_at = now_millis();
        self.store
            .update_chat(&chat)
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The chat's token and cost totals.
    pub async fn totals(&self) -> Result<TokenTotals, Failure> {
        let chat = self
            .store
            .get_chat(&self.chat_id)
            .await
            .map_err(|e| e.to_string())?;
        Ok(chat.totals)
    }
}

/// The next line typed while a turn runs; never, when nothing reads them.
async fn next_typed(typed: &mut Option<&mut TypedLines>) -> String {
    match typed {
        Some(typed) => typed.next().await,
        None => std::future::pending().await,
    }
}

/// The loop a chat's turns run: the native one, recalling with `recall`
/// first when there is one.
pub fn strategy(recall: Option<Arc<dyn Retriever>>) -> Arc<dyn LoopStrategy> {
    Arc::new(NativeStrategy {
        retriever: recall,
        ..NativeStrategy::default()
    })
}
