//! The registry's name space: registration errors, listing, look-ups,
//! unknown names and trust.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rho_registry::{Refusal, RegistryError, Source, ToolRegistry};
use rho_tool_core::{Gate, Outcome, Tool, ToolCall, ToolContext, ToolOutput, Verdict, async_trait};
use support::{Class, run, runner, scripted, scripted_with_timeout};

fn names(registry: &ToolRegistry) -> Vec<String> {
    registry.tools().into_iter().map(|tool| tool.name).collect()
}

#[test]
fn two_sources_offering_one_name_is_an_error_naming_both() {
    let registry = ToolRegistry::new();
    let builtin = registry
        .add_source(Source::trusted("builtin"))
        .expect("new");
    let plugin = registry.add_source(Source::trusted("plugin")).expect("new");
    builtin.add(scripted("search")).expect("a new name");

    let error = plugin
        .add_all([scripted("fetch"), scripted("search")])
        .expect_err("`search` is taken");
    assert_eq!(
        error,
        RegistryError::DuplicateTool {
            tool: "search".into(),
            held_by: "builtin".into(),
            offered_by: "plugin".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "tool `search` of source `plugin` clashes with the tool of that name from source `builtin`"
    );
    // All or nothing: `fetch` was not added either.
    assert_eq!(names(&registry), ["search"]);
    assert!(plugin.tools().is_empty());

    // Twice in one batch, or again from the same source, is refused too;
    // `replace` is the way to swap one's own tool.
    let error = plugin
        .add_all([scripted("x"), scripted("x")])
        .expect_err("twice in one batch");
    assert!(matches!(error, RegistryError::DuplicateTool { held_by, .. } if held_by == "plugin"));
    assert!(builtin.add(scripted("search")).is_err());
    assert_eq!(builtin.replace(scripted("search")), Ok(true));
    assert!(plugin.replace(scripted("search")).is_err());
    assert_eq!(plugin.replace(scripted("fetch")), Ok(false));

    assert_eq!(
        registry.add_source(Source::untrusted("plugin")).map(|_| ()),
        Err(RegistryError::DuplicateSource {
            name: "plugin".into()
        })
    );
}

#[test]
fn the_listing_is_sorted_by_name_and_complete() {
    let registry = ToolRegistry::new();
    let agent = registry
        .add_source(Source::untrusted("agent"))
        .expect("new");
    let builtin = registry
        .add_source(Source::trusted("builtin"))
        .expect("new");
    agent
        .add_all([scripted("zeta"), scripted("beta")])
        .expect("new names");
    builtin
        .add_all([scripted("alpha"), scripted("mu")])
        .expect("new names");
    assert_eq!(names(&registry), ["alpha", "beta", "mu", "zeta"]);
    assert_eq!(registry.sources(), ["agent", "builtin"]);

    let beta = registry
        .tools()
        .into_iter()
        .find(|tool| tool.name == "beta")
        .expect("listed");
    assert_eq!((beta.source.as_str(), beta.untrusted), ("agent", true));
    assert_eq!(
        beta.to_json(),
        serde_json::json!({
            "name": "beta",
            "description": "Does what `do` says.",
            "parameters": {
                "type": "object",
                "properties": { "do": { "type": "string" } },
            },
        })
    );

    // `set_tools` swaps a source's whole set at once.
    agent
        .set_tools([scripted("beta"), scripted("gamma")])
        .expect("its own names");
    assert_eq!(names(&registry), ["alpha", "beta", "gamma", "mu"]);
    assert_eq!(agent.clear(), 2);
    assert_eq!(names(&registry), ["alpha", "mu"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_name_gets_the_nearest_names() {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("builtin"))
        .expect("new")
        .add_all(["read_file", "write_file", "list_dir", "grep"].map(scripted))
        .expect("new names");
    let runner = runner();

    let end = run(&registry, &runner, Class::Ok, "ReadFile").await;
    assert_eq!(end.outcome, Outcome::Refused);
    assert!(end.result.is_error);
    assert_eq!(
        end.result.text(),
        "no such tool `ReadFile`; the nearest tool is `read_file`"
    );
    let details = end.result.details.expect("refusals carry details");
    assert_eq!(
        details.get("refused").and_then(|d| d.as_str()),
        Some("unknown_tool")
    );

    match registry.resolve("rite_fil") {
        Err(Refusal::Unknown { nearest, .. }) => assert_eq!(nearest, ["write_file"]),
        other => panic!("{other:?}"),
    }
    match registry.resolve("file") {
        Err(refusal) => assert_eq!(
            refusal.to_string(),
            "no such tool `file`; the nearest tools are `read_file`, `write_file`"
        ),
        Ok(_) => panic!("there is no `file`"),
    }
    match registry.resolve("deploy") {
        Err(refusal) => assert_eq!(
            refusal.to_result().text(),
            "no such tool `deploy` (no tool has a similar name)"
        ),
        Ok(_) => panic!("there is no `deploy`"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_tool_or_source_gets_no_such_tool() {
    let registry = ToolRegistry::new();
    let agent = registry
        .add_source(Source::untrusted("agent"))
        .expect("new");
    agent
        .add_all([scripted("scrape"), scripted("summarise")])
        .expect("new names");
    let runner = runner();
    assert_eq!(
        run(&registry, &runner, Class::Ok, "scrape").await.outcome,
        Outcome::Succeeded
    );

    assert!(agent.remove("scrape"));
    assert!(!agent.remove("scrape"));
    let end = run(&registry, &runner, Class::Ok, "scrape").await;
    assert_eq!(end.outcome, Outcome::Refused);
    assert!(end.result.text().starts_with("no such tool `scrape`"));

    assert!(registry.remove_source("agent"));
    assert!(!registry.remove_source("agent"));
    assert!(!agent.is_registered());
    assert!(names(&registry).is_empty());
    assert_eq!(
        agent.add(scripted("scrape")),
        Err(RegistryError::SourceRemoved {
            name: "agent".into()
        })
    );
    // The name is free again, for a new source.
    let again = registry
        .add_source(Source::untrusted("agent"))
        .expect("free");
    again.add(scripted("scrape")).expect("free");
    assert!(!agent.is_registered() && again.is_registered());
}

/// A tool whose metadata panics.
struct Broken;

#[async_trait]
impl Tool for Broken {
    fn name(&self) -> &str {
        "broken"
    }

    fn description(&self) -> &str {
        panic!("no description")
    }

    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text("never")
    }
}

#[test]
fn a_tool_whose_metadata_panics_is_refused_at_registration() {
    let _quiet = support::QuietPanics::new();
    let registry = ToolRegistry::new();
    let source = registry.add_source(Source::trusted("plugin")).expect("new");
    let error = source.add(Arc::new(Broken)).expect_err("it panics");
    assert_eq!(
        error,
        RegistryError::BadTool {
            source_name: "plugin".into(),
            reason: "reading its metadata panicked: no description".into(),
        }
    );
    assert!(names(&registry).is_empty());
}

/// Lets only trusted tools run.
struct TrustedOnly;

#[async_trait]
impl Gate for TrustedOnly {
    async fn check(&self, _call: &ToolCall, tool: &dyn Tool) -> Verdict {
        if tool.is_untrusted() {
            Verdict::deny("untrusted tools are off")
        } else {
            Verdict::Allow
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_sees_what_the_source_says_about_trust() {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::untrusted("agent"))
        .expect("new")
        .add(scripted_with_timeout("mine", Duration::from_secs(7)))
        .expect("new");
    registry
        .add_source(Source::trusted("builtin"))
        .expect("new")
        .add(scripted("yours"))
        .expect("new");
    let resolved = registry.resolve("mine").expect("registered");
    assert!(resolved.tool().is_untrusted());
    assert!(resolved.info().untrusted);
    // The rest of the tool is unchanged.
    assert_eq!(resolved.tool().name(), "mine");
    assert_eq!(resolved.tool().timeout(), Duration::from_secs(7));

    let executor = rho_exec_tokio::TokioExecutor::current().expect("a timer");
    let runner = rho_tool_core::Runner::new(executor).with_gate(Arc::new(TrustedOnly));
    let mine = {
        let call = Class::Ok.call("1", "mine");
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    }
    .await;
    assert_eq!(mine.outcome, Outcome::Denied);
    let yours = {
        let call = Class::Ok.call("2", "yours");
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    }
    .await;
    assert_eq!(yours.outcome, Outcome::Succeeded);
    assert_eq!(yours.result.text(), "yours ok");
}
