//! The shell tool's sandbox launcher on its own: `agentloop-shell-launcher
//! __agentloop-shell-launcher SPEC`.

#[cfg(target_os = "linux")]
fn main() -> std::process::ExitCode {
    agentloop_tools::shell::launcher_main()
}

#[cfg(not(target_os = "linux"))]
fn main() -> std::process::ExitCode {
    eprintln!("the shell tool's sandbox needs Linux");
    std::process::ExitCode::FAILURE
}
