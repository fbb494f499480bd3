//! Arguments are checked against the tool's schema before the gate.

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rho_tool_core::{Outcome, ToolContext, ToolOutput, async_trait};
use rho_turn::{Typed, TypedTool};
use serde_json::{Value, json};
use support::{CountingGate, Tools, call, executor, runtime, tool};

/// A schema with a field of every JSON type, all required, nothing else
/// allowed (also inside the nested object).
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string" },
            "count": { "type": "integer" },
            "ratio": { "type": "number" },
            "dry_run": { "type": "boolean" },
            "tags": { "type": "array", "items": { "type": "string" } },
            "options": {
                "type": "object",
                "properties": { "depth": { "type": "integer" } },
                "additionalProperties": false,
            },
            "nothing": { "type": "null" },
        },
        "required": ["name", "count", "ratio", "dry_run", "tags", "options", "nothing"],
        "additionalProperties": false,
    })
}

fn strict() -> impl rho_tool_core::Tool {
    tool("strict", |_args, _cx: ToolContext| async move {
        ToolOutput::text("ran")
    })
    .with_parameters(schema())
}

#[test]
fn every_failure_is_listed_in_one_error_and_the_gate_is_never_asked() {
    let runtime = runtime();
    let tools = Tools::new().add(strict());
    let gate = Arc::new(CountingGate::default());
    let turns = tools.turns(executor(&runtime), gate.clone());

    let wrong = json!({
        "name": 42,
        "count": "seven",
        "ratio": [1.5],
        "dry_run": "yes",
        "tags": ["ok", 3],
        "options": { "depth": 2.5, "colour": "red" },
        "nothing": false,
        "extra": true,
    });
    let missing = json!({ "name": "n" });
    let not_an_object = json!([1, 2, 3]);
    let good = json!({
        "name": "n", "count": 1, "ratio": 0.5, "dry_run": false,
        "tags": ["a"], "options": { "depth": 1 }, "nothing": null,
    });
    let entries = runtime.block_on(turns.turn([
        call("wrong", "strict", wrong.clone()),
        call("missing", "strict", missing),
        call("array", "strict", not_an_object),
        call("good", "strict", good),
    ]));

    // Only the good call reached the gate.
    assert_eq!(gate.asked.load(Ordering::SeqCst), 1);
    assert_eq!(entries[3].outcome, Outcome::Succeeded);
    assert_eq!(entries[3].text(), "ran");

    let text = entries[0].text();
    assert_eq!(entries[0].outcome, Outcome::Refused);
    assert!(entries[0].is_error());
    for expected in [
        "tool `strict` was not run: its arguments do not fit its schema (9 problems)",
        "at `/name`: 42 is not of type \"string\"",
        "at `/count`: \"seven\" is not of type \"integer\"",
        "at `/ratio`: [1.5] is not of type \"number\"",
        "at `/dry_run`: \"yes\" is not of type \"boolean\"",
        "at `/tags/1`: 3 is not of type \"string\"",
        "at `/options/depth`: 2.5 is not of type \"integer\"",
        "at `/options`: Additional properties are not allowed ('colour' was unexpected)",
        "at `/nothing`: false is not of type \"null\"",
        "at the arguments: Additional properties are not allowed ('extra' was unexpected)",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // The arguments are echoed, as compact JSON.
    assert!(
        text.contains(&format!("Arguments received: {wrong}")),
        "{text}"
    );
    let details = entries[0]
        .result
        .details
        .as_ref()
        .expect("details")
        .to_json();
    assert_eq!(details["refused"], "invalid_arguments");
    assert_eq!(details["errors"].as_array().expect("a list").len(), 9);

    let text = entries[1].text();
    assert!(text.contains("(6 problems)"), "{text}");
    for field in ["count", "ratio", "dry_run", "tags", "options", "nothing"] {
        let expected = format!("at the arguments: \"{field}\" is a required property");
        assert!(text.contains(&expected), "missing {expected:?} in:\n{text}");
    }
    let text = entries[2].text();
    assert!(text.contains("[1,2,3] is not of type \"object\""), "{text}");
    // One schema, compiled once for all four calls.
    assert_eq!(turns.schemas().len(), 1);
}

#[test]
fn a_huge_argument_echo_is_cut() {
    let runtime = runtime();
    let tools = Tools::new().add(strict());
    let turns = tools.turns(executor(&runtime), Arc::new(CountingGate::default()));
    let huge = json!({ "name": "x".repeat(100_000) });
    let entries = runtime.block_on(turns.turn([call("huge", "strict", huge)]));
    let text = entries[0].text();
    assert!(text.len() < 5_000, "{} bytes", text.len());
    assert!(text.contains("bytes cut"), "{text}");
}

#[test]
fn a_tool_with_an_invalid_schema_is_refused_with_a_clear_error() {
    let runtime = runtime();
    let broken = tool("broken", |_args, _cx: ToolContext| async move {
        ToolOutput::text("ran")
    })
    .with_parameters(json!({ "type": "objekt" }));
    let tools = Tools::new().add(broken);
    let gate = Arc::new(CountingGate::default());
    let turns = tools.turns(executor(&runtime), gate.clone());
    let entries = runtime.block_on(turns.turn([call("b", "broken", json!({}))]));
    let text = entries[0].text();
    assert_eq!(entries[0].outcome, Outcome::Refused);
    assert!(
        text.contains("tool `broken` was not run: its parameter schema is not a valid JSON Schema"),
        "{text}"
    );
    assert!(text.contains("objekt"), "{text}");
    assert_eq!(gate.asked.load(Ordering::SeqCst), 0);
}

/// A typed tool: the schema comes from the type.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ResizeArgs {
    /// Width in pixels.
    width: u32,
    /// Height in pixels.
    height: u32,
    /// Keep the aspect ratio.
    #[serde(default)]
    keep_ratio: bool,
}

