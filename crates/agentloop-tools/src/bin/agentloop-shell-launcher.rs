//! The shell tool's sandbox launcher on its own: `agentloop-shell-launcher
//! __agentloop-shell-launcher SPEC`.

fn main() -> std::process::ExitCode {
    agentloop_tools::shell::launcher_main()
}
