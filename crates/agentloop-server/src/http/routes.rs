//! The API's one route table: each route's method, path (in OpenAPI's
//! syntax, `{taskId}`, which the router takes as it is), handler, who may
//! call it, its limits, and the types of its body and answers (see
//! [`super::route`]). The router ([`super::router`]) is built from it, and
//! so is the OpenAPI document ([`super::openapi`]), whose schemas are the
//! types' own.
//!
//! To add or change an endpoint: write its handler (parse, authorize,
//! call [`super::service`], shape the answer), then add or change its
//! entry here with its body and answer types; the router and the
//! document follow.

use axum::Json;
use axum::extract::State;
use axum::http::Method;

use super::fork::{ForkRequest, StepShape};
use super::inspect::QueuedMessages;
use super::member_shapes::{MemberChange, MemberShape, MembersShape, NewMember};
use super::meta::{health, me};
use super::openapi;
use super::requests::{
    AgUiInput, Decisions, MemoryChange, NewAgentRun, NewProject, NewTask, Object, ProjectChange,
    SignIn, TaskDocumentContent, WebhooksChange, WorkflowComplete,
};
use super::responses::{
    AgentRunView, AuditShape, DecisionsAnswer, DeliveriesShape, DocumentShape, ErrorShape, Health,
    InputAnswer, MemoriesShape, MemoryShape, PendingAnswer, ProjectShape, RunConflict,
    SessionShape, StartConflict, TaskShape, UserShape, WebhooksShape, WorkflowCompleted,
};
use super::route::Route;
use super::run_files::{FileChanges, FileChangesQuery, FilesRestored, RewindRequest};
use super::schedule_shapes::{NewSchedule, ScheduleChange, ScheduleShape, SchedulesShape};
use super::{
    a2a, ag_ui, agent_runs, ai_sdk, audit, budgets, events, fork, inspect, members, memories,
    projects, run_files, schedules, session, tasks, webhooks, ws,
};
use crate::inspect::RunInspection;
use crate::inspect::eval_case::EvalDataset;
use crate::shapes::AgentRunShape;
use crate::state::AppState;
use agentloop_storage::ProjectRole;
use agentloop_types::RunInput;

/// `GET /api/openapi.json`: the document of this server's API.
async fn openapi_document(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(openapi::document(
        openapi::Offers {
            project_mcp: state.config.allow_project_mcp,
            shell: state.config.shell_tool.is_some(),
            rate_limited: state.rates.is_some(),
        },
        &routes(),
    ))
}

