//! One Markdown agent profile, `agents_dir/NAME.md`: TOML front matter between
//! two `+++` lines (the keys of `[[agents]]`), then the body, which is the
//! system prompt.
//!
//! ```text
//! +++
//! description = "Answers questions about the weather"
//! model = ["local/qwen3", "openai/gpt-4o-mini"]
//! allow = ["weather.*"]
//! temperature = 0.2
//! +++
//! You are a weather assistant. ...
//! ```
//!
//! TOML front matter (Hugo's `+++` convention) rather than YAML's `---`: the hub
//! already parses TOML with the line of every mistake (`crate::toml`), the keys
//! are the config file's own, and no YAML parser joins the dependencies.

use super::ProfileError;
use crate::config::{AgentProfileConfig, SamplingLimits};
use std::path::Path;

/// The line that opens and closes the front matter.
const FENCE: &str = "+++";

/// The profile in `text`, read from `path` (whose stem is the name).
pub(super) fn parse(
    path: &Path,
    text: &str,
    limits: &SamplingLimits,
) -> Result<AgentProfileConfig, ProfileError> {
    let fail = |problem: String| Err(ProfileError::new(path, problem));
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some(FENCE) {
        return fail(format!(
            "the first line must be {FENCE}, opening the TOML front matter (then {FENCE}, then the system prompt)"
        ));
    }
    let mut front = String::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == FENCE {
            closed = true;
            break;
        }
        front.push_str(line);
    }
    if !closed {
        return fail(format!("the front matter has no closing {FENCE} line"));
    }
    let body: String = lines.collect();
    let mut profile: AgentProfileConfig = match crate::toml::from_str(&front) {
        Ok(profile) => profile,
        Err(mut e) => {
            // Lines of the file, not of the front matter.
            e.line = e.line.map(|l| l + 1);
            return fail(format!("front matter: {e}"));
        }
    };
    if profile.name.is_empty() {
        profile.name = stem.to_string();
    } else if profile.name != stem {
        return fail(format!(
            "name: {:?} differs from the file name; name the file {}.md or leave name out",
            profile.name, profile.name
        ));
    }
    if profile.system_prompt.is_some() {
        return fail("system_prompt: a Markdown profile's prompt is its body, after the front matter".into());
    }
    let body = body.trim();
    if !body.is_empty() {
        profile.system_prompt = Some(body.to_string());
    }
    if let Some((field, why)) = profile.problem(limits) {
        return fail(format!("{field}: {why}"));
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelChoice;

    const LIMITS: SamplingLimits = SamplingLimits {
        temperature: 1.0,
        max_output_tokens: 1000,
    };

    fn read(name: &str, text: &str) -> Result<AgentProfileConfig, String> {
        parse(Path::new(&format!("agents/{name}.md")), text, &LIMITS).map_err(|e| e.to_string())
    }

    #[test]
    fn front_matter_and_body_make_a_profile() {
        let p = read(
            "weather",
            "+++\ndescription = \"Weather\"\nmodel = [\"a/x\", \"b/y\"]\nallow = [\"weather.*\"]\n\
             temperature = 0.2\ntop_p = 0.9\nmax_output_tokens = 300\nmax_steps = 4\n+++\n\nYou answer.\n",
        )
        .unwrap();
        assert_eq!(p.name, "weather");
        assert_eq!(p.description, "Weather");
        assert_eq!(
            p.model,
            Some(ModelChoice::Chain(vec!["a/x".into(), "b/y".into()]))
        );
        assert_eq!(p.allow, Some(vec!["weather.*".to_string()]));
        assert_eq!(
            (p.temperature, p.top_p, p.max_output_tokens, p.max_steps),
            (Some(0.2), Some(0.9), Some(300), Some(4))
        );
        assert_eq!(p.system_prompt.as_deref(), Some("You answer."));
    }

    #[test]
    fn mistakes_name_the_file_and_the_field() {
        for (name, text, expected) in [
            ("a", "no front matter", "agents/a.md: the first line must be +++"),
            (
                "a",
                "+++\nmodel = \"m\"\n",
                "agents/a.md: the front matter has no closing +++",
            ),
            (
                "a",
                "+++\nmodle = \"m\"\n+++\n",
                "agents/a.md: front matter: line 2",
            ),
            (
                "a",
                "+++\ntemperature = 1.5\n+++\n",
                "agents/a.md: temperature: 1.5 is outside 0..=1 (agent.temperature_limit)",
            ),
            (
                "a",
                "+++\nmax_output_tokens = 2000\n+++\n",
                "agents/a.md: max_output_tokens: 2000 is outside 1..=1000",
            ),
            (
                "a",
                "+++\ntop_p = 0\n+++\n",
                "agents/a.md: top_p: 0 must be greater than 0",
            ),
            (
                "a",
                "+++\nname = \"b\"\n+++\n",
                "agents/a.md: name: \"b\" differs from the file name",
            ),
            (
                "Bad",
                "+++\n+++\n",
                "agents/Bad.md: name: \"Bad\" must be [a-z][a-z0-9_-]*",
            ),
            (
                "a",
                "+++\nsystem_prompt = \"x\"\n+++\n",
                "agents/a.md: system_prompt: a Markdown profile's prompt is its body",
            ),
            ("a", "+++\nmodel = []\n+++\n", "agents/a.md: model: an empty list"),
            (
                "a",
                "+++\nmax_steps = 0\n+++\n",
                "agents/a.md: max_steps: must be greater than 0",
            ),
            (
                "a",
                "+++\napprovals = { rules = [{ tools = [], action = \"deny\" }] }\n+++\n",
                "agents/a.md: approvals: rules[0].tools: name at least one operation pattern",
            ),
            (
                "a",
                "+++\napprovals = { writes = \"never\" }\n+++\n",
                "agents/a.md: front matter: line 2",
            ),
        ] {
            let e = read(name, text).unwrap_err();
            assert!(e.starts_with(expected), "{e}\nexpected: {expected}");
        }
    }

    #[test]
    fn a_profile_has_an_approval_policy_in_the_tokens_vocabulary() {
        let p = read(
            "ops",
            "+++\napprovals = { open_world = \"ask\", rules = [{ tools = [\"files.*\"], action = \"deny\" }] }\n+++\n",
        )
        .unwrap();
        let approvals = p.approvals.unwrap();
        assert_eq!(approvals.open_world, Some(crate::config::ApprovalAction::Ask));
        assert_eq!(approvals.rules[0].tools, ["files.*"]);
    }

    #[test]
    fn an_empty_body_keeps_the_default_prompt() {
        let p = read("plain", "+++\r\nmodel = \"m\"\r\n+++\r\n\r\n").unwrap();
        assert_eq!(p.system_prompt, None);
        assert_eq!(p.model, Some(ModelChoice::One("m".into())));
    }
}
