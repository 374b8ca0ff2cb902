//! Agent profiles: the named agents clients reach (by `model` on the chat
//! surfaces, `/v1/agents/{name}`, the `agent` key of `/api/chat`) and the default
//! one (`[agent]`) used when a request names none.
//!
//! A profile comes from `[[agents]]` in the config file or from a Markdown file
//! in `agents_dir` ([`markdown`]); the folder is watched ([`watch`]) so adding,
//! editing or removing a file takes effect without a restart, and a file with a
//! mistake is left out with an error naming the file and the field (logged, and
//! listed by [`ProfileSet::rejected`]). Every key a profile leaves out is the
//! `[agent]` section's. [`Sampling`] merges a request's sampling parameters over a
//! profile's within the operator's limits.

mod markdown;
mod sampling;
mod watch;

pub use sampling::{Sampling, SamplingError};

use super::prompt;
use crate::config::{AgentConfig, AgentProfileConfig, Config, DEFAULT_AGENT, SamplingLimits};
use crate::hub::ProfileApprovals;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Where a profile was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileSource {
    /// The `[agent]` section.
    AgentSection,
    /// `[[agents]]` in the config file.
    Config,
    /// A Markdown file of the agents folder.
    File(PathBuf),
}

/// One agent, every key resolved.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Its name ([`DEFAULT_AGENT`] for `[agent]`).
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Model names tried in order; empty when neither the profile nor `[agent]`
    /// names one (then the request must).
    pub models: Vec<String>,
    /// Operation patterns it may call, within its caller's allowlist.
    pub allow: Option<Vec<String>>,
    /// Its own approval policy, which tightens its caller's.
    pub approvals: Option<ProfileApprovals>,
    /// Most model steps in one turn.
    pub max_steps: u32,
    /// The sampling parameters sent upstream.
    pub sampling: Sampling,
    /// The system prompt (the built-in one when none is configured).
    pub system_prompt: String,
    /// The schema of a JSON answer when the request brings none.
    pub output_schema: Option<serde_json::Value>,
    /// Where it was defined.
    pub source: ProfileSource,
}

impl Profile {
    /// The default profile of `agent` (`[agent]`).
    fn default_of(agent: &AgentConfig) -> Profile {
        Profile {
            name: DEFAULT_AGENT.to_string(),
            description: "The hub's default agent ([agent])".into(),
            models: agent.model.iter().cloned().collect(),
            allow: None,
            approvals: None,
            max_steps: agent.max_steps.max(1),
            sampling: Sampling {
                temperature: agent.temperature,
                top_p: agent.top_p,
                max_output_tokens: agent.max_output_tokens,
            },
            system_prompt: prompt::system_prompt(agent.system_prompt.as_deref()).to_string(),
            output_schema: None,
            source: ProfileSource::AgentSection,
        }
    }

    /// `config` over the default profile `base`.
    fn over(base: &Profile, config: &AgentProfileConfig, source: ProfileSource) -> Profile {
        Profile {
            name: config.name.clone(),
            description: config.description.clone(),
            models: config
                .model
                .as_ref()
                .map_or_else(|| base.models.clone(), |m| m.names()),
            allow: config.allow.clone(),
            approvals: config.approvals.clone().map(|policy| ProfileApprovals {
                prefix: match &source {
                    ProfileSource::File(path) => format!("{} approvals", path.display()),
                    _ => format!("agents[name={}].approvals", config.name),
                },
                policy,
            }),
            max_steps: config.max_steps.unwrap_or(base.max_steps),
            sampling: Sampling {
                temperature: config.temperature.or(base.sampling.temperature),
                top_p: config.top_p.or(base.sampling.top_p),
                max_output_tokens: config.max_output_tokens.or(base.sampling.max_output_tokens),
            },
            system_prompt: config
                .system_prompt
                .as_deref()
                .filter(|p| !p.trim().is_empty())
                .map_or_else(|| base.system_prompt.clone(), str::to_string),
            output_schema: config.output_schema.clone(),
            source,
        }
    }

    /// The config key that sets its step limit, for messages.
    pub fn max_steps_key(&self) -> String {
        match &self.source {
            ProfileSource::AgentSection => "[agent] max_steps".into(),
            ProfileSource::Config => format!("[[agents]] {} max_steps", self.name),
            ProfileSource::File(path) => format!("max_steps of {}", path.display()),
        }
    }

    /// Whether it is a named agent (not `[agent]`'s).
    pub fn is_named(&self) -> bool {
        self.source != ProfileSource::AgentSection
    }
}

/// A profile file left out, and why.
#[derive(Debug)]
pub struct ProfileError {
    /// The file.
    pub file: PathBuf,
    /// What is wrong, naming the field.
    pub problem: String,
}

impl ProfileError {
    fn new(file: &Path, problem: String) -> ProfileError {
        ProfileError {
            file: file.to_owned(),
            problem,
        }
    }
}

