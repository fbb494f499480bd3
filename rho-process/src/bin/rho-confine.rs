//! `rho-confine`: rho's confinement launcher. rho starts it to run a
//! command confined (see `rho_process::confine`); it is not for people.

#[cfg(unix)]
fn main() {
    rho_process::confine::serve_launcher()
}

#[cfg(not(unix))]
fn main() {
    eprintln!("rho-confine runs on Unix only");
    std::process::exit(1)
}
