//! A step's tool calls: each one run concurrently through the hub (or, when the
//! approval policy asks the user, turned into a `tool-approval-request`), their
//! results sent back in order; and, in a continued message, the calls whose
//! approval the user answered (approved ones run, denied ones reported).

use super::*;

impl Runner<'_> {
    /// Runs the calls whose approvals this request answered, before the next step;
    /// `Some` ends the turn there.
    pub(super) async fn resume_answered(&mut self, system: &str, budget: &mut Budget) -> Option<Outcome> {
        let messages = self.messages(system);
        let used = budget.limits().counter.count(&Value::Array(messages).to_string());
        budget.set_used(used);
        if !self.run_answered(budget).await {
            return Some(Outcome::Aborted);
        }
        if let Err(e) = self.save(true).await {
            return Some(self.fail(format!("cannot store the conversation: {e}")));
        }
        None
    }

    /// Whether the (continued) assistant message holds approvals the user answered.
    pub(super) fn has_answered_approvals(&self) -> bool {
        self.sink.with_message(|m| {
            m.parts
                .iter()
                .any(|p| matches!(p, Part::Tool(t) if t.state == ToolState::ApprovalResponded))
        })
    }

    /// The calls whose approval the user answered: denied ones get
    /// `tool-output-denied` (the model is told so, with the reason), approved ones run
    /// with the approval on record. Returns false when the turn was cancelled.
    async fn run_answered(&mut self, budget: &mut Budget) -> bool {
        let answered: Vec<(String, String, Value, String, bool)> = self.sink.with_message(|m| {
            m.parts
                .iter()
                .filter_map(|p| match p {
                    Part::Tool(t) if t.state == ToolState::ApprovalResponded => {
                        let a = t.approval.as_ref()?;
                        Some((
                            t.tool_call_id.clone(),
                            t.tool_name.clone(),
                            t.input.clone().unwrap_or(Value::Null),
                            a.id.clone(),
                            a.approved == Some(true),
                        ))
                    }
                    _ => None,
                })
                .collect()
        });
        let mut tasks: JoinSet<(String, ToolResult)> = JoinSet::new();
        for (call_id, name, input, approval_id, approved) in answered {
            if !approved {
                crate::info!(
                    "chat session {}: the user denied tool call {call_id} (approval {approval_id})",
                    self.turn.session.id
                );
                self.sink.emit(&[UiChunk::ToolOutputDenied {
                    tool_call_id: call_id,
                }]);
                continue;
            }
            let by = format!(
                "user of session {} (approval {approval_id})",
                self.turn.session.id
            );
            self.spawn_call(&mut tasks, call_id, name, input, Some(by));
        }
        self.collect(tasks, budget).await
    }

    /// Starts one tool call of the hub on `tasks`.
    fn spawn_call(
        &self,
        tasks: &mut JoinSet<(String, ToolResult)>,
        id: String,
        name: String,
        input: Value,
        approved_by: Option<String>,
    ) {
        let hub = self.env.hub.clone();
        let ctx = CallContext {
            caller: self.turn.caller.clone(),
            cancel: self.turn.live.cancel.child(),
            progress: None,
            approved_by,
            session: Some(self.turn.session.id.as_str().into()),
            agent: self
                .turn
                .profile
                .is_named()
                .then(|| self.turn.profile.name.as_str().into()),
            parent: self.turn.parent.clone(),
        };
        let mut span = super::spans::tool_span(&name, &id);
        let context = span.context().cloned();
        tasks.spawn(crate::telemetry::within(context, async move {
            let answer = match MetaToolRequest::parse(&name, input) {
                Ok(request) => hub.invoke(request, ctx).await,
                Err(e) => Err(e),
            };
            super::spans::end_tool(&mut span, &answer);
            let result = match answer {
                Ok(output) => ToolResult::Output(output),
                Err(e) => ToolResult::Error(e.to_string()),
            };
            (id, result)
        }));
    }

    /// Runs a step's tool calls concurrently and sends each result as it arrives.
    /// Calls that need the user's approval are not run: their approvals are
    /// recorded with the session and asked for (`tool-approval-request`).
    pub(super) async fn run_tools(
        &mut self,
        calls: &[ModelToolCall],
        budget: &mut Budget,
    ) -> Result<ToolsDone, crate::storage::StorageError> {
        let mut tasks: JoinSet<(String, ToolResult)> = JoinSet::new();
        let mut issued = Vec::new();
        let mut requests = Vec::new();
        for call in calls {
            let input = match &call.arguments {
                Ok(input) => input.clone(),
                // `tool-input-error` was sent by the step and the part is already in
                // its error state; the model is told through that part's result.
                Err(_) => continue,
            };
            // With an operator approving, the call protocol itself asks (and waits).
            let asks = match self.turn.approvals {
                Approver::User => approval::asks(&self.env.hub, &self.turn.caller, &call.name, &input),
                Approver::Operator => None,
            };
            if let Some(ask) = asks {
                let message_id = self.sink.with_message(|m| m.id.clone());
                let record = approval::issue(&message_id, &call.id, &input, &ask);
                requests.push(UiChunk::ToolApprovalRequest {
                    approval_id: record.id.clone(),
                    tool_call_id: call.id.clone(),
                    reason: Some(ask.reason),
                });
                issued.push(record);
                continue;
            }
            self.spawn_call(&mut tasks, call.id.clone(), call.name.clone(), input, None);
        }
        if !issued.is_empty() {
            // Recorded before anyone can see the ids.
            if let Err(e) = self
                .env
                .sessions
                .issue_approvals(&self.turn.session.id, &issued)
                .await
            {
                tasks.abort_all();
                return Err(e);
            }
            self.sink.emit(&requests);
        }
        Ok(if !self.collect(tasks, budget).await {
            ToolsDone::Cancelled
        } else if issued.is_empty() {
            ToolsDone::Ran
        } else {
            ToolsDone::Paused
        })
    }

    /// Sends each call's result as it arrives. Returns false when the turn was
    /// cancelled meanwhile.
    async fn collect(&mut self, mut tasks: JoinSet<(String, ToolResult)>, budget: &mut Budget) -> bool {
        let cancel = self.turn.live.cancel.clone();
        // The step that asked for these calls: this request's latest, or (for calls
        // approved since) the message's last before it.
        let step = (self.steps_before() + self.steps).saturating_sub(1);
        loop {
            let joined = match race(cancel.cancelled(), tasks.join_next()).await {
                Race::First(()) => {
                    // The hub calls see the cancelled token; give them a moment to stop
                    // and record it, then drop whatever is still running.
                    let _ = tokio::time::timeout(CANCEL_GRACE, async {
                        while tasks.join_next().await.is_some() {}
                    })
                    .await;
                    tasks.abort_all();
                    return false;
                }
                Race::Second(joined) => joined,
            };
            let Some(joined) = joined else { return true };
            let (id, result) = match joined {
                Ok(pair) => pair,
                Err(e) => {
                    crate::error!("a tool call task failed: {e}");
                    continue;
                }
            };
            let ledger = self.ledger();
            let chunk = result_chunk(id, result, budget, |event| {
                usage::record_guard(&ledger, &self.env.guard, step, event)
            });
            self.sink.emit(&[chunk]);
        }
    }
}
