//! `rho-confine`: rho's confinement launcher. rho starts it to run a
//! command confined (see `rho_process::confine`); it is not for people.

fn main() {
    rho_process::confine::serve_launcher()
}
