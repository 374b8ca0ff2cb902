//! The MCP method names this server knows, as one enum: parsed from the wire
//! string once, matched as variants everywhere else. Names a peer sends that are
//! not listed here stay strings (they are answered with -32601 naming them).

/// A method of either revision the server answers, sends, or checks headers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum McpMethod {
    Initialize,
    Ping,
    ServerDiscover,
    ToolsList,
    ToolsCall,
    PromptsList,
    /// Not served (no prompts), but its name is mirrored in `Mcp-Name`.
    PromptsGet,
    ResourcesList,
    /// Not served (no resources), but its URI is mirrored in `Mcp-Name`.
    ResourcesRead,
    ResourcesTemplatesList,
    NotificationsCancelled,
    NotificationsProgress,
    /// Sent to clients (approval questions), never served.
    ElicitationCreate,
}

impl McpMethod {
    /// Every known method: the one list `parse` reads.
    pub(crate) const ALL: [McpMethod; 13] = [
        McpMethod::Initialize,
        McpMethod::Ping,
        McpMethod::ServerDiscover,
        McpMethod::ToolsList,
        McpMethod::ToolsCall,
        McpMethod::PromptsList,
        McpMethod::PromptsGet,
        McpMethod::ResourcesList,
        McpMethod::ResourcesRead,
        McpMethod::ResourcesTemplatesList,
        McpMethod::NotificationsCancelled,
        McpMethod::NotificationsProgress,
        McpMethod::ElicitationCreate,
    ];

    /// The wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            McpMethod::Initialize => "initialize",
            McpMethod::Ping => "ping",
            McpMethod::ServerDiscover => "server/discover",
            McpMethod::ToolsList => "tools/list",
            McpMethod::ToolsCall => "tools/call",
            McpMethod::PromptsList => "prompts/list",
            McpMethod::PromptsGet => "prompts/get",
            McpMethod::ResourcesList => "resources/list",
            McpMethod::ResourcesRead => "resources/read",
            McpMethod::ResourcesTemplatesList => "resources/templates/list",
            McpMethod::NotificationsCancelled => "notifications/cancelled",
            McpMethod::NotificationsProgress => "notifications/progress",
            McpMethod::ElicitationCreate => "elicitation/create",
        }
    }

    /// The method named `wire` (exact, case-sensitive), if known.
    pub(crate) fn parse(wire: &str) -> Option<McpMethod> {
        McpMethod::ALL.into_iter().find(|m| m.as_str() == wire)
    }

    /// A `*/list` method (its stateless results carry caching hints).
    pub(crate) fn is_list(self) -> bool {
        matches!(
            self,
            McpMethod::ToolsList
                | McpMethod::PromptsList
                | McpMethod::ResourcesList
                | McpMethod::ResourcesTemplatesList
        )
    }

    /// The param whose value the stateless revision mirrors in `Mcp-Name`.
    pub(crate) fn name_param(self) -> Option<&'static str> {
        match self {
            McpMethod::ToolsCall | McpMethod::PromptsGet => Some("name"),
            McpMethod::ResourcesRead => Some("uri"),
            _ => None,
        }
    }
}

impl std::fmt::Display for McpMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_parses_back_from_its_wire_name() {
        for m in McpMethod::ALL {
            assert_eq!(McpMethod::parse(m.as_str()), Some(m));
        }
        assert_eq!(McpMethod::parse("TOOLS/LIST"), None);
        assert_eq!(McpMethod::parse("logging/setLevel"), None);
        assert!(McpMethod::ResourcesTemplatesList.is_list() && !McpMethod::ToolsCall.is_list());
    }
}