struct Resize;

#[async_trait]
impl TypedTool for Resize {
    type Args = ResizeArgs;
    fn name(&self) -> &str {
        "resize"
    }
    fn description(&self) -> &str {
        "Resizes the picture."
    }
    async fn run(&self, args: ResizeArgs, _cx: ToolContext) -> ToolOutput {
        ToolOutput::text(format!(
            "{}x{} {}",
            args.width, args.height, args.keep_ratio
        ))
    }
}

#[test]
fn a_typed_tool_gets_its_schema_from_its_type() {
    let runtime = runtime();
    let tools = Tools::new().add(Typed::new(Resize));
    let gate = Arc::new(CountingGate::default());
    let turns = tools.turns(executor(&runtime), gate.clone());
    let entries = runtime.block_on(turns.turn([
        call("ok", "resize", json!({ "width": 640, "height": 480 })),
        call(
            "bad",
            "resize",
            json!({ "width": -1, "height": "tall", "depth": 3 }),
        ),
    ]));
    assert_eq!(entries[0].text(), "640x480 false");
    let text = entries[1].text();
    assert_eq!(entries[1].outcome, Outcome::Refused);
    assert!(
        text.contains("at `/width`: -1 is less than the minimum of 0"),
        "{text}"
    );
    assert!(
        text.contains("at `/height`: \"tall\" is not of type \"integer\""),
        "{text}"
    );
    assert!(text.contains("'depth' was unexpected"), "{text}");
    assert_eq!(gate.asked.load(Ordering::SeqCst), 1);
}

#[test]
fn arguments_the_type_cannot_take_end_with_an_error_naming_the_problem() {
    // Without validation, the typed tool's own deserialisation catches it.
    let runtime = runtime();
    let tools = Tools::new().add(Typed::new(Resize));
    let turns = tools
        .turns(executor(&runtime), Arc::new(CountingGate::default()))
        .with_validation(false);
    let entries = runtime.block_on(turns.turn([call("bad", "resize", json!({ "width": 1 }))]));
    assert_eq!(entries[0].outcome, Outcome::Failed);
    let text = entries[0].text();
    assert!(
        text.contains(
            "tool `resize` was not run: its arguments could not be read: missing field `height`"
        ),
        "{text}"
    );
}

/// A faulty call (here, a second call with the same id) of a quarantined
/// tool is refused, and the tool's source still hears of it as a refusal:
/// no path of a turn refuses a registered tool behind its source's back.
#[test]
fn a_faulty_call_of_a_quarantined_tool_still_reaches_its_source() {
    use rho_registry::{Accounting, QuarantineRule, Source, ToolRegistry};

    let runtime = runtime();
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(1)));
    registry
        .add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        .expect("a new source")
        .add(Arc::new(tool(
            "flaky",
            |_args, _cx: ToolContext| async move { ToolOutput::crashed("it broke") },
        )))
        .expect("a new tool");
    let turns = rho_turn::TurnRunner::new(executor(&runtime), registry);

    let first = runtime.block_on(turns.turn([call("1", "flaky", json!({}))]));
    assert_eq!(first[0].outcome, Outcome::Crashed, "{:?}", first[0]);
    let health = accounting.tool_health("flaky").expect("it ran");
    assert!(health.is_quarantined(), "{health:?}");

    // Two calls with one id: the second is a fault of the model's; both
    // are of a quarantined tool.
    let entries = runtime
        .block_on(turns.turn([call("2", "flaky", json!({})), call("2", "flaky", json!({}))]));
    assert!(
        entries
            .iter()
            .all(|entry| entry.outcome == Outcome::Refused),
        "{entries:?}"
    );
    let health = accounting.tool_health("flaky").expect("it ran");
    assert_eq!(
        (
            health.calls,
            health.crashed,
            health.refused,
            health.in_flight()
        ),
        (3, 1, 2, 0),
        "{health:?}"
    );
}

/// A call whose arguments the model's message did not give as JSON (as a
/// model API reader marks it) is answered with an error quoting the reason;
/// its gate is never asked and its tool never runs, while the calls beside
/// it run as usual, in the model's order.
#[test]
fn a_call_with_malformed_arguments_is_answered_and_never_run() {
    let runtime = runtime();
    let tools = Tools::new().add(strict());
    let gate = Arc::new(CountingGate::default());
    let turns = tools.turns(executor(&runtime), gate.clone());
    let good = json!({
        "name": "n", "count": 1, "ratio": 0.5, "dry_run": false,
        "tags": ["a"], "options": { "depth": 1 }, "nothing": null,
    });
    let entries = runtime.block_on(turns.turn([
        rho_tool_core::ToolCall::malformed(
            "bad",
            "strict",
            "its arguments are not JSON (EOF while parsing at line 1 column 9)",
        ),
        call("good", "strict", good),
        rho_tool_core::ToolCall::malformed("unknown", "nope", "expected value"),
    ]));
    assert_eq!(gate.asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        entries
            .iter()
            .map(|entry| (entry.call_id.as_str(), entry.outcome))
            .collect::<Vec<_>>(),
        [
            ("bad", Outcome::Refused),
            ("good", Outcome::Succeeded),
            ("unknown", Outcome::Refused),
        ]
    );
    let text = entries[0].text();
    assert!(
        text == "this call was not run: its arguments are not JSON (EOF while parsing at line 1 column 9)",
        "{text}"
    );
    let details = entries[0]
        .result
        .details
        .as_ref()
        .expect("details")
        .to_json();
    assert_eq!(details["refused"], "malformed_call");
    assert!(
        entries[2].text().contains("expected value"),
        "{}",
        entries[2].text()
    );
}
