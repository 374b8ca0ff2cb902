//! Accounting of the model calls a surface makes for a client outside the agent
//! loop (the OpenAI-compatible proxy, the Anthropic surface's client-tools mode):
//! one `hub::accounting` model-step record per call, with the target that answered.

use super::App;
use crate::hub::{Caller, StepReport};
use crate::llm::{Route, Usage};
use std::sync::Arc;
use std::time::Instant;

/// One model call a surface sends for a client, on its way to the accounting (`hub::accounting`).
pub(crate) struct StepMeter {
    hub: Arc<crate::hub::Hub>,
    caller: String,
    client: Option<String>,
    started: Instant,
}

impl StepMeter {
    pub(crate) fn start(app: &App, caller: &Caller) -> StepMeter {
        StepMeter {
            hub: app.hub.clone(),
            caller: caller.name().to_string(),
            client: caller.client().map(str::to_string),
            started: Instant::now(),
        }
    }

    /// Records the call `route` answered, with the usage the provider reported.
    pub(crate) fn done(self, route: &Route, usage: Option<Usage>) {
        self.hub.record_model_step(StepReport {
            session: None,
            message: None,
            step: 0,
            caller: &self.caller,
            client: self.client.as_deref(),
            provider: &route.provider.config.name,
            model: &route.model,
            usage,
            latency: self.started.elapsed(),
        });
    }
}