impl std::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.problem)
    }
}

impl std::error::Error for ProfileError {}

/// The profiles in force at one moment.
#[derive(Debug)]
pub struct ProfileSet {
    default: Arc<Profile>,
    named: BTreeMap<String, Arc<Profile>>,
    rejected: Vec<ProfileError>,
}

impl ProfileSet {
    /// The default profile (`[agent]`).
    pub fn default_profile(&self) -> &Arc<Profile> {
        &self.default
    }

    /// The named agent `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Profile>> {
        self.named.get(name)
    }

    /// The named agents, by name.
    pub fn named(&self) -> impl Iterator<Item = &Arc<Profile>> {
        self.named.values()
    }

    /// The files of the agents folder left out, and why.
    pub fn rejected(&self) -> &[ProfileError] {
        &self.rejected
    }
}

/// What the profile set is built from: the config's profiles and limits.
struct Sources {
    default: Arc<Profile>,
    configured: Vec<AgentProfileConfig>,
    limits: SamplingLimits,
    dir: PathBuf,
}

impl Sources {
    /// The set of the config's profiles and `files` (path, text), in path order.
    fn build(&self, files: Vec<(PathBuf, std::io::Result<String>)>) -> ProfileSet {
        let mut named = BTreeMap::new();
        for c in &self.configured {
            named.insert(
                c.name.clone(),
                Arc::new(Profile::over(&self.default, c, ProfileSource::Config)),
            );
        }
        let mut rejected = Vec::new();
        for (path, text) in files {
            let parsed = text
                .map_err(|e| ProfileError::new(&path, format!("cannot read the file: {e}")))
                .and_then(|text| markdown::parse(&path, &text, &self.limits))
                .and_then(|c| {
                    if c.name == DEFAULT_AGENT {
                        Err(ProfileError::new(
                            &path,
                            format!("name: {DEFAULT_AGENT:?} is the [agent] section's profile"),
                        ))
                    } else if named.contains_key(&c.name) {
                        Err(ProfileError::new(
                            &path,
                            format!("name: {:?} is defined by [[agents]] in the config file", c.name),
                        ))
                    } else {
                        Ok(c)
                    }
                });
            match parsed {
                Ok(c) => {
                    let profile = Profile::over(&self.default, &c, ProfileSource::File(path));
                    named.insert(c.name, Arc::new(profile));
                }
                Err(e) => rejected.push(e),
            }
        }
        ProfileSet {
            default: self.default.clone(),
            named,
            rejected,
        }
    }
}

/// Called with the new set whenever the profiles change (and once at start).
pub type OnProfiles = Box<dyn Fn(&ProfileSet) + Send + Sync>;

/// The profiles in force, replaced as the agents folder changes.
pub struct Profiles {
    current: RwLock<Arc<ProfileSet>>,
    sources: Sources,
    on_change: OnProfiles,
}

impl Profiles {
    /// The profiles of `config`, the agents folder read now and then followed on a
    /// task of its own, which ends once the profiles are dropped. Call it on a
    /// tokio runtime.
    pub fn start(config: &Config, on_change: OnProfiles) -> Arc<Profiles> {
        let sources = Sources {
            default: Arc::new(Profile::default_of(&config.agent)),
            configured: config.agents.clone(),
            limits: config.agent.sampling_limits(),
            dir: config.agents_dir.clone(),
        };
        let found = watch::scan(&sources.dir);
        let set = sources.build(watch::read(&found));
        log_set(&set, &sources.dir);
        on_change(&set);
        let dir = sources.dir.clone();
        let profiles = Arc::new(Profiles {
            current: RwLock::new(Arc::new(set)),
            sources,
            on_change,
        });
        watch::spawn(Arc::downgrade(&profiles), dir, found);
        profiles
    }

    /// The profiles in force now.
    pub fn current(&self) -> Arc<ProfileSet> {
        self.current
            .read()
            .expect("the profiles lock is never poisoned")
            .clone()
    }

    /// The operator's sampling limits.
    pub fn limits(&self) -> &SamplingLimits {
        &self.sources.limits
    }

    /// Rebuilds the set from the folder's files.
    fn reload(&self, files: Vec<(PathBuf, std::io::Result<String>)>) {
        let set = self.sources.build(files);
        log_set(&set, &self.sources.dir);
        (self.on_change)(&set);
        *self.current.write().expect("the profiles lock is never poisoned") = Arc::new(set);
    }
}

fn log_set(set: &ProfileSet, dir: &Path) {
    let from_files = set
        .named()
        .filter(|p| matches!(p.source, ProfileSource::File(_)))
        .count();
    crate::info!(
        "agents: {} named ({} from {}), {} rejected",
        set.named.len(),
        from_files,
        dir.display(),
        set.rejected.len()
    );
    for e in &set.rejected {
        crate::warn!("agents: left out {e}");
    }
}

#[cfg(test)]
mod tests;
