//! The default system prompt: how to use the four meta-tools.
//!
//! The model never sees the operations themselves, only `hub_list`, `hub_search`,
//! `hub_schema` and `hub_call`; the prompt teaches the search -> schema -> call
//! sequence, batching, and what to do with errors. Operators replace it with
//! `[agent] system_prompt`. The active plugins' instructions (WIT 0.2.0) follow
//! it, in plugin-name order. [`CONCLUDE`] is the instruction of the loop's last
//! allowed step.

/// Used when `[agent] system_prompt` is not set.
pub(crate) const DEFAULT_SYSTEM_PROMPT: &str = "\
You are a helpful assistant connected to a tool hub. The hub holds many operations \
(named `namespace.operation`, for example `calc.eval` or `text.slugify`), but you see \
only four tools that reach all of them:

- hub_search {q, namespace?, limit?}: find operations by what they do. Start here.
- hub_list {namespace?}: list every operation, or those of one namespace.
- hub_schema {tool}: the exact input schema (and output schema) of one operation.
- hub_call {calls: [{tool, input}]}: run one or more operations; they run concurrently \
and you get one result per call, in order, each `{ok: true, result}` or `{ok: false, error}`.

How to work:
1. When a request needs computation, data or an action, search for a suitable \
operation with hub_search (short keyword queries work best). Do not guess tool names.
2. Before calling an operation for the first time, read its input schema with \
hub_schema and build the input exactly as the schema says (required fields, types, \
enums).
3. Call with hub_call. Put independent calls in one hub_call batch instead of \
several turns.
4. If a call fails, read the error: it names the field or the problem. Fix the input \
and retry, or try another operation. Do not repeat an identical failing call.
5. Answer from the results. Say plainly when no operation can do what was asked; \
never invent results.

Be concise. Show numbers and data exactly as the operations returned them.";

/// The one instruction of the loop's last allowed step, sent as a user message after
/// the conversation (a system message there is refused by several chat templates),
/// in a request that offers no tools.
pub(crate) const CONCLUDE: &str = "\
This is the last step of this turn: no more tools can be called. Answer the user now \
from the results you already have. If something could not be done or is still \
missing, say so briefly.";

/// The prompt in force: the configured one, or the default.
pub(crate) fn system_prompt(configured: Option<&str>) -> &str {
    configured
        .filter(|s| !s.trim().is_empty())
        .unwrap_or(DEFAULT_SYSTEM_PROMPT)
}

/// `prompt` followed by the plugins' instructions, when there are any. The
/// instructions come after the fixed prompt (and in plugin-name order), so the
/// prompt's prefix stays byte-identical across turns for providers' prompt caches.
pub(crate) fn with_instructions<'a>(
    prompt: &'a str,
    instructions: Option<String>,
) -> std::borrow::Cow<'a, str> {
    match instructions {
        Some(text) => format!("{prompt}\n\n{text}").into(),
        None => prompt.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_follow_the_prompt() {
        assert_eq!(with_instructions("base", None), "base");
        assert_eq!(
            with_instructions("base", Some("## calc\nexact".into())),
            "base\n\n## calc\nexact"
        );
    }

    #[test]
    fn the_default_names_every_meta_tool_and_a_configured_prompt_wins() {
        for name in ["hub_search", "hub_list", "hub_schema", "hub_call"] {
            assert!(DEFAULT_SYSTEM_PROMPT.contains(name), "{name}");
        }
        assert_eq!(system_prompt(Some("custom")), "custom");
        assert_eq!(system_prompt(Some("  ")), DEFAULT_SYSTEM_PROMPT);
        assert_eq!(system_prompt(None), DEFAULT_SYSTEM_PROMPT);
    }
}
