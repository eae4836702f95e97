//! The end-of-run extraction step: a `run_end` hook that asks the model
//! what of the run is worth remembering and writes each proposal as a
//! memory of a scope, with the run and step it came from.
//!
//! Off unless a host registers it (a project's `memory_extraction`
//! setting on the server, `--extract-memories` on the command line). Its
//! `hook` event notes what it wrote. The proposals of run `R` are kept
//! under `/memories/extracted/R/`; a hook asked again about a run whose
//! folder holds memories (the process stopped after it wrote them, before
//! its answer was stored) writes nothing and makes no model call, so a
//! run's memories are never extracted twice. Given the run's budget
//! ([`MemoryExtraction::with_budget`]), its model call is reserved and
//! settled like the run's own; a refusal extracts nothing.

use std::sync::Arc;

use agentloop_types::{
    Budget, BudgetCall, ContentBlock, Hook, HookDecision, HookError, HookInput, HookPoint, Message,
    ModelChunk, ModelProvider, ModelRequest, RequestOptions, Role, Spend, StreamAssembler,
};
use futures::StreamExt;

use crate::model::{MemoryRecord, MemoryScope, now_millis};
use crate::store::{MemoriesStore, RuntimeStore};

/// The hook's name, in its `hook` events.
pub const EXTRACTION_HOOK: &str = "memory_extraction";
/// The step an extracted memory names as its source within its run.
pub const EXTRACTION_STEP: &str = "memory_extraction";
/// Where the proposals of each run are kept: `/memories/extracted/{run}/`.
pub const EXTRACTED_FOLDER: &str = "/memories/extracted";

/// Most memories one run proposes; more are left out.
const MAX_MEMORIES: usize = 8;
/// Longest memory kept, in characters; longer ones are cut.
const MAX_MEMORY_CHARS: usize = 2_000;
/// How much of the run's transcript the model reads (its end is kept).
const MAX_TRANSCRIPT_CHARS: usize = 60_000;
/// How many of the scope's memories the model is shown, so it proposes
/// only what they do not hold.
const MAX_KNOWN: usize = 50;

const INSTRUCTIONS: &str = "You pick what is worth remembering from an agent's run for its \
later runs: lasting facts about the user, the project, its people, conventions, decisions and \
preferences that later work will need. Leave out what the known memories already say, what \
only mattered in this run, and secrets (passwords, keys, tokens). Answer with a JSON array of \
strings, one short self-contained memory each, and nothing else; [] when nothing is worth \
keeping.";

/// The extraction step of the runs of one chat, writing to `scope`.
pub struct MemoryExtraction<S: ?Sized> {
    store: Arc<S>,
    scope: MemoryScope,
    chat_id: String,
    provider: Arc<dyn ModelProvider>,
    request: RequestOptions,
    budget: Option<Arc<dyn Budget>>,
}

impl<S: MemoriesStore + RuntimeStore + ?Sized> MemoryExtraction<S> {
    /// Extraction for the runs of chat `chat_id` in `store`, asking
    /// `provider` with `request`'s options (its model and output cap; the
    /// system prompt is the step's own) and writing to `scope`.
    pub fn new(
        store: Arc<S>,
        scope: MemoryScope,
        chat_id: impl Into<String>,
        provider: Arc<dyn ModelProvider>,
        request: RequestOptions,
    ) -> Self {
        Self {
            store,
            scope,
            chat_id: chat_id.into(),
            provider,
            request,
            budget: None,
        }
    }

