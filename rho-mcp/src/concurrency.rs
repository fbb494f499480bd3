//! A server's word on how many calls it takes at once.
//!
//! Some servers cannot take parallel calls: they handle one request at a
//! time, or corrupt shared state when two overlap. MCP (up to 2026-07-28)
//! has no field in which a server says so, so rho says it in an
//! experimental capability, [`CONCURRENCY_CAPABILITY`]:
//!
//! ```json
//! { "capabilities": { "experimental": { "rho/concurrency": { "maxConcurrentCalls": 1 } } } }
//! ```
//!
//! rho's server declares it when its host asks
//! ([`McpServer::advertise_max_concurrent_calls`](crate::McpServer::advertise_max_concurrent_calls);
//! `rho-mcp proxy --max-concurrent-calls N` does), and rho's import bounds
//! a source by it when the host set no bound of its own
//! ([`McpSourceBuilder::max_concurrent_calls`](crate::import::McpSourceBuilder::max_concurrent_calls)).
//! Any server may declare it; a value that is not a whole number of at
//! least 1 is ignored.

use rmcp::model::{JsonObject, ServerCapabilities};
use serde_json::Value;

/// The experimental capability in which a server says how many calls it
/// takes at once: `{"maxConcurrentCalls": N}`, N >= 1.
pub const CONCURRENCY_CAPABILITY: &str = "rho/concurrency";

/// The field of [`CONCURRENCY_CAPABILITY`] that holds the bound.
const MAX_CALLS: &str = "maxConcurrentCalls";

/// Declares in `capabilities` that the server takes `calls` calls at once
/// (`0` counts as `1`).
pub(crate) fn declare(capabilities: &mut ServerCapabilities, calls: usize) {
    let mut word = JsonObject::new();
    word.insert(MAX_CALLS.to_owned(), Value::from(calls.max(1)));
    capabilities
        .experimental
        .get_or_insert_with(Default::default)
        .insert(CONCURRENCY_CAPABILITY.to_owned(), word);
}

/// How many calls at once the server that declared `capabilities` takes,
/// if it said so in a form that can be read.
pub(crate) fn declared(capabilities: &ServerCapabilities) -> Option<usize> {
    let calls = capabilities
        .experimental
        .as_ref()?
        .get(CONCURRENCY_CAPABILITY)?
        .get(MAX_CALLS)?
        .as_u64()?;
    usize::try_from(calls).ok().filter(|calls| *calls >= 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn capabilities(experimental: Value) -> ServerCapabilities {
        serde_json::from_value(json!({ "experimental": experimental })).expect("capabilities")
    }

    /// Property: what is declared is read back, as it goes over the wire.
    #[test]
    fn a_declared_bound_is_read_back() {
        for calls in [1, 2, 64] {
            let mut declaring = ServerCapabilities::default();
            declare(&mut declaring, calls);
            let wire = serde_json::to_value(&declaring).expect("serializes");
            let read: ServerCapabilities = serde_json::from_value(wire).expect("deserializes");
            assert_eq!(declared(&read), Some(calls));
        }
        let mut zero = ServerCapabilities::default();
        declare(&mut zero, 0);
        assert_eq!(declared(&zero), Some(1), "0 counts as 1");
    }

    /// Property: a bound that is missing, or not a whole number of at
    /// least 1, is no bound.
    #[test]
    fn a_bound_that_cannot_be_read_is_none() {
        assert_eq!(declared(&ServerCapabilities::default()), None);
        for word in [
            json!({}),
            json!({ "maxConcurrentCalls": 0 }),
            json!({ "maxConcurrentCalls": -1 }),
            json!({ "maxConcurrentCalls": 1.5 }),
            json!({ "maxConcurrentCalls": "1" }),
            json!({ "maxConcurrentCalls": null }),
        ] {
            let read = capabilities(json!({ CONCURRENCY_CAPABILITY: word }));
            assert_eq!(declared(&read), None, "{word}");
        }
        let other = capabilities(json!({ "elsewhere/concurrency": { "maxConcurrentCalls": 1 } }));
        assert_eq!(declared(&other), None);
    }
}
