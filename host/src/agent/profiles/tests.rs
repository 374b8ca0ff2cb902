use super::*;
use crate::config::ModelChoice;

fn config() -> Config {
    let mut config = Config::default();
    config.agent.model = Some("up/base".into());
    config.agent.max_steps = 7;
    config.agent.temperature = Some(0.3);
    config.agents = vec![AgentProfileConfig {
        name: "writer".into(),
        description: "Writes".into(),
        model: Some(ModelChoice::Chain(vec!["up/a".into(), "up/b".into()])),
        top_p: Some(0.8),
        system_prompt: Some("You write.".into()),
        ..AgentProfileConfig::default()
    }];
    config
}

fn sources(config: &Config) -> Sources {
    Sources {
        default: Arc::new(Profile::default_of(&config.agent)),
        configured: config.agents.clone(),
        limits: config.agent.sampling_limits(),
        dir: PathBuf::from("agents"),
    }
}

fn file(name: &str, text: &str) -> (PathBuf, std::io::Result<String>) {
    (PathBuf::from(format!("agents/{name}.md")), Ok(text.to_string()))
}

#[test]
fn left_out_keys_are_the_agent_sections() {
    let config = config();
    let set = sources(&config).build(vec![file("notes", "+++\nmax_steps = 2\n+++\nTake notes.")]);
    let default = set.default_profile();
    assert_eq!((default.name.as_str(), default.is_named()), ("default", false));
    assert_eq!(default.models, ["up/base"]);
    assert_eq!(default.system_prompt, prompt::DEFAULT_SYSTEM_PROMPT);
    let writer = set.get("writer").unwrap();
    assert_eq!(writer.models, ["up/a", "up/b"]);
    assert_eq!(writer.max_steps, 7);
    assert_eq!(
        (writer.sampling.temperature, writer.sampling.top_p),
        (Some(0.3), Some(0.8))
    );
    assert_eq!(writer.system_prompt, "You write.");
    assert_eq!(writer.source, ProfileSource::Config);
    let notes = set.get("notes").unwrap();
    assert_eq!(
        (notes.max_steps, notes.models.as_slice()),
        (2, &["up/base".to_string()][..])
    );
    assert_eq!(notes.system_prompt, "Take notes.");
    assert_eq!(notes.max_steps_key(), "max_steps of agents/notes.md");
    let names: Vec<&str> = set.named().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["notes", "writer"]);
}

#[test]
fn a_file_with_a_mistake_or_a_taken_name_is_left_out_with_why() {
    let config = config();
    let set = sources(&config).build(vec![
        file("writer", "+++\n+++\nAgain."),
        file("default", "+++\n+++\n"),
        file("hot", "+++\ntemperature = 9\n+++\n"),
        (
            PathBuf::from("agents/gone.md"),
            Err(std::io::Error::other("vanished")),
        ),
        file("ok", "+++\n+++\n"),
    ]);
    let why: Vec<String> = set.rejected().iter().map(ToString::to_string).collect();
    assert_eq!(
        why,
        [
            "agents/writer.md: name: \"writer\" is defined by [[agents]] in the config file",
            "agents/default.md: name: \"default\" is the [agent] section's profile",
            "agents/hot.md: temperature: 9 is outside 0..=2 (agent.temperature_limit)",
            "agents/gone.md: cannot read the file: vanished",
        ]
    );
    assert!(set.get("ok").is_some());
    assert_eq!(set.get("writer").unwrap().source, ProfileSource::Config);
}

#[test]
fn config_profiles_are_checked_with_the_field_named() {
    let parse = |text: &str| {
        Config::parse(text, Path::new("hub.toml"))
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert!(parse("[[agents]]\nname = \"a\"\nmodel = \"x\"\n").is_ok());
    for (text, expected) in [
        ("[[agents]]\nname = \"A b\"\n", "agents.0.name: \"A b\" must be"),
        (
            "[[agents]]\nname = \"a\"\ntop_p = 2.0\n",
            "agents.a.top_p: 2 must be greater than 0 and at most 1",
        ),
        (
            "[[agents]]\nname = \"default\"\n",
            "agents.default: the name is reserved",
        ),
        (
            "[[agents]]\nname = \"a\"\n[[agents]]\nname = \"a\"\n",
            "agents: name \"a\" is used twice",
        ),
        (
            "[agent]\ntemperature_limit = 1.0\n[[agents]]\nname = \"a\"\ntemperature = 1.2\n",
            "agents.a.temperature: 1.2 is outside 0..=1",
        ),
        (
            "[agent]\nmax_output_tokens = 0\n",
            "agent.max_output_tokens: 0 is outside 1..=131072",
        ),
        ("[[agents]]\nname = \"a\"\ncolour = 1\n", "colour"),
    ] {
        let e = parse(text).unwrap_err();
        assert!(e.contains(expected), "{e}\nexpected: {expected}");
    }
}
