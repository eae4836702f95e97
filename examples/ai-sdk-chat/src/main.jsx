// A chat with one agentloop task through the AI SDK's useChat: the task's
// route `POST /api/tasks/{id}/ai-sdk` streams each agent run as one
// assistant message. Calls that need approval get Approve / Refuse
// buttons; a question the agent asks gets an answer box. Everything the
// model wrote is rendered as text (React escapes it), never as HTML.
import { StrictMode, useMemo, useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  isToolUIPart,
  getToolName,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";

function Chat({ taskId, token, agentType }) {
  const transport = useMemo(
    () =>
      new DefaultChatTransport({
        api: `/api/tasks/${encodeURIComponent(taskId)}/ai-sdk`,
        headers: { Authorization: `Bearer ${token}` },
        body: { agentType },
      }),
    [taskId, token, agentType]
  );
  const {
    messages,
    sendMessage,
    addToolApprovalResponse,
    addToolOutput,
    status,
    error,
    stop,
  } = useChat({
    id: taskId,
    transport,
    // Once every approval request of the last step is answered, the
    // responses go back and the run goes on.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    // Re-attach to a run still streaming (after a reload).
    resume: true,
  });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";

  const answer = async (part, text) => {
    await addToolOutput({
      tool: getToolName(part),
      toolCallId: part.toolCallId,
      output: text,
    });
    await sendMessage();
  };

  return (
    <main>
      {messages.map((message) => (
        <section key={message.id} className={message.role}>
          <h2>{message.role === "user" ? "You" : `Agent run ${message.id}`}</h2>
          {message.parts.map((part, index) => (
            <Part
              key={index}
              part={part}
              idle={!busy}
              onApprove={(approved) =>
                addToolApprovalResponse({ id: part.approval.id, approved })
              }
              onAnswer={(text) => answer(part, text)}
            />
          ))}
          {message.metadata?.status && (
            <p className="status">
              {message.metadata.status} · {message.metadata.usage?.totalTokens ?? 0} tokens
            </p>
          )}
        </section>
      ))}
      {error && <p className="error">{error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (input.trim()) {
            sendMessage({ text: input });
            setInput("");
          }
        }}
      >
        <input
          value={input}
          onChange={(event) => setInput(event.target.value)}
          placeholder="What should the agent do?"
          disabled={busy}
        />
        {busy ? (
          <button type="button" onClick={() => stop()}>
            Stop reading
          </button>
        ) : (
          <button type="submit">Send</button>
        )}
      </form>
    </main>
  );
}

function Part({ part, idle, onApprove, onAnswer }) {
  const [text, setText] = useState("");
  if (part.type === "text") {
    return <p className="text">{part.text}</p>;
  }
  if (part.type === "reasoning") {
    return (
      <details>
        <summary>Thinking</summary>
        <p>{part.text}</p>
      </details>
    );
  }
  if (!isToolUIPart(part)) {
    return null;
  }
  return (
    <div className={`tool ${part.state}`}>
      <code>
        {getToolName(part)}({JSON.stringify(part.input ?? {})})
      </code>
      {part.state === "approval-requested" && (
        <span>
          <button onClick={() => onApprove(true)}>Approve</button>
          <button onClick={() => onApprove(false)}>Refuse</button>
        </span>
      )}
      {part.state === "input-available" && idle && (
        // A call the run waits on with no approval asked: the agent asked
        // a question, and the answer is the call's output.
        <form
          onSubmit={(event) => {
            event.preventDefault();
            onAnswer(text);
          }}
        >
          <input value={text} onChange={(event) => setText(event.target.value)} />
          <button type="submit">Answer</button>
        </form>
      )}
      {part.state === "output-available" && <pre>{String(part.output)}</pre>}
      {part.state === "output-error" && <pre className="error">{part.errorText}</pre>}
      {part.state === "output-denied" && <em>refused</em>}
    </div>
  );
}

function App() {
  const params = new URLSearchParams(window.location.search);
  const [taskId, setTaskId] = useState(params.get("task") ?? "");
  const [token, setToken] = useState("");
  const [agentType, setAgentType] = useState("implementation");
  const [ready, setReady] = useState(false);
  if (ready) {
    return <Chat taskId={taskId} token={token} agentType={agentType} />;
  }
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        setReady(Boolean(taskId && token));
      }}
    >
      <label>
        Task id <input value={taskId} onChange={(event) => setTaskId(event.target.value)} />
      </label>
      <label>
        Token{" "}
        <input
          type="password"
          value={token}
          onChange={(event) => setToken(event.target.value)}
        />
      </label>
      <label>
        Agent{" "}
        <select value={agentType} onChange={(event) => setAgentType(event.target.value)}>
          <option>planification</option>
          <option>implementation</option>
          <option>review</option>
        </select>
      </label>
      <button type="submit">Open</button>
    </form>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>
);
