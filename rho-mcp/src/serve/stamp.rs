//! A result on 2026-07-28 names its server: with no handshake to say who
//! answers, each result carries the server's identity in `_meta`, under
//! `io.modelcontextprotocol/serverInfo` (as the Python SDK's servers
//! stamp every result). An identity already there stays: a proxied
//! server's, passed on with its answer, is the one its client should see.
//! Results to clients before 2026-07-28 are left as they are.

use rmcp::model::{
    CallToolResponse, CompleteResult, GetPromptResponse, GetTaskResult, Implementation,
    InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, MetaObject, ReadResourceResponse,
};

/// Where a 2026-07-28 result names its server.
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// A result that can carry its server's identity.
pub(crate) trait Stamp {
    /// Puts `identity` in the result's `_meta`, unless one is there.
    fn stamp(&mut self, identity: &Implementation);
}

/// `result`, stamped with `identity` when its request is on 2026-07-28 or
/// later (`modern`).
pub(crate) fn stamped<T: Stamp>(mut result: T, modern: bool, identity: &Implementation) -> T {
    if modern {
        result.stamp(identity);
    }
    result
}

fn stamp_meta(meta: &mut Option<MetaObject>, identity: &Implementation) {
    let meta = meta.get_or_insert_default();
    if meta.get(SERVER_INFO).is_none_or(serde_json::Value::is_null) {
        // An `Implementation` is strings, lists and maps: it always
        // serializes.
        if let Ok(identity) = serde_json::to_value(identity) {
            meta.insert(SERVER_INFO.to_owned(), identity);
        }
    }
}

macro_rules! stamp_results {
    ($($result:ty),*) => {$(
        impl Stamp for $result {
            fn stamp(&mut self, identity: &Implementation) {
                stamp_meta(&mut self.meta, identity);
            }
        }
    )*};
}

stamp_results!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    CompleteResult,
    GetTaskResult,
    InputRequiredResult
);

impl Stamp for CallToolResponse {
    fn stamp(&mut self, identity: &Implementation) {
        match self {
            CallToolResponse::Complete(result) => stamp_meta(&mut result.meta, identity),
            CallToolResponse::InputRequired(result) => result.stamp(identity),
            CallToolResponse::Task(result) => stamp_meta(&mut result.meta, identity),
            // A kind rmcp adds later goes unstamped: the stamp is a
            // courtesy, never worth an error.
            _ => {}
        }
    }
}

impl Stamp for ReadResourceResponse {
    fn stamp(&mut self, identity: &Implementation) {
        match self {
            ReadResourceResponse::Complete(result) => stamp_meta(&mut result.meta, identity),
            ReadResourceResponse::InputRequired(result) => result.stamp(identity),
            _ => {}
        }
    }
}

impl Stamp for GetPromptResponse {
    fn stamp(&mut self, identity: &Implementation) {
        match self {
            GetPromptResponse::Complete(result) => stamp_meta(&mut result.meta, identity),
            GetPromptResponse::InputRequired(result) => result.stamp(identity),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::CallToolResult;

    #[test]
    fn a_modern_result_is_stamped_and_an_identity_already_there_stays() {
        let ours = Implementation::new("rho-mcp", "1");
        let stamped_result = stamped(ListToolsResult::default(), true, &ours);
        let meta = stamped_result.meta.expect("stamped");
        assert_eq!(meta[SERVER_INFO]["name"], "rho-mcp");

        let mut theirs = CallToolResult::success(Vec::new());
        let mut meta = MetaObject::default();
        meta.insert(
            SERVER_INFO.to_owned(),
            serde_json::json!({ "name": "upstream", "version": "2" }),
        );
        theirs.meta = Some(meta);
        let response = stamped(CallToolResponse::Complete(theirs), true, &ours);
        let CallToolResponse::Complete(result) = response else {
            panic!("a complete result");
        };
        assert_eq!(result.meta.expect("kept")[SERVER_INFO]["name"], "upstream");
    }

    #[test]
    fn an_older_clients_result_is_left_as_it_is() {
        let ours = Implementation::new("rho-mcp", "1");
        assert!(
            stamped(ListToolsResult::default(), false, &ours)
                .meta
                .is_none()
        );
    }
}