    /// Reserves the step's model call with `budget` (the run's) and
    /// settles it with what the call spent.
    pub fn with_budget(mut self, budget: Arc<dyn Budget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Extracts the memories of run `run_id`, which answered `answer`;
    /// returns what it did, in words.
    async fn extract(&self, run_id: &str, answer: &str) -> Result<String, HookError> {
        let folder = format!("{EXTRACTED_FOLDER}/{}", path_safe(run_id));
        let now = now_millis();
        let done = self
            .store
            .list_memories(&self.scope, &folder, now)
            .await
            .map_err(store_error)?;
        if !done.is_empty() {
            return Ok(format!(
                "already extracted: {}",
                paths(done.iter().map(|m| m.path.as_str()))
            ));
        }
        let messages = self
            .store
            .list_messages(&self.chat_id)
            .await
            .map_err(store_error)?;
        let messages: Vec<Message> = messages.into_iter().map(|m| m.message).collect();
        let known = self
            .store
            .list_memories(&self.scope, "/", now)
            .await
            .map_err(store_error)?;
        let prompt = prompt(&transcript(run_messages(&messages, run_id), answer), &known);
        let proposed = parse_memories(&self.ask(run_id, prompt).await?);
        if proposed.is_empty() {
            return Ok("nothing to remember".to_owned());
        }
        let mut written = Vec::with_capacity(proposed.len());
        for (n, text) in proposed.into_iter().enumerate() {
            let path = format!("{folder}/{}.md", n + 1);
            let now = now_millis();
            self.store
                .save_memory(&MemoryRecord {
                    id: format!("mem-{}-{}", path_safe(run_id), n + 1),
                    scope: self.scope.clone(),
                    path: path.clone(),
                    text,
                    source_run: Some(run_id.to_owned()),
                    source_step: Some(EXTRACTION_STEP.to_owned()),
                    created_at: now,
                    updated_at: now,
                    expires_at: None,
                })
                .await
                .map_err(store_error)?;
            written.push(path);
        }
        Ok(format!(
            "remembered {}",
            paths(written.iter().map(String::as_str))
        ))
    }

    /// The model's answer to `prompt`, as text, the call reserved with
    /// the budget of run `run_id` when there is one.
    async fn ask(&self, run_id: &str, prompt: String) -> Result<String, HookError> {
        let Some(budget) = &self.budget else {
            return self.answer(prompt).await.0;
        };
        let call = BudgetCall {
            run_id: run_id.to_owned(),
            // Not one of the run's turns: it comes after them.
            iteration: 0,
            largest_earlier: None,
            max_output_tokens: Some(self.request.max_tokens),
        };
        let hold = budget
            .reserve(&call)
            .await
            .map_err(|refusal| HookError::new(format!("nothing extracted: {refusal}")))?;
        let (answer, spent) = self.answer(prompt).await;
        if let Some(hold) = hold {
            budget.settle(hold, spent).await;
        }
        answer
    }

    /// The model's answer to `prompt`, and what the call spent (what
    /// its usage said, nothing when none came).
    async fn answer(&self, prompt: String) -> (Result<String, HookError>, Spend) {
        let options = RequestOptions {
            system_prompt: Some(INSTRUCTIONS.to_owned()),
            prefill_response: None,
            stop_sequences: Vec::new(),
            web_search_enabled: false,
            ..self.request.clone()
        };
        let request = ModelRequest {
            options,
            response_format: None,
            messages: vec![Message::user_text("memory-extraction", prompt)].into(),
            tools: Arc::new([]),
            attachments: None,
        };
        let mut stream = self.provider.stream(request);
        let mut assembler = StreamAssembler::new();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(ModelChunk::Delta(delta)) => {
                    if let Err(e) = assembler.apply(&delta) {
                        let error = HookError::new(format!("the model's answer: {e}"));
                        return (Err(error), Spend::default());
                    }
                }
                Ok(ModelChunk::Finish { usage, .. }) => {
                    let text = assembler
                        .finish()
                        .iter()
                        .filter_map(|block| match block {
                            ContentBlock::Text { text, .. } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    return (Ok(text), Spend::of(&usage));
                }
                Err(e) => {
                    let spent = e.partial.as_ref().and_then(|p| p.usage.as_ref());
                    let spent = spent.map(Spend::of).unwrap_or_default();
                    let error = HookError::new(format!("the model call failed: {e}"));
                    return (Err(error), spent);
                }
            }
        }
        let error = HookError::new("the model's answer ended early");
        (Err(error), Spend::default())
    }
}

#[async_trait::async_trait]
impl<S: MemoriesStore + RuntimeStore + ?Sized + 'static> Hook for MemoryExtraction<S> {
    fn name(&self) -> &str {
        EXTRACTION_HOOK
    }

