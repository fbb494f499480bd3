//! `rho-mcp proxy`: its arguments, read into the library's options.

use std::path::PathBuf;
use std::time::Duration;

use rho_mcp::proxy::{ProxyOptions, load_policy};
use rho_tool_core::AnnotationGate;

pub(crate) const USAGE: &str =
    "usage: rho-mcp proxy [--policy FILE] [--audit FILE] [--audit-arguments]
                     [--timeout MS] [--output-cap BYTES] [--quarantine-after N]
                     [--name NAME] -- SERVER_COMMAND [ARGS...]
       rho-mcp proxy [OPTIONS] --url URL [--bearer-token-env VAR]
                     [--header 'NAME: VALUE']...

  proxy     serve the MCP server that SERVER_COMMAND runs (over its stdio),
            or the one at the streamable HTTP endpoint URL, over stdio, with
            rho's guarantees on every call:
    --policy FILE          allow, deny or ask, by tool name or annotation
                           (TOML; see the README); default: allow all
    --audit FILE           append a JSON line per call end to FILE
    --audit-arguments      ... with each call's arguments (left out by default)
    --timeout MS           each call's limit from approval (default 120000)
    --output-cap BYTES     cut each text part of a result to BYTES (default: none)
    --quarantine-after N   quarantine a tool after N crashes or timeouts, and
                           the server after N deaths in 5 minutes (default 3;
                           0: never); `kill -USR1` the proxy to lift them
    --name NAME            the server's name in error texts (default: the
                           command's file name, or the URL's host)
    --bearer-token-env VAR send the token in environment variable VAR as
                           `Authorization: Bearer` (kept out of the command
                           line, which other users can read)
    --header 'NAME: VALUE' send this header with every request";

/// What `rho-mcp proxy ...` asked for: the options, and the policy file
/// to read (read by the caller, whose error has an exit code of its own).
pub(crate) struct ProxyArgs {
    pub(crate) options: ProxyOptions,
    pub(crate) policy: Option<PathBuf>,
}

/// Reads the arguments after `proxy`.
pub(crate) fn parse(args: &[String]) -> Result<ProxyArgs, String> {
    let (flags, command) = match args.iter().position(|arg| arg == "--") {
        Some(split) => (&args[..split], Some(&args[split + 1..])),
        None => (args, None),
    };
    let mut settings: Vec<(&str, &str)> = Vec::new();
    let mut url = None;
    let mut audit_arguments = false;
    let mut flags = flags.iter().map(String::as_str);
    while let Some(flag) = flags.next() {
        if flag == "--audit-arguments" {
            audit_arguments = true;
            continue;
        }
        let value = flags
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?;
        match flag {
            "--url" => url = Some(value),
            "--policy" | "--audit" | "--timeout" | "--output-cap" | "--quarantine-after"
            | "--name" | "--bearer-token-env" | "--header" => settings.push((flag, value)),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let mut options = match (url, command) {
        (Some(_), Some(_)) => {
            return Err("give the server's command after `--` or --url, not both".to_owned());
        }
        (None, None) => {
            return Err("the server's command goes after `--` (or its URL after --url)".to_owned());
        }
        (None, Some(command)) => {
            let Some((program, server_args)) = command.split_first() else {
                return Err("no server command after `--`".to_owned());
            };
            ProxyOptions::new(program).args(server_args)
        }
        (Some(url), None) => ProxyOptions::http(url),
    };
    options = options.audit_arguments(audit_arguments);
    let mut policy = None;
    for (flag, value) in settings {
        options = match flag {
            "--policy" => {
                policy = Some(PathBuf::from(value));
                options
            }
            "--audit" => options.audit(value),
            "--timeout" => {
                let ms: u64 = number(flag, value)?;
                if ms == 0 {
                    return Err("--timeout must be at least 1 ms".to_owned());
                }
                options.timeout(Duration::from_millis(ms))
            }
            "--output-cap" => options.output_cap(number(flag, value)?),
            "--quarantine-after" => options.quarantine_after(number(flag, value)?),
            "--name" => options.name(value),
            "--bearer-token-env" => {
                let token = std::env::var(value).map_err(|_| {
                    format!("--bearer-token-env: environment variable `{value}` is not set")
                })?;
                options.bearer_token(token)
            }
            "--header" => {
                let Some((name, header_value)) = value.split_once(':') else {
                    return Err(format!("--header needs `NAME: VALUE`, not `{value}`"));
                };
                options.header(name.trim(), header_value.trim())
            }
            _ => unreachable!("only the flags matched above are kept"),
        };
    }
    Ok(ProxyArgs { options, policy })
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} needs a whole number, not `{value}`"))
}

/// Reads the policy file, if one was given, into the gate it configures.
pub(crate) fn policy(args: &ProxyArgs) -> Result<Option<AnnotationGate>, String> {
    args.policy
        .as_deref()
        .map(load_policy)
        .transpose()
        .map_err(|error| error.to_string())
}
