//! The built-in checks: a case's expectations (all but the judge) judged
//! against one run, each giving a [`Verdict`] named after its key.

use serde_json::Value;

use crate::evaluator::{Observation, ToolCall, Verdict};
use crate::expect::{CallMatcher, CallSpec, Expect, Order, Trajectory};

/// How much of a long answer a reason quotes.
const QUOTE: usize = 120;

/// The verdicts of every expectation the case sets (the judge aside).
/// Patterns and schemas were checked when the dataset loaded; one that
/// fails to compile here fails its verdict.
pub fn verdicts(expect: &Expect, run: &Observation) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    let answer = run.answer.as_deref().unwrap_or("");
    let wanted = expect.status.as_deref().unwrap_or("complete");
    let status = run.result.status.name();
    verdicts.push(Verdict::check("status", status == wanted, || {
        let detail = match &run.result.status {
            agentloop_types::LoopStatus::Error { error } => format!(": {error}"),
            _ => String::new(),
        };
        format!("the run ended {status}{detail}, expected {wanted}")
    }));
    if let Some(expected) = &expect.equals {
        verdicts.push(Verdict::check(
            "equals",
            answer.trim() == expected.trim(),
            || format!("the answer {} is not {}", quote(answer), quote(expected)),
        ));
    }
    let fold = |s: &str| {
        if expect.ignore_case {
            s.to_lowercase()
        } else {
            s.to_owned()
        }
    };
    for needle in expect.contains.items() {
        verdicts.push(Verdict::check(
            "contains",
            fold(answer).contains(&fold(needle)),
            || format!("the answer {} does not contain {needle:?}", quote(answer)),
        ));
    }
    for needle in expect.not_contains.items() {
        verdicts.push(Verdict::check(
            "not_contains",
            !fold(answer).contains(&fold(needle)),
            || format!("the answer contains {needle:?}"),
        ));
    }
    if let Some(pattern) = &expect.regex {
        verdicts.push(match regex::Regex::new(pattern) {
            Ok(re) => Verdict::check("regex", re.is_match(answer), || {
                format!("the answer {} does not match /{pattern}/", quote(answer))
            }),
            Err(e) => Verdict::fail("regex", format!("invalid pattern: {e}")),
        });
    }
    if let Some(schema) = &expect.schema {
        verdicts.push(schema_verdict(schema, run));
    }
    if let Some(trajectory) = &expect.tools {
        verdicts.push(trajectory_verdict(trajectory, &run.tool_calls));
    }
    verdicts.extend(limit_verdicts(expect, run));
    verdicts
}

fn schema_verdict(schema: &Value, run: &Observation) -> Verdict {
    let value = match &run.output {
        Some(value) => value.clone(),
        None => match run
            .answer
            .as_deref()
            .map(|a| serde_json::from_str::<Value>(strip_fence(a)))
        {
            Some(Ok(value)) => value,
            Some(Err(e)) => {
                return Verdict::fail("schema", format!("the answer is not JSON: {e}"));
            }
            None => return Verdict::fail("schema", "the run gave no answer"),
        },
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(validator) => validator,
        Err(e) => return Verdict::fail("schema", format!("invalid schema: {e}")),
    };
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    Verdict::check("schema", errors.is_empty(), || {
        format!("the output does not fit the schema: {}", errors.join("; "))
    })
}