/// Every route of the API (the page's and `/mcp` aside, which are no part
/// of the API's document).
pub fn routes() -> Vec<Route> {
    vec![
        Route::new(Method::GET, "/api/health", health)
            .summary("Health, for probes: never rate limited")
            .public()
            .streaming()
            .never_rate_limited()
            .answers::<Health>("200", "The server serves")
            .or::<Health>("503", "The server is starting and does not serve yet (every other route answers 503 too, with the same reason in `error`); `waiting_for` says what it waits for (e.g. `restate: registering the worker endpoint …`). Sent with `Retry-After`."),
        Route::new(Method::GET, "/api/openapi.json", openapi_document)
            .summary("This document")
            .public()
            .answers::<Object>("200", "OpenAPI 3.1"),
        Route::new(Method::GET, "/.well-known/agent-card.json", a2a::card)
            .summary("The A2A agent card (strict protocol 1.0; its `supportedInterfaces` name a 0.3 interface too): the server's agents, reached over JSON-RPC at `POST /a2a` (described under `x-a2a`) with a bearer token")
            .public()
            .answers::<a2a::AgentCardSchema>("200", "An A2A `AgentCard`"),
        Route::new(Method::GET, "/api/me", me)
            .summary("The caller")
            .answers::<UserShape>("200", "The user"),
        Route::new(Method::GET, "/api/session", session::get_one)
            .summary("The browser session: its user and the CSRF token a change made with the session cookie sends as `x-csrf-token`")
            .answers::<SessionShape>("200", "The session"),
        Route::new(Method::POST, "/api/session", session::create)
            .summary("Sign in from a browser: exchanges a bearer token for a session cookie (`agentloop_session`, HttpOnly, SameSite=Strict) of its own")
            .public()
            .body::<SignIn>()
            .answers::<SessionShape>("201", "Signed in; the cookie is set")
            .or::<ErrorShape>("401", "The token is not valid")
            .or::<ErrorShape>("415", "The body is not sent as application/json"),
        Route::new(Method::DELETE, "/api/session", session::delete)
            .summary("Sign out: the session's token stops working and the cookie is cleared")
            .answers_without_json("204", "Signed out")
            .or::<ErrorShape>("403", "A change made with the session cookie without its CSRF token"),
        Route::new(Method::GET, "/api/projects", projects::list)
            .summary("The projects the caller is a member of (created or invited to), oldest first, each with the caller's `role`")
            .answers::<Vec<ProjectShape>>("200", "Projects"),
        Route::new(Method::POST, "/api/projects", projects::create)
            .summary("Create a project and its folder")
            .body::<NewProject>()
            .answers::<ProjectShape>("201", "The project")
            .or::<ErrorShape>("409", "The folder overlaps another project's folder"),
        Route::new(Method::GET, "/api/projects/{projectId}", projects::get_one)
            .role(ProjectRole::Viewer)
            .summary("A project")
            .answers::<ProjectShape>("200", "The project"),
        Route::new(Method::PATCH, "/api/projects/{projectId}", projects::update)
            .role(ProjectRole::Owner)
            .summary("Change a project's approval policy (`approvals`: `ask`, `unattended`, or null to follow the server's default), its per-tool policies (`tool_approvals`, null for none), `shell`, or its agents (`agents`, null for none; runs started later follow them). Runs follow an approval change at their next tool call; calls already waiting stay waiting. Other fields are refused (400).")
            .body::<ProjectChange>()
            .answers::<ProjectShape>("200", "The project"),
        Route::new(Method::DELETE, "/api/projects/{projectId}", projects::delete)
            .role(ProjectRole::Owner)
            .summary("Delete a project with its tasks and their agent runs (its folder stays on disk)")
            .answers_without_json("204", "Deleted")
            .or::<ErrorShape>("409", "An agent is running in the project"),
        Route::new(Method::GET, "/api/projects/{projectId}/tasks", tasks::list)
            .role(ProjectRole::Viewer)
            .summary("A project's tasks")
            .answers::<Vec<TaskShape>>("200", "Tasks"),
        Route::new(Method::POST, "/api/projects/{projectId}/tasks", tasks::create)
            .role(ProjectRole::Editor)
            .summary("Create a task and its document")
            .body::<NewTask>()
            .answers::<TaskShape>("201", "The task")
            .or::<ErrorShape>("409", "The project folder cannot be written"),
        Route::new(Method::GET, "/api/tasks/{taskId}", tasks::get_one)
            .role(ProjectRole::Viewer)
            .summary("A task")
            .answers::<TaskShape>("200", "The task"),
        Route::new(Method::DELETE, "/api/tasks/{taskId}", tasks::delete)
            .role(ProjectRole::Editor)
            .summary("Delete a task with its agent runs, their conversations and event logs (its document stays on disk)")
            .answers_without_json("204", "Deleted")
            .or::<ErrorShape>("409", "One of the task's agent runs is running or waiting (the error names it)"),
        Route::new(Method::GET, "/api/tasks/{taskId}/document", tasks::get_document)
            .role(ProjectRole::Viewer)
            .summary("The task document")
            .answers::<DocumentShape>("200", "The document")
            .or::<ErrorShape>("409", "The document cannot be read"),
        Route::new(Method::PUT, "/api/tasks/{taskId}/document", tasks::put_document)
            .role(ProjectRole::Editor)
            .summary("Replace the task document")
            .body::<TaskDocumentContent>()
            .answers::<DocumentShape>("200", "The document")
            .or::<ErrorShape>("409", "The document cannot be written"),
        Route::new(Method::PUT, "/api/tasks/{taskId}/workflow-complete", tasks::workflow_complete)
            .role(ProjectRole::Editor)
            .summary("Set workflow_complete (Mark Done). Setting it to true force-completes the task's running and waiting agent runs: their model requests and tools stop at once (a waiting run's pending calls are each answered as cancelled), and each ends `completed` with `stopped_by: workflow_complete` and a `stop_message` — in the agent run, and in its terminal `finished` event, whose result is `complete` with the same `stopped_by` and `stop_message`, so it is not mistaken for a loop that finished on its own. The chain stops. Setting it to false changes no run.")
            .body::<WorkflowComplete>()
            .answers::<WorkflowCompleted>("200", "The new flag"),
        Route::new(Method::GET, "/api/tasks/{taskId}/agent-runs", agent_runs::list)
            .role(ProjectRole::Viewer)
            .summary("A task's agent runs, oldest first")
            .answers::<Vec<AgentRunView>>("200", "Agent runs"),
        Route::new(Method::POST, "/api/tasks/{taskId}/agent-runs", agent_runs::create)
            .role(ProjectRole::Editor)
            .summary("Start an agent run (and its chain)")
            .body::<NewAgentRun>()
            .answers::<AgentRunShape>("201", "The agent run")
            .or::<StartConflict>("409", "An agent is already running for this task, or waiting for a decision (`runningAgent` names it); or the task is marked done (`runningAgent` null): no agent starts on a done task until it is reopened (`PUT /api/tasks/{taskId}/workflow-complete` with `complete: false`)"),
        Route::new(Method::GET, "/api/agent-runs/{runId}", agent_runs::get_one)
            .role(ProjectRole::Viewer)
            .summary("An agent run")
            .answers::<AgentRunView>("200", "The agent run"),
        Route::new(Method::GET, "/api/agent-runs/{runId}/pending", agent_runs::pending)
            .role(ProjectRole::Viewer)
            .summary("What the run waits for: the calls that need a person's approval and the questions it asked (empty unless the run is `waiting`), each with the decision recorded so far")
            .answers::<PendingAnswer>("200", "The run and its pending calls"),
        Route::new(Method::POST, "/api/agent-runs/{runId}/decisions", agent_runs::decisions)
            .role(ProjectRole::Editor)
            .summary("Decide calls a waiting run waits on. Decisions may come one call at a time; each call is decided once. A call the run does not wait on, or a decision that does not fit the call (an answer to an approval, an approval of a question), is a 400 and nothing is recorded. Once every pending call is decided the run resumes as the same agent run (`resumed: true`, status `running`): approved calls run, rejected ones give the model an error result with the reason, answers become the question's result; when it completes the chain goes on.")
            .body::<Decisions>()
            .answers::<DecisionsAnswer>("200", "The run and its pending calls with their decisions")
            .or::<RunConflict>("409", "The run is not waiting (`agentRun` says what it is), or a call was already decided"),
        Route::new(Method::POST, "/api/tasks/{taskId}/ag-ui", ag_ui::run)
            .role(ProjectRole::Editor)
            .summary("The task's agent runs for an AG-UI client. The body is AG-UI's `RunAgentInput` (other fields are ignored); the answer is `text/event-stream`, one AG-UI event per `data:` line. Without `resume` it starts an agent run (`forwardedProps.agentType`, `implementation` by default; the text of the last `user` message in `messages` is the request, given to the agent in the run's first message after its prompt), as `POST /api/tasks/{taskId}/agent-runs` does. With `resume` it decides the calls the task's waiting run waits on — each entry's `interruptId` is a call id; `status: cancelled` rejects the call; a resolved entry's `payload` is `{\"approved\": bool, \"arguments\"?, \"reason\"?}` for an approval or `{\"answer\": string}` for a question; every waiting call must be answered (else a 400, the decisions given being kept) — and follows the run from there. `tools` are front-end tools (at most 64; a name of 1 to 64 letters, digits, `_` or `-`, not one of the agent's own tools; `parameters` an object schema): the model is offered them, and a call of one makes the run wait; the AG-UI run then ends `success` with `pendingToolCallIds`, and the client answers each call with a `tool` message (`toolCallId`, `content`, optional `error`) among the `messages` of its next request, which resumes the run (the tools a run offers are those its first request declared). The stream opens with `RUN_STARTED` (the input's `threadId` and `runId`), a `STATE_SNAPSHOT` — the input's `state` object with the run's progress under `agentloop`: `status`, `turn`, `agent`, `usage` — kept current by `STATE_DELTA` patches (none when `state` is no object), and a `CUSTOM` event `agentloop.agent_run` naming the agent run; a model turn is a step; text, thinking and tool calls stream as messages, reasoning and tool calls; tool results are `TOOL_CALL_RESULT`; other agentloop events come whole as `CUSTOM` `agentloop.<kind>`. It ends with `RUN_FINISHED` (outcome `success`, `cancelled`, or `interrupt` with one interrupt per waiting call: `id` the call id, `reason` `tool_approval` or `question`) or `RUN_ERROR` (`code` the agentloop status or error kind).")
            .streaming()
            .body::<AgUiInput>()
            .answers_without_json("200", "The AG-UI event stream")
            .or::<ErrorShape>("409", "Without `resume`: an agent is already running or waiting on this task (`runningAgent` names it). With `resume`: no agent run of this task waits for a decision, or a call was decided before"),
        Route::new(Method::POST, "/api/tasks/{taskId}/ai-sdk", ai_sdk::chat)
            .role(ProjectRole::Editor)
            .summary("The task's agent runs for an AI SDK chat client (the `ai` package's `useChat`, `DefaultChatTransport`). The body is what its chat transport posts (`id`, `messages`, `trigger`, and `agentType`: planification, implementation — the default — or review); the answer is the AI SDK UI message stream (`text/event-stream` with `x-vercel-ai-ui-message-stream: v1`, one chunk per `data:` line, ended by `data: [DONE]`), one assistant message per agent run, its `messageId` the agent run's id and its `messageMetadata` `{agentRunId, taskId}`. Without an agent run of the task waiting, it starts one (as `POST /api/tasks/{taskId}/agent-runs` does), the text of the last `user` message being its request. While one waits, the last (`assistant`) message decides the calls it waits on from its tool parts — `approval-responded` approves or refuses a call (the `reason` of a refusal is what the model reads), `output-available` answers a question with the output — and the stream follows the run from there; every waiting call must be answered (else a 400, the decisions given being kept). A model turn is a step; text, reasoning and tool calls (dynamic tools) stream as their parts; results are `tool-output-available`, `tool-output-error`, or `tool-output-denied` for a refused call; a call waiting for approval gets `tool-approval-request` (`approvalId` the call id); other agentloop events come whole as transient `data-agentloop-event` parts. It ends with `finish` (`finishReason` `stop`, `tool-calls` when calls wait for the person, or `error` after an `error` chunk; `messageMetadata` the run's `status` and `usage`) or, for a cancelled run, `abort`.")
            .streaming()
            .body::<ai_sdk::AiSdkChat>()
            .answers_without_json("200", "The UI message stream")
            .or::<ErrorShape>("400", "Not a chat request; an unknown `agentType`; an answer that does not fit its call (an approval of a question, an output of an approval); answers that leave some waiting call unanswered (those given are kept)")
            .or::<ErrorShape>("409", "An agent is running on this task (`runningAgent` names it), or one waits and the last message answers none of its calls; or the last message answers calls while no agent run of this task waits for a decision"),
        Route::new(Method::GET, "/api/tasks/{taskId}/ai-sdk/{chatId}/stream", ai_sdk::reattach)
            .role(ProjectRole::Viewer)
            .summary("Re-attach an AI SDK chat client to the task's running agent run (the SDK's resumable-stream convention: `useChat({ resume: true })` calls it as `{api}/{chatId}/stream`; the task is the chat, so `chatId`, the client's id of it, is checked but not read): the run's assistant message as a UI message stream, replayed from its start and followed live to its end")
            .streaming()
            .answers_without_json("200", "The UI message stream")
            .or_without_json("204", "No agent run of this task is running"),
        Route::new(Method::GET, "/api/agent-runs/{runId}/messages", agent_runs::messages)
            .role(ProjectRole::Viewer)
            .summary("The run's stored messages")
            .answers::<Vec<Object>>("200", "Messages, oldest first"),
        Route::new(Method::GET, "/api/agent-runs/{runId}/events", events::stream)
            .role(ProjectRole::Viewer)
            .summary("The run's events as `text/event-stream` (`id:` is the event's seq; send `Last-Event-ID` to resume after it). The stream closes after the run's terminal `finished` event (its `result.status` is the loop's: `complete`, `cancelled`, `error`, …; a run a person stopped says who in `result.stopped_by` and `result.stop_message`: `cancel` for a cancelled run, `workflow_complete` for one Mark Done force-completed, whose status is then `complete`), or when the run starts waiting for a person (its `finished` event then has status `suspended`); once decisions resume it, the log goes on after that event, so reconnecting with `Last-Event-ID` shows the rest.")
            .streaming()
            .answers_without_json("200", "The event stream"),
        Route::new(Method::POST, "/api/agent-runs/{runId}/cancel", agent_runs::cancel)
            .role(ProjectRole::Editor)
            .summary("Cancel a running or waiting agent run: its model request and tools stop at once (a waiting run's pending calls are each answered as cancelled), it ends `cancelled`, and the chain stops.")
            .answers::<AgentRunShape>("200", "The agent run, now cancelled")
            .or::<RunConflict>("409", "The run already ended"),
        Route::new(Method::GET, "/api/agent-runs/{runId}/steps", fork::steps)
            .role(ProjectRole::Viewer)
            .summary("The steps the run keeps, oldest first: each its state between two steps, addressed by the seq of the last event logged before it (how many a run keeps is the server's `--keep-steps`: all by default)")
            .answers::<Vec<StepShape>>("200", "Steps"),
        Route::new(Method::POST, "/api/agent-runs/{runId}/fork", fork::fork)
            .role(ProjectRole::Editor)
            .summary("Fork the run at one of its steps (`at`, a seq of `GET /api/agent-runs/{runId}/steps`): a new agent run of the same task and agent, with its own id, conversation and event log, whose history is the run's up to that step (its log starts with the run's events up to `at`); `prompt`, when given, is a message the fork takes before it goes on (only at a step where the run calls the model next). With `restoreFiles`, the project's folder is first put back as it was at the step (as `POST /api/agent-runs/{runId}/rewind` does). The run itself is not changed. The fork executes at once, as the task's active run.")
            .body::<ForkRequest>()
            .answers::<AgentRunShape>("201", "The fork")
            .or::<ErrorShape>("400", "`at` is not a step of the run (the message names the seqs its steps lie between), or a prompt at a step that runs tools next")
            .or::<StartConflict>("409", "An agent of the task is running or waiting (`runningAgent` names it), or the task is marked done"),
        Route::new(Method::POST, "/api/agent-runs/{runId}/rewind", run_files::rewind)
            .role(ProjectRole::Editor)
            .summary("Put the project's folder back as it was at one of the run's steps (`to`, a seq of `GET /api/agent-runs/{runId}/steps`), from the file checkpoints the run took before each step that may write: what its fs, shell and JavaScript calls created is removed, what they changed or deleted comes back, byte for byte with its permissions. What `.gitignore` files ignore, and `.git`, are left alone. The conversation is not changed (fork the run with `restoreFiles` to go on from the step with its files). `restored` is false when no call that may write started after the step.")
            .body::<RewindRequest>()
            .answers::<FilesRestored>("200", "What the rewind wrote and removed")
            .or::<ErrorShape>("400", "This server keeps no file checkpoints")
            .or::<RunConflict>("409", "An agent run of the task is running or waiting (`agentRun`): the folder is not rewound under it"),
        Route::new(Method::GET, "/api/agent-runs/{runId}/file-changes", run_files::file_changes)
            .role(ProjectRole::Viewer)
            .summary("What changed in the project's folder from the run's step `at` to its step `to` (an earlier `to` shows what going back would change), or to the folder as it is now: each path added, modified or removed, with a unified diff for text (read from the file checkpoints the run took before each step that may write, so shell and JavaScript changes show too). No change when no call that may write started after `at`.")
            .query::<FileChangesQuery>()
            .answers::<FileChanges>("200", "The changes")
            .or::<ErrorShape>("400", "`at` is missing or not a number, or this server keeps no file checkpoints"),
        Route::new(Method::GET, "/api/agent-runs/{runId}/inspection", inspect::inspection)
            .role(ProjectRole::Viewer)
            .summary("The run step by step, read from what is stored of it (its kept steps, history and settings): per step what the run did next (`model`, `tools`, `end`), the messages it was given and added, what it spent, how long it took until the next step, its tool calls with their results and the files those changed (a diff where the call carries both sides). The requests are reconstructed from the step's messages and the agent's tools and options as configured now (`note` says what may differ); secrets are redacted.")
            .answers::<RunInspection>("200", "The run's inspection"),
        Route::new(Method::GET, "/api/agent-runs/{runId}/steps/{seq}/eval-case", inspect::eval_case)
            .role(ProjectRole::Viewer)
            .summary("A step of the run as an `agentloop eval` dataset of one case (save it as a `.json` file): the run's system prompt and the text of the step's messages up to the last message of a person's, secrets redacted; its expectations are the defaults")
            .answers::<EvalDataset>("200", "The dataset")
            .or::<ErrorShape>("400", "`seq` is not a number, or the step's history holds no message of a person's")
            .or::<ErrorShape>("404", "The run, or a step of it at `seq`, is not found"),
        Route::new(Method::GET, "/api/agent-runs/{runId}/queued-messages", inspect::queued_messages)
            .role(ProjectRole::Viewer)
            .summary("The messages sent to the run that it has not taken yet (kept until its next step boundary), oldest first")
            .answers::<QueuedMessages>("200", "The queued messages"),
        Route::new(Method::POST, "/api/tasks/{taskId}/inputs", agent_runs::task_input)
            .role(ProjectRole::Editor)
            .summary("Submit a `RunInput` (the typed input every host of the server submits; schema `docs/inputs.schema.json`) to the task: `start` begins an agent run (`agent`: planification, implementation — the default — or review; `message`'s text is its request; `client_tools` are tools the client answers, as AG-UI's front-end tools), `decide` decides the calls its waiting run waits on, `message` starts the default agent with it when no agent run is going (a 409 while one is), `cancel` cancels its going or waiting run, `stop` marks it done")
            .body::<RunInput>()
            .answers::<InputAnswer>("200", "What the input did, and its agent run as it is now")
            .or::<ErrorShape>("400", "Not a `RunInput`, or one the task cannot take (an unknown agent, a decision that does not fit)")
            .or::<ErrorShape>("409", "The task has an agent run going (a start, a message), none waiting (a decision) or none going (a cancel); or it is marked done"),
        Route::new(Method::POST, "/api/agent-runs/{runId}/inputs", agent_runs::run_input)
            .role(ProjectRole::Editor)
            .summary("Submit a `RunInput` to an agent run: `decide`, `cancel`, `stop` (Mark Done of its task) and `message` (as to its task); a `start` is a task's")
            .body::<RunInput>()
            .answers::<InputAnswer>("200", "What the input did, and the agent run as it is now")
            .or::<ErrorShape>("400", "Not a `RunInput`, a `start`, or a decision that does not fit")
            .or::<RunConflict>("409", "The run is not in the state the input needs (it has ended; it does not wait)"),
        Route::new(Method::GET, "/api/projects/{projectId}/webhooks", webhooks::show)
            .role(ProjectRole::Owner)
            .summary("The project's webhooks: the URLs, the events they hear and the signing secret; a 404 when none are registered")
            .answers::<WebhooksShape>("200", "The webhooks"),
        Route::new(Method::PUT, "/api/projects/{projectId}/webhooks", webhooks::set)
            .role(ProjectRole::Owner)
            .summary("Register the project's webhooks, replacing the URLs and events. Each delivery is a POST of a JSON `WebhookEvent`, with `x-agentloop-event`, `x-agentloop-delivery` (an id, the same on every attempt), `x-agentloop-timestamp` (Unix seconds) and `x-agentloop-signature: sha256=<hex HMAC-SHA256 with the secret over \"{timestamp}.{body}\">`; an answer other than 2xx, or none in time, is retried with backoff.")
            .body::<WebhooksChange>()
            .answers::<WebhooksShape>("200", "The webhooks"),
        Route::new(Method::DELETE, "/api/projects/{projectId}/webhooks", webhooks::remove)
            .role(ProjectRole::Owner)
            .summary("Remove the project's webhooks and their secret")
            .answers_without_json("204", "Removed"),
        Route::new(Method::GET, "/api/audit", audit::list)
            .role(ProjectRole::Owner)
            .summary("The audit log, oldest first: with `?project_id=` (a project you are an owner of) every user's changes to it, else your own; also `user_id`, `since` and `until` (Unix milliseconds) and `limit` (the newest 1 to 1000, 100 by default). Each entry: who, when, what, on what, from which address; never a secret.")
            .answers::<AuditShape>("200", "The entries"),
        Route::new(Method::GET, "/api/projects/{projectId}/webhook-deliveries", webhooks::deliveries)
            .role(ProjectRole::Owner)
            .summary("The project's last 100 webhook deliveries (made by any instance sharing the store, kept across restarts), oldest first, with every attempt")
            .answers::<DeliveriesShape>("200", "The deliveries"),
        Route::new(Method::GET, "/api/projects/{projectId}/budgets", budgets::project)
            .role(ProjectRole::Viewer)
            .summary("The project's budgets (cost in US dollars or tokens, per day, month or in total, UTC), each with what its runs spent and what model calls in flight hold in the current period")
            .answers::<budgets::BudgetsShape>("200", "The budgets"),
        Route::new(Method::PUT, "/api/projects/{projectId}/budgets", budgets::set_project)
            .role(ProjectRole::Owner)
            .summary("Replace the project's budgets (an empty list removes them; spend already counted stays). Every model call of the project's agent runs reserves its estimate against them first; a call that would take one past its limit is not made, and the run ends `limit_exceeded` naming the budget.")
            .body::<budgets::BudgetsChange>()
            .answers::<budgets::BudgetsShape>("200", "The budgets")
            .or::<ErrorShape>("400", "A limit below 0, a metric and period twice, or an unknown field"),
        Route::new(Method::GET, "/api/tasks/{taskId}/budgets", budgets::task)
            .role(ProjectRole::Viewer)
            .summary("The task's budgets, with their spend in the current period")
            .answers::<budgets::BudgetsShape>("200", "The budgets"),
        Route::new(Method::PUT, "/api/tasks/{taskId}/budgets", budgets::set_task)
            .role(ProjectRole::Owner)
            .summary("Replace the task's budgets (as a project's)")
            .body::<budgets::BudgetsChange>()
            .answers::<budgets::BudgetsShape>("200", "The budgets")
            .or::<ErrorShape>("400", "A limit below 0, a metric and period twice, or an unknown field"),
        Route::new(Method::GET, "/api/me/budgets", budgets::mine)
            .summary("The caller's own budgets, over the agent runs of every project the caller owns, with their spend in the current period")
            .answers::<budgets::BudgetsShape>("200", "The budgets"),
        Route::new(Method::PUT, "/api/me/budgets", budgets::set_mine)
            .summary("Replace the caller's own budgets (as a project's)")
            .body::<budgets::BudgetsChange>()
            .answers::<budgets::BudgetsShape>("200", "The budgets")
            .or::<ErrorShape>("400", "A limit below 0, a metric and period twice, or an unknown field"),
        Route::new(Method::GET, "/api/projects/{projectId}/memories", memories::list)
            .role(ProjectRole::Viewer)
            .summary("The project's memories: what its runs' `memory` tool keeps (each file under `/memories` is one), by path, each linked to the agent run that last wrote it. Expired ones are left out.")
            .answers::<MemoriesShape>("200", "The memories"),
        Route::new(Method::GET, "/api/projects/{projectId}/memories/{memoryId}", memories::show)
            .role(ProjectRole::Viewer)
            .summary("One memory of the project (expired or not)")
            .answers::<MemoryShape>("200", "The memory"),
        Route::new(Method::PATCH, "/api/projects/{projectId}/memories/{memoryId}", memories::edit)
            .role(ProjectRole::Editor)
            .summary("Change a memory's text or expiry; the next run's `memory` tool reads it so")
            .body::<MemoryChange>()
            .answers::<MemoryShape>("200", "The memory"),
        Route::new(Method::DELETE, "/api/projects/{projectId}/memories/{memoryId}", memories::remove)
            .role(ProjectRole::Editor)
            .summary("Forget a memory")
            .answers_without_json("204", "Deleted"),
        Route::new(Method::GET, "/api/projects/{projectId}/schedules", schedules::list)
            .role(ProjectRole::Viewer)
            .summary("The project's schedules, oldest first, each with its next tick, what its last tick did and its own budgets")
            .answers::<SchedulesShape>("200", "The schedules"),
        Route::new(Method::POST, "/api/projects/{projectId}/schedules", schedules::create)
            .role(ProjectRole::Editor)
            .summary("Create a schedule: a cron expression (five fields, or six with seconds first) read in an IANA time zone (`UTC` by default) that starts an agent run on one of the project's tasks, as the caller, through the same start as `POST /api/tasks/{taskId}/agent-runs` (chaining, limits and the audit log apply). Each tick fires once, whichever server instances share the store. A tick while the task has a running or waiting agent run starts none (`skipped`). After downtime, the latest missed tick fires once if it is at most 15 minutes old, older ones are passed over (`missed`).")
            .body::<NewSchedule>()
            .answers::<ScheduleShape>("201", "The schedule")
            .or::<ErrorShape>("400", "An invalid cron expression or time zone (the message says what is wrong), or one that never fires")
            .or::<ErrorShape>("404", "The project, or the task in it, is not found"),
        Route::new(Method::GET, "/api/schedules/{scheduleId}", schedules::show)
            .role(ProjectRole::Viewer)
            .summary("A schedule")
            .answers::<ScheduleShape>("200", "The schedule"),
        Route::new(Method::PATCH, "/api/schedules/{scheduleId}", schedules::edit)
            .role(ProjectRole::Editor)
            .summary("Change a schedule: its `cron`, `time_zone`, `agent` or `prompt`; `paused: true` pauses it, `paused: false` resumes it from now (ticks that fell while it was paused do not fire). Its next tick is the first after now.")
            .body::<ScheduleChange>()
            .answers::<ScheduleShape>("200", "The schedule")
            .or::<ErrorShape>("400", "An invalid cron expression or time zone"),
        Route::new(Method::DELETE, "/api/schedules/{scheduleId}", schedules::remove)
            .role(ProjectRole::Editor)
            .summary("Delete a schedule and its budgets (runs it started go on)")
            .answers_without_json("204", "Deleted"),
        Route::new(Method::GET, "/api/schedules/{scheduleId}/budgets", budgets::schedule)
            .role(ProjectRole::Viewer)
            .summary("The schedule's own budgets, over the agent runs its ticks started and the runs chained after them, with their spend in the current period")
            .answers::<budgets::BudgetsShape>("200", "The budgets"),
        Route::new(Method::PUT, "/api/schedules/{scheduleId}/budgets", budgets::set_schedule)
            .role(ProjectRole::Owner)
            .summary("Replace the schedule's own budgets (as a project's): a model call of a run the schedule started that would take one past its limit is not made, and the run ends `limit_exceeded` naming the budget")
            .body::<budgets::BudgetsChange>()
            .answers::<budgets::BudgetsShape>("200", "The budgets")
            .or::<ErrorShape>("400", "A limit below 0, a metric and period twice, or an unknown field"),
        Route::new(Method::GET, "/api/projects/{projectId}/members", members::list)
            .role(ProjectRole::Viewer)
            .summary("The project's members and their roles: its creator (an owner for good) first, then the users its owners invited, as they were added. `viewer`: reads the project and follows its runs; `editor`: also works on its tasks (creates, edits and deletes them, starts runs, decides, sends messages, cancels, marks done, schedules); `owner`: also changes its settings, members, webhooks and budgets, and deletes it. A user who is no member gets 404 for the project's ids; a member whose role is below what a route needs gets 403 naming both roles.")
            .answers::<MembersShape>("200", "The members"),
        Route::new(Method::POST, "/api/projects/{projectId}/members", members::add)
            .role(ProjectRole::Owner)
            .summary("Invite a user, by name (or id), with a role")
            .body::<NewMember>()
            .answers::<MemberShape>("201", "The member")
            .or::<ErrorShape>("404", "No user has that name, or the project is not found")
            .or::<ErrorShape>("409", "The user is a member already, or created the project"),
        Route::new(Method::PATCH, "/api/projects/{projectId}/members/{user}", members::change)
            .role(ProjectRole::Owner)
            .summary("Change a member's role (`user`: their name or id)")
            .body::<MemberChange>()
            .answers::<MemberShape>("200", "The member")
            .or::<ErrorShape>("404", "The user is no member of the project")
            .or::<ErrorShape>("409", "The user created the project: their role stays `owner`"),
        Route::new(Method::DELETE, "/api/projects/{projectId}/members/{user}", members::remove)
            .role(ProjectRole::Owner)
            .summary("Remove a member (`user`: their name or id): an owner removes anyone but the project's creator. A member of any role may also remove themselves (leave the project).")
            .answers_without_json("204", "Removed")
            .or::<ErrorShape>("404", "The user is no member of the project")
            .or::<ErrorShape>("409", "The user created the project and stays its owner"),
        Route::new(Method::GET, "/api/ws", ws::upgrade)
            .summary("WebSocket of the caller's notices, of the projects they own and of those they were invited to when it opened (`streaming-started`, `streaming-ended`, `agent-run-status`, and `agent-run-waiting` with `taskId`, `agentRunId`, `agentType` and `pending` when a run starts waiting for a person) as JSON text messages; a socket that falls more than 1,024 notices behind gets `notices-missed` in place of those it missed, and should read its runs again")
            .websocket()
            .streaming()
            .answers_without_json("101", "Switching protocols")
            .or::<ErrorShape>("400", "Not a WebSocket upgrade request"),
        Route::new(Method::POST, a2a::RPC_PATH, a2a::rpc_endpoint)
            .summary("A2A 1.0 over JSON-RPC 2.0: the caller's agent runs as A2A tasks")
            .json_rpc()
            .streaming()
            .body::<a2a::JsonRpcRequest>()
            .answers_without_json(
                "200",
                "A JSON-RPC answer (`application/json`), or for the streaming methods `text/event-stream`",
            ),
    ]
}
