//! Sampling parameters: a profile's, a request's over them (where the surface
//! carries them: OpenAI's `temperature`, `top_p`, `max_tokens` /
//! `max_completion_tokens`, Anthropic's `temperature`, `top_p`, `max_tokens`),
//! checked against the operator's limits, and written into the upstream request.

use crate::config::{SamplingLimits, sampling_problem};
use serde_json::{Map, Value};

/// Temperature, top_p and the answer's token limit; each `None` is not sent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sampling {
    /// `temperature`.
    pub temperature: Option<f64>,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `max_tokens` upstream.
    pub max_output_tokens: Option<u64>,
}

/// A requested sampling value outside the operator's limits (400).
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingError {
    /// The parameter (as the hub names it: `temperature`, `top_p`, `max_output_tokens`).
    pub field: &'static str,
    /// Why, naming the limit's config key.
    pub why: String,
}

impl std::fmt::Display for SamplingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.why)
    }
}

impl std::error::Error for SamplingError {}

impl Sampling {
    /// `request`'s values over these, each checked against `limits`.
    pub fn with(&self, request: &Sampling, limits: &SamplingLimits) -> Result<Sampling, SamplingError> {
        if let Some((field, why)) = sampling_problem(
            request.temperature,
            request.top_p,
            request.max_output_tokens,
            limits,
        ) {
            return Err(SamplingError { field, why });
        }
        Ok(Sampling {
            temperature: request.temperature.or(self.temperature),
            top_p: request.top_p.or(self.top_p),
            max_output_tokens: request.max_output_tokens.or(self.max_output_tokens),
        })
    }

    /// Sets the values that are set on an OpenAI chat-completions `body`.
    pub fn apply(&self, body: &mut Map<String, Value>) {
        if let Some(t) = self.temperature {
            body.insert("temperature".into(), Value::from(t));
        }
        if let Some(p) = self.top_p {
            body.insert("top_p".into(), Value::from(p));
        }
        if let Some(n) = self.max_output_tokens {
            body.insert("max_tokens".into(), Value::from(n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIMITS: SamplingLimits = SamplingLimits {
        temperature: 1.0,
        max_output_tokens: 500,
    };

    #[test]
    fn a_request_overrides_within_the_limits() {
        let profile = Sampling {
            temperature: Some(0.2),
            top_p: None,
            max_output_tokens: Some(100),
        };
        let request = Sampling {
            temperature: None,
            top_p: Some(0.5),
            max_output_tokens: Some(200),
        };
        let merged = profile.with(&request, &LIMITS).unwrap();
        let mut body = Map::new();
        merged.apply(&mut body);
        assert_eq!(
            Value::Object(body),
            json!({"temperature": 0.2, "top_p": 0.5, "max_tokens": 200})
        );
        let too_hot = Sampling {
            temperature: Some(1.5),
            ..Sampling::default()
        };
        let e = profile.with(&too_hot, &LIMITS).unwrap_err();
        assert_eq!(
            e.to_string(),
            "temperature: 1.5 is outside 0..=1 (agent.temperature_limit)"
        );
        let too_long = Sampling {
            max_output_tokens: Some(501),
            ..Sampling::default()
        };
        let e = profile.with(&too_long, &LIMITS).unwrap_err();
        assert!(e.to_string().contains("agent.max_output_tokens_limit"), "{e}");
        let mut none = Map::new();
        Sampling::default().apply(&mut none);
        assert!(none.is_empty(), "nothing set, nothing sent");
    }
}