/// An answer in a Markdown code fence is read without it.
fn strip_fence(answer: &str) -> &str {
    let trimmed = answer.trim();
    let Some(inner) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// Whether one call matches one expected call.
pub fn call_matches(expected: &CallMatcher, call: &ToolCall) -> bool {
    match expected {
        CallMatcher::Name(name) => &call.name == name,
        CallMatcher::Call(spec) => call.name == spec.name && args_match(spec, &call.input),
    }
}

fn args_match(spec: &CallSpec, input: &Value) -> bool {
    let equal = spec
        .args
        .iter()
        .all(|(key, want)| input.get(key).is_some_and(|got| subset(want, got)));
    let patterns = spec.args_regex.iter().all(|(key, pattern)| {
        let (Some(got), Value::String(pattern)) = (input.get(key), pattern) else {
            return false;
        };
        let text = match got {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        regex::Regex::new(pattern).is_ok_and(|re| re.is_match(&text))
    });
    equal && patterns
}

/// `want` equals `got`, objects compared as subsets (every key of `want`
/// present and matching in `got`).
fn subset(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => want
            .iter()
            .all(|(k, w)| got.get(k).is_some_and(|g| subset(w, g))),
        _ => want == got,
    }
}

/// The trajectory check: the run's tool calls against the expected ones.
pub fn trajectory_verdict(expected: &Trajectory, calls: &[ToolCall]) -> Verdict {
    let made = || {
        let shown: Vec<String> = calls
            .iter()
            .map(|c| format!("{} {}", c.name, short_json(&c.input)))
            .collect();
        if shown.is_empty() {
            "no tool calls".to_owned()
        } else {
            format!("calls [{}]", shown.join(", "))
        }
    };
    let wanted = || {
        let shown: Vec<String> = expected
            .calls
            .iter()
            .map(|e| match e {
                CallMatcher::Name(name) => name.clone(),
                CallMatcher::Call(spec) => {
                    let mut matchers = serde_json::Map::new();
                    if !spec.args.is_empty() {
                        matchers.insert("args".to_owned(), Value::Object(spec.args.clone()));
                    }
                    if !spec.args_regex.is_empty() {
                        matchers.insert(
                            "args_regex".to_owned(),
                            Value::Object(spec.args_regex.clone()),
                        );
                    }
                    format!("{} {}", spec.name, short_json(&Value::Object(matchers)))
                }
            })
            .collect();
        format!("[{}]", shown.join(", "))
    };
    if expected.only
        && let Some(other) = calls
            .iter()
            .find(|c| !expected.calls.iter().any(|e| e.name() == c.name))
    {
        return Verdict::fail(
            "trajectory",
            format!(
                "the run called {} (not expected); it made {}",
                other.name,
                made()
            ),
        );
    }
    let ok = match expected.order {
        Order::Exact => {
            calls.len() == expected.calls.len()
                && expected
                    .calls
                    .iter()
                    .zip(calls)
                    .all(|(e, c)| call_matches(e, c))
        }
        Order::InOrder => {
            let mut rest = calls.iter();
            expected
                .calls
                .iter()
                .all(|e| rest.any(|c| call_matches(e, c)))
        }
        Order::AnyOrder => {
            let mut used = vec![false; calls.len()];
            expected.calls.iter().all(|e| {
                let found = calls
                    .iter()
                    .enumerate()
                    .find(|(i, c)| !used[*i] && call_matches(e, c));
                match found {
                    Some((i, _)) => {
                        used[i] = true;
                        true
                    }
                    None => false,
                }
            })
        }
    };
    let order = match expected.order {
        Order::Exact => "exactly",
        Order::InOrder => "in order",
        Order::AnyOrder => "in any order",
    };
    Verdict::check("trajectory", ok, || {
        format!(
            "expected calls {} {order}; the run made {}",
            wanted(),
            made()
        )
    })
}

fn limit_verdicts(expect: &Expect, run: &Observation) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    if let Some(max) = expect.max_steps {
        verdicts.push(Verdict::check("max_steps", run.steps <= max, || {
            format!("{} model turns, at most {max} expected", run.steps)
        }));
    }
    if let Some(max) = expect.max_tokens {
        let used = run.tokens().total_tokens();
        verdicts.push(Verdict::check("max_tokens", used <= max, || {
            format!("{used} tokens, at most {max} expected")
        }));
    }
    if let Some(max) = expect.max_cost {
        let cost = run.tokens().cost;
        verdicts.push(Verdict::check("max_cost", cost <= max, || {
            format!("cost ${cost:.4}, at most ${max:.4} expected")
        }));
    }
    if let Some(max) = expect.max_seconds {
        let seconds = run.elapsed.as_secs_f64();
        verdicts.push(Verdict::check("max_seconds", seconds <= max, || {
            format!("took {seconds:.2}s, at most {max}s expected")
        }));
    }
    verdicts
}

/// A value's JSON, cut short for a reason.
fn short_json(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > QUOTE {
        let short: String = text.chars().take(QUOTE).collect();
        format!("{short}…")
    } else {
        text
    }
}

/// A short, quoted form of a text for a reason.
pub fn quote(text: &str) -> String {
    let short: String = text.chars().take(QUOTE).collect();
    if short.len() < text.len() {
        format!("{:?}…", short)
    } else {
        format!("{short:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, input: Value) -> ToolCall {
        ToolCall {
            name: name.to_owned(),
            input,
        }
    }

    fn trajectory(yaml: &str) -> Trajectory {
        serde_norway::from_str(yaml).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn trajectories_match_in_order_exactly_or_as_a_set() {
        let calls = [
            call("fs", json!({"command": "view", "path": "/"})),
            call("js", json!({"code": "1+1"})),
            call("fs", json!({"command": "view", "path": "/a.txt"})),
        ];
        let in_order = trajectory("calls: [fs, js]");
        assert!(trajectory_verdict(&in_order, &calls).passed);
        let wrong_order = trajectory("calls: [js, js]");
        assert!(!trajectory_verdict(&wrong_order, &calls).passed);
        let exact = trajectory("calls: [fs, js]\norder: exact");
        assert!(!trajectory_verdict(&exact, &calls).passed);
        let set = trajectory("calls: [js, fs, fs]\norder: any_order");
        assert!(trajectory_verdict(&set, &calls).passed);
        let too_many = trajectory("calls: [js, js]\norder: any_order");
        assert!(!trajectory_verdict(&too_many, &calls).passed);
        let only = trajectory("calls: [fs]\nonly: true");
        let verdict = trajectory_verdict(&only, &calls);
        assert!(!verdict.passed);
        assert!(verdict.reason.contains("js"), "{}", verdict.reason);
    }

    #[test]
    fn argument_matchers_compare_subsets_and_patterns() {
        let calls = [call(
            "fs",
            json!({"command": "view", "path": "/notes/a.txt"}),
        )];
        let equal = trajectory("calls: [{name: fs, args: {command: view}}]");
        assert!(trajectory_verdict(&equal, &calls).passed);
        let unequal = trajectory("calls: [{name: fs, args: {command: create}}]");
        assert!(!trajectory_verdict(&unequal, &calls).passed);
        let pattern = trajectory(r#"calls: [{name: fs, args_regex: {path: "a\\.txt$"}}]"#);
        assert!(trajectory_verdict(&pattern, &calls).passed);
        let missing = trajectory(r#"calls: [{name: fs, args_regex: {file: "."}}]"#);
        assert!(!trajectory_verdict(&missing, &calls).passed);
    }

    #[test]
    fn fenced_json_answers_are_read_without_the_fence() {
        assert_eq!(strip_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_fence(" [1] "), "[1]");
    }
}