    fn points(&self) -> Vec<HookPoint> {
        vec![HookPoint::RunEnd]
    }

    async fn call(&self, input: &HookInput) -> Result<HookDecision, HookError> {
        self.call_noted(input).await.map(|(decision, _)| decision)
    }

    async fn call_noted(
        &self,
        input: &HookInput,
    ) -> Result<(HookDecision, Option<String>), HookError> {
        let HookInput::RunEnd { run_id, answer, .. } = input else {
            return Ok((HookDecision::Pass, None));
        };
        let note = self.extract(run_id, answer).await?;
        Ok((HookDecision::Pass, Some(note)))
    }
}

fn store_error(e: crate::error::StorageError) -> HookError {
    HookError::new(format!("the memories could not be read or written: {e}"))
}

/// `id` as one path segment: letters, digits, `-`, `_` and `.` kept,
/// anything else `_`.
fn path_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn paths<'a>(paths: impl Iterator<Item = &'a str>) -> String {
    paths.collect::<Vec<_>>().join(", ")
}

/// The messages of run `run_id` in a chat's `messages`: from the person's
/// message that started it (the last one before the run's first message,
/// whose ids the run assigned: `{run_id}-…`). All of them when none is
/// the run's.
fn run_messages<'a>(messages: &'a [Message], run_id: &str) -> &'a [Message] {
    let prefix = format!("{run_id}-");
    let Some(first) = messages.iter().position(|m| m.id.starts_with(&prefix)) else {
        return messages;
    };
    let start = messages[..first]
        .iter()
        .rposition(|m| m.role == Role::User && m.tool_results().next().is_none())
        .unwrap_or(first);
    &messages[start..]
}

/// A run's messages as the model reads them, ending with its answer; the
/// end kept when it is too long.
fn transcript(messages: &[Message], answer: &str) -> String {
    let mut text = String::new();
    for message in messages {
        let role = match message.role {
            Role::User if message.tool_results().next().is_some() => "tool results",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => continue,
        };
        let mut said = message.text();
        for call in message.tool_uses() {
            said.push_str(&format!("\n[calls {} with {}]", call.name, call.input));
        }
        for result in message.tool_results() {
            said.push_str(&format!(
                "\n[result: {}]",
                keep_end(result.content.clone(), 2_000)
            ));
        }
        text.push_str(&format!("{role}: {}\n\n", said.trim()));
    }
    let answered = messages
        .last()
        .is_some_and(|m| m.role == Role::Assistant && m.text().trim() == answer.trim());
    if !answered && !answer.trim().is_empty() {
        text.push_str(&format!("assistant: {}\n", answer.trim()));
    }
    keep_end(text, MAX_TRANSCRIPT_CHARS)
}

/// The last `max` characters of `text`.
fn keep_end(text: String, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    text.chars().skip(count - max).collect()
}

/// What the model is asked: the transcript and the memories kept already.
fn prompt(transcript: &str, known: &[MemoryRecord]) -> String {
    let mut prompt = format!("The run:\n\n{transcript}\n");
    if !known.is_empty() {
        prompt.push_str("\nKnown memories:\n");
        for memory in known.iter().take(MAX_KNOWN) {
            prompt.push_str(&format!("- {}\n", memory.text.replace('\n', " ")));
        }
    }
    prompt
}

