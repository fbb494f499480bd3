//! The launcher's own failures, as a host that spawns it sees them: the
//! step that failed picks the exit code (125: the confinement could not
//! be set up; 127: the command could not be started inside it), and the
//! last line on stderr names the step, what it was about and the errno.
//! Init finds each of these failures and reports it to outer over the
//! report pipe, so each also shows the step's kind crossing that pipe.

#![cfg(target_os = "linux")]

mod support;

use std::process::{Command, Output};

use rho_process::confine::Confinement;
use support::launcher;

/// `program` run by the launcher under `confinement` (best effort, so a
/// kernel without a mechanism still reaches the step under test), from
/// the working directory `cwd` if given.
fn launch(program: &str, confinement: Confinement, cwd: Option<&str>) -> Output {
    let mut command = Command::new(program);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    launcher()
        .confine(&command, &confinement.best_effort())
        .expect("a launcher")
        .into_command()
        .output()
        .expect("the launcher runs")
}

/// The launcher's last line on stderr.
fn last_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr.lines().last().unwrap_or_default().to_owned()
}

#[test]
fn a_program_that_is_not_there_was_not_started() {
    let output = launch("/no/such/rho-program", Confinement::new(), None);
    assert_eq!(output.status.code(), Some(127), "{output:?}");
    assert_eq!(
        last_line(&output),
        "rho-confine: could not start `/no/such/rho-program` inside the confinement: No such file or directory (os error 2)"
    );
}

#[test]
fn a_named_path_that_is_not_there_is_a_setup_failure_naming_it() {
    let confinement = Confinement::new().with_read("/no/such/rho-path");
    let output = launch("/bin/true", confinement, None);
    assert_eq!(output.status.code(), Some(125), "{output:?}");
    assert_eq!(
        last_line(&output),
        "rho-confine: the path /no/such/rho-path cannot be used: No such file or directory (os error 2)"
    );
}

#[test]
fn a_working_directory_outside_the_confinement_is_a_setup_failure() {
    let output = launch("/bin/true", Confinement::new(), Some("/no/such/rho-dir"));
    assert_eq!(output.status.code(), Some(125), "{output:?}");
    assert_eq!(
        last_line(&output),
        "rho-confine: the working directory /no/such/rho-dir is not reachable inside the confinement: No such file or directory (os error 2)"
    );
}
