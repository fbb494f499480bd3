//! The proxy: an MCP server in front of any MCP server (a command run over
//! stdio, or a streamable HTTP endpoint), for the users of desktop agents
//! (over stdio) and for shared agents (over streamable HTTP, `--http`,
//! [`Proxy::serve_http`]), with rho's guarantees on every call.
//!
//! `rho-mcp proxy [options] -- <server command>` or `rho-mcp proxy
//! [options] --url <endpoint>` (or [`ProxyOptions`] in a program of your
//! own) imports the server as an untrusted source
//! ([`McpSource`](crate::import::McpSource)) and serves it over stdio
//! ([`McpServer`](crate::McpServer)), so that every call the client
//! makes gets:
//!
//! - **a deadline**, counted from approval: at it the call ends with an
//!   error result and the server is sent `notifications/cancelled`;
//! - **crash handling**: a server that dies ends its calls at once with
//!   an error saying how it died (and the end of its stderr), is started
//!   again for the next call after a backoff, and is quarantined when it
//!   keeps dying; a tool that keeps crashing or hanging is quarantined on
//!   its own; `kill -USR1 <proxy>` lifts every quarantine while the client
//!   stays connected ([`Proxy::reenable`]);
//! - **an output cap**: each text part of a tool's answer cut to its head
//!   and tail;
//! - **long calls as tasks**, if asked ([`ProxyOptions::tasks`]): a client
//!   on 2026-07-28 that takes tasks polls a long call instead of holding
//!   its request open, and its cancel stops the server's work too;
//! - **a policy** (a TOML file, [`load_policy`]): allow, deny or ask, by
//!   tool name (exact or glob) or annotation, first match wins; `ask` is
//!   put to the person at the client through MCP elicitation, and denied,
//!   saying why, when the client cannot ask ([`PolicyGate`]);
//! - **an audit log** ([`AuditLog`]): a JSON line per call end, without
//!   the arguments unless asked.
//!
//! What rho does not govern passes through: the server's resources,
//! resource templates, prompts and completions are the proxy's, as the
//! server declared and answers them
//! ([`McpSource::features`](crate::import::McpSource::features)), and
//! so is what it announces (log messages, its lists changed, updates of
//! subscribed resources: [`Notifier`](crate::serve::Notifier)); and
//! what the server asks its client while a call runs (elicitation,
//! sampling, roots) is put to the proxy's client, in that call
//! ([`AskTheClient`](crate::import::AskTheClient)). The proxy asks its
//! server for 2026-07-28, where those questions come back as the call's
//! own result and each request says what the proxy's client of that call
//! takes, and falls back to 2025-11-25 for an older server
//! ([`ProxyOptions::handshake`]). A client on 2025-11-25 gets a
//! connection to the server of its own, opened as it initializes,
//! whenever the server speaks both revisions or the proxy serves over
//! HTTP: it is asked the server's questions the older way, and has the
//! session of its own it would have directly, apart from every other
//! client's.
//!
//! The client sees the server it asked for: the proxy gives the
//! server's identity at `initialize` and lists each tool as the server
//! listed it (its title where the server put it, its icons and `_meta`),
//! declaring tools and logging only as the server did; what rho governs
//! (a tool's name, its hints unless believed, the refusal of unknown
//! tools and of arguments that do not fit) is rho's. The crate's README
//! names each difference a client can see, and what is not yet passed
//! through.
//!
//! What the server writes to stderr is copied to the proxy's stderr as it
//! comes (where a desktop client logs it), and its end is quoted in the
//! error text of a call it died under.
//!
//! The server is a process group of its own, killed whole when the
//! proxy's client closes stdin, when the proxy is told to stop (SIGTERM,
//! SIGINT, SIGHUP), and when the proxy value is dropped; if the proxy
//! itself is killed outright, the server's stdin closes, which is how MCP
//! tells a stdio server to end.
//!
//! # The policy file
//!
//! What the proxy does with each call, written by hand in TOML: the
//! configuration of an [`AnnotationGate`](rho_tool_core::AnnotationGate)
//! ([`GateConfig`](rho_tool_core::annotation_gate::GateConfig)), rho's ready gate, which
//! decides each call.
//!
//! ```toml
//! # The first rule that matches a call decides it; `default` decides the rest.
//! default = "ask"          # allow | deny | ask (when left out: ask)
//! believe_hints = true     # read the server's annotations as it states them
//!
//! [[rule]]
//! tool = ["read_*", "list_*", "search_files"]   # exact names or globs
//! action = "allow"
//!
//! [[rule]]
//! tool = "delete_*"
//! action = "deny"
//! reason = "nothing is deleted from this machine"   # shown to the model
//!
//! [[rule]]
//! annotation = "destructive"   # read_only | destructive | idempotent | open_world
//! action = "ask"
//! ```
//!
//! A rule has a `tool` test, an `annotation` test or both (then both must
//! hold), an `action`, and optionally a `reason` in words. Rules are
//! numbered from 1 in file order, and every denial names its rule.
//!
//! A `tool` glob matches a whole name: `*` stands for any run of
//! characters, `?` for any one (of the ASCII that tool names are made
//! of), `[abc]` for one of a set, `{read,list}_*` for any of the
//! alternatives, and `\` makes the next character plain
//! ([`ToolGlob`](rho_tool_core::annotation_gate::ToolGlob)); a name with none of these
//! matches only itself.
//!
//! A mistake in the file (an unknown key, a misspelt action or
//! annotation, a pattern that is not a glob, a rule without `action` or
//! that tests nothing) stops the proxy before it starts, with the line and
//! column of the mistake and that line quoted.
//!
//! ## The server's confinement
//!
//! A `[confinement]` table runs a stdio server confined by the kernel
//! ([`Confinement`](rho_process::confine::Confinement), whose fields it
//! holds; see [`rho_process::confine`]): what it may read and write,
//! its network, its environment and its limits. Left out, the server runs
//! with the user's authority, as before.
//!
//! ```toml
//! [confinement]
//! workspace = "/home/me/project"          # writable, and its working directory
//! read = ["/home/me/.npm", "/opt/node"]   # beside the system directories
//! network = "none"                        # none | loopback | hosts | full
//! enforcement = "required"                # required | best_effort
//! # Or only these hosts, by name, through a proxy outside the box
//! # (network "hosts" follows from listing them):
//! # hosts = ["api.github.com", "*.githubusercontent.com:443"]
//!
//! [confinement.limits]
//! memory = 2147483648                     # bytes per process
//! cpu = 600                               # seconds per process
//! ```
//!
//! The `rho-mcp` binary is its own launcher; a program of your own that
//! runs a confined proxy calls
//! [`serve_if_launcher`](rho_process::confine::serve_if_launcher) first
//! thing in `main`, or has `rho-confine` installed.
//!
//! ## Calls allowed in advance
//!
//! An `[allowances]` table answers some of the policy's `ask`s before
//! anyone is asked ([`Allowance`](rho_tool_core::Allowance), the same
//! values a host's approver remembers for a session): the whole tool,
//! exact arguments, some fields of them, or a shell command's first words
//! (matched on the command bash would run, so `git status; rm -rf ~` is
//! not `git status`). A call one covers runs without asking the person at
//! the client, and the audit log names the allowance by its number in the
//! list. A rule's `deny` still denies. A destructive tool (every tool,
//! unless `believe_hints` and the server says otherwise) is covered only
//! as `destructive_tools` says: `never` (the default), `scoped` (not by a
//! whole-tool allowance) or `always`.
//!
//! ```toml
//! [allowances]
//! destructive_tools = "scoped"
//! allow = [
//!     { tool = "run_command", scope = "command_prefix", argument = "command", words = ["git", "status"] },
//!     { tool = "deploy", scope = "fields", fields = { env = "staging" } },
//!     { tool = "search", scope = "tool" },
//! ]
//! ```
//!
//! ## Whose hints
//!
//! The annotations are the server's claims about its own tools. With
//! `believe_hints = false` (the default, as everywhere in rho for code the
//! host did not write) they are read as absent, that is with MCP's
//! cautious defaults: every tool counts as not read-only, destructive, not
//! idempotent and open-world, so an `annotation = "read_only"` rule
//! matches nothing and an `annotation = "destructive"` rule matches
//! everything. Say `believe_hints = true` for a server you trust to
//! describe itself: the rules then read the hints as stated, and so does
//! the client, whose listing then carries them (without it, the listing
//! leaves them out, so the client too reads the tools with the cautious
//! defaults).
//!
//! # The audit log
//!
//! With `--audit FILE` ([`AuditLog`]), one JSON line per call end:
//!
//! ```json
//! {"time":"2026-12-02T00:41:07.123Z","call_id":"mcp-0-7","tool":"write_file",
//!  "outcome":"succeeded","is_error":false,"waited_ms":2104.2,"ran_ms":3.1,
//!  "rule":3,"action":"ask","asked":true,"approved":true,
//!  "bytes":27,"cut_bytes":0,"argument_bytes":58}
//! ```
//!
//! (one line in the file). The fields:
//!
//! - `time`: when the call ended, RFC 3339 in UTC;
//! - `call_id`: the proxy's id of the call, `mcp-<session>-<request id>`
//!   (the client's JSON-RPC request id is its last part);
//! - `tool`, `outcome` (`succeeded`, `failed` (the tool's own error),
//!   `denied`, `crashed` (the server died or broke the protocol),
//!   `timed_out`, `aborted` (the client cancelled or left), `refused`
//!   (unknown or quarantined tool, arguments that do not fit)), and
//!   `is_error` as the client got it;
//! - `waited_ms` (from the call's start to the gate's verdict: a person's
//!   time to answer) and `ran_ms` (the tool's time; `null` when it never
//!   ran), in milliseconds with microseconds;
//! - `rule` (its number, `null` for the default or a call refused before
//!   the policy), `action` (`allow`, `deny`, `ask`, or `null`), `asked`
//!   (whether a person was asked) and `approved` (whether the call was let
//!   run; `null` when it never reached the policy);
//! - `allowance`: the number (from 1, in the `[allowances]` list) of the
//!   allowance that answered the policy's `ask`, for a call run so;
//! - `denial`: the denial's text, for a denied call;
//! - `bytes`: the result's content the client got (text as UTF-8, images
//!   and audio as raw bytes; the cap's marker not counted), and
//!   `cut_bytes`: what the output cap cut;
//! - `argument_bytes`: the size of the arguments as JSON.
//!
//! The arguments themselves are left out: they carry what the model put
//! in (file contents, tokens, personal data), and an audit log is read by
//! more people and kept longer than a session. Only
//! [`AuditLog::with_arguments`] (`--audit-arguments`) adds them, whole,
//! as `arguments`. Nor is a tool's output logged, only its size.
//!
//! Each line is written and flushed when its call ends, so a log read
//! while the proxy runs is complete up to its last line. When a line
//! cannot be written (the disk is full, say), the proxy says so on stderr
//! and keeps serving: the calls matter more than their record.
//!
//! One concept a module: `policy` the file read into an
//! [`AnnotationGate`](rho_tool_core::AnnotationGate), `gate` that gate
//! asking through elicitation and naming rules in the file's words,
//! `decisions` what it decided about each call in flight, `audit` the
//! log, `time` its timestamps, `run` the proxy put together.

mod audit;
mod decisions;
mod gate;
mod policy;
mod run;
mod time;

pub use audit::AuditLog;
pub use gate::PolicyGate;
pub use policy::{Policy, PolicyError, load_policy, policy_from_toml};
pub use run::{Proxy, ProxyError, ProxyHttp, ProxyOptions};