/// The memories a model's answer proposes: a JSON array of strings, read
/// from the first `[` to the last `]` (a fence or a sentence around it is
/// left out). Nothing when it holds none.
fn parse_memories(answer: &str) -> Vec<String> {
    let (Some(start), Some(end)) = (answer.find('['), answer.rfind(']')) else {
        return Vec::new();
    };
    if end < start {
        return Vec::new();
    }
    let Ok(items) = serde_json::from_str::<Vec<serde_json::Value>>(&answer[start..=end]) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .take(MAX_MEMORIES)
        .map(|text| text.chars().take(MAX_MEMORY_CHARS).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposals_are_read_from_a_json_array_in_the_answer() {
        assert_eq!(
            parse_memories("Here:\n```json\n[\"Ada takes tea\", \" \", 3, \"Port 6543\"]\n```"),
            ["Ada takes tea", "Port 6543"]
        );
        assert!(parse_memories("nothing").is_empty());
        assert!(parse_memories("] [").is_empty());
        assert!(parse_memories("[not json]").is_empty());
        let many: Vec<String> = (0..20).map(|n| format!("fact {n}")).collect();
        assert_eq!(
            parse_memories(&serde_json::to_string(&many).unwrap()).len(),
            MAX_MEMORIES
        );
    }

    #[test]
    fn a_runs_messages_start_at_the_prompt_that_started_it() {
        let messages = vec![
            Message::user_text("u1", "earlier"),
            Message::assistant_text("run-a-1", "earlier answer"),
            Message::user_text("u2", "Remember the port."),
            Message::assistant_text("run-b-1", "Noted."),
        ];
        let ids: Vec<&str> = run_messages(&messages, "run-b")
            .iter()
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, ["u2", "run-b-1"]);
        assert_eq!(run_messages(&messages, "run-z").len(), 4);
        let text = transcript(run_messages(&messages, "run-b"), "Noted.");
        assert_eq!(text, "user: Remember the port.\n\nassistant: Noted.\n\n");
    }

    /// A model that answers `answer` to every request and counts them.
    struct Answers {
        answer: String,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl ModelProvider for Answers {
        fn stream(&self, _request: ModelRequest) -> agentloop_types::ModelStream {
            use agentloop_types::{BlockStart, StopReason, StreamDelta};
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let chunks = vec![
                Ok(ModelChunk::Delta(StreamDelta::BlockStart {
                    index: 0,
                    block: BlockStart::Text,
                })),
                Ok(ModelChunk::Delta(StreamDelta::Text {
                    index: 0,
                    text: self.answer.clone(),
                })),
                Ok(ModelChunk::Finish {
                    stop_reason: StopReason::EndTurn,
                    usage: Default::default(),
                }),
            ];
            Box::pin(futures::stream::iter(chunks))
        }
    }

    /// A store holding project `p1` and its chat `c1`, one message in it.
    async fn store_with_chat() -> Arc<crate::memory::MemoryStore> {
        use crate::model::{Chat, Project};
        use crate::store::{ChatStore, ProjectStore};

        let store = Arc::new(crate::memory::MemoryStore::new());
        store
            .create_project(&Project {
                id: "p1".to_owned(),
                name: "p".to_owned(),
                settings: serde_json::json!({}),
                approval_mode: None,
                created_at: 0,
                updated_at: 0,
            })
            .await
            .unwrap();
        let chat = Chat {
            id: "c1".to_owned(),
            project_id: "p1".to_owned(),
            title: "t".to_owned(),
            settings: serde_json::json!({}),
            totals: Default::default(),
            minion: None,
            created_at: 0,
            updated_at: 0,
        };
        store.create_chat(&chat).await.unwrap();
        store
            .save_message("c1", &Message::user_text("u1", "The staging port is 6543."))
            .await
            .unwrap();
        store
    }

    /// The step over [`store_with_chat`], writing to project `p1`'s
    /// memories, its model proposing one memory.
    async fn extraction() -> (
        Arc<crate::memory::MemoryStore>,
        Arc<Answers>,
        MemoryExtraction<crate::memory::MemoryStore>,
    ) {
        let store = store_with_chat().await;
        let model = Arc::new(Answers {
            answer: "[\"Staging listens on port 6543.\"]".to_owned(),
            asked: Default::default(),
        });
        let hook = MemoryExtraction::new(
            store.clone(),
            MemoryScope::project("p1"),
            "c1",
            model.clone(),
            RequestOptions::default(),
        );
        (store, model, hook)
    }

    fn run_end() -> HookInput {
        HookInput::RunEnd {
            run_id: "run-1".to_owned(),
            answer: "Noted.".to_owned(),
            output: None,
            continued: 0,
        }
    }

    #[tokio::test]
    async fn a_run_asked_about_again_is_not_extracted_twice() {
        let (store, model, hook) = extraction().await;
        let scope = MemoryScope::project("p1");
        let end = run_end();
        let first = hook.call_noted(&end).await;
        assert_eq!(
            first,
            Ok((
                HookDecision::Pass,
                Some("remembered /memories/extracted/run-1/1.md".to_owned())
            ))
        );
        // Asked again (its answer was lost with the process): nothing
        // more is asked or written.
        let again = hook.call_noted(&end).await;
        assert_eq!(
            again,
            Ok((
                HookDecision::Pass,
                Some("already extracted: /memories/extracted/run-1/1.md".to_owned())
            ))
        );
        assert_eq!(model.asked.load(std::sync::atomic::Ordering::SeqCst), 1);
        let kept = store.list_memories(&scope, "/", 1).await.unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].text, "Staging listens on port 6543.");
        assert_eq!(kept[0].source_run.as_deref(), Some("run-1"));
        assert_eq!(kept[0].source_step.as_deref(), Some(EXTRACTION_STEP));
    }

    /// A budget that takes `allowed` calls, then refuses; counts what it
    /// settled.
    struct Allowance {
        allowed: bool,
        settled: std::sync::Mutex<Vec<agentloop_types::BudgetHold>>,
    }

    #[async_trait::async_trait]
    impl Budget for Allowance {
        async fn reserve(
            &self,
            call: &BudgetCall,
        ) -> Result<Option<agentloop_types::BudgetHold>, agentloop_types::BudgetRefusal> {
            if !self.allowed {
                return Err(agentloop_types::BudgetRefusal {
                    budget: "task t1: 1000 tokens in total".to_owned(),
                });
            }
            Ok(Some(agentloop_types::BudgetHold {
                id: call.run_id.clone(),
                estimate: Spend::default(),
            }))
        }

        async fn settle(&self, hold: agentloop_types::BudgetHold, _actual: Spend) {
            self.settled.lock().unwrap().push(hold);
        }
    }

    #[tokio::test]
    async fn the_steps_model_call_is_reserved_with_the_runs_budget() {
        for allowed in [true, false] {
            let (store, model, hook) = extraction().await;
            let budget = Arc::new(Allowance {
                allowed,
                settled: Default::default(),
            });
            let scope = MemoryScope::project("p1");
            let hook = hook.with_budget(budget.clone());
            let answered = hook.call_noted(&run_end()).await;
            let asked = model.asked.load(std::sync::atomic::Ordering::SeqCst);
            let settled: Vec<String> = budget
                .settled
                .lock()
                .unwrap()
                .iter()
                .map(|hold| hold.id.clone())
                .collect();
            let kept = store.list_memories(&scope, "/", 1).await.unwrap().len();
            if allowed {
                assert!(answered.is_ok(), "{answered:?}");
                assert_eq!((asked, settled, kept), (1, vec!["run-1".to_owned()], 1));
            } else {
                let error = answered.unwrap_err().to_string();
                assert!(
                    error.contains(
                        "nothing extracted: the budget task t1: 1000 tokens in total is spent"
                    ),
                    "{error}"
                );
                assert_eq!(
                    (asked, settled.len(), kept),
                    (0, 0, 0),
                    "no call, nothing kept"
                );
            }
        }
    }

    #[test]
    fn run_ids_become_one_path_segment() {
        assert_eq!(path_safe("run-1.a_b"), "run-1.a_b");
        assert_eq!(path_safe("a/b c"), "a_b_c");
    }
}
