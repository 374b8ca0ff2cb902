//! Accounting of the model calls a surface makes for a client outside the agent
//! loop (the OpenAI-compatible proxy, the Anthropic surface's client-tools mode):
//! one `hub::accounting` model-step record per call, with the target that answered.

use super::App;
use crate::hub::Caller;
use crate::hub::accounting::{Accounting, Entry, ModelStep};
use crate::llm::{Route, Usage};
use std::sync::Arc;
use std::time::Instant;

/// One model call a surface sends for a client, on its way to accounting.
pub(crate) struct StepAccounting {
    accounting: Arc<Accounting>,
    caller: String,
    client: Option<String>,
    started: Instant,
}

impl StepAccounting {
    pub(crate) fn start(app: &App, caller: &Caller) -> StepAccounting {
        StepAccounting {
            accounting: app.hub.accounting().clone(),
            caller: caller.name().to_string(),
            client: caller.client().map(str::to_string),
            started: Instant::now(),
        }
    }

    /// Records the call `route` answered, with the usage the provider reported.
    pub(crate) fn done(self, route: &Route, usage: Option<Usage>) {
        let step = ModelStep::measured(
            &route.provider.config.name,
            &route.model,
            usage,
            self.started.elapsed(),
        );
        let client = self.client.as_deref();
        self.accounting
            .account(None, &self.caller, client, None, Entry::ModelStep(step));
    }
}
